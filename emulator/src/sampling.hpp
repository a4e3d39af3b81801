// A sampled run (predict --sample; docs/reference/sampling.md): the run-wide record of when the latest rank
// reached each head of the loop (SampledRun), and each rank's side (RankSampling): the units it drains
// without emulating them, and its per-unit sums for the estimate. Internal to the emulator.
#pragma once

#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/sampling.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace gridcast::emulator {

struct RankCore;

/// What all ranks share in a sampled run.
struct SampledRun {
  explicit SampledRun(std::shared_ptr<const models::sampling::Plan> p)
      : plan(std::move(p)), arrival(plan->loop_iterations, -1.0)
  {
  }
  void arrive(std::uint64_t head, double time_s)
  {
    if (head < arrival.size())
      arrival[head] = std::max(arrival[head], time_s);
  }
  std::shared_ptr<const models::sampling::Plan> plan;
  std::vector<double> arrival;  ///< per head of the loop: when the latest rank reached it
};

/// The estimate of the run (Eq. 2-5 on the units' times between the latest ranks' heads), with the
/// makespan shift every rank's finish gets. Throws InternalError when a head was never reached.
SamplingReport estimate_run(const SampledRun& run, double emulated_makespan_s);

/// One rank's side of a sampled run.
class RankSampling {
public:
  explicit RankSampling(RankCore& core) : core_(core) {}

  /// The stream is at the head of iteration i: closes the unit that ended here and, when unit i is not
  /// emulated, drains the stream to the next head that is (counting its calls). Returns whether it
  /// drained. `quiet`: no request pending (a skipped unit must leave none).
  bool at_head(std::uint64_t i, bool quiet);

  /// After the run: the rank's compute, comm and wait seconds and its functions' seconds become their
  /// estimates (what the emulated units measured, with the units not emulated at their phase's sample
  /// mean); finish_s moves by `shift_s`, the run's makespan shift.
  void apply_estimate(double shift_s);

private:
  /// What the rank had measured at the head that opened the current unit.
  struct Snapshot {
    std::array<double, 3> stats{};  ///< compute, comm, wait
    std::vector<double> functions;
  };
  void open(std::uint64_t unit);
  void close();
  /// Adds now - snapshot to `into` (growing it).
  void add_delta(std::array<double, 3>& stats, std::vector<double>& functions) const;

  RankCore& core_;
  std::optional<std::uint64_t> open_unit_;
  std::optional<std::uint64_t> handled_head_;
  Snapshot at_open_;
  // Sums over the emulated units, and over each phase's sampled units.
  std::array<double, 3> emulated_stats_{};
  std::vector<double> emulated_functions_;
  std::vector<std::array<double, 3>> sampled_stats_;
  std::vector<std::vector<double>> sampled_functions_;
};

}  // namespace gridcast::emulator
