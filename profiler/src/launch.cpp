// Launching a profiled run: finding the hook, recognising the launcher, running the command with the hook's
// environment.
#include "gridcast/profiler/launch.hpp"

#include "gridcast/foundation/errors.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace gridcast::profiler {

const char* hook_source_name(HookSource source)
{
  switch (source) {
  case HookSource::Environment:
    return "GRIDCAST_HOOK";
  case HookSource::BuildTime:
    return "build-time path";
  case HookSource::BesideProgram:
    return "beside the program";
  }
  return "?";
}

HookLocation find_hook()
{
  if (const char* env = std::getenv("GRIDCAST_HOOK"); env != nullptr && *env != 0)
    return {env, HookSource::Environment};
  std::error_code ec;
  const fs::path self   = fs::read_symlink("/proc/self/exe", ec);
  const fs::path beside = ec ? fs::path() : self.parent_path().parent_path() / "lib" / "libgridcast-hook.so";
  const bool beside_exists = not beside.empty() && fs::exists(beside);
#ifdef GRIDCAST_HOOK_PATH
  // The build-time path, for the program of the build tree. An installed copy of gridcast has its own hook
  // beside it, which wins even where the build tree it came from is still on the machine.
  if (fs::exists(GRIDCAST_HOOK_PATH) && (not beside_exists || fs::equivalent(beside, GRIDCAST_HOOK_PATH, ec)))
    return {GRIDCAST_HOOK_PATH, HookSource::BuildTime};
#endif
  const char* fallback = std::getenv("GRIDCAST_HOOK_FALLBACK");
  if ((fallback == nullptr || std::string_view(fallback) != "off") && beside_exists)
    return {beside, HookSource::BesideProgram};
#ifdef GRIDCAST_HOOK_PATH
  throw InputError({GRIDCAST_HOOK_PATH, 0, {}, -1}, "libgridcast-hook.so is missing: build the gridcast_hook target");
#else
  throw InputError({}, "this gridcast was built without MPI, so without libgridcast-hook.so: install an MPI "
                       "development package (libopenmpi-dev) and rebuild");
#endif
}

bool is_launcher(const std::string& argv0)
{
  std::string n = fs::path(argv0).filename().string();
  return n == "mpirun" || n == "mpiexec" || n == "orterun" || n == "mpirun.openmpi" || n == "mpiexec.openmpi";
}

bool is_open_mpi_launcher(const std::string& argv0)
{
  if (not is_launcher(argv0))
    return false;
  std::string cmd = "'" + argv0 + "' --version 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr)
    return true;  // cannot tell: -x is what the Debian default (Open MPI) needs
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr)
    text += buf;
  pclose(p);
  return text.find("Open MPI") != std::string::npos || text.find("OpenRTE") != std::string::npos;
}

std::string join_command(const std::vector<std::string>& command)
{
  std::string s;
  for (const auto& a : command) {
    if (not s.empty())
      s += ' ';
    bool quote = a.empty() || a.find_first_of(" \t\"'$\\") != std::string::npos;
    s += quote ? "'" + a + "'" : a;
  }
  return s;
}

std::string RunOutcome::describe() const
{
  return std::string(stopped ? "stopped by gridcast after a fault, then " : "") +
         (signal != 0 ? "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")"
                      : "exit status " + std::to_string(exit_code));
}

Environment hook_environment(const fs::path& hook, const fs::path& raw_dir, const fs::path& function_list,
                             bool discover)
{
  Environment env;
  const char* preload = std::getenv("LD_PRELOAD");
  env.emplace_back("LD_PRELOAD", hook.string() + (preload != nullptr ? std::string(":") + preload : ""));
  if (not function_list.empty())
    env.emplace_back("GRIDCAST_HOOK_FUNCTIONS", fs::absolute(function_list).string());
  env.emplace_back("GRIDCAST_HOOK_DIR", fs::absolute(raw_dir).string());
  if (discover)
    env.emplace_back("GRIDCAST_HOOK_DISCOVER", "1");
  return env;
}

namespace {

pid_t g_child = -1;
extern "C" void forward_signal(int sig)
{
  if (g_child > 0)
    kill(g_child, sig);
}

}  // namespace

RunOutcome run_with_hook(std::vector<std::string> command, const Environment& env, const RunWatch& watch)
{
  const bool pass_with_x = is_open_mpi_launcher(command[0]);
  if (pass_with_x) {
    std::vector<std::string> extra;
    for (const auto& [k, v] : env) {
      extra.push_back("-x");
      extra.push_back(k + "=" + v);
    }
    command.insert(command.begin() + 1, extra.begin(), extra.end());
  }
  std::vector<char*> argv;
  for (auto& a : command)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  pid_t pid = fork();
  if (pid < 0)
    throw InternalError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (not pass_with_x)
      for (const auto& [k, v] : env)
        setenv(k.c_str(), v.c_str(), 1);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "gridcast profile: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  // Ctrl-C or a kill of gridcast reaches the application; gridcast stays to convert what was recorded.
  g_child = pid;
  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  RunOutcome out = wait_watching(pid, watch);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  g_child = -1;
  if (out.exit_code == 127)
    throw InputError({command[0], 0, {}, -1}, "the command could not be started");
  return out;
}

}  // namespace gridcast::profiler
