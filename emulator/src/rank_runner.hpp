// One MPI rank of a replay: the loop that pulls its calls from its stream and dispatches each to the part
// that performs it (point-to-point, requests, collectives, communicators, GPU), and fast-forward at the
// heads of the steady loop. Internal to the emulator.
#pragma once

#include "fast_forward.hpp"
#include "rank_collectives.hpp"
#include "rank_comms.hpp"
#include "rank_core.hpp"
#include "rank_gpu.hpp"
#include "rank_p2p.hpp"
#include "rank_requests.hpp"

#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/stream.hpp"

#include <map>
#include <string>

namespace gridcast::emulator {

class RankRunner {
public:
  RankRunner(World& world, int rank, models::CallStreamPtr stream, double recorded_speed);
  RankRunner(const RankRunner&) = delete;  // the parts hold references to each other
  RankRunner& operator=(const RankRunner&) = delete;

  /// Performs the rank's calls until its stream ends.
  void run();

  bool finished() const { return finished_; }
  const RankStats& stats() const { return core_.stats; }
  RankStats& stats() { return core_.stats; }

  /// Adds this rank's per-function totals to `out`, by name.
  /// A sampled run, after it ended: the rank's times become their estimates (RankSampling::apply_estimate).
  void apply_sampling_estimate(double shift_s) { sampling_.apply_estimate(shift_s); }
  void merge_functions(std::map<std::string, FunctionStats>& out) const
  {
    core_.functions.merge_into(out, core_.stream->functions());
  }

  /// Where this rank is stuck (only meaningful when not finished).
  BlockedRank blocked_report() const;

private:
  void perform(const models::CallRecord& c);
  void compute(const models::CallRecord& c);
  /// --analysis waits: what the call just performed (from `begin_s` to `end_s`) waited for.
  void note_waits(const models::CallRecord& c, double begin_s, double end_s);

  RankCore core_;  // first: every part below holds a reference to it
  double recorded_speed_;
  RankDevice device_;
  RequestTable requests_;
  CommTable comms_;
  PointToPoint p2p_;
  RankCollectives collectives_;
  CommCreator creator_;
  RankFastForward fast_forward_;
  RankSampling sampling_;
  bool finished_ = false;
  std::map<int, std::uint64_t> coll_sequence_;  ///< blocking collectives called so far, by communicator id
};

}  // namespace gridcast::emulator
