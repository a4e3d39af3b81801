// Sampled prediction's model side (models/sampling.hpp): units and features from streams, phases,
// allocation and the stratified estimate (seed 003, Eq. 1-5), against values computed by hand.
#include "gridcast/models/sampling.hpp"

#include "gridcast/foundation/errors.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <numeric>
#include <set>

using namespace gridcast::models;
using namespace gridcast::models::sampling;

namespace {

/// A source whose ranks' streams are given call by call, with the loop heads marked: every rank runs
/// `iterations` of a loop whose body `body(rank, iteration)` writes, after one prologue call.
class ScriptedSource final : public TraceSource {
public:
  using Body = std::function<std::vector<CallRecord>(int rank, std::uint64_t iteration)>;
  ScriptedSource(int np, std::uint64_t iterations, Body body) : np_(np), iterations_(iterations), body_(std::move(body))
  {
    table_.intern("MPI_Init");
    table_.intern("compute");
    table_.intern("MPI_Send");
    table_.intern("MPI_Recv");
    table_.intern("MPI_Irecv");
    table_.intern("MPI_Wait");
    table_.intern("MPI_Allreduce");
    table_.intern("MPI_Comm_dup");
    table_.intern("MPI_Comm_split");
  }
  int rank_count() const override { return np_; }
  SteadyLoop steady_loop() const override { return {iterations_, "scripted loop", {}, false}; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<Stream>(table_);
    CallRecord init;
    init.op = Op::Init;
    s->calls.push_back({std::nullopt, init});
    for (std::uint64_t i = 0; i < iterations_; ++i) {
      std::vector<CallRecord> body = body_(rank, i);
      for (std::size_t k = 0; k < body.size(); ++k)
        s->calls.push_back({k == 0 ? std::optional<std::uint64_t>(i) : std::nullopt, body[k]});
    }
    return s;
  }

private:
  struct Stream final : CallStream {
    explicit Stream(const FunctionTable& t) : table(t) {}
    bool next(CallRecord& out) override
    {
      if (at >= calls.size())
        return false;
      out = calls[at++].second;
      return true;
    }
    std::optional<std::uint64_t> loop_head() override { return at < calls.size() ? calls[at].first : std::nullopt; }
    const FunctionTable& functions() const override { return table; }
    const std::string& source() const override { return name; }
    const FunctionTable& table;
    std::string name = "scripted";
    std::vector<std::pair<std::optional<std::uint64_t>, CallRecord>> calls;
    std::size_t at = 0;
  };
  int np_;
  std::uint64_t iterations_;
  Body body_;
  FunctionTable table_;
};

CallRecord compute(double flops)
{
  CallRecord c;
  c.op = Op::Compute;
  c.function = 1;
  c.flops = flops;
  return c;
}

CallRecord send(int peer, std::uint64_t bytes)
{
  CallRecord c;
  c.op = Op::Send;
  c.function = 2;
  c.peer = peer;
  c.bytes = bytes;
  return c;
}

CallRecord recv(int peer, std::uint64_t bytes)
{
  CallRecord c;
  c.op = Op::Recv;
  c.function = 3;
  c.peer = peer;
  c.bytes = bytes;
  return c;
}

/// A ring exchange of two ranks with compute that is heavy on every third iteration.
std::vector<CallRecord> ring_body(int rank, std::uint64_t i)
{
  const double work = i % 3 == 2 ? 8e9 : 1e9;
  return {compute(work), send(1 - rank, 1000), recv(1 - rank, 1000)};
}

CallRecord allreduce(std::int32_t comm = kWorldComm)
{
  CallRecord c;
  c.op = Op::Allreduce;
  c.function = 6;
  c.comm = comm;
  c.bytes = 8;
  return c;
}

/// A body of ten solver iterations, each compute then an allreduce on MPI_COMM_WORLD, the odd ones heavy;
/// an allreduce on another communicator between them cuts nothing.
std::vector<CallRecord> solver_body(int, std::uint64_t)
{
  std::vector<CallRecord> b;
  for (int k = 0; k < 10; ++k) {
    b.push_back(compute(k % 2 == 1 ? 5e9 : 1e9));
    b.push_back(allreduce());
    b.push_back(allreduce(3));
  }
  return b;
}

Units units_of(const std::vector<std::vector<double>>& rows, std::vector<double> proxy)
{
  Units u;
  u.count = rows.size();
  u.loop_iterations = u.count + 1;
  for (std::size_t j = 0; j < rows.front().size(); ++j)
    u.feature_names.push_back("calls f" + std::to_string(j));
  u.features = rows;
  u.proxy_s = std::move(proxy);
  return u;
}

}  // namespace

