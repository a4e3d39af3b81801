// gridcast::profiler -- launching a profiled run: where libgridcast-hook.so is, which launcher a command
// starts with, and running the command with the hook's environment. See docs/guides/profiling.md.
#pragma once

#include <filesystem>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace gridcast::profiler {

/// How find_hook() found the hook library.
enum class HookSource {
  Environment,    ///< the GRIDCAST_HOOK environment variable
  BuildTime,      ///< the path the hook was built at (GRIDCAST_HOOK_PATH, set by the build)
  BesideProgram,  ///< ../lib/libgridcast-hook.so beside the running program (an installed tree)
};

/// "GRIDCAST_HOOK", "build-time path" or "beside the program".
const char* hook_source_name(HookSource source);

struct HookLocation {
  std::filesystem::path path;
  HookSource source = HookSource::BuildTime;
};

/// The hook library to preload: $GRIDCAST_HOOK when set and not empty, else the build-time path when that
/// file exists, else ../lib/libgridcast-hook.so beside the running program -- unless
/// GRIDCAST_HOOK_FALLBACK=off, which makes a missing build-time hook an error (a test that the build
/// really defines where the hook is). InputError when none is found.
HookLocation find_hook();

/// Whether `argv0` names an mpirun/mpiexec launcher (Open MPI's names).
bool is_launcher(const std::string& argv0);

/// Open MPI's launcher does not pass its environment on: it needs `-x VAR=value`. Other launchers (MPICH's
/// hydra) forward the environment. Asked once, with `--version`.
bool is_open_mpi_launcher(const std::string& argv0);

/// A command line as a shell would read it back: arguments with blanks or quotes in single quotes.
std::string join_command(const std::vector<std::string>& command);

/// How a launched command ended.
struct RunOutcome {
  int exit_code = 0;
  int signal = 0;
  bool stopped = false;  ///< gridcast stopped the launcher or a rank after a fault (RunWatch)
  bool ok() const { return exit_code == 0 && signal == 0 && not stopped; }
  /// "exit status N" or "killed by signal N (name)", after "stopped by gridcast after a fault, then " if so
  std::string describe() const;
};

/// How `gridcast profile` watches a run that had a fault (docs/guides/profiling.md "How a run ends").
struct RunWatch {
  std::filesystem::path raw_dir;  ///< where the ranks' meta files appear (GRIDCAST_HOOK_DIR)
  /// Once a rank has faulted and every rank has ended, the seconds the launcher has left to return before
  /// gridcast stops it; also what rank processes that outlive it get. 0: wait for ever.
  double kill_wait_s = 30;
};

/// A rank process still running on this host.
struct RankProcess {
  int rank = 0;
  pid_t pid = 0;
};

/// What the meta files of a run say about its ranks, with /proc for the ones on this host.
struct RanksState {
  int size = 0;       ///< world size (0: no meta file read yet)
  int seen = 0;       ///< ranks whose meta file reads
  bool fault = false;  ///< a rank aborted, took a signal, exited without MPI_Finalize or died unrecorded
  std::string first_fault;  ///< "rank R: abort" (or signal, exit-without-finalize, killed)
  /// Every rank has ended for good (its process is gone, or it called MPI_Abort or exit), or one called
  /// MPI_Abort, which ends them all. A rank on another host counts by its meta file only.
  bool all_over = false;
  std::vector<RankProcess> alive_here;  ///< ranks whose process still runs here (zombies do not)
};

RanksState scan_ranks(const std::filesystem::path& raw_dir);

/// Waits for `launcher` (a child of this process) while watching its ranks: after a fault, when every rank
/// has ended and `watch.kill_wait_s` has passed, the launcher gets SIGTERM, then SIGKILL; rank processes
/// that outlive it by as long get SIGKILL. Each step is said on stderr and sets RunOutcome::stopped.
RunOutcome wait_watching(pid_t launcher, const RunWatch& watch);

using Environment = std::vector<std::pair<std::string, std::string>>;

/// The environment that makes the hook record a run: LD_PRELOAD (the hook before any preload already
/// set), GRIDCAST_HOOK_DIR (the raw files' directory), and the function list and discover mode when given.
Environment hook_environment(const std::filesystem::path& hook, const std::filesystem::path& raw_dir,
                             const std::filesystem::path& function_list, bool discover);

/// Runs `command` with `env` and waits for it. Open MPI's launcher gets `-x VAR=value` for each, so that
/// only the application processes load the hook (mpirun itself and its daemons stay clean); any other
/// command gets them in its environment. SIGINT and SIGTERM are forwarded to it meanwhile, and it is
/// watched as wait_watching() says. InputError when the command cannot be started.
RunOutcome run_with_hook(std::vector<std::string> command, const Environment& env, const RunWatch& watch);

}  // namespace gridcast::profiler
