// Tests of numbered loops with rotating roles: the role rule on (rank - k) mod Np, sizes affine in the
// iteration, and fit + synthesis end to end on a program shaped like HPL's panel loop on a 1 x Q grid.
#include "../models/models_support.hpp"

#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

/// HPL's structure on a 1 x Np grid, as a known generator. Panels k = 0 .. K-1 (K = nw): rank k mod Np
/// owns panel k and starts a ring broadcast (tag 2001 + k, a panel that shrinks by 64 bytes per step);
/// then a back substitution walks the panels downwards, one hop per panel from the owner of panel K - k
/// to its left neighbour (tags 3001 + 2k); an allreduce closes the run.
class PanelRing final : public TraceSource {
public:
  PanelRing(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("panel-ring");
    s->add(Op::Init, "MPI_Init");
    const int next = (rank + 1) % np_, prev = (rank + np_ - 1) % np_;
    for (int k = 0; k < nw_; ++k) {
      const int v = ((rank - k) % np_ + np_) % np_;
      const auto bytes = static_cast<std::uint64_t>(64 * (nw_ - k) + 8);
      if (v != 0) {
        CallRecord& r = s->add(Op::Recv, "MPI_Recv");
        r.peer = prev, r.tag = 2001 + k, r.bytes = bytes;
      }
      if (v != np_ - 1) {
        CallRecord& r = s->add(Op::Send, "MPI_Send");
        r.peer = next, r.tag = 2001 + k, r.bytes = bytes;
      }
    }
    for (int k = 0; k < nw_; ++k) {
      const int sender = (nw_ - k) % np_;
      const auto bytes = static_cast<std::uint64_t>(8 * (np_ - 1));
      if (rank == sender) {
        CallRecord& r = s->add(Op::Send, "MPI_Send");
        r.peer = prev, r.tag = 3001 + 2 * k, r.bytes = bytes;
      } else if (rank == (sender + np_ - 1) % np_) {
        CallRecord& r = s->add(Op::Recv, "MPI_Recv");
        r.peer = next, r.tag = 3001 + 2 * k, r.bytes = bytes;
      }
    }
    CallRecord& a = s->add(Op::Allreduce, "MPI_Allreduce");
    a.bytes       = 8;
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

using gridcast::test::require_same_streams;

}  // namespace

TEST_CASE("numbered loops: the role of a ring broadcast is the distance from the panel's owner", "[trace_model]")
{
  // Variant 0: the owner (sends), 1: the end of the ring (receives), 2: the others (receive, send).
  std::vector<RoleObservation> obs;
  for (int np : {4, 8})
    for (std::uint64_t k = 0; k < 12; ++k)
      for (int r = 0; r < np; ++r) {
        const int v = static_cast<int>((r - static_cast<int>(k % static_cast<std::uint64_t>(np)) + np) % np);
        obs.push_back({r, np, k, v == 0 ? 0 : v == np - 1 ? 1 : 2, "np" + std::to_string(np)});
      }
  RoleRule rule = infer_role_rule(obs);
  CHECK(rule.role.kind == LoopRole::Kind::Behind);
  CHECK(rule.classifier.name() == "first+last");
  CHECK(rule.text() == "variant by first+last of (r-k) mod Np");
  // At an Np never trained on, rank 70 of 256 owns panel 326 and is the end of the ring of panel 71.
  CHECK(rule.variant_of(70, 256, 326) == 0);
  CHECK(rule.variant_of(70, 256, 71) == 1);
  CHECK(rule.variant_of(70, 256, 5) == 2);
  // A rule that does not rotate (the same rank always owns the panel) is the simpler one, found first.
  for (RoleObservation& o : obs)
    o.variant = o.rank == 0 ? 0 : 1;
  CHECK(infer_role_rule(obs).role.kind == LoopRole::Kind::Fixed);
}

TEST_CASE("numbered loops: no role rule is an error that names both observations", "[trace_model]")
{
  // Variants drawn from a rank-and-iteration hash: no role explains them.
  std::vector<RoleObservation> obs;
  for (std::uint64_t k = 0; k < 16; ++k)
    for (int r = 0; r < 8; ++r)
      obs.push_back({r, 8, k, static_cast<int>((static_cast<std::uint64_t>(r) * 7919 + k * k * 31) % 5), "p"});
  CHECK_THROWS_WITH(infer_role_rule(obs), Catch::Contains("no role rule explains") && Catch::Contains("in iteration"));
}

TEST_CASE("numbered loops: a size affine in the iteration, and one that is not", "[trace_model]")
{
  std::vector<LoopFitPoint> pts;
  for (double nw : {384.0, 512.0, 640.0})
    for (double np : {4.0, 8.0})
      for (std::uint64_t k = 0; k < 10; ++k)
        pts.push_back({nw, np, k, 136 + 128 * nw - 2048 * static_cast<double>(k)});
  std::string why;
  auto f = fit_loop_formula(pts, true, why);
  REQUIRE(f);
  CHECK(f->text() == "136 + 128*Nw - 2048*k");
  CHECK(f->eval(2560, 256, 100) == 136 + 128 * 2560 - 2048 * 100);
  pts.push_back({384, 4, 10, 5});  // a last iteration apart
  CHECK_FALSE(fit_loop_formula(pts, true, why));
  CHECK_THAT(why, Catch::Contains("iteration 10") && Catch::Contains("not affine"));
}

TEST_CASE("numbered loops: a pipeline's sizes, a plateau and a first iteration apart", "[trace_model]")
{
  // HPL's back substitution: iteration 0 carries the whole vector (8 N bytes), then at most Np - 1
  // pieces of 128 bytes, fewer as the panels run out: min(128 (Np - 1), 8 N - 128 k).
  auto size = [](double nw, double np, std::uint64_t k) {
    return k == 0 ? 8 * nw : std::min(128 * (np - 1), 8 * nw - 128 * static_cast<double>(k));
  };
  std::vector<LoopFitPoint> pts;
  for (double nw : {384.0, 512.0, 640.0})
    for (double np : {4.0, 8.0, 16.0})
      for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(nw / 16); ++k)
        pts.push_back({nw, np, k, size(nw, np, k)});
  std::string why;
  auto f = fit_loop_formula(pts, true, why);
  REQUIRE(f);
  CHECK(f->text() == "min(-128 + 128*Np, 8*Nw - 128*k); k = 0: 8*Nw");
  // At np 256 and N 2560 (160 panels) the plateau is never reached: every size is on the line.
  for (std::uint64_t k : {0, 1, 2, 40, 159})
    CHECK(f->eval(2560, 256, k) == size(2560, 256, k));
  CHECK(f->eval(2560, 64, 3) == size(2560, 64, 3));
}

