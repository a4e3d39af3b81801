// Runs of many ranks (docs/reference/emulator.md, "Runs of many ranks"): timeline.json drawn in full for
// chosen ranks only, with a summary slice for each other rank, and a run whose stacks cannot fit the
// process's memory-map limit refused before anything is simulated, and the rank and link tables as CSV
// beside prediction.json (--tables).
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;

namespace {

const std::string kExample = std::string(GRIDCAST_SOURCE_DIR) + "/examples/wait-states/";

std::string replay_to(const std::filesystem::path& out, const std::string& extra)
{
  return "replay " + kExample + "profile --platform " + kExample + "platform.xml --out " + out.string() + " " + extra;
}

}  // namespace

TEST_CASE("cli: --timeline-ranks draws the chosen ranks in full and the others as one summary each", "[cli]")
{
  TempDir dir;
  REQUIRE(run_gridcast(replay_to(dir / "all", "")).exit_code == 0);
  auto some = run_gridcast(replay_to(dir / "some", "--timeline-ranks 1-2"));
  INFO(some.output);
  REQUIRE(some.exit_code == 0);
  // What was predicted does not change; only the drawing does.
  CHECK(read_file(dir / "all" / "prediction.json") == read_file(dir / "some" / "prediction.json"));
  // Up to 1024 ranks, auto draws every rank: the same file as all.
  REQUIRE(run_gridcast(replay_to(dir / "auto", "--timeline-ranks auto")).exit_code == 0);
  CHECK(read_file(dir / "all" / "timeline.json") == read_file(dir / "auto" / "timeline.json"));

  const auto full = nlohmann::json::parse(read_file(dir / "all" / "timeline.json"))["traceEvents"];
  const auto part = nlohmann::json::parse(read_file(dir / "some" / "timeline.json"))["traceEvents"];
  const auto prediction = nlohmann::json::parse(read_file(dir / "some" / "prediction.json"));
  std::set<int> call_tracks, summary_tracks;
  std::size_t calls_full_12 = 0, calls_part = 0;
  for (const auto& e : full)
    if (e["ph"] == "X" && (e["tid"] == 1 || e["tid"] == 2))
      ++calls_full_12;
  for (const auto& e : part) {
    if (e["ph"] != "X")
      continue;
    if (e.value("cat", "") == "summary") {
      summary_tracks.insert(e["tid"].get<int>());
      const auto& rank = prediction["ranks"][e["tid"].get<std::size_t>()];
      CHECK(e["dur"].get<double>() == Approx(rank["finish_s"].get<double>() * 1e6).margin(1e-3));  // ns resolution
      CHECK(e["args"]["calls"] == rank["calls"]);
    } else {
      call_tracks.insert(e["tid"].get<int>());
      ++calls_part;
    }
  }
  CHECK(call_tracks == std::set<int>{1, 2});
  CHECK(summary_tracks == std::set<int>{0, 3});
  CHECK(calls_part == calls_full_12);

  for (const char* bad : {"4", "2-1", "x", "1,,2", "-1"}) {
    auto r = run_gridcast(replay_to(dir / "bad", std::string("--timeline-ranks ") + bad));
    INFO(bad << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("--timeline-ranks"));
  }
}

TEST_CASE("cli: timeline options without a timeline to change are refused naming the option", "[cli]")
{
  TempDir dir;
  const std::string replay = "replay " + kExample + "profile --platform " + kExample + "platform.xml ";
  const std::string predict = "predict " + std::string(GRIDCAST_SOURCE_DIR) +
                              "/examples/predict-stencil/model.json --nw 8 --np 4 --platform " +
                              std::string(GRIDCAST_SOURCE_DIR) + "/examples/stencil3d/platform.xml ";
  struct Case {
    std::string args, option, why;
  };
  for (const Case& c : {Case{replay + "--timeline-format perfetto", "--timeline-format", "--out"},
                        Case{replay + "--timeline-ranks 0", "--timeline-ranks", "--out"},
                        Case{replay + "--no-timeline --timeline-ranks 0 --out " + (dir / "a").string(),
                             "--timeline-ranks", "--no-timeline"},
                        Case{predict + "--timeline-format json", "--timeline-format", "--out"},
                        Case{predict + "--no-timeline --timeline-format perfetto --out " + (dir / "b").string(),
                             "--timeline-format", "--no-timeline"}}) {
    auto r = run_gridcast(c.args);
    INFO(c.args << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(c.option) && Catch::Contains(c.why));
    CHECK_FALSE(std::filesystem::exists(dir / "a"));
    CHECK_FALSE(std::filesystem::exists(dir / "b"));
  }
  // The defaults alone stay accepted without a timeline.
  CHECK(run_gridcast(replay + "--no-timeline --out " + (dir / "c").string()).exit_code == 0);
}

