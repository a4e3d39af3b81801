// `gridcast diff`, `--what-if` and the analysis drawn on timeline.json, on examples/wait-states (a ring
// halo exchange on 4 ranks whose rank 2 computes 0.5 ms more than the others in each of its 20 steps):
// known answers, determinism and the errors that name the expression or the file.
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>

using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

const std::string kWhatIfExample = std::string(GRIDCAST_SOURCE_DIR) + "/examples/wait-states/";

std::string replay_args(const std::string& platform, const std::string& extra)
{
  return "replay " + kWhatIfExample + "profile --platform " + platform + " " + extra;
}

}  // namespace

TEST_CASE("cli: diff of two runs gives the makespan and each table's change and names a bad input", "[cli]")
{
  TempDir dir;
  // The same run on hosts twice as fast: every compute call takes half as long.
  std::string fast = read_file(kWhatIfExample + "platform.xml");
  for (auto at = fast.find("speed=\""); at != std::string::npos; at = fast.find("speed=\"", at + 1)) {
    const auto end = fast.find('"', at + 7);
    fast.replace(at + 7, end - at - 7, "2Gf");
  }
  write_file(dir / "fast.xml", fast);
  const std::string analysis = "--analysis waits,critical-path --no-timeline --out ";
  REQUIRE(run_gridcast(replay_args(kWhatIfExample + "platform.xml", analysis + (dir / "a").string())).exit_code == 0);
  REQUIRE(run_gridcast(replay_args((dir / "fast.xml").string(), analysis + (dir / "b").string())).exit_code == 0);

  auto r = run_gridcast("diff " + (dir / "a").string() + " " + (dir / "b" / "prediction.json").string() + " -o " +
                        (dir / "diff.json").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("makespan: 0.03523524105 s -> 0.02023524105 s: -0.015 s (-42.57 %)"));
  CHECK_THAT(r.output, Catch::Contains("wait states by kind"));
  CHECK_THAT(r.output, Catch::Contains("critical path: 0.03523524105 s -> 0.02023524105 s, mostly on rank 2"));
  const auto json = nlohmann::json::parse(read_file(dir / "diff.json"));
  CHECK(json["format"] == "gridcast-diff");
  CHECK(json["makespan_s"]["delta"].get<double>() == Approx(-0.015).epsilon(1e-9));
  // The same two files, the same text.
  CHECK(run_gridcast("diff " + (dir / "a").string() + " " + (dir / "b").string()).output ==
        run_gridcast("diff " + (dir / "a").string() + " " + (dir / "b").string()).output);

  auto missing = run_gridcast("diff " + (dir / "a").string() + " " + (dir / "none").string());
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains((dir / "none").string() + ": no such file"));
  auto wrong = run_gridcast("diff " + (dir / "a" / "analysis.json").string() + " " + (dir / "b").string());
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.output, Catch::Contains("analysis.json: key 'format'"));
  CHECK(run_gridcast("diff " + (dir / "a").string()).exit_code == 1);
}

TEST_CASE("cli: what-if without rank 2's planted imbalance saves exactly it and leaves no wait", "[cli]")
{
  // Rank 2 computes 1.5 ms a step where the others compute 1 ms: at two thirds, the run is balanced.
  TempDir dir;
  auto r = run_gridcast(replay_args(kWhatIfExample + "platform.xml",
                                    "--what-if 'rank:2 compute*0.6666666666666666' --out " + (dir / "out").string()));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("wait states: 0 s in total"));
  CHECK_THAT(r.output, Catch::Contains("what-if 'rank:2 compute*0.6666666666666666': against the same run without it"));
  CHECK_THAT(r.output, Catch::Contains("makespan: 0.03523524105 s -> 0.02523524105 s: -0.01 s (-28.38 %)"));
  CHECK_THAT(r.output, Catch::Contains("mostly on rank 2 (99.3 %) -> rank 0 (100.0 %): the path moved"));
  // The run without the change is kept beside, and the change is recorded.
  CHECK(nlohmann::json::parse(read_file(dir / "out" / "baseline" / "prediction.json"))["makespan_s"].get<double>() ==
        Approx(0.03523524105).epsilon(1e-9));
  const auto prediction = nlohmann::json::parse(read_file(dir / "out" / "prediction.json"));
  CHECK(prediction["config"]["what_if"] == nlohmann::json::array({"rank:2 compute*0.6666666666666666"}));

  // Deterministic: the same command gives the same files.
  auto again = run_gridcast(replay_args(kWhatIfExample + "platform.xml",
                                        "--what-if 'rank:2 compute*0.6666666666666666' --out " +
                                            (dir / "again").string()));
  REQUIRE(again.exit_code == 0);
  for (const char* f : {"prediction.json", "analysis.json", "timeline.json", "baseline/prediction.json",
                        "baseline/analysis.json"})
    CHECK(read_file(dir / "out" / f) == read_file(dir / "again" / f));
}

