// Tests of axis sweeps: calls made axis after axis of the MPI_Dims_create(Np, 3) grid whose calls along an
// axis depend on its extent (LAMMPS' CommBrick::exchange: nothing along an axis of 1 rank, one Sendrecv and
// one Irecv/Send/Wait along one of 2, two of each along one of more). See docs/reference/trace-model.md, "Axis sweeps".
#include "../models/models_support.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

int neighbour(int rank, int np, int axis, int step) { return gridcast::test::grid3_neighbour(rank, np, axis, step); }

/// LAMMPS' CommBrick in miniature. Every 4th time step re-partitions: `exchange` (per axis of more than
/// one rank: a Sendrecv of the count down, and along an axis of more than 2 ranks a second one up; then
/// the atoms the same way, Irecv/Send/Wait), then `borders` (per swap, 2 per such axis: a Sendrecv of the
/// count, then the ghosts). The other steps run the forward halo exchange (per swap: Irecv/Send/Wait).
/// Every step ends with the reverse exchange (the swaps backwards), every 5th with an allreduce. All tag 0,
/// as LAMMPS'.
class MiniLammps final : public TraceSource {
public:
  /// `repartition` false: forward and reverse exchanges only (what the plain model expresses).
  MiniLammps(int nw, int np, bool repartition = true) : nw_(nw), np_(np), repartition_(repartition) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("mini-lammps");
    s->add(Op::Init, "MPI_Init");
    const auto dims = dims_create(np_, 3);
    std::int64_t req = 0;
    auto sendrecv = [&](int to, int from, std::uint64_t bytes) {
      CallRecord& m = s->add(Op::Sendrecv, "MPI_Sendrecv");
      m.peer        = to;
      m.src         = from;
      m.bytes = m.recv_bytes = bytes;
    };
    auto isw = [&](int from, int to, std::uint64_t bytes) {
      CallRecord& a = s->add(Op::Irecv, "MPI_Irecv");
      a.peer        = from;
      a.bytes       = bytes;
      a.request     = req;
      CallRecord& b = s->add(Op::Send, "MPI_Send");
      b.peer        = to;
      b.bytes       = bytes;
      s->add(Op::Wait, "MPI_Wait").request = req++;
    };
    std::vector<int> walked;  // the axes of more than one rank
    for (int a = 0; a < 3; ++a)
      if (dims[static_cast<std::size_t>(a)] > 1)
        walked.push_back(a);
    // Swap i: along walked axis i div 2, the even one sends down and receives from up, the odd one the reverse.
    auto swap = [&](int i) {
      const int axis  = walked[static_cast<std::size_t>(i / 2)];
      const bool even = i % 2 == 0;
      return std::pair{neighbour(rank, np_, axis, even ? -1 : 1), neighbour(rank, np_, axis, even ? 1 : -1)};
    };
    const int swaps  = 2 * static_cast<int>(walked.size());
    const auto ghost = static_cast<std::uint64_t>(16 * nw_ * nw_);
    for (int step = 0; step < 12; ++step) {  // as LAMMPS' 40 steps: as many at every size
      if (repartition_ && step % 4 == 0) {
        for (int a : walked) {
          const int lo = neighbour(rank, np_, a, -1), hi = neighbour(rank, np_, a, 1);
          const bool wide = dims[static_cast<std::size_t>(a)] > 2;
          sendrecv(lo, hi, 4);
          if (wide)
            sendrecv(hi, lo, 4);
          isw(hi, lo, static_cast<std::uint64_t>(8 * nw_));
          if (wide)
            isw(lo, hi, static_cast<std::uint64_t>(8 * nw_));
        }
        for (int i = 0; i < swaps; ++i) {
          auto [send, recv] = swap(i);
          sendrecv(send, recv, 4);
          isw(recv, send, ghost);
        }
      } else {
        for (int i = 0; i < swaps; ++i) {
          auto [send, recv] = swap(i);
          isw(recv, send, ghost);
        }
      }
      for (int i = swaps - 1; i >= 0; --i) {
        auto [send, recv] = swap(i);
        isw(send, recv, ghost);
      }
      if (step % 5 == 4)
        s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
  bool repartition_;
};

using gridcast::test::require_same_streams;

/// The sweep of the exchange: the one whose calls along an axis of more than 2 ranks are not those along
/// an axis of 2 (the borders and the forward exchange are sweeps too, the same on every axis).
const AxisSweep* exchange_of(const TraceModel& m)
{
  for (const AxisSweep& s : m.axis_sweeps)
    if (s.blocks[1] && s.blocks[2] && s.blocks[1]->size() != s.blocks[2]->size())
      return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("axis sweep: calls chosen per axis by its extent, trained on 2x2x1, 2x2x2, 4x2x2, synthesized at 4x4x4",
          "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "mini", {4, 8, 16}, {2, 3}, TraceEncoding::Binary,
                                           [](int nw, int np) { return MiniLammps(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  // The exchange, the borders and the forward halo exchange: the reverse one walks the axes backwards.
  REQUIRE(model->axis_sweeps.size() == 3);
  REQUIRE(exchange_of(*model) != nullptr);
  const AxisSweep& sweep = *exchange_of(*model);
  // Learned on three classes of axis: none along 1 rank, Sendrecv + Irecv/Send/Wait along 2, two of each
  // along more (the directions of the second ones read off the axis of 4 ranks at np 16).
  REQUIRE(sweep.blocks[0]);
  CHECK(sweep.blocks[0]->empty());
  REQUIRE(sweep.blocks[1]);
  CHECK(sweep.blocks[1]->size() == 4);
  REQUIRE(sweep.blocks[2]);
  REQUIRE(sweep.blocks[2]->size() == 8);
  CHECK((*sweep.blocks[2])[0].peer_dir == -1);
  CHECK((*sweep.blocks[2])[0].src_dir == 1);
  CHECK((*sweep.blocks[2])[1].peer_dir == 1);
  CHECK((*sweep.blocks[2])[1].src_dir == -1);
  CHECK(model->groups.size() == 1);
  CHECK(model->rule.classifier.name() == "all");
  // Shapes training never had: 4x4x4 (three axes of more than 2 ranks), 8x8x4, 3x2x2, 2x2x1 at another size.
  for (int np : {64, 256, 12, 4}) {
    INFO("np " << np);
    require_same_streams(SynthSource(model, {4, np}), MiniLammps(4, np));
  }

  // Through model.json, byte for byte, and the same streams.
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"axis_sweeps\"") && Catch::Contains("\"extent_more\"") &&
                       Catch::Contains("gridcast:axis-sweep-0"));
  write_model(dir / "m.json", *model);
  TraceModel again = read_model(dir / "m.json");
  CHECK(model_to_json(again).dump(2) == json);
  // Deterministic whatever the order of the profiles.
  std::vector<std::filesystem::path> reversed(profiles.rbegin(), profiles.rend());
  CHECK(model_to_json(fit_trace_model(reversed)).dump(2) == json);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(std::move(again)), {3, 64}), MiniLammps(3, 64));
}

