// The replay engine: one S4U actor per rank pulls calls from its stream and turns each into SimGrid
// activities (executions for computation, host-to-host communications for messages).
#pragma once

#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/wait_states.hpp"
#include "gridcast/models/stream.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::emulator {

struct RankStats {
  int rank = 0;
  std::string host;
  double compute_s = 0;  ///< executions and sleeps
  double comm_s = 0;     ///< inside MPI calls, transfers under way
  double wait_s = 0;     ///< inside MPI calls, waiting for a partner to post the matching call
  double finish_s = 0;   ///< simulated time the rank ended
  std::uint64_t calls = 0;
};

struct FunctionStats {
  std::uint64_t calls = 0;
  double seconds = 0;  ///< simulated seconds inside the function, summed over ranks
  /// Of those, what fast-forward added for skipped iterations (calls counted exactly, seconds from the
  /// window's mean); 0 without fast-forward.
  std::uint64_t extrapolated_calls = 0;
  double extrapolated_seconds = 0;
};

/// What steady-state fast-forward did (docs/reference/emulator.md); in prediction.json as `fast_forward`.
struct FastForwardReport {
  FastForwardOptions options;
  bool applied = false;
  std::string loop;              ///< the steady loop (model path, count formula); empty: none
  std::string why_not;           ///< when not applied
  std::uint64_t loop_iterations = 0;
  std::uint64_t skip_from = 0;   ///< first skipped iteration (the same on every rank)
  std::uint64_t skipped = 0;     ///< iterations skipped on each rank
  double period_min_s = 0, period_mean_s = 0, period_max_s = 0;  ///< over ranks, each its window's mean
  double skipped_s = 0;          ///< simulated time of the skipped span, summed over ranks
  std::uint64_t extrapolated_calls = 0;     ///< all ranks
  std::uint64_t extrapolated_messages = 0;  ///< all ranks
};

/// What a sampled prediction did (`predict --sample`, docs/reference/sampling.md); in prediction.json as
/// `sampling`. The emulator fills the estimate; the command fills how the units were grouped.
struct SamplingReport {
  struct Phase {
    std::uint64_t units = 0, sampled = 0;
    double mean_s = 0, std_s = 0;  ///< of the sampled units' times (Eq. 5)
    double share = 0;              ///< of the loop's estimated time
    bool transient = false;        ///< the loop's first units, always emulated (models/sampling.hpp)
    bool rare = false;             ///< the units with rare calls, always emulated (models/sampling.hpp)
    std::vector<std::string> distinct;  ///< features that set the phase apart
  };
  bool applied = false;
  std::string why_not;  ///< when not applied (every unit was emulated)
  std::string loop;
  std::uint64_t loop_iterations = 0, units = 0;
  std::vector<Phase> phases;
  std::vector<double> silhouette;  ///< k = 1, 2, ...
  std::vector<std::string> features;
  /// Units emulated: drawn at random, as the warm-ups of those, the transient first ones and those with
  /// rare calls.
  std::uint64_t sampled = 0, warm_up = 0, transient = 0, rare = 0;
  double confidence = 0.95, margin = 0.02;
  bool automatic = false;
  std::string note;
  double estimate_s = 0;           ///< the makespan: emulated_makespan_s - emulated_loop_s + loop_estimate_s
  double emulated_makespan_s = 0;  ///< the run's clock at its end: every unit not emulated took no time
  double emulated_loop_s = 0;      ///< of which the loop's units (the latest rank's heads)
  double loop_estimate_s = 0;      ///< Eq. 2: the units' estimated sum
  double standard_error_s = 0;     ///< Eq. 4, of the sum
  double half_width_s = 0;         ///< Eq. 3, with Student's t (models/sampling.hpp)
  double degrees_of_freedom = 0;   ///< of the standard error (Satterthwaite; infinite: no phase varies)
};

struct LinkStats {
  std::string name;
  double bytes = 0;        ///< bytes carried over the run
  double bandwidth_Bps = 0;
  double utilisation = 0;  ///< mean load / bandwidth over the makespan
};

