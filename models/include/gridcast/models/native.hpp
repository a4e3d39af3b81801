// The native trace encodings: JSON lines for humans, a compact binary form for volume. Both stream.
#pragma once

#include "gridcast/models/profile.hpp"
#include "gridcast/models/stream.hpp"

#include <filesystem>
#include <fstream>
#include <memory>

namespace gridcast::models {

/// Reads one rank's trace in either encoding, one record at a time.
CallStreamPtr open_native_trace(const std::filesystem::path& file, TraceEncoding encoding, int rank);

/// Writes one rank's trace. Function names are written where first used, so a writer never needs the
/// whole table up front.
class TraceWriter {
public:
  virtual ~TraceWriter() = default;
  /// `functions` is the table that record.function indexes (the reading stream's table).
  virtual void write(const CallRecord& record, const FunctionTable& functions) = 0;
  /// Flushes and closes; throws InputError if the file could not be written.
  virtual void close() = 0;
};

std::unique_ptr<TraceWriter> make_trace_writer(const std::filesystem::path& file, TraceEncoding encoding);

/// Copies every rank of `source` into a new profile directory `out` with `encoding`, keeping run.json's
/// fields (`info`). Streams one record at a time.
void write_profile(const TraceSource& source, RunInfo info, const std::filesystem::path& out,
                   TraceEncoding encoding);

}  // namespace gridcast::models
