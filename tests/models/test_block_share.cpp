// Tests of sizes and work that differ between ranks as their blocks of a block decomposition do
// (trace_block.hpp; docs/reference/trace-model.md, "Sizes that differ between ranks as their blocks do").
#include "../models/models_support.hpp"
#include "gridcast/models/trace_block.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_rules.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>
#include <functional>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::read_all;
using gridcast::test::require_same_streams;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

/// Every rank's value of `truth(nw, np, rank)` at each point, or only the ranks `keep` selects.
std::vector<RankFitPoint> rank_values(std::initializer_list<int> nps, std::initializer_list<int> nws,
                                  const std::function<double(int, int, int)>& truth,
                                  const std::function<bool(int, int)>& keep = [](int, int) { return true; })
{
  std::vector<RankFitPoint> out;
  for (int np : nps)
    for (int nw : nws)
      for (int r = 0; r < np; ++r)
        if (keep(r, np))
          out.push_back({static_cast<double>(nw), np, r, truth(nw, np, r)});
  return out;
}

/// Rank r's block along `axis` of the dims_create(np, d) grid, of `cells` cells.
std::int64_t block_of(int cells, int np, int d, int axis, int r)
{
  const auto dims   = dims_create(np, d);
  const auto coords = grid_coords(r, dims);
  return block_extent(cells, dims[static_cast<std::size_t>(axis)], coords[static_cast<std::size_t>(axis)]);
}

/// Whether `b` gives `truth` for every rank at (nw, np).
void require_every_rank(const BlockShare& b, int nw, int np, const std::function<double(int, int, int)>& truth)
{
  const auto grid = dims_create(np, b.dims);
  for (int r = 0; r < np; ++r) {
    INFO("rank " << r << " of " << np << ", " << b.text());
    CHECK(b.eval(nw, grid, grid_coords(r, grid)) == Approx(truth(nw, np, r)).epsilon(1e-12));
  }
}

