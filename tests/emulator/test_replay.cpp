// The replay engine end to end on tiny traces, against hand-computed times. CM02 is used so that one
// lone flow takes exactly latency + bytes / bandwidth.
#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include "replay_support.hpp"

#include <catch2/catch.hpp>

using namespace gridcast;
using namespace gridcast::emulator;
using namespace gridcast::test;

TEST_CASE("replay: ping-pong and compute scaled from the recording host", "[replay]")
{
  TempDir dir;
  // Recorded on a 2 Gf/s host: 1 ms of compute there is 2e6 flops, i.e. 2 ms on the 1 Gf/s target.
  auto result = replay_jsonl(dir,
                             {R"({"op":"init","fn":"MPI_Init"}
{"op":"compute","fn":"compute","seconds":0.001}
{"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":1000000}
{"op":"recv","fn":"MPI_Recv","peer":1,"tag":0,"bytes":1000000}
{"op":"finalize","fn":"MPI_Finalize"}
)",
                              R"({"op":"init","fn":"MPI_Init"}
{"op":"recv","fn":"MPI_Recv","peer":0,"tag":0,"bytes":1000000}
{"op":"send","fn":"MPI_Send","peer":0,"tag":0,"bytes":1000000}
{"op":"finalize","fn":"MPI_Finalize"}
)"},
                             2, 2e9);
  REQUIRE(result.makespan_s == Approx(0.002 + 2 * transfer(1e6)).epsilon(1e-9));
  REQUIRE(result.ranks[0].compute_s == Approx(0.002).epsilon(1e-9));
  // Rank 1 waits 2 ms for rank 0 to send: that is partner wait, not communication.
  REQUIRE(result.ranks[1].wait_s == Approx(0.002).epsilon(1e-6));
  REQUIRE(result.functions.at("MPI_Send").calls == 2);
  REQUIRE(result.messages == 2);
  REQUIRE(result.events == 9);  // 5 calls of rank 0, 4 of rank 1
}

TEST_CASE("replay: nonblocking ring with waitall and test", "[replay]")
{
  TempDir dir;
  std::vector<std::string> ranks;
  const int np = 4;
  for (int r = 0; r < np; ++r) {
    int next = (r + 1) % np;
    int prev = (r + np - 1) % np;
    ranks.push_back("{\"op\":\"irecv\",\"fn\":\"MPI_Irecv\",\"peer\":" + std::to_string(prev) +
                    ",\"tag\":3,\"bytes\":500000,\"request\":1}\n"
                    "{\"op\":\"isend\",\"fn\":\"MPI_Isend\",\"peer\":" + std::to_string(next) +
                    ",\"tag\":3,\"bytes\":500000,\"request\":2}\n"
                    "{\"op\":\"test\",\"fn\":\"MPI_Test\",\"request\":1}\n"
                    "{\"op\":\"waitall\",\"fn\":\"MPI_Waitall\",\"requests\":[1,2]}\n");
  }
  auto result = replay_jsonl(dir, ranks, np, 1e9, {"gridcast/test-cost:0"});
  // Every rank sends to a different host: no sharing, each transfer alone on its two links... except
  // that each host's private link carries one outgoing and one incoming flow: cluster links are shared
  // (not split-duplex), so both flows get half of it.
  REQUIRE(result.makespan_s == Approx(2 * kLat + 2 * 500000 / kBw).epsilon(1e-9));
  REQUIRE(result.messages == np);
}

TEST_CASE("replay: communicators from comm_split carry point-to-point and collectives", "[replay]")
{
  TempDir dir;
  std::vector<std::string> ranks;
  for (int r = 0; r < 4; ++r) {
    // Split into evens and odds; in each, communicator rank 0 sends to communicator rank 1. Peers are
    // world ranks (docs/reference/traces.md): world 0 sends to world 2, world 1 to world 3.
    std::string t = "{\"op\":\"comm_split\",\"fn\":\"MPI_Comm_split\",\"color\":" + std::to_string(r % 2) +
                    ",\"key\":" + std::to_string(r) + ",\"new_comm\":5}\n";
    if (r < 2)
      t += "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":" + std::to_string(r + 2) +
           ",\"tag\":0,\"bytes\":8,\"comm\":5}\n";
    else
      t += "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":" + std::to_string(r - 2) +
           ",\"tag\":0,\"bytes\":8,\"comm\":5}\n";
    t += "{\"op\":\"allreduce\",\"fn\":\"MPI_Allreduce\",\"bytes\":8,\"comm\":5}\n";
    ranks.push_back(t);
  }
  auto result = replay_jsonl(dir, ranks, 4);
  REQUIRE(result.blocked.empty());
  // Both communicators ran one allreduce each; its algorithm is recorded once per communicator.
  std::uint64_t allreduces = 0;
  for (const auto& [name, count] : result.collectives.at("allreduce"))
    allreduces += count;
  REQUIRE(allreduces == 2);
}

