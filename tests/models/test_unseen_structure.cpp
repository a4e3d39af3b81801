// Tests of what the trace model does with the structure of codes it was not built around (the corpus of
// examples/corpus): a 1-D line or ring seen through one sendrecv site, MPI_PROC_NULL at a non-periodic
// grid's edge, a waitall of every pending request, grid neighbours on an axis of extent 2 in every
// training grid, and sizes whose code paths differ. See docs/reference/trace-model.md.
#include "../models/models_support.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_rules.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::grid3_neighbour;
using gridcast::test::MemoryStream;
using gridcast::test::read_all;
using gridcast::test::require_same_streams;
using gridcast::test::TempDir;
using gridcast::test::write_profile_grid;

namespace {

/// A 1-D exchange per step: MPI_Sendrecv to the right neighbour (receiving from the left), then to the
/// left one (receiving from the right), then an allreduce. `periodic`: a ring; otherwise a line whose end
/// ranks make no sendrecv at all, as SMPI's time-independent trace records a sendrecv with
/// MPI_PROC_NULL on one side.
class Line final : public TraceSource {
public:
  Line(int nw, int np, bool periodic) : nw_(nw), np_(np), periodic_(periodic) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("line");
    s->add(Op::Init, "MPI_Init");
    const bool end = rank == 0 || rank == np_ - 1;
    for (int step = 0; step < 4; ++step) {
      if (periodic_ || not end)
        for (int dir : {1, -1}) {
          CallRecord& c = s->add(Op::Sendrecv, "MPI_Sendrecv");
          c.peer        = (rank + dir + np_) % np_;
          c.src         = (rank - dir + np_) % np_;
          c.bytes = c.recv_bytes = static_cast<std::uint64_t>(8 * nw_);
        }
      s->add(Op::Compute, "compute").flops = 1000.0 * nw_;
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
  bool periodic_;
};

/// A non-periodic 3-D halo as a profiler records it on a real run (or under SMPI with the hook): one
/// MPI_Sendrecv per axis and direction on the MPI_Dims_create(Np, 3) grid, whose half with MPI_PROC_NULL
/// at an end is the send or receive that happened (op send or recv, function MPI_Sendrecv), and nothing
/// at all along an axis of one rank (both sides MPI_PROC_NULL: a local call).
class HookHalo3d final : public TraceSource {
  /// The neighbour along `axis`, `step` away, in the non-periodic grid `d`; -1 off the edge.
  static int open_neighbour(int rank, const std::vector<int>& d, int axis, int step)
  {
    auto c      = grid_coords(rank, d);
    const int v = c[static_cast<std::size_t>(axis)] + step;
    if (v < 0 || v >= d[static_cast<std::size_t>(axis)])
      return -1;
    c[static_cast<std::size_t>(axis)] = v;
    return (c[0] * d[1] + c[1]) * d[2] + c[2];
  }

public:
  HookHalo3d(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    const std::vector<int> d = dims_create(np_, 3);
    auto s = std::make_unique<MemoryStream>("hook-halo");
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < 2; ++step) {
      for (int axis = 0; axis < 3; ++axis)
        for (int dir : {1, -1}) {
          const int up = open_neighbour(rank, d, axis, dir), down = open_neighbour(rank, d, axis, -dir);
          const auto bytes = static_cast<std::uint64_t>(8 * nw_);
          const int tag    = 2 * axis + (dir > 0 ? 0 : 1);
          if (up < 0 && down < 0) {
            s->add(Op::CommSize, "MPI_Sendrecv");
          } else if (down < 0) {
            CallRecord& c = s->add(Op::Send, "MPI_Sendrecv");
            c.peer = up, c.tag = tag, c.bytes = bytes;
          } else if (up < 0) {
            CallRecord& c = s->add(Op::Recv, "MPI_Sendrecv");
            c.peer = down, c.tag = tag, c.bytes = bytes;
          } else {
            CallRecord& c = s->add(Op::Sendrecv, "MPI_Sendrecv");
            c.peer = up, c.src = down, c.tag = c.recv_tag = tag, c.bytes = c.recv_bytes = bytes;
          }
        }
      s->add(Op::Compute, "compute").flops = 100.0 * nw_;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

/// The calls of `rank` at the target whose op is one of point-to-point.
std::vector<CallRecord> p2p_calls(const SynthSource& synth, int rank)
{
  std::vector<CallRecord> out;
  for (const CallRecord& c : read_all(*synth.open(rank)))
    if (c.op == Op::Send || c.op == Op::Recv || c.op == Op::Sendrecv)
      out.push_back(c);
  return out;
}

/// A halo exchange with a rank-dependent number of neighbours (an irregular partition): irecv from and
/// isend to 1 + (r mod 3) ranks, then one waitall of all of them; 3 steps.
class Irregular final : public TraceSource {
public:
  Irregular(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("irregular");
    s->add(Op::Init, "MPI_Init");
    std::int64_t req = 0;
    const int deg    = 1 + rank % 3;
    for (int step = 0; step < 3; ++step) {
      std::vector<std::int64_t> mine;
      for (int k = 1; k <= deg; ++k) {
        CallRecord& c = s->add(Op::Irecv, "MPI_Irecv");
        c.peer        = (rank + k) % np_;
        c.bytes       = static_cast<std::uint64_t>(8 * nw_);
        c.request     = req;
        mine.push_back(req++);
      }
      for (int k = 1; k <= deg; ++k) {
        CallRecord& c = s->add(Op::Isend, "MPI_Isend");
        c.peer        = (rank - k + np_) % np_;
        c.bytes       = static_cast<std::uint64_t>(8 * nw_);
        c.request     = req;
        mine.push_back(req++);
      }
      s->add(Op::Waitall, "MPI_Waitall").requests = mine;
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

/// A 3-D halo exchange: an irecv from each face neighbour (axis 0 lower, upper, axis 1..., each with
/// its own tag), the same isends, a waitall. Trained at np 8, 16, 32 (2x2x2, 4x2x2, 4x4x2), the last
/// axis always has extent 2, where the lower neighbour is also the upper one and r xor 1.
/// With `block_faces`, the global Nw^3 grid is split over the process grid and the message along axis k
/// is the block's face normal to it (8 * Nw^2 / (d_i * d_j), i and j the other axes); otherwise 8 * Nw.
class Faces final : public TraceSource {
public:
  Faces(int nw, int np, bool block_faces = false) : nw_(nw), np_(np), block_faces_(block_faces) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("faces");
    s->add(Op::Init, "MPI_Init");
    std::int64_t req = 0;
    for (int step = 0; step < 2; ++step) {
      std::vector<std::int64_t> mine;
      for (Op op : {Op::Irecv, Op::Isend})
        for (int dir = 0; dir < 6; ++dir) {
          CallRecord& c = s->add(op, op == Op::Irecv ? "MPI_Irecv" : "MPI_Isend");
          c.peer        = grid3_neighbour(rank, np_, dir / 2, dir % 2 == 0 ? -1 : 1);
          c.tag         = dir;
          c.bytes       = static_cast<std::uint64_t>(block_faces_ ? face_bytes(dir / 2) : 8 * nw_);
          c.request     = req;
          mine.push_back(req++);
        }
      s->add(Op::Waitall, "MPI_Waitall").requests = mine;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

  std::int64_t face_bytes(int axis) const
  {
    const std::vector<int> d = dims_create(np_, 3);
    std::int64_t other = 1;
    for (int k = 0; k < 3; ++k)
      if (k != axis)
        other *= d[static_cast<std::size_t>(k)];
    return 8 * std::int64_t{nw_} * nw_ / other;
  }

private:
  int nw_, np_;
  bool block_faces_;
};

/// A code path taken only from some size on: at Nw >= 3 every step has an extra reduction (a coarser
/// multigrid level), so the profiles at Nw 2 put every rank in another group than those at Nw 3 and 4.
class SizeBranch final : public TraceSource {
public:
  SizeBranch(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("branch");
    s->add(Op::Init, "MPI_Init");
    s->add(Op::Reduce, "MPI_Reduce").bytes = 16;  // every size: the profiles share their function table
    for (int step = 0; step < 3; ++step) {
      CallRecord& c = s->add(Op::Sendrecv, "MPI_Sendrecv");
      c.peer        = (rank + 1) % np_;
      c.src         = (rank - 1 + np_) % np_;
      c.bytes = c.recv_bytes = static_cast<std::uint64_t>(8 * nw_);
      if (nw_ >= 3)
        s->add(Op::Reduce, "MPI_Reduce").bytes = 16;
      s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

/// A multigrid V-cycle (the corpus' multigrid-vcycle): levels from Nw down to 4 points, so log2(Nw) - 1 of
/// them; on each level on the way down two smoothing half-sweeps (a sendrecv each way with both ring
/// neighbours, then 3 n^2 flop, n = Nw >> level) and a restriction (4 n^2 flop); the coarsest level solved
/// with an allreduce; on the way up a prolongation then the smoothing; 2 cycles, each ending with an
/// allreduce. Shortest-period-first folding reads each size's cycle differently (the way up's `c c`), and
/// at Nw 8 (one level) greedy template matching takes a third smoothing sweep that is only a compute.
/// `tagged`: every sweep's messages tagged 2*level + colour (HPGMG-like), else tag 0; and recorded as the
/// profiling hook records a run, consecutive computes as one (the corpus' multigrid-vcycle).
class VCycle final : public TraceSource {
public:
  VCycle(int nw, int np, bool tagged = false) : nw_(nw), np_(np), tagged_(tagged) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("vcycle");
    s->add(Op::Init, "MPI_Init");
    int levels = 0;
    while ((nw_ >> levels) >= 4)
      ++levels;
    double pending = 0;  // tagged: work not yet recorded, merged into one compute before the next call
    auto compute = [&](double flops) {
      if (tagged_)
        pending += flops;
      else
        s->add(Op::Compute, "compute").flops = flops;
    };
    auto call = [&](Op op, const char* fn) -> CallRecord& {
      if (pending > 0)
        s->add(Op::Compute, "compute").flops = pending;
      pending = 0;
      return s->add(op, fn);
    };
    auto smooth = [&](int level) {
      const int n = nw_ >> level;
      for (int colour = 0; colour < 2; ++colour) {
        for (int dir : {1, -1, 1, -1}) {
          CallRecord& c = call(Op::Sendrecv, "MPI_Sendrecv");
          c.peer        = (rank + dir + np_) % np_;
          c.src         = (rank - dir + np_) % np_;
          c.tag = c.recv_tag = tagged_ ? 2 * level + colour : 0;
          c.bytes = c.recv_bytes = static_cast<std::uint64_t>(8 * n);
        }
        compute(3.0 * n * n);
      }
    };
    for (int cycle = 0; cycle < 2; ++cycle) {
      for (int l = 0; l < levels - 1; ++l) {
        smooth(l);
        compute(4.0 * (nw_ >> l) * (nw_ >> l));
      }
      call(Op::Allreduce, "MPI_Allreduce").bytes = 128;
      for (int l = levels - 2; l >= 0; --l) {
        compute(4.0 * (nw_ >> l) * (nw_ >> l));
        smooth(l);
      }
      call(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    call(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
  bool tagged_;
};

/// The model's calls at Nw 64 and 128 ranks against the real code's (`truth`), for three ranks, call by
/// call: ops, peers, tags and sizes (the work, measured per call site, is not compared).
void check_vcycle_calls(const std::shared_ptr<const TraceModel>& model, const VCycle& truth)
{
  SynthSource synth(model, {64, 128});
  for (int r : {0, 77, 127}) {
    auto a = gridcast::test::read_all(*synth.open(r));
    auto b = gridcast::test::read_all(*truth.open(r));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("rank " << r << " call " << i);
      CHECK(a[i].op == b[i].op);
      CHECK(a[i].peer == b[i].peer);
      CHECK(a[i].src == b[i].src);
      CHECK(a[i].tag == b[i].tag);
      CHECK(a[i].recv_tag == b[i].recv_tag);
      CHECK(a[i].bytes == b[i].bytes);
      CHECK(a[i].recv_bytes == b[i].recv_bytes);
    }
  }
}

}  // namespace

TEST_CASE("unseen structure: a V-cycle's levels are one loop at every size, log2(Nw) - 2 iterations", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "vcycle", {4, 8, 16}, {8, 16, 32}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return VCycle(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->size_class.empty());  // every size fitted, not only the largest
  CHECK(model->groups.size() == 1);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"text\": \"-2 + log2(Nw)\"") && Catch::Contains("folded by coverage"));
  // The messages halve per level on the way down (8*Nw at the first) and double on the way up (64 at the first).
  CHECK_THAT(json, Catch::Contains("\"ratio\": 0.5") && Catch::Contains("\"ratio\": 2.0") &&
                       not Catch::Contains("approximated"));
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "model.json")).dump(2) == json);
  // A scale that is not a positive ratio is refused, naming the key.
  std::string broken = json;
  broken.replace(broken.find("\"ratio\": 0.5"), 14, "\"ratio\": -0.5");
  try {
    model_from_json(nlohmann::json::parse(broken), "model.json");
    FAIL("a negative ratio was accepted");
  } catch (const gridcast::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ratio") && Catch::Contains("model.json"));
  }
  // At Nw 64 (5 levels, one more than training saw) and 128 ranks: the calls of the real code, function
  // by function, their peers and their sizes (the work, measured per call site, is not compared).
  check_vcycle_calls(model, VCycle(64, 128));
}

TEST_CASE("unseen structure: a V-cycle tagged by level and colour nests its levels around the colours",
          "[trace_model]")
{
  // Tags 2*level + colour: every size tags other sweeps (Nw 8 only 0 and 1), and the way up walks the
  // levels back from the coarsest, whose number follows Nw. Before: no reading let the sizes share a
  // template, and the model was the largest size's alone (a model of Nw 32 that cannot scale with Nw).
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "vcycle-tagged", {4, 8, 16}, {8, 16, 32},
                                           TraceEncoding::JsonLines, [](int nw, int np) { return VCycle(nw, np, true); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->size_class.empty());
  CHECK(model->training.size() == 9);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("told apart by their message size") && not Catch::Contains("approximated"));
  // Down: level i2 from the start, colour i1 (i0 the 4 messages of a sweep); up: the level from the loop's end.
  CHECK_THAT(json, Catch::Contains("\"text\": \"0 + 1*i1 + 2*i2\"") &&
                       Catch::Contains("\"text\": \"0 + 1*i1 + 2*(n2 - 1 - i2)\"") && Catch::Contains("\"affine\""));
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "model.json")).dump(2) == json);
  // An affine tag without terms is refused, naming the key.
  std::string broken = json;
  const std::size_t terms = broken.rfind("\"terms\": [", broken.find("\"from_end\""));
  REQUIRE(terms != std::string::npos);
  broken.replace(terms, broken.find(']', terms) - terms + 1, "\"terms\": []");
  try {
    model_from_json(nlohmann::json::parse(broken), "model.json");
    FAIL("an affine tag without terms was accepted");
  } catch (const gridcast::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("terms") && Catch::Contains("model.json"));
  }
  // At Nw 64 (5 levels) and 128 ranks: the real code's calls, tags included.
  check_vcycle_calls(model, VCycle(64, 128, true));
}

TEST_CASE("unseen structure: a ring's right-then-left sendrecv is a walk over the 1-D grid", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "ring", {4, 6, 8}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Line(nw, np, true); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("grid1p(r, axis i0 div 2"));
  CHECK_THAT(json, not Catch::Contains("approximated"));
  // Reads back to itself (model.json accepts a grid_loop of one dimension).
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "model.json")).dump(2) == json);
  SynthSource synth(model, {3, 16});
  for (int r : {0, 7, 15}) {
    auto calls = p2p_calls(synth, r);
    REQUIRE(calls.size() == 8);
    CHECK(calls[0].peer == (r + 1) % 16);
    CHECK(calls[0].src == (r + 15) % 16);
    CHECK(calls[1].peer == (r + 15) % 16);
    CHECK(calls[1].src == (r + 1) % 16);
  }
}

