// Nonblocking collectives (MPI_Iallreduce, MPI_Ibcast, MPI_Ireduce, MPI_Ibarrier...) and MPI_Comm_idup in
// the trace model: fitted with their requests numbered among the isend/irecv ones, synthesized exactly,
// written to TIT as SMPI 3.32 writes them and read back; what still cannot be fitted is refused by name.
#include "../models/models_support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/tit.hpp"
#include "gridcast/models/trace_model.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace gridcast::models;
using namespace gridcast::models::trace;
using gridcast::test::MemoryStream;
using gridcast::test::TempDir;

namespace {

/// A solver whose reductions overlap its halo exchange. Rank r of np at size nw:
///   init; [MPI_Comm_idup of world into handle 1, wait]; then nw iterations of: iallreduce (8 B),
///   irecv from r-1 and isend to r+1 (8 nw B), compute, one test then a wait of the iallreduce, waitall of
///   the halo; every 2nd iteration also an ibcast from rank 0 (16 nw B, on the duplicate when there is
///   one) around a compute, completed by a wait. At the end an ireduce to rank 0 and an ibarrier, both
///   completed by one waitall; rank 0 then computes; finalize.
/// Mode::Blocking: the same program with MPI_Allreduce, MPI_Bcast, MPI_Reduce and MPI_Barrier instead, the
/// collectives' tests and waits left out.
class NbcTruth final : public TraceSource {
public:
  enum class Mode { Blocking, Nonblocking, WithIdup };
  NbcTruth(int nw, int np, Mode mode) : nw_(nw), np_(np), idup_(mode == Mode::WithIdup), nb_(mode != Mode::Blocking) {}
  int rank_count() const override { return np_; }
  CallStreamPtr open(int rank) const override
  {
    auto s   = std::make_unique<MemoryStream>("nbc-truth");
    auto add = [&](Op op, const char* fn) -> CallRecord& { return s->add(op, fn); };
    std::int64_t req = 0;
    add(Op::Init, "MPI_Init");
    const std::int32_t comm = idup_ ? 1 : kWorldComm;
    if (idup_) {
      CallRecord& d = add(Op::CommDup, "MPI_Comm_idup");
      d.new_comm    = 1;
      d.request     = req++;
      add(Op::Wait, "MPI_Wait").request = req - 1;
    }
    // A collective, nonblocking (with the next request) or blocking by the mode; returns its request.
    auto coll = [&](Op op, const char* nb_fn, const char* fn) -> CallRecord& {
      CallRecord& c = add(op, nb_ ? nb_fn : fn);
      if (nb_)
        c.request = req++;
      return c;
    };
    for (int it = 0; it < nw_; ++it) {
      CallRecord& a    = coll(Op::Allreduce, "MPI_Iallreduce", "MPI_Allreduce");
      a.bytes          = 8;
      const auto red   = a.request;
      CallRecord& rv   = add(Op::Irecv, "MPI_Irecv");
      rv.peer          = (rank - 1 + np_) % np_;
      rv.tag           = 3;
      rv.bytes         = static_cast<std::uint64_t>(8 * nw_);
      rv.request       = req++;
      CallRecord& sd   = add(Op::Isend, "MPI_Isend");
      sd.peer          = (rank + 1) % np_;
      sd.tag           = 3;
      sd.bytes         = static_cast<std::uint64_t>(8 * nw_);
      sd.request       = req++;
      add(Op::Compute, "compute").flops = 100.0 * nw_ * nw_;
      if (nb_) {
        add(Op::Test, "MPI_Test").request = red;
        add(Op::Wait, "MPI_Wait").request = red;
      }
      add(Op::Waitall, "MPI_Waitall").requests = {req - 2, req - 1};
      if (it % 2 == 1) {
        CallRecord& b = coll(Op::Bcast, "MPI_Ibcast", "MPI_Bcast");
        b.bytes       = static_cast<std::uint64_t>(16 * nw_);
        b.comm        = comm;
        const auto bq = b.request;
        add(Op::Compute, "compute").flops = 10.0 * nw_;
        if (nb_)
          add(Op::Wait, "MPI_Wait").request = bq;
      }
    }
    coll(Op::Reduce, "MPI_Ireduce", "MPI_Reduce").bytes = 8;
    coll(Op::Barrier, "MPI_Ibarrier", "MPI_Barrier");
    if (nb_)
      add(Op::Waitall, "MPI_Waitall").requests = {req - 2, req - 1};
    if (rank == 0)
      add(Op::Compute, "compute").flops = 500;
    add(Op::Finalize, "MPI_Finalize");
    return s;
  }

private:
  int nw_;
  int np_;
  bool idup_;
  bool nb_;
};

using Mode = NbcTruth::Mode;

std::vector<std::filesystem::path> nbc_training(const TempDir& dir, Mode mode)
{
  return gridcast::test::write_profile_grid(dir.path(), "truth", {4, 8}, {4, 6, 8}, TraceEncoding::Binary,
                                            [mode](int nw, int np) { return NbcTruth(nw, np, mode); });
}

using gridcast::test::require_same_streams;

}  // namespace

