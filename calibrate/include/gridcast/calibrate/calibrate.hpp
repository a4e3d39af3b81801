// `gridcast calibrate`: microbenchmarks of the machine at hand, written as calibration.json
// (docs/reference/calibration-json.md). Each part can be measured alone; the parts a machine lacks are skipped with a reason.
#pragma once

#include "gridcast/calibrate/progress.hpp"
#include "gridcast/calibration/calibration.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::calibrate {

struct CalibrateOptions {
  bool quick        = false;  ///< fewer repetitions and smaller sizes: seconds instead of a minute
  bool mpi          = true;
  bool gpu          = true;   ///< measure the GPU when a CUDA driver is present
  std::string mpirun;         ///< launcher command line; empty: default_mpirun()
  std::filesystem::path mpi_bench;  ///< gridcast-mpi-bench; empty: find_mpi_bench()
  std::filesystem::path gpu_json;   ///< a GPU data sheet instead of measuring
};

/// "mpirun --oversubscribe --bind-to none", plus --allow-run-as-root when running as root (Open MPI
/// refuses root otherwise). No binding: on a 2-core machine shared with other work, pinning both ranks
/// makes them fight whatever else runs on those cores.
std::string default_mpirun();

/// gridcast-mpi-bench next to the running executable, or where the build put it; empty when absent.
std::filesystem::path find_mpi_bench();

/// Runs the selected parts. `notes` collects what was skipped and why (also shown by `progress`).
platform::Calibration run_calibration(const CalibrateOptions& options, Progress& progress,
                                      std::vector<std::string>& notes);

}  // namespace gridcast::calibrate
