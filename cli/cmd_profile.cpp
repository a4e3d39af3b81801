// `gridcast profile`: run an MPI application with libgridcast-hook.so preloaded and turn what it
// recorded into a profile directory (or, with --discover, into a list of the functions worth recording).
#include "commands.hpp"

#include "gridcast/calibrate/measure.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/calibration/calibration.hpp"
#include "gridcast/profiler/launch.hpp"
#include "gridcast/profiler/profiler.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace gridcast::cli {

namespace {

const char* const kSynopsis =
    "profile [--nw VALUE] --out DIR [--functions FILE] [--calibration FILE] [options] -- COMMAND...\n"
    "       gridcast profile --discover [--out LIST] [--share 0.85] -- COMMAND...\n\n"
    "Runs COMMAND (an MPI application, usually `mpirun -np N APP ARGS...`) with libgridcast-hook.so preloaded\n"
    "and writes a profile directory: run.json and one trace per rank (docs/guides/profiling.md). With --discover it\n"
    "records every function it can, ranks them by total time and writes the list of those covering --share\n"
    "of the time, for later runs' --functions.";

std::string utc_now()
{
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void check_writable_dir(const fs::path& dir)
{
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || not fs::is_directory(dir))
    throw InputError({dir.string(), 0, {}, -1}, "cannot create the output directory" +
                                                    (ec ? ": " + ec.message() : std::string()));
  if (access(dir.c_str(), W_OK) != 0)
    throw InputError({dir.string(), 0, {}, -1}, "the output directory is not writable");
}

void print_summary(const profiler::ConvertResult& r)
{
  std::printf("%-5s %-22s %10s %9s %9s %10s\n", "rank", "status", "wall_s", "coverage", "hooked", "records");
  for (const auto& s : r.ranks)
    std::printf("%-5d %-22s %10.4f %8.2f%% %8.2f%% %10llu\n", s.rank, s.status.c_str(), s.wall_s,
                100.0 * s.coverage(), s.wall_s > 0 ? 100.0 * s.hooked_s / s.wall_s : 0.0,
                static_cast<unsigned long long>(s.records));
}

/// Ranks whose raw files stopped growing during the run (the disk filled, a file size limit): how far
/// their records go, and why, on stderr; and ranks whose meta file was damaged. True when there was one:
/// the profile then lacks calls.
bool report_write_errors(const profiler::ConvertResult& r, const fs::path& raw_dir)
{
  bool any = false;
  for (const auto& s : r.ranks)
    if (not s.write_error.empty()) {
      any = true;
      std::fprintf(stderr,
                   "gridcast profile: rank %d: the hook could not write %s past %.6f s of the run (%s): its profile "
                   "stops after %llu records, %lld later records were lost; the application ran on unchanged\n",
                   s.rank, raw_dir.string().c_str(), s.last_record_s, s.write_error.c_str(),
                   static_cast<unsigned long long>(s.records), static_cast<long long>(s.records_dropped));
    }
  if (any)
    std::fprintf(stderr, "gridcast profile: the profile is INCOMPLETE: free space (or raise the limit), or put the "
                         "raw files elsewhere with --raw-dir, and profile again\n");
  bool damaged = false;
  for (const auto& s : r.ranks)
    if (s.status == "damaged") {
      damaged = true;
      std::fprintf(stderr, "gridcast profile: rank %d: its meta file does not read (%s): its trace is left empty and "
                           "the other ranks are converted\n", s.rank, s.damage.c_str());
    }
  if (damaged)
    std::fprintf(stderr, "gridcast profile: the profile is INCOMPLETE: a rank's meta file was damaged (a rank killed "
                         "while the hook rewrote it, or a failing disk); profile again\n");
  return any || damaged;
}

/// What the command line asks for, checked.
struct ProfileRequest {
  std::vector<std::string> command;  ///< after `--`
  double nw = 0;
  std::string out, functions, calibration, raw_dir;
  models::TraceEncoding encoding = models::TraceEncoding::Binary;
  double share = 0.85;
  double kill_wait_s = 30;  ///< profiler::RunWatch
  bool keep_raw = false, discover = false, force = false;
};

/// Parses and checks the arguments; nullopt when --help or --print-hook answered already.
std::optional<ProfileRequest> parse_request(const std::vector<std::string>& all_args)
{
  ProfileRequest r;
  auto dashdash = std::find(all_args.begin(), all_args.end(), "--");
  std::vector<std::string> args(all_args.begin(), dashdash);
  if (dashdash != all_args.end())
    r.command.assign(dashdash + 1, all_args.end());

  po::options_description options("options");
  std::string encoding = "binary";
  options.add_options()
    ("nw", po::value<double>(&r.nw), "workload size (problem size) of this run, written to run.json; required "
                                     "unless --discover")
    ("out,o", po::value<std::string>(&r.out), "profile directory to write (created); with --discover the function "
                                            "list file (default gridcast-functions.txt)")
    ("functions", po::value<std::string>(&r.functions), "function list (one symbol per line, # comments; the "
                  "output of --discover): library and application functions to record besides MPI")
    ("calibration", po::value<std::string>(&r.calibration), "calibration.json whose compute.core_speed_flops is "
                    "the host speed written to run.json (default: measured now with a system-BLAS dgemm, as gridcast calibrate does)")
    ("encoding", po::value<std::string>(&encoding), "rank file encoding: binary (default) or jsonl")
    ("keep-raw", "keep the hook's raw files (DIR/raw, or --raw-dir) after the conversion")
    ("raw-dir", po::value<std::string>(&r.raw_dir), "where the hook writes its raw files (default DIR/raw): a "
                "directory every rank can write and this command can read, e.g. a local disk apart from --out's")
    ("kill-wait", po::value<double>(&r.kill_wait_s), "seconds the launcher has to return once every rank has "
                  "ended after a fault (MPI_Abort, a signal, an exit without MPI_Finalize) before gridcast stops "
                  "it, and rank processes that outlive it get before they are killed (default 30; 0: wait for ever)")
    ("force", "replace the trace that --out already holds (its files only; without it, exit 1)")
    ("discover", "record every function the hook can see and write the list of those covering --share")
    ("share", po::value<double>(&r.share), "--discover: share of the total time the listed functions must cover "
                                           "(default 0.85)")
    ("print-hook", "print the hook library `profile` preloads and how it was found, then exit")
    ("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError{e.what(), "profile"};
  }
  if (vm.count("help") > 0) {
    std::cout << "usage: gridcast " << kSynopsis << "\n\n" << options
              << "\nThe command comes after `--`. Exit status 1 when the command is missing, the application is\n"
                 "not dynamically linked to MPI, the output cannot be written, a function list is malformed,\n"
                 "or the run failed (its profile is then written anyway, marked complete=false).\n"
                 "\nThe hook (libgridcast-hook.so) is $GRIDCAST_HOOK when set, else the one this gridcast was built\n"
                 "with, else ../lib/libgridcast-hook.so beside the program (an installed tree); with\n"
                 "GRIDCAST_HOOK_FALLBACK=off that last place is not tried. --print-hook says which one is used.\n";
    return std::nullopt;
  }
  if (vm.count("print-hook") > 0) {
    const profiler::HookLocation hook = profiler::find_hook();
    std::cout << "hook: " << hook.path.string() << "\nfound by: " << profiler::hook_source_name(hook.source) << '\n';
    return std::nullopt;
  }
  r.discover = vm.count("discover") > 0;
  r.keep_raw = vm.count("keep-raw") > 0;
  r.force    = vm.count("force") > 0;
  if (r.command.empty())
    throw UsageError{"no command after `--` (e.g. gridcast profile --nw 100 --out prof -- mpirun -np 2 ./app)",
                     "profile"};
  if (not r.discover && vm.count("nw") == 0)
    throw UsageError{"--nw VALUE is required: the workload size of this run", "profile"};
  if (not r.discover && r.out.empty())
    throw UsageError{"--out DIR is required", "profile"};
  if (r.discover && vm.count("raw-dir") > 0)
    throw UsageError{"--discover keeps its raw files in a temporary directory: it takes no --raw-dir", "profile"};
  if (r.discover && vm.count("functions") > 0)
    throw UsageError{"--discover records every function: it takes no --functions list", "profile"};
  if (r.share <= 0 || r.share > 1)
    throw UsageError{"--share must be in (0, 1]", "profile"};
  if (r.nw < 0)
    throw UsageError{"--nw must be >= 0", "profile"};
  if (not(r.kill_wait_s >= 0))
    throw UsageError{"--kill-wait must be >= 0 seconds", "profile"};
  if (encoding == "binary")
    r.encoding = models::TraceEncoding::Binary;
  else if (encoding == "jsonl")
    r.encoding = models::TraceEncoding::JsonLines;
  else
    throw UsageError{"--encoding must be binary or jsonl, not '" + encoding + "'", "profile"};
  return r;
}

/// The application in the command: an ELF program linked to MPI (the hook works through MPI's profiling
/// interface), and its function list checked against it before any run.
fs::path check_application(const ProfileRequest& r)
{
  auto app = profiler::find_application(r.command);
  if (not app)
    throw UsageError{"no application in the command '" + profiler::join_command(r.command) + "'", "profile"};
  if (not profiler::links_mpi_dynamically(*app))
    throw InputError({app->string(), 0, {}, -1},
                     "not dynamically linked to an MPI library (no libmpi among the libraries it needs): the "
                     "hook intercepts MPI through the dynamic linker and cannot see its calls");
  if (not r.functions.empty()) {
    // A malformed list or a symbol neither the hook, the application nor its libraries know is an error
    // before any run (a typo would otherwise cost a whole profiling run).
    auto listed = profiler::check_function_list(r.functions, *app);
    if (not listed.application.empty() && not profiler::elf_imports(*app, "__cyg_profile_func_enter"))
      std::cerr << "gridcast profile: warning: " << app->string() << " is not built with "
                << "-finstrument-functions: its own functions in " << r.functions << " ('"
                << listed.application.front() << "'...) will not be recorded\n";
    for (const auto& n : listed.libraries)
      std::cerr << "gridcast profile: warning: " << r.functions << ": '" << n << "' is a function of a library "
                << app->string() << " needs, not one the hook wraps: it is recorded only if that library is built "
                << "with -finstrument-functions\n";
  }
  return *app;
}

/// The host's speed (and rate by working set) that turns the profile's seconds into flops.
void host_speed(const ProfileRequest& r, models::RunInfo& info)
{
  if (not r.calibration.empty()) {
    // The strict reader: the same calibration.json `gridcast platform` reads, so that the speed that turns
    // measured seconds into flops is the speed the generated platform gives the host back.
    const platform::Calibration cal = platform::read_calibration(r.calibration);
    info.host.speed_flops = cal.compute.core_speed_flops;
    // The rate by working set goes along, so that `gridcast fit` can convert each profile's seconds at
    // the rate of its ranks' footprint (the rate model, docs/reference/latency-model.md).
    for (const platform::SizedRate& p : cal.compute.rate_by_working_set)
      info.host.rate_curve.push_back({static_cast<double>(p.bytes), p.flops.median});
    for (const platform::KernelRateCurve& k : cal.compute.library_rates)
      for (const platform::KernelRatePoint& p : k.points)
        info.host.library_rates[k.kernel].push_back({static_cast<double>(p.bytes), p.rate.median});
    if (not(info.host.speed_flops > 0))
      throw InputError({r.calibration, 0, "compute.core_speed_flops", -1}, "must be > 0 to convert seconds to flops");
    std::cout << "host speed: " << info.host.speed_flops << " flop/s (compute.core_speed_flops of " << r.calibration
              << ")\n";
  } else if (not r.discover) {
    // The same measurement as `gridcast calibrate`'s core_speed_flops (system-BLAS dgemm), shorter.
    info.host.speed_flops = calibrate::measure_dgemm_flops(384, 5).median;
    std::cout << "host speed: " << info.host.speed_flops
              << " flop/s, dgemm n=384 measured now as gridcast calibrate does (no --calibration given)\n";
  }
}

/// --discover: the functions covering the share of the time, written as a list and printed.
void write_discovery(const ProfileRequest& r, const profiler::ConvertResult& result, const std::string& command)
{
  double total = 0;
  for (const auto& f : result.functions)
    total += f.seconds;
  auto selected = profiler::select_functions(result.functions, r.share);
  double kept = 0;
  for (const auto& f : selected)
    kept += f.seconds;
  fs::path list = r.out.empty() ? fs::path("gridcast-functions.txt") : fs::path(r.out);
  profiler::write_function_list(list, selected, total, command);
  std::printf("%-40s %12s %8s %10s\n", "function", "seconds", "share", "calls");
  for (const auto& f : selected)
    std::printf("%-40s %12.6f %7.2f%% %10llu\n", f.name.c_str(), f.seconds, total > 0 ? 100 * f.seconds / total : 0,
                static_cast<unsigned long long>(f.calls));
  double compute = 0;
  for (const auto& f : result.functions)
    if (f.name == "compute")
      compute = f.seconds;
  std::printf("listed: %zu functions, %.2f%% of %.6f s (all ranks); time in no hooked function: %.2f%%\n",
              selected.size(), total > 0 ? 100 * kept / total : 0, total, total > 0 ? 100 * compute / total : 0);
  std::printf("function list written to %s\n", list.string().c_str());
}

}  // namespace