TEST_CASE("cli: what-if restoring examples/slow-link's planted slow link gives the run on the nodes as bought", "[cli]")
{
  const std::string balanced = "replay " + kWhatIfExample + "profile-balanced --platform ";
  auto bought = run_gridcast(balanced + kWhatIfExample + "platform.xml --no-timeline");
  REQUIRE(bought.exit_code == 0);
  CHECK_THAT(bought.output, Catch::Contains("makespan: 0.0252352411 s"));
  auto r = run_gridcast(balanced + std::string(GRIDCAST_SOURCE_DIR) +
                        "/examples/slow-link/platform.xml --what-if 'link:link-1 bw*20'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("makespan: 0.05919193184 s -> 0.02523524105 s"));
  CHECK_THAT(r.output, Catch::Contains("mostly on rank 1 (100.0 %)"));
}

TEST_CASE("cli: what-if on a link and on every compute call changes the run and bad expressions name themselves",
          "[cli]")
{
  // Rank 2's link at a hundredth of its bandwidth (both directions of the split-duplex pair): slower.
  auto slow = run_gridcast(replay_args(kWhatIfExample + "platform.xml", "--what-if 'link:wait-states_link_2 bw*0.01'"));
  INFO(slow.output);
  REQUIRE(slow.exit_code == 0);
  CHECK_THAT(slow.output, Catch::Contains("A: the run without (replay)"));
  const std::string from = "makespan: 0.03523524105 s -> ";
  const auto at = slow.output.find(from);
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(slow.output.substr(at + from.size())) > 0.0352352411);
  // Every compute call at twice its work: at least the ranks' compute doubles.
  auto doubled = run_gridcast(replay_args(kWhatIfExample + "platform.xml", "--what-if compute:compute*2"));
  CHECK(doubled.exit_code == 0);
  CHECK_THAT(doubled.output, Catch::Contains("compute                                0.09           0.18"));

  for (const char* e : {"compute:nothing*0.5", "compute:compute*-1", "compute:compute*0", "compute:compute*x",
                               "link:no-such-link bw*2", "link:wait-states_link_2 speed*2", "rank:4 compute*2",
                               "rank:-1 compute*2", "nonsense"}) {
    auto r = run_gridcast(replay_args(kWhatIfExample + "platform.xml", "--what-if '" + std::string(e) + "'"));
    INFO(e << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(e));
  }
  // A name the run does not have stops it before the run without the changes is paid for.
  TempDir dir;
  for (const char* e : {"link:no-such-link bw*2", "compute:nothing*0.5"}) {
    auto r = run_gridcast(replay_args(kWhatIfExample + "platform.xml", "--what-if '" + std::string(e) + "' --out " +
                                                                         (dir / "out").string()));
    CHECK(r.exit_code == 1);
    CHECK_FALSE(std::filesystem::exists(dir / "out" / "baseline"));
  }
}

