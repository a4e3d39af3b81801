// `gridcast study run|status|collect` on a local pool: the same results whatever the pool's size, a
// resumed study runs only what is left (after a finished run, a corrupt result file, an interrupt), and a
// bad study stops before anything runs.
#include "study_support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

namespace fs = std::filesystem;
using gridcast::test::read_file;
using gridcast::test::run_command;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_file;
using gridcast::test::write_stencil_study;

namespace {

int result_files(const fs::path& out)
{
  int n = 0;
  if (fs::exists(out / "points"))
    for (const auto& d : fs::directory_iterator(out / "points"))
      n += fs::exists(d.path() / "result.json") ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("study: a local pool of two gives the results of one and a second run redoes only what is missing", "[cli][study]")
{
  TempDir dir;
  const fs::path study = write_stencil_study(dir);
  const std::string a = (dir / "a").string(), b = (dir / "b").string();
  auto one = run_gridcast("study run " + study.string() + " --out " + a + " -j 1");
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  CHECK_THAT(one.output, Catch::Contains("12 points, 12 run now, 0 done before, 0 failed"));
  CHECK_THAT(one.output, Catch::Contains("[12/12] point"));
  auto two = run_gridcast("study run " + study.string() + " --out " + b + " -j 2 --quiet");
  REQUIRE(two.exit_code == 0);
  CHECK(read_file(dir / "a" / "results.csv") == read_file(dir / "b" / "results.csv"));
  CHECK(read_file(dir / "a" / "report.html") == read_file(dir / "b" / "report.html"));

  // Every point has its row; the 40G variant is faster than the base at every np, the 50 us one slower.
  const std::string csv = read_file(dir / "a" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 13);
  CHECK_THAT(csv, Catch::Contains(",40G,32,ok,"));
  const auto base = nlohmann::json::parse(read_file(dir / "a" / "points" / "../manifest.json"))["points"];
  REQUIRE(base.size() == 12);
  auto makespan = [&](int index) {
    const std::string id = base[index]["id"];
    return nlohmann::json::parse(read_file(dir / "a" / "points" / id / "result.json"))["makespan_s"].get<double>();
  };
  for (int i = 0; i < 4; ++i) {
    CHECK(makespan(4 + i) < makespan(i));
    CHECK(makespan(8 + i) > makespan(i));
  }

  // Run again: nothing left to do.
  auto again = run_gridcast("study run " + study.string() + " --out " + a);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("12 points, 0 run now, 12 done before"));

  // A corrupt result file (cut in half) is found and that point alone runs again, to the same result.
  const std::string id = base[5]["id"];
  const fs::path result = dir / "a" / "points" / id / "result.json";
  const std::string whole = read_file(result);
  write_file(result, whole.substr(0, whole.size() / 2));
  auto status = run_gridcast("study status " + a);
  CHECK(status.exit_code == 1);
  CHECK_THAT(status.output, Catch::Contains("11 done, 0 failed, 1 left"));
  auto redo = run_gridcast("study run " + study.string() + " --out " + a);
  INFO(redo.output);
  CHECK(redo.exit_code == 0);
  CHECK_THAT(redo.output, Catch::Contains("point 5: "));
  CHECK_THAT(redo.output, Catch::Contains("12 points, 1 run now, 11 done before, 0 failed, 1 result file(s) unreadable"));
  CHECK(read_file(result) == whole);
  CHECK(read_file(dir / "a" / "results.csv") == read_file(dir / "b" / "results.csv"));

  // One point by its index, from the manifest alone (what a Slurm task runs).
  fs::remove(result);
  auto task = run_gridcast("study run --out " + a + " --task-index 5");
  CHECK(task.exit_code == 0);
  CHECK_THAT(task.output, Catch::Contains("1 point, 1 run now"));
  CHECK(read_file(result) == whole);
  CHECK(run_gridcast("study run --out " + a + " --task-index 12").exit_code == 1);
  CHECK(run_gridcast("study collect " + a).exit_code == 0);
  CHECK(read_file(dir / "a" / "results.csv") == read_file(dir / "b" / "results.csv"));
}

TEST_CASE("study: an interrupted study keeps what finished and the next run does only the rest", "[cli][study]")
{
  TempDir dir;
  const fs::path study = write_stencil_study(dir, 128, false);  // about 0.7 s a point
  const std::string out = (dir / "out").string();
  // SIGINT once the first point has its result, as Ctrl-C would.
  const std::string first = out + "/points/*/result.json";
  // Meanwhile, a second pool on the same folder is refused (it would run the same points).
  const std::string g = std::string(GRIDCAST_BIN);
  auto stopped = run_command("(" + g + " study run " + study.string() + " --out " + out +
                             " -j 1 & pid=$!; for i in $(seq 600); do ls " + first +
                             " >/dev/null 2>&1 && break; sleep 0.05; done; " + g + " study run " + study.string() +
                             " --out " + out + " -q; echo second=$?; kill -INT $pid; wait $pid; echo exit=$?)");
  INFO(stopped.output);
  CHECK_THAT(stopped.output, Catch::Contains("second=1"));
  CHECK_THAT(stopped.output, Catch::Contains("another `gridcast study run` is running the points of this folder"));
  CHECK_THAT(stopped.output, Catch::Contains("exit=1"));
  CHECK_THAT(stopped.output, Catch::Contains("interrupted: the points under way have no result"));
  const int kept = result_files(dir / "out");
  CHECK(kept >= 1);
  CHECK(kept < 12);
  for (const auto& d : fs::recursive_directory_iterator(dir / "out"))  // no half-written file left behind
    CHECK(d.path().filename().string().find(".tmp-") == std::string::npos);

  auto rest = run_gridcast("study run " + study.string() + " --out " + out + " -j 2 --quiet");
  INFO(rest.output);
  CHECK(rest.exit_code == 0);
  CHECK_THAT(rest.output, Catch::Contains("12 points, " + std::to_string(12 - kept) + " run now, " +
                                              std::to_string(kept) + " done before, 0 failed"));
  CHECK(result_files(dir / "out") == 12);
}

TEST_CASE("study: a bad study exits 1 naming the key or the point and writes nothing", "[cli][study]")
{
  TempDir dir;
  const fs::path study = write_stencil_study(dir);
  std::string text = read_file(study);
  // 64 nodes at one rank a node cannot hold 128 ranks.
  write_file(dir / "big.json", text.replace(text.find("[4, 8, 16, 32]"), 14, "[4, 128]"));
  auto big = run_gridcast("study run " + (dir / "big.json").string() + " --out " + (dir / "out").string());
  CHECK(big.exit_code == 1);
  CHECK_THAT(big.output, Catch::Contains("point 1 (10G np=128)") && Catch::Contains("64 nodes"));
  CHECK_FALSE(fs::exists(dir / "out"));

  text = read_file(study);
  write_file(dir / "axis.json", text.replace(text.find("\"np\""), 4, "\"nodes\""));
  auto axis = run_gridcast("study run " + (dir / "axis.json").string() + " --out " + (dir / "out").string());
  CHECK(axis.exit_code == 1);
  CHECK_THAT(axis.output, Catch::Contains("axes[0].values[0]") && Catch::Contains("unknown setting"));

  text = read_file(study);
  write_file(dir / "empty.json", text.replace(text.find("[4, 8, 16, 32]"), 14, "[]"));
  auto empty = run_gridcast("study run " + (dir / "empty.json").string() + " --out " + (dir / "out").string());
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.output, Catch::Contains("axes[0].values") && Catch::Contains("at least one value"));
  CHECK_FALSE(fs::exists(dir / "out"));