TEST_CASE("unseen structure: a line's ends exchange with MPI_PROC_NULL, as MPI runs it", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "line", {4, 6, 8}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Line(nw, np, false); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  // No observation crossed the ends: the open line, not the ring.
  CHECK_THAT(json, Catch::Contains("grid1(r, axis i0 div 2"));
  SynthSource synth(model, {3, 16});
  // Interior ranks: both sendrecvs, as recorded.
  auto mid = p2p_calls(synth, 7);
  REQUIRE(mid.size() == 8);
  CHECK((mid[0].op == Op::Sendrecv && mid[0].peer == 8 && mid[0].src == 6));
  CHECK((mid[1].op == Op::Sendrecv && mid[1].peer == 6 && mid[1].src == 8));
  // Rank 0 has no left neighbour: its first sendrecv is its send to the right, the second its receive
  // from the right (the count the fit rounds gives every rank both).
  auto first = p2p_calls(synth, 0);
  REQUIRE(first.size() == 8);
  CHECK((first[0].op == Op::Send && first[0].peer == 1 && first[0].bytes == 24));
  CHECK((first[1].op == Op::Recv && first[1].peer == 1 && first[1].bytes == 24));
  auto last = p2p_calls(synth, 15);
  REQUIRE(last.size() == 8);
  CHECK((last[0].op == Op::Recv && last[0].peer == 14));
  CHECK((last[1].op == Op::Send && last[1].peer == 14));
}

