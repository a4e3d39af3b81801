// Tests of the trace-scaling model: folding, group rules, regression selection, rank expressions,
// fitting + synthesis end to end on profiles written by a known generator, determinism, CLI errors.
#include "../models/models_support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/tit.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

/// "A B (C D)x3 E" style rendering of a rolled trace, tokens as letters, polls as "T*".
std::string render(const std::vector<RolledNode>& nodes)
{
  std::string s;
  for (const RolledNode& n : nodes) {
    if (not s.empty())
      s += ' ';
    if (n.kind == RolledNode::Kind::Loop)
      s += "(" + render(n.body) + ")x" + std::to_string(n.count);
    else
      s += std::string(1, static_cast<char>('A' + n.token)) + (n.kind == RolledNode::Kind::Poll ? "*" : "");
  }
  return s;
}

std::vector<std::uint32_t> tokens_of(const std::string& letters)
{
  std::vector<std::uint32_t> t;
  for (char c : letters)
    if (c != ' ')
      t.push_back(static_cast<std::uint32_t>(c - 'A'));
  return t;
}

std::string fold(const std::string& letters, const std::string& polls = "")
{
  std::vector<bool> poll(26);
  for (char c : polls)
    poll[static_cast<std::size_t>(c - 'A')] = true;
  return render(fold_sequence(tokens_of(letters), poll));
}

/// A known application, the ground truth of the end-to-end tests. Rank r of np at size nw:
///   init; iteration 0 then nw-1 more: irecv from r-1, isend to r+1 (8 nw bytes), 2 tests of the
///   irecv, waitall, compute (1000 nw/np flop), and a barrier in iteration 0 only; then log2(np)
///   sendrecvs with r xor 2^k (64 B); a reduce to rank 0; rank 0 then computes 500 flop; finalize.
class GroundTruth final : public TraceSource {
public:
  /// `varying_polls`: 1 to 3 tests per iteration, changing with the iteration and the rank.
  GroundTruth(double nw, int np, bool varying_polls = false) : nw_(nw), np_(np), varying_polls_(varying_polls) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s   = std::make_unique<MemoryStream>("ground-truth");
    auto add = [&](Op op, const char* fn) -> CallRecord& { return s->add(op, fn); };
    const auto nw = static_cast<int>(nw_);
    std::int64_t req = 0;
    add(Op::Init, "MPI_Init");
    for (int it = 0; it < nw; ++it) {
      CallRecord& rv = add(Op::Irecv, "MPI_Irecv");
      rv.peer        = (rank - 1 + np_) % np_;
      rv.tag         = 1;
      rv.bytes       = static_cast<std::uint64_t>(8 * nw);
      rv.request     = req++;
      CallRecord& sd = add(Op::Isend, "MPI_Isend");
      sd.peer        = (rank + 1) % np_;
      sd.tag         = 1;
      sd.bytes       = static_cast<std::uint64_t>(8 * nw);
      sd.request     = req++;
      const int polls = varying_polls_ ? 1 + (it + rank) % 3 : 2;
      for (int k = 0; k < polls; ++k)
        add(Op::Test, "MPI_Test").request = req - 2;
      add(Op::Waitall, "MPI_Waitall").requests = {req - 2, req - 1};
      add(Op::Compute, "compute").flops = 1000.0 * nw / np_;
      if (it == 0)
        add(Op::Barrier, "MPI_Barrier");
    }
    for (int k = 0; (1 << k) < np_; ++k) {
      CallRecord& x = add(Op::Sendrecv, "MPI_Sendrecv");
      x.peer        = rank ^ (1 << k);
      x.src         = rank ^ (1 << k);
      x.tag         = 2;
      x.recv_tag    = 2;
      x.bytes       = 64;
      x.recv_bytes  = 64;
    }
    add(Op::Reduce, "MPI_Reduce").bytes = 8;
    if (rank == 0)
      add(Op::Compute, "compute").flops = 500;
    add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  double nw_;
  int np_;
  bool varying_polls_;
};

/// A halo exchange on a non-periodic 2-D grid: ranks on an edge skip their missing neighbours, so
/// corners, sides and the interior run different traces. nw iterations of irecv/isend (tag = direction)
/// + waitall + compute.
class Open2D final : public TraceSource {
public:
  Open2D(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto d = dims_create(np_, 2);
    auto c = grid_coords(rank, d);
    std::vector<int> nbr;  // per direction: lower x, upper x, lower y, upper y; -1 = none
    for (int k = 0; k < 2; ++k) {
      nbr.push_back(c[k] > 0 ? rank - (k == 0 ? d[1] : 1) : -1);
      nbr.push_back(c[k] < d[k] - 1 ? rank + (k == 0 ? d[1] : 1) : -1);
    }
    auto s   = std::make_unique<MemoryStream>("open2d");
    auto add = [&](Op op, const char* fn) -> CallRecord& { return s->add(op, fn); };
    std::int64_t req = 0;
    for (int it = 0; it < nw_; ++it) {
      std::vector<std::int64_t> reqs;
      for (int pass = 0; pass < 2; ++pass)
        for (int dir = 0; dir < 4; ++dir)
          if (nbr[static_cast<std::size_t>(dir)] >= 0) {
            CallRecord& m = add(pass == 0 ? Op::Irecv : Op::Isend, pass == 0 ? "MPI_Irecv" : "MPI_Isend");
            m.peer        = nbr[static_cast<std::size_t>(dir)];
            m.tag         = pass == 0 ? dir ^ 1 : dir;
            m.bytes       = static_cast<std::uint64_t>(8 * nw_);
            m.request     = req;
            reqs.push_back(req++);
          }
      add(Op::Waitall, "MPI_Waitall").requests = reqs;
      add(Op::Compute, "compute").flops = 100.0 * nw_;
    }
    return s;
  }

private:
  int nw_;
  int np_;
};

std::filesystem::path write_truth(const TempDir& dir, double nw, int np, TraceEncoding enc = TraceEncoding::Binary,
                                  bool varying_polls = false)
{
  std::filesystem::path p = dir / ((varying_polls ? "poll-np" : "truth-np") + std::to_string(np) + "-nw" +
                                   std::to_string(static_cast<int>(nw)));
  RunInfo info;
  info.np       = np;
  info.nw       = nw;
  info.encoding = enc;
  info.origin   = "test";
  write_profile(GroundTruth(nw, np, varying_polls), info, p, enc);
  return p;
}

std::vector<std::filesystem::path> training_set(const TempDir& dir)
{
  std::vector<std::filesystem::path> out;
  for (int np : {4, 8})
    for (int nw : {3, 4, 5})
      out.push_back(write_truth(dir, nw, np));
  return out;
}

using gridcast::test::require_same_streams;

}  // namespace

// ---- folding ----------------------------------------------------------------------------------------------

TEST_CASE("trace model: folding finds nested loops", "[trace_model]")
{
  CHECK(fold("ABCBCBCD") == "A (B C)x3 D");
  CHECK(fold("I ABBBABBBABBB F") == "I (A (B)x3)x3 F");
  // Inner loop, then the outer one once the inner iterations read as one symbol each.
  CHECK(fold("I AAB AAB AAB AAB F") == "I ((A)x2 B)x4 F");
  // A checkpoint every 4 iterations.
  CHECK(fold("I XYXYXYXYC XYXYXYXYC F") == "I ((X Y)x4 C)x2 F");
  CHECK(fold("ABCD") == "A B C D");
}

TEST_CASE("trace model: folding by coverage takes the repeat that covers the most calls first", "[trace_model]")
{
  std::vector<bool> none(26);
  FoldOptions coverage;
  coverage.by_coverage = true;
  auto by_coverage = [&](const std::string& s) { return render(fold_sequence(tokens_of(s), none, coverage)); };
  // A V-cycle's way up: prolong (C), then smooth (S S S S C, twice), three levels, then a reduction (A).
  // Shortest period first folds the C C where one level ends and the next begins; by coverage the levels
  // are the loop, and each level reads as the same iteration.
  const std::string up = "CSSSSCSSSSC CSSSSCSSSSC CSSSSCSSSSC A";
  CHECK(by_coverage(up) == "((C (S)x4)x2 C)x3 A");
  CHECK(fold(up) != "((C (S)x4)x2 C)x3 A");
  // A run of 2 of a block that straddles two iterations of the longer loop waits for it.
  CHECK(by_coverage("SSSSCSSSSCC SSSSCSSSSCC SSSSCSSSSCC A CSSSSCSSSSC CSSSSCSSSSC CSSSSCSSSSC A") ==
        "(((S)x4 C)x2 C)x3 A ((C (S)x4)x2 C)x3 A");
  // What shortest-first folds the same way stays the same.
  CHECK(by_coverage("I ABBBABBBABBB F") == "I (A (B)x3)x3 F");
  CHECK(by_coverage("I XYXYXYXYC XYXYXYXYC F") == "I ((X Y)x4 C)x2 F");
  CHECK(by_coverage("ABCD") == "A B C D");
}

