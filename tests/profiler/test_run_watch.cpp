// The watch `gridcast profile` keeps on a run after a fault (profiler::wait_watching): stand-in launchers
// (sh scripts) that write the ranks' meta files as the hook would and then hang, or leave rank processes
// behind. No MPI: what is tested is the decision to stop, and that nothing is stopped without a fault.
#include "../support.hpp"

#include "gridcast/profiler/launch.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace gridcast;

namespace {

std::string hostname()
{
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}

/// A meta file as the hook writes it (docs/guides/profiling.md "The raw format").
std::string meta(int rank, int size, const std::string& pid, const std::string& host, const std::string& status)
{
  return "rank " + std::to_string(rank) + "\nsize " + std::to_string(size) + "\npid " + pid + "\nhost " + host +
         "\ninit_ticks 1\nend_ticks 0\nticks_per_s 1000000000\nthreads 1\nstatus " + status + "\ncode 0\n";
}

/// A shell line writing rank `rank`'s meta file into the raw directory, its pid the shell expression `pid`.
std::string sh_meta(const fs::path& raw, int rank, int size, const std::string& pid, const std::string& status)
{
  return "printf '" + meta(rank, size, "%s", "%s", status) + "' " + pid + " \"$(cat /proc/sys/kernel/hostname)\" > '" +
         (raw / ("rank-" + std::to_string(rank) + ".meta")).string() + "'; ";
}

profiler::RunOutcome run(const fs::path& raw, const std::string& script, double kill_wait_s)
{
  return profiler::run_with_hook({"sh", "-c", script}, {{"GRIDCAST_HOOK_DIR", fs::absolute(raw).string()}},
                                 {raw, kill_wait_s});
}

}  // namespace

TEST_CASE("run watch: the meta files and the processes tell a fault and whether every rank has ended",
          "[profiler]")
{
  test::TempDir dir;
  const fs::path raw = dir / "raw";
  fs::create_directories(raw);
  const std::string here = hostname();
  CHECK_FALSE(profiler::scan_ranks(raw).fault);  // nothing yet

  // rank 0 took a signal and is gone; rank 1 has no meta file yet: not over
  test::write_file(raw / "rank-0.meta", meta(0, 2, "0", here, "signal"));
  auto s = profiler::scan_ranks(raw);
  CHECK(s.fault);
  CHECK(s.first_fault == "rank 0: signal");
  CHECK(s.size == 2);
  CHECK(s.seen == 1);
  CHECK_FALSE(s.all_over);

  // rank 1 runs on another host: only its meta file tells, and it says running
  test::write_file(raw / "rank-1.meta", meta(1, 2, "12345", here + "-elsewhere", "running"));
  s = profiler::scan_ranks(raw);
  CHECK_FALSE(s.all_over);
  CHECK(s.alive_here.empty());

  // ... then exits without MPI_Finalize: every rank has ended
  test::write_file(raw / "rank-1.meta", meta(1, 2, "12345", here + "-elsewhere", "exit-without-finalize"));
  CHECK(profiler::scan_ranks(raw).all_over);

  // a process of this host that says running but whose pid is not one of this run's: killed unrecorded
  test::write_file(raw / "rank-0.meta", meta(0, 2, std::to_string(getpid()), here, "running"));
  s = profiler::scan_ranks(raw);
  CHECK(s.fault);
  CHECK(s.first_fault == "rank 0: killed");  // this test program has no GRIDCAST_HOOK_DIR naming `raw`

  // one MPI_Abort ends the job, whatever the others' files say
  test::write_file(raw / "rank-0.meta", meta(0, 3, "0", here, "abort"));
  test::write_file(raw / "rank-1.meta", meta(1, 3, "12345", here + "-elsewhere", "running"));
  s = profiler::scan_ranks(raw);
  CHECK(s.fault);
  CHECK(s.all_over);

  // a damaged meta file is not read: that rank is not seen
  test::write_file(raw / "rank-2.meta", "rank two\n");
  CHECK(profiler::scan_ranks(raw).seen == 2);
}

TEST_CASE("run watch: a launcher that hangs after every rank has ended on a fault is stopped", "[profiler]")
{
  test::TempDir dir;
  const fs::path raw = dir / "raw";
  fs::create_directories(raw);
  // Rank 0 aborted and still runs (it is the launcher: `exec sleep` keeps its pid and environment); rank 1
  // took a signal and is gone. Then the launcher hangs.
  const auto out = run(raw, sh_meta(raw, 0, 2, "$$", "abort") + sh_meta(raw, 1, 2, "0", "signal") + "exec sleep 600",
                       0.5);
  CHECK(out.stopped);
  CHECK(out.signal == SIGTERM);
  CHECK_FALSE(out.ok());
  CHECK_THAT(out.describe(), Catch::StartsWith("stopped by gridcast after a fault, then killed by signal 15"));
  CHECK(profiler::scan_ranks(raw).alive_here.empty());
}

TEST_CASE("run watch: rank processes that outlive their launcher after a fault are killed", "[profiler]")
{
  test::TempDir dir;
  const fs::path raw = dir / "raw";
  fs::create_directories(raw);
  // Rank 0 took a signal but runs on (its handler did not end it), in the background of a launcher that
  // exits at once.
  const auto out = run(raw, "sleep 600 & " + sh_meta(raw, 0, 1, "$!", "signal") + "exit 3", 0.5);
  CHECK(out.stopped);
  CHECK(out.exit_code == 3);
  CHECK(profiler::scan_ranks(raw).alive_here.empty());
}

TEST_CASE("run watch: runs without a fault and ranks that still run after one are left alone", "[profiler]")
{
  test::TempDir dir;
  const fs::path raw = dir / "raw";
  fs::create_directories(raw);
  SECTION("a launcher that ends a while after every rank finalized")
  {
    const auto out = run(raw, sh_meta(raw, 0, 1, "0", "finalized") + "sleep 1.5", 0.2);
    CHECK_FALSE(out.stopped);
    CHECK(out.ok());
  }
  SECTION("rank 1 still computes after rank 0's signal until the launcher ends it")
  {
    const auto out = run(raw,
                         sh_meta(raw, 0, 2, "0", "signal") + "sleep 600 & " + sh_meta(raw, 1, 2, "$!", "running") +
                             "sleep 1.5; kill $!; wait; exit 1",
                         0.2);
    CHECK_FALSE(out.stopped);
    CHECK(out.exit_code == 1);
  }
}