TEST_CASE("unseen structure: a waitall of as many requests as the rank has neighbours completes every pending one",
          "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "irregular", {4, 6, 8}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Irregular(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"all_pending\": true"));
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "model.json")).dump(2) == json);
  SynthSource synth(model, {3, 16});
  for (int r : {0, 5}) {
    std::vector<std::int64_t> created;
    int waitalls = 0;
    for (const CallRecord& c : read_all(*synth.open(r))) {
      if (c.op == Op::Irecv || c.op == Op::Isend)
        created.push_back(c.request);
      if (c.op == Op::Waitall) {
        ++waitalls;
        CHECK(c.requests == created);  // every request created since the last waitall, none twice
        created.clear();
      }
    }
    CHECK(waitalls == 3);
    CHECK(created.empty());
  }
}

TEST_CASE("unseen structure: a grid neighbour on an axis of extent 2 in every training grid stays a grid neighbour",
          "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "faces", {8, 16, 32}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Faces(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK_THAT(model_to_json(*model).dump(2), not Catch::Contains("r xor 1"));
  // At 128 ranks (8x4x4) the last axis has two neighbours: the lower and the upper one, in that order.
  SynthSource synth(model, {3, 128});
  for (int r : {0, 37, 127}) {
    std::vector<int> peers;
    for (const CallRecord& c : read_all(*synth.open(r)))
      if (c.op == Op::Irecv && peers.size() < 6)
        peers.push_back(c.peer);
    REQUIRE(peers.size() == 6);
    for (int dir = 0; dir < 6; ++dir)
      CHECK(peers[static_cast<std::size_t>(dir)] == grid3_neighbour(r, 128, dir / 2, dir % 2 == 0 ? -1 : 1));
  }
}

TEST_CASE("unseen structure: a message to a grid neighbour is the block's face normal to its axis", "[trace_model]")
{
  // Trained on 2x2x2, 4x2x2 and 4x4x2 grids, the face normal to the last axis, 8*Nw^2/(d0*d1), is also
  // 16*Nw^2/Np (d2 = 2 throughout); at 8x4x4 only the face is right (4096 bytes at Nw 128, not 2048).
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "faces", {8, 16, 32}, {32, 48, 64}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Faces(nw, np, true); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"text\": \"8*Nw^2/(dims3[0]*dims3[1])(Np)\"") && not Catch::Contains("\"text\": \"16*Nw^2/Np\""));
  for (int np : {128, 64, 256})  // 8x4x4, 4x4x4, 8x8x4
    gridcast::test::require_same_streams(SynthSource(model, {128, np}), Faces(128, np, true));
}

TEST_CASE("unseen structure: sizes that take other code paths leave the model of the largest sizes, saying so",
          "[trace_model][model_quality]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "branch", {4, 8}, {2, 3, 4}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return SizeBranch(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->training.size() == 4);  // Nw 3 and 4 at np 4 and 8
  CHECK_THAT(model->size_class, Catch::Contains("at Nw 3, 4 only") && Catch::Contains("those at Nw 2 take others"));
  const std::string json = model_to_json(*model).dump(2);
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "model.json")).dump(2) == json);
  SynthSource synth(model, {8, 16});
  const ModelQuality& q = synth.quality();
  REQUIRE(q.approximated.size() == 1);
  CHECK(q.approximated[0].field == "size class");
  int reduces = 0;
  for (const CallRecord& c : read_all(*synth.open(3)))
    reduces += c.op == Op::Reduce ? 1 : 0;
  CHECK(reduces == 4);
  // Where the branch is not one of sizes, the error stands: one Nw cannot be split.
  const auto one_size = write_profile_grid(dir.path() / "one", "branch", {4, 8}, {2}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return SizeBranch(nw, np); });
  CHECK(fit_trace_model(one_size).size_class.empty());
}

