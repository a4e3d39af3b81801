// Tests of the grid_offset rank expression: a diagonal neighbour in an MPI_Dims_create grid, moved along
// two axes or three (the edge and corner neighbours of a 9- or 27-point stencil's halo).
#include "../models/models_support.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::require_same_streams;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

/// The rank at `offsets` from `rank` in the dims_create(np, offsets.size()) grid, -1 off a non-periodic
/// edge. Written from the coordinates, independently of RankExpr.
int moved_by(int rank, int np, const std::vector<int>& offsets, bool periodic)
{
  const auto d = dims_create(np, static_cast<int>(offsets.size()));
  auto c       = grid_coords(rank, d);
  for (std::size_t k = 0; k < d.size(); ++k) {
    int v = c[k] + offsets[k];
    if (periodic)
      v = (v + d[k]) % d[k];
    else if (v < 0 || v >= d[k])
      return -1;
    c[k] = v;
  }
  int r = 0;  // row-major, as MPI_Cart_create numbers the ranks
  for (std::size_t k = 0; k < d.size(); ++k)
    r = r * d[k] + c[k];
  return r;
}

/// Every rank's neighbour at `offsets`, at each rank count (ranks without one left out).
std::vector<RankObservation> observe_offset(const std::vector<int>& nps, const std::vector<int>& offsets, bool periodic)
{
  std::vector<RankObservation> out;
  for (int np : nps)
    for (int r = 0; r < np; ++r)
      if (int v = moved_by(r, np, offsets, periodic); v >= 0)
        out.push_back({r, np, {}, v});
  return out;
}

/// A periodic 2-D 9-point halo (D2Q9): each step, an irecv and an isend per direction (east, north,
/// west, south, then the diagonals; tagged by the direction), Nw doubles to a face and 2 to a corner, a
/// waitall, then compute.
class NinePoint final : public TraceSource {
public:
  /// `one_tag`: every message tagged 0 and of Nw doubles, so the 8 receives (and the 8 sends) are one
  /// call site walking the table of directions. (Sizes that differ by direction would be fitted at
  /// their mean: a size per iteration of the table is not modelled.)
  NinePoint(int nw, int np, bool one_tag = false) : nw_(nw), np_(np), one_tag_(one_tag) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    static const int dx[8] = {1, 0, -1, 0, 1, -1, -1, 1}, dy[8] = {0, 1, 0, -1, 1, 1, -1, -1};
    static const int opposite[8] = {2, 3, 0, 1, 6, 7, 4, 5};
    auto s = std::make_unique<MemoryStream>("nine");
    s->add(Op::Init, "MPI_Init");
    std::int64_t request = -1;  // numbered from 0, as synthesis numbers them
    for (int step = 0; step < 3; ++step) {
      for (int pass = 0; pass < 2; ++pass)
        for (int k = 0; k < 8; ++k) {
          CallRecord& c = s->add(pass == 0 ? Op::Irecv : Op::Isend, pass == 0 ? "MPI_Irecv" : "MPI_Isend");
          c.peer        = moved_by(rank, np_, {dx[k], dy[k]}, true);
          c.tag         = one_tag_ ? 0 : pass == 0 ? opposite[k] : k;
          c.bytes       = static_cast<std::uint64_t>(dx[k] != 0 && dy[k] != 0 && not one_tag_ ? 16 : 8 * nw_);
          c.request     = ++request;
        }
      CallRecord& w = s->add(Op::Waitall, "MPI_Waitall");
      for (std::int64_t q = request - 15; q <= request; ++q)
        w.requests.push_back(q);
      s->add(Op::Compute, "compute").flops = 9.0 * nw_ * nw_;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
  bool one_tag_;
};

}  // namespace

TEST_CASE("grid offset: edge and corner neighbours of 2-D and 3-D grids fit and extrapolate", "[trace_model]")
{
  for (const auto& [offsets, text] : std::vector<std::pair<std::vector<int>, std::string>>{
           {{1, 1}, "grid2p(r, +1 +1)"},
           {{-1, 1}, "grid2p(r, -1 +1)"},
           {{1, 0, -1}, "grid3p(r, +1 0 -1)"},
           {{-1, -1, 1}, "grid3p(r, -1 -1 +1)"}}) {
    INFO(text);
    const std::vector<int> train = offsets.size() == 2 ? std::vector<int>{6, 12, 24} : std::vector<int>{27, 36, 64};
    auto found = fit_rank_exprs(observe_offset(train, offsets, true));
    REQUIRE_FALSE(found.empty());
    CHECK(found.front().text() == text);
    for (int np : {96, 128, 210})
      for (const RankObservation& o : observe_offset({np}, offsets, true))
        CHECK(found.front().eval(o.rank, o.np, nullptr, 0) == o.value);
  }
  // Off the edge of a non-periodic grid there is no neighbour (12 ranks: 4 x 3, rank 11 at (3, 2)).
  RankExpr open{RankExpr::Kind::GridOffset, RankExpr::offsets_code({1, 1})};
  open.dims = 2;
  CHECK(open.text() == "grid2(r, +1 +1)");
  CHECK_FALSE(open.eval(11, 12, nullptr, 0).has_value());
  CHECK(open.eval(0, 12, nullptr, 0) == 4);
  // A neighbour along one axis stays a grid expression.
  auto face = fit_rank_exprs(observe_offset({6, 12, 24}, {0, 1}, true));
  REQUIRE_FALSE(face.empty());
  CHECK(face.front().kind == RankExpr::Kind::Grid);
}

