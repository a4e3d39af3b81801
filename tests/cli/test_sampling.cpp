// predict --sample (docs/reference/sampling.md): the estimate against the full emulation, prediction.json's
// `sampling`, determinism, the fallback when a run cannot be sampled, and bad options.
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;

namespace {

const std::string kSource = GRIDCAST_SOURCE_DIR;
const std::string kPredict = "predict " + kSource + "/examples/predict-stencil/model.json --np 16 --platform " + kSource +
                             "/examples/stencil3d/platform.xml --ranks-per-host 2 ";

double makespan_of(const std::string& output)
{
  const auto at = output.find("makespan: ");
  REQUIRE(at != std::string::npos);
  return std::stod(output.substr(at + 10));
}

}  // namespace

TEST_CASE("cli: predict --sample estimates a steady loop's makespan as the full emulation gives it", "[cli]")
{
  TempDir dir;
  auto full = run_gridcast(kPredict + "--nw 256 --fast-forward off --out " + (dir / "full").string());
  INFO(full.output);
  REQUIRE(full.exit_code == 0);
  const double exact = makespan_of(full.output);

  auto sampled = run_gridcast(kPredict + "--nw 256 --sample 6 --out " + (dir / "a").string());
  INFO(sampled.output);
  REQUIRE(sampled.exit_code == 0);
  CHECK_THAT(sampled.output, Catch::Contains("sampling: makespan") && Catch::Contains("6 of 63 iterations sampled"));
  const auto p = nlohmann::json::parse(read_file(dir / "a" / "prediction.json"));
  const auto& s = p["sampling"];
  CHECK(s["applied"] == true);
  CHECK(s["units"] == 63);
  CHECK(s["units_sampled"] == 6);
  CHECK(s["units_transient"] == 2);
  CHECK(s["units_emulated"].get<int>() <= 14);
  const double estimate = p["makespan_s"].get<double>();
  CHECK(s["estimate_s"].get<double>() == estimate);
  // The iterations of this loop take nearly the same time (two ranks share each host): the estimate is
  // the full emulation's within 1e-4, and so is its interval.
  CHECK(std::abs(estimate - exact) <= 1e-4 * exact);
  CHECK(s["interval_s"][0].get<double>() <= exact * (1 + 1e-4));
  CHECK(s["interval_s"][1].get<double>() >= exact * (1 - 1e-4));
  CHECK(s["interval_s"][0].get<double>() <= estimate);
  CHECK(s["interval_s"][1].get<double>() >= estimate);
  // Calls are counted exactly, the units not emulated included.
  const auto f = nlohmann::json::parse(read_file(dir / "full" / "prediction.json"));
  CHECK(p["events"] == f["events"]);
  for (std::size_t r = 0; r < 16; ++r) {
    CHECK(p["ranks"][r]["calls"] == f["ranks"][r]["calls"]);
    CHECK(p["ranks"][r]["compute_s"].get<double>() ==
          Approx(f["ranks"][r]["compute_s"].get<double>()).epsilon(1e-4));
  }

  // The same inputs and seed: the same bytes (another --sample-seed draws other iterations: tested below,
  // where iterations differ).
  REQUIRE(run_gridcast(kPredict + "--nw 256 --sample 6 --out " + (dir / "b").string()).exit_code == 0);
  CHECK(read_file(dir / "a" / "prediction.json") == read_file(dir / "b" / "prediction.json"));
  CHECK(read_file(dir / "a" / "timeline.json") == read_file(dir / "b" / "timeline.json"));

  // The timeline marks where units were left out: on every rank, the same spans, each a slice of no length
  // where the emulated units on either side meet.
  const auto t = nlohmann::json::parse(read_file(dir / "a" / "timeline.json"));
  std::map<int, std::vector<std::string>> drained;
  for (const auto& e : t["traceEvents"])
    if (e.value("cat", "") == "sampling") {
      CHECK(e["dur"].get<double>() == 0.0);
      drained[e["tid"].get<int>()].push_back(e["name"].get<std::string>());
    }
  REQUIRE(drained.size() == 16);
  REQUIRE(not drained[0].empty());
  CHECK_THAT(drained[0].front(), Catch::Matches("units [0-9]+(-[0-9]+)? drained \\(sampled run: not emulated, estimated\\)"));
  for (const auto& [rank, names] : drained)
    CHECK(names == drained[0]);
}