TEST_CASE("axis sweep: looked for only where the plain fit fails, off, the plain fit's error stands", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "mini", {4, 8, 16}, {2, 3}, TraceEncoding::Binary,
                                           [](int nw, int np) { return MiniLammps(nw, np); });
  FitOptions off;
  off.axis_sweeps = FitOptions::AxisSweeps::Off;
  CHECK_THROWS_WITH(fit_trace_model(profiles, off), Catch::Contains("no rank-to-group rule fits"));
  // A program the plain model expresses gets no sweep, though its grids differ in shape: its model is
  // the plain fit's.
  const auto plain = write_profile_grid(dir.path(), "plain", {4, 8, 16}, {2, 3}, TraceEncoding::Binary,
                                        [](int nw, int np) { return MiniLammps(nw, np, false); });
  const TraceModel m = fit_trace_model(plain);
  CHECK(m.axis_sweeps.empty());
  CHECK(model_to_json(m).dump(2) == model_to_json(fit_trace_model(plain, off)).dump(2));
  CHECK(model_to_json(m).dump(2).find("axis_sweeps") == std::string::npos);
}

TEST_CASE("axis sweep: a target with an axis of a class training never had is refused", "[trace_model]")
{
  // Trained on 2x2x2 and 4x2x2 only: no axis of one rank, so 2x2x1 (np 4) cannot be synthesized.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "mini", {8, 16}, {2, 3}, TraceEncoding::Binary,
                                           [](int nw, int np) { return MiniLammps(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(exchange_of(*model) != nullptr);
  CHECK_FALSE(exchange_of(*model)->blocks[0].has_value());
  // model.json writes the unknown class as null and reads it back as unknown.
  write_model(dir / "m.json", *model);
  CHECK_THAT(model_to_json(*model).dump(2), Catch::Contains("\"extent_1\": null"));
  model = std::make_shared<const TraceModel>(read_model(dir / "m.json"));
  REQUIRE(exchange_of(*model) != nullptr);
  CHECK_FALSE(exchange_of(*model)->blocks[0].has_value());
  require_same_streams(SynthSource(model, {2, 64}), MiniLammps(2, 64));
  CHECK_THROWS_WITH(SynthSource(model, {2, 4}), Catch::Contains("never saw an axis of 1 rank") &&
                                                     Catch::Contains("outside what the model can express"));
}

TEST_CASE("axis sweep: model.json rejects a malformed sweep", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "mini", {4, 8, 16}, {2}, TraceEncoding::Binary,
                                           [](int nw, int np) { return MiniLammps(nw, np); });
  const std::string json = model_to_json(fit_trace_model(profiles)).dump(2);
  const std::string good = "\"peer_dir\": -1";
  const auto at          = json.find(good);
  REQUIRE(at != std::string::npos);
  for (const std::string& bad : {std::string("\"peer_dir\": 0"), std::string("\"peer_dir\": 2"),
                                 std::string("\"peer_dir\": -1, \"extra\": 1")}) {
    std::string broken = json;
    broken.replace(at, good.size(), bad);
    gridcast::test::write_file(dir / "bad.json", broken);
    try {
      read_model(dir / "bad.json");
      FAIL("accepted " << bad);
    } catch (const gridcast::InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("bad.json") && Catch::Contains("axis_sweeps[0]"));
    }
  }
}
