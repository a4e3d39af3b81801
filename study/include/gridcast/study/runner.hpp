// Running a study's points: a local pool of child processes, one Slurm array task at a time, and the
// sbatch script of `gridcast study submit`. Each point is `gridcast predict` (or `replay`) in a process of
// its own: SimGrid runs one simulation per process, and a crash of one point cannot take the others.
#pragma once

#include "gridcast/study/results.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::study {

struct RunOptions {
  int jobs = 1;                           ///< points run at once
  std::optional<std::size_t> task_index;  ///< run this point only (a Slurm array task)
  bool retry_failed = false;              ///< run again the points whose result is an error
  bool progress     = true;               ///< a line on stderr per point done
  std::filesystem::path executable;       ///< the gridcast program the points run
};

struct RunSummary {
  std::size_t points = 0;        ///< in the manifest (1 with a task index)
  std::size_t already_done = 0;  ///< had a result (ok, or failed without --retry-failed)
  std::size_t ran = 0;           ///< ran now and got a result
  std::size_t failed = 0;        ///< results that are errors, old and new
  std::size_t redone = 0;        ///< result files that did not read and were run again
  bool interrupted = false;      ///< SIGINT or SIGTERM: the points under way left no result
};

/// Runs the points of `manifest` that have no result yet (platforms first, each generated once), keeping
/// `jobs` children busy and going on past failed points. SIGINT and SIGTERM stop the pool: the running
/// points are stopped and left without a result, so that the next run does them.
RunSummary run_points(const Manifest& manifest, const std::filesystem::path& out, const RunOptions& options);

/// What `gridcast study collect` writes: results.csv and report.html from the results so far.
struct CollectSummary {
  std::size_t points = 0, ok = 0, failed = 0, pending = 0;
  std::vector<std::string> problems;  ///< result files that did not read
};
CollectSummary collect(const Manifest& manifest, const std::filesystem::path& out);

/// Slurm settings of `gridcast study submit`.
struct SlurmOptions {
  std::string partition;  ///< empty: the cluster's default
  std::string time;       ///< per task, sbatch --time syntax; empty: the partition's default
  int max_parallel = 0;   ///< the array's %K; 0: no limit
  std::filesystem::path executable;
};

/// The sbatch script of a job array over `indices` (manifest indices), each task running
/// `gridcast study run --out DIR --task-index $SLURM_ARRAY_TASK_ID`.
std::string sbatch_script(const Manifest& manifest, const std::filesystem::path& out,
                          const std::vector<std::size_t>& indices, const SlurmOptions& options);

}  // namespace gridcast::study