TEST_CASE("cli: predict --sample on a loop of too few iterations samples the windows between world collectives",
          "[cli]")
{
  // At Nw 32 the loop has 8 iterations (7 units, fewer than kLoopUnitsEnough): its 40 collectives on
  // MPI_COMM_WORLD cut the run into 39 windows instead.
  TempDir dir;
  auto r = run_gridcast(kPredict + "--nw 32 --sample 7 --out " + (dir / "a").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("7 of 39 windows sampled"));
  auto p = nlohmann::json::parse(read_file(dir / "a" / "prediction.json"));
  CHECK(p["sampling"]["applied"] == true);
  CHECK(p["sampling"]["loop"] == "the windows between collectives on communicators of every rank");
  auto full = run_gridcast(kPredict + "--nw 32 --fast-forward off --out " + (dir / "full").string());
  REQUIRE(full.exit_code == 0);
  const double exact = nlohmann::json::parse(read_file(dir / "full" / "prediction.json"))["makespan_s"];
  const auto& interval = p["sampling"]["interval_s"];
  CHECK(interval[0].get<double>() <= exact * (1 + 1e-9));
  CHECK(interval[1].get<double>() >= exact * (1 - 1e-9));

  // A sample of every window is no sample: every call emulated, and why.
  r = run_gridcast(kPredict + "--nw 32 --sample 39 --out " + (dir / "b").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("sampling: not applied, every iteration emulated: the sample takes every window"));
  p = nlohmann::json::parse(read_file(dir / "b" / "prediction.json"));
  CHECK(p["sampling"]["applied"] == false);
  CHECK_THAT(p["sampling"]["reason"].get<std::string>(), Catch::Contains("every window (39 units)"));
  CHECK(p["fast_forward"]["applied"] == false);
}

TEST_CASE("cli: bad --sample --confidence and --margin values exit 1 naming the option", "[cli]")
{
  struct Case {
    std::string args, says;
  };
  for (const Case& c : {Case{"--sample 0", "--sample 0"}, Case{"--sample many", "--sample many"},
                        Case{"--sample auto --confidence 1", "--confidence 1"},
                        Case{"--sample auto --confidence 0", "--confidence 0"},
                        Case{"--sample auto --margin 0", "--margin 0"}, Case{"--sample auto --margin -1", "--margin -1"},
                        Case{"--sample 5 --margin 0.01", "--margin applies to --sample auto"},
                        Case{"--confidence 0.9", "--confidence applies to a sampled run"},
                        Case{"--sample-seed 3", "--sample-seed applies to a sampled run"},
                        Case{"--sample auto --fast-forward auto", "--sample and --fast-forward auto"},
                        Case{"--sample auto --analysis waits", "--analysis needs every iteration"}}) {
    auto r = run_gridcast(kPredict + "--nw 256 " + c.args);
    INFO(c.args << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(c.says));
  }
}

