#include "gridcast/calibrate/calibrate.hpp"

#include "gridcast/calibrate/measure.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/version.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>

namespace gridcast::calibrate {

namespace fs = std::filesystem;

namespace {

platform::HostInfo host_info()
{
  platform::HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0)
    h.name = name;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon  = line.find(':');
      h.cpu_model = colon == std::string::npos ? "" : line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  h.cores    = cores > 0 ? static_cast<int>(cores) : 1;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  h.date             = date;
  h.gridcast_version = kVersion;
  double load[1]     = {0};
  if (getloadavg(load, 1) == 1)
    h.load_average = load[0];
  return h;
}

}  // namespace

std::string default_mpirun()
{
  std::string cmd = "mpirun --oversubscribe --bind-to none";
  if (geteuid() == 0)
    cmd += " --allow-run-as-root";
  return cmd;
}

fs::path find_mpi_bench()
{
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (not ec) {
    fs::path beside = self.parent_path() / "gridcast-mpi-bench";
    if (fs::is_regular_file(beside, ec))
      return beside;
  }
  return {};
}

platform::Calibration run_calibration(const CalibrateOptions& o, Progress& progress, std::vector<std::string>& notes)
{
  auto skip = [&](const std::string& why) {
    notes.push_back(why);
    progress.warn(why);
  };
  platform::Calibration c;
  c.host = host_info();
  if (c.host.load_average > 0.5 * c.host.cores)
    skip("note: load average " + std::to_string(c.host.load_average) + " on " + std::to_string(c.host.cores) +
         " cores: other work competes with the benchmarks, figures will be slower and noisier");

  // The GPU data sheet first: a bad file should fail before minutes of measurement.
  if (not o.gpu_json.empty())
    c.gpu = platform::read_gpu_datasheet(o.gpu_json);

  c.compute = measure_compute(o.quick ? ComputeSizes::quick() : ComputeSizes{}, progress);
  progress.note("[compute] dgemm " + std::to_string(c.compute.dgemm_flops.median / 1e9) + " Gflop/s, triad " +
                std::to_string(c.compute.stream_triad_Bps.median / 1e9) + " GB/s, scalar " +
                std::to_string(c.compute.scalar_flops.median / 1e9) + " Gflop/s");

  if (o.mpi) {
    fs::path bench = o.mpi_bench.empty() ? find_mpi_bench() : o.mpi_bench;
    if (bench.empty())
      skip("[mpi] skipped: gridcast-mpi-bench was not built (no MPI found when gridcast was configured)");
    else {
      if (not fs::is_regular_file(bench))
        throw InputError({bench.string(), 0, "", -1}, "no such MPI benchmark program");
      c.network = measure_mpi({o.mpirun.empty() ? default_mpirun() : o.mpirun, bench.string(), o.quick}, progress);
      progress.note("[mpi] latency " + std::to_string(c.network->latency_s * 1e6) + " us, bandwidth " +
                    std::to_string(c.network->bandwidth_Bps / 1e9) + " GB/s, eager below " +
                    std::to_string(c.network->eager_threshold_bytes) + " B, " +
                    std::to_string(c.network->lat_factor.size()) + " factor segments");
      if (c.network->eager_threshold_bytes == 0)
        skip("[mpi] note: no eager/rendezvous switch visible in the curve: eager_threshold_bytes is 0 (every "
             "message is treated as rendezvous)");
    }
  } else {
    skip("[mpi] skipped (--no-mpi)");
  }

  if (o.gpu && o.gpu_json.empty()) {
    GpuProbe probe = measure_gpu(o.quick, progress);
    if (probe.gpu)
      c.gpu = probe.gpu;
    else
      skip("[gpu] skipped: " + probe.skipped_because);
  } else if (not o.gpu) {
    skip("[gpu] skipped (--no-gpu)");
  }
  return c;
}

}  // namespace gridcast::calibrate
