// The per-rank pull stream: the emulator asks each rank for its next call. A recorded trace is one kind
// of stream, a synthesized one (later issues) another; nothing downstream ever holds a whole trace.
#pragma once

#include "gridcast/models/call.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

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
  /// Steady-state fast-forward (docs/reference/emulator.md): when the next call next() returns is the first of an
  /// iteration of the source's steady loop (TraceSource::steady_loop), that iteration's index (0-based);
  /// otherwise nothing. Only synthesized streams know their loops; recorded traces never say.
  virtual std::optional<std::uint64_t> loop_head() { return std::nullopt; }
  /// Bytes of its file the stream has consumed so far, and the file's size: what a progress report of a
  /// replay divides. 0 and 0 for a stream that reads no file (a synthesized one).
  virtual std::uint64_t bytes_read() const { return 0; }
  virtual std::uint64_t bytes_total() const { return 0; }
};

using CallStreamPtr = std::unique_ptr<CallStream>;

/// Passes another stream's calls on: the base of wrappers that count or change them (they override
/// next() and call the inner one); everything else is the inner stream's.
class ForwardingStream : public CallStream {
public:
  explicit ForwardingStream(CallStreamPtr inner) : inner_(std::move(inner)) {}
  bool next(CallRecord& out) override { return inner_->next(out); }
  const FunctionTable& functions() const override { return inner_->functions(); }
  const std::string& source() const override { return inner_->source(); }
  std::optional<std::uint64_t> loop_head() override { return inner_->loop_head(); }
  std::uint64_t bytes_read() const override { return inner_->bytes_read(); }
  std::uint64_t bytes_total() const override { return inner_->bytes_total(); }

protected:
  CallStreamPtr inner_;
};

/// A set of per-rank streams opened lazily: the emulator opens rank r's stream when its actor starts.
class TraceSource {
public:
  virtual ~TraceSource() = default;
  virtual int rank_count() const = 0;
  virtual CallStreamPtr open(int rank) const = 0;
  /// The loop the emulator may fast-forward (see CallStream::loop_head): `iterations` 0 when there is
  /// none, with the reason in `why_not`.
  struct SteadyLoop {
    std::uint64_t iterations = 0;  ///< the same on every rank
    std::string name;              ///< where it is in the model, for reports
    std::string why_not;
    /// The work of its compute calls is drawn at random (--variability on): a short window of iterations
    /// may look flat by chance, so the emulator asks for a longer one.
    bool random_work = false;
  };
  virtual SteadyLoop steady_loop() const { return {0, {}, "the calls come from a recorded trace", false}; }
};

}  // namespace gridcast::models
