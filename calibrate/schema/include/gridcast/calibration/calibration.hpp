// calibration.json: what `gridcast calibrate` measured on a machine, read by `gridcast platform` to fill
// in the figures a platform spec leaves out. Versioned schema, documented in docs/reference/calibration-json.md
// ("calibration.json"). Every figure carries its unit in its name; a Stat's unit is its field's name.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::platform {

inline constexpr const char* kCalibrationFormat = "gridcast-calibration";
/// Version 2 added network.copy_overhead; version 1 files (without it) are still read.
inline constexpr int kCalibrationVersion        = 2;
inline constexpr int kCalibrationOldestVersion  = 1;

/// A repeated measurement: median, extremes and how many repetitions. Unit = the field's name.
struct Stat {
  double median = 0, min = 0, max = 0;
  int repetitions = 0;
};

/// One segment of an SMPI-style piecewise factor: applies to messages of min_bytes and more (up to the
/// next segment's min_bytes).
struct FactorSegment {
  std::uint64_t min_bytes = 0;
  double factor           = 1;
};

struct PingPongPoint {
  std::uint64_t bytes = 0;
  Stat one_way_s;  ///< half the round-trip time of a ping-pong
};

/// A time measured per size (exchange curve, reduction curve).
struct SizedTiming {
  std::uint64_t bytes = 0;
  Stat time_s;
};
/// One point of the shared-memory copy overhead (network.copy_overhead): seconds of CPU work that the
/// sender's and the receiver's cores each spend on a message of `bytes` once its data has arrived.
struct OverheadPoint {
  std::uint64_t bytes = 0;
  double time_s       = 0;
};

struct CollectiveTiming {
  std::string op;  ///< "allreduce", "alltoall", "bcast", ...
  int np              = 0;
  std::uint64_t bytes = 0;  ///< MPI count x datatype size per rank (the send buffer of one rank)
  Stat time_s;              ///< completion time of the slowest rank
};

/// How network.collectives were measured (network.collectives_measured; docs/guides/calibration.md,
/// "Collective timings"). The methods give different figures for the same call, so whoever
/// compares with them (bench/calibration_validation.py) must emulate the one that was used.
/// gridcast-mpi-bench now: after a barrier, each rank's mean time per call over a loop of
/// back-to-back calls (the bcast's root alternating), the slowest rank's mean (IMB's t_max).
inline constexpr const char* kCollectivesLoopMeanSlowestRank = "loop-mean-slowest-rank";
/// Each rank's median of calls isolated by two barriers, the slowest rank's. Read for files written
/// with it; no longer measured (each call carries the barrier's exit skew: docs/guides/calibration.md).
inline constexpr const char* kCollectivesMedianCallSlowestRank = "median-call-slowest-rank";
/// Files without network.collectives_measured: "(barrier + op) x calls minus barrier x calls".
inline constexpr const char* kCollectivesLoopDifference = "barrier-loop-difference";

struct CollectivesMeasured {
  std::string method;         ///< kCollectivesLoopMeanSlowestRank (what gridcast-mpi-bench measures now)
  std::string date;           ///< UTC, when the collectives were measured (may differ from host.date)
  double load_average = 0;    ///< 1-minute load average when they were measured
};

struct HostInfo {
  std::string name, cpu_model, date, gridcast_version;
  int cores           = 0;
  double load_average = 0;  ///< 1-minute load average when the calibration started (how busy the machine was)
};

/// A rate measured with operands of `bytes` in all.
struct SizedRate {
  std::uint64_t bytes = 0;
  Stat flops;  ///< flop/s
};

/// One point of a library kernel's rate curve: `rate` is work per second in the kernel's unit, on
/// operands of `bytes` in all.
struct KernelRatePoint {
  std::uint64_t bytes = 0;
  Stat rate;
};
/// What a library kernel's calls cost on this machine by working-set size (compute.library_rates).
struct KernelRateCurve {
  std::string kernel;  ///< "dgemm", "daxpy", ... (the hooked function without cblas_ or the trailing _)
  std::string work;    ///< what `rate` counts: "flops" (levels 2 and 3, LAPACK) or "bytes" (level 1, moved)
  std::vector<KernelRatePoint> points;  ///< sizes ascending strictly, medians > 0
};