namespace {

/// A ring of blocking calls: every step sends to the right neighbour, then receives from the left one.
class SendRing final : public TraceSource {
public:
  SendRing(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("ring");
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < 3; ++step) {
      CallRecord& a = s->add(Op::Send, "MPI_Send");
      a.peer        = (rank + 1) % np_;
      a.bytes       = static_cast<std::uint64_t>(8 * nw_);
      CallRecord& b = s->add(Op::Recv, "MPI_Recv");
      b.peer        = (rank - 1 + np_) % np_;
      b.bytes       = static_cast<std::uint64_t>(8 * nw_);
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

/// The template position of the first call of `op` under `body`, depth first.
TemplateNode* find_call(std::vector<TemplateNode>& body, const TraceModel& m, Op op)
{
  for (TemplateNode& n : body) {
    if (n.kind == RolledNode::Kind::Call && m.tokens[n.token].op == op)
      return &n;
    if (TemplateNode* inner = find_call(n.body, m, op))
      return inner;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("unseen structure: receives that approximated peers leave without a send are dropped, and counted",
          "[trace_model][model_quality]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "ring", {4, 8}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return SendRing(nw, np); });
  TraceModel fitted = fit_trace_model(profiles);
  {
    // Exact: nothing is checked or changed.
    SynthSource exact(std::make_shared<const TraceModel>(fitted), {3, 8});
    CHECK(exact.quality().approximated.empty());
    int recvs = 0;
    for (const CallRecord& c : read_all(*exact.open(2)))
      recvs += c.op == Op::Recv ? 1 : 0;
    CHECK(recvs == 3);
  }
  // An approximated receive peer that no rank sends to: two ranks to the left instead of one.
  TemplateNode* recv = find_call(fitted.groups[0].body, fitted, Op::Recv);
  REQUIRE(recv != nullptr);
  recv->peer = RankExpr{RankExpr::Kind::Offset, -2};
  recv->approximated.push_back({"peer", "a stand-in for the test", 0.5});
  SynthSource synth(std::make_shared<const TraceModel>(fitted), {3, 8});
  const ModelQuality& q = synth.quality();
  REQUIRE(q.approximated.size() == 2);
  CHECK(q.approximated[1].where == "point-to-point");
  CHECK_THAT(q.approximated[1].method, Catch::StartsWith("24 of 24 receives have no matching send") &&
                                           Catch::Contains("24 sends have no matching receive"));
  for (int r : {0, 5}) {
    auto calls = read_all(*synth.open(r));
    CHECK(std::count_if(calls.begin(), calls.end(), [](const CallRecord& c) { return c.op == Op::Recv; }) == 0);
    CHECK(std::count_if(calls.begin(), calls.end(), [](const CallRecord& c) { return c.op == Op::Send; }) == 3);
    for (std::size_t i = 0; i < calls.size(); ++i)
      CHECK(calls[i].line == i + 1);  // numbered as emitted
  }
}

namespace {

/// v-collectives on communicators other than the world, as Quantum ESPRESSO makes them on its pools and
/// band groups: a split of the whole world (color 0: Np ranks) with an MPI_Allgatherv of 8 nw bytes from
/// every rank, and a split into one communicator per rank (color = rank) with an MPI_Gatherv of 16 nw
/// bytes onto its only rank.
class SubCommGather final : public TraceSource {
public:
  SubCommGather(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("subcomm-gather");
    s->add(Op::Init, "MPI_Init");
    CallRecord& all = s->add(Op::CommSplit, "MPI_Comm_split");
    all.color = 0, all.key = rank, all.new_comm = 1;
    CallRecord& self = s->add(Op::CommSplit, "MPI_Comm_split");
    self.color = rank, self.key = 0, self.new_comm = 2;
    const auto b = static_cast<std::uint64_t>(8 * nw_);
    for (int step = 0; step < 3; ++step) {
      CallRecord& ag = s->add(Op::Allgatherv, "MPI_Allgatherv");
      ag.comm = 1, ag.bytes = b;
      ag.recv_counts.assign(static_cast<std::size_t>(np_), b);
      CallRecord& g = s->add(Op::Gatherv, "MPI_Gatherv");
      g.comm = 2, g.root = 0, g.bytes = 2 * b;
      g.recv_counts = {2 * b};
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

}  // namespace

TEST_CASE("trace model: v-collectives on a split communicator have counts of its size", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "sub", {2, 4}, {2, 3, 4}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return SubCommGather(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump();
  CHECK_THAT(json, Catch::Contains("\"comm_size\""));
  // At a size it was not trained on: Np counts on the world's split, 1 on a rank's own.
  require_same_streams(SynthSource(model, {6, 4}), SubCommGather(6, 4));
  write_model(dir / "m.json", *model);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(dir / "m.json")), {6, 4}),
                       SubCommGather(6, 4));
  // At a rank count it was not trained on, the world's split has the Np ranks of that count. (A split's
  // color is the world rank of its rank 0, part of the call's token: the ranks of the one-rank
  // communicators past the training counts are not synthesized as they ran.)
  const std::vector<CallRecord> rank0 = read_all(*SynthSource(model, {6, 8}).open(0));
  REQUIRE(rank0.size() > 3);
  CHECK(rank0[3].op == Op::Allgatherv);
  CHECK(rank0[3].recv_counts == std::vector<std::uint64_t>(8, 48));
  CHECK(rank0[4].recv_counts == std::vector<std::uint64_t>{96});
}

namespace {

/// CP2K's MD loop as its ranks call it: after a setup run of allreduces, each step makes a query pair, two
/// broadcasts and eight allreduces, but the first step makes six. Folding reads it as `(A)x240 Q (B)x2
/// ((A)x6 Q (B)x2 (A)x2)x(steps) (A)x6`: the run of eight is split across the loop's boundary. Before
/// the steps, an input-reading loop of Nw iterations that does not fold where it runs once.
class SplitRun final : public TraceSource {
public:
  SplitRun(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int) const override
  {
    auto s = std::make_unique<MemoryStream>("splitrun");
    s->add(Op::Init, "MPI_Init");
    auto compute = [&] { s->add(Op::Compute, "compute").flops = 1000.0 * nw_; };
    auto allreduce = [&](int n) {
      for (int i = 0; i < n; ++i) {
        compute();
        s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
      }
    };
    auto query_bcasts = [&](int n) {
      compute();
      s->add(Op::CommSize, "MPI_Comm_rank");
      compute();
      s->add(Op::CommSize, "MPI_Comm_size");
      for (int i = 0; i < n; ++i) {
        compute();
        s->add(Op::Bcast, "MPI_Bcast").bytes = 4;
      }
    };
    for (int chunk = 0; chunk < nw_; ++chunk) {
      compute();
      s->add(Op::Bcast, "MPI_Bcast").bytes = 4000;
      query_bcasts(0);
    }
    allreduce(240);
    query_bcasts(2);
    allreduce(6);
    for (int step = 0; step < 20; ++step) {
      query_bcasts(2);
      allreduce(8);
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

}  // namespace

TEST_CASE("unseen structure: a run folding split across a loop's boundary keeps its counts at every size",
          "[trace_model][model_quality]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "splitrun", {2}, {1, 2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return SplitRun(nw, np); });
  // Folded by coverage (the fit's retry where the sizes fold differently shortest period first, as
  // CP2K's do), the run of eight splits as 6 + 2.
  FitOptions options;
  options.fold.by_coverage = true;
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles, options));
  REQUIRE(model->groups.size() == 1);
  CHECK(model->groups[0].approximate_members == 0);
  // At 4x the largest size: the program's calls, one for one. Read greedily at Nw 1, where the reading
  // loop did not fold, the split run's counts were 0.3 and 8 (6 and 2 at Nw 2 and 3), and their fit,
  // 4.4 log2(Nw) and 4, made about 20 allreduces a step at Nw 12 where the program makes 8.
  SynthSource synth(model, {12, 2});
  for (int r : {0, 1}) {
    auto a = read_all(*synth.open(r));
    auto b = read_all(*SplitRun(12, 2).open(r));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("rank " << r << " call " << i);
      CHECK(a[i].op == b[i].op);
    }
  }
}

namespace {

/// A hand-written butterfly (the corpus' hypercube-exchange): Nw/4 steps of log2(Np) rounds, round k a
/// sendrecv with rank XOR 2^k of Nw 2^k doubles and a compute (of a size that does not change with k: a
/// compute that grows with the round, as the sizes do, is fitted at its mean), then the step's own compute; from
/// `barrier_from` steps on, every 4th step ends with a barrier (a run of fewer steps never makes one).
/// Folded shortest period first, `(S C)x(k-1) S (C)x2` cuts the rounds' loop where their count changes
/// with Np, so each rank count gets a template of its own.
class Butterfly final : public TraceSource {
public:
  /// Rounds: `tagged` gives round k's sendrecv tag k (send and receive); `merged` makes the step's own
  /// compute one call with the last round's (as an SMPI trace records two smpi_execute_flops in a row).
  struct Rounds {
    bool tagged = false;
    bool merged = false;
  };
  Butterfly(int nw, int np) : nw_(nw), np_(np) {}
  Butterfly(int nw, int np, Rounds rounds) : nw_(nw), np_(np), rounds_(rounds) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("butterfly");
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < nw_ / 4; ++step) {
      for (int k = 0; (1 << k) < np_; ++k) {
        CallRecord& c = s->add(Op::Sendrecv, "MPI_Sendrecv");
        c.peer = c.src = rank ^ (1 << k);
        c.bytes = c.recv_bytes = static_cast<std::uint64_t>(8 * (nw_ << k));
        if (rounds_.tagged)
          c.tag = c.recv_tag = k;
        const bool last = (2 << k) >= np_;
        s->add(Op::Compute, "compute").flops = 2.0 * nw_ + (last && rounds_.merged ? 20.0 * nw_ * nw_ : 0.0);
      }
      if (not rounds_.merged)
        s->add(Op::Compute, "compute").flops = 20.0 * nw_ * nw_;
      if (step % 4 == 3)
        s->add(Op::Barrier, "MPI_Barrier");
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
  Rounds rounds_{};
};

}  // namespace

TEST_CASE("unseen structure: rounds whose count follows Np fold into one template by coverage", "[trace_model]")
{
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "bfly", {4, 8, 16}, {8, 12}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Butterfly(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->groups.size() == 1);
  CHECK(model->rule.classifier.name() == "all");
  CHECK(model->size_class.empty());
  bool noted = false;
  for (const std::string& w : model->warnings)
    noted = noted || w.find("folded by coverage") != std::string::npos;
  CHECK(noted);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"text\": \"log2(Np)\"") && Catch::Contains("r xor 2^i0"));
  for (int np : {32, 64})
    require_same_streams(SynthSource(model, {8, np}), Butterfly(8, np));
}

TEST_CASE("unseen structure: rounds tagged with their number are one loop whose tag is its index", "[trace_model]")
{
  // Tags in the token, np 8 sends with tags 0..2 and np 16 with 0..3: every rank count has templates of its
  // own and no rule separates them but Np. The tags follow Np, so the fit reads them again as a parameter
  // of each position, the rounds one loop of log2(Np) iterations, tag i.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "bfly", {4, 8, 16}, {8, 12}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Butterfly(nw, np, {.tagged = true}); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->groups.size() == 1);
  bool noted = false;
  for (const std::string& w : model->warnings)
    noted = noted || w.find("tags of a rank change with the rank count") != std::string::npos;
  CHECK(noted);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"text\": \"log2(Np)\"") && Catch::Contains("r xor 2^i0") &&
                       Catch::Contains("\"recv_tag\": \"varies\""));
  for (int np : {32, 64})
    require_same_streams(SynthSource(model, {8, np}), Butterfly(8, np, {.tagged = true}));
  TempDir out;
  write_model(out / "m.json", *model);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(out / "m.json")), {12, 32}),
                       Butterfly(12, 32, {.tagged = true}));
}

