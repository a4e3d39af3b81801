// A profile directory: run.json plus one trace file per rank, in the native format (JSON lines or
// binary). See docs/reference/profile-directory.md.
#pragma once

#include "gridcast/models/library_cost.hpp"
#include "gridcast/models/stream.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace gridcast::models {

/// One point of a host's compute rate against the size of the data a computation works on: the rate of
/// the calibration kernel (a system-BLAS dgemm panel update) whose operands total `working_set_bytes`.
struct RatePoint {
  double working_set_bytes = 0;
  double speed_flops = 0;
};
/// Points in increasing working_set_bytes, each rate > 0.
using RateCurve = std::vector<RatePoint>;
/// The rate at `bytes`: linear in log2(bytes) between the points, the end points' rates outside them;
/// `fallback` when the curve is empty.
double rate_at(const RateCurve& curve, double bytes, double fallback);

/// The most ranks gridcast reads (a TIT trace's rank ids) or synthesizes (`--np`): 2^24. Far past what an
/// emulation can hold (each rank costs ~40 KiB), it keeps a typo such as a rank id of 2^31 from being taken
/// for a world size and allocated before any other check.
inline constexpr int kMaxRanks = 1 << 24;

enum class TraceEncoding { JsonLines, Binary };

std::string_view encoding_name(TraceEncoding e);
/// File name of rank r's trace in a profile directory: rank-00000.jsonl or rank-00000.gct.
std::string rank_file_name(int rank, TraceEncoding e);

/// The host the profile was recorded on. Measured compute seconds become flops at `speed_flops`.
struct RecordedHost {
  std::string name;
  double speed_flops = 1e9;  ///< flop/s of one core of the recording host
  /// The host's compute rate by working-set size (calibration.json compute.rate_by_working_set, via
  /// `gridcast profile --calibration`); empty when not calibrated. The latency model's rate model uses it.
  RateCurve rate_curve;
  /// Per library kernel ("dgemm", "daxpy"...), its rate by working set in the kernel's work unit
  /// (calibration.json compute.library_rates, via `gridcast profile --calibration`); empty when not
  /// calibrated. The latency model prices library calls with recorded arguments from them.
  KernelRates library_rates;
};

/// run.json. Unknown keys are rejected; see docs/reference/profile-directory.md for every field.
struct RunInfo {
  int format_version = 1;
  int np = 0;               ///< number of ranks
  double nw = 0;            ///< workload size parameter (problem size) the run used
  std::string command;      ///< the command that produced the traces
  RecordedHost host;
  std::string date;         ///< ISO 8601, as recorded; informative only
  TraceEncoding encoding = TraceEncoding::JsonLines;
  bool complete = true;     ///< false when the recorded run failed or was killed
  std::string origin;       ///< "profile", "tit-import", "convert", "synthesized"
  /// The first line of MPI_Get_library_version in the recorded run ("Open MPI v4.1.4, ..."); empty when
  /// not recorded. The collective selector's default (auto) follows it.
  std::string mpi_library;
  /// Each rank's data footprint: its peak resident set above the resident set when MPI_Init returned
  /// (the hook's getrusage and /proc/self/statm); empty when not recorded (every rank or none).
  std::vector<double> footprint_bytes;
};

RunInfo read_run_info(const std::filesystem::path& run_json);

/// The MPI library whose choices the recorded run made: run.json's mpi_library, else "SMPI" for a profile
/// imported from an SMPI trace (SMPI ran it); empty when unknown.
std::string recorded_mpi_library(const RunInfo& info);
void write_run_info(const std::filesystem::path& run_json, const RunInfo& info);

/// Opens the per-rank traces of a profile directory lazily. Checks that run.json is valid and that every
/// rank file exists (missing ones are an InputError naming the file and rank).
class ProfileDir final : public TraceSource {
public:
  explicit ProfileDir(std::filesystem::path dir);
  int rank_count() const override { return info_.np; }
  CallStreamPtr open(int rank) const override;
  const RunInfo& info() const { return info_; }
  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path rank_path(int rank) const;

private:
  std::filesystem::path dir_;
  RunInfo info_;
};

/// True if `path` is a directory holding run.json.
bool is_profile_dir(const std::filesystem::path& path);

/// Makes `out` ready to receive a trace (a profile directory, or an SMPI trace with --format tit): a
/// directory that does not exist or is empty is fine. One that holds a trace gridcast wrote (run.json,
/// rank files, raw/, trace.txt, trace.txt_files/) is an InputError unless `replace` (--force): then those
/// files go first (run.json before the rank files, so an interrupted replacement looks incomplete), and
/// a new trace of fewer ranks leaves none of the old ones behind. Other files are never touched; a
/// directory that holds only such files is an InputError (it is not an output of gridcast).
void prepare_trace_output(const std::filesystem::path& out, bool replace);

}  // namespace gridcast::models
