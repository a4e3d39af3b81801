// The measuring parts of `gridcast calibrate`, and the pure functions (statistics, parsing, fitting)
// they share, which the tests exercise without running any benchmark.
#pragma once

#include "gridcast/calibrate/progress.hpp"
#include "gridcast/calibration/calibration.hpp"

#include <cstdint>
#include <functional>
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::calibrate {

/// Median (mean of the two middle values for an even count), min, max of `samples`. InternalError when
/// empty.
platform::Stat summarize(std::vector<double> samples);
/// The same Stat of rates: each sample becomes work / sample (work per second).
platform::Stat summarize_rate(const std::vector<double>& seconds, double work);

// ---- compute ----
struct ComputeSizes {
  int dgemm_n              = 384;       ///< square matrices; 2n^3 flops a call
  int dgemm_repetitions    = 9;
  std::size_t triad_elements = 8u << 20;  ///< doubles per array (3 arrays: 192 MiB, far beyond caches)
  int triad_repetitions    = 9;
  std::uint64_t scalar_iterations = 50'000'000;  ///< 2 flops each
  int scalar_repetitions   = 7;
  std::uint64_t reduction_max_bytes = 64u << 20;  ///< largest summed buffer (sizes 1 KiB x 4^k up to it)
  int reduction_repetitions         = 9;
  std::uint64_t memcpy_max_bytes    = 64u << 20;  ///< largest copied buffer (sizes 1 KiB x 2^k up to it)
  int memcpy_repetitions            = 9;
  /// The rate curve by working set (ComputeCalibration::rate_by_working_set): sizes from rate_min_bytes
  /// doubling up to rate_max_bytes (16 KiB, inside L1, to 128 MiB, beyond the last-level caches of
  /// today's servers).
  std::uint64_t rate_min_bytes = 16u << 10;
  std::uint64_t rate_max_bytes = 128u << 20;
  int rate_repetitions         = 5;
  int library_repetitions      = 3;  ///< per size of each kernel's curve (measure_library_rates)
  static ComputeSizes quick();
};
platform::ComputeCalibration measure_compute(const ComputeSizes& sizes, Progress& progress);
/// Seconds of a memcpy of each size (1 KiB x 2^k up to `max_bytes`) with `copiers` threads, one per core
/// (pinned to cores 0..copiers-1), copying buffers of their own at once: a repetition is the slowest
/// copier's mean over about 1 ms of copies, its source rewritten before (data just written, as a
/// collective's buffer is). `after_each` runs after every size, for progress.
std::vector<platform::SizedTiming> measure_memcpy(std::uint64_t max_bytes, int repetitions, int copiers,
                                                  const std::function<void(std::uint64_t)>& after_each = {});
/// The dgemm rate alone (median, min, max over `repetitions` calls on n x n matrices): the figure that
/// becomes ComputeCalibration::core_speed_flops, so `gridcast profile` without a calibration file records
/// the host speed the same way (`after_each` runs after every call, for progress).
platform::Stat measure_dgemm_flops(int n, int repetitions, const std::function<void()>& after_each = {});

/// The dgemm rate of a panel update C(m x m) += A(m x 32) * B(32 x m) through the system BLAS, one core,
/// for every working-set size (the three operands' bytes) from min_bytes doubling to max_bytes: the
/// shape of a blocked dense factorization's trailing update, whose rate falls as C leaves each cache.
std::vector<platform::SizedRate> measure_rate_by_working_set(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                                             int repetitions,
                                                             const std::function<void()>& after_each = {});
/// A rate curve per BLAS kernel the hook records the arguments of (models::library_kernels(); the LAPACK
/// ones are not in the system BLAS and get none), through the system BLAS on one core, for working sets
/// from min_bytes doubling to max_bytes. Each kernel is measured in the shape HPL calls it in (dgemm and
/// dsyrk a 32-wide panel update, dtrsm a 32 x 32 triangle against a 32-row panel, level 2 square, level 1
/// unit strides); its work and working set are what the latency model charges for the same arguments
/// (models::library_cost), so the curve and the pricing agree by construction. Timed in the thread's CPU
/// time, as the rate curve: a shared machine's other processes must not read as a slower cache level.
std::vector<platform::KernelRateCurve> measure_library_rates(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                                             int repetitions,
                                                             const std::function<void()>& after_each = {});
/// How many kernels measure_library_rates() measures (a curve each; `after_each` runs once per kernel).
int library_rate_kernels();
/// The panel-update side m whose three operands total about `bytes` (at least 8).
int panel_update_side(std::uint64_t bytes);

// ---- MPI ----
/// Raw output of gridcast-mpi-bench, parsed (format in calibrate/mpi/mpi_bench.cpp).
struct MpiBenchOutput {
  std::vector<platform::PingPongPoint> pingpong;
  std::vector<platform::CollectiveTiming> collectives;
  std::vector<platform::SizedTiming> exchange;  ///< time of one exchange per size
  std::string collectives_method;  ///< from the `collectives-method` line; empty: none printed
  bool done = false;
};
/// Parses one line into `out` (a `plan` line sets `planned_steps`); returns false for a line that is not
/// bench output (the launcher's own messages). A malformed bench line is an InputError quoting it.
bool parse_mpi_bench_line(const std::string& line, MpiBenchOutput& out, int& planned_steps);

/// The fitted model of the ping-pong curve: t(n) = latency_s*lf(n) + n/(bandwidth_Bps*bf(n)).
struct NetworkFit {
  double latency_s = 0, bandwidth_Bps = 0;
  std::uint64_t eager_threshold_bytes = 0;
  std::vector<platform::FactorSegment> lat_factor, bw_factor;
};
/// Fits `points` (ascending sizes, median one-way times): detects the eager/rendezvous switch, then cuts
/// the curve greedily into segments, each a line a + b*n fitted within `tolerance` relative error where
/// possible, and expresses every segment as factors of the base latency and bandwidth.
NetworkFit fit_network(const std::vector<platform::PingPongPoint>& points, double tolerance = 0.02);
/// The same with the eager/rendezvous switch given (0: none) instead of detected.
NetworkFit fit_network(const std::vector<platform::PingPongPoint>& points, std::uint64_t eager_threshold_bytes,
                       double tolerance);
/// The model's one-way time for `bytes`.
double model_time_s(const NetworkFit& fit, double bytes);
/// The share of the model's one-way time of `bytes` that is transfer (bytes / (B*bf)), the rest latency.
double transfer_share(const NetworkFit& fit, double bytes);
/// The first of `sizes` (ascending) from which the fit calls the curve transfer-dominated (transfer at
/// least 90% of the time): the per-size verdicts are fitted with one step, the size that leaves the
/// fewest verdicts on the wrong side of it (ties: the smaller size), so that neither a noisy size nor a
/// short segment with a tiny fitted intercept moves it. 0 when no size is on the transfer side.
std::uint64_t transfer_dominated_from(const NetworkFit& fit, const std::vector<std::uint64_t>& sizes);
/// The capacity two concurrent transfers share on the loopback (a SHARED link beside the per-flow
/// FATPIPE one), fitted from the exchange curve: on the sizes where the ping-pong model's time is at
/// least 90% transfer (transfer_dominated_from), each of the two flows moves n bytes in (exchange time - latency part) at bf(n)
/// times half the capacity (SimGrid applies the bandwidth factor to every link of the route); the
/// median over those sizes, never below the base bandwidth so that a lone transfer -- the ping-pong --
/// keeps its time. 0 when no exchange size is transfer-dominated.
double fit_shared_bandwidth(const NetworkFit& fit, const std::vector<platform::SizedTiming>& exchange);
/// fit_shared_bandwidth for a model with a copy overhead: each exchanging rank's core does the copy work
/// of both messages, 2*o(n), which is taken off the exchange time before the capacity is fitted.
double fit_shared_bandwidth(const NetworkFit& fit, const std::vector<platform::SizedTiming>& exchange,
                            const std::vector<platform::OverheadPoint>& copy_overhead);

/// The per-message CPU work of a shared-memory message (network.copy_overhead) from the exchange and
/// ping-pong curves. The emulator charges o(n) to the sender's and to the receiver's core once the data
/// has arrived, one message after another on each rank: a ping-pong's one-way time is net(n) + o(n)
/// (each side does one message's work), an exchange's net(n) + 2 o(n) (each rank does the work of the
/// message it sent and of the one it received). So o(n) = exchange(n) - pingpong(n), on the sizes the
/// ping-pong fit `base` calls latency-dominated (below transfer_dominated_from: beyond, the shared
/// capacity of fit_shared_bandwidth models the exchange's extra cost), less what the shared capacity
/// `shared_bandwidth_Bps` (0: none) already adds to each of two opposite transfers there, smoothed by a
/// median of three neighbours (single sizes are noisy), capped at half the one-way time, and 0 from the
/// first transfer-dominated size on. Empty when there is no exchange curve or no size pays an overhead.
std::vector<platform::OverheadPoint> fit_copy_overhead(const NetworkFit& base,
                                                       const std::vector<platform::PingPongPoint>& pingpong,
                                                       const std::vector<platform::SizedTiming>& exchange,
                                                       double shared_bandwidth_Bps = 0);

/// What calibrate stores about the network model: the factors (fitted to the ping-pong less the copy
/// overhead), the overhead and the shared capacity.
struct NetworkModel {
  NetworkFit fit;
  std::vector<platform::OverheadPoint> copy_overhead;
  double shared_bandwidth_Bps = 0;
};
/// The whole fit of `gridcast calibrate` from the two curves (exchange may be empty: no overhead, no
/// shared capacity). The eager/rendezvous switch is detected on the measured ping-pong.
NetworkModel fit_network_model(const std::vector<platform::PingPongPoint>& pingpong,
                               const std::vector<platform::SizedTiming>& exchange, double tolerance = 0.02);

/// Replaces the fitted figures of `n` (latency, bandwidth, switch, factors, shared capacity, copy
/// overhead) by fit_network_model of its own curves: `gridcast calibrate --refit` brings a calibration
/// measured by an older gridcast to the current model without measuring again.
void refit_network(platform::NetworkCalibration& n);

/// The size at which the curve jumps most beyond its trend (the first rendezvous size); 0 when the curve
/// has no clear jump (no point more than 15% above the trend).
std::uint64_t detect_eager_threshold(const std::vector<platform::PingPongPoint>& points);

struct MpiRunOptions {
  std::string mpirun;
  std::string bench;
  bool quick = false;
};
/// The collective lines whose median is more than `tolerance` above their best repetition (the machine
/// was busy while they ran), as "allreduce 64 KiB (median 1.31x best)"; empty when none.
std::vector<std::string> disturbed_collectives(const std::vector<platform::CollectiveTiming>& timings,
                                               double tolerance = 0.2);

/// The bcasts at np 2 whose time is more than `tolerance` away from the ping-pong's one-way time of the
/// same size, as "bcast 16 MiB (1.31x the ping-pong)"; sizes the curve lacks are skipped. With its root
/// alternating (gridcast-mpi-bench) a bcast at np 2 is one message per call, sent from what the last
/// call received, as the ping-pong sends it: the two differ by a call's bookkeeping, a few percent.
/// A larger gap means the machine was not in the state the curve was measured in (other work, or the
/// placement of the virtual CPUs: docs/guides/calibration.md), and the collectives cannot validate a model
/// fitted to that curve.
std::vector<std::string> bcasts_off_pingpong(const std::vector<platform::CollectiveTiming>& timings,
                                             const std::vector<platform::PingPongPoint>& pingpong,
                                             double tolerance = 0.15);

/// Runs the bench with --only-collectives: the collective timings alone, with the method, date and load
/// (`gridcast calibrate --only-collectives`). Warns about disturbed timings, as measure_mpi does, and
/// about bcasts off `pingpong` (the curve of the calibration they go into).
struct CollectiveRun {
  std::vector<platform::CollectiveTiming> timings;
  platform::CollectivesMeasured measured;
};
CollectiveRun measure_collectives(const MpiRunOptions& options, Progress& progress,
                                 const std::vector<platform::PingPongPoint>& pingpong = {});
/// Runs the bench under the launcher with 2 ranks and fits it. InputError when the launcher fails
/// (its message says how to fix the --mpirun line).
platform::NetworkCalibration measure_mpi(const MpiRunOptions& options, Progress& progress);

// ---- GPU ----
struct GpuProbe {
  std::optional<platform::GpuCalibration> gpu;  ///< empty when skipped
  std::string skipped_because;                  ///< why, when skipped ("no CUDA driver (libcuda.so.1)")
};
/// Measures GPU 0 (and GPU 0 <-> 1 when there are two) through the CUDA driver loaded with dlopen.
/// No driver: skipped. A driver that fails mid-way: InputError naming the CUDA call and its error.
GpuProbe measure_gpu(bool quick, Progress& progress);

}  // namespace gridcast::calibrate