/// One rank that could not finish, for the deadlock report.
struct BlockedRank {
  int rank = 0;
  std::string function;
  std::string file;
  std::uint64_t line = 0;
  int peer = -1;   ///< -1: any / none
  int tag = 0;
  std::string detail;
};

struct ReplayResult {
  double makespan_s = 0;
  std::vector<RankStats> ranks;
  std::map<std::string, FunctionStats> functions;
  std::vector<LinkStats> links;
  std::map<std::string, std::map<std::string, std::uint64_t>> collectives;  ///< op -> algorithm -> calls
  std::uint64_t events = 0;    ///< calls replayed
  std::uint64_t messages = 0;  ///< point-to-point messages, including those inside collectives
  /// Sends never received by the end of the run (a trace that is not a whole MPI run, or a model that
  /// lost a receive), and the first of them as text; not counted in `messages`.
  std::uint64_t unmatched_sends = 0;
  std::string first_unmatched_send;
  std::vector<BlockedRank> blocked;  ///< non-empty: the run could not finish
  /// The eager/rendezvous switch the run used, and where it came from: "cfg" (--cfg), "platform"
  /// (gridcast:eager-threshold of a calibrated platform) or "default".
  std::uint64_t eager_threshold_bytes = 0;
  std::string eager_threshold_source = "default";
  /// The bytes added to every message on the wire, and why: "cfg" (--cfg gridcast/envelope-bytes),
  /// "smpi-model" (SMPI's 16 under network/model:SMPI), "platform" (calibrated factors: 0) or "default" (0).
  std::uint64_t envelope_bytes = 0;
  std::string envelope_source = "default";
  /// Calibration factors installed from the platform (SMPI syntax; empty when absent).
  std::string lat_factor, bw_factor, calibration;
  /// gridcast:copy-overhead installed from the platform ("bytes:seconds;..."; empty when absent).
  std::string copy_overhead;
  /// The copy curve collectives charged their local copies with (gridcast:memcpy-time as
  /// "bytes:seconds;...", gridcast/coll-local-copy); empty: not charged.
  std::string local_copy_time;
  /// GPU runtime costs used: gridcast/gpu/... key -> (seconds, "default" | "platform" | "cfg").
  std::map<std::string, std::pair<double, std::string>> gpu_costs;
  /// --gpu-model cache: launches priced by the memory-system model, and the launches of each kernel that
  /// had no memory trace (they kept their recorded time).
  std::uint64_t gpu_priced_launches = 0;
  std::map<std::string, std::uint64_t> gpu_unpriced_kernels;
  /// Set when the run could fast-forward (predict), applied or not.
  std::optional<FastForwardReport> fast_forward;
  /// Set when ReplayOptions::sampling_plan is: the sampled estimate. makespan_s, every rank's finish_s,
  /// compute_s, comm_s and wait_s and every function's seconds are then estimates (the units not emulated
  /// by their phase's sampled units); calls are counted exactly; messages and link bytes are the emulated
  /// units' only.
  std::optional<SamplingReport> sampling;
  /// Set when ReplayOptions::wait_states: the run's wait states (`--analysis waits`).
  std::optional<WaitStateReport> wait_states;
};

/// A run that cannot finish: ranks blocked forever. Exit code 1, with the report.
class DeadlockError : public std::runtime_error {
public:
  explicit DeadlockError(std::vector<BlockedRank> blocked);
  const std::vector<BlockedRank>& blocked() const { return blocked_; }

private:
  std::vector<BlockedRank> blocked_;
};

/// Replays `trace` on the options' platform. Writes timeline events to `timeline_path` when not empty.
/// Throws InputError for bad input and DeadlockError when ranks block forever.
ReplayResult replay(const models::TraceSource& trace, const ReplayOptions& options,
                    const std::filesystem::path& timeline_path = {});

}  // namespace gridcast::emulator