TEST_CASE("grid offset: a 9-point halo is synthesized as its program makes it, through model.json", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "nine", {6, 12, 24}, {4, 6}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return NinePoint(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"expr\": \"grid_offset\"") && !Catch::Contains("approximated"));
  require_same_streams(SynthSource(model, {8, 96}), NinePoint(8, 96));
  write_model(dir / "m.json", *model);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(dir / "m.json")), {5, 40}),
                       NinePoint(5, 40));
  // Malformed offsets are refused, naming the key and the file.
  const auto at          = json.find("\"offsets\": [");
  REQUIRE(at != std::string::npos);
  const auto end = json.find(']', at);
  for (const std::string& bad : {std::string("\"offsets\": [2, 1]"), std::string("\"offsets\": [1, 0]"),
                                 std::string("\"offsets\": [1, 1, 1]")}) {
    std::string broken = json;
    broken.replace(at, end + 1 - at, bad);
    gridcast::test::write_file(dir / "bad.json", broken);
    INFO(bad);
    const auto e = gridcast::test::expect_input_error([&] { read_model(dir / "bad.json"); });
    CHECK_THAT(e.what(), Catch::Contains("offsets") && Catch::Contains("bad.json"));
  }
}

TEST_CASE("grid table: one call site walking a table of directions is the table, learned from every rank",
          "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "nine", {6, 12, 24}, {4, 6}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return NinePoint(nw, np, true); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("grid2p(r, table i0: +1 0, 0 +1, -1 0, 0 -1, +1 +1, -1 +1, -1 -1, +1 -1)") &&
                       !Catch::Contains("approximated"));
  require_same_streams(SynthSource(model, {8, 96}), NinePoint(8, 96, true));
  write_model(dir / "m.json", *model);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(dir / "m.json")), {5, 40}),
                       NinePoint(5, 40, true));
  // Entries that are not offsets of the grid are refused, naming the key.
  const auto at = json.find("\"expr\": \"grid_table\"");
  REQUIRE(at != std::string::npos);
  const auto offsets = json.find("\"offsets\": [", at);
  REQUIRE(offsets != std::string::npos);
  std::string broken = json;
  broken.replace(offsets, std::string("\"offsets\": [").size(), "\"offsets\": [[2, 0], ");
  gridcast::test::write_file(dir / "bad.json", broken);
  const auto e = gridcast::test::expect_input_error([&] { read_model(dir / "bad.json"); });
  CHECK_THAT(e.what(), Catch::Contains("offsets") && Catch::Contains("bad.json"));
}