/// A periodic 2-D halo on the dims_create(Np, 2) grid over a global (8 Nw) x (8 Nw) grid split in blocks
/// (the first ranks along an axis one cell more): each step a sendrecv along each axis carrying the face
/// (6 fields of 8 bytes per cell of the other axis' block; tagged by the axis, so two call sites, not a
/// loop over the axes), then 10 flop per cell of the block.
class UnevenHalo final : public TraceSource {
public:
  UnevenHalo(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    const auto d = dims_create(np_, 2);
    const auto c = grid_coords(rank, d);
    const std::int64_t bx = block_extent(8 * nw_, d[0], c[0]), by = block_extent(8 * nw_, d[1], c[1]);
    auto s = std::make_unique<MemoryStream>("uneven");
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < 3; ++step) {
      for (std::size_t axis = 0; axis < 2; ++axis) {
        CallRecord& x = s->add(Op::Sendrecv, "MPI_Sendrecv");
        x.peer        = *grid_neighbour(rank, d, axis, 1, true);
        x.src         = *grid_neighbour(rank, d, axis, -1, true);
        x.tag = x.recv_tag = static_cast<std::int32_t>(axis + 1);
        x.bytes = x.recv_bytes = static_cast<std::uint64_t>(48 * (axis == 0 ? by : bx));
      }
      s->add(Op::Compute, "compute").flops = 10.0 * static_cast<double>(bx * by);
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

}  // namespace

TEST_CASE("block share: a 1-D split over the ranks in a line", "[trace_model]")
{
  auto truth = [](int nw, int np, int r) { return 12.0 * static_cast<double>(block_extent(1024L * nw, np, r)); };
  auto b     = fit_block_share(rank_values({6, 12, 24}, {8, 16, 24}, truth), true);
  REQUIRE(b);
  CHECK(b->text() == "12*block(1024*Nw, dims1[0])");
  require_every_rank(*b, 48, 96, truth);
  require_every_rank(*b, 7, 1000, truth);
}

TEST_CASE("block share: a face of a 2-D block and the block's work", "[trace_model]")
{
  auto face = [](int nw, int np, int r) { return 288.0 * static_cast<double>(block_of(8 * nw, np, 2, 1, r)); };
  auto b    = fit_block_share(rank_values({6, 12, 24}, {4, 6, 8}, face), true);
  REQUIRE(b);
  CHECK(b->text() == "288*block(8*Nw, dims2[1])");
  require_every_rank(*b, 16, 96, face);

  auto work = [](int nw, int np, int r) {
    return 1080.0 * static_cast<double>(block_of(8 * nw, np, 2, 0, r) * block_of(8 * nw, np, 2, 1, r));
  };
  auto w = fit_block_share(rank_values({6, 12, 24}, {4, 6, 8}, work), false);
  REQUIRE(w);
  CHECK(w->text() == "1080*block(8*Nw, dims2[0])*block(8*Nw, dims2[1])");
  require_every_rank(*w, 16, 96, work);
}

TEST_CASE("block share: axes of different extents in a 3-D grid", "[trace_model]")
{
  // A (4 Nw) x (3 Nw) x Nw domain: a face normal to axis 2 is the product of the other two blocks.
  auto face = [](int nw, int np, int r) {
    return 8.0 * static_cast<double>(block_of(4 * nw, np, 3, 0, r) * block_of(3 * nw, np, 3, 1, r));
  };
  auto b = fit_block_share(rank_values({8, 12, 18, 27}, {5, 7}, face), true);
  REQUIRE(b);
  CHECK(b->text() == "8*block(4*Nw, dims3[0])*block(3*Nw, dims3[1])");
  require_every_rank(*b, 11, 60, face);
}

TEST_CASE("block share: a group of one rank per grid line (the corners) is read from the extents' list", "[trace_model]")
{
  // Only rank 0 of each run: no two ranks of a line to compare, so the global extent comes from the
  // generic list of extents per Nw, the smallest that reproduces every point.
  auto face = [](int nw, int np, int r) { return 288.0 * static_cast<double>(block_of(8 * nw, np, 2, 1, r)); };
  auto b    = fit_block_share(rank_values({6, 12, 24}, {4, 5, 6, 7, 8}, face, [](int r, int) { return r == 0; }), true);
  REQUIRE(b);
  const auto grid = dims_create(96, 2);
  for (int nw : {16, 17, 33})
    CHECK(b->eval(nw, grid, grid_coords(0, grid)) == face(nw, 96, 0));
}

TEST_CASE("block share: nothing where the blocks always divide or the values are not a block split", "[trace_model]")
{
  // Even blocks everywhere in training: a formula of (Nw, Np) says the same, and no share is fitted.
  auto even = [](int nw, int np, int r) { return 8.0 * static_cast<double>(block_extent(12L * nw * np, np, r)); };
  CHECK_FALSE(fit_block_share(rank_values({2, 4, 8}, {3, 5}, even), true));
  // Three sizes along one line of ranks: no block split gives them.
  auto three = [](int nw, int, int r) { return static_cast<double>(nw * (10 + r % 3)); };
  CHECK_FALSE(fit_block_share(rank_values({6, 12}, {4, 6}, three), true));
  // A single training point cannot tell an extent per Nw.
  CHECK_FALSE(fit_block_share(rank_values({6}, {4}, [](int nw, int np, int r) {
                                return 8.0 * static_cast<double>(block_extent(8L * nw, np, r));
                              }),
                              true));
}

TEST_CASE("block share: a halo on an uneven 2-D split fits every rank's faces and work, through model.json",
          "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "uneven", {6, 12, 24}, {4, 5, 6}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return UnevenHalo(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  // No warning that a mean stands in for sizes that differ between ranks.
  CHECK(std::none_of(model->warnings.begin(), model->warnings.end(),
                     [](const std::string& w) { return w.find("fitted on their mean") != std::string::npos; }));
  const std::string json = model_to_json(*model).dump();
  CHECK_THAT(json, Catch::Contains("48*block(8*Nw, dims2[1])") && Catch::Contains("48*block(8*Nw, dims2[0])") &&
                       Catch::Contains("10*block(8*Nw, dims2[0])*block(8*Nw, dims2[1])"));
  // 96 ranks are 12 x 8: 11 Nw = 88 cells leave 4 over on the first axis, none on the second.
  require_same_streams(SynthSource(model, {11, 96}), UnevenHalo(11, 96));
  write_model(dir / "m.json", *model);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(dir / "m.json")), {13, 40}),
                       UnevenHalo(13, 40));
}

TEST_CASE("block share: model.json with a malformed block share names the key", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "uneven", {6, 12, 24}, {4, 5, 6}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return UnevenHalo(nw, np); });
  nlohmann::json j = model_to_json(fit_trace_model(profiles));
  // The first block share in the document, wherever it is.
  std::function<nlohmann::json*(nlohmann::json&)> find = [&](nlohmann::json& v) -> nlohmann::json* {
    if (v.is_object()) {
      if (v.contains("bytes_block"))
        return &v["bytes_block"];
      for (auto& [k, x] : v.items())
        if (auto* f = find(x))
          return f;
    } else if (v.is_array()) {
      for (auto& x : v)
        if (auto* f = find(x))
          return f;
    }
    return nullptr;
  };
  for (const auto& [key, bad, says] : std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"dims", 4, "dims"}, {"coef", -2.0, "coef"}, {"axes", nlohmann::json::array(), "at least one axis"}}) {
    nlohmann::json copy = j;
    nlohmann::json* b   = find(copy);
    REQUIRE(b != nullptr);
    (*b)[key] = bad;
    INFO(key);
    try {
      model_from_json(copy, "m.json");
      FAIL("accepted");
    } catch (const gridcast::InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("bytes_block") && Catch::Contains(says));
    }
  }
}
