// Tests of the grid_loop rank expression: one call site that addresses the face neighbours of an
// MPI_Dims_create grid in turn, its axis and direction following the loop index (LAMMPS' CommBrick
// swaps). See docs/reference/trace-model.md, "Peers whose axis follows the loop index".
#include "../models/models_support.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

/// The face neighbour of `rank` along `axis` at distance `step` of the dims_create(np, 3) grid; -1 off a
/// non-periodic edge. Written from the coordinates, independently of RankExpr.
int neighbour(int rank, int np, int axis, int step, bool periodic)
{
  auto d = dims_create(np, 3);
  auto c = grid_coords(rank, d);
  int v  = c[static_cast<std::size_t>(axis)] + step;
  const int e = d[static_cast<std::size_t>(axis)];
  if (periodic)
    v = (v + e) % e;
  else if (v < 0 || v >= e)
    return -1;
  c[static_cast<std::size_t>(axis)] = v;
  return (c[0] * d[1] + c[1]) * d[2] + c[2];
}

/// LAMMPS' swap list: for each axis of extent > 1, swap 2a sends down and receives from up, swap 2a+1
/// the reverse. (send peer, receive peer) of swap `i`.
std::pair<int, int> swap_peers(int rank, int np, int i, bool periodic)
{
  const int axis = i / 2;
  const bool even = i % 2 == 0;
  return {neighbour(rank, np, axis, even ? -1 : 1, periodic), neighbour(rank, np, axis, even ? 1 : -1, periodic)};
}

int active_axes(int np)
{
  int n = 0;
  for (int e : dims_create(np, 3))
    n += e > 1 ? 1 : 0;
  return n;
}

std::vector<RankObservation> observe(const std::vector<int>& nps, bool reverse_sweep, bool recv, bool periodic)
{
  std::vector<RankObservation> o;
  for (int np : nps)
    for (int r = 0; r < np; ++r) {
      const int swaps = 2 * active_axes(np);
      for (int j = 0; j < swaps; ++j) {
        // The reverse sweep runs the swaps backwards, receiving where the forward one sent.
        const int i     = reverse_sweep ? swaps - 1 - j : j;
        auto [send, rc] = swap_peers(r, np, i, periodic);
        const int v     = reverse_sweep ? (recv ? send : rc) : (recv ? rc : send);
        if (v >= 0)
          o.push_back({r, np, {static_cast<std::uint64_t>(j)}, v});
      }
    }
  return o;
}

/// A halo exchange in LAMMPS' form: per time step, a forward sweep (irecv from the receive peer, send to
/// the send peer, wait) over 2 swaps per axis of extent > 1, then the reverse sweep; all tag 0.
class Halo final : public TraceSource {
public:
  /// `back_to_back`: LAMMPS' time steps: the forward sweep, then the reverse one, 10 steps in a row with no
  /// other call between them (one loop of 10 x 2 sweeps), then an allreduce.
  Halo(int nw, int np, bool back_to_back = false) : nw_(nw), np_(np), back_to_back_(back_to_back) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("halo");
    s->add(Op::Init, "MPI_Init");
    std::int64_t req  = 0;
    const int swaps   = 2 * active_axes(np_);
    const auto bytes  = static_cast<std::uint64_t>(8 * nw_ * nw_);
    auto swap = [&](int recv_peer, int send_peer) {
      CallRecord& a = s->add(Op::Irecv, "MPI_Irecv");
      a.peer        = recv_peer;
      a.bytes       = bytes;
      a.request     = req;
      CallRecord& b = s->add(Op::Send, "MPI_Send");
      b.peer        = send_peer;
      b.bytes       = bytes;
      s->add(Op::Wait, "MPI_Wait").request = req++;
    };
    for (int step = 0; step < (back_to_back_ ? 10 * nw_ : nw_); ++step) {
      for (int i = 0; i < swaps; ++i) {
        auto [send, recv] = swap_peers(rank, np_, i, true);
        swap(recv, send);
      }
      if (not back_to_back_)
        s->add(Op::Compute, "compute").flops = 1000.0 * nw_;
      for (int i = swaps - 1; i >= 0; --i) {
        auto [send, recv] = swap_peers(rank, np_, i, true);
        swap(send, recv);
      }
      if (not back_to_back_ || step % 10 == 9)
        s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
  bool back_to_back_;
};

using gridcast::test::require_same_streams;

}  // namespace

