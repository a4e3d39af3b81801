// The per-rank pull stream: the emulator asks each rank for its next call. A recorded trace is one kind
// of stream, a synthesized one (later issues) another; nothing downstream ever holds a whole trace.
#pragma once

#include "gridcast/models/call.hpp"

#include <memory>
#include <string>

namespace gridcast::models {

class CallStream {
public:
  virtual ~CallStream() = default;
  /// Fills `out` with the next call and returns true, or returns false at the end of the stream.
  /// Malformed input throws InputError naming the file, the line and the rank.
  virtual bool next(CallRecord& out) = 0;
  /// Function names seen so far; ids in records index this table.
  virtual const FunctionTable& functions() const = 0;
  /// Human-readable origin (file path) for error messages.
  virtual const std::string& source() const = 0;
};

using CallStreamPtr = std::unique_ptr<CallStream>;

/// A set of per-rank streams opened lazily: the emulator opens rank r's stream when its actor starts.
class TraceSource {
public:
  virtual ~TraceSource() = default;
  virtual int rank_count() const = 0;
  virtual CallStreamPtr open(int rank) const = 0;
};

}  // namespace gridcast::models