TEST_CASE("trace model: calls told apart by refinement first find the steps, then fold plain within them",
          "[trace_model]")
{
  // S is a sendrecv tagged by its round (0, 1, 2), C a compute; the step's own compute is merged into the
  // last round's. Plain, the steps have no boundary; told apart by their tags, each step is a body.
  std::vector<bool> none(26);
  const std::string calls = "I SCSCSC SCSCSC SCSCSC F";
  const std::vector<std::int32_t> tags = {0, 0, 0, 1, 0, 2, 0, 0, 0, 1, 0, 2, 0, 0, 0, 1, 0, 2, 0, 0};
  FoldOptions refined;
  refined.refine = tags;
  CHECK(render(fold_sequence(tokens_of(calls), none)) == "I (S C)x9 F");
  CHECK(render(fold_sequence(tokens_of(calls), none, refined)) == "I ((S C)x3)x3 F");
  // A step that ends with a compute of its own: unrolled plain, by coverage the rounds are one loop.
  const std::string own = "I SCSCSCC SCSCSCC F";
  const std::vector<std::int32_t> own_tags = {0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0};
  refined.refine      = own_tags;
  refined.by_coverage = true;
  CHECK(render(fold_sequence(tokens_of(own), none, refined)) == "I ((S C)x3 C)x2 F");
  // Refinement that tells nothing apart folds as the plain fold does.
  refined.refine      = std::vector<std::int32_t>(tokens_of(calls).size(), 0);
  refined.by_coverage = false;
  CHECK(render(fold_sequence(tokens_of(calls), none, refined)) == "I (S C)x9 F");
}

TEST_CASE("trace model: a first or last iteration that differs is peeled", "[trace_model]")
{
  // First iteration has an extra call (Z); the loop is the remaining iterations.
  CHECK(fold("I XYZ XY XY XY F") == "I X Y Z (X Y)x3 F");
  // Last iteration stops early.
  CHECK(fold("I XYW XYW XYW XY F") == "I (X Y W)x3 X Y F");
}

TEST_CASE("trace model: polling runs of any length fold into one construct", "[trace_model]")
{
  // T is a polling call (MPI_Test): 3, 1 and 2 tests per iteration still make one loop of 3.
  CHECK(fold("I A TTT B A T B A TT B F", "T") == "I (A T* B)x3 F");
  // Without the poll mark the varying count breaks the loop.
  CHECK(fold("I A TTT B A T B A TT B F") != "I (A T* B)x3 F");
}

TEST_CASE("trace model: Myers difference between shapes", "[trace_model]")
{
  std::vector<bool> none(26);
  auto a = shape_of(fold_sequence(tokens_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), none));
  auto b = shape_of(fold_sequence(tokens_of("ABCDEFGHIJKLMNOPQRSTUVWXY"), none));
  CHECK(shape_difference(a, a) == 0);
  CHECK(shape_difference(a, b) == Approx(1.0 / 26));
}

// ---- regressions --------------------------------------------------------------------------------------------

TEST_CASE("trace model: leave-one-out regression picks the generating features", "[trace_model]")
{
  std::vector<FitPoint> pts;
  for (double np : {4.0, 8.0, 16.0})
    for (double nw : {8.0, 12.0, 16.0})
      pts.push_back({nw, np, 8 * nw * nw});
  Formula f = fit_formula(pts, true);
  CHECK(f.text() == "8*Nw^2");
  REQUIRE(f.cv_error);
  CHECK(*f.cv_error == Approx(0).margin(1e-12));
  CHECK(f.eval(64, 256) == 8 * 64 * 64);

  pts.clear();
  for (double np : {4.0, 8.0, 16.0})
    for (double nw : {2.0, 3.0, 4.0})
      pts.push_back({nw, np, nw * (np - 1)});  // tasks of a master-worker farm
  f = fit_formula(pts, true);
  CHECK(f.text() == "-Nw + Nw*Np");
  CHECK(f.eval(16, 256) == 16 * 255);

  // Strong scaling of a 3-D block: faces in (Nw/Np)^(2/3).
  pts.clear();
  for (double np : {8.0, 64.0})
    for (double nw : {1e6, 8e6})
      pts.push_back({nw, np, 6 * std::cbrt((nw / np) * (nw / np))});
  f = fit_formula(pts, false);
  CHECK(f.text() == "6*(Nw/Np)^(2/3)");

  // A constant is found without search; noise shows in the cross-validation error.
  CHECK(fit_formula({{1, 4, 7}, {2, 8, 7}}, true).text() == "7");
  Formula noisy = fit_formula({{1, 4, 10}, {2, 4, 21}, {3, 4, 29}, {4, 4, 41}}, true);
  REQUIRE(noisy.cv_error);
  CHECK(*noisy.cv_error > 0.01);
}

// ---- rank expressions --------------------------------------------------------------------------------------

TEST_CASE("trace model: peers become rank expressions", "[trace_model]")
{
  auto obs = [](auto fn, std::vector<int> nps, int depth = 0, int loops = 1) {
    std::vector<RankObservation> o;
    for (int np : nps)
      for (int r = 0; r < np; ++r)
        for (int i = 0; i < loops; ++i) {
          std::vector<std::uint64_t> loop(static_cast<std::size_t>(depth), static_cast<std::uint64_t>(i));
          int v = fn(r, np, i);
          if (v >= -1)
            o.push_back({r, np, loop, v});
        }
    return o;
  };
  auto text = [](const std::vector<RankObservation>& o) {
    auto e = fit_rank_expr(o);
    return e ? e->text() : std::string("none");
  };
  CHECK(text(obs([](int, int, int) { return -1; }, {4, 8})) == "any");
  CHECK(text(obs([](int, int, int) { return 0; }, {4, 8})) == "0");
  CHECK(text(obs([](int, int np, int) { return np - 1; }, {4, 8})) == "Np - 1");
  CHECK(text(obs([](int r, int np, int) { return (r + 1) % np; }, {4, 8})) == "(r + 1) mod Np");
  CHECK(text(obs([](int r, int np, int) { return (r - 1 + np) % np; }, {4, 8})) == "(r - 1) mod Np");
  CHECK(text(obs([](int r, int, int i) { return r ^ (1 << i); }, {4, 8}, 1, 2)) == "r xor 2^i0");
  CHECK(text(obs([](int, int np, int i) { return 1 + i % (np - 1); }, {4, 8}, 1, 9)) == "1 + i0 mod (Np - 1)");
  // Upper neighbour along axis 0 of a periodic 3-D grid: dims 2x2x1, 2x2x2, 4x2x2, 3x2x2.
  auto grid_up = [](int r, int np, int) {
    auto d = dims_create(np, 3);
    auto c = grid_coords(r, d);
    c[0]   = (c[0] + 1) % d[0];
    return (c[0] * d[1] + c[1]) * d[2] + c[2];
  };
  CHECK(text(obs(grid_up, {4, 8, 16, 12})) == "grid3p(r, dim 0, +1)");
  CHECK(text(obs([](int r, int, int) { return r * r % 7; }, {4, 8})) == "none");
}

TEST_CASE("trace model: dims_create matches MPI_Dims_create", "[trace_model]")
{
  CHECK(dims_create(4, 3) == std::vector<int>{2, 2, 1});
  CHECK(dims_create(16, 3) == std::vector<int>{4, 2, 2});
  CHECK(dims_create(256, 3) == std::vector<int>{8, 8, 4});
  CHECK(dims_create(12, 2) == std::vector<int>{4, 3});
  CHECK(grid_coords(5, {2, 2, 2}) == std::vector<int>{1, 0, 1});
}

// ---- group rules ---------------------------------------------------------------------------------------------

TEST_CASE("trace model: the simplest consistent rank-to-group rule wins", "[trace_model]")
{
  auto assign = [](auto fn, std::vector<int> nps) {
    std::vector<GroupAssignment> a;
    for (int np : nps) {
      GroupAssignment g{"np" + std::to_string(np), np, {}};
      for (int r = 0; r < np; ++r)
        g.group_of_rank.push_back(fn(r, np));
      a.push_back(g);
    }
    return a;
  };
  CHECK(infer_group_rule(assign([](int, int) { return 0; }, {4, 8})).classifier.name() == "all");
  CHECK(infer_group_rule(assign([](int r, int) { return r == 0 ? 0 : 1; }, {4, 8})).classifier.name() == "first");
  // Pipeline: source, sink, middle even, middle odd.
  auto pipe = [](int r, int np) { return r == 0 ? 0 : r == np - 1 ? 3 : r % 2 ? 1 : 2; };
  GroupRule rule = infer_group_rule(assign(pipe, {4, 8, 16}));
  CHECK(rule.classifier.name() == "first+last+parity");
  for (int r = 0; r < 256; ++r)
    REQUIRE(rule.group_of(r, 256) == pipe(r, 256));
  // Mod 3 (e.g. a three-way role split).
  CHECK(infer_group_rule(assign([](int r, int) { return r % 3; }, {6, 9, 12})).classifier.name() == "mod3");
  // Position in a 3-D grid: corner / edge / face / interior.
  auto pos = [](int r, int np) {
    auto d = dims_create(np, 3);
    auto c = grid_coords(r, d);
    int b  = 0;
    for (int k = 0; k < 3; ++k)
      b += (c[static_cast<std::size_t>(k)] == 0 || c[static_cast<std::size_t>(k)] == d[static_cast<std::size_t>(k)] - 1);
    return 3 - b;
  };
  GroupRule grid = infer_group_rule(assign(pos, {8, 27, 64}));
  CHECK(grid.classifier.name() == "grid3");
  CHECK(grid.group_of(62, 125) == pos(62, 125));
  // A non-periodic 2-D stencil: which neighbours a rank has depends on the side of each axis it is on.
  auto sides = [](int r, int np) {
    auto d = dims_create(np, 2);
    auto c = grid_coords(r, d);
    return (c[0] > 0) + 2 * (c[0] < d[0] - 1) + 4 * (c[1] > 0) + 8 * (c[1] < d[1] - 1);
  };
  GroupRule side_rule = infer_group_rule(assign(sides, {4, 9, 16}));
  CHECK(side_rule.classifier.name() == "grid2-sides");
  for (int r = 0; r < 64; ++r)
    REQUIRE(side_rule.group_of(r, 64) == sides(r, 64));
  // A class training never saw: grids of 8 and 12 ranks have corners and edges only, so the centre of a
  // 3x3x3 grid cannot be placed.
  GroupRule corners = infer_group_rule(assign(pos, {8, 12}));
  CHECK(corners.classifier.name() == "grid3");
  auto err = gridcast::test::expect_input_error([&] { corners.group_of(13, 27); });
  CHECK_THAT(err.reason(), Catch::Contains("grid3=interior") && Catch::Contains("no training profile had"));
}