TEST_CASE("cli: --analysis draws every wait inside its call and the critical path on its own track of timeline.json",
          "[cli]")
{
  TempDir dir;
  auto r = run_gridcast(
      replay_args(kWhatIfExample + "platform.xml", "--analysis critical-path --out " + (dir / "out").string()));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto timeline = nlohmann::json::parse(read_file(dir / "out" / "timeline.json"));
  const auto prediction = nlohmann::json::parse(read_file(dir / "out" / "prediction.json"));
  int waits = 0, path_track = -1;
  double waited = 0, path = 0;
  for (const auto& e : timeline["traceEvents"]) {
    if (e.value("cat", "") == "wait") {
      ++waits;
      waited += e["dur"].get<double>() * 1e-6;
    }
    if (e["ph"] == "M" && e["args"]["name"] == "critical path")
      path_track = e["tid"].get<int>();
    if (e.value("cat", "") == "critical_path")
      path += e["dur"].get<double>() * 1e-6;
  }
  // 20 steps, each with one late sender (rank 3), one late receiver (rank 1), one wait at N x N (rank 0),
  // of 0.5 ms each; the path's pieces add up to the makespan (each rounded to the nanosecond).
  CHECK(waits == 60);
  CHECK(waited == Approx(0.03).margin(60e-9));
  CHECK(path_track == 4);
  CHECK(path == Approx(prediction["makespan_s"].get<double>()).margin(1e-7));
}

TEST_CASE("cli: predict --analysis reports the imbalance per iteration of the model's steady loop", "[cli]")
{
  TempDir dir;
  auto r = run_gridcast("predict " + std::string(GRIDCAST_SOURCE_DIR) + "/examples/predict-stencil/model.json --nw 16 "
                        "--np 8 --platform " + std::string(GRIDCAST_SOURCE_DIR) + "/examples/stencil3d/platform.xml "
                        "--analysis waits --no-timeline --out " + (dir / "out").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("imbalance per iteration of the steady loop ("));
  const auto analysis = nlohmann::json::parse(read_file(dir / "out" / "analysis.json"));
  REQUIRE(analysis.contains("iterations"));
  REQUIRE_FALSE(analysis["iterations"].empty());
  std::uint64_t expected = 0;
  for (const auto& it : analysis["iterations"]) {
    CHECK(it["iteration"].get<std::uint64_t>() == expected++);
    CHECK(it["max_compute_s"].get<double>() >= it["mean_compute_s"].get<double>());
    CHECK(it["imbalance_s"].get<double>() >= 0);
  }
  // A recorded trace marks no loop: a replay folds each rank's calls to find it. examples/wait-states: 20
  // steps in which rank 2 computes 1.5 ms and the others 1.0 ms, so 0.375 ms over the mean in each.
  auto replayed = run_gridcast(replay_args(kWhatIfExample + "platform.xml", "--analysis waits --no-timeline --out " +
                                                                                 (dir / "replay").string()));
  INFO(replayed.output);
  REQUIRE(replayed.exit_code == 0);
  CHECK_THAT(replayed.output, Catch::Contains("imbalance per iteration of the recorded loop of 4 calls on rank 0 "
                                              "(20 measured)"));
  const auto recorded = nlohmann::json::parse(read_file(dir / "replay" / "analysis.json"));
  REQUIRE(recorded["iterations"].size() == 20);
  for (const auto& it : recorded["iterations"]) {
    CHECK(it["max_rank"] == 2);
    CHECK(it["imbalance_s"].get<double>() == Approx(0.000375).epsilon(1e-6));
  }
  CHECK(recorded["iterations_loop"] == "the recorded loop of 4 calls on rank 0");
}

TEST_CASE("cli: options are never abbreviated so that --what cannot stand for --what-if", "[cli]")
{
  // A --what-if run hands its other arguments to the run without the changes; an abbreviation of its own
  // option would have reached that run and made it a what-if run too.
  TempDir dir;
  for (const char* abbreviated : {"--what 'rank:2 compute*0.5'", "--no-time", "--analy waits"}) {
    auto r = run_gridcast(replay_args(kWhatIfExample + "platform.xml", std::string(abbreviated) + " --out " + (dir / "o").string()));
    INFO(abbreviated << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("unrecognised option"));
  }
}