TEST_CASE("sampling units: one per iteration but the last with calls bytes and work summed over ranks", "[models]")
{
  ScriptedSource src(2, 9, ring_body);
  const Units u = collect_units(src, 0);
  REQUIRE(u.why_not.empty());
  CHECK(u.loop_iterations == 9);
  REQUIRE(u.count == 8);
  const auto col = [&](const std::string& name) {
    auto it = std::find(u.feature_names.begin(), u.feature_names.end(), name);
    REQUIRE(it != u.feature_names.end());
    return static_cast<std::size_t>(it - u.feature_names.begin());
  };
  CHECK(u.features[0][col("calls MPI_Send")] == 2);
  CHECK(u.features[0][col("bytes MPI_Send")] == 2000);
  CHECK(u.features[0][col("work compute")] == 2e9);
  CHECK(u.features[2][col("work compute")] == 16e9);
  // The proxy: the busiest rank's work at 1 Gflop/s plus its largest message at 10 GB/s and 1 us.
  CHECK(u.proxy_s[0] == Approx(1.0 + 1000 / 10e9 + 1e-6));
  CHECK(u.proxy_s[2] == Approx(8.0 + 1000 / 10e9 + 1e-6));
}

TEST_CASE("sampling units: a message across iterations or a request pending at a head is refused with the reason",
          "[models]")
{
  // Rank 0 sends in iteration i, rank 1 receives it in iteration i+1.
  ScriptedSource crossing(2, 6, [](int rank, std::uint64_t i) {
    if (rank == 0)
      return std::vector<CallRecord>{compute(1e6), send(1, 8)};
    std::vector<CallRecord> b{compute(1e6)};
    if (i > 0)
      b.push_back(recv(0, 8));
    return b;
  });
  const Units a = collect_units(crossing, 0);
  CHECK_THAT(a.why_not, Catch::Contains("messages cross from one iteration to another"));

  // An irecv posted in one iteration and waited in the next.
  ScriptedSource pending(1, 6, [](int, std::uint64_t i) {
    CallRecord post;
    post.op = Op::Irecv;
    post.function = 4;
    post.peer = 0;
    post.request = static_cast<std::int64_t>(i);
    std::vector<CallRecord> b{compute(1e6), post};
    if (i > 0) {
      CallRecord w;
      w.op = Op::Wait;
      w.function = 5;
      w.request = static_cast<std::int64_t>(i - 1);
      b.insert(b.begin(), w);
    }
    return b;
  });
  CHECK_THAT(collect_units(pending, 0).why_not, Catch::Contains("requests pending at the head of iteration 1"));

  ScriptedSource short_loop(2, 3, ring_body);
  CHECK_THAT(collect_units(short_loop, 0).why_not, Catch::Contains("too few units"));
}