TEST_CASE("trace model: inconsistent group assignments name the ranks in conflict", "[trace_model]")
{
  // Rank 1 of 4 runs another trace at another size: no rule of (rank, Np) can tell.
  std::vector<GroupAssignment> a = {{"p4-small", 4, {0, 1, 0, 1}}, {"p4", 4, {0, 0, 0, 1}}};
  auto err = gridcast::test::expect_input_error([&] { infer_group_rule(a); });
  CHECK_THAT(err.reason(), Catch::Contains("no rank-to-group rule fits") && Catch::Contains("rank ") &&
                               Catch::Contains("of p4"));
}

TEST_CASE("trace model: a group conflict on Np is an error, one on Nw keeps the largest sizes", "[trace_model]")
{
  // Rank 0 swaps its two collectives when `swapped(nw, np)`: rank 0 is rank 0 under every rule, so no rule
  // fits; the hint names the parameter the swap follows (LAMMPS' calls follow the process grid's shape).
  // Np 8 and 16: rank 0 is the low corner of every axis of both grids (at np 4, 2 x 2 x 1, the side
  // of the third axis would tell it apart).
  struct Swap final : TraceSource {
    Swap(int np_, bool swapped_) : np(np_), swapped(swapped_) {}
    int np;
    bool swapped;
    int rank_count() const override { return np; }
    CallStreamPtr open(int rank) const override
    {
      auto s = std::make_unique<MemoryStream>("swap");
      s->add(Op::Init, "MPI_Init");
      const bool swap = rank == 0 and swapped;
      s->add(swap ? Op::Barrier : Op::Allreduce, swap ? "MPI_Barrier" : "MPI_Allreduce").bytes = swap ? 0 : 8;
      s->add(swap ? Op::Allreduce : Op::Barrier, swap ? "MPI_Allreduce" : "MPI_Barrier").bytes = swap ? 8 : 0;
      s->add(Op::Finalize, "MPI_Finalize");
      return s;
    }
  };
  TempDir dir;
  const auto by_np = write_profile_grid(dir.path(), "np", {8, 16}, {2, 3}, TraceEncoding::Binary,
                                        [](int, int np) { return Swap(np, np >= 16); });
  auto err = gridcast::test::expect_input_error([&] { fit_trace_model(by_np); });
  CHECK_THAT(err.reason(), Catch::Contains("no rank-to-group rule fits") &&
                               Catch::Contains("the branch depends on Np") && !Catch::Contains("depends on Nw"));
  const auto by_nw = write_profile_grid(dir.path(), "nw", {4, 8}, {2, 3}, TraceEncoding::Binary,
                                        [](int nw, int np) { return Swap(np, nw >= 3); });
  // A branch on Nw: the model of the largest size whose profiles agree, saying what it left out.
  const TraceModel m = fit_trace_model(by_nw);
  CHECK(m.training.size() == 2);
  CHECK_THAT(m.size_class, Catch::Contains("at Nw 3 only") && Catch::Contains("those at Nw 2 take others") &&
                               Catch::Contains("no rank-to-group rule fits"));
}

TEST_CASE("trace model: every training size on its own path: the error says so", "[trace_model]")
{
  // Rank 0 runs its three collectives in another order at each size, so no two sizes agree and the
  // largest size alone is one profile: the error is the disagreement, not "a single profile".
  struct Rotate final : TraceSource {
    Rotate(int np_, int shift_) : np(np_), shift(shift_) {}
    int np;
    int shift;
    int rank_count() const override { return np; }
    CallStreamPtr open(int rank) const override
    {
      auto s = std::make_unique<MemoryStream>("rotate");
      s->add(Op::Init, "MPI_Init");
      for (int i = 0; i < 3; ++i) {
        const int which = (i + (rank == 0 ? shift : 0)) % 3;
        if (which == 0)
          s->add(Op::Barrier, "MPI_Barrier");
        else
          s->add(which == 1 ? Op::Allreduce : Op::Bcast, which == 1 ? "MPI_Allreduce" : "MPI_Bcast").bytes = 8;
      }
      s->add(Op::Finalize, "MPI_Finalize");
      return s;
    }
  };
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "rot", {4}, {2, 3, 4}, TraceEncoding::Binary,
                                           [](int nw, int np) { return Rotate(np, nw); });
  auto err = gridcast::test::expect_input_error([&] { fit_trace_model(profiles); });
  CHECK_THAT(err.reason(), Catch::Contains("no rank-to-group rule fits") && !Catch::Contains("a single profile"));
  // Repeated runs: the largest size alone is two profiles of one training point, which fit nothing. Still
  // the error, not a model that carries that point's calls to every target.
  auto repeated = profiles;
  for (const auto& p : write_profile_grid(dir.path(), "again", {4}, {2, 3, 4}, TraceEncoding::Binary,
                                          [](int nw, int np) { return Rotate(np, nw); }))
    repeated.push_back(p);
  auto again = gridcast::test::expect_input_error([&] { fit_trace_model(repeated); });
  CHECK_THAT(again.reason(), Catch::Contains("no rank-to-group rule fits"));
}

// ---- end to end ----------------------------------------------------------------------------------------------

TEST_CASE("trace model: fitted model reproduces a training point and predicts an unseen one", "[trace_model]")
{
  TempDir dir;
  auto profiles = training_set(dir);
  auto model    = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->rule.classifier.name() == "first");
  CHECK(model->groups.size() == 2);
  CHECK(model->warnings.empty());

  // The training point itself.
  require_same_streams(SynthSource(model, {4, 8}), ProfileDir(dir / "truth-np8-nw4"));
  // Unseen: 4x the ranks, a larger size; loop counts, sizes, xor peers and the rule extrapolate.
  require_same_streams(SynthSource(model, {9, 32}), GroundTruth(9, 32));

  // The model survives model.json.
  write_model(dir / "model.json", *model);
  auto again = std::make_shared<const TraceModel>(read_model(dir / "model.json"));
  require_same_streams(SynthSource(again, {7, 16}), GroundTruth(7, 16));
}

TEST_CASE("trace model: model.json and synthesized output are deterministic", "[trace_model]")
{
  TempDir dir;
  auto profiles = training_set(dir);
  std::string a = model_to_json(fit_trace_model(profiles)).dump(2);
  std::reverse(profiles.begin(), profiles.end());  // argument order does not matter
  std::string b = model_to_json(fit_trace_model(profiles)).dump(2);
  CHECK(a == b);
  CHECK_THAT(a, Catch::Contains("\"format\": \"gridcast-trace-model\"") && Catch::Contains("\"cv_error\"") &&
                    Catch::Contains("\"text\": \"r xor 2^i0\""));

  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  SynthSource src(model, {6, 16});
  RunInfo info = src.run_info(TraceEncoding::Binary);
  write_profile(src, info, dir / "s1", TraceEncoding::Binary);
  write_profile(src, info, dir / "s2", TraceEncoding::Binary);
  write_tit(src, dir / "t1");
  write_tit(src, dir / "t2");
  for (int r = 0; r < 16; ++r) {
    CHECK(gridcast::test::read_file(dir / "s1" / rank_file_name(r, TraceEncoding::Binary)) ==
          gridcast::test::read_file(dir / "s2" / rank_file_name(r, TraceEncoding::Binary)));
    std::string f = "trace.txt_files/rank-" + std::to_string(r + 1) + ".txt";
    CHECK(gridcast::test::read_file(dir / "t1" / f) == gridcast::test::read_file(dir / "t2" / f));
  }
}

TEST_CASE("trace model: TIT output imports back to the same calls", "[trace_model]")
{
  TempDir dir;
  auto model = std::make_shared<const TraceModel>(fit_trace_model(training_set(dir)));
  SynthSource src(model, {5, 8});
  write_tit(src, dir / "tit");
  TitTrace back(dir / "tit" / "trace.txt");
  REQUIRE(back.rank_count() == 8);
  for (int r = 0; r < 8; ++r) {
    auto a = gridcast::test::read_all(*src.open(r));
    auto b = gridcast::test::read_all(*back.open(r));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].op == b[i].op);
      CHECK(a[i].peer == b[i].peer);
      CHECK(a[i].bytes == b[i].bytes);
      CHECK(a[i].request == b[i].request);
    }
  }
}

