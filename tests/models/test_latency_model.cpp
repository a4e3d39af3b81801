// Tests of the latency model (gridcast fit) and of `gridcast predict`: the mean regression's feature
// choice, the ratio forest, work in flops through the recording host's speed, predict against synth +
// replay, range warnings, version errors, determinism and the variability spread.
#include "../models/models_support.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <set>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::TempDir;
using gridcast::test::run_gridcast;

namespace {

/// An LU-like application, recorded in seconds as a profiler does. Rank r of np at size nw runs nw/8
/// iterations k: a panel factorization ("panel", 1e-6 nw s), a broadcast of the panel, a trailing update
/// ("dgemm_", 24e-9 (nw - 8k)^2 / np s: shrinking with k), an allreduce. `noise` scatters every
/// dgemm_ call by a factor in [0.7, 1.3] drawn from a hash of where it is.
class LuApp final : public TraceSource {
public:
  LuApp(int nw, int np, bool noise) : nw_(nw), np_(np), noise_(noise) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s   = std::make_unique<gridcast::test::MemoryStream>("lu");
    auto add = [&](Op op, const char* fn) -> CallRecord& { return s->add(op, fn); };
    add(Op::Init, "MPI_Init");
    for (int k = 0; k < nw_ / 8; ++k) {
      add(Op::Compute, "panel").seconds = 1e-6 * nw_;
      CallRecord& b = add(Op::Bcast, "MPI_Bcast");
      b.bytes       = static_cast<std::uint64_t>(8 * nw_);
      double left   = nw_ - 8.0 * k;
      double f      = 1.0;
      if (noise_) {
        std::uint64_t h = static_cast<std::uint64_t>(rank * 7919 + k * 104729 + nw_ * 31 + np_) * 0x9e3779b97f4a7c15ULL;
        f = 0.7 + 0.6 * static_cast<double>((h >> 11) % 1000) / 999.0;
      }
      add(Op::Compute, "dgemm_").seconds = 24e-9 * left * left / np_ * f;
      add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
  bool noise_;
};

constexpr double kRecordingSpeed = 2e9;  // flop/s of the (pretend) profiling host

std::vector<std::filesystem::path> lu_profiles(const TempDir& dir, bool noise = false)
{
  std::vector<std::filesystem::path> out;
  for (int np : {2, 4})
    for (int nw : {32, 48, 64, 80}) {
      auto p = dir / ("lu-" + std::string(noise ? "noisy-" : "") + std::to_string(np) + "-" + std::to_string(nw));
      RunInfo info;
      info.np               = np;
      info.nw               = nw;
      info.host.name        = "profiler";
      info.host.speed_flops = kRecordingSpeed;
      info.origin           = "test";
      info.encoding         = TraceEncoding::Binary;
      write_profile(LuApp(nw, np, noise), info, p, TraceEncoding::Binary);
      out.push_back(p);
    }
  return out;
}

std::string joined(const std::vector<std::filesystem::path>& v)
{
  std::string s;
  for (const auto& p : v)
    s += " " + p.string();
  return s;
}

const TemplateNode* find_call(const std::vector<TemplateNode>& nodes, const TraceModel& m, const std::string& fn)
{
  for (const TemplateNode& n : nodes) {
    if (n.kind == RolledNode::Kind::Loop) {
      if (auto* f = find_call(n.body, m, fn))
        return f;
    } else if (m.tokens[n.token].function == fn) {
      return &n;
    }
  }
  return nullptr;
}

double makespan_of(const std::filesystem::path& prediction)
{
  return nlohmann::json::parse(gridcast::test::read_file(prediction)).at("makespan_s").get<double>();
}

}  // namespace

TEST_CASE("latency model: the mean regression picks the physically motivated feature", "[latency_model]")
{
  // Dense LU work per rank: 2/3 Nw^3 / Np, plus a per-rank constant.
  std::vector<FitPoint> pts;
  for (double np : {2.0, 4.0, 8.0})
    for (double nw : {100.0, 200.0, 300.0})
      pts.push_back({nw, np, 2.0 / 3.0 * nw * nw * nw / np + 5e4});
  Formula f = fit_formula(pts, false);
  std::set<std::string> names;
  for (const Term& t : f.terms)
    names.insert(feature_name(t.feature));
  CHECK(names == std::set<std::string>{"1", "Nw^3/Np"});
  CHECK(f.eval(1000, 64) == Approx(2.0 / 3.0 * 1e9 / 64 + 5e4).epsilon(1e-9));
  REQUIRE(f.cv_error);
  CHECK(*f.cv_error < 1e-9);

  // Leave-one-out predictions of the chosen features: exact for an exact model, one per point.
  auto loo = loo_predictions(f, pts);
  REQUIRE(loo.size() == pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    REQUIRE(loo[i]);
    CHECK(*loo[i] == Approx(pts[i].value).epsilon(1e-9));
  }
}

TEST_CASE("latency model: measured work of a fixed cost plus a linear part extrapolates linearly", "[latency_model]")
{
  // A site whose work per call is a fixed cost plus work proportional to the size (1e8 + 1e4 Nw flops),
  // measured at four sizes with a few percent of noise (fixed factors), fitted as gridcast fit fits
  // measured compute: two terms at most on four points, the simplest formula within 25 % (+0.01) of the
  // best leave-one-out error. A single power through the origin (c*Nw^(2/3), c*Nw^(1/2)) bends like the
  // affine form over 4000-32000 and is within that tolerance, but falls 18 % and 45 % short at 128000:
  // the affine form must be taken.
  const std::vector<double> sizes = {4000, 8000, 16000, 32000};
  const std::vector<std::vector<double>> noise = {{1.01, 0.98, 1.085, 1.046}, {0.873, 1.10, 0.852, 0.971},
                                                  {1, 1, 1, 1}};
  auto truth = [](double nw) { return 1e8 + 1e4 * nw; };
  for (const auto& factors : noise) {
    std::vector<FitPoint> pts;
    for (std::size_t i = 0; i < sizes.size(); ++i)
      pts.push_back({sizes[i], 2, truth(sizes[i]) * factors[i]});
    Formula f = fit_formula(pts, false, 2, Parsimony{0.25, 0.01});
    INFO(f.text());
    std::set<std::string> names;
    for (const Term& t : f.terms)
      names.insert(feature_name(t.feature));
    CHECK(names == std::set<std::string>{"1", "Nw"});
    // Linear beyond the training range: within the noise of the truth at 2x and 4x the largest size,
    // and the increment from 2x to 4x is the one from 1x to 2x (a straight line).
    CHECK(f.eval(64000, 2) == Approx(truth(64000)).epsilon(0.08));
    CHECK(f.eval(128000, 2) == Approx(truth(128000)).epsilon(0.08));
    CHECK(f.eval(128000, 2) - f.eval(64000, 2) == Approx(2 * (f.eval(64000, 2) - f.eval(32000, 2))).epsilon(1e-9));
  }

  // A genuine surface term (halo faces of a 3-D block: (Nw/Np)^(2/3), no fixed cost) that the affine form
  // does not fit within the tolerance keeps its power.
  std::vector<FitPoint> faces;
  for (double nw : sizes)
    faces.push_back({nw, 2, 5e3 * std::cbrt((nw / 2) * (nw / 2))});
  Formula g = fit_formula(faces, false, 2, Parsimony{0.25, 0.01});
  INFO(g.text());
  REQUIRE(g.terms.size() == 1);
  CHECK(feature_name(g.terms[0].feature) == "Nw^(2/3)");  // Nw^(2/3) and (Nw/Np)^(2/3) coincide at one Np
}

namespace {

/// A run whose MPI_Init takes a quarter of a second (process start-up, as the profiler records it, with
/// a few percent of noise) before four compute bursts of 1e-5 Nw s and allreduces.
class StartupApp final : public TraceSource {
public:
  StartupApp(int nw, double init_s) : nw_(nw), init_s_(init_s) {}
  int rank_count() const override { return 2; }
  CallStreamPtr open(int) const override
  {
    auto s = std::make_unique<gridcast::test::MemoryStream>("startup");
    s->add(Op::Init, "MPI_Init").seconds = init_s_;
    for (int k = 0; k < 4; ++k) {
      s->add(Op::Compute, "compute").seconds = 1e-5 * nw_;
      CallRecord& a = s->add(Op::Allreduce, "MPI_Allreduce");
      a.bytes       = 8;
      a.seconds     = 1e-6;
    }
    s->add(Op::Finalize, "MPI_Finalize").seconds = 1e-6;
    return s;
  }

private:
  int nw_;
  double init_s_;
};

}  // namespace

TEST_CASE("latency model: MPI_Init's measured start-up time is predicted", "[latency_model]")
{
  // The emulator has nothing to simulate in MPI_Init, so its recorded duration must come from the model:
  // a sleep of the same function just before the call, regressed like measured work (the noisy values
  // give a constant), which the prediction then spends (LAMMPS at np 2: 0.24 s of a 1.2 s run).
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  const std::vector<int> sizes     = {4000, 8000, 16000, 32000};
  const std::vector<double> init_s = {0.255, 0.243, 0.252, 0.247};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    RunInfo info;
    info.np               = 2;
    info.nw               = sizes[i];
    info.host.speed_flops = kRecordingSpeed;
    info.encoding         = TraceEncoding::Binary;
    auto p                = dir / ("startup-" + std::to_string(sizes[i]));
    write_profile(StartupApp(sizes[i], init_s[i]), info, p, TraceEncoding::Binary);
    profiles.push_back(p);
  }
  TraceModel model = fit_trace_model(profiles);
  const auto& body = model.groups.at(0).body;
  REQUIRE(body.size() >= 2);
  const CallToken& first = model.tokens.at(body[0].token);
  CHECK(first.op == Op::Sleep);
  CHECK(first.function == "MPI_Init");
  REQUIRE(body[0].seconds);
  CHECK(body[0].seconds->terms.size() == 1);  // the constant: the noise says nothing more
  CHECK(body[0].seconds->eval(128000, 2) == Approx(0.24925).epsilon(1e-9));
  CHECK(model.tokens.at(body[1].token).op == Op::Init);
  CHECK_FALSE(body[1].seconds);  // counted once, by the sleep