TEST_CASE("unseen structure: tagged rounds whose last compute holds the step's are found by their tags",
          "[trace_model]")
{
  // The step's compute merged into the last round's: read plain, the steps are one run of (S C), with no
  // boundary between them; told apart by their tags first, each step is a loop body, then plain, the
  // rounds a loop within it. The rounds' compute is fitted at its mean (the step's work is in the last).
  TempDir dir;
  const Butterfly::Rounds rounds{.tagged = true, .merged = true};
  const auto profiles = write_profile_grid(dir.path(), "bfly", {4, 8, 16}, {8, 12}, TraceEncoding::JsonLines,
                                           [&](int nw, int np) { return Butterfly(nw, np, rounds); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->groups.size() == 1);
  SynthSource synth(model, {8, 64});
  Butterfly truth(8, 64, rounds);
  for (int r : {0, 37, 63}) {
    auto a = read_all(*synth.open(r)), b = read_all(*truth.open(r));
    INFO("rank " << r);
    REQUIRE(a.size() == b.size());
    double work_a = 0, work_b = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("call " << i);
      CHECK(a[i].op == b[i].op);
      CHECK(a[i].peer == b[i].peer);
      CHECK(a[i].tag == b[i].tag);
      CHECK(a[i].recv_tag == b[i].recv_tag);
      CHECK(a[i].bytes == b[i].bytes);
      work_a += a[i].flops;
      work_b += b[i].flops;
    }
    // The mean's formula is not the truth's (which divides by log2(Np)); the total stays near it.
    CHECK(work_a == Approx(work_b).epsilon(0.2));
  }
}

