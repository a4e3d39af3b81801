// Library calls priced from their arguments: the cost of a BLAS call from its recorded arguments, the
// arguments through both trace encodings (and traces without them), and the latency model pricing a
// library site on its kernel's rate curve beyond the sizes it was trained on.
#include "../models/models_support.hpp"

#include "gridcast/models/library_cost.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::TempDir;

namespace {

LibraryArgs gemm_args(std::int64_t m, std::int64_t n, std::int64_t k)
{
  LibraryArgs a;
  a.recorded = true;
  a.m = m;
  a.n = n;
  a.k = k;
  a.ld_a = m;
  a.ld_b = k;
  a.ld_c = m;
  a.options = {'N', 'N', '-', '-', '-'};
  return a;
}

}  // namespace

TEST_CASE("library cost: work and working set from a call's arguments", "[library]")
{
  CHECK(library_kernel("dgemm_") == "dgemm");
  CHECK(library_kernel("cblas_dgemm") == "dgemm");
  CHECK(library_kernel("cblas_idamax") == "idamax");
  CHECK(library_kernel("compute").empty());
  CHECK(library_kernel("my_solver_").empty());

  auto gemm = library_cost("cblas_dgemm", gemm_args(100, 200, 32));
  REQUIRE(gemm);
  CHECK(gemm->unit == WorkUnit::Flops);
  CHECK(gemm->work == 2.0 * 100 * 200 * 32);
  CHECK(gemm->working_set_bytes == 8.0 * (100 * 32 + 32 * 200 + 100 * 200));

  LibraryArgs trsm;
  trsm.recorded = true;
  trsm.m = 32;
  trsm.n = 500;
  trsm.options = {'N', '-', 'L', 'L', 'U'};
  CHECK(library_cost("dtrsm_", trsm)->work == 32.0 * 32 * 500);
  trsm.options[2] = 'R';  // the triangle is n x n on the right
  CHECK(library_cost("dtrsm_", trsm)->work == 32.0 * 500 * 500);

  LibraryArgs axpy;
  axpy.recorded = true;
  axpy.n = 1000;
  axpy.inc_x = axpy.inc_y = 1;
  auto a = library_cost("cblas_daxpy", axpy);
  REQUIRE(a);
  CHECK(a->unit == WorkUnit::Bytes);
  CHECK(a->work == 3 * 8000.0);  // x and y read, y written

  CHECK_FALSE(library_cost("cblas_dgemm", LibraryArgs{}));  // not recorded
  CHECK_FALSE(library_cost("compute", gemm_args(1, 1, 1)));

  const KernelRateCurve curve = {{1024, 10}, {4096, 20}};
  CHECK(kernel_rate_at(curve, 100) == 10);
  CHECK(kernel_rate_at(curve, 2048) == Approx(15));  // halfway in log2
  CHECK(kernel_rate_at(curve, 1e9) == 20);
}

TEST_CASE("native formats: library arguments round-trip, traces without them read as before", "[library][native]")
{
  TempDir dir;
  for (TraceEncoding enc : {TraceEncoding::JsonLines, TraceEncoding::Binary}) {
    auto s = std::make_unique<gridcast::test::MemoryStream>("t");
    s->add(Op::Init, "MPI_Init");
    // A copy of what was written: the stream's later add() may move its records (a reference would dangle).
    gridcast::models::LibraryArgs written = gemm_args(64, 48, 32);
    written.options = {'T', 'N', '-', '-', '-'};
    CallRecord& c = s->add(Op::Compute, "cblas_dgemm");
    c.seconds = 1e-3;
    c.library = written;
    CallRecord& plain = s->add(Op::Compute, "dgemm_");
    plain.seconds = 2e-3;
    s->add(Op::Finalize, "MPI_Finalize");
    const std::string name = enc == TraceEncoding::Binary ? "bin" : "jsonl";
    const auto file = dir / ("rank." + name);
    auto w = make_trace_writer(file, enc);
    CallRecord r;
    while (s->next(r))
      w->write(r, s->functions());
    w->close();
    auto in = open_native_trace(file, enc, 0);
    auto calls = gridcast::test::read_all(*in);
    REQUIRE(calls.size() == 4);
    INFO(name);
    CHECK(calls[1].library == written);
    CHECK(calls[1].library.recorded);
    CHECK_FALSE(calls[2].library.recorded);  // a call without arguments stays without
  }
  // JSON lines written before the arguments existed: no lib_args key, nothing recorded.
  gridcast::test::write_file(dir / "old.jsonl", "{\"op\":\"compute\",\"fn\":\"dgemm_\",\"seconds\":0.5}\n");
  auto old = gridcast::test::read_all(*open_native_trace(dir / "old.jsonl", TraceEncoding::JsonLines, 0));
  REQUIRE(old.size() == 1);
  CHECK_FALSE(old[0].library.recorded);
  // A malformed argument list names the key.
  gridcast::test::write_file(dir / "bad.jsonl", "{\"op\":\"compute\",\"fn\":\"dgemm_\",\"lib_args\":[1,2,3]}\n");
  CHECK_THROWS_WITH(gridcast::test::read_all(*open_native_trace(dir / "bad.jsonl", TraceEncoding::JsonLines, 0)),
                    Catch::Contains("lib_args") && Catch::Contains("expected 8 integers"));
}