namespace {

/// Each step, an isend to the neighbour at each of `dirs` and an irecv from the one at its opposite (all
/// tag 0: one call site each), a waitall, a compute; on the periodic dims_create(np, 3) grid. `sized`: a
/// face direction carries 40*nw bytes, the others 8 (a lattice Boltzmann code's 5 distributions of nw
/// cells across a face, 1 across an edge); else every message 64 bytes.
class TableWalk final : public TraceSource {
public:
  TableWalk(int np, std::vector<std::vector<int>> dirs, int nw = 0, bool sized = false)
      : np_(np), nw_(nw), sized_(sized), dirs_(std::move(dirs))
  {
  }
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("walk");
    s->add(Op::Init, "MPI_Init");
    std::int64_t request = -1;
    auto bytes = [&](const std::vector<int>& d) -> std::uint64_t {
      if (not sized_)
        return 64;
      return std::abs(d[0]) + std::abs(d[1]) + std::abs(d[2]) == 1 ? 40 * static_cast<std::uint64_t>(nw_) : 8;
    };
    for (int step = 0; step < 3; ++step) {
      for (const auto& d : dirs_) {
        CallRecord& c = s->add(Op::Isend, "MPI_Isend");
        c.peer        = moved_by(rank, np_, d, true);
        c.bytes       = bytes(d);
        c.request     = ++request;
      }
      for (const auto& d : dirs_) {
        CallRecord& c = s->add(Op::Irecv, "MPI_Irecv");
        c.peer        = moved_by(rank, np_, {-d[0], -d[1], -d[2]}, true);
        c.bytes       = bytes(d);
        c.request     = ++request;
      }
      CallRecord& w = s->add(Op::Waitall, "MPI_Waitall");
      for (std::int64_t q = 0; q <= request; ++q)
        if (q > request - 2 * static_cast<std::int64_t>(dirs_.size()))
          w.requests.push_back(q);
      s->add(Op::Compute, "compute").flops = 1000.0;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int np_, nw_;
  bool sized_;
  std::vector<std::vector<int>> dirs_;
};

}  // namespace

TEST_CASE("grid table: an axis of extent 2 in every training grid takes -1 before +1, each direction once",
          "[trace_model]")
{
  // Offsets along the last axis of 2x2x2, 4x2x2, 4x4x2: -1 and +1 are the same rank there. A table that
  // lists (0 0 -1) then (0 0 +1) is read as such and extrapolates to 8x4x4; where one entry alone moves
  // along that axis, -1 is the first choice (training cannot tell).
  TempDir dir;
  const std::vector<std::vector<int>> dirs = {{1, 0, 0}, {0, 0, -1}, {0, 0, 1}, {-1, 1, 1}};
  const auto profiles = write_profile_grid(dir.path(), "walk", {8, 16, 32}, {4, 6}, TraceEncoding::JsonLines,
                                           [&](int, int np) { return TableWalk(np, dirs); });
  const std::string json = model_to_json(fit_trace_model(profiles)).dump(2);
  CHECK_THAT(json, Catch::Contains("grid3p(r, table i0: +1 0 0, 0 0 -1, 0 0 +1, -1 +1 -1)"));
  auto e = model_from_json(nlohmann::json::parse(json), "walk.json");
  bool checked = false;
  std::function<void(const std::vector<TemplateNode>&)> walk = [&](const std::vector<TemplateNode>& nodes) {
    for (const TemplateNode& n : nodes) {
      if (n.peer && n.peer->kind == RankExpr::Kind::GridTable && e.tokens[n.token].op == Op::Isend) {
        for (std::uint64_t i = 0; i < 3; ++i)
          for (int r = 0; r < 128; ++r)
            CHECK(n.peer->eval(r, 128, &i, 1) == moved_by(r, 128, dirs[i], true));
        checked = true;
      }
      walk(n.body);
    }
  };
  for (const TraceGroup& g : e.groups)
    walk(g.body);
  CHECK(checked);
}

TEST_CASE("grid table: signs training cannot tell follow the iterations along other axes, and sizes the direction",
          "[trace_model]")
{
  // D3Q19's 18 directions, each followed by its opposite: faces, then the xy, xz and yz edges, the xz and
  // yz ones in the xy ones' sign pattern. Trained on 2x2x2, 4x2x2 and 4x4x2 grids, the z signs are
  // unknown; "-1 first" made (+1 0 -1) of the xz edges' second entry, which is (-1 0 -1)'s opposite.
  // Taken from the xy edges (the group of as many iterations along as many axes), the table is the
  // code's at 128 ranks (8x4x4). Faces carry 40*Nw bytes and edges 8: a size per direction, not their mean.
  const std::vector<std::vector<int>> dirs = {
      {1, 0, 0},  {-1, 0, 0}, {0, 1, 0},  {0, -1, 0}, {0, 0, 1},  {0, 0, -1}, {1, 1, 0},  {-1, -1, 0}, {1, -1, 0},
      {-1, 1, 0}, {1, 0, 1},  {-1, 0, -1}, {1, 0, -1}, {-1, 0, 1}, {0, 1, 1},  {0, -1, -1}, {0, 1, -1}, {0, -1, 1}};
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "d3q19", {8, 16, 32}, {4, 6}, TraceEncoding::JsonLines,
                                           [&](int nw, int np) { return TableWalk(np, dirs, nw, true); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("taken from the iterations that move along as many other axes") &&
                       Catch::Contains("\"bytes_by_index\"") && not Catch::Contains("fitted on their mean"));
  require_same_streams(SynthSource(model, {12, 128}), TableWalk(128, dirs, 12, true));
  // Read back, the same model; sizes by index without the size they detail are refused, naming the key.
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "d3q19.json")).dump(2) == json);
  nlohmann::json broken = nlohmann::json::parse(json);
  std::function<bool(nlohmann::json&)> strip = [&](nlohmann::json& nodes) {
    for (auto& n : nodes) {
      if (n.contains("bytes_by_index")) {
        n.erase("bytes");
        return true;
      }
      if (n.contains("body") && strip(n["body"]))
        return true;
    }
    return false;
  };
  REQUIRE(strip(broken["groups"][0]["template"]));
  const auto e = gridcast::test::expect_input_error([&] { model_from_json(broken, "d3q19.json"); });
  CHECK_THAT(e.what(), Catch::Contains("bytes_by_index") && Catch::Contains("d3q19.json"));
}