TEST_CASE("grid loop: a swap list's peers are the neighbour along axis i div 2", "[trace_model]")
{
  // Training shapes 2x2x1, 2x2x2, 4x2x2: the axis of extent 1 makes no swap.
  const std::vector<int> train = {4, 8, 16};
  auto fwd_recv = fit_rank_exprs(observe(train, false, true, true));
  REQUIRE_FALSE(fwd_recv.empty());
  CHECK(fwd_recv.front().text() == "grid3p(r, axis i0 div 2 of extent > 1, +1 -1)");
  auto fwd_send = fit_rank_exprs(observe(train, false, false, true));
  REQUIRE_FALSE(fwd_send.empty());
  CHECK(fwd_send.front().text() == "grid3p(r, axis i0 div 2 of extent > 1, -1 +1)");
  auto rev_recv = fit_rank_exprs(observe(train, true, true, true));
  REQUIRE_FALSE(rev_recv.empty());
  CHECK(rev_recv.front().text() == "grid3p(r, axis reversed i0 div 2 of extent > 1, -1 +1)");
  auto rev_send = fit_rank_exprs(observe(train, true, false, true));
  REQUIRE_FALSE(rev_send.empty());
  CHECK(rev_send.front().text() == "grid3p(r, axis reversed i0 div 2 of extent > 1, +1 -1)");

  // Each extrapolates to shapes training never had: 4x4x4, 8x8x4, 3x2x2, 5x1x1 (one walked axis).
  for (int np : {64, 256, 12, 5})
    for (bool rev : {false, true})
      for (bool recv : {false, true}) {
        const RankExpr& e = rev ? (recv ? rev_recv.front() : rev_send.front())
                                : (recv ? fwd_recv.front() : fwd_send.front());
        for (const RankObservation& o : observe({np}, rev, recv, true)) {
          INFO("np " << np << " rank " << o.rank << " i " << o.loop[0] << " " << e.text());
          CHECK(e.eval(o.rank, o.np, o.loop.data(), 1) == o.value);
        }
      }
  // Past the last walked axis there is no neighbour: 2 axes of extent > 1 at np 4, so no swap 4.
  const std::uint64_t i4 = 4;
  CHECK_FALSE(fwd_recv.front().eval(0, 4, &i4, 1).has_value());
}

TEST_CASE("grid loop: non-periodic grids, every axis walked, one swap per axis", "[trace_model]")
{
  // A non-periodic sweep has no neighbour off the edge; periodic and non-periodic agree elsewhere (and
  // share a target: training cannot tell them apart where it never crossed an edge).
  RankExpr e{RankExpr::Kind::GridLoop, 1};
  e.dims     = 3;
  e.block    = 2;
  e.periodic = false;
  const std::uint64_t i0 = 0, i1 = 1;
  // np 16 = 4x2x2: rank 12 is at c0 = 3, the upper edge of axis 0.
  CHECK_FALSE(e.eval(12, 16, &i0, 1).has_value());
  CHECK(e.eval(12, 16, &i1, 1) == 8);
  CHECK(e.eval(4, 16, &i0, 1) == 8);
  auto obs = observe({4, 8, 16}, false, true, false);
  auto all = fit_rank_exprs(obs);
  REQUIRE_FALSE(all.empty());
  CHECK(all.front().kind == RankExpr::Kind::GridLoop);
  for (const RankObservation& o : observe({64}, false, true, false))
    CHECK(all.front().eval(o.rank, o.np, o.loop.data(), 1) == o.value);

  // Every axis walked, extent 1 included (its neighbour is the rank itself), one swap per axis: a code
  // that sends up along x, y, z in turn.
  std::vector<RankObservation> up;
  for (int np : {4, 8, 16})
    for (int r = 0; r < np; ++r)
      for (int axis = 0; axis < 3; ++axis)
        up.push_back({r, np, {static_cast<std::uint64_t>(axis)}, neighbour(r, np, axis, 1, true)});
  auto f = fit_rank_expr(up);
  REQUIRE(f);
  CHECK(f->text() == "grid3p(r, axis i0, +1)");
  const std::uint64_t i2 = 2;
  CHECK(f->eval(3, 4, &i2, 1) == 3);  // 2x2x1: axis 2 has extent 1
}

