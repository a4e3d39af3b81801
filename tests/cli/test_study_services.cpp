// `gridcast study` with the services a real user has: a single-node Slurm started on this machine
// (scripts/slurm-local.sh) that runs the study as a job array, and headless Chromium that opens the report.
// Neither is skipped: when Slurm cannot start or Chromium is missing, the test fails with the reason
// (scripts/install-deps.sh installs both).
#include "study_support.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using gridcast::test::read_file;
using gridcast::test::run_command;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_stencil_study;

namespace {

const std::string kSlurmScript = std::string(GRIDCAST_SOURCE_DIR) + "/scripts/slurm-local.sh";

/// The cluster of scripts/slurm-local.sh for the scope of a test: started (or found up), stopped after.
struct LocalSlurm {
  std::string state = "/tmp/gridcast-slurm";
  gridcast::test::RunResult started;
  LocalSlurm()
  {
    started = run_command(kSlurmScript + " start --state-dir " + state);
    if (started.exit_code == 0)
      setenv("SLURM_CONF", (state + "/slurm.conf").c_str(), 1);
  }
  ~LocalSlurm() { run_command(kSlurmScript + " stop --state-dir " + state); }
  LocalSlurm(const LocalSlurm&)            = delete;
  LocalSlurm& operator=(const LocalSlurm&) = delete;
};

}  // namespace

TEST_CASE("study: a study begun here and finished by a Slurm job array collects the local pool's results byte for byte", "[cli][study][slurm]")
{
  TempDir dir;
  const fs::path study = write_stencil_study(dir);
  const std::string slurm_out = (dir / "slurm").string(), local_out = (dir / "local").string();
  REQUIRE(run_gridcast("study run " + study.string() + " --out " + local_out + " -j 2 --quiet").exit_code == 0);

  const LocalSlurm slurm;
  INFO(slurm.started.output);
  REQUIRE(slurm.started.exit_code == 0);  // Slurm must start: this test is not skipped without it

  // Started on this machine with half the grid (np 4 and 8), finished on the cluster: the array holds only
  // the points without a result.
  std::string half = read_file(study);
  half.replace(half.find("[4, 8, 16, 32]"), 14, "[4, 8]");
  gridcast::test::write_file(dir / "half.json", half);
  REQUIRE(run_gridcast("study run " + (dir / "half.json").string() + " --out " + slurm_out + " --quiet").exit_code == 0);

  auto submitted = run_gridcast("study submit " + study.string() + " --out " + slurm_out + " --max-parallel 2");
  INFO(submitted.output);
  REQUIRE(submitted.exit_code == 0);
  CHECK_THAT(submitted.output, Catch::Contains("6 of 12 points as a job array"));
  CHECK_THAT(submitted.output, Catch::Contains("submitted job array "));
  CHECK_THAT(read_file(dir / "slurm" / "study.sbatch"), Catch::Contains("#SBATCH --array=2-3,6-7,10-11%2\n"));

  // Wait for the array (bounded): status exits 0 once every point has a result.
  gridcast::test::RunResult status;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  do {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    status = run_gridcast("study status " + slurm_out);
  } while (status.exit_code != 0 && std::chrono::steady_clock::now() < deadline);
  INFO(status.output);
  INFO(run_command("squeue; cat " + slurm_out + "/slurm/*.out 2>/dev/null | tail -20").output);
  REQUIRE(status.exit_code == 0);
  CHECK_THAT(status.output, Catch::Contains("12 points, 12 done, 0 failed, 0 left"));
  CHECK_THAT(status.output, Catch::Contains("slurm: 0 task(s)"));

  auto collected = run_gridcast("study collect " + slurm_out);
  CHECK(collected.exit_code == 0);
  CHECK(read_file(dir / "slurm" / "results.csv") == read_file(dir / "local" / "results.csv"));
  CHECK(read_file(dir / "slurm" / "report.html") == read_file(dir / "local" / "report.html"));

  // Nothing left: a second submit says so and submits nothing.
  auto again = run_gridcast("study submit " + study.string() + " --out " + slurm_out);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("nothing to submit"));
}

TEST_CASE("study: the report opens in headless Chromium without console errors and shows its four plots", "[cli][study][chromium]")
{
  TempDir dir;
  const fs::path study = write_stencil_study(dir);
  REQUIRE(run_gridcast("study run " + study.string() + " --out " + (dir / "out").string() + " -j 2 --quiet").exit_code ==
          0);
  const std::string page = "file://" + (dir / "out" / "report.html").string();
  const std::string chromium =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr --v=0 ";
  auto dom = run_command(chromium + "--dump-dom " + page);
  INFO(dom.output.substr(0, 4000));
  REQUIRE(dom.exit_code == 0);  // Chromium must run: scripts/install-deps.sh installs it
  CHECK(dom.output.find(":CONSOLE") == std::string::npos);  // no console message at all, errors included
  for (const std::string id : {"makespan", "efficiency", "against-base", "breakdown"}) {
    const auto at = dom.output.find("<figure class=\"plot\" id=\"" + id + "\"><svg");
    CHECK(at != std::string::npos);
    if (at != std::string::npos)  // a drawn plot: lines or bars, not an empty frame
      CHECK(dom.output.find("<path", at) < dom.output.find("</figure>", at));
  }
  auto shot = run_command(chromium + "--window-size=1200,2600 --screenshot=" + (dir / "shot.png").string() + " " + page);
  INFO(shot.output);
  CHECK(shot.exit_code == 0);
  REQUIRE(fs::exists(dir / "shot.png"));
  CHECK(fs::file_size(dir / "shot.png") > 50000);  // a blank page of that size is about 14 kB
  CHECK(read_file(dir / "shot.png").substr(1, 3) == "PNG");
}