TEST_CASE("numbered loops: HPL's panel loop on a 1 x Q grid fits and extrapolates exactly", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "ring", {4, 8, 16}, {16, 24, 32}, TraceEncoding::Binary,
                                           [](int nw, int np) { return PanelRing(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->numbered.size() == 2);
  const NumberedLoop& bcast = model->numbered[0];
  CHECK(bcast.count.text() == "Nw");
  CHECK(bcast.first_tag.text() == "2001");
  CHECK(bcast.tag_step == 1);
  CHECK_FALSE(bcast.from_end);
  CHECK(bcast.rule.text() == "variant by first+last of (r-k) mod Np");
  const NumberedLoop& back = model->numbered[1];
  CHECK(back.tag_step == 2);
  CHECK(back.from_end);
  CHECK(back.shift == 1);
  CHECK(model->warnings.empty());
  // Every rank runs the same template around the loops: one group.
  CHECK(model->groups.size() == 1);
  require_same_streams(SynthSource(model, {48, 64}), PanelRing(48, 64));
  require_same_streams(SynthSource(model, {40, 32}), PanelRing(40, 32));

  // model.json keeps them, and reads back to the same synthesis, byte for byte the same model.
  const auto file = dir.path() / "model.json";
  write_model(file, *model);
  auto again = std::make_shared<const TraceModel>(read_model(file));
  CHECK(model_to_json(*again).dump() == model_to_json(*model).dump());
  require_same_streams(SynthSource(again, {48, 64}), PanelRing(48, 64));
}

TEST_CASE("numbered loops: model.json's numbered_loops are read strictly", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "ring", {4, 8}, {16, 24}, TraceEncoding::Binary,
                                           [](int nw, int np) { return PanelRing(nw, np); });
  nlohmann::json j = model_to_json(fit_trace_model(profiles));
  REQUIRE(j.contains("numbered_loops"));
  nlohmann::json bad = j;
  bad["numbered_loops"][0]["role"]["colour"] = 1;
  CHECK_THROWS_WITH(model_from_json(bad, "m.json"), Catch::Contains("numbered_loops[0].role") && Catch::Contains("colour"));
  bad = j;
  bad["numbered_loops"][0]["role"]["role"] = "(r*k) mod Np";
  CHECK_THROWS_WITH(model_from_json(bad, "m.json"), Catch::Contains("unknown loop role"));
  bad = j;
  bad["numbered_loops"][0]["variants"][0][0]["fn"] = "MPI_Bcast";
  CHECK_THROWS_WITH(model_from_json(bad, "m.json"), Catch::Contains("is not the function of token"));
}