TEST_CASE("grid loop: a fixed neighbour is not taken for a loop-dependent one", "[trace_model]")
{
  // A loop that always sends to the upper neighbour along axis 1: an expression that ignores the index.
  std::vector<RankObservation> o;
  for (int np : {8, 12, 16})
    for (int r = 0; r < np; ++r)
      for (std::uint64_t i : {0u, 1u, 2u})
        o.push_back({r, np, {i}, neighbour(r, np, 1, 1, true)});
  auto e = fit_rank_expr(o);
  REQUIRE(e);
  CHECK(e->text() == "r xor 2");  // axis 1 has extent 2 and stride 2 in 2x2x2, 3x2x2, 4x2x2
  // Seen in iteration 0 only, a walk over the axes would explain it too (axis i0 = 0 at i0 = 0); the plain
  // neighbour, which does not change with the index, comes first.
  std::vector<RankObservation> first;
  for (int np : {8, 12, 16})
    for (int r = 0; r < np; ++r)
      first.push_back({r, np, {0u}, neighbour(r, np, 0, 1, true)});
  auto all = fit_rank_exprs(first);
  REQUIRE(all.size() > 1);
  CHECK(all.front().kind != RankExpr::Kind::GridLoop);
  CHECK(all.back().kind == RankExpr::Kind::GridLoop);
}

TEST_CASE("grid loop: a LAMMPS-like halo exchange fits and extrapolates to 4x4x4 and 8x8x4", "[trace_model]")
{
  // Training shapes with 3 walked axes (2x2x2, 3x2x2, 4x2x2): the swap count is the same everywhere, so
  // the peers alone decide. The peers come out as grid_loop expressions and synthesis at np 64 and 256
  // gives the generator's streams call for call.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "halo", {8, 12, 16}, {2, 3, 4}, TraceEncoding::Binary,
                                           [](int nw, int np) { return Halo(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 1);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"expr\": \"grid_loop\"") &&
                       Catch::Contains("grid3p(r, axis reversed i0 div 2 of extent > 1, -1 +1)"));
  require_same_streams(SynthSource(model, {5, 64}), Halo(5, 64));
  require_same_streams(SynthSource(model, {3, 256}), Halo(3, 256));

  // Through model.json, byte for byte.
  write_model(dir / "m.json", *model);
  TraceModel again = read_model(dir / "m.json");
  CHECK(model_to_json(again).dump(2) == json);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(std::move(again)), {4, 64}), Halo(4, 64));
}

TEST_CASE("grid loop: model.json rejects a malformed grid_loop", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "halo", {8, 16}, {2, 3}, TraceEncoding::Binary,
                                           [](int nw, int np) { return Halo(nw, np); });
  const std::string json = model_to_json(fit_trace_model(profiles)).dump(2);
  const std::string good = "\"block\": 2";
  const auto at = json.find(good);
  REQUIRE(at != std::string::npos);
  for (const std::string& bad : {std::string("\"block\": 3"), std::string("\"block\": \"2\"")}) {
    std::string broken = json;
    broken.replace(at, good.size(), bad);
    gridcast::test::write_file(dir / "bad.json", broken);
    CHECK_THROWS_AS(read_model(dir / "bad.json"), gridcast::InputError);
    try {
      read_model(dir / "bad.json");
    } catch (const gridcast::InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("block") && Catch::Contains("bad.json"));
    }
  }
}