TEST_CASE("unseen structure: a call that only the largest training size makes leaves the smaller sizes' model",
          "[trace_model][model_quality]")
{
  // At Nw 16 the runs have 4 steps and the 4th ends with a barrier; at Nw 8 and 12 (2 and 3 steps) there
  // is none. The function tables follow the size, so the fit keeps the two sizes that agree (they can
  // scale with Nw; the largest size alone could not) and says that larger sizes take another path.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "bfly", {4, 8, 16}, {8, 12, 16}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Butterfly(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->training.size() == 6);
  CHECK_THAT(model->size_class, Catch::Contains("at Nw 8, 12 only") && Catch::Contains("those at Nw 16 take others") &&
                                    Catch::Contains("MPI_Barrier") && Catch::Contains("from Nw 16 on may take"));
  SynthSource synth(model, {32, 64});
  REQUIRE(synth.quality().approximated.size() == 1);
  CHECK(synth.quality().approximated[0].field == "size class");
  // Every step's calls, without the barriers of the path the model left out.
  const std::vector<CallRecord> calls = read_all(*synth.open(5));
  std::size_t sendrecvs = 0, barriers = 0;
  for (const CallRecord& c : calls) {
    sendrecvs += c.op == Op::Sendrecv ? 1 : 0;
    barriers += c.op == Op::Barrier ? 1 : 0;
  }
  CHECK(sendrecvs == 8 * 6);
  CHECK(barriers == 0);
  // Profiles of one size that call other functions are still another application: the error stands.
  const auto mixed = write_profile_grid(dir.path() / "mixed", "bfly", {4, 8}, {16}, TraceEncoding::JsonLines,
                                        [](int nw, int np) { return np == 4 ? Butterfly(12, np) : Butterfly(nw, np); });
  auto err = gridcast::test::expect_input_error([&] { fit_trace_model(mixed); });
  CHECK_THAT(err.reason(), Catch::Contains("function table does not match") && Catch::Contains("different applications"));
}

