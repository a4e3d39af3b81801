// Communicators whose color and key differ from rank to rank, as gridcast's profiler records them on a real
// run (and under SMPI, scripts/smpi-hook.sh): MPI_Comm_split's row and column communicators of a process
// grid (color the row, key the column), MPI_Cart_sub's lines (color the first rank of the line, key the
// place in it). The fit keeps such a color or key out of the call's token and fits it as a rank
// expression of the MPI_Dims_create grid, so the ranks share one template and the target gets the
// communicators of its own grid. See docs/reference/trace-model.md.
#include "../models/models_support.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_rules.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::read_all;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

/// SUMMA's communicators on the P x Q = MPI_Dims_create(Np, 2) grid: MPI_Comm_split(world, row, col) and
/// MPI_Comm_split(world, col, row), then per step a broadcast along each and some work.
class RowsAndColumns final : public TraceSource {
public:
  RowsAndColumns(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    const std::vector<int> d = dims_create(np_, 2);
    const int row = rank / d[1], col = rank % d[1];
    auto s = std::make_unique<MemoryStream>("summa");
    s->add(Op::Init, "MPI_Init");
    CallRecord& rows = s->add(Op::CommSplit, "MPI_Comm_split");
    rows.color       = row;
    rows.key         = col;
    rows.new_comm    = 1;
    CallRecord& cols = s->add(Op::CommSplit, "MPI_Comm_split");
    cols.color       = col;
    cols.key         = row;
    cols.new_comm    = 2;
    for (int step = 0; step < 3; ++step) {
      CallRecord& a = s->add(Op::Bcast, "MPI_Bcast");
      a.comm        = 1;
      a.bytes       = static_cast<std::uint64_t>(64 * nw_);
      CallRecord& b = s->add(Op::Bcast, "MPI_Bcast");
      b.comm        = 2;
      b.bytes       = static_cast<std::uint64_t>(64 * nw_);
      s->add(Op::Compute, "compute").flops = 1000.0 * nw_;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

/// A periodic 3-D MPI_Cart_create grid, the lines along its last axis (MPI_Cart_sub keeping axis 2) and
/// the planes of its first two axes, written as the profiler writes creations: color the world rank of
/// the new communicator's rank 0, key the rank in it; an allreduce on each line, a reduce on each plane.
class CartLines final : public TraceSource {
public:
  CartLines(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    const std::vector<int> d = dims_create(np_, 3);
    auto s = std::make_unique<MemoryStream>("cart-lines");
    s->add(Op::Init, "MPI_Init");
    CallRecord& cart = s->add(Op::CommSplit, "MPI_Cart_create");
    cart.key         = rank;
    cart.new_comm    = 1;
    CallRecord& line = s->add(Op::CommSplit, "MPI_Cart_sub");
    line.comm        = 1;
    line.color       = rank - rank % d[2];
    line.key         = rank % d[2];
    line.new_comm    = 2;
    // The plane of axes 0 and 1 through the rank: its first rank has coordinates (0, 0, c2).
    CallRecord& plane = s->add(Op::CommSplit, "MPI_Cart_sub");
    plane.comm        = 1;
    plane.color       = rank % d[2];
    plane.key         = rank / d[2];
    plane.new_comm    = 3;
    for (int step = 0; step < 2; ++step) {
      s->add(Op::Compute, "compute").flops = 500.0 * nw_;
      CallRecord& r = s->add(Op::Allreduce, "MPI_Allreduce");
      r.comm        = 2;
      r.bytes       = 8;
      CallRecord& p = s->add(Op::Reduce, "MPI_Reduce");
      p.comm        = 3;
      p.bytes       = 16;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

std::vector<CallRecord> splits_of(const SynthSource& synth, int rank)
{
  std::vector<CallRecord> out;
  for (const CallRecord& c : read_all(*synth.open(rank)))
    if (c.op == Op::CommSplit)
      out.push_back(c);
  return out;
}

}  // namespace

TEST_CASE("split colors: grid coordinates and sub-grid origins of the MPI_Dims_create grid", "[trace_model]")
{
  // dims_create(12, 2) = 4 x 3: rank 7 is row 2, column 1.
  RankExpr coords{RankExpr::Kind::GridCoords, 1};
  coords.dims = 2;
  CHECK(coords.eval(7, 12, nullptr, 0) == 2);
  coords.a = 2;
  CHECK(coords.eval(7, 12, nullptr, 0) == 1);
  coords.a = 3;  // both axes: the rank itself
  CHECK(coords.eval(7, 12, nullptr, 0) == 7);
  RankExpr origin{RankExpr::Kind::GridOrigin, 2};
  origin.dims = 2;
  CHECK(origin.eval(7, 12, nullptr, 0) == 6);  // the first rank of row 2
  origin.a = 1;
  CHECK(origin.eval(7, 12, nullptr, 0) == 1);  // the first rank of column 1
  CHECK(origin.text() == "origin2(r, axes 0)");
  // dims_create(96, 3) = 6 x 4 x 4: rank 45 is (2, 3, 1); its line along axis 2 starts at 44.
  RankExpr line{RankExpr::Kind::GridOrigin, 4};
  line.dims = 3;
  CHECK(line.eval(45, 96, nullptr, 0) == 44);
  // A mask naming no axis, or an axis the grid does not have, has no value.
  line.a = 0;
  CHECK_FALSE(line.eval(45, 96, nullptr, 0).has_value());
  line.a = 8;
  CHECK_FALSE(line.eval(45, 96, nullptr, 0).has_value());
  // Only asked for: peers never get these candidates.
  const auto peer_candidates = rank_expr_candidates({7, 12, {}, 2});
  CHECK(std::none_of(peer_candidates.begin(), peer_candidates.end(),
                     [](const RankExpr& e) { return e.kind == RankExpr::Kind::GridCoords; }));
  const auto split_candidates = rank_expr_candidates({7, 12, {}, 2}, true);
  CHECK(std::any_of(split_candidates.begin(), split_candidates.end(),
                    [](const RankExpr& e) { return e.kind == RankExpr::Kind::GridCoords; }));
}

TEST_CASE("split colors: MPI_Comm_split row and column communicators follow the target's grid", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "summa", {4, 8, 16}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return RowsAndColumns(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  // One template for every rank: colors and keys are expressions, not part of the calls.
  REQUIRE(model->groups.size() == 1);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("coords2(r, axes 0)") && Catch::Contains("coords2(r, axes 1)"));
  // 48 ranks: a 8 x 6 grid no training run had.
  SynthSource synth(model, {4, 48});
  for (int rank : {0, 5, 6, 29, 47}) {
    const auto splits = splits_of(synth, rank);
    REQUIRE(splits.size() == 2);
    CHECK(splits[0].color == rank / 6);
    CHECK(splits[0].key == rank % 6);
    CHECK(splits[1].color == rank % 6);
    CHECK(splits[1].key == rank / 6);
  }
  // model.json keeps the expressions, and refuses a color expression on a call whose color is constant.
  const TraceModel back = model_from_json(nlohmann::json::parse(json), "model.json");
  CHECK(model_to_json(back).dump(2) == json);
  nlohmann::json bad = nlohmann::json::parse(json);
  for (auto& t : bad["tokens"])
    if (t.value("function", "") == "MPI_Comm_split")
      t.erase("color");
  auto err = gridcast::test::expect_input_error([&] { model_from_json(bad, "model.json"); });
  CHECK_THAT(std::string(err.what()), Catch::Contains("color") && Catch::Contains("varies"));
}

TEST_CASE("split colors: MPI_Cart_sub lines start at the first rank of each line of the target's grid",
          "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "cart", {8, 16, 32}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return CartLines(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 1);
  // 96 ranks: dims_create(96, 3) = 6 x 4 x 4, lines of 4 ranks along the last axis.
  SynthSource synth(model, {3, 96});
  for (int rank : {0, 3, 45, 95}) {
    const auto splits = splits_of(synth, rank);
    REQUIRE(splits.size() == 3);
    CHECK(splits[0].key == rank);
    CHECK(splits[1].color == rank - rank % 4);
    CHECK(splits[1].key == rank % 4);
    CHECK(splits[2].color == rank % 4);
    CHECK(splits[2].key == rank / 4);
  }
}