TEST_CASE("trace model: inputs that cannot be fitted are errors naming what is missing", "[trace_model]")
{
  TempDir dir;
  auto profiles = training_set(dir);
  auto single = gridcast::test::expect_input_error([&] { fit_trace_model({profiles[0]}); });
  CHECK_THAT(single.reason(), Catch::Contains("single profile"));

  // Another application: a profile using a function the others never call.
  gridcast::test::write_jsonl_profile(dir / "other", {"{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n"
                                                      "{\"op\":\"barrier\",\"fn\":\"MPI_Ibarrier\"}\n"});
  auto other = gridcast::test::expect_input_error([&] { fit_trace_model({profiles[0], dir / "other"}); });
  CHECK_THAT(other.reason(), Catch::Contains("function table does not match") && Catch::Contains("MPI_Ibarrier") &&
                                 Catch::Contains("at some training points only"));

  // Peers without a pattern (0 -> 3, 1 -> 0, 2 -> 0, 3 -> 2) are no error: the expression that explains
  // the most observations stands in, and the model says what it misses.
  std::vector<std::string> ranks;
  for (int peer : {3, 0, 0, 2})
    ranks.push_back("{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":" + std::to_string(peer) + ",\"bytes\":8}\n");
  gridcast::test::write_jsonl_profile(dir / "odd-a", ranks);
  gridcast::test::write_jsonl_profile(dir / "odd-b", ranks);
  const std::string peers = model_to_json(fit_trace_model({dir / "odd-a", dir / "odd-b"})).dump();
  CHECK_THAT(peers, Catch::Contains("no rank expression explains every observation (first unexplained: rank 2 of 4 -> 0)"));
}

TEST_CASE("trace model: gridcast fit and synth on the command line", "[trace_model][cli]")
{
  using gridcast::test::run_gridcast;
  TempDir dir;
  auto profiles = training_set(dir);
  std::string args;
  for (const auto& p : profiles)
    args += " " + p.string();
  auto fit = run_gridcast("fit" + args + " -o " + (dir / "model.json").string());
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK_THAT(fit.output, Catch::Contains("2 trace group(s)"));
  auto synth = run_gridcast("synth " + (dir / "model.json").string() + " --nw 6 --np 16 --out " +
                            (dir / "out").string() + " --encoding jsonl");
  INFO(synth.output);
  REQUIRE(synth.exit_code == 0);
  require_same_streams(ProfileDir(dir / "out"), GroundTruth(6, 16));
  CHECK(run_gridcast("synth " + (dir / "model.json").string() + " --nw 6 --np 4 --format tit --out " +
                     (dir / "tit").string())
            .exit_code == 0);
  CHECK(std::filesystem::exists(dir / "tit" / "trace.txt"));
  CHECK(run_gridcast("fit --help").exit_code == 0);
  CHECK(run_gridcast("synth --help").exit_code == 0);

  auto single = run_gridcast("fit " + profiles[0].string() + " -o " + (dir / "m1.json").string());
  CHECK(single.exit_code == 1);
  CHECK_THAT(single.output, Catch::Contains("single profile: nothing to fit"));

  // Nw 0: the peeled loop would run Nw - 1 = -1 times; it runs 0, and synth says so.
  auto outside = run_gridcast("synth " + (dir / "model.json").string() + " --nw 0 --np 4 --out " +
                              (dir / "bad").string());
  CHECK(outside.exit_code == 0);
  CHECK_THAT(outside.output, Catch::Contains("count: -1 + Nw gives -1 at the target: 0 instead"));
  auto negative = run_gridcast("synth " + (dir / "model.json").string() + " --nw -2 --np 4 --out " +
                               (dir / "neg").string());
  CHECK(negative.exit_code == 1);
  CHECK_THAT(negative.output, Catch::Contains("--nw must be >= 0"));

  std::string text = gridcast::test::read_file(dir / "model.json");
  text.insert(text.find("\"groups\""), "\"colour\": 1, ");
  gridcast::test::write_file(dir / "bad.json", text);
  auto bad = run_gridcast("synth " + (dir / "bad.json").string() + " --nw 6 --np 4 --out " + (dir / "b2").string());
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("colour") && Catch::Contains("unknown key"));

  text = gridcast::test::read_file(dir / "model.json");
  auto at = text.find("\"feature\": \"Nw\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 15, "\"feature\": \"Nw^9\"");
  gridcast::test::write_file(dir / "bad2.json", text);
  auto feature = run_gridcast("synth " + (dir / "bad2.json").string() + " --nw 6 --np 4 --out " + (dir / "b3").string());
  CHECK(feature.exit_code == 1);
  CHECK_THAT(feature.output, Catch::Contains("unknown feature 'Nw^9'") && Catch::Contains(".terms[0].feature"));
}

TEST_CASE("trace model: polling whose length varies keeps the loop and is synthesized at its mean", "[trace_model]")
{
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int np : {4, 8})
    for (int nw : {3, 4, 5})
      profiles.push_back(write_truth(dir, nw, np, TraceEncoding::Binary, true));
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 2);
  // The iteration loop survived: init, first iteration, loop, ... and the loop body holds one poll.
  const TraceGroup& g = model->groups[1];
  auto loop = std::find_if(g.body.begin(), g.body.end(), [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Loop; });
  REQUIRE(loop != g.body.end());
  CHECK(loop->count.text() == "-1 + Nw");
  auto polls = std::count_if(loop->body.begin(), loop->body.end(), [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Poll; });
  CHECK(polls == 1);
  // Every call but the tests is as in the real run, at an unseen point too.
  SynthSource synth(model, {7, 16});
  GroundTruth truth(7, 16, true);
  for (int r = 0; r < 16; ++r) {
    auto a = gridcast::test::read_all(*synth.open(r));
    auto b = gridcast::test::read_all(*truth.open(r));
    auto no_tests = [](std::vector<CallRecord>& v) {
      std::erase_if(v, [](const CallRecord& c) { return c.op == Op::Test; });
      for (auto& c : v)
        c.function = 0;
    };
    no_tests(a);
    no_tests(b);
    REQUIRE(a == b);
  }
}

TEST_CASE("trace model: a non-periodic 2-D halo exchange extrapolates to a grid with an interior", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "open", {4, 8, 16}, {2, 3, 4}, TraceEncoding::Binary,
                                           [](int nw, int np) { return Open2D(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->rule.classifier.name() == "grid2-sides");
  CHECK(model->groups.size() == 9);
  // Interior ranks appear at np 16 only (4x4); their peers still come out as grid neighbours, not as
  // the offsets (r - 4, r + 4) that np 16 alone would suggest, so 8x8 and 16x8 grids come out right.
  require_same_streams(SynthSource(model, {6, 64}), Open2D(6, 64));
  require_same_streams(SynthSource(model, {5, 128}), Open2D(5, 128));
}

TEST_CASE("trace model: a loop that runs once or never at a training point still fits", "[trace_model]")
{
  // nw 1: the peeled iteration loop runs 0 times; nw 2: once. Both are matched against the template
  // of a larger run instead of founding groups of their own.
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int np : {4, 8})
    for (int nw : {1, 2, 5})
      profiles.push_back(write_truth(dir, nw, np));
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->groups.size() == 2);
  CHECK(model->rule.classifier.name() == "first");
  require_same_streams(SynthSource(model, {9, 32}), GroundTruth(9, 32));
  require_same_streams(SynthSource(model, {1, 16}), GroundTruth(1, 16));
}

namespace {

/// Numbered messages: iteration `it` of 8 nw sends tag 100 + it to r + 1 and receives it from r - 1.
class Numbered final : public TraceSource {
public:
  Numbered(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("numbered");
    std::int64_t req = 0;
    s->add(Op::Init, "MPI_Init");
    for (int it = 0; it < 8 * nw_; ++it) {
      CallRecord& a = s->add(Op::Isend, "MPI_Isend");
      a.peer        = (rank + 1) % np_;
      a.tag         = 100 + it;
      a.bytes       = 64;
      a.request     = req++;
      CallRecord& b = s->add(Op::Irecv, "MPI_Irecv");
      b.peer        = (rank - 1 + np_) % np_;
      b.tag         = 100 + it;
      b.bytes       = 64;
      b.request     = req++;
      s->add(Op::Waitall, "MPI_Waitall").requests = {req - 2, req - 1};
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

}  // namespace

TEST_CASE("trace model: tags numbered by the iteration become tag expressions", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "num", {4, 8}, {3, 4, 5}, TraceEncoding::Binary,
                                           [](int nw, int np) { return Numbered(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 1);
  std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"tag\": \"varies\"") && Catch::Contains("\"text\": \"100 + 1*i0\"") &&
                       Catch::Contains("\"text\": \"8*Nw\""));
  require_same_streams(SynthSource(model, {7, 16}), Numbered(7, 16));
  // And through model.json.
  write_model(dir / "m.json", *model);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(dir / "m.json")), {6, 8}),
                       Numbered(6, 8));
}