TEST_CASE("cli: gridcast phases groups a model's or a profile's iterations and writes them as JSON", "[cli]")
{
  TempDir dir;
  auto m = run_gridcast("phases " + kSource + "/examples/predict-stencil/model.json --nw 256 --np 16 --json " +
                        (dir / "m.json").string());
  INFO(m.output);
  REQUIRE(m.exit_code == 0);
  CHECK_THAT(m.output, Catch::Contains("63 units (iterations of") && Catch::Contains("1 phase"));
  const auto j = nlohmann::json::parse(read_file(dir / "m.json"));
  CHECK(j["units"] == 63);
  CHECK(j["unit_phase"].size() == 63);
  CHECK(j["sampleable"] == true);
  CHECK(j["phases"][0]["share"].get<double>() == Approx(1.0));

  // A recorded profile: the units are the iterations of every rank's main loop, costed by recorded time.
  auto p = run_gridcast("phases " + kSource + "/examples/wait-states/profile --json " + (dir / "p.json").string());
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.output, Catch::Contains("the recorded time"));
  const auto pj = nlohmann::json::parse(read_file(dir / "p.json"));
  CHECK(pj["units"].get<int>() >= 3);
  CHECK(pj["unit_phase"].size() == pj["units"].get<std::size_t>());

  // Several profiles: the first one's phases tested for input sensitivity against the others.
  const std::string profiles = kSource + "/examples/predict-stencil/profiles/";
  auto s = run_gridcast("phases " + profiles + "np4-nw8 " + profiles + "np4-nw12 " + profiles + "np4-nw16 --json " +
                        (dir / "s.json").string());
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  CHECK_THAT(s.output, Catch::Contains("phase 0: input sensitive") &&
                           Catch::Contains("functions whose work per unit moved: compute"));
  const auto sj = nlohmann::json::parse(read_file(dir / "s.json"));
  CHECK(sj["sensitivity"][0]["sensitive"] == true);
  CHECK(sj["sensitivity"][0]["inputs"].size() == 2);
  CHECK(run_gridcast("phases " + profiles + "np4-nw8 " + kSource + "/examples/predict-stencil/model.json").exit_code == 1);

  for (const std::string& bad : {"phases " + kSource + "/examples/predict-stencil/model.json --nw 256",
                                 "phases " + kSource + "/examples/wait-states/profile --np 4",
                                 "phases " + kSource + "/examples/predict-stencil/model.json --nw 256 --np 16 --variability x"}) {
    auto r = run_gridcast(bad);
    INFO(bad << ": " << r.output);
    CHECK(r.exit_code == 1);
  }
}

TEST_CASE("cli: fit keeps its input-sensitivity test in model.json and predict warns at an untested size", "[cli]")
{
  // The stencil's profiles at two sizes per Np: the largest Np's phases are compared between Nw 8 and 16.
  TempDir dir;
  const std::string profiles = kSource + "/examples/predict-stencil/profiles/";
  std::string two;
  for (const char* p : {"np4-nw8", "np4-nw16", "np16-nw8", "np16-nw16"})
    two += profiles + p + " ";
  auto fit = run_gridcast("fit " + two + "-o " + (dir / "two.json").string());
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK_THAT(fit.output, Catch::Contains("input sensitivity at Np 16") && Catch::Contains("compared with Nw 8 ") &&
                             Catch::Contains("input sensitive (work of compute moved)"));
  const auto m = nlohmann::json::parse(read_file(dir / "two.json"));
  const auto& ip = m["input_phases"];
  CHECK(ip["np"] == 16);
  CHECK(ip["training_nw"].get<double>() == 16.0);
  CHECK(ip["compared_nw"] == nlohmann::json::array({8.0}));
  double share = 0;
  for (const auto& p : ip["phases"]) {
    share += p["share"].get<double>();
    CHECK(p["sensitive"] == true);
    CHECK(p["compared_inputs"] == 1);
  }
  CHECK(share == Approx(1.0));

  // At an untested size predict (and synth, phases) say the target leans on a phase tested on two sizes;
  // at a tested size they do not.
  const std::string synth = "synth " + (dir / "two.json").string() + " --np 16 --out " + (dir / "s").string();
  auto untested = run_gridcast(synth + "32 --nw 32");
  INFO(untested.output);
  REQUIRE(untested.exit_code == 0);
  CHECK_THAT(untested.output, Catch::Contains("is input sensitive (work of compute) and was tested on 2 input sizes "
                                              "only (Nw 8, 16): Nw 32 leans on how it scales"));
  auto tested = run_gridcast(synth + "8 --nw 8");
  CHECK(tested.exit_code == 0);
  CHECK_THAT(tested.output, !Catch::Contains("leans on"));

  // Three sizes: tested enough, no warning; the model round-trips through phases' report.
  std::string three = two + profiles + "np16-nw12";
  auto fit3 = run_gridcast("fit " + three + " -o " + (dir / "three.json").string());
  REQUIRE(fit3.exit_code == 0);
  auto ph = run_gridcast("phases " + (dir / "three.json").string() + " --nw 32 --np 16 --json " +
                         (dir / "p.json").string());
  INFO(ph.output);
  REQUIRE(ph.exit_code == 0);
  CHECK_THAT(ph.output, !Catch::Contains("leans on") && Catch::Contains("from the fit's profiles"));
  CHECK(nlohmann::json::parse(read_file(dir / "p.json"))["fit_input_phases"]["compared_nw"].size() == 2);

  // A broken test in model.json is refused naming the key.
  auto broken = m;
  broken["input_phases"]["phases"][0]["share"] = 2.5;
  std::ofstream(dir / "broken.json") << broken.dump();
  auto bad = run_gridcast(synth.substr(0, 6) + (dir / "broken.json").string() + " --np 16 --nw 32 --out " +
                          (dir / "b").string());
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("input_phases.phases[0].share"));
}