TEST_CASE("grid loop: a swap count that follows the grid's shape is fitted on the shape", "[trace_model]")
{
  // 2 swaps per axis of extent > 1: 4 at 2x2x1 (np 4), 6 at 2x2x2 and 4x2x2. No formula of Np says 6 at
  // np 64 (4x4x4) and 4 at np 6 (3x2x1); the grid shape does.
  CHECK(fit_grid_formula({{2, 4, 4}, {2, 8, 6}, {2, 16, 6}})->text() == "2*axes3>1(Np)");
  CHECK(fit_grid_formula({{2, 4, 0}, {2, 8, 0}, {2, 16, 1}, {3, 16, 1}})->text() == "axes3>2(Np)");
  CHECK(fit_grid_formula({{2, 2, 1}, {2, 4, 2}, {2, 8, 3}, {2, 16, 4}})->text() == "axes3>1(Np) + axes3>2(Np)");
  CHECK(fit_grid_formula({{2, 4, 4}, {2, 8, 6}, {2, 16, 9}})->text() == "2*axes3>1(Np) + 3*axes3>2(Np)");
  CHECK_FALSE(fit_grid_formula({{2, 8, 6}, {2, 16, 7}, {2, 32, 9}}).has_value());  // 4x4x2: 8 if linear
  CHECK_FALSE(fit_grid_formula({{2, 4, 4.5}, {2, 8, 6}}).has_value());

  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "halo", {4, 8, 16}, {2, 3, 4}, TraceEncoding::Binary,
                                           [](int nw, int np) { return Halo(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 1);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"text\": \"2*axes3>1(Np)\"") && Catch::Contains("\"axes3>1(Np)\""));
  for (int np : {64, 256, 6, 2})
    require_same_streams(SynthSource(model, {3, np}), Halo(3, np));
  write_model(dir / "m.json", *model);
  CHECK(model_to_json(read_model(dir / "m.json")).dump(2) == json);
}

namespace {

/// A halo exchange plus one more collective per time step for every axis of more than 2 ranks (a code
/// path chosen per axis by its extent, as LAMMPS' second exchange round): what the model cannot express.
class PerAxisBranch final : public TraceSource {
public:
  PerAxisBranch(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("branch");
    s->add(Op::Init, "MPI_Init");
    int wide = 0;
    for (int e : dims_create(np_, 3))
      wide += e > 2 ? 1 : 0;
    for (int step = 0; step < 4 * nw_; ++step) {
      CallRecord& m = s->add(Op::Sendrecv, "MPI_Sendrecv");
      m.peer        = neighbour(rank, np_, 0, -1, true);
      m.src         = neighbour(rank, np_, 0, 1, true);
      m.bytes = m.recv_bytes = 64;
      for (int a = 0; a < wide; ++a)
        s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
      s->add(Op::Compute, "compute").flops = 1000.0;
    }
    s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;  // every rank count has the function
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

}  // namespace

TEST_CASE("grid loop: calls chosen per axis by its extent are refused, naming the grid shapes", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "branch", {4, 8, 16}, {2, 3}, TraceEncoding::Binary,
                                           [](int nw, int np) { return PerAxisBranch(nw, np); });
  try {
    fit_trace_model(profiles);
    FAIL("fit accepted a per-axis branch");
  } catch (const gridcast::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("no rank-to-group rule fits") &&
                             Catch::Contains("(np 4 = 2x2x1, np 8 = 2x2x2, np 16 = 4x2x2)") &&
                             Catch::Contains("a block of calls chosen per axis by its extent has no form"));
  }
}