namespace {

/// An all-to-all exchange: 2 nw alltoallv calls, 8 nw bytes to every other rank, none to itself.
class Exchange final : public TraceSource {
public:
  Exchange(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("exchange");
    s->add(Op::Init, "MPI_Init");
    std::vector<std::uint64_t> counts(static_cast<std::size_t>(np_), static_cast<std::uint64_t>(8 * nw_));
    counts[static_cast<std::size_t>(rank)] = 0;
    for (int it = 0; it < 2 * nw_; ++it) {
      CallRecord& a = s->add(Op::Alltoallv, "MPI_Alltoallv");
      a.counts      = counts;
      a.recv_counts = counts;
    }
    return s;
  }

private:
  int nw_;
  int np_;
};

}  // namespace

TEST_CASE("trace model: v-collective counts for the other ranks and for the rank itself", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "x", {4, 8}, {2, 3, 4}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Exchange(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"counts_self\"") && Catch::Contains("\"text\": \"8*Nw\""));
  require_same_streams(SynthSource(model, {5, 32}), Exchange(5, 32));
  // TIT output carries the per-rank counts too.
  write_tit(SynthSource(model, {5, 8}), dir / "tit");
  TitTrace back(dir / "tit" / "trace.txt");
  auto calls = gridcast::test::read_all(*back.open(3));
  REQUIRE(calls.size() == 11);
  CHECK(calls[1].counts == std::vector<std::uint64_t>{40, 40, 40, 0, 40, 40, 40, 40});
}

TEST_CASE("trace model: a rank within the Myers threshold joins the group as an approximate member",
          "[trace_model]")
{
  // 60 different calls per rank; rank 3 makes one more (1/61 = 1.6 % < 3 %).
  auto rank_text = [](int r) {
    std::string t;
    for (int k = 0; k < 60; ++k) {
      t += "{\"op\":\"compute\",\"fn\":\"phase" + std::to_string(k) + "\",\"flops\":1000}\n";
      if (r == 3 && k == 30)
        t += "{\"op\":\"compute\",\"fn\":\"phase0\",\"flops\":1000}\n";
    }
    return t;
  };
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int np : {4, 8}) {
    std::vector<std::string> ranks;
    for (int r = 0; r < np; ++r)
      ranks.push_back(rank_text(r));
    gridcast::test::write_jsonl_profile(dir / ("a" + std::to_string(np)), ranks);
    profiles.push_back(dir / ("a" + std::to_string(np)));
  }
  TraceModel model = fit_trace_model(profiles);
  REQUIRE(model.groups.size() == 1);
  CHECK(model.groups[0].approximate_members == 2);
  CHECK(model.rule.classifier.name() == "all");
  // With a threshold of 1 %, rank 3 runs a trace of its own: a group of two members, told apart by a
  // rule (rank 3 is the last rank at np 4 and "rank mod 8 = 3" at np 8: the simplest rule that fits).
  FitOptions strict;
  strict.group_threshold = 0.01;
  TraceModel split = fit_trace_model(profiles, strict);
  CHECK(split.groups.size() == 2);
  CHECK(split.groups[0].approximate_members + split.groups[1].approximate_members == 0);
}

namespace {

/// A Cartesian ring: MPI_Cart_create records each rank's place in the new communicator as its split key
/// (the profiler's convention), then nw rounds of a ring exchange on it.
class CartRing final : public TraceSource {
public:
  CartRing(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<Recorded>();
    s->add(Op::Init, "MPI_Init");
    CallRecord& cart = s->add(Op::CommSplit, "MPI_Cart_create");
    cart.color       = 0;  // the world rank of the new communicator's rank 0
    cart.key         = rank;
    cart.new_comm    = 1;
    for (int it = 0; it < nw_; ++it) {
      CallRecord& x = s->add(Op::Sendrecv, "MPI_Sendrecv");
      x.peer        = (rank + 1) % np_;
      x.src         = (rank - 1 + np_) % np_;
      x.bytes = x.recv_bytes = 8;
      x.comm                 = 1;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  struct Recorded final : CallStream {
    std::vector<CallRecord> calls;
    FunctionTable table;
    std::size_t next_ = 0;
    std::string src   = "cart-ring";
    CallRecord& add(Op op, const char* fn)
    {
      calls.emplace_back();
      calls.back().op       = op;
      calls.back().function = table.intern(fn);
      return calls.back();
    }
    bool next(CallRecord& out) override
    {
      if (next_ == calls.size())
        return false;
      out      = calls[next_++];
      out.line = next_;
      return true;
    }
    const FunctionTable& functions() const override { return table; }
    const std::string& source() const override { return src; }
  };
  int nw_;
  int np_;
};

}  // namespace

TEST_CASE("trace model: a split key that is each rank's place becomes a rank expression", "[trace_model]")
{
  // With the key in the token every rank would have a template of its own: at np 2, rank 1 became an
  // approximate member of rank 0's group and was synthesized with rank 0's peers (a deadlock).
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int np : {2, 4})
    for (int nw : {3, 4, 5}) {
      RunInfo info;
      info.np       = np;
      info.nw       = nw;
      info.encoding = TraceEncoding::Binary;
      auto p        = dir / ("cart-np" + std::to_string(np) + "-nw" + std::to_string(nw));
      write_profile(CartRing(nw, np), info, p, TraceEncoding::Binary);
      profiles.push_back(p);
    }
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 1);
  CHECK(model->groups[0].approximate_members == 0);
  std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"key\": \"varies\""));
  require_same_streams(SynthSource(model, {7, 2}), CartRing(7, 2));
  require_same_streams(SynthSource(model, {6, 16}), CartRing(6, 16));
  write_model(dir / "m.json", *model);
  CHECK(model_to_json(read_model(dir / "m.json")).dump(2) == json);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(dir / "m.json")), {6, 8}),
                       CartRing(6, 8));

  // A model.json whose position has no key expression for a varying key is rejected with the key path.
  nlohmann::json bad = model_to_json(*model);
  bool removed       = false;
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& n) {
    if (n.is_object()) {
      if (n.contains("key") && n["key"].is_object() && not removed) {
        n.erase("key");
        removed = true;
        return;
      }
      for (auto& [k, v] : n.items())
        strip(v);
    } else if (n.is_array()) {
      for (auto& v : n)
        strip(v);
    }
  };
  strip(bad);
  REQUIRE(removed);
  CHECK_THROWS_WITH(model_from_json(bad, "m.json"), Catch::Contains("key") && Catch::Contains("varies"));
}

TEST_CASE("trace model: the LAMMPS example profiles at np 2 fit with the default options and predict",
          "[trace_model][cli][examples]")
{
  // examples/lammps-lj: real recordings, rank 1's MPI_Cart_create key differs from rank 0's. Both ranks
  // must be exact members of one group, and the prediction at 2x the largest size must run to its end
  // (with rank 1 synthesized as rank 0 it deadlocked on a send to itself).
  using gridcast::test::run_gridcast;
  TempDir dir;
  const std::string source = GRIDCAST_SOURCE_DIR;
  const std::string untar  = "tar -xJf '" + source + "/examples/lammps-lj/profiles.tar.xz' -C '" + dir.path().string() + "'";
  REQUIRE(std::system(untar.c_str()) == 0);
  std::string args;
  for (int atoms : {4000, 8000, 16000, 32000})
    args += " '" + (dir / "profiles" / ("np2-atoms" + std::to_string(atoms))).string() + "'";
  const std::string model = (dir / "model.json").string();
  auto fit = run_gridcast("fit" + args + " -o '" + model + "'");
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK_THAT(fit.output, Catch::Contains("fitted 1 trace group(s)"));
  CHECK(read_model(model).groups.at(0).approximate_members == 0);
  auto predict = run_gridcast("predict '" + model + "' --nw 64000 --np 2 --ranks-per-host 2 --no-timeline --platform '" +
                              source + "/platforms/this-machine/platform.xml'");
  INFO(predict.output);
  REQUIRE(predict.exit_code == 0);
  CHECK_THAT(predict.output, Catch::Contains("makespan: "));
}

// ---- polling constructs that absorb work (HPL's update while waiting for a panel) ------------------------