int run_profile(const std::vector<std::string>& all_args)
{
  const std::optional<ProfileRequest> request = parse_request(all_args);
  if (not request)
    return 0;
  const ProfileRequest& r = *request;
  const fs::path app  = check_application(r);
  const fs::path hook = profiler::find_hook().path;

  fs::path out_dir = r.discover ? fs::path() : fs::path(r.out);
  fs::path raw_dir;
  if (r.discover) {
    fs::path list = r.out.empty() ? fs::path("gridcast-functions.txt") : fs::path(r.out);
    check_writable_dir(fs::absolute(list).parent_path());
    raw_dir = fs::temp_directory_path() / ("gridcast-discover-" + std::to_string(getpid()));
  } else {
    models::prepare_trace_output(out_dir, r.force);  // before the run: a refusal costs nothing
    check_writable_dir(out_dir);
    raw_dir = r.raw_dir.empty() ? out_dir / "raw" : fs::absolute(r.raw_dir);
    if (not r.raw_dir.empty() && fs::exists(raw_dir) &&
        (not fs::is_directory(raw_dir) || not fs::is_empty(raw_dir)))
      throw InputError({raw_dir.string(), 0, {}, -1},
                       "--raw-dir must be a new or empty directory (the raw files of the run go there, and are "
                       "removed after the conversion)");
  }
  fs::remove_all(raw_dir);
  fs::create_directories(raw_dir);
  check_writable_dir(raw_dir);
  const profiler::Environment env = profiler::hook_environment(hook, raw_dir, r.functions, r.discover);

  models::RunInfo info;
  info.nw       = r.nw;
  info.command  = profiler::join_command(r.command);
  info.date     = utc_now();
  info.encoding = r.encoding;
  info.origin   = "profile";
  host_speed(r, info);

  profiler::RunOutcome run = profiler::run_with_hook(r.command, env, {raw_dir, r.kill_wait_s});
  info.complete = run.ok();
  bool any_meta = false;
  for (const auto& entry : fs::directory_iterator(raw_dir))
    any_meta = any_meta || entry.path().extension() == ".meta";
  if (not any_meta) {
    fs::remove_all(raw_dir);
    throw InputError({app.string(), 0, {}, -1},
                     run.ok() ? "the run recorded nothing: no rank called MPI_Init with the hook loaded"
                              : "the run failed (" + run.describe() + ") before any rank reached MPI_Init: "
                                "nothing was recorded");
  }
  profiler::ConvertResult result = profiler::convert_raw(raw_dir, info, out_dir);

  if (r.discover) {
    write_discovery(r, result, info.command);
    fs::remove_all(raw_dir);
  } else {
    if (not r.keep_raw)
      fs::remove_all(raw_dir);
    print_summary(result);
    std::printf("profile written to %s (%s)\n", out_dir.string().c_str(),
                info.complete && result.all_finalized ? "complete" : "INCOMPLETE");
  }
  const bool lost = report_write_errors(result, raw_dir);
  if (not run.ok()) {
    std::cerr << "gridcast profile: the run failed (" << run.describe() << "); "
              << (r.discover ? "the list covers what was recorded" : "the profile keeps what was recorded and is "
                                                                    "marked complete=false")
              << '\n';
    return 1;
  }
  return lost ? 1 : 0;
}