TEST_CASE("sampling windows: a loop of too few iterations is cut at the collectives on MPI_COMM_WORLD", "[models]")
{
  // 3 iterations: too few units of the loop; 30 collectives on world: 29 windows between them.
  ScriptedSource src(2, 3, solver_body);
  CHECK_THAT(collect_units(src, 0).why_not, Catch::Contains("too few units"));
  const Units u = choose_units(src, 0, false);
  REQUIRE(u.why_not.empty());
  CHECK(u.kind == UnitKind::Windows);
  CHECK_THAT(u.loop, Catch::Contains("windows between collectives on communicators of every rank"));
  CHECK(u.loop_iterations == 30);
  REQUIRE(u.count == 29);
  // A window: the other communicator's allreduce, the next compute, the world allreduce; on both ranks.
  CHECK(u.calls == 2 * (1 + 3 * 30));
  CHECK(u.unit_calls == 2 * 3 * 29);
  const auto col = [&](const std::string& name) {
    auto it = std::find(u.feature_names.begin(), u.feature_names.end(), name);
    REQUIRE(it != u.feature_names.end());
    return static_cast<std::size_t>(it - u.feature_names.begin());
  };
  CHECK(u.features[0][col("work compute")] == 2 * 5e9);  // window 0 holds the second (odd) compute
  CHECK(u.features[1][col("work compute")] == 2 * 1e9);
  CHECK(u.features[0][col("calls MPI_Allreduce")] == 4);
  // The phases see the alternation.
  const Phases p = form_phases(u);
  CHECK(p.k == 2);
  CHECK(p.of_unit[0] != p.of_unit[1]);
  CHECK(p.of_unit[0] == p.of_unit[2]);

  // The emulated source marks the same heads: after each world collective, the inner loop's hidden.
  const std::unique_ptr<TraceSource> marked = unit_source(src, u);
  REQUIRE(marked != nullptr);
  CHECK(marked->steady_loop().iterations == 30);
  CallStreamPtr stream = marked->open(1);
  std::vector<std::uint64_t> heads;
  std::vector<Op> before_head;
  CallRecord c, last;
  for (;;) {
    if (auto h = stream->loop_head()) {
      heads.push_back(*h);
      before_head.push_back(last.op);
      CHECK(last.comm == kWorldComm);
    }
    if (not stream->next(c))
      break;
    last = c;
  }
  REQUIRE(heads.size() == 30);
  for (std::size_t i = 0; i < heads.size(); ++i)
    CHECK(heads[i] == i);
  CHECK(std::all_of(before_head.begin(), before_head.end(), [](Op op) { return op == Op::Allreduce; }));
}

TEST_CASE("sampling windows: a loop of enough iterations holding the calls is kept and windows that differ by rank are refused",
          "[models]")
{
  ScriptedSource loop(2, 30, solver_body);
  const Units kept = choose_units(loop, 0, false);
  CHECK(kept.kind == UnitKind::Loop);
  CHECK(kept.count == 29);

  // The loop holds few of the calls: its last iteration (no unit) is 20 times longer.
  ScriptedSource tail(2, 25, [](int r, std::uint64_t i) {
    std::vector<CallRecord> b = solver_body(r, i);
    if (i == 24)
      for (int k = 0; k < 20; ++k) {
        const std::vector<CallRecord> more = solver_body(r, i);
        b.insert(b.end(), more.begin(), more.end());
      }
    return b;
  });
  const Units cut = choose_units(tail, 0, false);
  CHECK(cut.kind == UnitKind::Windows);
  CHECK(cut.unit_calls > collect_units(tail, 0).unit_calls);

  // Rank 1 makes one world collective more than rank 0: no window is the same point on both.
  ScriptedSource uneven(2, 3, [](int r, std::uint64_t i) {
    std::vector<CallRecord> b = solver_body(r, i);
    if (r == 1 && i == 1)
      b.push_back(allreduce());
    return b;
  });
  const Units no = collect_window_units(uneven, 0);
  CHECK_THAT(no.why_not, Catch::Contains("different numbers of collectives on communicators of every rank (rank 0: 30, rank 1: 31)"));
  const Units chosen = choose_units(uneven, 0, false);
  CHECK(chosen.kind == UnitKind::Loop);
  CHECK_THAT(chosen.why_not, Catch::Contains("too few units"));
  CHECK_THAT(chosen.why_not, Catch::Contains("cannot be sampled either: the ranks make different numbers"));

  ScriptedSource none(2, 3, ring_body);
  CHECK_THAT(collect_window_units(none, 0).why_not, Catch::Contains("rank 0 makes 0 collectives on communicators of every rank"));
}