namespace {

/// An HPL-like pipeline at np 2, whose polling depends on the timing. Rank r at size nw, for each of nw
/// steps: a panel (cblas_dgemm), a send of it to the other rank, then while the other rank's panel has not
/// come, rounds of {MPI_Iprobe that fails, a burst, cblas_dtrsm, cblas_dgemm} (sometimes a first chunk
/// before the first probe), the probe that succeeds, a burst, the receive, and sometimes a leftover round
/// of the update after it; then cblas_daxpy. How many rounds, whether there is a lead or a leftover:
/// varied with nw, the rank and the step (the timing's). The update work of a step is 1000 nw flops,
/// however it is cut. Tags: 50 in step 0, 100 + step after (a first iteration numbered apart); a last
/// send tagged 200 + nw (a tag that changes with the size only).
class PollingUpdate final : public TraceSource {
public:
  /// `requests`: the last send is an MPI_Isend completed by an MPI_Wait (the program uses requests).
  /// `excess_flops`: added to rank 0's first update chunk of step `excess_step` and to its cblas_daxpy of
  /// the step after, as a preemption inflates the work measured in one run.
  explicit PollingUpdate(int nw, bool requests = false, double excess_flops = 0, int excess_step = 1)
      : nw_(nw), requests_(requests), excess_flops_(excess_flops), excess_step_(excess_step)
  {
  }
  int rank_count() const override { return 2; }
  CallStreamPtr open(int rank) const override
  {
    std::vector<CallRecord> calls;
    FunctionTable table;
    auto add = [&](Op op, const char* fn) -> CallRecord& {
      calls.emplace_back();
      calls.back().op       = op;
      calls.back().function = table.intern(fn);
      return calls.back();
    };
    const int other = 1 - rank;
    add(Op::Init, "MPI_Init");
    for (int step = 0; step < nw_; ++step) {
      const std::int32_t tag = step == 0 ? 50 : 100 + step;
      add(Op::Compute, "cblas_dgemm").flops = 50.0 * nw_;
      CallRecord& s = add(Op::Send, "MPI_Send");
      s.peer = other, s.tag = tag, s.bytes = static_cast<std::uint64_t>(8 * nw_);
      const int rounds   = (step * 7 + rank * 3 + nw_) % 5;      // failed probes: 0 to 4
      const bool lead    = rounds > 0 && (step + rank) % 2 == 0;  // a chunk before the first probe
      const bool leftover = (step + rank + nw_) % 3 == 0;         // a chunk after the receive
      const int chunks   = rounds + (lead ? 1 : 0) + (leftover ? 1 : 0);
      const double chunk = chunks > 0 ? 1000.0 * nw_ / chunks : 0.0;
      double excess = rank == 0 && step == excess_step_ ? excess_flops_ : 0.0;
      auto update = [&] {
        add(Op::Compute, "cblas_dtrsm").flops = chunk / 4;
        add(Op::Compute, "cblas_dgemm").flops = 3 * chunk / 4 + excess;
        excess = 0;
      };
      if (lead)
        update();
      for (int k = 0; k < rounds; ++k) {
        CallRecord& p = add(Op::Probe, "MPI_Iprobe");
        p.peer = other, p.tag = tag, p.src = -2;
        add(Op::Compute, "compute");
        update();
      }
      CallRecord& found = add(Op::Probe, "MPI_Iprobe");
      found.peer = other, found.tag = tag, found.src = other, found.recv_tag = tag;
      found.recv_bytes = static_cast<std::uint64_t>(8 * nw_);
      add(Op::Compute, "compute");
      CallRecord& r = add(Op::Recv, "MPI_Recv");
      r.peer = other, r.tag = tag, r.bytes = static_cast<std::uint64_t>(8 * nw_);
      if (leftover)
        update();
      // With no chunk at all, the step's update is done after the receive.
      if (chunks == 0) {
        add(Op::Compute, "cblas_dtrsm").flops = 250.0 * nw_;
        add(Op::Compute, "cblas_dgemm").flops = 750.0 * nw_;
      }
      add(Op::Compute, "cblas_daxpy").flops = 10 + (rank == 0 && step == excess_step_ + 1 ? excess_flops_ : 0.0);
    }
    CallRecord& last = add(requests_ ? Op::Isend : Op::Send, requests_ ? "MPI_Isend" : "MPI_Send");
    last.peer = other, last.tag = 200 + nw_, last.bytes = 8;
    if (requests_) {
      last.request = 0;
      add(Op::Wait, "MPI_Wait").request = 0;
    }
    CallRecord& lr = add(Op::Recv, "MPI_Recv");
    lr.peer = other, lr.tag = 200 + nw_, lr.bytes = 8;
    add(Op::Finalize, "MPI_Finalize");
    return std::make_unique<Vec>(std::move(calls), std::move(table));
  }

private:
  struct Vec final : CallStream {
    Vec(std::vector<CallRecord> c, FunctionTable t) : calls(std::move(c)), table(std::move(t)) {}
    std::vector<CallRecord> calls;
    FunctionTable table;
    std::size_t next_ = 0;
    std::string src = "polling-update";
    bool next(CallRecord& out) override
    {
      if (next_ == calls.size())
        return false;
      out      = calls[next_++];
      out.line = next_;
      return true;
    }
    const FunctionTable& functions() const override { return table; }
    const std::string& source() const override { return src; }
  };
  int nw_;
  bool requests_;
  double excess_flops_;
  int excess_step_ = 1;
};

std::filesystem::path write_polling_update(const TempDir& dir, int nw, bool requests = false, double excess_flops = 0,
                                           const std::string& suffix = "", int excess_step = 1)
{
  std::filesystem::path p = dir / ((requests ? "update-req-nw" : "update-nw") + std::to_string(nw) + suffix);
  RunInfo info;
  info.np     = 2;
  info.nw     = nw;
  info.origin = "test";
  write_profile(PollingUpdate(nw, requests, excess_flops, excess_step), info, p, info.encoding);
  return p;
}

}  // namespace

TEST_CASE("trace model: polls with compute rounds between them are one construct whatever the rounds",
          "[trace_model]")
{
  // P is a poll; a round of it is "burst(C) L M" (library calls L, M) between two of its polls.
  std::vector<bool> poll(26), burst(26), work(26);
  poll['P' - 'A'] = true;
  burst['C' - 'A'] = true;
  for (char c : {'C', 'L', 'M', 'N'})
    work[static_cast<std::size_t>(c - 'A')] = true;
  FoldOptions opt;
  opt.burst_token = burst;
  opt.work_token  = work;
  auto roll = [&](const std::string& s) { return render(fold_sequence(tokens_of(s), poll, opt)); };
  // Three steps of "S, polling with 2, 0 and 4 rounds (a lead chunk L M before the first), R, N":
  // the same loop of 3 whatever the rounds.
  CHECK(roll("S PCLMPCLMP R N  S P R N  S LM PCLMPCLMPCLMPCLMP R N") == "(S P* R N)x3");
  // Without library calls marked as compute, the rounds break the loop (only bursts are absorbed).
  FoldOptions bursts_only;
  bursts_only.burst_token = burst;
  CHECK(render(fold_sequence(tokens_of("S PCLMP R N  S P R N"), poll, bursts_only)) != "(S P* R N)x2");
  // A leftover round after the receive, where another construct has the same calls without it.
  opt.leftover_base[{'P' - 'A', 'R' - 'A'}] = {tokens_of("N")};
  CHECK(roll("S PCLMP R LMN  S PCLMPCLMP R N  S P R LM N") == "(S P* R N)x3");
  // Roles: the construct's first call carries the poll's token, the rest is absorbed.
  auto roles = poll_roles(tokens_of("SLMPCLMPRN"), [&] {
    std::vector<bool> m;
    for (char c : std::string("SLMPCLMPRN"))
      m.push_back(c == 'P');
    return m;
  }(), opt);
  CHECK(roles[0] == kRoleNormal);
  CHECK(roles[1] == 'P' - 'A');
  for (std::size_t i = 2; i < 8; ++i)
    CHECK(roles[i] == kRoleAbsorbed);
  CHECK(roles[8] == kRoleNormal);
}

TEST_CASE("trace model: tags numbered apart in the first iteration, or by the size, are fitted", "[trace_model]")
{
  TagFitter f;
  for (std::uint64_t i = 0; i < 5; ++i)
    f.add({i}, {5}, i == 0 ? 2001 : static_cast<std::int32_t>(2002 + 2 * i));
  auto e = f.result();
  REQUIRE(e);
  CHECK(e->kind == TagExpr::Kind::LoopFirst);
  CHECK(e->text() == "i0 == 0 ? 2001 : 2002 + 2*i0");
  std::uint64_t i0 = 0, i3 = 3, n5 = 5;
  CHECK(e->eval(&i0, &n5, 1) == 2001);
  CHECK(e->eval(&i3, &n5, 1) == 2008);
  // Not affine after the first iteration either: no expression.
  TagFitter g;
  for (std::uint64_t i = 0; i < 4; ++i)
    g.add({i}, {4}, static_cast<std::int32_t>(i * i));
  CHECK_FALSE(g.result());
}

TEST_CASE("trace model: tags affine in several loop indices, counted from a loop's end, are fitted", "[trace_model]")
{
  // A V-cycle's way up, twice (an outer step), at two sizes: levels from the coarsest (count - 1) back to 0,
  // two colours each, tag 2*level + colour. The level loop runs 2 iterations at one size and 4 at the
  // other: no index from the start explains both.
  TagFitter f;
  for (std::uint64_t n : {2, 4})
    for (std::uint64_t step = 0; step < 2; ++step)
      for (std::uint64_t l = 0; l < n; ++l)
        for (std::uint64_t c = 0; c < 2; ++c)
          f.add({step, l, c}, {2, n, 2}, static_cast<std::int32_t>(2 * (n - 1 - l) + c));
  CHECK_FALSE(f.result());
  auto e = f.affine();
  REQUIRE(e);
  CHECK(e->kind == TagExpr::Kind::Affine);
  CHECK(e->text() == "0 + 1*i0 + 2*(n1 - 1 - i1)");
  // At a count training never ran (6 levels): the way up starts at the coarsest level's tags.
  const std::uint64_t first[3] = {0, 0, 1}, last[3] = {0, 5, 0}, counts[3] = {1, 6, 2};
  CHECK(e->eval(first, counts, 3) == 11);
  CHECK(e->eval(last, counts, 3) == 0);
  // The way down, 2*level + colour from the start: affine in two indices, none counted from the end.
  TagFitter down;
  for (std::uint64_t n : {2, 4})
    for (std::uint64_t l = 0; l < n; ++l)
      for (std::uint64_t c = 0; c < 2; ++c)
        down.add({l, c}, {n, 2}, static_cast<std::int32_t>(2 * l + c));
  CHECK_FALSE(down.result());
  auto d = down.affine();
  REQUIRE(d);
  CHECK(d->text() == "0 + 1*i0 + 2*i1");
  // One index explains it: the single-index form, as it always was.
  TagFitter g;
  for (std::uint64_t step = 0; step < 2; ++step)
    for (std::uint64_t i = 0; i < 3; ++i)
      g.add({step, i}, {2, 3}, static_cast<std::int32_t>(2 * (2 - i)));
  auto h = g.result();
  REQUIRE(h);
  CHECK(h->kind == TagExpr::Kind::Loop);
  CHECK(h->text() == "4 - 2*i0");
  // Not affine in any indices: no expression.
  TagFitter k;
  for (std::uint64_t n : {2, 3})
    for (std::uint64_t i = 0; i < n; ++i)
      k.add({i}, {n}, static_cast<std::int32_t>(i * i + n));
  CHECK_FALSE(k.result());
  CHECK_FALSE(k.affine());
}