int import_hook_raw(const HookImport& request)
{
  bool any_meta = false;
  if (fs::is_directory(request.raw_dir))
    for (const auto& entry : fs::directory_iterator(request.raw_dir))
      any_meta = any_meta || entry.path().extension() == ".meta";
  if (not any_meta)
    throw InputError({request.raw_dir.string(), 0, {}, -1},
                     "no rank-R.meta file: not a directory of the hook's raw files (GRIDCAST_HOOK_DIR of a run)");
  models::prepare_trace_output(request.out, request.force);
  models::RunInfo info;
  info.nw               = request.nw;
  info.command          = "gridcast hook (imported from " + request.raw_dir.string() + ")";
  info.encoding         = request.encoding;
  info.origin           = "hook-import";
  info.host.name        = request.host_name;
  info.host.speed_flops = request.host_speed_flops;
  // No date: an import is a function of its input (the same raw files give the same profile).
  profiler::ConvertResult result = profiler::convert_raw(request.raw_dir, info, request.out);
  print_summary(result);
  std::printf("profile written to %s (%s)\n", request.out.string().c_str(),
              result.all_finalized ? "complete" : "INCOMPLETE");
  const bool lost = report_write_errors(result, request.raw_dir);
  if (not result.all_finalized)
    std::cerr << "gridcast import: not every rank of " << request.raw_dir.string()
              << " reached MPI_Finalize: the profile keeps what was recorded and is marked complete=false\n";
  return lost || not result.all_finalized ? 1 : 0;
}

}  // namespace gridcast::cli