  CHECK(run_gridcast("study status " + (dir / "none").string()).exit_code == 1);
  CHECK(run_gridcast("study frobnicate").exit_code == 1);
  CHECK(run_gridcast("study run --out " + (dir / "none").string()).exit_code == 1);
}

TEST_CASE("study: a point that fails is recorded with its error and the others run", "[cli][study]")
{
  TempDir dir;
  const fs::path study = write_stencil_study(dir);
  std::string text = read_file(study);
  // A SimGrid setting the emulator refuses, on one variant only.
  text.replace(text.find("{\"name\": \"10G\"}"), 15, "{\"name\": \"10G\", \"set\": {\"cfg.smpi/simulate-computation\": \"maybe\"}}");
  write_file(study, text);
  auto r = run_gridcast("study run " + study.string() + " --out " + (dir / "out").string() + " -j 2");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("12 points, 12 run now, 0 done before, 4 failed"));
  const std::string csv = read_file(dir / "out" / "results.csv");
  CHECK_THAT(csv, Catch::Contains(",10G,4,failed,"));
  CHECK_THAT(csv, Catch::Contains("smpi/simulate-computation"));
  CHECK_THAT(csv, Catch::Contains(",40G,4,ok,"));
  CHECK_THAT(read_file(dir / "out" / "report.html"), Catch::Contains("failed: "));
  auto status = run_gridcast("study status " + (dir / "out").string());
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.output, Catch::Contains("8 done, 4 failed, 0 left"));
}

TEST_CASE("study: examples/study-gpudirect expands into its 64 replays and its six-GPU variant runs", "[cli][study]")
{
  TempDir dir;
  const std::string root = GRIDCAST_SOURCE_DIR;
  auto traces = run_command("python3 " + root + "/bench/gpudirect/gpudirect_study.py --traces-only --out " +
                            (dir / "gd").string() + " --np 32 64");
  INFO(traces.output);
  REQUIRE(traces.exit_code == 0);
  // The example's study, its paths made absolute: the traces here, the spec in the repository.
  std::string text = read_file(root + "/examples/study-gpudirect/study.json");
  text.replace(text.find("../../out/study-gpudirect/traces"), 32, (dir / "gd" / "traces").string());
  text.replace(text.find("../../platforms"), 15, root + "/platforms");
  write_file(dir / "study.json", text);
  auto submit = run_gridcast("study submit " + (dir / "study.json").string() + " --out " + (dir / "out").string() +
                             " --no-submit");
  INFO(submit.output);
  REQUIRE(submit.exit_code == 0);
  CHECK_THAT(submit.output, Catch::Contains("64 of 64 points as a job array"));
  const auto manifest = nlohmann::json::parse(read_file(dir / "out" / "manifest.json"));
  CHECK(manifest["platforms"].size() == 2);  // Lassen, and Lassen with 6 GPUs a node
  CHECK(manifest["points"][63]["variant"] == "6/node");
  auto last = run_gridcast("study run --out " + (dir / "out").string() + " --task-index 63");
  INFO(last.output);
  CHECK(last.exit_code == 0);
  CHECK_THAT(last.output, Catch::Contains("1 point, 1 run now, 0 done before, 0 failed"));
}

TEST_CASE("study: a pool started with SIGCHLD ignored still waits for its points", "[cli][study]")
{
  // An ignored SIGCHLD is inherited across exec: the kernel would reap the points before the pool waits.
  TempDir dir;
  const fs::path study = write_stencil_study(dir);
  auto r = run_command("timeout 120 python3 -c \"import os, signal, sys; signal.signal(signal.SIGCHLD, "
                       "signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])\" " + std::string(GRIDCAST_BIN) +
                       " study run " + study.string() + " --out " + (dir / "out").string() + " -j 2 --quiet");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("12 points, 12 run now, 0 done before, 0 failed"));
}