TEST_CASE("trace model: a polling loop whose rounds vary between profiles and ranks fits and conserves its work",
          "[trace_model]")
{
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int nw : {3, 4, 5, 6})
    profiles.push_back(write_polling_update(dir, nw));
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  // Both ranks at every size run one template, as exact members: the rounds are not structure.
  REQUIRE(model->groups.size() == 1);
  CHECK(model->groups[0].approximate_members == 0);
  CHECK(model->groups[0].members.size() == 4);
  const std::vector<TemplateNode>& body = model->groups[0].body;
  auto loop = std::find_if(body.begin(), body.end(), [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Loop; });
  REQUIRE(loop != body.end());
  CHECK(loop->count.text() == "Nw");
  // One construct per step, holding the step's whole update: 1000 Nw flops however it was cut.
  auto poll = std::find_if(loop->body.begin(), loop->body.end(),
                           [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Poll; });
  REQUIRE(poll != loop->body.end());
  REQUIRE(poll->absorbed_flops);
  CHECK(poll->absorbed_flops->eval(9, 2) == Approx(9000).epsilon(1e-9));
  // What the probes found: the message's 8 Nw bytes, not the mean over the failed probes (0) and the one
  // that found it, which depends on the number of rounds and ran away outside the training range.
  REQUIRE(poll->recv_bytes);
  CHECK(poll->recv_bytes->text() == "8*Nw");
  REQUIRE(poll->tag);
  CHECK(poll->tag->kind == TagExpr::Kind::LoopFirst);

  // Synthesized at an unseen size: per step the panel, the send, the receive posted (an irecv: the rank
  // receives while it updates), the update as one burst, one probe, the wait for the receive, the daxpy;
  // the last send tagged 200 + Nw.
  const int nw = 9;
  SynthSource synth(model, {nw, 2});
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    auto s     = synth.open(r);
    auto calls = gridcast::test::read_all(*s);
    std::map<std::string, int> by_fn;
    double update = 0;
    for (const CallRecord& c : calls) {
      ++by_fn[s->functions().name(c.function)];
      if (s->functions().name(c.function) == "compute")
        update += c.flops;
    }
    CHECK(by_fn["MPI_Iprobe"] == nw);
    CHECK(by_fn["MPI_Recv"] == 2 * nw + 1);  // nw irecv + wait pairs, and the receive outside the loop
    std::map<Op, int> by_op;
    for (const CallRecord& c : calls)
      ++by_op[c.op];
    CHECK(by_op[Op::Irecv] == nw);
    CHECK(by_op[Op::Wait] == nw);
    CHECK(by_op[Op::Recv] == 1);
    // Each irecv comes before the update's burst and the probe, its wait after them.
    for (std::size_t i = 0; i < calls.size(); ++i)
      if (calls[i].op == Op::Irecv) {
        REQUIRE(i + 3 < calls.size());
        CHECK(s->functions().name(calls[i + 1].function) == "compute");
        CHECK(calls[i + 2].op == Op::Probe);
        bool waited = false;
        for (std::size_t k = i + 3; k < calls.size() && not waited && calls[k].op != Op::Irecv; ++k)
          waited = calls[k].op == Op::Wait;
        CHECK(waited);
      }
    CHECK(by_fn["cblas_daxpy"] == nw);
    CHECK(update == Approx(1000.0 * nw * nw).epsilon(1e-6));
    std::vector<std::int32_t> send_tags;
    for (const CallRecord& c : calls)
      if (c.op == Op::Send)
        send_tags.push_back(c.tag);
    REQUIRE(send_tags.size() == static_cast<std::size_t>(nw + 1));
    CHECK(send_tags[0] == 50);
    CHECK(send_tags[4] == 104);
    CHECK(send_tags.back() == 200 + nw);
  }
  // model.json keeps it all.
  const auto file = dir / "model.json";
  write_model(file, *model);
  TraceModel back = read_model(file);
  CHECK(model_to_json(back).dump() == model_to_json(*model).dump());
}

TEST_CASE("trace model: a disturbed run among several at one size moves neither absorbed nor compute work",
          "[trace_model]")
{
  // Three runs at every size; one run at Nw 5 measured one chunk of rank 0's update 200x too long (a
  // preemption), and one of its cblas_daxpy calls 1e5 times. The absorbed work is each run's mean per construct, then the median over the runs at
  // the size: the disturbed run drops out and the work stays 1000 Nw exactly. Their mean would be
  // 5000 + 1e6 / 15 at Nw 5 (+1333 %), and the fit would be the constant 12833.3 (checked).
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int nw : {3, 4, 5, 6})
    for (int run = 0; run < 3; ++run)
      profiles.push_back(write_polling_update(dir, nw, false, nw == 5 && run == 1 ? 1e6 : 0.0,
                                              "-run" + std::to_string(run)));
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 1);
  const std::vector<TemplateNode>& body = model->groups[0].body;
  auto loop = std::find_if(body.begin(), body.end(), [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Loop; });
  REQUIRE(loop != body.end());
  auto poll = std::find_if(loop->body.begin(), loop->body.end(),
                           [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Poll; });
  REQUIRE(poll != loop->body.end());
  REQUIRE(poll->absorbed_flops);
  CHECK(poll->absorbed_flops->text() == "1000*Nw");
  CHECK(poll->absorbed_flops->eval(9, 2) == Approx(9000).epsilon(1e-9));
  // A compute site alike (the latency model's site mean): 10 flops a call; the mean of the runs would be
  // 10 + 1e6 / 30 at Nw 5.
  auto daxpy = std::find_if(loop->body.begin(), loop->body.end(), [&](const TemplateNode& n) {
    return n.kind == RolledNode::Kind::Call && model->tokens[n.token].function == "cblas_daxpy";
  });
  REQUIRE(daxpy != loop->body.end());
  REQUIRE(daxpy->flops);
  CHECK(daxpy->flops->text() == "10");
}

TEST_CASE("trace model: every run disturbed once, each at another step: the per-call median keeps the work",
          "[trace_model]")
{
  // Three runs at every size; at Nw 5 *each* run has one preempted update chunk of rank 0 (+2e5 flops) and
  // one preempted cblas_daxpy (+2e5), run k at step k + 1 (the daxpy at step k + 2). Every run's mean per
  // construct (10: 5 steps, 2 ranks) is then 5000 + 2e5 / 10, so their median is too (+400 %), and the
  // daxpy's 10 + 2e5 / 10.
  // The fit compares the same call across the runs (the same step of the same rank): its median over
  // the three runs is the undisturbed value at every step, and the work stays 1000 Nw and 10 exactly.
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int nw : {3, 4, 5, 6})
    for (int run = 0; run < 3; ++run)
      profiles.push_back(write_polling_update(dir, nw, false, nw == 5 ? 2e5 : 0.0, "-run" + std::to_string(run),
                                              run + 1));
  auto fitted = [&](const std::vector<std::filesystem::path>& paths) {
    TraceModel model = fit_trace_model(paths);
    REQUIRE(model.groups.size() == 1);
    const std::vector<TemplateNode>& body = model.groups[0].body;
    auto loop = std::find_if(body.begin(), body.end(), [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Loop; });
    REQUIRE(loop != body.end());
    auto poll = std::find_if(loop->body.begin(), loop->body.end(),
                             [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Poll; });
    REQUIRE(poll != loop->body.end());
    REQUIRE(poll->absorbed_flops);
    auto daxpy = std::find_if(loop->body.begin(), loop->body.end(), [&](const TemplateNode& n) {
      return n.kind == RolledNode::Kind::Call && model.tokens[n.token].function == "cblas_daxpy";
    });
    REQUIRE(daxpy != loop->body.end());
    REQUIRE(daxpy->flops);
    return std::pair{poll->absorbed_flops->eval(5, 2), daxpy->flops->eval(5, 2)};
  };
  auto [absorbed, daxpy] = fitted(profiles);
  CHECK(absorbed == Approx(5000).epsilon(1e-9));
  CHECK(daxpy == Approx(10).epsilon(1e-9));
  // The runs are compared call by call in the profiles' sorted order: the command line's order does not
  // change a byte of the model.
  std::vector<std::filesystem::path> reversed(profiles.rbegin(), profiles.rend());
  CHECK(model_to_json(fit_trace_model(reversed)).dump() == model_to_json(fit_trace_model(profiles)).dump());
  // Two runs at a size are too few to tell the preempted call from the other: the median of their means
  // (here: their mean) is taken, and the preemptions stay in the work at Nw 5 (checked: the formulas are
  // no longer 1000*Nw and 10 there).
  std::vector<std::filesystem::path> two;
  for (const auto& p : profiles)
    if (p.filename().string().find("-run2") == std::string::npos)
      two.push_back(p);
  auto [absorbed2, daxpy2] = fitted(two);
  CHECK_FALSE(absorbed2 == Approx(5000).epsilon(0.01));
  CHECK_FALSE(daxpy2 == Approx(10).epsilon(0.01));
}