struct ComputeCalibration {
  Stat dgemm_flops, stream_triad_Bps, scalar_flops;
  double core_speed_flops = 0;  ///< what a platform's core speed becomes; see docs/reference/calibration-json.md for the choice
  /// Optional (absent in older files): seconds to sum `bytes` of doubles into another buffer (a[i] +=
  /// b[i], MPI_SUM's work), per size: memory bound, at cache speed while the buffers fit a cache.
  std::vector<SizedTiming> reduction;
  /// Optional (absent in older files): seconds of a memcpy of `bytes` on one core, the source just
  /// written (`memcpy`), and the same while every core of the host (host.cores) copies a buffer of that
  /// size of its own at once, the slowest copier's time (`memcpy_all_cores`): what the cores of a node
  /// share of the caches and the memory system when all of them copy, as the ranks of a collective do.
  std::vector<SizedTiming> memcpy, memcpy_all_cores;
  /// Optional (absent in older files): the core's dgemm rate by working-set size, from inside L1 to well
  /// beyond the last-level cache (a panel update C += A*B with 32-wide A and B, whose operands total
  /// `bytes`). The latency model's rate model charges compute at the rate of the rank's data footprint.
  std::vector<SizedRate> rate_by_working_set;
  /// Optional (absent in older files): a rate curve per BLAS/LAPACK kernel the hook records the arguments
  /// of, measured through the system BLAS on one core. The latency model prices a library call from its
  /// arguments at its kernel's rate for its working set (docs/reference/latency-model.md).
  std::vector<KernelRateCurve> library_rates;
};

/// MPI between two ranks of one node (shared memory), Open MPI.
struct NetworkCalibration {
  std::string launcher;                               ///< the mpirun command line used
  double latency_s = 0, bandwidth_Bps = 0;            ///< base link figures fitted from the curve
  std::uint64_t eager_threshold_bytes = 0;            ///< detected eager/rendezvous switch
  std::vector<FactorSegment> lat_factor, bw_factor;   ///< SMPI-style piecewise factors
  std::vector<PingPongPoint> pingpong;
  std::vector<CollectiveTiming> collectives;
  /// Optional (absent in older files: empty / 0). Both ranks MPI_Sendrecv the same size at once: time of
  /// one exchange, per size. Shared memory makes both ranks copy against one memory system, so two
  /// opposite transfers cost more than one (the ping-pong alone cannot tell how much).
  std::vector<SizedTiming> exchange;
  /// Capacity that concurrent shared-memory transfers share, fitted from the large exchanges; 0 = not
  /// measured. The platform generator puts it on the loopback route as a SHARED link.
  double shared_bandwidth_Bps = 0;
  /// Optional (version 2; empty = none): per-message CPU work of both ranks of a shared-memory message,
  /// fitted from the exchange and ping-pong curves (docs/guides/calibration.md, "The copy overhead"); the
  /// latency and bandwidth factors are then fitted to the ping-pong less this overhead.
  std::vector<OverheadPoint> copy_overhead;
  /// Optional (absent: measured by the loop difference, kCollectivesLoopDifference, date = host.date).
  std::optional<CollectivesMeasured> collectives_measured;
};

/// A one-way transfer path: time(bytes) = latency_s + bytes / bandwidth_Bps. Zeros mean "not measured"
/// (for instance p2p on a machine with one GPU).
struct GpuLinkFigures {
  double latency_s = 0, bandwidth_Bps = 0;
};

struct GpuCalibration {
  std::string source;  ///< "measured" or "datasheet"
  std::string device_name;
  int device_count    = 0;
  double memory_bytes = 0;
  double speed_flops  = 0;  ///< 0 when not known (measurement does not run a FLOP benchmark)
  GpuLinkFigures h2d_pageable, d2h_pageable, h2d_pinned, d2h_pinned, d2d, p2p;
  double kernel_launch_s = 0, malloc_s = 0, free_s = 0, host_alloc_s_per_byte = 0;
};