TEST_CASE("cli: replay --sample estimates a recorded trace's makespan from a sample of its main loop", "[cli]")
{
  TempDir dir;
  const std::string replay = "replay " + kSource + "/examples/wait-states/profile --platform " + kSource +
                             "/examples/wait-states/platform.xml --no-timeline ";
  auto full = run_gridcast(replay + "--out " + (dir / "full").string());
  INFO(full.output);
  REQUIRE(full.exit_code == 0);
  const double exact = nlohmann::json::parse(read_file(dir / "full" / "prediction.json"))["makespan_s"].get<double>();

  auto sampled = run_gridcast(replay + "--sample 4 --sample-seed 3 --out " + (dir / "s").string());
  INFO(sampled.output);
  REQUIRE(sampled.exit_code == 0);
  CHECK_THAT(sampled.output, Catch::Contains("4 of 20 iterations sampled"));
  const auto p = nlohmann::json::parse(read_file(dir / "s" / "prediction.json"));
  const auto& s = p["sampling"];
  CHECK(s["applied"] == true);
  CHECK(s["units"] == 20);
  CHECK(s["loop"] == "the main loop of every rank's recorded calls");
  CHECK(s["units_emulated"].get<int>() < 20);
  // The recorded iterations are alike: the estimate is the full replay's up to rounding.
  CHECK(std::abs(p["makespan_s"].get<double>() - exact) <= 1e-9 * exact);
  // Every call is counted, the skipped iterations' included.
  const auto f = nlohmann::json::parse(read_file(dir / "full" / "prediction.json"));
  CHECK(p["events"] == f["events"]);

  // Deterministic for a seed.
  auto again = run_gridcast(replay + "--sample 4 --sample-seed 3 --out " + (dir / "t").string());
  REQUIRE(again.exit_code == 0);
  CHECK(read_file(dir / "s" / "prediction.json") == read_file(dir / "t" / "prediction.json"));

  // Options that need every iteration, and bad values, exit 1 naming the option.
  for (const auto& [bad, named] : std::vector<std::pair<std::string, std::string>>{
           {"--sample 4 --analysis waits", "--analysis"},
           {"--sample 0", "--sample"},
           {"--sample auto --confidence 1.5", "--confidence"},
           {"--margin 0.1", "--margin"}}) {
    auto r = run_gridcast(replay + bad);
    INFO(bad << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(named) && Catch::Contains("replay"));
  }
}

