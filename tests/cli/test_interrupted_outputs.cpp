// A run interrupted by SIGINT (Ctrl-C) or SIGTERM (a batch system's time limit) at any point leaves each
// result as it was before the run, or whole from this run, never half-written, and no hidden temporary.
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
namespace test = gridcast::test;

namespace {

std::string read_all(const fs::path& p)
{
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs the gridcast program with `args` (no shell), sends `sig` after `delay`, waits for it to end.
void run_and_interrupt(const std::vector<std::string>& args, std::chrono::microseconds delay, int sig)
{
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(GRIDCAST_BIN));
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(GRIDCAST_BIN, argv.data());
    _exit(127);
  }
  std::this_thread::sleep_for(delay);
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace

TEST_CASE("cli: a prediction interrupted at any point leaves its outputs as they were or whole and no temporary",
          "[cli]")
{
  test::TempDir dir;
  const fs::path out = dir / "out";
  const std::vector<std::string> args = {"predict", std::string(GRIDCAST_SOURCE_DIR) + "/examples/predict-stencil/model.json",
                                         "--nw", "32", "--np", "64", "--platform",
                                         std::string(GRIDCAST_SOURCE_DIR) + "/examples/stencil3d/platform.xml",
                                         "--out", out.string()};
  // A whole run first: the outputs an interrupted run must leave alone.
  std::string cmd;
  for (const auto& a : args)
    cmd += " '" + a + "'";
  const auto whole = test::run_gridcast(cmd);
  REQUIRE(whole.exit_code == 0);
  const std::string prediction = read_all(out / "prediction.json"), timeline = read_all(out / "timeline.json");
  REQUIRE_FALSE(prediction.empty());
  REQUIRE_FALSE(timeline.empty());

  // Interruptions spread over the run: from start-up, through the streamed timeline, to the last writes.
  // Which phase each one hits depends on the machine; what is checked holds in every phase.
  const auto start = std::chrono::steady_clock::now();
  test::run_gridcast(cmd);
  const auto run_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  for (int i = 1; i <= 8; ++i)
    for (int sig : {SIGINT, SIGTERM}) {
      const auto delay = run_us * i / 8;
      INFO("signal " << sig << " after " << delay.count() << " us of a " << run_us.count() << " us run");
      run_and_interrupt(args, delay, sig);
      for (const auto& entry : fs::directory_iterator(out)) {
        const std::string name = entry.path().filename().string();
        INFO(name);
        CHECK(name.find(".tmp-") == std::string::npos);  // no temporary left
      }
      // Each result is the previous run's or this run's whole one (the same bytes: the run is deterministic).
      CHECK(read_all(out / "prediction.json") == prediction);
      CHECK(read_all(out / "timeline.json") == timeline);
    }
}
