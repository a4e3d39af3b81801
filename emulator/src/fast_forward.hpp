// Steady-state fast-forward (docs/reference/emulator.md): the run-wide decision (SteadyState) and each rank's
// side of it (RankFastForward: the heads of the steady loop it passed, and the skip itself). Internal to
// the emulator.
#pragma once

#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/p2p.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/stream.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::emulator {

struct RankCore;

/// Collective choices of one rank as the communicator's first rank: (collective, algorithm) -> calls.
using ChoiceCounts = std::map<std::pair<std::string, std::string>, std::uint64_t>;

/// The global side of steady-state fast-forward (docs/reference/emulator.md): the ranks report, at each head of the
/// steady loop, whether their window of periods is stable; the first rank to reach head K decides, once
/// and for everybody, whether iterations K.. are skipped: yes when every rank was stable at head K-1 and
/// no message crossed between iterations of the window. Each later rank reaching head K reads the same
/// answer, so every rank skips the same iterations. One fast-forward per run.
struct SteadyState {
  SteadyState(const FastForwardOptions& o, std::uint64_t iterations, int ranks)
      : options(o), loop_iterations(iterations), np(ranks)
  {
  }

  /// Rank reports: at head i, stable there or not.
  void reached(std::uint64_t i, bool stable)
  {
    ++reached_at[i];
    if (stable)
      ++ready_at[i];
  }

  /// Why the run was not fast-forwarded, the structural reasons first.
  std::string reason() const;

  /// Asked at head K by each rank: skip from here?
  bool skip_here(std::uint64_t k, const MessageBoard& board);

  FastForwardOptions options;
  std::uint64_t loop_iterations;
  int np;
  std::map<std::uint64_t, int> ready_at;    ///< head index -> ranks stable there
  std::map<std::uint64_t, int> reached_at;  ///< head index -> ranks that reported it
  bool crossing = false;                    ///< a message crossed between iterations of a window
  std::optional<std::uint64_t> skip_from;
  std::uint64_t skipped = 0;
  bool decided_any = false;
  bool given_up = false;
  std::uint64_t last_decided = 0;
  std::string why_not = "the loop ended before the window filled";
  int pending_rank = -1;  ///< the last rank seen with requests pending at a head (past the warm-up), and where
  std::uint64_t pending_iteration = 0;
  // Totals of the skip, all ranks.
  double period_min_s = 0, period_max_s = 0, period_sum_s = 0, skipped_s = 0;
  int ranks_skipped = 0;
  std::uint64_t extrapolated_calls = 0, extrapolated_messages = 0;
};

/// The fast-forward report of a run about to start (nothing when fast-forward is unavailable: not a
/// prediction), and in `steady` the run-wide state when the run may skip: the trace has a steady loop
/// with enough iterations.
std::optional<FastForwardReport> plan_fast_forward(const models::TraceSource& trace, const FastForwardOptions& ff,
                                                   int np, std::unique_ptr<SteadyState>& steady);

/// Completes `report` after a run that may have skipped: what was skipped, or why nothing was.
/// `deadlocked`: some rank never finished (then not every rank may have reached the skip).
void complete_fast_forward_report(FastForwardReport& report, const SteadyState& st, int np, bool deadlocked);

/// One rank's side of fast-forward: what it had done at the last heads of the steady loop, and the skip
/// of the iterations the run decided to skip (the calls drained from its stream, its clock, statistics
/// and messages extrapolated from its window).
class RankFastForward {
public:
  RankFastForward(RankCore& core, double recorded_speed) : core_(core), recorded_speed_(recorded_speed) {}

  /// A compute record ran: `spent_s` simulated seconds for `flops` of work (the rate of the skipped ones).
  void note_compute(double spent_s, double flops)
  {
    compute_call_s_ += spent_s;
    compute_flops_ += flops;
  }

  /// The stream is at the head of steady-loop iteration i (docs/reference/emulator.md): the rank notes the time
  /// and what it has done so far (`quiet`: no request pending; `choices`: its collective choices),
  /// reports whether its window of periods is stable, and skips when the run decided to skip from here.
  /// Returns whether it skipped.
  bool at_head(std::uint64_t i, bool quiet, const ChoiceCounts& choices);

private:
  /// What the rank had done at one head of the steady loop.
  struct HeadSnapshot {
    std::uint64_t iteration = 0;
    double time_s = 0;
    bool quiet = false;  ///< no request pending
    double compute_s = 0, comm_s = 0, wait_s = 0;
    double compute_call_s = 0, compute_flops = 0;
    std::vector<double> function_seconds;
    MessageBoard::SenderTally sent;
    ChoiceCounts choices;
  };

  bool stable_window() const;
  void skip(std::uint64_t k);
  /// Work of a compute record in flops, as RankRunner::compute() performs it.
  double flops_of(const models::CallRecord& c) const;

  RankCore& core_;
  double recorded_speed_;
  std::deque<HeadSnapshot> heads_;  ///< the last heads of the steady loop, consecutive
  double compute_call_s_ = 0;  ///< simulated seconds in compute records (not reductions inside collectives)
  double compute_flops_ = 0;   ///< their work
};

}  // namespace gridcast::emulator