TEST_CASE("cli: a run whose guarded stacks exceed vm.max_map_count stops before simulating and says what to change",
          "[cli]")
{
  std::ifstream limit("/proc/sys/vm/max_map_count");
  long max_maps = 0;
  if (not(limit >> max_maps) || max_maps > 4'000'000) {
    WARN("vm.max_map_count unreadable or too large to exceed here; not tested");
    return;
  }
  TempDir dir;
  const int np = static_cast<int>(max_maps / 2 + 1000);
  // The plan comes before the platform is loaded: a small platform is enough to be refused on.
  auto r = run_gridcast("predict " + std::string(GRIDCAST_SOURCE_DIR) + "/examples/predict-stencil/model.json --nw 8 --np " +
                        std::to_string(np) + " --platform " + kExample + "platform.xml --no-timeline --cfg contexts/guard-size:4096");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("contexts/guard-size"));
  CHECK_THAT(r.output, Catch::Contains(std::to_string(np) + " ranks need about " + std::to_string(2 * np) + " memory maps"));
  CHECK_THAT(r.output, Catch::Contains("vm.max_map_count allows " + std::to_string(max_maps)));
  CHECK_THAT(r.output, Catch::Contains("sysctl -w vm.max_map_count="));
}

TEST_CASE("cli: --tables csv puts the rank and link tables beside prediction.json with summaries in it", "[cli][scale]")
{
  gridcast::test::TempDir dir;
  const std::string example = std::string(GRIDCAST_SOURCE_DIR) + "/examples/wait-states/";
  const std::string replay  = "replay " + example + "profile --platform " + example + "platform.xml --no-timeline ";
  auto csv = gridcast::test::run_gridcast(replay + "--tables csv --out " + (dir / "csv").string());
  INFO(csv.output);
  REQUIRE(csv.exit_code == 0);
  CHECK_THAT(csv.output, Catch::Contains("ranks.csv") && Catch::Contains("links.csv"));
  REQUIRE(gridcast::test::run_gridcast(replay + "--out " + (dir / "json").string()).exit_code == 0);

  auto a = nlohmann::json::parse(gridcast::test::read_file(dir / "csv" / "prediction.json"));
  auto b = nlohmann::json::parse(gridcast::test::read_file(dir / "json" / "prediction.json"));
  CHECK_FALSE(a.contains("ranks"));
  CHECK(a["ranks_table"] == "ranks.csv");
  CHECK(a["ranks_summary"]["count"] == 4);
  // Rank 2 computes 0.5 ms more a step: the most compute, and the slowest list holds every rank here.
  CHECK(a["ranks_summary"]["compute_s"]["max"] == b["ranks"][2]["compute_s"]);
  CHECK(a["ranks_summary"]["slowest"].size() == 4);
  double bytes = 0, busiest = 0;
  for (const auto& l : b["links"]) {
    bytes += l["bytes"].get<double>();
    busiest = std::max(busiest, l["utilisation"].get<double>());
  }
  CHECK(a["links_summary"]["count"] == b["links"].size());
  CHECK(a["links_summary"]["bytes"].get<double>() == Approx(bytes).epsilon(1e-12));
  CHECK(a["links_summary"]["busiest"][0]["utilisation"] == busiest);

  // The CSV rows are the JSON's rows, digit for digit.
  const std::string table = gridcast::test::read_file(dir / "csv" / "ranks.csv");
  CHECK_THAT(table, Catch::StartsWith("rank,host,compute_s,comm_s,wait_s,finish_s,calls\n"));
  CHECK(std::count(table.begin(), table.end(), '\n') == 5);
  const auto& r2 = b["ranks"][2];
  CHECK_THAT(table, Catch::Contains("\n2,node-2," + r2["compute_s"].dump() + "," + r2["comm_s"].dump() + "," +
                                    r2["wait_s"].dump() + "," + r2["finish_s"].dump() + "," + r2["calls"].dump() + "\n"));
  // Everything else is the same prediction.
  for (const char* key : {"ranks_table", "ranks_summary", "links_table", "links_summary"})
    a.erase(key);
  b.erase("ranks");
  b.erase("links");
  CHECK(a == b);

  // gridcast diff reads the table: the same run, nothing changed.
  auto diff = gridcast::test::run_gridcast("diff " + (dir / "csv").string() + " " + (dir / "json").string());
  CHECK(diff.exit_code == 0);
  CHECK_THAT(diff.output, Catch::Contains("+0 s (+0.00 %)"));
  gridcast::test::write_file(dir / "csv" / "ranks.csv", "rank,host\n");
  auto broken = gridcast::test::run_gridcast("diff " + (dir / "csv").string() + " " + (dir / "json").string());
  CHECK(broken.exit_code == 1);
  CHECK_THAT(broken.output, Catch::Contains("ranks.csv") && Catch::Contains("header"));

  auto bad = gridcast::test::run_gridcast(replay + "--tables yaml");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("--tables") && Catch::Contains("yaml"));
}