TEST_CASE("sampling windows: collectives on a duplicate of world and on a split every rank gives one colour cut windows",
          "[models]")
{
  const auto creation = [](Op op, std::int32_t parent, std::int32_t made, std::int32_t colour) {
    CallRecord c;
    c.op = op;
    c.function = op == Op::CommDup ? 7 : 8;
    c.comm = parent;
    c.new_comm = made;
    c.color = colour;
    return c;
  };
  // Iteration 0 makes: 1 = a duplicate of world, 2 = a split of world with one colour (MPI_Cart_create of
  // every rank, as the hook records it), 4 = a split of world by rank parity (rows), 5 = a duplicate of 4.
  // Every iteration: an allreduce on each.
  ScriptedSource src(4, 3, [&](int rank, std::uint64_t i) {
    std::vector<CallRecord> b;
    if (i == 0) {
      b.push_back(creation(Op::CommDup, kWorldComm, 1, 0));
      b.push_back(creation(Op::CommSplit, kWorldComm, 2, 0));
      b.push_back(creation(Op::CommSplit, kWorldComm, 4, rank % 2));
      b.push_back(creation(Op::CommDup, 4, 5, 0));
    }
    for (std::int32_t comm : {1, 2, 4, 5}) {
      b.push_back(compute(1e9));
      b.push_back(allreduce(comm));
    }
    return b;
  });
  const Units u = collect_window_units(src, 0);
  REQUIRE(u.why_not.empty());
  // Heads: the three creations on world, then the allreduces on 1 and 2 in each iteration.
  CHECK(u.loop_iterations == 3 + 2 * 3);
  CHECK(u.partial_splits == std::vector<std::string>{"0.2"});
  const std::unique_ptr<TraceSource> marked = unit_source(src, u);
  for (int rank : {0, 3}) {
    CallStreamPtr stream = marked->open(rank);
    std::vector<std::int32_t> cut_after;
    CallRecord c, last;
    for (;;) {
      if (stream->loop_head())
        cut_after.push_back(last.op == Op::Allreduce ? last.comm : -static_cast<std::int32_t>(last.op));
      if (not stream->next(c))
        break;
      last = c;
    }
    const auto split = -static_cast<std::int32_t>(Op::CommSplit), dup = -static_cast<std::int32_t>(Op::CommDup);
    CHECK(cut_after == std::vector<std::int32_t>{dup, split, split, 1, 2, 1, 2, 1, 2});
  }

  // A split that leaves a rank out (colour MPI_UNDEFINED, -1) holds not every rank either.
  ScriptedSource undefined(2, 3, [&](int rank, std::uint64_t i) {
    std::vector<CallRecord> b;
    if (i == 0)
      b.push_back(creation(Op::CommSplit, kWorldComm, 1, rank == 0 ? 0 : -1));
    b.push_back(compute(1e9));
    b.push_back(allreduce(kWorldComm));
    if (rank == 0)
      b.push_back(allreduce(1));
    return b;
  });
  const Units v = collect_window_units(undefined, 0);
  REQUIRE(v.why_not.empty());
  CHECK(v.loop_iterations == 1 + 3);
  CHECK(v.partial_splits == std::vector<std::string>{"0.0"});
}

