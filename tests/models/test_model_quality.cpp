// Tests of what the trace model does where no exact expression fits: plausibility in formula selection,
// formulas of the MPI_Dims_create grid's extents, the fallbacks that keep a prediction possible (peers no
// rank expression explains, per-peer counts that differ), and the model_quality synthesis reports.
#include "../models/models_support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_rules.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <numeric>
#include <sstream>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

Formula formula(std::initializer_list<std::pair<const char*, double>> terms, bool integer = true)
{
  Formula f;
  f.integer = integer;
  for (const auto& [name, coef] : terms)
    f.terms.push_back({*feature_from_name(name), coef});
  return f;
}

/// A 2-D strong-scaling halo exchange: a global Nw x Nw grid over dims_create(Np, 2), each rank sends its
/// block's row (8 Nw/d1 bytes) to the next rank and receives from the previous one.
class Rows2D final : public TraceSource {
public:
  Rows2D(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s       = std::make_unique<MemoryStream>("rows2d");
    const auto d = dims_create(np_, 2);
    s->add(Op::Init, "MPI_Init");
    for (int it = 0; it < 3; ++it) {
      CallRecord& x = s->add(Op::Sendrecv, "MPI_Sendrecv");
      x.peer        = (rank + 1) % np_;
      x.src         = (rank + np_ - 1) % np_;
      x.bytes = x.recv_bytes = static_cast<std::uint64_t>(8 * nw_ / d[1]);
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

/// An alltoallv whose per-peer counts differ (a transpose of Nw rows the ranks do not divide evenly:
/// peer j gets 8 (Nw + j) bytes).
class UnevenTranspose final : public TraceSource {
public:
  UnevenTranspose(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("uneven");
    s->add(Op::Init, "MPI_Init");
    std::vector<std::uint64_t> counts(static_cast<std::size_t>(np_));
    for (int j = 0; j < np_; ++j)
      counts[static_cast<std::size_t>(j)] = j == rank ? 0 : static_cast<std::uint64_t>(8 * (nw_ + j));
    for (int it = 0; it < 2; ++it) {
      CallRecord& a = s->add(Op::Alltoallv, "MPI_Alltoallv");
      a.counts      = counts;
      a.recv_counts = counts;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

/// A ring whose last rank sends to a partner no rank expression names (rank 1 at every Np): every other
/// rank sends to r + 1.
class OddPeer final : public TraceSource {
public:
  OddPeer(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("odd");
    s->add(Op::Init, "MPI_Init");
    for (int it = 0; it < nw_; ++it) {
      CallRecord& x = s->add(Op::Send, "MPI_Send");
      x.peer        = rank == np_ - 1 ? 1 : rank + 1;
      x.bytes       = 64;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

/// SUMMA on the dims_create(Np, 2) = P x Q grid with declared work: max(P, Q) steps of a broadcast of an
/// A panel (rows x width doubles, width = Nw / max(P, Q): 8 (Nw/P)^2 bytes), of a B panel (8 Nw^2/Np
/// bytes) and 2 rows cols width flop.
class Summa2D final : public TraceSource {
public:
  Summa2D(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int) const override
  {
    auto s       = std::make_unique<MemoryStream>("summa");
    const auto d = dims_create(np_, 2);
    const std::uint64_t rows = static_cast<std::uint64_t>(nw_ / d[0]), cols = static_cast<std::uint64_t>(nw_ / d[1]);
    s->add(Op::Init, "MPI_Init");
    for (int k = 0; k < d[0]; ++k) {
      s->add(Op::Bcast, "MPI_Bcast").bytes = 8 * rows * rows;
      s->add(Op::Bcast, "MPI_Bcast").bytes = 8 * rows * cols;
      s->add(Op::Compute, "compute").flops = 2.0 * static_cast<double>(rows * cols * rows);
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

/// A slab FFT's work with declared flops: 10 Nw^3/Np log2(Nw) per iteration (2-D FFTs of Nw/Np planes of
/// Nw x Nw points, then the 1-D FFTs along the third axis), between two allreduces.
class FftSlabs final : public TraceSource {
public:
  FftSlabs(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int) const override
  {
    auto s = std::make_unique<MemoryStream>("fft");
    s->add(Op::Init, "MPI_Init");
    for (int it = 0; it < 3; ++it) {
      s->add(Op::Compute, "compute").flops = flops(nw_, np_);
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }
  static double flops(double nw, double np) { return 10.0 * nw * nw * nw / np * std::log2(nw); }

private:
  int nw_;
  int np_;
};

}  // namespace

TEST_CASE("model quality: a formula negative or against the training series' direction is implausible",
          "[trace_model][model_quality]")
{
  const std::vector<FitPoint> falling = {{64, 4, 96}, {64, 8, 92}, {64, 16, 84}};
  const PlausibleRange range{256, 128};
  // 100 - Np reproduces every point and goes below 0 past Np 100.
  CHECK_THAT(implausibility(formula({{"1", 100}, {"Np", -1}}), falling, range), Catch::Contains("negative"));
  CHECK(implausibility(formula({{"1", 80}, {"1/Np", 64}}), falling, range).empty());
  // Sizes that grow with Nw at every Np: a formula that falls with Nw somewhere in the range is not one.
  const std::vector<FitPoint> growing = {{16, 4, 100}, {32, 4, 400}, {16, 8, 50}, {32, 8, 200}};
  CHECK_THAT(implausibility(formula({{"1", 10000}, {"Nw", 60}, {"Nw^2", -0.2}}), growing, range),
             Catch::Contains("decreasing in Nw") && Catch::Contains("non-decreasing"));
  CHECK(implausibility(formula({{"Nw^2/Np", 1.5625}}), growing, range).empty());
  // A loop count of Np alone: 6 - 16/Np is 2, 4 and 5 iterations at np 4, 8, 16 and 5.5 at np 32.
  const std::vector<FitPoint> count = {{8, 4, 2}, {8, 8, 4}, {8, 16, 5}};
  PlausibleRange whole = range;
  whole.whole          = true;
  CHECK(implausibility(formula({{"1", 6}, {"1/Np", -16}}), count, range).empty());
  CHECK_THAT(implausibility(formula({{"1", 6}, {"1/Np", -16}}), count, whole),
             Catch::Contains("not a whole number of iterations (5.5) at Np 32"));
  CHECK(implausibility(formula({{"log2(Np)", 1}}), {{8, 4, 2}, {8, 8, 3}}, whole).empty());
}

TEST_CASE("model quality: the best formula by leave-one-out loses to the next plausible one",
          "[trace_model][model_quality]")
{
  // 100 - Np is exact on the training points and negative at the target: a plausible candidate wins, and
  // the fit says so.
  const std::vector<FitPoint> falling = {{64, 4, 96}, {64, 8, 92}, {64, 16, 84}, {128, 4, 96}, {128, 8, 92}, {128, 16, 84}};
  PlausibleFit fit = fit_plausible_formula(falling, true, {256, 128});
  CHECK_FALSE(fit.best);
  CHECK_THAT(fit.rejected, Catch::Contains("100 - Np") && Catch::Contains("negative"));
  CHECK(implausibility(fit.formula, falling, {256, 128}).empty());
  CHECK(fit.formula.eval(64, 128) >= 0);
  // Where the best one is plausible it is the one fit_formula picks.
  const std::vector<FitPoint> line = {{2, 4, 16}, {3, 4, 24}, {4, 4, 32}, {2, 8, 16}};
  PlausibleFit plain = fit_plausible_formula(line, true, {16, 64});
  CHECK(plain.best);
  CHECK(plain.formula.text() == fit_formula(line, true).text());
}

TEST_CASE("model quality: sizes that follow the MPI_Dims_create grid are exact at non-powers of two",
          "[trace_model][model_quality]")
{
  CHECK(feature_value(*feature_from_name("Nw/dims2[1](Np)"), 96, 96) == 96.0 / 8);  // 96 is 12 x 8
  CHECK(feature_value(*feature_from_name("Nw^2/(dims3[1]*dims3[2])(Np)"), 96, 96) == 96.0 * 96 / 16);  // 6x4x4
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "rows", {6, 12, 24}, {48, 72, 96}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Rows2D(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK_THAT(model_to_json(*model).dump(), Catch::Contains("Nw/dims2[1](Np)"));
  SynthSource synth(model, {192, 96});
  gridcast::test::require_same_streams(synth, Rows2D(192, 96));
  CHECK(synth.quality().approximated.empty());
  CHECK(synth.quality().exact == synth.quality().positions);
  CHECK(synth.quality().np_factor == 4);
  CHECK(synth.quality().nw_factor == 2);
}

TEST_CASE("model quality: per-peer counts that differ are their mean, which keeps each rank's total",
          "[trace_model][model_quality]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "uneven", {4, 8}, {2, 3, 4}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return UnevenTranspose(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump();
  CHECK_THAT(json, Catch::Contains("\"approximated\"") && Catch::Contains("per-peer counts that differ"));
  SynthSource synth(model, {4, 8});
  REQUIRE_FALSE(synth.quality().approximated.empty());
  CHECK(synth.quality().approximated.front().field == "counts");
  CHECK(synth.quality().approximated.front().train_error > 0);
  // Rank 3 at (4, 8) sent 8 (4 + j) bytes to each j != 3: 8 (7*4 + 28 - 3) = 424 in all.
  auto calls = gridcast::test::read_all(*synth.open(3));
  REQUIRE(calls.size() == 4);
  const std::uint64_t total = std::accumulate(calls[1].counts.begin(), calls[1].counts.end(), std::uint64_t{0});
  CHECK(static_cast<double>(total) == Approx(8.0 * (7 * 4 + 28 - 3)).epsilon(0.02));
}

TEST_CASE("model quality: a peer no rank expression explains falls back to the one that explains the most",
          "[trace_model][model_quality]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "odd", {4, 8}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return OddPeer(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"field\": \"peer\"") && Catch::Contains("no rank expression explains every"));
  // Deterministic: the same profiles give the same model, and the model reads back to itself.
  CHECK(model_to_json(fit_trace_model(profiles)).dump(2) == json);
  const TraceModel back = model_from_json(nlohmann::json::parse(json), "model.json");
  CHECK(model_to_json(back).dump(2) == json);

  SynthSource synth(model, {3, 32});
  const ModelQuality& q = synth.quality();
  REQUIRE(q.approximated.size() == 1);
  CHECK(q.approximated[0].field == "peer");
  // r + 1 explains 7 of the 8 ranks' sends at the largest training Np.
  CHECK(q.approximated[0].train_error == Approx(1.0 / 8));
  CHECK(q.exact + 1 == q.positions);
  auto calls = gridcast::test::read_all(*synth.open(5));
  REQUIRE(calls.size() == 5);
  CHECK(calls[1].peer == 6);
  std::ostringstream printed;
  print_quality(printed, q);
  CHECK_THAT(printed.str(), Catch::Contains("approximated: groups[") && Catch::Contains(" peer: ") &&
                                Catch::Contains("training error 12.5 %") && Catch::Contains("template positions exact"));
}

TEST_CASE("model quality: wrong inputs stay errors on the command line", "[trace_model][model_quality][cli]")
{
  using gridcast::test::run_gridcast;
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "odd", {4, 8}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return OddPeer(nw, np); });
  std::string args;
  for (const auto& p : profiles)
    args += " " + p.string();
  const std::string model = (dir / "model.json").string();
  REQUIRE(run_gridcast("fit" + args + " -o " + model).exit_code == 0);

  auto synth = run_gridcast("synth " + model + " --nw 3 --np 16 --out " + (dir / "s").string());
  INFO(synth.output);
  CHECK(synth.exit_code == 0);
  CHECK_THAT(synth.output, Catch::Contains("approximated: ") && Catch::Contains("training error"));

  auto negative = run_gridcast("synth " + model + " --nw -1 --np 16 --out " + (dir / "n").string());
  CHECK(negative.exit_code == 1);
  CHECK_THAT(negative.output, Catch::Contains("--nw"));

  const std::string text = gridcast::test::read_file(model);
  gridcast::test::write_file(dir / "truncated.json", text.substr(0, text.size() / 2));
  auto truncated = run_gridcast("synth " + (dir / "truncated.json").string() + " --nw 3 --np 16 --out " +
                                (dir / "t").string());
  CHECK(truncated.exit_code == 1);
  CHECK_THAT(truncated.output, Catch::Contains("truncated.json"));

  std::string bad = text;
  const auto at = bad.find("\"train_error\": ");
  REQUIRE(at != std::string::npos);
  bad.insert(at + 15, "-");
  gridcast::test::write_file(dir / "bad.json", bad);
  auto corrupt = run_gridcast("synth " + (dir / "bad.json").string() + " --nw 3 --np 16 --out " + (dir / "b").string());
  CHECK(corrupt.exit_code == 1);
  CHECK_THAT(corrupt.output, Catch::Contains("train_error"));
}

TEST_CASE("model quality: sizes and declared work that are products of a 2-D grid block's extents are exact",
          "[trace_model][model_quality]")
{
  // 8 x 8 at 64 ranks from 2x2, 4x2, 4x4: the A panel is (Nw/8)^2 doubles, the work (Nw/8)^2 (Nw/8).
  CHECK(feature_value(*feature_from_name("Nw^2/dims2[0]^2(Np)"), 96, 8) == 24.0 * 24);
  CHECK(feature_value(*feature_from_name("Nw^3/(dims2[0]^2*dims2[1])(Np)"), 96, 8) == 24.0 * 24 * 48);
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "summa", {4, 8, 16}, {64, 96, 128}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Summa2D(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string text = model_to_json(*model).dump();
  CHECK_THAT(text, Catch::Contains("Nw^2/dims2[0]^2(Np)") && Catch::Contains("Nw^3/(dims2[0]^2*dims2[1])(Np)"));
  SynthSource synth(model, {256, 64});
  gridcast::test::require_same_streams(synth, Summa2D(256, 64));
  CHECK(synth.quality().approximated.empty());
}

TEST_CASE("model quality: declared transform work in Nw^3/Np log2(Nw) extrapolates exactly",
          "[trace_model][model_quality]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "fft", {4, 8, 16}, {16, 32, 48}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return FftSlabs(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK_THAT(model_to_json(*model).dump(), Catch::Contains("Nw^3/Np*log2(Nw)"));
  SynthSource synth(model, {128, 64});
  auto s = synth.open(5);
  int computes = 0;
  for (const CallRecord& c : gridcast::test::read_all(*s))
    if (c.op == Op::Compute) {
      CHECK(c.flops == Approx(FftSlabs::flops(128, 64)).epsilon(1e-9));
      ++computes;
    }
  CHECK(computes == 3);
}

TEST_CASE("model quality: noisy compute keeps the noise-tolerant fit and work that repeats exactly the exact one",
          "[trace_model][model_quality]")
{
  // The same work measured with noise (seconds, not flops) is fitted by fit_measured, over the plain
  // features only: no grid-extent feature, whatever it explains.
  class Measured final : public TraceSource {
  public:
    Measured(int nw, int np, bool as_flops, double noise = 0.02) : nw_(nw), np_(np), as_flops_(as_flops), noise_(noise) {}
    int rank_count() const override { return np_; }
    CallStreamPtr open(int) const override
    {
      auto s = std::make_unique<MemoryStream>("measured");
      s->add(Op::Init, "MPI_Init");
      const auto d      = dims_create(np_, 2);
      const double work = 2.0 * std::pow(nw_ / d[0], 2) * (nw_ / d[1]) * (1 + noise_ * ((nw_ / 32 + np_) % 3 - 1));
      CallRecord& c     = s->add(Op::Compute, "compute");
      if (as_flops_)
        c.flops = work;
      else
        c.seconds = 1e-9 * work;
      s->add(Op::Finalize, "MPI_Finalize");
      return s;
    }

  private:
    int nw_;
    int np_;
    bool as_flops_;
    double noise_;
  };
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "measured", {4, 8, 16}, {64, 96, 128}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Measured(nw, np, false); });
  CHECK_THAT(model_to_json(fit_trace_model(profiles)).dump(), !Catch::Contains("dims2"));
  // Work written as flops but noisy (SMPI benchmarking a real code writes its measured work as flops): no
  // formula reproduces it to 6 significant digits, so it is fitted as measured work too.
  const auto noisy = write_profile_grid(dir.path(), "noisy", {4, 8, 16}, {64, 96, 128}, TraceEncoding::JsonLines,
                                        [](int nw, int np) { return Measured(nw, np, true); });
  CHECK_THAT(model_to_json(fit_trace_model(noisy)).dump(), !Catch::Contains("dims2"));
  // The same work without the noise is declared: exact, through the grid's extents.
  const auto exact = write_profile_grid(dir.path(), "exact", {4, 8, 16}, {64, 96, 128}, TraceEncoding::JsonLines,
                                        [](int nw, int np) { return Measured(nw, np, true, 0.0); });
  CHECK_THAT(model_to_json(fit_trace_model(exact)).dump(), Catch::Contains("Nw^3/(dims2[0]^2*dims2[1])(Np)"));
  // Timed in seconds by the hook under SMPI (run.json's MPI library is SMPI: simulated time): declared
  // work, exact. The same seconds from a real machine stay measured work.
  RunInfo smpi;
  smpi.mpi_library = "SMPI Version 3.32";
  const auto timed = write_profile_grid(dir.path(), "timed", {4, 8, 16}, {64, 96, 128}, TraceEncoding::JsonLines,
                                        [](int nw, int np) { return Measured(nw, np, false, 0.0); }, smpi);
  CHECK_THAT(model_to_json(fit_trace_model(timed)).dump(), Catch::Contains("Nw^3/(dims2[0]^2*dims2[1])(Np)"));
  const auto real = write_profile_grid(dir.path(), "real", {4, 8, 16}, {64, 96, 128}, TraceEncoding::JsonLines,
                                       [](int nw, int np) { return Measured(nw, np, false, 0.0); });
  CHECK_THAT(model_to_json(fit_trace_model(real)).dump(), !Catch::Contains("dims2"));
}