TEST_CASE("cli: --sample auto runs a second pass when the first one's interval is over the margin", "[cli]")
{
  // A recorded trace of 8 ranks, 100 steps: a rebuild every 10th step (4x the bytes, 3x the flops) and
  // messages that grow with the step, so that the emulated times within a phase vary more than the cost
  // proxy said.
  TempDir dir;
  {
    std::ofstream index(dir / "trace.txt");
    for (int r = 0; r < 8; ++r) {
      index << "t/r" << r << ".txt\n";
      std::filesystem::create_directories(dir / "t");
      std::ofstream f(dir / "t" / ("r" + std::to_string(r) + ".txt"));
      f << r << " init\n";
      for (int s = 0; s < 100; ++s) {
        const bool rebuild = s % 10 == 0;
        const long bytes = static_cast<long>(2000 * (1 + s / 100.0)) * (rebuild ? 4 : 1);
        f << r << " compute " << (rebuild ? 1.5e6 : 5e5) << '\n';
        const int peer = r ^ 1;
        if (r % 2 == 0)
          f << r << " send " << peer << " 0 " << bytes << " 6\n" << r << " recv " << peer << " 0 " << bytes << " 6\n";
        else
          f << r << " recv " << peer << " 0 " << bytes << " 6\n" << r << " send " << peer << " 0 " << bytes << " 6\n";
        f << r << " allreduce 1 1 6\n";
      }
      f << r << " finalize\n";
    }
  }
  const std::string replay = "replay " + (dir / "trace.txt").string() + " --platform " + kSource +
                             "/examples/stencil3d/platform.xml --no-timeline ";
  auto full = run_gridcast(replay + "--out " + (dir / "full").string());
  REQUIRE(full.exit_code == 0);
  const double exact = nlohmann::json::parse(read_file(dir / "full" / "prediction.json"))["makespan_s"].get<double>();

  // The default margin (2 %) is met by the first pass: one pass.
  auto one = run_gridcast(replay + "--sample auto --out " + (dir / "one").string());
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const auto o = nlohmann::json::parse(read_file(dir / "one" / "prediction.json"))["sampling"];
  CHECK_THAT(o["note"].get<std::string>(), !Catch::Contains("second pass"));
  CHECK(o["margin_met"] == true);
  CHECK_THAT(one.output, Catch::Contains("wrote") && !Catch::Contains("second pass"));

  // A margin of 0.1 %: the first pass's interval is wider; the second pass samples more and says so, once.
  auto two = run_gridcast(replay + "--sample auto --margin 0.001 --out " + (dir / "two").string());
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  const auto t = nlohmann::json::parse(read_file(dir / "two" / "prediction.json"))["sampling"];
  CHECK_THAT(t["note"].get<std::string>(), Catch::Contains("second pass"));
  CHECK(t["units_sampled"].get<int>() > o["units_sampled"].get<int>());
  CHECK(t["half_width_relative"].get<double>() < o["half_width_relative"].get<double>());
  CHECK(std::abs(t["estimate_s"].get<double>() - exact) <= 0.01 * exact);
  const std::string out = two.output;
  const auto first_wrote = out.find("wrote");
  REQUIRE(first_wrote != std::string::npos);
  CHECK(out.find("wrote", first_wrote + 1) == std::string::npos);
  CHECK(out.find("makespan:") == out.rfind("makespan:"));

  // Deterministic: the same seed, the same bytes; another seed draws other iterations.
  auto again = run_gridcast(replay + "--sample auto --margin 0.001 --out " + (dir / "again").string());
  REQUIRE(again.exit_code == 0);
  CHECK(read_file(dir / "two" / "prediction.json") == read_file(dir / "again" / "prediction.json"));
  auto other = run_gridcast(replay + "--sample auto --sample-seed 9 --out " + (dir / "other").string());
  REQUIRE(other.exit_code == 0);
  CHECK(nlohmann::json::parse(read_file(dir / "other" / "prediction.json"))["makespan_s"] !=
        nlohmann::json::parse(read_file(dir / "one" / "prediction.json"))["makespan_s"]);
}