TEST_CASE("sampling phases: two separated groups make two phases and alike units one", "[models]")
{
  std::vector<std::vector<double>> rows;
  std::vector<double> proxy;
  for (int i = 0; i < 60; ++i) {
    const bool heavy = i % 4 == 3;
    const double wobble = 0.01 * (i % 5);
    rows.push_back({heavy ? 10.0 + wobble : 1.0 + wobble, heavy ? 0.0 : 5.0, 7.0});
    proxy.push_back(heavy ? 10.0 : 1.0);
  }
  const Phases p = form_phases(units_of(rows, proxy));
  REQUIRE(p.k == 2);
  CHECK(p.of_unit[0] == 0);  // numbered by first appearance
  CHECK(p.of_unit[3] == 1);
  for (int i = 0; i < 60; ++i)
    CHECK(p.of_unit[static_cast<std::size_t>(i)] == (i % 4 == 3 ? 1 : 0));
  // The constant feature is left out; the heavy phase is told apart by its first feature.
  CHECK(p.features.size() == 2);
  CHECK(p.distinct[1] == std::vector<std::string>{"calls f0"});
  CHECK(p.silhouette.size() >= 2);
  CHECK(p.silhouette[0] == 0.0);

  const Phases same = form_phases(units_of(std::vector<std::vector<double>>(30, {3.0, 4.0}), std::vector<double>(30, 1.0)));
  CHECK(same.k == 1);
  CHECK(same.features.empty());
  // Deterministic.
  CHECK(form_phases(units_of(rows, proxy)).of_unit == p.of_unit);
}

TEST_CASE("sampling plan: Neyman allocation with two per phase and warm-ups before the sampled units", "[models]")
{
  // Phase 0: 80 units whose proxy varies (1 or 3); phase 1: 20 alike.
  std::vector<std::vector<double>> rows;
  std::vector<double> proxy;
  for (int i = 0; i < 100; ++i) {
    const bool second = i >= 80;
    rows.push_back({second ? 50.0 : 1.0});
    proxy.push_back(second ? 5.0 : (i % 2 == 0 ? 1.0 : 3.0));
  }
  const Units u = units_of(rows, proxy);
  const Phases ph = form_phases(u);
  REQUIRE(ph.k == 2);
  Request r;
  r.size = 20;
  r.seed = 7;
  const Plan plan = plan_sample(u, ph, r);
  // Two phases, then the first two units taken whole.
  REQUIRE(plan.phase_sampled.size() == 3);
  CHECK(plan.transient == 2);
  CHECK(plan.formed == std::vector<int>{0, 1, -1});
  CHECK(plan.phase_units == std::vector<std::uint64_t>{78, 20, 2});
  CHECK(plan.phase[0] == 2);
  CHECK(plan.phase[1] == 2);
  CHECK(plan.phase[2] == 0);
  // Eq. 1: every sample beyond the minimum goes to the phase that varies.
  CHECK(plan.phase_sampled[0] == 18);
  CHECK(plan.phase_sampled[1] == 2);
  CHECK(plan.phase_sampled[2] == 2);
  CHECK(plan.role[0] == Plan::Sampled);
  CHECK(plan.role[1] == Plan::Sampled);
  std::uint64_t sampled = 0;
  for (std::size_t i = 0; i < plan.role.size(); ++i) {
    if (plan.role[i] != Plan::Sampled)
      continue;
    ++sampled;
    if (i > 0)
      CHECK(plan.role[i - 1] != Plan::Skipped);  // its warm-up
  }
  CHECK(sampled == 22);
  // The same seed draws the same units; another seed others.
  CHECK(plan_sample(u, ph, r).role == plan.role);
  r.seed = 8;
  CHECK(plan_sample(u, ph, r).role != plan.role);
  // A size below two per phase is raised, and says so.
  r.size = 1;
  const Plan raised = plan_sample(u, ph, r);
  CHECK(raised.phase_sampled == std::vector<std::uint64_t>{2, 2, 2});
  CHECK_THAT(raised.note, Catch::Contains("raised to 4"));
  // auto: five per phase at least, more where the proxy varies and the margin is tight.
  Request a;
  a.margin = 0.005;
  const Plan automatic = plan_sample(u, ph, a);
  CHECK(automatic.automatic);
  CHECK(automatic.phase_sampled[1] == 5);
  CHECK(automatic.phase_sampled[2] == 2);
  CHECK(automatic.phase_sampled[0] > 5);
  a.margin = 0.5;
  CHECK(plan_sample(u, ph, a).phase_sampled == std::vector<std::uint64_t>{5, 5, 2});
}