TEST_CASE("replay: a receive that is never matched is a deadlock report, not a crash", "[replay]")
{
  TempDir dir;
  try {
    replay_jsonl(dir,
                 {"{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":1,\"tag\":4,\"bytes\":8}\n",
                  "{\"op\":\"compute\",\"fn\":\"compute\",\"flops\":1000}\n"
                  "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":4,\"bytes\":8}\n"},
                 2);
    FAIL("expected a DeadlockError");
  } catch (const DeadlockError& e) {
    REQUIRE(e.blocked().size() == 2);
    REQUIRE(e.blocked()[0].rank == 0);
    REQUIRE(e.blocked()[0].function == "MPI_Recv");
    REQUIRE(e.blocked()[0].line == 1);
    REQUIRE(e.blocked()[0].peer == 1);
    REQUIRE(e.blocked()[0].tag == 4);
    REQUIRE(e.blocked()[1].line == 2);
    REQUIRE_THAT(e.blocked()[1].detail, Catch::Contains("never matched"));
  }
}

TEST_CASE("replay: a peer outside the communicator names the file, line and rank", "[replay]")
{
  TempDir dir;
  try {
    replay_jsonl(dir, {"{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":7,\"bytes\":8}\n",
              "{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n"},
        2);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    REQUIRE(e.context().rank == 0);
    REQUIRE(e.context().line == 2);
    REQUIRE_THAT(e.context().file, Catch::Contains("rank-00000.jsonl"));
    REQUIRE_THAT(e.reason(), Catch::Contains("is not a world rank"));
  }
}

TEST_CASE("replay: forced collective algorithms are used and reported", "[replay]")
{
  TempDir dir;
  std::vector<std::string> ranks(8, "{\"op\":\"allreduce\",\"fn\":\"MPI_Allreduce\",\"bytes\":1048576}\n"
                                    "{\"op\":\"bcast\",\"fn\":\"MPI_Bcast\",\"bytes\":64,\"root\":3}\n");
  auto ring = replay_jsonl(dir, ranks, 8, 1e9, {"gridcast/coll/allreduce:ring"});
  REQUIRE(ring.collectives.at("allreduce").count("ring") == 1);
  REQUIRE(ring.collectives.at("bcast").size() == 1);
}

namespace {
/// An allreduce, a reduce and a barrier of 8 ranks: MPICH's choices are recursive_doubling, binomial
/// and dissemination.
std::vector<std::string> small_collectives()
{
  return std::vector<std::string>(8, "{\"op\":\"allreduce\",\"fn\":\"MPI_Allreduce\",\"bytes\":8}\n"
                                     "{\"op\":\"reduce\",\"fn\":\"MPI_Reduce\",\"bytes\":8}\n"
                                     "{\"op\":\"barrier\",\"fn\":\"MPI_Barrier\"}\n");
}
}  // namespace

// One replay per TEST_CASE: SimGrid 3.32 keeps one engine per process.
TEST_CASE("replay: the smpi collective selector chooses SMPI's default algorithms", "[replay]")
{
  TempDir dir;
  auto smpi = replay_jsonl(dir, small_collectives(), 8, 1e9, {"gridcast/coll-selector:smpi"});
  REQUIRE(smpi.collectives.at("allreduce").count("linear_reduce_bcast") == 1);
  REQUIRE(smpi.collectives.at("reduce").count("linear") == 1);
  REQUIRE(smpi.collectives.at("barrier").count("linear") == 1);
}

TEST_CASE("replay: under the smpi selector a nonblocking bcast and alltoall are SMPI's flat ones", "[replay]")
{
  // SMPI 3.32 runs MPI_Ibcast/MPI_Ialltoall with smpi_nbc_impl.cpp's flat algorithms (every message
  // posted at once), not with the binomial bcast / size-selected alltoall of its blocking selector.
  TempDir dir;
  std::vector<std::string> ranks(8, "{\"op\":\"bcast\",\"fn\":\"MPI_Ibcast\",\"bytes\":64,\"root\":0,\"request\":1}\n"
                                    "{\"op\":\"wait\",\"fn\":\"MPI_Wait\",\"request\":1}\n"
                                    "{\"op\":\"alltoall\",\"fn\":\"MPI_Ialltoall\",\"bytes\":64,\"request\":2}\n"
                                    "{\"op\":\"wait\",\"fn\":\"MPI_Wait\",\"request\":2}\n"
                                    "{\"op\":\"bcast\",\"fn\":\"MPI_Bcast\",\"bytes\":64,\"root\":0}\n");
  auto smpi = replay_jsonl(dir, ranks, 8, 1e9, {"gridcast/coll-selector:smpi"});
  REQUIRE(smpi.collectives.at("bcast").count("linear") == 1);    // the Ibcast
  REQUIRE(smpi.collectives.at("bcast").count("binomial") == 1);  // the blocking Bcast
  REQUIRE(smpi.collectives.at("alltoall").count("basic_linear") == 1);
}