TEST_CASE("trace model: a program that uses requests keeps the receive after its polling construct",
          "[trace_model]")
{
  // The irecv the fit would post before the construct would shift which request every later wait names
  // (request_back counts the requests created since): with an Isend/Wait elsewhere, the receive stays.
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int nw : {3, 4, 5, 6})
    profiles.push_back(write_polling_update(dir, nw, true));
  TraceModel model = fit_trace_model(profiles);
  REQUIRE(model.groups.size() == 1);
  for (const CallToken& t : model.tokens)
    CHECK(not(t.op == Op::Irecv && t.function == "MPI_Recv"));
  const std::vector<TemplateNode>& body = model.groups[0].body;
  auto loop = std::find_if(body.begin(), body.end(), [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Loop; });
  REQUIRE(loop != body.end());
  auto poll = std::find_if(loop->body.begin(), loop->body.end(),
                           [](const TemplateNode& n) { return n.kind == RolledNode::Kind::Poll; });
  REQUIRE(poll != loop->body.end());
  auto recv = std::find_if(poll, loop->body.end(), [&](const TemplateNode& n) {
    return n.kind == RolledNode::Kind::Call && model.tokens[n.token].op == Op::Recv;
  });
  CHECK(recv != loop->body.end());
}

TEST_CASE("trace model: the HPL np-2 example profiles fit with the default options and predict",
          "[trace_model][cli][examples]")
{
  // examples/hpl-hpcc/hpl-np2.tar.xz: HPL's section of real HPCC runs (N 128-320, block size 32), cut as
  // bench/accuracy/real_size.py cuts them. Each step's update-while-probing has a number of rounds set
  // by the timing (0 to hundreds), sometimes a leftover round after the receive, and tags numbered by
  // panel: every rank must still find one template per rank class, and the prediction at 2x and 3.2x the
  // largest size must run to its end (messages matched, tags included).
  using gridcast::test::run_gridcast;
  TempDir dir;
  const std::string source = GRIDCAST_SOURCE_DIR;
  const std::string untar = "tar -xJf '" + source + "/examples/hpl-hpcc/hpl-np2.tar.xz' -C '" + dir.path().string() + "'";
  REQUIRE(std::system(untar.c_str()) == 0);
  std::string args;
  for (int n : {128, 192, 256, 320})
    args += " '" + (dir / "hpl-np2" / ("n" + std::to_string(n))).string() + "'";
  const std::string model = (dir / "model.json").string();
  auto fit = run_gridcast("fit" + args + " -o '" + model + "'");
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK_THAT(fit.output, Catch::Contains("fitted 2 trace group(s)"));
  TraceModel m = read_model(model);
  // Rank 0 founds one group and rank 1 another; every rank 1 is an exact member.
  CHECK(m.groups.at(1).approximate_members == 0);
  bool absorbs = false;
  auto find = [&](auto& self, const std::vector<TemplateNode>& nodes) -> void {
    for (const TemplateNode& n : nodes) {
      absorbs = absorbs || (n.kind == RolledNode::Kind::Poll && n.absorbed_flops.has_value());
      self(self, n.body);
    }
  };
  for (const TraceGroup& g : m.groups)
    find(find, g.body);
  CHECK(absorbs);
  for (int n : {512, 640}) {
    auto predict = run_gridcast("predict '" + model + "' --nw " + std::to_string(n) +
                                " --np 2 --ranks-per-host 2 --no-timeline --platform '" + source +
                                "/platforms/this-machine/platform.xml'");
    INFO(predict.output);
    REQUIRE(predict.exit_code == 0);
    CHECK_THAT(predict.output, Catch::Contains("makespan: "));
  }
}

TEST_CASE("trace model: a profile with MPI_Comm_spawn cannot be fitted: the error names file, line and rank",
          "[trace_model]")
{
  TempDir dir;
  const std::vector<std::string> ranks = {
      "{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n{\"op\":\"barrier\",\"fn\":\"MPI_Barrier\"}\n",
      "{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n"
      "{\"op\":\"dynamic_process\",\"fn\":\"MPI_Comm_spawn\",\"root\":0,\"color\":2,\"new_comm\":3}\n"
      "{\"op\":\"barrier\",\"fn\":\"MPI_Barrier\"}\n"};
  gridcast::test::write_jsonl_profile(dir / "a", ranks);
  gridcast::test::write_jsonl_profile(dir / "b", ranks);
  auto e = gridcast::test::expect_input_error([&] { fit_trace_model({dir / "a", dir / "b"}); });
  CHECK(e.context().rank == 1);
  CHECK(e.context().line == 2);
  CHECK_THAT(e.context().file, Catch::Contains("rank-00001.jsonl"));
  CHECK_THAT(e.reason(), Catch::Contains("dynamic process management (MPI_Comm_spawn) cannot be replayed: the spawned "
                                         "processes are not in the profile"));
}

namespace {

/// A 2-rank profile of `nw` steps: each rank posts 2 receives and 2 sends to the other, then completes
/// them with a loop of MPI_Waitsome whose number of calls (1 to 4) depends on `seed` -- on timing, in a
/// real run -- with compute between its calls, then computes nw ms. One rank's JSON lines.
std::string waitsome_rank(int rank, int nw, int seed)
{
  auto rec = [](const std::string& body) { return "{" + body + "}\n"; };
  std::string out = rec("\"op\":\"init\",\"fn\":\"MPI_Init\"");
  std::int64_t id = 0;
  const std::string peer = std::to_string(1 - rank), bytes = std::to_string(1000 * nw);
  for (int step = 0; step < nw; ++step) {
    std::vector<std::int64_t> ids;
    for (const char* op : {"irecv", "irecv", "isend", "isend"}) {
      out += rec(std::string("\"op\":\"") + op + "\",\"fn\":\"MPI_I" + (op[1] == 'r' ? "recv" : "send") +
                 "\",\"peer\":" + peer + ",\"tag\":" + std::to_string(ids.size() % 2) + ",\"bytes\":" + bytes +
                 ",\"request\":" + std::to_string(id));
      ids.push_back(id++);
    }
    // how the four completions fell into calls: 4, 1+3, 2+2 or 1+1+1+1
    static const std::vector<std::vector<int>> kSplits = {{4}, {1, 3}, {2, 2}, {1, 1, 1, 1}};
    const auto& split = kSplits[static_cast<std::size_t>(seed + step * (rank + 1)) % kSplits.size()];
    std::size_t next = 0;
    for (std::size_t c = 0; c < split.size(); ++c) {
      if (c > 0)
        out += rec("\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.00001");
      std::string list;
      for (int k = 0; k < split[c]; ++k)
        list += (k ? "," : "") + std::to_string(ids[next++]);
      out += rec("\"op\":\"waitall\",\"fn\":\"MPI_Waitsome\",\"seconds\":0.0001,\"requests\":[" + list + "]");
    }
    out += rec("\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":" + std::to_string(0.001 * nw));
  }
  return out + rec("\"op\":\"finalize\",\"fn\":\"MPI_Finalize\"");
}

}  // namespace

TEST_CASE("trace model: a completion loop whose call count varies with timing is one construct", "[trace_model]")
{
  TempDir dir;
  std::vector<std::filesystem::path> profiles;
  for (int nw : {3, 4, 5})
    for (int seed : {0, 1}) {  // two runs of each size, their loops cut differently
      auto p = dir / ("nw" + std::to_string(nw) + "-" + std::to_string(seed));
      gridcast::test::write_jsonl_profile(p, {waitsome_rank(0, nw, seed), waitsome_rank(1, nw, seed)}, 1e9, nw);
      profiles.push_back(p);
    }
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->groups.size() == 1);
  // Synthesized at twice the largest size: each step waits for its four requests at once, after the
  // loop's own time.
  SynthSource src(model, {10, 2});
  auto stream = src.open(1);
  CallRecord r;
  int waits = 0;
  std::int64_t irecvs = 0;
  while (stream->next(r)) {
    if (r.op == Op::Irecv)
      ++irecvs;
    if (r.op == Op::Waitall) {
      ++waits;
      CHECK(r.requests.size() == 4);
      CHECK(stream->functions().name(r.function) == "MPI_Waitsome");
    }
  }
  CHECK(waits == 10);
  CHECK(irecvs == 20);
}