TEST_CASE("nonblocking collectives: fit and synth reproduce the calls and requests, model.json round trip",
          "[trace_model][nbc]")
{
  for (Mode mode : {Mode::Nonblocking, Mode::WithIdup}) {
    const bool idup = mode == Mode::WithIdup;
    INFO((idup ? "with" : "without") << " MPI_Comm_idup");
    TempDir dir;
    auto model = std::make_shared<const TraceModel>(fit_trace_model(nbc_training(dir, mode)));
    CHECK(model->warnings.empty());
    int flagged = 0;
    for (const CallToken& t : model->tokens)
      if (t.nonblocking) {
        ++flagged;
        CHECK(is_collective(t.op));
      }
    CHECK(flagged == (idup ? 5 : 4));  // iallreduce, ibcast, ireduce, ibarrier (, comm_idup)

    // A training point, and an unseen point: 4x the ranks, twice the largest size.
    require_same_streams(SynthSource(model, {6, 8}), NbcTruth(6, 8, mode));
    require_same_streams(SynthSource(model, {16, 32}), NbcTruth(16, 32, mode));

    // The flag survives model.json, as "nonblocking": true on the token.
    write_model(dir / "model.json", *model);
    CHECK_THAT(gridcast::test::read_file(dir / "model.json"), Catch::Contains("\"nonblocking\": true"));
    auto again = std::make_shared<const TraceModel>(read_model(dir / "model.json"));
    require_same_streams(SynthSource(again, {10, 16}), NbcTruth(10, 16, mode));
  }
}

TEST_CASE("nonblocking collectives: a model without them has no nonblocking key", "[trace_model][nbc]")
{
  TempDir dir;
  auto model = std::make_shared<const TraceModel>(fit_trace_model(nbc_training(dir, Mode::Blocking)));
  require_same_streams(SynthSource(model, {16, 32}), NbcTruth(16, 32, Mode::Blocking));
  std::string text = model_to_json(*model).dump(2);
  CHECK_THAT(text, not Catch::Contains("nonblocking"));
  CHECK_THAT(text, Catch::Contains("MPI_Allreduce"));
}

TEST_CASE("nonblocking collectives: synthesized native and TIT output is deterministic and reads back",
          "[trace_model][nbc]")
{
  TempDir dir;
  auto model = std::make_shared<const TraceModel>(fit_trace_model(nbc_training(dir, Mode::Nonblocking)));
  SynthSource src(model, {12, 16});
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

  // The lines SMPI 3.32 writes: the blocking line with an "i", and a wait naming "S S TAG", S the world
  // rank of the actor whose pid is the rank's place (-333 at place 0), TAG the collective's own.
  const std::string rank0 = gridcast::test::read_file(dir / "t1" / "trace.txt_files/rank-1.txt");
  const std::string rank3 = gridcast::test::read_file(dir / "t1" / "trace.txt_files/rank-4.txt");
  CHECK_THAT(rank0, Catch::Contains("0 iallreduce 8 0 6\n0 irecv 15 3 96 6\n"));
  CHECK_THAT(rank0, Catch::Contains("0 test -333 -333 -4446\n0 wait -333 -333 -4446\n0 waitall 2\n"));
  CHECK_THAT(rank0, Catch::Contains("0 ibcast 192 0 6\n"));
  CHECK_THAT(rank0, Catch::Contains("0 wait -333 -333 -3335\n"));
  CHECK_THAT(rank0, Catch::Contains("0 ireduce 8 0 0 6\n0 ibarrier\n0 waitall 2\n"));
  CHECK_THAT(rank3, Catch::Contains("3 wait 2 2 -4446\n"));

  // Imported back, the calls and their requests are the synthesized ones.
  TitTrace back(dir / "t1" / "trace.txt");
  REQUIRE(back.rank_count() == 16);
  for (int r : {0, 5, 15}) {
    auto a = gridcast::test::read_all(*src.open(r));
    auto b = gridcast::test::read_all(*back.open(r));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("rank " << r << " call " << i);
      CHECK(a[i].op == b[i].op);
      CHECK(a[i].peer == b[i].peer);
      CHECK(a[i].bytes == b[i].bytes);
      CHECK(a[i].root == b[i].root);
      CHECK(a[i].request == b[i].request);
      CHECK(a[i].requests == b[i].requests);
    }
  }
}