struct Calibration {
  int version = kCalibrationVersion;
  HostInfo host;
  ComputeCalibration compute;
  std::optional<NetworkCalibration> network;  ///< absent when MPI was not measured
  std::optional<GpuCalibration> gpu;          ///< absent when no GPU figures exist
};

/// Parses and validates a calibration document. `file` names the source in errors (InputError with the
/// file and the key path, e.g. "network.lat_factor[2].factor"). Unknown keys are rejected.
Calibration calibration_from_json(const nlohmann::json& j, const std::string& file);
/// The document written by write_calibration: keys in a fixed order, so output is deterministic.
nlohmann::ordered_json to_json(const Calibration& c);

/// A GPU section alone (the `gpu` object of calibration.json): the data-sheet file of
/// `gridcast calibrate --gpu-json`. A missing `source` means "datasheet".
GpuCalibration gpu_calibration_from_json(const nlohmann::json& j, const std::string& file,
                                         const std::string& key_prefix);
nlohmann::ordered_json to_json(const GpuCalibration& g);
GpuCalibration read_gpu_datasheet(const std::filesystem::path& file);
/// Writes a GPU section alone in the data-sheet schema (what `gridcast calibrate --gpu-only` measures).
void write_gpu_datasheet(const std::filesystem::path& file, const GpuCalibration& g);

Calibration read_calibration(const std::filesystem::path& file);                  // InputError naming file + key path
void write_calibration(const std::filesystem::path& file, const Calibration& c);  // deterministic

/// SMPI factor syntax "min_bytes:factor;min_bytes:factor;..." (as smpi/lat-factor), used for the
/// gridcast:lat-factor / gridcast:bw-factor platform properties. Doubles printed to round-trip.
std::string format_factor_segments(const std::vector<FactorSegment>& segments);
/// Parses that syntax; segments must ascend strictly from min_bytes 0 with factors > 0. `where` names the
/// source in the InputError (a file and a property, say).
std::vector<FactorSegment> parse_factor_segments(const std::string& text, const std::string& file,
                                                 const std::string& key);
/// The factor of the segment that covers `bytes` (1 when `segments` is empty).
double factor_for(const std::vector<FactorSegment>& segments, double bytes);

/// "bytes:seconds;bytes:seconds;..." (the gridcast:copy-overhead platform property): sizes ascending
/// strictly, seconds >= 0. Doubles printed to round-trip.
std::string format_overhead_points(const std::vector<OverheadPoint>& points);
/// Parses that syntax; InputError naming `file` and `key` on bad input.
std::vector<OverheadPoint> parse_overhead_points(const std::string& text, const std::string& file,
                                                 const std::string& key);
/// The overhead of a message of `bytes`: linear between the two points around it, the first point's
/// value below the first size, the last point's beyond the last (0 when `points` is empty).
double overhead_for(const std::vector<OverheadPoint>& points, double bytes);

/// The last-level cache capacity that a memcpy curve (bytes copied : seconds, sizes ascending; the
/// calibration's compute.memcpy) shows, in bytes touched (source + destination), or nullopt when the
/// curve shows none. The out-of-cache level is the per-byte time of the largest copy (the calibration
/// measures up to 64 MiB, well beyond the caches); a copy is served by a cache while its per-byte time
/// is at most half that level. The knee is where the per-byte time, interpolated linearly in log2 of
/// the size between the last copy served by a cache and the next one, reaches half the out-of-cache
/// level; the capacity is twice that size (a copy touches its source and its destination), rounded
/// down to whole KiB. Half, not the level itself: the per-byte time keeps rising past the cache size
/// (a copy a little larger than the cache still finds part of its source there), so the level itself
/// is reached only at the largest point; halfway is continuous in the measurements (docs/reference/collectives.md,
/// "Cold copies"). Nullopt with fewer than 3 points, a non-positive time, or no point at half the level.
std::optional<std::uint64_t> cache_bytes_from_memcpy(const std::vector<OverheadPoint>& points);

}  // namespace gridcast::platform