TEST_CASE("sampling plan: a phase's sampled windows get one and two warm-ups in turn and iterations one", "[models]")
{
  // 400 alike units, 40 sampled: one per block of 10, so that a warm-up rarely meets another sampled unit.
  Units u = units_of(std::vector<std::vector<double>>(400, {1.0}), std::vector<double>(400, 1.0));
  const Phases ph = form_phases(u);
  Request r;
  r.size = 40;
  r.seed = 3;
  // How many warm-ups each sampled unit after a skip has (1 or 2), in loop order.
  const auto warm_ups = [](const Plan& plan) {
    std::vector<int> n;
    for (std::size_t i = 1; i < plan.role.size(); ++i) {
      if (plan.role[i] != Plan::Sampled || plan.role[i - 1] != Plan::WarmUp)
        continue;
      n.push_back(i >= 2 && plan.role[i - 2] == Plan::WarmUp ? 2 : 1);
    }
    return n;
  };
  u.kind = UnitKind::Loop;
  const Plan iterations = plan_sample(u, ph, r);
  const std::vector<int> loop = warm_ups(iterations);
  CHECK(loop.size() > 30);
  CHECK(std::count(loop.begin(), loop.end(), 2) == 0);
  u.kind = UnitKind::Windows;
  const Plan windows = plan_sample(u, ph, r);
  const std::vector<int> w = warm_ups(windows);
  CHECK(w.size() > 30);
  // One phase: one and two in turn, from the seed's start.
  for (std::size_t k = 1; k < w.size(); ++k)
    CHECK(w[k] != w[k - 1]);
  // The same units are sampled either way; only the warm-ups differ. Deterministic for a seed.
  REQUIRE(windows.role.size() == iterations.role.size());
  for (std::size_t i = 0; i < windows.role.size(); ++i)
    CHECK((windows.role[i] == Plan::Sampled) == (iterations.role[i] == Plan::Sampled));
  CHECK(plan_sample(u, ph, r).role == windows.role);
}

TEST_CASE("sampling estimate: the stratified total and its standard error as Eq. 2-5 give them", "[models]")
{
  Plan plan;
  plan.phases = 2;
  plan.confidence = 0.95;
  // Phase 0: units 0-5, sampled 1, 3, 5; phase 1: units 6-9, sampled 6, 8.
  plan.phase = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  plan.role.assign(10, Plan::Skipped);
  for (int u : {1, 3, 5, 6, 8})
    plan.role[static_cast<std::size_t>(u)] = Plan::Sampled;
  std::vector<double> v(10, 1000.0);  // units not sampled are never read
  v[1] = 1;
  v[3] = 2;
  v[5] = 6;
  v[6] = 10;
  v[8] = 14;
  const Estimate e = estimate_total(plan, v);
  // Means 3 and 12: 6*3 + 4*12 = 66. Spreads by successive differences in loop order:
  // s0^2 = ((2-1)^2 + (6-2)^2) / (2*2) = 4.25, s1^2 = (14-10)^2 / (2*1) = 8.
  CHECK(e.total == Approx(66));
  CHECK(e.phases[0].std == Approx(std::sqrt(4.25)));
  CHECK(e.phases[1].std == Approx(std::sqrt(8.0)));
  // var = 36*(1-3/6)*4.25/3 + 16*(1-2/4)*8/2 = 25.5 + 32 = 57.5.
  CHECK(e.standard_error == Approx(std::sqrt(57.5)));
  // Satterthwaite: 57.5^2 / (25.5^2/2 + 32^2/1) degrees of freedom; Student's t there.
  const double df = 57.5 * 57.5 / (25.5 * 25.5 / 2 + 32.0 * 32.0);
  CHECK(e.degrees_of_freedom == Approx(df));
  CHECK(e.half_width == Approx(t_of(0.95, df) * std::sqrt(57.5)));
  // In loop order 1, 3, 2: differences 2 and -1, s0^2 = (4 + 1) / (2*2).
  v[1] = 1;
  v[3] = 3;
  v[5] = 2;
  CHECK(estimate_total(plan, v).phases[0].std == Approx(std::sqrt(5.0 / 4.0)));
  CHECK(t_of(0.95, 4) == Approx(2.776445105));
  CHECK(t_of(0.95, std::numeric_limits<double>::infinity()) == Approx(1.959963985));
  CHECK(z_of(0.99) == Approx(2.575829304));
  // Every unit sampled: no sampling error.
  plan.role.assign(10, Plan::Sampled);
  CHECK(estimate_total(plan, v).standard_error == 0.0);
}