  // The prediction spends it: 0.25 s then four bursts of 1e-5 x 128000 s (on hosts as fast as the
  // recording one), on both ranks at once.
  gridcast::test::write_file(dir / "p.xml", gridcast::test::cluster_xml(2, "2Gf"));
  const std::string m = (dir / "m.json").string();
  write_model(m, model);
  auto r = run_gridcast("predict " + m + " --nw 128000 --np 2 --no-timeline --platform " + (dir / "p.xml").string() +
                        " --out " + (dir / "out").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(makespan_of(dir / "out" / "prediction.json") == Approx(0.24925 + 4 * 1e-5 * 128000).epsilon(0.01));
  auto j = nlohmann::json::parse(gridcast::test::read_file(dir / "out" / "prediction.json"));
  double init = -1;
  for (const auto& f : j.at("functions"))
    if (f.at("name") == "MPI_Init")
      init = f.at("seconds").get<double>();
  CHECK(init == Approx(2 * 0.24925).epsilon(1e-6));

  // A trace without MPI_Init durations (SMPI's declare none; here the LU-like application) gets no sleep.
  TraceModel lu = fit_trace_model(lu_profiles(dir));
  for (const CallToken& t : lu.tokens)
    CHECK(t.op != Op::Sleep);
}

TEST_CASE("latency model: the ratio forest reproduces a known pattern", "[latency_model]")
{
  // Ratio 2 - 1.5 p over the progress p of the loop in group 0; a constant 0.5 in group 1. Each
  // context seen at three training points, as the fit provides them.
  std::vector<RatioSample> samples;
  auto truth = [](int group, int bucket) {
    double p = (bucket + 0.5) / kProgressBuckets;
    return group == 0 ? 2.0 - 1.5 * p : 0.5;
  };
  for (int point = 0; point < 3; ++point)
    for (int g = 0; g < 2; ++g)
      for (int b = 0; b < kProgressBuckets; ++b) {
        RatioSample s;
        s.context.group        = g;
        s.context.inter_loop   = 1;
        s.context.intra_loop   = 2;
        s.context.inner_bucket = b;
        s.context.outer_bucket = b;
        s.ratio                = truth(g, b);
        samples.push_back(s);
      }
  std::vector<double> oob;
  RatioForest forest = train_ratio_forest(samples, ForestOptions{}, oob);
  CHECK(forest.trees.size() == 100);
  REQUIRE(oob.size() == samples.size());
  double worst = 0, worst_oob = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    double pred = forest.eval(samples[i].context.features());
    worst       = std::max(worst, std::abs(pred - samples[i].ratio) / samples[i].ratio);
    worst_oob   = std::max(worst_oob, std::abs(oob[i] - samples[i].ratio) / samples[i].ratio);
  }
  CHECK(worst < 0.03);
  CHECK(worst_oob < 0.05);

