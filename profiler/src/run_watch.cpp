// Watching a profiled run for the hang that follows a fault: a rank calls MPI_Abort, dies of a signal or
// exits without MPI_Finalize, every rank has ended, and the launcher does not return (Open MPI's mpirun has
// known races there: open-mpi/ompi issues 1379, 3225, 3380), or rank processes outlive it. The ranks' meta
// files (written by the hook) say how each ended, and /proc says which of them still run on this host.
#include "gridcast/profiler/launch.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/profiler/profiler.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace gridcast::profiler {

namespace {

std::string this_host()
{
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}

/// Whether the process that wrote a meta file still runs: its environment names this run's raw directory
/// (a zombie has no environment left, and a pid reused by another program names none).
bool runs_here(std::int64_t pid, const fs::path& raw_dir)
{
  if (pid <= 0)
    return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (not in)
    return false;
  const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string marker = "GRIDCAST_HOOK_DIR=" + fs::absolute(raw_dir).string();  // as hook_environment() sets it
  for (std::size_t at = 0; at < env.size();) {
    const std::size_t end = env.find('\0', at);
    if (env.compare(at, (end == std::string::npos ? env.size() : end) - at, marker) == 0)
      return true;
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return false;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Waits up to `seconds` for `pid` (our child) to end; true when it did (`status` set).
bool wait_child(pid_t pid, int pidfd, double seconds, int& status)
{
  const auto start = Clock::now();
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid)
      return true;
    if (w < 0 && errno != EINTR)
      throw InternalError(std::string("waitpid on the launched command failed: ") + std::strerror(errno));
    const double left = seconds - seconds_since(start);
    if (left <= 0)
      return false;
    const int ms = static_cast<int>(std::min(left, 0.5) * 1000) + 1;
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      (void)poll(&p, 1, ms);  // readable when the child ends; EINTR (a forwarded signal) just loops
    } else {
      usleep(static_cast<useconds_t>(std::min(ms, 50)) * 1000);
    }
  }
}

const char* kStopHint = "--kill-wait sets how long gridcast waits";

}  // namespace

RanksState scan_ranks(const fs::path& raw_dir)
{
  RanksState s;
  const std::string host = this_host();
  std::map<int, RawMeta> metas;
  std::error_code ec;
  for (fs::directory_iterator it(raw_dir, ec), end; not ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".meta")
      continue;
    try {
      RawMeta m = read_raw_meta(it->path());
      metas[m.rank] = std::move(m);
    } catch (const InputError&) {
      // being written, or damaged: the conversion reports it; here the rank is simply not seen
    }
  }
  bool every_over = true, any_abort = false;
  for (const auto& [rank, m] : metas) {
    s.size = std::max(s.size, m.size);
    const bool here  = m.host == host;
    const bool alive = here ? runs_here(m.pid, raw_dir) : true;  // elsewhere: only the meta file tells
    const bool dead  = not alive;
    const bool terminal = m.status == "abort" || m.status == "exit-without-finalize";
    const bool faulty   = terminal || m.status == "signal" || (m.status == "running" && dead);
    any_abort = any_abort || m.status == "abort";
    if (faulty && not s.fault) {
      s.fault       = true;
      s.first_fault = "rank " + std::to_string(rank) + ": " + (m.status == "running" ? "killed" : m.status);
    }
    every_over = every_over && (dead || terminal);
    if (here && alive)
      s.alive_here.push_back({rank, static_cast<pid_t>(m.pid)});
  }
  s.seen     = static_cast<int>(metas.size());
  s.all_over = any_abort || (s.seen > 0 && s.seen == s.size && every_over);
  return s;
}

RunOutcome wait_watching(pid_t launcher, const RunWatch& watch)
{
  RunOutcome out;
  int status = 0;
  if (watch.kill_wait_s <= 0) {
    while (waitpid(launcher, &status, 0) < 0 && errno == EINTR) {
    }
  } else {
    // pidfd_open (Linux 5.3): poll() wakes when the launcher ends, so a run that ends costs no polling delay.
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, launcher, 0));
    std::optional<Clock::time_point> over_since;
    for (;;) {
      if (wait_child(launcher, pidfd, 0.5, status))
        break;
      const RanksState s = scan_ranks(watch.raw_dir);
      if (not(s.fault && s.all_over)) {
        over_since.reset();
        continue;
      }
      if (not over_since)
        over_since = Clock::now();
      if (seconds_since(*over_since) < watch.kill_wait_s)
        continue;
      std::cerr << "gridcast profile: every rank has ended after a fault (" << s.first_fault
                << "), but the launcher (pid " << launcher << ") still runs " << watch.kill_wait_s
                << " s later: stopping it (SIGTERM, SIGKILL 5 s later; " << kStopHint << ")\n";
      out.stopped = true;
      kill(launcher, SIGTERM);
      if (not wait_child(launcher, pidfd, 5, status)) {
        kill(launcher, SIGKILL);
        while (waitpid(launcher, &status, 0) < 0 && errno == EINTR) {
        }
      }
      break;
    }
    if (pidfd >= 0)
      close(pidfd);
    // Rank processes that outlive their launcher after a fault hold its output open (a caller reading it
    // would wait for ever) and serve nothing: given the same wait, they are killed.
    RanksState s = scan_ranks(watch.raw_dir);
    const auto launcher_end = Clock::now();
    while (s.fault && not s.alive_here.empty() && seconds_since(launcher_end) < watch.kill_wait_s) {
      usleep(200 * 1000);
      s = scan_ranks(watch.raw_dir);
    }
    if (s.fault)
      for (const RankProcess& p : s.alive_here) {
        std::cerr << "gridcast profile: rank " << p.rank << " (pid " << p.pid << ") still runs " << watch.kill_wait_s
                  << " s after its launcher ended, after a fault (" << s.first_fault << "): killing it ("
                  << kStopHint << ")\n";
        kill(p.pid, SIGKILL);
        out.stopped = true;
      }
    // SIGKILL is delivered, not waited for: gridcast returns once they are gone (or 5 s on).
    const auto killed_at = Clock::now();
    while (s.fault && not s.alive_here.empty() && seconds_since(killed_at) < 5) {
      usleep(20 * 1000);
      s = scan_ranks(watch.raw_dir);
    }
  }
  if (WIFEXITED(status))
    out.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    out.signal = WTERMSIG(status);
  return out;
}

}  // namespace gridcast::profiler