TEST_CASE("input sensitivity: a phase whose cost scales with the input is sensitive and one that does not is not",
          "[models]")
{
  // Two phases told apart by their calls: A (f0 called once, cost 1 s whatever the input) and B (f1 called
  // twice, cost 2 s in training, 4 s at the larger input, its work doubled). Alternating units.
  auto input = [](double b_cost, double b_work, double jitter) {
    Units u;
    u.feature_names = {"calls f0", "calls f1", "work f0", "work f1"};
    for (int i = 0; i < 40; ++i) {
      const double wobble = jitter * ((i / 2) % 3 - 1);
      if (i % 2 == 0) {
        u.features.push_back({1, 0, 1e9, 0});
        u.proxy_s.push_back(1.0 + wobble);
      } else {
        u.features.push_back({0, 2, 0, b_work});
        u.proxy_s.push_back(b_cost + 2 * wobble);
      }
    }
    u.count = 40;
    u.loop_iterations = 41;
    return u;
  };
  const Units train = input(2.0, 2e9, 0.01);
  const Phases ph = form_phases(train);
  REQUIRE(ph.k == 2);
  const int a = ph.of_unit[0], b = ph.of_unit[1];
  // The reference input: B's cost and work doubled, A's the same; and a third input like training.
  const auto s = input_sensitivity(train, ph, {input(4.0, 4e9, 0.01), input(2.0, 2e9, 0.01)});
  REQUIRE(s.size() == 2);
  CHECK_FALSE(s[static_cast<std::size_t>(a)].sensitive);
  CHECK(s[static_cast<std::size_t>(b)].sensitive);
  CHECK(s[static_cast<std::size_t>(b)].units == std::vector<std::uint64_t>{20, 20});
  CHECK(s[static_cast<std::size_t>(b)].mean[0] == Approx(4.0).epsilon(0.01));
  CHECK(s[static_cast<std::size_t>(b)].train_mean == Approx(2.0).epsilon(0.01));
  CHECK(s[static_cast<std::size_t>(b)].sensitive_functions == std::vector<std::string>{"f1"});
  CHECK(s[static_cast<std::size_t>(a)].sensitive_functions.empty());
  // A spread that grows by more than 10 % alone makes a phase sensitive (Eq. 6's second test).
  const auto spread = input_sensitivity(train, ph, {input(2.0, 2e9, 0.05)});
  CHECK(spread[static_cast<std::size_t>(a)].sensitive);
}

