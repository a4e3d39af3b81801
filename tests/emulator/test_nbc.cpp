// SMPI 3.32's nonblocking barrier, allreduce and reduce-scatter (smpi_nbc_impl.cpp), chosen under
// gridcast/coll-selector:smpi: every message posted at the call, none waiting for another. Hand-computed
// times under CM02 (one lone flow: 2 x 10 us + bytes / 1 GBps; cluster links shared by both directions),
// and times that smpirun 3.32 gives for the same programs under SMPI's network model.
#include "gridcast/emulator/collectives.hpp"
#include "gridcast/emulator/replay.hpp"

#include "replay_support.hpp"
#include "smpi_support.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gridcast;
using namespace gridcast::emulator;
using namespace gridcast::test;

namespace {

/// `np` ranks that each start one nonblocking collective (`record`, a JSON object without its request)
/// and wait for it.
std::vector<std::string> one_nonblocking(int np, const std::string& record)
{
  return std::vector<std::string>(static_cast<std::size_t>(np),
                                  record.substr(0, record.size() - 1) + ",\"request\":1}\n"
                                  "{\"op\":\"wait\",\"fn\":\"MPI_Wait\",\"request\":1}\n");
}

}  // namespace

TEST_CASE("nbc: the smpi selector picks SMPI's nonblocking algorithms, the blocking calls keep theirs", "[nbc]")
{
  CollectiveRegistry registry;
  CollectiveArgs a;
  a.bytes = 8;
  using K = CollectiveKind;
  for (K kind : {K::Barrier, K::Allreduce, K::ReduceScatter}) {
    CHECK(registry.select_nonblocking(kind, a, 16, CollectiveSelector::Smpi) == "nbc");
    CHECK(registry.select(kind, a, 16, CollectiveSelector::Smpi) != "nbc");
    CHECK(registry.select_nonblocking(kind, a, 16, CollectiveSelector::Mpich) == registry.select(kind, a, 16));
    REQUIRE(registry.find(kind, "nbc") != nullptr);
  }
  CHECK(registry.select_nonblocking(K::Reduce, a, 16, CollectiveSelector::Smpi) == "linear");
  CHECK(registry.select_nonblocking(K::Scan, a, 16, CollectiveSelector::Smpi) == "direct");
}

TEST_CASE("nbc: an iallreduce sends every rank's buffer to every rank at once", "[nbc]")
{
  // 4 ranks, 1 MB: each host's link carries its 3 outgoing and 3 incoming flows, so every flow gets a
  // sixth of it. The blocking choice (flat reduce to rank 0, then a binomial bcast) takes 3 rounds.
  TempDir dir;
  auto r = replay_jsonl(dir, one_nonblocking(4, R"({"op":"allreduce","fn":"MPI_Iallreduce","bytes":1000000})"), 4,
                        1e9, {"gridcast/coll-selector:smpi"});
  REQUIRE(r.collectives.at("allreduce").count("nbc") == 1);
  REQUIRE(r.messages == 12);
  REQUIRE(r.makespan_s == Approx(2 * kLat + 6 * 1e6 / kBw).epsilon(1e-9));
}

TEST_CASE("nbc: an ireduce_scatter sends every block straight to its rank", "[nbc]")
{
  // 4 ranks, blocks of 1 MB (4 MB per rank): rank i sends block j to rank j, all at once; the same six
  // flows per link as the iallreduce.
  TempDir dir;
  auto r = replay_jsonl(
      dir, one_nonblocking(4, R"({"op":"reducescatter","fn":"MPI_Ireduce_scatter","bytes":4000000,"recv_bytes":1000000})"),
      4, 1e9, {"gridcast/coll-selector:smpi"});
  REQUIRE(r.collectives.at("reducescatter").count("nbc") == 1);
  REQUIRE(r.messages == 12);
  REQUIRE(r.makespan_s == Approx(2 * kLat + 6 * 1e6 / kBw).epsilon(1e-9));
}

TEST_CASE("nbc: an ibarrier is one round: rank 0 replies without waiting for the arrivals", "[nbc]")
{
  // barrier__ompi_basic_linear (the blocking MPI_Barrier) takes 2 route latencies; SMPI's ibarrier one
  // (plus 14 one-byte messages on rank 0's link: 14 ns).
  TempDir dir;
  auto r = replay_jsonl(dir, one_nonblocking(8, R"({"op":"barrier","fn":"MPI_Ibarrier"})"), 8, 1e9,
                        {"gridcast/coll-selector:smpi"});
  REQUIRE(r.collectives.at("barrier").count("nbc") == 1);
  REQUIRE(r.messages == 14);
  REQUIRE(r.makespan_s == Approx(transfer(0)).margin(14 / kBw));
}

TEST_CASE("nbc: an iallreduce of one double at 16 ranks takes smpirun's time", "[nbc]")
{
  // MPI_Iallreduce(1 double) + MPI_Wait at 16 ranks on examples/overlap-solver's platform: smpirun 3.32
  // 2.25337e-05 s (the blocking choice, reduce then binomial bcast, took 3.2 times as long).
  TempDir dir;
  auto r = replay_smpi_model(dir, one_nonblocking(16, R"({"op":"allreduce","fn":"MPI_Iallreduce","bytes":8})"),
                             {"gridcast/coll-selector:smpi"});
  REQUIRE(r.makespan_s == Approx(2.25337e-05).epsilon(1e-5));
}

TEST_CASE("nbc: an ibarrier at 16 ranks takes smpirun's time", "[nbc]")
{
  // MPI_Ibarrier + MPI_Wait at 16 ranks on examples/overlap-solver's platform: smpirun 3.32 2.24096e-05 s.
  TempDir dir;
  auto r = replay_smpi_model(dir, one_nonblocking(16, R"({"op":"barrier","fn":"MPI_Ibarrier"})"),
                             {"gridcast/coll-selector:smpi"});
  REQUIRE(r.makespan_s == Approx(2.24096e-05).epsilon(1e-5));
}
