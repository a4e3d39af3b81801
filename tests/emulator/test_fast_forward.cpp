// Tests of steady-state fast-forward (`gridcast predict --fast-forward`, docs/reference/emulator.md): on the stencil
// of examples/predict-stencil it gives the full emulation's answer; `off` is the emulation as before (the
// same as synth + replay); short loops are not touched; a loop whose messages cross iterations is never
// skipped; outputs are deterministic; bad options are refused.
#include "../models/models_support.hpp"

#include "gridcast/emulator/replay.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>

using gridcast::test::run_gridcast;
using gridcast::test::source_path;
using gridcast::test::TempDir;
using json = nlohmann::json;

namespace {

const std::string kModel    = source_path("examples/predict-stencil/model.json");
const std::string kPlatform = source_path("examples/stencil3d/platform.xml");

/// `gridcast predict` of the stencil model at (nw, np) into dir/out; returns the console output.
std::string predict(const TempDir& dir, int nw, int np, const std::string& out, const std::string& extra = "")
{
  auto r = run_gridcast("predict " + kModel + " --nw " + std::to_string(nw) + " --np " + std::to_string(np) +
                        " --platform " + kPlatform + " --out " + (dir / out).string() + " " + extra);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

json prediction(const TempDir& dir, const std::string& out)
{
  return json::parse(gridcast::test::read_file(dir / out / "prediction.json"));
}

/// prediction.json without its fast_forward report (what a run without fast-forward writes).
std::string without_report(json j)
{
  j.erase("fast_forward");
  return j.dump();
}

}  // namespace

TEST_CASE("fast-forward: a stable stencil loop is skipped and gives the full emulation's answer",
          "[fast_forward][latency_model][cli]")
{
  TempDir dir;
  // 16 ranks, Nw 800: 200 iterations of the checkpoint loop (4 stencil steps and a reduce each).
  std::string auto_out = predict(dir, 800, 16, "auto");
  std::string off_out  = predict(dir, 800, 16, "off", "--fast-forward off");
  CHECK_THAT(auto_out, Catch::Contains("fast-forward: iterations 5-198 of 200 skipped on every rank"));
  CHECK_THAT(off_out, !Catch::Contains("fast-forward"));

  json a = prediction(dir, "auto"), o = prediction(dir, "off");
  const json& ff = a.at("fast_forward");
  CHECK(ff.at("enabled") == true);
  CHECK(ff.at("applied") == true);
  CHECK(ff.at("loop_iterations") == 200);
  CHECK(ff.at("skip_from_iteration") == 5);  // 1 warm-up period, a window of 3, decided at the next head
  CHECK(ff.at("iterations_skipped_per_rank") == 194);
  CHECK(ff.at("iterations_emulated_per_rank") == 6);
  CHECK(ff.at("iterations_skipped_total") == 194 * 16);
  CHECK(ff.at("period_s").at("mean").get<double>() > 0);
  CHECK(o.at("fast_forward").at("enabled") == false);
  CHECK(o.at("fast_forward").at("applied") == false);
  CHECK(o.at("fast_forward").at("reason") == "off");

  // The answer: makespan and every rank's finish within 1e-9, the same calls, messages and algorithms.
  CHECK(a.at("makespan_s").get<double>() == Approx(o.at("makespan_s").get<double>()).epsilon(1e-9));
  CHECK(a.at("events") == o.at("events"));
  CHECK(a.at("messages") == o.at("messages"));
  CHECK(a.at("collectives") == o.at("collectives"));
  REQUIRE(a.at("ranks").size() == 16);
  for (std::size_t r = 0; r < 16; ++r) {
    const json &x = a.at("ranks")[r], &y = o.at("ranks")[r];
    CHECK(x.at("calls") == y.at("calls"));
    CHECK(x.at("finish_s").get<double>() == Approx(y.at("finish_s").get<double>()).epsilon(1e-9));
    CHECK(x.at("compute_s").get<double>() == Approx(y.at("compute_s").get<double>()).epsilon(1e-9));
    CHECK(x.at("comm_s").get<double>() == Approx(y.at("comm_s").get<double>()).epsilon(1e-6));
  }
  REQUIRE(a.at("functions").size() == o.at("functions").size());
  std::uint64_t extrapolated = 0;
  for (std::size_t f = 0; f < a.at("functions").size(); ++f) {
    const json &x = a.at("functions")[f], &y = o.at("functions")[f];
    INFO(x.at("name"));
    CHECK(x.at("name") == y.at("name"));
    CHECK(x.at("calls") == y.at("calls"));  // counted as if emulated
    CHECK(x.at("seconds").get<double>() == Approx(y.at("seconds").get<double>()).epsilon(1e-6).margin(1e-12));
    CHECK(x.at("extrapolated_calls").get<std::uint64_t>() <= x.at("calls").get<std::uint64_t>());
    extrapolated += x.at("extrapolated_calls").get<std::uint64_t>();
    CHECK_FALSE(y.contains("extrapolated_calls"));  // no skip: the functions keep their old keys
  }
  CHECK(extrapolated == ff.at("extrapolated_calls").get<std::uint64_t>());
  CHECK(extrapolated > a.at("events").get<std::uint64_t>() * 9 / 10);
  REQUIRE(a.at("links").size() == o.at("links").size());
  for (std::size_t l = 0; l < a.at("links").size(); ++l)
    CHECK(a.at("links")[l].at("bytes").get<double>() == Approx(o.at("links")[l].at("bytes").get<double>()).epsilon(1e-9));

  // What the model contributed is counted exactly: the skipped calls were synthesized, not performed.
  json ca = json::parse(gridcast::test::read_file(dir / "auto" / "contribution.json"));
  json co = json::parse(gridcast::test::read_file(dir / "off" / "contribution.json"));
  REQUIRE(ca.at("functions").size() == co.at("functions").size());
  for (std::size_t f = 0; f < ca.at("functions").size(); ++f) {
    CHECK(ca.at("functions")[f].at("calls") == co.at("functions")[f].at("calls"));
    CHECK(ca.at("functions")[f].at("flops") == co.at("functions")[f].at("flops"));
    CHECK(ca.at("functions")[f].at("bytes") == co.at("functions")[f].at("bytes"));
  }

  // Deterministic: the same run again writes the same bytes.
  predict(dir, 800, 16, "auto2");
  for (const char* f : {"prediction.json", "timeline.json", "contribution.json"})
    CHECK(gridcast::test::read_file(dir / "auto" / f) == gridcast::test::read_file(dir / "auto2" / f));
}

TEST_CASE("fast-forward: off is the emulation as before, and short loops are left alone", "[fast_forward][latency_model][cli]")
{
  TempDir dir;
  // Off, at a size where auto would skip: exactly what synth + replay (which never fast-forwards) gives.
  predict(dir, 200, 16, "off", "--fast-forward off --no-timeline");
  auto s = run_gridcast("synth " + kModel + " --nw 200 --np 16 --out " + (dir / "syn").string());
  REQUIRE(s.exit_code == 0);
  auto r = run_gridcast("replay " + (dir / "syn").string() + " --platform " + kPlatform + " --no-timeline --out " +
                        (dir / "r").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json o = prediction(dir, "off"), p = prediction(dir, "r");
  CHECK_FALSE(p.contains("fast_forward"));  // replay of a recorded trace: never
  for (const char* key : {"makespan_s", "events", "messages", "ranks", "functions", "collectives", "links"}) {
    INFO(key);
    CHECK(o.at(key) == p.at(key));
  }

  // The example's 8 iterations are fewer than the minimum: auto emulates them all, with the same bytes as
  // off apart from the report.
  predict(dir, 32, 16, "short-auto", "--no-timeline");
  predict(dir, 32, 16, "short-off", "--no-timeline --fast-forward off");
  json sa = prediction(dir, "short-auto");
  CHECK(sa.at("fast_forward").at("applied") == false);
  CHECK_THAT(sa.at("fast_forward").at("reason").get<std::string>(), Catch::Contains("fewer than the minimum 32"));
  CHECK(without_report(sa) == without_report(prediction(dir, "short-off")));
  // With the minimum lowered, the same 8 iterations are skipped in the middle (warm-up 1, window 2, tail 2).
  predict(dir, 32, 16, "short-ff", "--no-timeline --ff-min-iterations 4 --ff-window 2 --ff-tail 2");
  json sf = prediction(dir, "short-ff");
  CHECK(sf.at("fast_forward").at("applied") == true);
  CHECK(sf.at("fast_forward").at("skip_from_iteration") == 4);
  CHECK(sf.at("fast_forward").at("iterations_skipped_per_rank") == 2);
  CHECK(sf.at("makespan_s").get<double>() == Approx(sa.at("makespan_s").get<double>()).epsilon(1e-9));
}

TEST_CASE("fast-forward: bad options are refused", "[fast_forward][latency_model][cli]")
{
  const std::string base = "predict " + kModel + " --nw 32 --np 4 --platform " + kPlatform + " ";
  for (const char* bad : {"--fast-forward maybe", "--ff-tail 0", "--ff-window 0", "--ff-warmup -1", "--ff-tolerance -0.1"}) {
    INFO(bad);
    auto r = run_gridcast(base + bad);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(std::string(bad).substr(2, std::string(bad).find(' ') - 2)));
  }
  auto help = run_gridcast("predict --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Catch::Contains("--fast-forward") && Catch::Contains("--ff-tolerance"));
}

namespace {

/// A two-rank pipeline: in iteration i rank 0 sends to rank 1 (eager) and computes; rank 1 receives and
/// computes. `crossing`: rank 1 receives in iteration i what rank 0 sent in iteration i-1 (the last
/// message after the loop). `pending`: instead, both ranks exchange, each receive posted (irecv) in
/// iteration i and completed at the start of iteration i+1. Each rank's stream says where its iterations
/// start, as a synthesized one does.
class PipelineSource final : public gridcast::models::TraceSource {
public:
  PipelineSource(std::uint64_t iterations, bool crossing, bool pending = false)
      : n_(iterations), crossing_(crossing), pending_(pending)
  {
  }
  int rank_count() const override { return 2; }
  SteadyLoop steady_loop() const override { return {n_, "pipeline", {}, false}; }
  gridcast::models::CallStreamPtr open(int rank) const override
  {
    using gridcast::models::Op;
    auto s = std::make_unique<HeadStream>();
    s->add(Op::Init, "MPI_Init");
    for (std::uint64_t i = 0; i < n_; ++i) {
      s->mark_head();
      if (pending_) {
        if (i > 0)
          s->add(Op::Wait, "MPI_Wait").request = static_cast<std::int64_t>(i - 1);
        auto& r   = s->add(Op::Irecv, "MPI_Irecv");
        r.peer    = 1 - rank;
        r.bytes   = 8;
        r.request = static_cast<std::int64_t>(i);
        auto& c   = s->add(Op::Send, "MPI_Send");
        c.peer    = 1 - rank;
        c.bytes   = 8;
      } else if (rank == 0) {
        auto& c = s->add(Op::Send, "MPI_Send");
        c.peer  = 1;
        c.bytes = 8;
      } else if (i > 0 || not crossing_) {
        auto& c = s->add(Op::Recv, "MPI_Recv");
        c.peer  = 0;
        c.bytes = 8;
      }
      s->add(Op::Compute, "compute").flops = 1e6;
    }
    if (rank == 1 && crossing_ && not pending_) {
      auto& c = s->add(Op::Recv, "MPI_Recv");
      c.peer  = 0;
      c.bytes = 8;
    }
    if (pending_)
      s->add(Op::Wait, "MPI_Wait").request = static_cast<std::int64_t>(n_ - 1);
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  /// Calls in memory, with the positions where iterations start.
  class HeadStream final : public gridcast::models::CallStream {
  public:
    gridcast::models::CallRecord& add(gridcast::models::Op op, const char* fn)
    {
      calls_.emplace_back();
      calls_.back().op       = op;
      calls_.back().function = table_.intern(fn);
      return calls_.back();
    }
    void mark_head() { heads_.push_back(calls_.size()); }
    bool next(gridcast::models::CallRecord& out) override
    {
      if (next_ == calls_.size())
        return false;
      out      = calls_[next_++];
      out.line = next_;
      return true;
    }
    std::optional<std::uint64_t> loop_head() override
    {
      auto it = std::lower_bound(heads_.begin(), heads_.end(), next_);
      if (it == heads_.end() || *it != next_)
        return std::nullopt;
      return static_cast<std::uint64_t>(it - heads_.begin());
    }
    const gridcast::models::FunctionTable& functions() const override { return table_; }
    const std::string& source() const override { return source_; }

  private:
    std::vector<gridcast::models::CallRecord> calls_;
    std::vector<std::size_t> heads_;
    gridcast::models::FunctionTable table_;
    std::size_t next_ = 0;
    std::string source_ = "pipeline";
  };
  std::uint64_t n_;
  bool crossing_;
  bool pending_;
};

}  // namespace

// One simulation per TEST_CASE: SimGrid keeps per-process state between engines.
gridcast::emulator::ReplayResult run_pipeline(const TempDir& dir, bool crossing, bool pending = false)
{
  gridcast::test::write_file(dir / "p.xml", gridcast::test::cluster_xml(2));
  gridcast::emulator::ReplayOptions opts;
  opts.platform          = dir / "p.xml";
  opts.fast_forward.mode = gridcast::emulator::FastForwardOptions::Mode::Auto;
  return gridcast::emulator::replay(PipelineSource(64, crossing, pending), opts);
}

TEST_CASE("fast-forward: a loop whose messages cross iterations is emulated in full", "[fast_forward][emulator]")
{
  TempDir dir;
  gridcast::emulator::ReplayResult a = run_pipeline(dir, true);
  REQUIRE(a.fast_forward);
  CHECK_FALSE(a.fast_forward->applied);
  CHECK_THAT(a.fast_forward->why_not, Catch::Contains("from one iteration to another"));
  CHECK(a.fast_forward->loop_iterations == 64);
  CHECK(a.events == 2 * 130);
  // 1 ms of compute per iteration at 1 Gf, and rank 1's receive.
  CHECK(a.makespan_s > 64e-3);
  CHECK(a.makespan_s < 64 * 1.05e-3);
}

TEST_CASE("fast-forward: the same loop receiving in the iteration of the send is skipped", "[fast_forward][emulator]")
{
  TempDir dir;
  gridcast::emulator::ReplayResult a = run_pipeline(dir, false);
  REQUIRE(a.fast_forward);
  CHECK(a.fast_forward->applied);
  CHECK(a.fast_forward->skip_from == 5);
  CHECK(a.fast_forward->skipped == 58);
  CHECK(a.events == 2 * 130);  // skipped calls counted as if emulated
  CHECK(a.fast_forward->extrapolated_calls == 2 * 58 * 2);
  CHECK(a.fast_forward->extrapolated_messages == 58);
  CHECK(a.messages == 64);
  CHECK(a.makespan_s > 64e-3);
  CHECK(a.makespan_s < 64 * 1.05e-3);
}

TEST_CASE("fast-forward: a loop with requests pending at its head is emulated in full", "[fast_forward][emulator]")
{
  TempDir dir;
  gridcast::emulator::ReplayResult a = run_pipeline(dir, false, true);
  REQUIRE(a.fast_forward);
  CHECK_FALSE(a.fast_forward->applied);
  CHECK_THAT(a.fast_forward->why_not, Catch::Contains("requests are still pending at the head of the loop"));
  CHECK(a.messages == 2 * 64);
}