TEST_CASE("input sensitivity: phases with the same calls are told apart by bytes relative to their input",
          "[models]")
{
  // Every unit makes the same calls; one in five sends four times the bytes of the others (a rebuild
  // step). At the larger input every unit sends eight times more: by raw bytes every unit of it is nearer
  // the heavy phase; within its input, one in five still stands out, and joins the heavy phase alone.
  auto input = [](double scale, int units) {
    Units u;
    u.feature_names = {"calls MPI_Send", "bytes MPI_Send", "work compute"};
    for (int i = 0; i < units; ++i) {
      const bool heavy = i % 5 == 0;
      u.features.push_back({2, scale * (heavy ? 4e6 : 1e6), scale * 1e9});
      u.proxy_s.push_back(scale * (heavy ? 1.5 : 1.0));
    }
    u.count = static_cast<std::uint64_t>(units);
    u.loop_iterations = u.count + 1;
    return u;
  };
  const Units train = input(1.0, 40);
  const Phases ph = form_phases(train);
  REQUIRE(ph.k == 2);
  const auto heavy = static_cast<std::size_t>(ph.of_unit[0]), light = static_cast<std::size_t>(ph.of_unit[1]);
  const auto s = input_sensitivity(train, ph, {input(8.0, 20)});
  CHECK(s[heavy].units == std::vector<std::uint64_t>{4});
  CHECK(s[light].units == std::vector<std::uint64_t>{16});
  CHECK(s[heavy].compared == 1);
  CHECK(s[light].compared == 1);
  CHECK(s[heavy].sensitive);
  CHECK(s[light].sensitive);
  // An input with no unit like the heavy ones (none stands out): the heavy phase is not compared, and is
  // not called insensitive for it.
  Units flat = input(1.0, 10);
  for (auto& row : flat.features)
    row[1] = 1e6;
  const auto t = input_sensitivity(train, ph, {flat});
  CHECK(t[heavy].compared == 0);
  CHECK_FALSE(t[heavy].sensitive);
  CHECK(t[light].compared == 1);
}

TEST_CASE("sampling plan: auto's second pass sizes from the observed spread and keeps the first pass's count", "[models]")
{
  // Two phases whose proxy is flat: auto's first pass takes the least per phase. The emulated times of
  // phase 0 turned out to vary: the second pass gives it more, and no phase fewer than before.
  std::vector<std::vector<double>> rows;
  std::vector<double> proxy;
  for (int i = 0; i < 200; ++i) {
    rows.push_back({i >= 160 ? 50.0 : 1.0});
    proxy.push_back(i >= 160 ? 5.0 : 1.0);
  }
  const Units u = units_of(rows, proxy);
  const Phases ph = form_phases(u);
  REQUIRE(ph.k == 2);
  Request r;
  r.seed = 11;
  r.margin = 0.01;
  const Plan first = plan_sample(u, ph, r);
  REQUIRE(first.phase_sampled.size() == 3);
  CHECK(first.phase_sampled[0] == 5);
  CHECK(first.phase_sampled[1] == 5);

  Request second = r;
  second.observed = Request::Observed{{1.0, 5.0}, {0.4, 0.01}, {5, 5}, 0.05};
  const Plan next = plan_sample(u, ph, second);
  CHECK(next.phase_sampled[0] > 20);
  CHECK(next.phase_sampled[1] >= 5);
  CHECK_THAT(next.note, Catch::Contains("second pass") && Catch::Contains("half-width of 5 %"));
  // One unit per contiguous block of each phase: the sample spans the loop.
  std::uint64_t sampled_before_half = 0, sampled = 0;
  for (std::size_t i = 2; i < 160; ++i)
    if (next.role[i] == Plan::Sampled) {
      ++sampled;
      sampled_before_half += i < 81 ? 1 : 0;
    }
  CHECK(sampled == next.phase_sampled[0]);
  CHECK(sampled_before_half * 2 >= sampled - 1);
  CHECK(sampled_before_half * 2 <= sampled + 1);
  // The strata must be the first pass's.
  Request wrong = r;
  wrong.observed = Request::Observed{{1.0}, {0.4}, {5}, 0.05};
  CHECK_THROWS_AS(plan_sample(u, ph, wrong), gridcast::InternalError);
}