namespace {

/// The machine of the pricing test: dgemm at 40 Gflop/s in the caches, falling past an 8 MiB last-level
/// cache to 12 Gflop/s from memory.
const KernelRateCurve kDgemmCurve = {{32e3, 40e9}, {1e6, 38e9}, {8.4e6, 30e9}, {64e6, 12e9}};
constexpr double kSpeed = 35e9;  // the host's speed_flops (the dgemm rate of its calibration)

/// np ranks, each 12 panel updates C(nw x nw) += A(nw x 32) B(32 x nw) through cblas_dgemm, recorded with
/// their arguments and the time the rate curve gives them, scattered by +-1 % (a hash of where).
/// `slow_rank`: that rank's calls take `slowdown` times as long (a core shared for the whole run).
class PanelApp final : public TraceSource {
public:
  PanelApp(int nw, int np, int slow_rank = -1, double slowdown = 1) : nw_(nw), np_(np), slow_rank_(slow_rank), slowdown_(slowdown) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<gridcast::test::MemoryStream>("panel");
    s->add(Op::Init, "MPI_Init");
    for (int i = 0; i < 12; ++i) {
      CallRecord& c = s->add(Op::Compute, "cblas_dgemm");
      c.library = gemm_args(nw_, nw_, 32);
      const LibraryCost cost = *library_cost("cblas_dgemm", c.library);
      const std::uint64_t h = static_cast<std::uint64_t>(rank * 131 + i * 7 + nw_) * 0x9e3779b97f4a7c15ULL;
      const double noise = 0.99 + 0.02 * static_cast<double>((h >> 20) % 1000) / 999.0;
      c.seconds = cost.work / kernel_rate_at(kDgemmCurve, cost.working_set_bytes) * noise *
                  (rank == slow_rank_ ? slowdown_ : 1.0);
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_, slow_rank_;
  double slowdown_;
};

/// Two ranks that exchange a message per step and update a trailing matrix while they wait for it, as
/// HPL with lookahead does: two rank-16 updates C(nw x nw) += A(nw x 16) B(16 x nw) through cblas_dgemm
/// (with their arguments and the rate curve's time), cut by MPI_Iprobe rounds that the timing decides (a
/// hash of where): a chunk before the first probe or not, probes that find nothing and only poll, and a
/// chunk after the receive or not. Every construct does the same two chunks whatever the rounds.
class PolledPanelApp final : public TraceSource {
public:
  explicit PolledPanelApp(int nw) : nw_(nw) {}
  int rank_count() const override { return 2; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<gridcast::test::MemoryStream>("polled-panel");
    const int other = 1 - rank;
    auto chunk = [&] {
      CallRecord& c = s->add(Op::Compute, "cblas_dgemm");
      c.library = gemm_args(nw_, nw_, 16);
      const LibraryCost cost = *library_cost("cblas_dgemm", c.library);
      c.seconds = cost.work / kernel_rate_at(kDgemmCurve, cost.working_set_bytes);
    };
    auto probe = [&](bool found, std::int32_t tag) {
      CallRecord& p = s->add(Op::Probe, "MPI_Iprobe");
      p.peer = other, p.tag = tag, p.src = found ? other : -2;
      if (found)
        p.recv_tag = tag, p.recv_bytes = static_cast<std::uint64_t>(8 * nw_);
      s->add(Op::Compute, "compute").seconds = 1e-7;
    };
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < 8; ++step) {
      const std::int32_t tag = 100 + step;
      CallRecord& send = s->add(Op::Send, "MPI_Send");
      send.peer = other, send.tag = tag, send.bytes = static_cast<std::uint64_t>(8 * nw_);
      const int cut   = (step * 5 + rank * 3 + nw_ / 64) % 3;  // (lead, rounds with a chunk, leftover)
      const int empty = (step * 7 + rank + nw_ / 64) % 4;      // probes that only poll
      const bool lead = cut == 0, leftover = cut == 2;
      if (lead)
        chunk();
      for (int e = 0; e < empty; ++e)
        probe(false, tag);
      for (int r = 0; r < 2 - (lead ? 1 : 0) - (leftover ? 1 : 0); ++r) {
        probe(false, tag);
        chunk();
      }
      probe(true, tag);
      CallRecord& recv = s->add(Op::Recv, "MPI_Recv");
      recv.peer = other, recv.tag = tag, recv.bytes = static_cast<std::uint64_t>(8 * nw_);
      if (leftover)
        chunk();
      s->add(Op::Compute, "cblas_daxpy").seconds = 1e-6;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
};

/// The work of rank 0's first polling construct synthesized at (nw, 2): the burst just before its poll.
double synthesized_construct_flops(const TraceModel& model, int nw)
{
  SynthSource synth(std::make_shared<const TraceModel>(model), {static_cast<double>(nw), 2});
  auto s = synth.open(0);
  CallRecord c;
  double last_compute = -1;
  while (s->next(c)) {
    const std::string_view fn = s->functions().name(c.function);
    if (fn == "MPI_Iprobe")
      return last_compute;
    last_compute = c.op == Op::Compute ? c.flops : -1;
  }
  return -1;
}

/// The flops of rank 0's first cblas_dgemm call synthesized at (nw, np).
double synthesized_dgemm_flops(const TraceModel& model, int nw, int np)
{
  SynthSource synth(std::make_shared<const TraceModel>(model), {static_cast<double>(nw), np});
  auto s = synth.open(0);
  CallRecord c;
  while (s->next(c))
    if (s->functions().name(c.function) == "cblas_dgemm")
      return c.flops;
  return -1;
}

/// The recording host of the pricing tests: kSpeed, with kDgemmCurve as its dgemm rate curve.
RunInfo curve_host()
{
  RunInfo info;
  info.host.name        = "profiler";
  info.host.speed_flops = kSpeed;
  info.origin           = "test";
  info.host.library_rates["dgemm"] = kDgemmCurve;
  return info;
}

}  // namespace

TEST_CASE("latency model: dgemm calls growing past the last-level cache are priced on the rate curve at 4x the training size",
          "[latency_model][library]")
{
  TempDir dir;
  const RunInfo info = curve_host();
  // Trained at 128-320: working sets of 0.2-1 MB, inside the caches.
  auto make = [](int nw, int np) { return PanelApp(nw, np); };
  auto profiles = gridcast::test::write_profile_grid(dir.path(), "panel", {2, 4}, {128, 192, 256, 320}, TraceEncoding::Binary,
                                                     make, info);
  TraceModel model = fit_trace_model(profiles);
  REQUIRE(model.library_rates.count("dgemm") == 1);

  // At 4x the largest training size (1280): 13.7 MB, past the 8 MiB cache. What the curve expects of
  // one call there, in flops at the host's speed:
  const LibraryCost target = *library_cost("cblas_dgemm", gemm_args(1280, 1280, 32));
  REQUIRE(target.working_set_bytes > 8.4e6);
  const double expected = target.work / kernel_rate_at(kDgemmCurve, target.working_set_bytes) * kSpeed;
  const double priced   = synthesized_dgemm_flops(model, 1280, 2);
  INFO("priced " << priced << " flops, the curve expects " << expected);
  CHECK(std::abs(priced / expected - 1) < 0.05);

  // The model says the site was priced from its arguments, and keeps saying so through model.json.
  const std::string file = (dir / "m.json").string();
  write_model(file, model);
  const TraceModel again = read_model(file);
  CHECK(synthesized_dgemm_flops(again, 1280, 2) == priced);

  // Without the curve the same calls are regressed on (Nw, Np): inside the training range that fits, but
  // at 4x it extrapolates the in-cache rate and misses the slower memory by far more than 5 %.
  RunInfo plain = info;
  plain.host.library_rates.clear();
  auto regressed_profiles = gridcast::test::write_profile_grid(dir.path(), "plain", {2, 4}, {128, 192, 256, 320},
                                                               TraceEncoding::Binary, make, plain);
  const TraceModel regressed = fit_trace_model(regressed_profiles);
  CHECK(regressed.library_rates.empty());
  const double guessed = synthesized_dgemm_flops(regressed, 1280, 2);
  INFO("regressed " << guessed);
  CHECK(std::abs(guessed / expected - 1) > 0.2);
}

TEST_CASE("latency model: a rank slowed for a whole run does not move the price of a library site",
          "[latency_model][library]")
{
  TempDir dir;
  const RunInfo info = curve_host();
  // Two runs a size, as bench/accuracy/real_size.py makes them: in one, a rank (which one changes with the
  // size) ran all its calls 1.8x slower, as on a VM whose second core is shared while the first computes.
  auto quiet = gridcast::test::write_profile_grid(dir.path(), "quiet", {2}, {128, 192, 256, 320}, TraceEncoding::Binary,
                                                  [](int nw, int np) { return PanelApp(nw, np); }, info);
  auto slowed = gridcast::test::write_profile_grid(dir.path(), "slowed", {2}, {128, 192, 256, 320}, TraceEncoding::Binary,
                                                   [](int nw, int np) { return PanelApp(nw, np, (nw / 64) % 2, 1.8); }, info);
  std::vector<std::filesystem::path> both = quiet;
  both.insert(both.end(), slowed.begin(), slowed.end());
  const TraceModel model = fit_trace_model(both);
  const LibraryCost target = *library_cost("cblas_dgemm", gemm_args(1280, 1280, 32));
  const double expected = target.work / kernel_rate_at(kDgemmCurve, target.working_set_bytes) * kSpeed;
  const double priced   = synthesized_dgemm_flops(model, 1280, 2);
  INFO("priced " << priced << " flops, the undisturbed machine " << expected);
  // The least disturbed run's speed: within 5 % of the curve (the mean over the runs would be 20 % over).
  CHECK(std::abs(priced / expected - 1) < 0.05);
}

TEST_CASE("latency model: the library work a polling construct absorbs is priced on the rate curve at 4x the training size",
          "[latency_model][library]")
{
  TempDir dir;
  const RunInfo info = curve_host();
  auto make = [](int nw, int) { return PolledPanelApp(nw); };
  // Trained at 128-320: updates of 0.2-0.9 MB, inside the caches.
  auto profiles = gridcast::test::write_profile_grid(dir.path(), "polled", {2}, {128, 192, 256, 320}, TraceEncoding::Binary,
                                                     make, info);
  TraceModel model = fit_trace_model(profiles);
  // One construct per step (the rounds are the timing's), its two chunks priced from their arguments.
  const TemplateNode* poll = nullptr;
  std::function<void(const std::vector<TemplateNode>&)> find = [&](const std::vector<TemplateNode>& nodes) {
    for (const TemplateNode& n : nodes) {
      if (n.kind == RolledNode::Kind::Poll && poll == nullptr)
        poll = &n;
      find(n.body);
    }
  };
  for (const TraceGroup& g : model.groups)
    find(g.body);
  REQUIRE(poll != nullptr);
  REQUIRE(poll->absorbed_flops);
  REQUIRE(poll->absorbed_library.size() == 1);
  CHECK(poll->absorbed_library[0].kernel == "dgemm");

  // At 1280 a chunk works on 13.4 MB, past the 8 MiB cache; the construct is two of them.
  const LibraryCost chunk = *library_cost("cblas_dgemm", gemm_args(1280, 1280, 16));
  REQUIRE(chunk.working_set_bytes > 8.4e6);
  const double expected = 2 * chunk.work / kernel_rate_at(kDgemmCurve, chunk.working_set_bytes) * kSpeed;
  const double priced   = synthesized_construct_flops(model, 1280);
  INFO("priced " << priced << " flops, the curve expects " << expected);
  CHECK(std::abs(priced / expected - 1) < 0.05);

  // Through model.json: the same work.
  const std::string file = (dir / "m.json").string();
  write_model(file, model);
  CHECK(synthesized_construct_flops(read_model(file), 1280) == priced);
  // `gridcast fit` says which constructs priced their absorbed work, and from which kernels.
  std::string args;
  for (const auto& p : profiles)
    args += " '" + p.string() + "'";
  auto fit = gridcast::test::run_gridcast("fit" + args + " -o '" + (dir / "cli.json").string() + "'");
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK_THAT(fit.output, Catch::Contains("priced absorbed work: ") &&
                             Catch::Contains(" polling construct(s) from their arguments (dgemm)") &&
                             !Catch::Contains("priced absorbed work: 0 of"));

  // Without the curve the construct's work is regressed on (Nw, Np): at 4x it extrapolates the in-cache
  // rate and misses the slower memory by more than 20 %.
  RunInfo plain = info;
  plain.host.library_rates.clear();
  auto regressed_profiles = gridcast::test::write_profile_grid(dir.path(), "plain", {2}, {128, 192, 256, 320},
                                                               TraceEncoding::Binary, make, plain);
  const TraceModel regressed = fit_trace_model(regressed_profiles);
  const double guessed = synthesized_construct_flops(regressed, 1280);
  INFO("regressed " << guessed);
  CHECK(guessed > 0);
  CHECK(std::abs(guessed / expected - 1) > 0.2);
}
