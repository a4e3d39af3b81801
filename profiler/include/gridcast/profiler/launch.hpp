// gridcast::profiler -- launching a profiled run: where libgridcast-hook.so is, which launcher a command
// starts with, and running the command with the hook's environment. See docs/guides/profiling.md.
#pragma once

#include <filesystem>
#include <string>
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
  bool ok() const { return exit_code == 0 && signal == 0; }
  std::string describe() const;  ///< "exit status N" or "killed by signal N (name)"
};

using Environment = std::vector<std::pair<std::string, std::string>>;

/// The environment that makes the hook record a run: LD_PRELOAD (the hook before any preload already
/// set), GRIDCAST_HOOK_DIR (the raw files' directory), and the function list and discover mode when given.
Environment hook_environment(const std::filesystem::path& hook, const std::filesystem::path& raw_dir,
                             const std::filesystem::path& function_list, bool discover);

/// Runs `command` with `env` and waits for it. Open MPI's launcher gets `-x VAR=value` for each, so that
/// only the application processes load the hook (mpirun itself and its daemons stay clean); any other
/// command gets them in its environment. SIGINT and SIGTERM are forwarded to it meanwhile. InputError
/// when the command cannot be started.
RunOutcome run_with_hook(std::vector<std::string> command, const Environment& env);

}  // namespace gridcast::profiler