TEST_CASE("grid loop: forward and reverse sweeps back to back are one loop, there and back", "[trace_model]")
{
  // 10 steps of (forward sweep, reverse sweep) with nothing between them fold into one loop of
  // 10 x 2 x 2 swaps per walked axis: its peers walk the axes there and back, the way back in the other
  // direction, and its count follows the grid's shape (40 x the axes of extent > 1).
  RankExpr e{RankExpr::Kind::GridLoop, 1};
  e.dims           = 3;
  e.block          = 2;
  e.periodic       = true;
  e.there_and_back = true;
  // np 16 = 4x2x2, rank 0: forward swaps receive from 4 (up), 12, 2, 2, 1, 1; back (the swaps in reverse
  // order, from where the forward ones sent to): 1, 1, 2, 2, 4, 12; then forward again.
  std::vector<int> got;
  for (std::uint64_t i = 0; i < 14; ++i)
    got.push_back(*e.eval(0, 16, &i, 1));
  CHECK(got == std::vector<int>{4, 12, 2, 2, 1, 1, 1, 1, 2, 2, 4, 12, 4, 12});
  CHECK(e.text() == "grid3p(r, axis i0 div 2 of extent > 1, +1 -1, there and back)");

  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "steps", {4, 8, 16}, {1, 2, 3}, TraceEncoding::Binary,
                                           [](int nw, int np) { return Halo(nw, np, true); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 1);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"text\": \"40*axes3>1(Np)\"") &&
                       Catch::Contains("grid3p(r, axis i0 div 2 of extent > 1, +1 -1, there and back)"));
  for (int np : {64, 256})
    require_same_streams(SynthSource(model, {2, np}), Halo(2, np, true));
  write_model(dir / "m.json", *model);
  CHECK(model_to_json(read_model(dir / "m.json")).dump(2) == json);
}

namespace {

/// One exchange per walked axis, then one per swap (2 per axis), the same call: LAMMPS' exchange then
/// borders, which fold into one loop whose peer walks the axes twice with different blocks.
class TwoWalks final : public TraceSource {
public:
  TwoWalks(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("walks");
    s->add(Op::Init, "MPI_Init");
    auto sendrecv = [&](int to, int from) {
      CallRecord& m = s->add(Op::Sendrecv, "MPI_Sendrecv");
      m.peer        = to;
      m.src         = from;
      m.bytes = m.recv_bytes = 8;
    };
    for (int step = 0; step < nw_; ++step) {
      for (int axis = 0; axis < active_axes(np_); ++axis)
        sendrecv(neighbour(rank, np_, axis, -1, true), neighbour(rank, np_, axis, 1, true));
      for (int i = 0; i < 2 * active_axes(np_); ++i) {
        auto [send, recv] = swap_peers(rank, np_, i, true);
        sendrecv(send, recv);
      }
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

}  // namespace

TEST_CASE("grid loop: two walks over the axes folded into one loop are approximated, saying so", "[trace_model]")
{
  // Trained at 2x2x1 (two axes walked, 6 iterations) and 2x2x2 (three, 9): no expression explains the
  // walks, and no table of directions of one length either.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "walks", {4, 8}, {2, 3}, TraceEncoding::Binary,
                                           [](int nw, int np) { return TwoWalks(nw, np); });
  const std::string json = model_to_json(fit_trace_model(profiles)).dump();
  CHECK_THAT(json, Catch::Contains("no rank expression explains every observation") &&
                       Catch::Contains("cannot split the loop where the walk restarts"));
  // Where every training grid walks three axes, the walks are one table of 9 directions that every rank
  // agrees with; but two axes have extent 2 in 2x2x2 and 4x2x2, where -1 and +1 are the same rank, so the
  // table's signs along them are guesses, and the position says so. Taken from the x axis' iterations
  // (-1, -1, +1: the exchange, then the swap down and up), they are the code's.
  const auto three = write_profile_grid(dir.path() / "three", "walks", {8, 16}, {2, 3}, TraceEncoding::Binary,
                                        [](int nw, int np) { return TwoWalks(nw, np); });
  const std::string table = model_to_json(fit_trace_model(three)).dump();
  CHECK_THAT(table, Catch::Contains("\"expr\":\"grid_table\"") &&
                        Catch::Contains("taken from the iterations that move along as many other axes") &&
                        Catch::Contains("axis 1, 2 of the 3-D grid") && Catch::Contains("3 ranks or more") &&
                        Catch::Contains("table i0: -1 0 0, 0 -1 0, 0 0 -1, -1 0 0, +1 0 0, 0 -1 0, 0 +1 0, 0 0 -1, 0 0 +1)"));
}