TEST_CASE("replay: a forced algorithm wins over the collective selector", "[replay]")
{
  TempDir dir;
  auto forced = replay_jsonl(dir, small_collectives(), 8, 1e9, {"gridcast/coll-selector:smpi", "gridcast/coll/allreduce:ring"});
  REQUIRE(forced.collectives.at("allreduce").count("ring") == 1);
  REQUIRE(forced.collectives.at("reduce").count("linear") == 1);
  REQUIRE(forced.collectives.at("barrier").count("linear") == 1);
}

TEST_CASE("replay: an unknown collective selector is an input error naming the key", "[replay]")
{
  ReplayOptions opts;
  REQUIRE_THROWS_AS(apply_cfg(opts, "gridcast/coll-selector:ompi"), InputError);
  REQUIRE_THROWS_WITH(apply_cfg(opts, "gridcast/coll-selector:ompi"),
                      Catch::Contains("gridcast/coll-selector") && Catch::Contains("known: auto, mpich, smpi"));
  apply_cfg(opts, "gridcast/coll-selector:smpi");
  REQUIRE(opts.coll_selector == CollectiveSelector::Smpi);
  apply_cfg(opts, "gridcast/coll-selector:mpich");
  REQUIRE(opts.coll_selector == CollectiveSelector::Mpich);
}

TEST_CASE("replay: the default selector follows the library that recorded the run, and says why", "[replay]")
{
  auto resolved = [](const SelectorEvidence& e, const std::string& cfg = {}) {
    ReplayOptions opts;
    if (not cfg.empty())
      apply_cfg(opts, cfg);
    resolve_coll_selector(opts, e);
    return opts;
  };
  SelectorEvidence tit;
  tit.smpi_trace = true;
  CHECK(resolved(tit).coll_selector == CollectiveSelector::Smpi);
  SelectorEvidence imported;
  imported.mpi_library = "SMPI";
  CHECK(resolved(imported).coll_selector == CollectiveSelector::Smpi);

  SelectorEvidence ompi;
  ompi.mpi_library = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
  ReplayOptions o = resolved(ompi);
  CHECK(o.coll_selector == CollectiveSelector::OpenMpi41);
  CHECK_THAT(o.coll_selector_why, Catch::Contains("Open MPI v4.1.4") && not Catch::Contains("nearest"));
  ompi.mpi_library = "Open MPI v5.0.3, package: Open MPI";
  o = resolved(ompi);
  CHECK(o.coll_selector == CollectiveSelector::OpenMpi41);
  CHECK_THAT(o.coll_selector_why, Catch::Contains("nearest"));

  SelectorEvidence mpich;
  mpich.mpi_library = "MPICH Version:\t4.0.2";
  CHECK(resolved(mpich).coll_selector == CollectiveSelector::Mpich);
  SelectorEvidence other;
  other.mpi_library = "Intel(R) MPI Library 2021.6";
  o = resolved(other);
  CHECK(o.coll_selector == CollectiveSelector::Mpich);
  CHECK_THAT(o.coll_selector_why, Catch::Contains("does not have") && Catch::Contains("Intel(R) MPI"));
  o = resolved(SelectorEvidence{});
  CHECK(o.coll_selector == CollectiveSelector::Mpich);
  CHECK_THAT(o.coll_selector_why, Catch::Contains("does not name its MPI library"));

  SelectorEvidence mixed = ompi;
  mixed.conflict = "the training profiles a and b were recorded with different MPI libraries";
  o = resolved(mixed);
  CHECK(o.coll_selector == CollectiveSelector::Mpich);
  CHECK_THAT(o.coll_selector_why, Catch::Contains("a and b"));

  // A selector named by --cfg wins over what the input says.
  o = resolved(tit, "gridcast/coll-selector:openmpi-4.1");
  CHECK(o.coll_selector == CollectiveSelector::OpenMpi41);
  CHECK(o.coll_selector_why == "--cfg gridcast/coll-selector:openmpi-4.1");
}

TEST_CASE("replay: empty messages into one host overlap (a flat barrier takes two latencies)", "[replay]")
{
  // Rank 0 receives 7 empty messages at once, then sends 7. SimGrid 3.32 serializes zero-size comms
  // that share a cluster link (7 route latencies for the fan-in); gridcast sends them as 1 byte.
  TempDir dir;
  auto result = replay_jsonl(dir, std::vector<std::string>(8, "{\"op\":\"barrier\",\"fn\":\"MPI_Barrier\"}\n"), 8, 1e9,
                    {"gridcast/coll/barrier:linear"});
  REQUIRE(result.collectives.at("barrier").count("linear") == 1);
  // Fan-in then fan-out, each one route latency (plus 7 bytes on rank 0's link: 7 ns).
  REQUIRE(result.makespan_s == Approx(2 * transfer(0)).margin(2 * 7 / kBw));
}