TEST_CASE("nonblocking collectives: TIT lines of SMPI 3.32 import with their requests", "[trace_model][nbc]")
{
  // Rank 2 of 4 as `smpirun -trace-ti` wrote it (tests of this file's TIT writer use the same form).
  TitLineParser p(4, 2, "smpi.txt");
  FunctionTable fns;
  CallRecord r;
  std::uint64_t n = 0;
  auto line = [&](const char* text) {
    REQUIRE(p.parse(text, ++n, r, fns));
    return r;
  };
  auto a = line("2 iallreduce 16 0 0 ");
  CHECK(a.op == Op::Allreduce);
  CHECK(a.bytes == 128);
  CHECK(a.request == 0);
  CHECK(fns.name(a.function) == "iallreduce");
  auto b = line("2 ibcast 8 1 0 ");
  CHECK(b.op == Op::Bcast);
  CHECK(b.root == 1);
  CHECK(b.request == 1);
  auto s = line("2 isend 3 7 1 0");
  CHECK(s.request == 2);
  // The bcast's wait first, by its tag: the allreduce stays pending, and so does the isend.
  auto w = line("2 wait 1 1 -3335");
  CHECK(w.op == Op::Wait);
  CHECK(w.request == 1);
  CHECK(line("2 test 1 1 -4446").request == 0);
  CHECK(line("2 wait 2 3 7").request == 2);
  CHECK(line("2 wait 1 1 -4446").request == 0);
  CHECK(p.pending_requests().empty());
  CHECK(line("2 ibarrier").request == 3);
  CHECK(line("2 igather 3 3 0 0 0").request == 4);
  CHECK(line("2 waitall 2").requests == std::vector<std::int64_t>{3, 4});
  // MPI_Ialltoallw: written as ialltoallv, waited for under the alltoallw tag.
  CHECK(line("2 ialltoallv 32 1 1 1 1 32 1 1 1 1 0 0").request == 5);
  CHECK(line("2 wait 1 1 -1021").request == 5);
  // A wait for a collective tag with no such collective pending names what it looked for.
  auto e = gridcast::test::expect_input_error([&] { p.parse("2 wait 1 1 -779", 12, r, fns); });
  CHECK(e.context().file == "smpi.txt");
  CHECK(e.context().line == 12);
  CHECK(e.context().rank == 2);
  CHECK(e.reason() == "wait for 1 1 -779 matches no isend/irecv or nonblocking collective");
}

TEST_CASE("nonblocking collectives: what cannot be fitted or written is refused by name", "[trace_model][nbc]")
{
  SECTION("a nonblocking collective never completed")
  {
    TempDir dir;
    std::vector<std::string> ranks(2, "{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n"
                                      "{\"op\":\"allreduce\",\"fn\":\"MPI_Iallreduce\",\"bytes\":8,\"request\":0}\n"
                                      "{\"op\":\"barrier\",\"fn\":\"MPI_Barrier\"}\n"
                                      "{\"op\":\"finalize\",\"fn\":\"MPI_Finalize\"}\n");
    gridcast::test::write_jsonl_profile(dir / "a", ranks);
    gridcast::test::write_jsonl_profile(dir / "b", ranks);
    auto e = gridcast::test::expect_input_error([&] { fit_trace_model({dir / "a", dir / "b"}); });
    CHECK(e.context().rank == 0);
    CHECK(e.context().line == 2);
    CHECK_THAT(e.context().file, Catch::Contains("rank-00000.jsonl"));
    CHECK_THAT(e.reason(), Catch::Contains("MPI_Iallreduce creates request 0 that no wait, test or waitall of the "
                                           "rank completes"));
  }
  SECTION("MPI_Comm_idup has no TIT form (SMPI 3.32 aborts on it)")
  {
    TempDir dir;
    auto model = std::make_shared<const TraceModel>(fit_trace_model(nbc_training(dir, Mode::WithIdup)));
    SynthSource src(model, {4, 4});
    auto e = gridcast::test::expect_input_error([&] { write_tit(src, dir / "tit"); });
    CHECK(e.context().rank == 0);
    CHECK_THAT(e.reason(), Catch::Contains("nonblocking op 'comm_dup' has no SMPI time-independent trace form"));
  }
  SECTION("model.json: only a collective token can be nonblocking")
  {
    TempDir dir;
    auto model = fit_trace_model(nbc_training(dir, Mode::Nonblocking));
    auto j     = model_to_json(model);
    for (auto& t : j["tokens"])
      if (t["function"] == "MPI_Isend")
        t["nonblocking"] = true;
    nlohmann::json plain = nlohmann::json::parse(j.dump());
    auto e = gridcast::test::expect_input_error([&] { model_from_json(plain, "m.json"); });
    CHECK(e.context().file == "m.json");
    CHECK_THAT(e.context().key, Catch::Contains("tokens") && Catch::Contains("nonblocking"));
    CHECK_THAT(e.reason(), Catch::Contains("only a collective op can be nonblocking"));
  }
}
