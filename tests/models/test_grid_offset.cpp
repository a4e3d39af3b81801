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
  NinePoint(int nw, int np) : nw_(nw), np_(np) {}
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
          c.tag         = pass == 0 ? opposite[k] : k;
          c.bytes       = static_cast<std::uint64_t>(dx[k] != 0 && dy[k] != 0 ? 16 : 8 * nw_);
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
    try {
      read_model(dir / "bad.json");
      FAIL("accepted " << bad);
    } catch (const gridcast::InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("offsets") && Catch::Contains("bad.json"));
    }
  }
}