  // Trained twice: the same trees (fixed seeds).
  std::vector<double> oob2;
  RatioForest again = train_ratio_forest(samples, ForestOptions{}, oob2);
  REQUIRE(again.trees.size() == forest.trees.size());
  for (std::size_t t = 0; t < forest.trees.size(); ++t) {
    CHECK(again.trees[t].leaves == forest.trees[t].leaves);
    REQUIRE(again.trees[t].nodes.size() == forest.trees[t].nodes.size());
  }
}

TEST_CASE("latency model: measured seconds become flops through the recording host's speed", "[latency_model]")
{
  TempDir dir;
  auto profiles = lu_profiles(dir);
  TraceModel model = fit_trace_model(profiles);
  const TemplateNode* panel = find_call(model.groups.at(0).body, model, "panel");
  REQUIRE(panel != nullptr);
  REQUIRE(panel->flops);
  CHECK_FALSE(panel->seconds);
  // 1e-6 Nw seconds at 2e9 flop/s.
  CHECK(panel->flops->eval(200, 8) == Approx(1e-6 * 200 * kRecordingSpeed).epsilon(1e-9));
  const FunctionLatency* p = model.latency_of("panel");
  REQUIRE(p != nullptr);
  CHECK_FALSE(p->ratio);  // every panel call is its site's mean
  CHECK(p->train_error < 1e-12);

  // The synthesized stream carries flops, which the target's host speed turns back into time.
  auto shared = std::make_shared<const TraceModel>(model);
  SynthSource synth(shared, {64, 2});
  auto s = synth.open(0);
  CallRecord c;
  int panels = 0;
  while (s->next(c))
    if (s->functions().name(c.function) == "panel") {
      CHECK(c.flops == Approx(1e-6 * 64 * kRecordingSpeed));
      CHECK(c.seconds < 0);
      ++panels;
    }
  CHECK(panels == 8);

  // On hosts 4x faster than the profiler the panels take a quarter of the recorded time.
  gridcast::test::write_file(dir / "slow.xml", gridcast::test::cluster_xml(4, "2Gf"));
  gridcast::test::write_file(dir / "fast.xml", gridcast::test::cluster_xml(4, "8Gf"));
  std::string m = (dir / "m.json").string();
  write_model(m, model);
  for (const char* plat : {"slow", "fast"}) {
    auto r = run_gridcast("predict " + m + " --nw 64 --np 2 --platform " + (dir / (std::string(plat) + ".xml")).string() +
                          " --out " + (dir / plat).string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  auto seconds_of = [&](const char* plat, const std::string& fn) {
    auto j = nlohmann::json::parse(gridcast::test::read_file(dir / plat / "prediction.json"));
    for (const auto& f : j.at("functions"))
      if (f.at("name") == fn)
        return f.at("seconds").get<double>();
    return -1.0;
  };
  CHECK(seconds_of("slow", "panel") == Approx(2 * 8 * 1e-6 * 64).epsilon(1e-6));  // 2 ranks x 8 iterations
  CHECK(seconds_of("fast", "panel") == Approx(seconds_of("slow", "panel") / 4).epsilon(1e-6));
}

TEST_CASE("latency model: a shrinking update is fitted by the forest and predicted at a new size", "[latency_model]")
{
  TempDir dir;
  TraceModel model = fit_trace_model(lu_profiles(dir));
  const FunctionLatency* d = model.latency_of("dgemm_");
  REQUIRE(d != nullptr);
  REQUIRE(d->ratio);  // the calls of one site differ by iteration
  CHECK(d->ratio->trees.size() == 100);
  CHECK(d->train_error < 0.05);
  REQUIRE(d->cv_error);
  CHECK(*d->cv_error < 0.25);
  // Total work of rank 0 at an unseen size against the generator's: within 5 %.
  auto shared = std::make_shared<const TraceModel>(model);
  for (int nw : {96, 128}) {
    SynthSource synth(shared, {static_cast<double>(nw), 4});
    auto s = synth.open(0);
    CallRecord c;
    double predicted = 0;
    while (s->next(c))
      if (s->functions().name(c.function) == "dgemm_")
        predicted += c.flops;
    double truth = 0;
    for (int k = 0; k < nw / 8; ++k)
      truth += 24e-9 * (nw - 8.0 * k) * (nw - 8.0 * k) / 4 * kRecordingSpeed;
    INFO("nw " << nw);
    CHECK(predicted == Approx(truth).epsilon(0.05));
  }
  // model.json round trip keeps the forest.
  write_model(dir / "m.json", model);
  TraceModel back = read_model(dir / "m.json");
  REQUIRE(back.latency_of("dgemm_") != nullptr);
  REQUIRE(back.latency_of("dgemm_")->ratio);
  CallContext ctx;
  ctx.group = 0;
  ctx.inter_loop = 1;
  ctx.intra_loop = 2;
  ctx.inner_bucket = ctx.outer_bucket = 10;
  CHECK(back.latency_of("dgemm_")->ratio->eval(ctx.features()) == d->ratio->eval(ctx.features()));
  CHECK(model_to_json(back).dump() == model_to_json(model).dump());
}

TEST_CASE("predict: the same as synth then replay, deterministic, with its contribution", "[latency_model][cli]")
{
  TempDir dir;
  auto profiles = lu_profiles(dir);
  std::string m = (dir / "m.json").string();
  auto fit = run_gridcast("fit" + joined(profiles) + " -o " + m);
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK_THAT(fit.output, Catch::Contains("latency dgemm_"));
  // Fitted twice: the same bytes (forest included).
  REQUIRE(run_gridcast("fit" + joined(profiles) + " -o " + (dir / "m2.json").string()).exit_code == 0);
  CHECK(gridcast::test::read_file(m) == gridcast::test::read_file(dir / "m2.json"));

  gridcast::test::write_file(dir / "p.xml", gridcast::test::cluster_xml(16));
  std::string plat = (dir / "p.xml").string();
  auto a = run_gridcast("predict " + m + " --nw 96 --np 8 --platform " + plat + " --out " + (dir / "a").string());
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  REQUIRE(run_gridcast("synth " + m + " --nw 96 --np 8 --out " + (dir / "syn").string()).exit_code == 0);
  REQUIRE(run_gridcast("replay " + (dir / "syn").string() + " --platform " + plat + " --out " + (dir / "r").string())
              .exit_code == 0);
  auto pa = nlohmann::json::parse(gridcast::test::read_file(dir / "a" / "prediction.json"));
  auto pr = nlohmann::json::parse(gridcast::test::read_file(dir / "r" / "prediction.json"));
  CHECK(pa.at("command") == "predict");
  for (const char* key : {"makespan_s", "events", "messages", "ranks", "functions", "collectives", "links"}) {
    INFO(key);
    CHECK(pa.at(key) == pr.at(key));
  }
  CHECK(gridcast::test::read_file(dir / "a" / "timeline.json") == gridcast::test::read_file(dir / "r" / "timeline.json"));

  auto contribution = nlohmann::json::parse(gridcast::test::read_file(dir / "a" / "contribution.json"));
  bool found = false;
  for (const auto& f : contribution.at("functions"))
    if (f.at("name") == "dgemm_") {
      found = true;
      CHECK(f.at("calls") == 8 * 12);
      CHECK(f.at("flops").get<double>() > 0);
      CHECK(f.at("latency_model").at("forest") == true);
    }
  CHECK(found);

  // Run again: byte-identical outputs.
  REQUIRE(run_gridcast("predict " + m + " --nw 96 --np 8 --platform " + plat + " --out " + (dir / "b").string())
              .exit_code == 0);
  for (const char* f : {"prediction.json", "timeline.json", "contribution.json"})
    CHECK(gridcast::test::read_file(dir / "a" / f) == gridcast::test::read_file(dir / "b" / f));
  CHECK(run_gridcast("predict --help").exit_code == 0);
}

TEST_CASE("predict: range warnings, version and placement errors", "[latency_model][cli]")
{
  TempDir dir;
  auto profiles = lu_profiles(dir);
  std::string m = (dir / "m.json").string();
  REQUIRE(run_gridcast("fit" + joined(profiles) + " -o " + m).exit_code == 0);
  gridcast::test::write_file(dir / "p.xml", gridcast::test::cluster_xml(16));
  std::string plat = (dir / "p.xml").string();

  auto inside = run_gridcast("predict " + m + " --nw 48 --np 4 --platform " + plat);
  REQUIRE(inside.exit_code == 0);
  CHECK_THAT(inside.output, !Catch::Contains("warning"));

  auto outside = run_gridcast("predict " + m + " --nw 160 --np 16 --platform " + plat);
  INFO(outside.output);
  REQUIRE(outside.exit_code == 0);
  CHECK_THAT(outside.output, Catch::Contains("Np 16 is outside the fitted range 2-4: 4x the largest (4)"));
  CHECK_THAT(outside.output, Catch::Contains("Nw 160 is outside the fitted range 32-80: 2x the largest (80)"));
  auto below = run_gridcast("predict " + m + " --nw 16 --np 2 --platform " + plat);
  CHECK_THAT(below.output, Catch::Contains("Nw 16 is outside the fitted range 32-80: 2x below the smallest (32)"));

  auto few = run_gridcast("predict " + m + " --nw 48 --np 32 --platform " + plat);
  CHECK(few.exit_code == 1);
  CHECK_THAT(few.output, Catch::Contains("need 32 hosts, the platform has 16"));
  CHECK(run_gridcast("predict " + m + " --nw 48 --np 32 --ranks-per-host 2 --platform " + plat).exit_code == 0);

  std::string text = gridcast::test::read_file(m);
  auto at = text.find("\"format_version\": 2");
  REQUIRE(at != std::string::npos);
  text.replace(at, 19, "\"format_version\": 1");
  gridcast::test::write_file(dir / "old.json", text);
  auto old = run_gridcast("predict " + (dir / "old.json").string() + " --nw 48 --np 4 --platform " + plat);
  CHECK(old.exit_code == 1);
  CHECK_THAT(old.output, Catch::Contains("format_version") && Catch::Contains("another gridcast version"));

  CHECK(run_gridcast("predict " + m + " --nw 48 --np 4 --platform " + plat + " --variability maybe").exit_code == 1);
  CHECK(run_gridcast("predict " + m + " --nw 48 --np 4").exit_code == 1);  // no platform
}

TEST_CASE("predict: variability draws a spread of makespans from the seed", "[latency_model][cli]")
{
  TempDir dir;
  auto profiles = lu_profiles(dir, true);
  std::string m = (dir / "m.json").string();
  REQUIRE(run_gridcast("fit" + joined(profiles) + " -o " + m).exit_code == 0);
  TraceModel model = read_model(m);
  REQUIRE(model.latency_of("dgemm_") != nullptr);
  CHECK_FALSE(model.latency_of("dgemm_")->variability.empty());
  CHECK(model.latency_of("panel")->variability.empty());  // no scatter in the recording: none predicted

  gridcast::test::write_file(dir / "p.xml", gridcast::test::cluster_xml(16));
  std::string plat = (dir / "p.xml").string();
  auto run = [&](const std::string& extra, const std::string& out) {
    auto r = run_gridcast("predict " + m + " --nw 64 --np 8 --platform " + plat + " --no-timeline --out " +
                          (dir / out).string() + " " + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return makespan_of(dir / out / "prediction.json");
  };
  double off1 = run("--seed 1", "off1");
  double off2 = run("--seed 2", "off2");
  CHECK(off1 == off2);  // without variability the seed changes nothing
  std::set<double> spread;
  for (int seed : {1, 2, 3, 4})
    spread.insert(run("--variability on --seed " + std::to_string(seed), "on" + std::to_string(seed)));
  CHECK(spread.size() == 4);
  CHECK(run("--variability on --seed 3", "again") == run("--variability on --seed 3", "again2"));
  // The spread is around the mean prediction, not away from it.
  for (double v : spread)
    CHECK(v == Approx(off1).epsilon(0.2));
}

TEST_CASE("trace model: a founder whose loops greedy matching overruns, and polls with bursts between them",
          "[trace_model]")
{
  // ((A)x2 B)x2 (A)x3 B: matched greedily, the outer loop takes a third iteration (A A A B) and leaves
  // nothing for what follows. The rank founds its group all the same, with its own loop counts.
  TempDir dir;
  const std::string a = "{\"op\":\"barrier\",\"fn\":\"MPI_Barrier\"}\n";
  const std::string b = "{\"op\":\"allreduce\",\"fn\":\"MPI_Allreduce\",\"bytes\":8}\n";
  // Polls of MPI_Iprobe with the profiler's compute bursts between them, in varying numbers.
  auto polls = [](int n) {
    std::string t;
    for (int k = 0; k < n; ++k)
      t += std::string(k ? "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":1e-6}\n" : "") +
           "{\"op\":\"probe\",\"fn\":\"MPI_Iprobe\",\"peer\":-1}\n";
    return t;
  };
  const std::string work = "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.001}\n";
  std::vector<std::filesystem::path> profiles;
  for (int np : {1, 2}) {
    std::vector<std::string> ranks;
    for (int r = 0; r < np; ++r)
      ranks.push_back(a + a + b + a + a + b + a + a + a + b + polls(2 + r) + work + a + polls(5 + np) + work);
    profiles.push_back(dir / ("p" + std::to_string(np)));
    gridcast::test::write_jsonl_profile(profiles.back(), ranks);
  }
  TraceModel model = fit_trace_model(profiles);
  REQUIRE(model.groups.size() == 1);
  std::size_t polls_found = 0;
  auto count = [&](auto& self, const std::vector<TemplateNode>& nodes) -> void {
    for (const TemplateNode& n : nodes) {
      polls_found += n.kind == RolledNode::Kind::Poll ? 1 : 0;
      self(self, n.body);
    }
  };
  count(count, model.groups[0].body);
  CHECK(polls_found == 2);  // each run of polls and bursts is one construct
  // The work between the polling runs is what the latency model sees: 1 ms at 1e9 flop/s.
  const FunctionLatency* c = model.latency_of("compute");
  REQUIRE(c != nullptr);
  CHECK(c->calls == 3 * 2);  // 2 work calls per rank, 3 ranks; the bursts inside polling runs are absorbed
}

TEST_CASE("predict: the bundled example's model is what fit gives on its profiles", "[latency_model][cli]")
{
  // examples/predict-stencil/model.json must not drift from the code: refit from the repository root
  // (the model names its profiles by the paths given) and compare the bytes.
  TempDir dir;
  const std::string profiles = "examples/predict-stencil/profiles/";
  std::string args;
  for (int np : {4, 8, 16})
    for (int nw : {8, 12, 16})
      args += " " + profiles + "np" + std::to_string(np) + "-nw" + std::to_string(nw);
  std::string cmd = "cd '" + std::string(GRIDCAST_SOURCE_DIR) + "' && '" + GRIDCAST_BIN + "' fit" + args + " -o '" +
                    (dir / "model.json").string() + "' > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(gridcast::test::read_file(dir / "model.json") ==
        gridcast::test::read_file(std::filesystem::path(GRIDCAST_SOURCE_DIR) / "examples/predict-stencil/model.json"));
}

TEST_CASE("predict: fast-forward of a loop whose iterations differ", "[latency_model][cli][fast_forward]")
{
  // The LU's update shrinks with the iteration (the forest's ratio) and, recorded noisy, scatters by
  // +-30% (--variability on, which doubles the window): the time per iteration never settles within 1%
  // over 6 iterations, so nothing is skipped and the answer is the full emulation's, byte for byte. With
  // a tolerance wide enough, a skip happens: the skipped compute calls' own work and the window's mean
  // for the rest stand for the skipped iterations.
  TempDir dir;
  auto profiles = lu_profiles(dir, true);
  std::string m = (dir / "m.json").string();
  REQUIRE(run_gridcast("fit" + joined(profiles) + " -o " + m).exit_code == 0);
  gridcast::test::write_file(dir / "p.xml", gridcast::test::cluster_xml(16));
  std::string plat = (dir / "p.xml").string();
  auto run = [&](const std::string& extra, const std::string& out) {
    // Nw 512: 64 iterations.
    auto r = run_gridcast("predict " + m + " --nw 512 --np 4 --platform " + plat + " --out " + (dir / out).string() +
                          " --variability on --seed 7 " + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(gridcast::test::read_file(dir / out / "prediction.json"));
  };
  auto strip = [](nlohmann::json j) {
    j.erase("fast_forward");
    return j.dump();
  };
  nlohmann::json a = run("", "auto");
  nlohmann::json o = run("--fast-forward off", "off");
  CHECK(a.at("fast_forward").at("loop_iterations") == 64);
  CHECK(a.at("fast_forward").at("applied") == false);
  CHECK_THAT(a.at("fast_forward").at("reason").get<std::string>(), Catch::Contains("tolerance"));
  CHECK(strip(a) == strip(o));
  CHECK(gridcast::test::read_file(dir / "auto" / "timeline.json") == gridcast::test::read_file(dir / "off" / "timeline.json"));

  nlohmann::json w = run("--ff-tolerance 1", "wide");
  REQUIRE(w.at("fast_forward").at("applied") == true);
  CHECK(w.at("fast_forward").at("tolerance") == 1.0);
  CHECK(w.at("events") == o.at("events"));
  CHECK(w.at("fast_forward").at("window") == 6);
  // The window (iterations 2-7 of 64) holds more waiting than the shrinking iterations after it: 14% too
  // long here, the price of a tolerance of 100%.
  const double full = o.at("makespan_s").get<double>(), ff = w.at("makespan_s").get<double>();
  CHECK(std::abs(ff / full - 1) < 0.2);
  run("--ff-tolerance 1", "wide2");  // deterministic, skip included
  CHECK(gridcast::test::read_file(dir / "wide" / "prediction.json") == gridcast::test::read_file(dir / "wide2" / "prediction.json"));
}

TEST_CASE("predict: fast-forward of a loop whose work shrinks keeps the skipped work exact", "[latency_model][cli][fast_forward]")
{
  // The LU's update shrinks along the loop (the forest's ratio): the periods of a short window can agree
  // while the iterations after it are lighter. The skipped compute calls' own work, not the window's,
  // sets the compute part of the skipped span, so the makespan is the full emulation's.
  TempDir dir;
  auto profiles = lu_profiles(dir);
  std::string m = (dir / "m.json").string();
  REQUIRE(run_gridcast("fit" + joined(profiles) + " -o " + m).exit_code == 0);
  gridcast::test::write_file(dir / "p.xml", gridcast::test::cluster_xml(16));
  std::string plat = (dir / "p.xml").string();
  auto run = [&](const std::string& extra, const std::string& out) {
    auto r = run_gridcast("predict " + m + " --nw 1024 --np 4 --platform " + plat + " --no-timeline --out " +
                          (dir / out).string() + " " + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(gridcast::test::read_file(dir / out / "prediction.json"));
  };
  nlohmann::json a = run("", "auto");
  nlohmann::json o = run("--fast-forward off", "off");
  REQUIRE(a.at("fast_forward").at("applied") == true);
  CHECK(a.at("fast_forward").at("iterations_skipped_per_rank").get<int>() > 100);  // of 128
  CHECK(a.at("makespan_s").get<double>() == Approx(o.at("makespan_s").get<double>()).epsilon(1e-6));
  for (std::size_t f = 0; f < a.at("functions").size(); ++f)
    if (a.at("functions")[f].at("name") == "dgemm_")
      CHECK(a.at("functions")[f].at("seconds").get<double>() ==
            Approx(o.at("functions")[f].at("seconds").get<double>()).epsilon(1e-6));
}

namespace {

/// A master-and-workers step, the same calls on every rank: rank 0 does the serial part of "solve" (S =
/// 8e-6 Nw s) on top of the shared part every rank does (W = 2e-6 Nw s); "local" is the same on every
/// rank but for a rank-dependent scatter of up to 10 %. Two steps, an allreduce after each.
class MasterApp final : public TraceSource {
public:
  MasterApp(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<gridcast::test::MemoryStream>("master");
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < 2; ++step) {
      s->add(Op::Compute, "solve").seconds = (rank == 0 ? 10e-6 : 2e-6) * nw_;
      s->add(Op::Compute, "local").seconds = 1e-6 * nw_ * (1.0 + 0.1 * ((rank + step) % 3 - 1));
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

}  // namespace

TEST_CASE("latency model: a site where the first rank does the serial part scales each rank by its role", "[latency_model]")
{
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int np : {2, 4})
    for (int nw : {32, 48, 64, 80}) {
      RunInfo info;
      info.np               = np;
      info.nw               = nw;
      info.host.speed_flops = kRecordingSpeed;
      info.encoding         = TraceEncoding::Binary;
      profiles.push_back(dir / ("master-" + std::to_string(np) + "-" + std::to_string(nw)));
      write_profile(MasterApp(nw, np), info, profiles.back(), TraceEncoding::Binary);
    }
  const TraceModel model = fit_trace_model(profiles);
  REQUIRE(model.groups.size() == 1);  // one call sequence: one group, the roles are in the work only
  const TemplateNode* solve = find_call(model.groups[0].body, model, "solve");
  const TemplateNode* local = find_call(model.groups[0].body, model, "local");
  REQUIRE((solve != nullptr && local != nullptr));
  REQUIRE(solve->role_scale);
  CHECK(solve->role_scale->first > 1.25);
  CHECK(solve->role_scale->last < 0.8);
  CHECK_FALSE(local->role_scale);  // 10 % that moves between ranks with the step is not a role

  // Rank 0 does 5x a worker's work at any Np (W + S against W), and the site's total over the ranks
  // stays the regression's mean times Np.
  auto shared = std::make_shared<const TraceModel>(model);
  for (int np : {2, 8}) {
    SynthSource synth(shared, {96, np});
    std::vector<double> solve_flops;
    for (int r = 0; r < np; ++r) {
      auto s = synth.open(r);
      CallRecord c;
      double sum = 0;
      while (s->next(c))
        if (s->functions().name(c.function) == "solve")
          sum += c.flops;
      solve_flops.push_back(sum);
    }
    INFO("np " << np);
    double total = 0;
    for (double f : solve_flops)
      total += f;
    CHECK(total == Approx(2 * np * solve->flops->eval(96, np)).epsilon(1e-9));
    CHECK(solve_flops[0] / solve_flops[1] == Approx(5.0).epsilon(0.25));
    if (np == 2)  // a training Np: each role's work is what the training runs did, W + S and W
      CHECK(solve_flops[0] == Approx(2 * 10e-6 * 96 * kRecordingSpeed).epsilon(0.02));
  }

  // model.json keeps the factors, and refuses a negative one naming it.
  const std::string json = model_to_json(model).dump();
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "m.json")).dump() == json);
  std::string bad      = json;
  const std::string key = "\"role_scale\":{\"first\":";
  const auto at         = bad.find(key);
  REQUIRE(at != std::string::npos);
  bad.insert(at + key.size(), "-");
  auto err = gridcast::test::expect_input_error([&] { model_from_json(nlohmann::json::parse(bad), "m.json"); });
  CHECK_THAT(std::string(err.what()), Catch::Contains("role_scale") && Catch::Contains("first"));
}