namespace {

/// Textbook elimination with rows dealt out cyclically: Nw steps; in step k the owner of row k (rank
/// k mod Np) scales it (its own compute call), broadcasts it from root k mod Np, every rank updates
/// (compute), then a reduce of the step's pivot norm to rank (k + 1) mod Np, which logs it alone.
class PivotOwner final : public TraceSource {
public:
  PivotOwner(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("pivot");
    s->add(Op::Init, "MPI_Init");
    for (int k = 0; k < nw_; ++k) {
      if (rank == k % np_)
        s->add(Op::Compute, "compute").flops = 1000.0;
      CallRecord& b = s->add(Op::Bcast, "MPI_Bcast");
      b.root        = k % np_;
      b.bytes       = 64;
      s->add(Op::Compute, "compute").flops = 5000.0;
      CallRecord& r = s->add(Op::Reduce, "MPI_Reduce");
      r.root        = (k + 1) % np_;
      r.bytes       = 8;
      if (rank == (k + 1) % np_)
        s->add(Op::Compute, "compute").flops = 2000.0;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

}  // namespace

TEST_CASE("unseen structure: roots that follow the step, and the root's own work, read as one template",
          "[trace_model]")
{
  // Read as recorded, each rank computes alone in the steps it owns or logs, so every rank has a template
  // of its own and the roots, read across them, are approximated. Read as the hook records calls (the
  // logger's and the next owner's computes as one, a compute of no work after the reduce elsewhere),
  // every rank runs one loop whose roots are k mod Np and (k + 1) mod Np, and the work after the reduce
  // is the reduce root's (root_work).
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "pivot", {4, 6, 8}, {16, 24}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return PivotOwner(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  bool noted = false;
  for (const std::string& w : model->warnings)
    noted = noted || w.find("read as the profiling hook records them") != std::string::npos;
  CHECK(noted);
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("\"expr\": \"cycle\"") && Catch::Contains("\"expr\": \"rotate\"") &&
                       Catch::Contains("(i0 + 1) mod Np") && not Catch::Contains("no rank expression explains"));
  CHECK(model_to_json(model_from_json(nlohmann::json::parse(json), "model.json")).dump(2) == json);
  // The work after a reduce is the root's alone (its log and its next pivot), not spread over the ranks.
  CHECK_THAT(json, Catch::Contains("\"root_work\""));
  // A root's work with a field it does not have is refused, naming the key.
  {
    nlohmann::json bad = nlohmann::json::parse(json);
    bool planted       = false;
    std::function<void(nlohmann::json&)> plant = [&](nlohmann::json& j) {
      if (planted)
        return;
      if (j.is_object() && j.contains("root_work")) {
        j["root_work"]["extra"] = 1;
        planted                 = true;
        return;
      }
      if (j.is_object() || j.is_array())
        for (auto& child : j)
          plant(child);
    };
    plant(bad);
    REQUIRE(planted);
    auto err = gridcast::test::expect_input_error([&] { model_from_json(bad, "model.json"); });
    CHECK_THAT(std::string(err.what()), Catch::Contains("root_work") && Catch::Contains("extra"));
  }
  // At 12 ranks and 36 steps every rank makes every collective with the same root, and the ranks' work
  // is the program's in total.
  const int np = 12, nw = 36;
  SynthSource synth(model, {nw, np});
  double total = 0;
  for (int r = 0; r < np; ++r) {
    std::vector<int> bcast_roots, reduce_roots;
    int last_reduce_root = -1;
    for (const CallRecord& c : read_all(*synth.open(r))) {
      if (c.op == Op::Bcast)
        bcast_roots.push_back(c.root);
      if (c.op == Op::Reduce)
        reduce_roots.push_back(last_reduce_root = c.root);
      if (c.op == Op::Compute) {
        total += c.flops;
        // After a reduce: the update (5000), or the root's log and next pivot (3000; 2000 after the last
        // step), or nothing at the other ranks; within the latency model's ratio.
        if (last_reduce_root >= 0 && c.flops != Approx(5000.0).epsilon(0.05)) {
          if (last_reduce_root == r)
            CHECK(c.flops >= 1900.0);
          else
            CHECK(c.flops < 100.0);
        }
      }
    }
    REQUIRE(bcast_roots.size() == static_cast<std::size_t>(nw));
    REQUIRE(reduce_roots.size() == static_cast<std::size_t>(nw));
    for (int k = 0; k < nw; ++k) {
      CHECK(bcast_roots[static_cast<std::size_t>(k)] == k % np);
      CHECK(reduce_roots[static_cast<std::size_t>(k)] == (k + 1) % np);
    }
  }
  CHECK(total == Approx(nw * (1000.0 + np * 5000.0 + 2000.0)).epsilon(0.02));
}

TEST_CASE("rank expressions: a role one rank further each iteration from rank a", "[trace_model]")
{
  std::vector<RankObservation> obs;
  for (int np : {4, 6})
    for (std::uint64_t k = 0; k < 9; ++k)
      for (int r = 0; r < np; ++r)
        obs.push_back({r, np, {k}, static_cast<int>((k + 1) % static_cast<std::uint64_t>(np))});
  auto e = fit_rank_expr(obs);
  REQUIRE(e);
  CHECK(e->kind == RankExpr::Kind::Rotate);
  CHECK(e->a == 1);
  CHECK(e->text() == "(i0 + 1) mod Np");
  const std::uint64_t k = 40;
  CHECK(e->eval(3, 32, &k, 1) == 9);
}

TEST_CASE("unseen structure: a profiler's MPI_PROC_NULL halves share the interior's template and the grid's middle follows its ends",
          "[trace_model]")
{
  // Training grids 3x2x1, 3x2x2 and 4x3x2 (np 6, 12, 24): the last axis never has a middle rank, and at
  // np 6 it has one rank (no call along it: a template of its own, so the group rule reads the grid's
  // sides). The ends' halves are the interior's sendrecv with a partner off the edge, so every rank
  // whose axes all have 2 ranks or more runs one template.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "halo", {6, 12, 24}, {2, 3}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return HookHalo3d(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  REQUIRE(model->groups.size() == 2);
  CHECK(model->rule.classifier.name() == "grid3-sides");
  // 96 ranks: 6x4x4, whose last axis has middle ranks no training grid had: they run the same template,
  // their sendrecvs whole, the ends' halves again at the ends.
  SynthSource synth(model, {3, 96});
  // Said in the prediction's quality report: the ranks of each new class, and the group they run.
  const auto& placed = synth.quality().approximated;
  CHECK(std::any_of(placed.begin(), placed.end(), [](const ApproximatedPosition& a) {
    return a.field == "group" && a.method.find("'grid3-sides=low,low,mid'") != std::string::npos;
  }));
  const std::vector<int> d = dims_create(96, 3);
  for (int rank : {0, 1, 5, 42, 95}) {
    HookHalo3d truth(3, 96);
    std::vector<CallRecord> want;
    for (const CallRecord& c : read_all(*truth.open(rank)))
      if (c.op == Op::Send || c.op == Op::Recv || c.op == Op::Sendrecv)
        want.push_back(c);
    const auto got = p2p_calls(synth, rank);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("rank " << rank << ", call " << i);
      CHECK(got[i].op == want[i].op);
      CHECK(got[i].peer == want[i].peer);
      CHECK(got[i].src == want[i].src);
      CHECK(got[i].bytes == want[i].bytes);
    }
  }
}

namespace {

/// A time-stepper that reduces every 10th step: 2*Nw steps of a ring sendrecv and a compute, and after
/// steps 10, 20, ... an MPI_Allreduce. Folded, `(S C)x10 A` x M then `(S C)` x T, M and T set by 2*Nw.
class EveryTenth final : public TraceSource {
public:
  EveryTenth(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("every");
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < 2 * nw_; ++step) {
      CallRecord& c = s->add(Op::Sendrecv, "MPI_Sendrecv");
      c.peer        = (rank + 1) % np_;
      c.src         = (rank + np_ - 1) % np_;
      c.bytes = c.recv_bytes = 64;
      s->add(Op::Compute, "compute").flops = 100.0 * nw_;
      if (step % 10 == 9)
        s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

}  // namespace

TEST_CASE("unseen structure: a reduction every 10th of 2*Nw steps keeps its period at every size", "[trace_model]")
{
  // At Nw 8, 12, 16: 1, 2, 3 blocks of 10 steps and a tail of 6, 4, 2. Fitted apart, the blocks would be
  // Nw/4 - 1 (7 at Nw 32, where the code makes 6); fitted as one total, 2*Nw, and its parts.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "every", {4, 8}, {8, 12, 16}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return EveryTenth(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("floor((2*Nw) / 10)") && Catch::Contains("(2*Nw) mod 10") &&
                       Catch::Contains("\"part\": \"remainder\""));
  for (int nw : {32, 35, 40})
    require_same_streams(SynthSource(model, {static_cast<double>(nw), 16}), EveryTenth(nw, 16));
  write_model(dir / "m.json", *model);
  require_same_streams(SynthSource(std::make_shared<const TraceModel>(read_model(dir / "m.json")), {27, 8}),
                       EveryTenth(27, 8));
  // A malformed period names the key.
  std::string broken = json;
  const auto at = broken.find("\"part\": \"remainder\"");
  REQUIRE(at != std::string::npos);
  broken.replace(at, std::string("\"part\": \"remainder\"").size(), "\"part\": \"rest\"");
  gridcast::test::write_file(dir / "bad.json", broken);
  const auto e = gridcast::test::expect_input_error([&] { read_model(dir / "bad.json"); });
  CHECK_THAT(e.what(), Catch::Contains("part") && Catch::Contains("bad.json"));
}

namespace {

/// The iterations a solver takes in step `step` at size `nw` until it converges: about nw, and 0 to 2
/// more by the step's right-hand side (a hash of the step: no formula of the step index gives them).
int converge_iterations(int nw, int step)
{
  std::uint32_t h = static_cast<std::uint32_t>(step) * 2654435761u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return nw + static_cast<int>(h % 3);
}

/// An implicit time-stepper: Nw/2 steps, each a compute, then the solver's iterations (a ring
/// sendrecv, a compute, an MPI_Allreduce of the residual) until it converges, then an MPI_Bcast.
class ConvergingSteps final : public TraceSource {
public:
  ConvergingSteps(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("converge");
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < nw_ / 2; ++step) {
      s->add(Op::Compute, "predict").flops = 200.0 * nw_;
      for (int k = 0; k < converge_iterations(nw_, step); ++k) {
        CallRecord& c = s->add(Op::Sendrecv, "MPI_Sendrecv");
        c.peer        = (rank + 1) % np_;
        c.src         = (rank + np_ - 1) % np_;
        c.bytes = c.recv_bytes = 64;
        s->add(Op::Compute, "smooth").flops = 100.0 * nw_;
        s->add(Op::Allreduce, "MPI_Allreduce").bytes = 8;
      }
      s->add(Op::Bcast, "MPI_Bcast").bytes = 8;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

/// Calls of `function` in rank `rank`'s stream of `src`.
std::size_t calls_of(const TraceSource& src, int rank, const std::string& function)
{
  auto s = src.open(rank);
  std::size_t n = 0;
  for (const CallRecord& c : read_all(*s))
    n += s->functions().name(c.function) == function ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("unseen structure: a solver's iterations until it converges are one loop whose count follows the data",
          "[trace_model]")
{
  // Steps run nw, nw + 1 or nw + 2 iterations in an order of their own. Folded by body and count, each
  // size's steps are other blocks and no two sizes share a template; folded by body, the steps are one
  // loop of Nw/2 iterations whose inner count is its mean per step, marked as following the data.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "converge", {4, 8}, {16, 24, 32}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return ConvergingSteps(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(model->size_class.empty());  // every training size kept
  CHECK(std::any_of(model->warnings.begin(), model->warnings.end(),
                    [](const std::string& w) { return w.find("folded by loop body") != std::string::npos; }));
  const std::string json = model_to_json(*model).dump(2);
  CHECK_THAT(json, Catch::Contains("follows the data"));
  for (int nw : {48, 64}) {
    const ConvergingSteps truth(nw, 16);
    const SynthSource synth(model, {static_cast<double>(nw), 16});
    for (int rank : {0, 7, 15}) {
      INFO("Nw " << nw << ", rank " << rank);
      CHECK(calls_of(synth, rank, "MPI_Bcast") == static_cast<std::size_t>(nw / 2));  // the steps, exact
      const double want = static_cast<double>(calls_of(truth, rank, "MPI_Allreduce"));
      const double got  = static_cast<double>(calls_of(synth, rank, "MPI_Allreduce"));
      CHECK(std::abs(got - want) <= 0.03 * want);  // the iterations, within their mean's extrapolation
    }
  }
  // Synthesis says the target leans on it.
  const SynthSource at64(model, {64, 16});
  CHECK(std::any_of(at64.quality().approximated.begin(), at64.quality().approximated.end(),
                    [](const ApproximatedPosition& a) {
                      return a.field == "count" && a.method.find("follows the data") != std::string::npos;
                    }));
  // The approximation survives model.json.
  write_model(dir / "m.json", *model);
  const auto reread = std::make_shared<const TraceModel>(read_model(dir / "m.json"));
  CHECK(model_to_json(*reread).dump(2) == json);
}

namespace {

/// A 3-D periodic halo of sendrecvs, as codes write it: along each axis, to the upper neighbour from the
/// lower one, then to the lower from the upper; the face normal to the axis each time.
class SendrecvFaces final : public TraceSource {
public:
  SendrecvFaces(int nw, int np) : nw_(nw), np_(np) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s = std::make_unique<MemoryStream>("srfaces");
    s->add(Op::Init, "MPI_Init");
    const auto d = dims_create(np_, 3);
    for (int step = 0; step < 3; ++step) {
      for (int axis = 0; axis < 3; ++axis)
        for (int dir : {1, -1}) {
          CallRecord& c = s->add(Op::Sendrecv, "MPI_Sendrecv");
          c.peer        = grid3_neighbour(rank, np_, axis, dir);
          c.src         = grid3_neighbour(rank, np_, axis, -dir);
          c.tag         = 10 * (dir > 0 ? 1 : 2) + axis;
          c.bytes = c.recv_bytes = 8ULL * static_cast<std::uint64_t>(nw_ * nw_) /
                                   static_cast<std::uint64_t>(np_ / d[static_cast<std::size_t>(axis)]);
        }
      s->add(Op::Compute, "compute").flops = 1000.0 * nw_ * nw_ * nw_ / np_;
      // A line's profile along x, reduced to rank 0: Nw/d0 doubles.
      CallRecord& r = s->add(Op::Reduce, "MPI_Reduce");
      r.root        = 0;
      r.bytes       = 8ULL * static_cast<std::uint64_t>(nw_ / d[0]);
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
};

}  // namespace

TEST_CASE("unseen structure: directions training cannot tell apart along one axis follow the other axes' calls",
          "[trace_model]")
{
  // Trained on 2x2x2, 4x2x2 and 4x4x2 grids, the last axis has one neighbour both ways: its sendrecvs'
  // peer and source could each be either. Along x and y the first goes up from below, the second down
  // from above; along z too, and at 4x4x4 and 8x4x4 the run is the program's own, call for call.
  // The reduction's Nw/d0 is Nw/dims2[1] of the 2-D grid too at every training count (2, 4, 4); the
  // code's peers name the 3-D grid, so the size reads that grid's extent (at np 64: 4, not 8).
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "srfaces", {8, 16, 32}, {16, 24, 32}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return SendrecvFaces(nw, np); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  for (int np : {64, 128})
    require_same_streams(SynthSource(model, {64, np}), SendrecvFaces(64, np));
}

namespace {

/// A Jacobi sweep on the MPI_Dims_create(np, 2) grid: per axis and direction a sendrecv of the face
/// `8*Nw/d_other` bytes (tag 1 + axis), then work `100*Nw^2/Np`.
/// Periodic (`guarded` false): to the neighbour up, from the one below, then the other way; the ranks on the
/// grid's edges also apply a boundary condition (their own compute call). Trained at 4, 8 and 16 ranks
/// (2x2, 4x2, 4x4), the interior ranks, which make no boundary call, exist at 16 only.
/// Guarded: not periodic, no call past an edge, one tag per axis for both directions: to each neighbour
/// the rank has. Every corner makes the same calls, to other neighbours (rank 0 up, the last rank down).
class Jacobi2d final : public TraceSource {
public:
  Jacobi2d(int nw, int np, bool guarded) : nw_(nw), np_(np), guarded_(guarded) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s       = std::make_unique<MemoryStream>(guarded_ ? "guarded" : "edges");
    const auto d = dims_create(np_, 2);
    const int c0 = rank / d[1], c1 = rank % d[1];
    const bool edge = c0 == 0 || c1 == 0 || c0 == d[0] - 1 || c1 == d[1] - 1;
    auto at = [&](int axis, int k) {  // the rank k away along axis, periodic
      return axis == 0 ? ((c0 + k + d[0]) % d[0]) * d[1] + c1 : c0 * d[1] + (c1 + k + d[1]) % d[1];
    };
    s->add(Op::Init, "MPI_Init");
    for (int step = 0; step < 4; ++step) {
      for (int axis = 0; axis < 2; ++axis)
        for (int dir : {1, -1}) {
          const int k = guarded_ ? -dir : dir;  // guarded: down first
          const int c = (axis == 0 ? c0 : c1) + k;
          if (guarded_ && (c < 0 || c >= d[static_cast<std::size_t>(axis)]))
            continue;
          CallRecord& x = s->add(Op::Sendrecv, "MPI_Sendrecv");
          x.peer        = at(axis, k);
          x.src         = guarded_ ? x.peer : at(axis, -k);
          x.tag         = 1 + axis;
          x.bytes = x.recv_bytes = 8ULL * static_cast<std::uint64_t>(nw_ / d[static_cast<std::size_t>(1 - axis)]);
        }
      if (edge && not guarded_)
        s->add(Op::Compute, "boundary").flops = 50.0 * nw_;
      s->add(Op::Compute, "sweep").flops = 100.0 * nw_ * nw_ / np_;
    }
    s->add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_, np_;
  bool guarded_;
};

}  // namespace

TEST_CASE("unseen structure: a rank class seen at one rank count takes the grid-reading form of the same call",
          "[trace_model]")
{
  // The interior of 4x4 exists at 16 ranks only: its own points make `8*Nw/4` and `6.25*Nw^2`, formulas
  // of Nw alone. The same calls of the edge ranks, seen at more rank counts, read the grid and reproduce
  // the interior's points: at 8x8 and 8x4 the interior's faces and work are its own.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "edges", {4, 8, 16}, {16, 32, 48}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Jacobi2d(nw, np, false); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  for (int np : {64, 32})
    require_same_streams(SynthSource(model, {64, np}), Jacobi2d(64, np, false));
}

TEST_CASE("unseen structure: corners that run one template to other neighbours get a group each", "[trace_model]")
{
  // In one group the four corners' first exchange goes up from the low side and down from the high
  // one: no rank expression explains both. With a group per class of the rule, each is a grid neighbour.
  TempDir dir;
  const auto profiles = write_profile_grid(dir.path(), "guarded", {6, 12, 24}, {12, 24, 36}, TraceEncoding::JsonLines,
                                           [](int nw, int np) { return Jacobi2d(nw, np, true); });
  auto model = std::make_shared<const TraceModel>(fit_trace_model(profiles));
  CHECK(std::any_of(model->warnings.begin(), model->warnings.end(),
                    [](const std::string& w) { return w.find("a group of its own") != std::string::npos; }));
  for (int np : {96, 48})
    require_same_streams(SynthSource(model, {72, np}), Jacobi2d(72, np, true));
}
