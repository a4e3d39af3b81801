// `gridcast calibrate`: measure this machine and write calibration.json (docs/guides/calibration.md).
#include "commands.hpp"

#include "gridcast/calibrate/calibrate.hpp"
#include "gridcast/calibrate/measure.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/calibration/calibration.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace po = boost::program_options;

namespace gridcast::cli {

namespace {

/// --refit: the network model fitted again from the curves the calibration holds; nothing measured.
int refit_network_model(const std::string& refit, const std::string& output)
{
  platform::Calibration c = platform::read_calibration(refit);
  if (not c.network)
    throw InputError({refit, 0, "network", -1}, "no MPI measurements to fit (the calibration has no network)");
  calibrate::refit_network(*c.network);
  c.version = platform::kCalibrationVersion;
  platform::write_calibration(output, c);
  std::cerr << "gridcast calibrate: wrote " << output << " (network model fitted again from " << refit << ")\n";
  return 0;
}

/// --only-memcpy: the memcpy curves measured again, the rest kept.
int only_memcpy_curves(const std::string& only_memcpy, const std::string& output, bool quick,
                       calibrate::Progress& progress)
{
  platform::Calibration c = platform::read_calibration(only_memcpy);  // a bad file fails before measuring
  const calibrate::ComputeSizes sizes = quick ? calibrate::ComputeSizes::quick() : calibrate::ComputeSizes{};
  int steps = 0;
  for (std::uint64_t b = 1024; b <= sizes.memcpy_max_bytes; b *= 2)
    ++steps;
  const int cores = std::max(1, c.host.cores);
  const int total = steps * (cores > 1 ? 2 : 1);
  int done        = 0;
  c.compute.memcpy = calibrate::measure_memcpy(sizes.memcpy_max_bytes, sizes.memcpy_repetitions, 1, [&](auto b) {
    progress.step("compute", ++done, total, "memcpy " + std::to_string(b >> 10) + " KiB");
  });
  c.compute.memcpy_all_cores.clear();
  if (cores > 1)
    c.compute.memcpy_all_cores =
        calibrate::measure_memcpy(sizes.memcpy_max_bytes, sizes.memcpy_repetitions, cores, [&](auto b) {
          progress.step("compute", ++done, total,
                        "memcpy x" + std::to_string(cores) + " " + std::to_string(b >> 10) + " KiB");
        });
  platform::write_calibration(output, c);
  std::cerr << "gridcast calibrate: wrote " << output << " (memcpy curves measured again; the rest as in "
            << only_memcpy << ")\n";
  return 0;
}

/// --only-rate-curve: the rate by working set and the library rates measured, the rest kept.
int only_rate_curves(const std::string& only_rate_curve, const std::string& output, bool quick,
                     calibrate::Progress& progress)
{
  platform::Calibration c = platform::read_calibration(only_rate_curve);  // a bad file fails first
  const calibrate::ComputeSizes sizes = quick ? calibrate::ComputeSizes::quick() : calibrate::ComputeSizes{};
  int done = 0, total = 0;
  for (std::uint64_t b = sizes.rate_min_bytes; b <= sizes.rate_max_bytes; b *= 2)
    total += sizes.rate_repetitions;
  c.compute.rate_by_working_set = calibrate::measure_rate_by_working_set(
      sizes.rate_min_bytes, sizes.rate_max_bytes, sizes.rate_repetitions,
      [&] { progress.step("compute", ++done, total, "rate by working set"); });
  done = 0;
  c.compute.library_rates = calibrate::measure_library_rates(
      sizes.rate_min_bytes, std::min<std::uint64_t>(sizes.rate_max_bytes, 64u << 20), sizes.library_repetitions,
      [&] { progress.step("compute", ++done, calibrate::library_rate_kernels(), "library rates by working set"); });
  platform::write_calibration(output, c);
  std::cerr << "gridcast calibrate: wrote " << output
            << " (compute rate by working set and library rates measured; the rest as in "
            << only_rate_curve << ")\n";
  return 0;
}

/// --only-collectives: the collective timings measured again, the fitted network model kept.
int only_collective_timings(const std::string& only_collectives, const std::string& output,
                            const std::string& mpirun, const std::string& mpi_bench, bool quick,
                            calibrate::Progress& progress)
{
  // Read first: a bad file should fail before the measurement.
  platform::Calibration c = platform::read_calibration(only_collectives);
  if (not c.network)
    throw InputError({only_collectives, 0, "network", -1},
                     "no MPI measurements to put the collectives beside (calibrate with MPI first)");
  std::filesystem::path bench = mpi_bench.empty() ? calibrate::find_mpi_bench() : std::filesystem::path(mpi_bench);
  if (bench.empty())
    throw InputError({}, "--only-collectives: gridcast-mpi-bench was not built (no MPI found when gridcast was "
                         "configured); give it with --mpi-bench");
  if (not std::filesystem::is_regular_file(bench))
    throw InputError({bench.string(), 0, "", -1}, "no such MPI benchmark program");
  calibrate::CollectiveRun run = calibrate::measure_collectives(
      {mpirun.empty() ? calibrate::default_mpirun() : mpirun, bench.string(), quick}, progress,
      c.network->pingpong);
  c.network->collectives = std::move(run.timings);
  c.network->collectives_measured = run.measured;
  platform::write_calibration(output, c);
  std::cerr << "gridcast calibrate: wrote " << output << " (collective timings measured again, "
            << run.measured.date << "; the rest as in " << only_collectives << ")\n";
  return 0;
}

/// --gpu-only: the GPU's data sheet.
int gpu_datasheet(const std::string& output, bool quick, calibrate::Progress& progress)
{
  auto probe = calibrate::measure_gpu(quick, progress);
  if (not probe.gpu)
    throw InputError({}, "--gpu-only: " + probe.skipped_because + "; nothing written");
  platform::write_gpu_datasheet(output, *probe.gpu);
  std::cerr << "gridcast calibrate: wrote " << output << " (GPU data sheet of " << probe.gpu->device_name << ")\n";
  return 0;
}

}  // namespace

int run_calibrate(const std::vector<std::string>& args)
{
  const std::string synopsis =
      "calibrate -o calibration.json [--mpirun \"CMD\"] [--quick] [--gpu-json FILE] [--gpu-only] [--no-mpi] "
      "[--no-gpu] [--quiet]\n       gridcast calibrate --refit OLD.json -o calibration.json\n"
      "       gridcast calibrate --only-collectives OLD.json -o calibration.json [--mpirun \"CMD\"] [--quick]\n"
      "       gridcast calibrate --only-memcpy OLD.json -o calibration.json [--quick]\n"
      "       gridcast calibrate --only-rate-curve OLD.json -o calibration.json [--quick]";
  po::options_description options("Measures this machine: compute kernels on one core, MPI between two ranks "
                                  "through the real MPI launcher, and the GPU when a CUDA driver is present.\n"
                                  "Progress goes to stderr; the file follows docs/reference/calibration-json.md (calibration.json).\n"
                                  "options");
  std::string output, mpirun, gpu_json, mpi_bench, refit, only_collectives, only_memcpy;
  std::string only_rate_curve;  // --only-rate-curve: the calibration to add the rate curve to
  options.add_options()
    ("out,o", po::value(&output), "file to write (required): calibration.json, or with --gpu-only the GPU data "
                                     "sheet")
    ("mpirun", po::value(&mpirun), "MPI launcher command line; gridcast appends `-np 2 gridcast-mpi-bench ...`. "
                                   "Default: `mpirun --oversubscribe --bind-to none`, plus --allow-run-as-root "
                                   "when run as root (Open MPI refuses root without it)")
    ("quick", "fewer repetitions, ping-pong up to 1 MiB, small kernels: a few seconds instead of half a minute "
              "(for tests; figures are noisier)")
    ("gpu-json", po::value(&gpu_json), "take the GPU figures from this data sheet (docs/reference/calibration-json.md, GPU data "
                                       "sheet) instead of measuring")
    ("gpu-only", "measure only the GPU and write its data sheet to -o (for a GPU machine; the same as the "
                 "gridcast-calibrate-gpu program, which needs no SimGrid). Fails when no GPU is found")
    ("no-mpi", "skip the MPI benchmarks")
    ("no-gpu", "skip the GPU benchmarks")
    ("mpi-bench", po::value(&mpi_bench), "the gridcast-mpi-bench program to launch (default: the one beside "
                                         "this gridcast)")
    ("quiet,q", "no progress display (warnings and skipped parts are still reported)")
    ("refit", po::value(&refit), "measure nothing: read this calibration, fit its network model again from the "
                                 "ping-pong and exchange curves it holds (factors, shared capacity, copy "
                                 "overhead: docs/guides/calibration.md) and write it to -o in the current version")
    ("only-collectives", po::value(&only_collectives),
     "measure only the MPI collective timings (allreduce, alltoall, bcast at np 2, with --mpirun, "
     "--mpi-bench and --quick as usual) and write this calibration to -o with them (and "
     "network.collectives_measured) replaced; everything else, the fitted network model included, is "
     "kept as it is, so a platform generated from it does not change. -o may name the same file")
    ("only-memcpy", po::value(&only_memcpy),
     "measure only the memcpy curves (compute.memcpy on one core, compute.memcpy_all_cores with every core "
     "copying at once; --quick as usual) and write this calibration to -o with them replaced; everything "
     "else is kept as it is. -o may name the same file")
    ("only-rate-curve", po::value(&only_rate_curve),
     "measure only the compute rate by working-set size (compute.rate_by_working_set: a system-BLAS dgemm "
     "panel update from 16 KiB to 128 MiB of operands, or to 4 MiB with --quick) and the library rates "
     "(compute.library_rates: a curve per BLAS kernel, to 64 MiB; docs/reference/latency-model.md, \"Library "
     "calls priced from their arguments\") and write this calibration to -o with them added or replaced; "
     "everything else is kept. -o may name the same file");
  options.add_options()("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).run(), vm);
    if (vm.count("help") > 0) {
      std::cout << "usage: gridcast " << synopsis << "\n\n" << options << '\n';
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError{e.what(), "calibrate"};
  }
  if (output.empty())
    throw UsageError{"-o/--out is required", "calibrate"};
  const bool gpu_only = vm.count("gpu-only") > 0;
  if (gpu_only && (vm.count("gpu-json") > 0 || vm.count("no-gpu") > 0))
    throw UsageError{"--gpu-only measures the GPU: it cannot go with --gpu-json or --no-gpu", "calibrate"};

  if (not only_memcpy.empty())
    for (const char* other : {"refit", "only-collectives", "mpirun", "mpi-bench", "gpu-json", "gpu-only", "no-mpi",
                              "no-gpu"})
      if (vm.count(other) > 0)
        throw UsageError{std::string("--only-memcpy measures the memcpy curves alone: it cannot go with --") + other,
                         "calibrate"};
  if (not only_collectives.empty())
    for (const char* other : {"refit", "gpu-json", "gpu-only", "no-mpi", "no-gpu"})
      if (vm.count(other) > 0)
        throw UsageError{std::string("--only-collectives measures the collectives alone: it cannot go with --") +
                             other,
                         "calibrate"};
  if (not refit.empty()) {
    for (const char* other : {"mpirun", "quick", "gpu-json", "gpu-only", "no-mpi", "no-gpu", "mpi-bench"})
      if (vm.count(other) > 0)
        throw UsageError{std::string("--refit measures nothing: it cannot go with --") + other, "calibrate"};
    return refit_network_model(refit, output);
  }
  const bool quick = vm.count("quick") > 0;
  calibrate::Progress progress(std::cerr, calibrate::Progress::detect(vm.count("quiet") > 0));
  if (not only_memcpy.empty())
    return only_memcpy_curves(only_memcpy, output, quick, progress);
  if (not only_rate_curve.empty()) {
    for (const char* other : {"refit", "only-collectives", "only-memcpy", "gpu-json", "gpu-only", "no-mpi",
                              "no-gpu", "mpirun", "mpi-bench"})
      if (vm.count(other) > 0)
        throw UsageError{std::string("--only-rate-curve measures the compute rate alone: it cannot go with --") +
                             other,
                         "calibrate"};
    return only_rate_curves(only_rate_curve, output, quick, progress);
  }
  if (not only_collectives.empty())
    return only_collective_timings(only_collectives, output, mpirun, mpi_bench, quick, progress);
  if (gpu_only)
    return gpu_datasheet(output, quick, progress);

  calibrate::CalibrateOptions o;
  o.quick     = quick;
  o.mpi       = vm.count("no-mpi") == 0;
  o.gpu       = vm.count("no-gpu") == 0;
  o.mpirun    = mpirun;
  o.mpi_bench = mpi_bench;
  o.gpu_json  = gpu_json;
  std::vector<std::string> notes;
  platform::Calibration c = calibrate::run_calibration(o, progress, notes);
  platform::write_calibration(output, c);
  std::cerr << "gridcast calibrate: wrote " << output << " (compute" << (c.network ? ", MPI" : "")
            << (c.gpu ? ", GPU" : "") << ")\n";
  return 0;
}

}  // namespace gridcast::cli
