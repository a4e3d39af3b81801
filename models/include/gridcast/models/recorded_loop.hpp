// The main loop of a recorded trace, found by folding each rank's calls: what marks the iterations of a
// replay for the imbalance per iteration (--analysis waits), as a synthesized stream marks its steady
// loop's. Recorded traces do not say where their loops are; the calls' repetition does.
#pragma once

#include "gridcast/models/stream.hpp"

#include <cstdint>
#include <vector>

namespace gridcast::models {

/// A rank's main loop: the top-level loop of its folded calls (trace_model.hpp's fold, without polling
/// constructs, compute bursts left out) that covers the most calls.
struct RecordedLoop {
  std::uint64_t first_call = 0;  ///< where its first iteration starts, counted in calls (bursts left out)
  std::uint64_t body_calls = 0;  ///< calls per iteration
  std::uint64_t iterations = 0;  ///< 0: no loop of at least two iterations
};

/// The main loop of a rank whose calls are `tokens` (one per call, equal for calls of the same kind).
RecordedLoop find_recorded_loop(const std::vector<std::uint32_t>& tokens);

/// A recorded trace whose rank streams mark the heads of their main loop (CallStream::loop_head: 0 to
/// `iterations`, the last one at the loop's end), each found by reading the rank's stream once before
/// handing it out. steady_loop() stays the recorded trace's (none): marking is for measuring, never for
/// skipping iterations.
class LoopMarkedSource : public TraceSource {
public:
  explicit LoopMarkedSource(const TraceSource& inner) : inner_(inner) {}
  int rank_count() const override { return inner_.rank_count(); }
  CallStreamPtr open(int rank) const override;
  SteadyLoop steady_loop() const override { return inner_.steady_loop(); }
  /// The loop found in each rank opened so far (by rank; ranks not opened yet: none).
  const std::vector<RecordedLoop>& loops() const { return loops_; }

private:
  const TraceSource& inner_;
  mutable std::vector<RecordedLoop> loops_;
};

}  // namespace gridcast::models