// ---- binomial tree sequences ---------------------------------------------------------------------------

namespace {

/// A code that implements its own collectives as HPL does (HPL_all_reduce, HPL_broadcast): an allreduce
/// (a reduction to rank 0, then a broadcast from it) and a broadcast of 60 bytes at the start; after some
/// work, a broadcast of 8 Nw bytes from rank Nw mod Np (the owner of the last block).
class OwnTrees final : public TraceSource {
public:
  OwnTrees(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("own-trees");
    s->add(Op::Init, "MPI_Init");
    auto tree = [&](TreeOp::Kind kind, int root, std::uint64_t bytes) {
      for (auto [send, peer] : tree_calls(kind, root, rank, np_)) {
        CallRecord& c = s->add(send ? Op::Send : Op::Recv, send ? "MPI_Send" : "MPI_Recv");
        c.peer = peer, c.tag = 9001, c.bytes = bytes;
      }
    };
    tree(TreeOp::Kind::Reduce, 0, 8);
    tree(TreeOp::Kind::Bcast, 0, 8);
    tree(TreeOp::Kind::Bcast, 0, 60);
    s->add(Op::Compute, "compute").flops = 1000.0 * nw_;
    tree(TreeOp::Kind::Bcast, nw_ % np_, static_cast<std::uint64_t>(8 * nw_));
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
};

}  // namespace

TEST_CASE("binomial trees: HPL's order of the calls of each rank", "[trace_model]")
{
  using V = std::vector<std::pair<bool, int>>;
  // Broadcast from the top level down: rank 0 of 8 sends to 4, 2, 1; rank 4 receives from 0, sends to 6, 5.
  CHECK(tree_calls(TreeOp::Kind::Bcast, 0, 0, 8) == V{{true, 4}, {true, 2}, {true, 1}});
  CHECK(tree_calls(TreeOp::Kind::Bcast, 0, 4, 8) == V{{false, 0}, {true, 6}, {true, 5}});
  CHECK(tree_calls(TreeOp::Kind::Bcast, 0, 7, 8) == V{{false, 6}});
  // Rooted at 3: distances from the root.
  CHECK(tree_calls(TreeOp::Kind::Bcast, 3, 3, 4) == V{{true, 1}, {true, 0}});
  // Reduction from the bottom up: rank 0 receives from 1, 2, 4; rank 4 from 5, 6, then sends to 0.
  CHECK(tree_calls(TreeOp::Kind::Reduce, 0, 0, 8) == V{{false, 1}, {false, 2}, {false, 4}});
  CHECK(tree_calls(TreeOp::Kind::Reduce, 0, 4, 8) == V{{false, 5}, {false, 6}, {true, 0}});
  CHECK(tree_calls(TreeOp::Kind::Bcast, 0, 0, 1).empty());
}

TEST_CASE("binomial trees: a code's own broadcasts and reductions fit and extrapolate", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "trees", {4, 8, 16}, {5, 6, 7}, TraceEncoding::Binary,
                                           [](int nw, int np) { return OwnTrees(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->trees.size() == 2);
  CHECK(model->trees[0].ops.size() == 3);
  REQUIRE(model->trees[1].ops.size() == 1);
  CHECK(model->trees[1].ops[0].root.text() == "Nw");
  CHECK(model->trees[1].ops[0].bytes.text() == "8*Nw");
  // A rank's depth in the trees (its trailing zero bits) no longer splits the ranks into groups.
  CHECK(model->groups.size() == 1);
  require_same_streams(SynthSource(model, {37, 64}), OwnTrees(37, 64));
  require_same_streams(SynthSource(model, {100, 256}), OwnTrees(100, 256));
  // Trained at powers of two only: another Np is outside what the model knows.
  CHECK_THROWS_WITH(SynthSource(model, {37, 12}), Catch::Contains("powers of two"));

  const auto file = dir.path() / "model.json";
  write_model(file, *model);
  auto again = std::make_shared<const TraceModel>(read_model(file));
  CHECK(model_to_json(*again).dump() == model_to_json(*model).dump());
  require_same_streams(SynthSource(again, {37, 64}), OwnTrees(37, 64));
}
