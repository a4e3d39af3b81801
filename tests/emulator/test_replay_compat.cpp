// What the replay does with the records the profiler writes from real applications (docs/reference/traces.md,
// "Additions of the profiler"): world-rank peers on split communicators, probes, the test family over
// several requests, nonblocking collectives, cancelled and freed requests, MPI_COMM_SELF, NCCL
// communicators, requests left pending at finalize. CM02 and the tiny cluster of test_replay.cpp: one
// lone flow between two nodes takes exactly 2 * 10 us + bytes / 1 GBps. SimGrid allows one engine per
// process, and Catch2 runs every section of a test case in the same process: one replay per test case.
#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include "replay_support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace gridcast;
using namespace gridcast::emulator;
using namespace gridcast::test;

namespace {

/// Replays `ranks`, one per node (see replay_support.hpp).
ReplayResult run(const TempDir& dir, const std::vector<std::string>& ranks, const std::vector<std::string>& cfg = {})
{
  return test::replay_jsonl(dir, ranks, static_cast<int>(ranks.size()), 1e9, cfg);
}

/// The message of the InputError the replay of `ranks` throws ("" when it throws none).
std::string input_error(const std::vector<std::string>& ranks)
{
  TempDir dir;
  try {
    run(dir, ranks);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string compute(double flops) { return R"({"op":"compute","fn":"compute","flops":)" + std::to_string(flops) + "}\n"; }

}  // namespace

namespace {

/// Split with key -r: the even communicator is {2, 0} (world 2 is its rank 0), the odd one {3, 1}.
std::string split_record(int r)
{
  return R"({"op":"comm_split","fn":"MPI_Comm_split","color":)" + std::to_string(r % 2) + R"(,"key":)" +
         std::to_string(-r) + R"(,"new_comm":3})" + "\n";
}

}  // namespace

TEST_CASE("replay compat: peers on a split communicator are world ranks", "[replay][compat]")
{
  // World 0 sends 1 MB to world 2 and world 1 sends 2 MB to world 3 on the new communicators. Read as
  // communicator ranks, peers 2 and 3 would be outside these 2-rank communicators.
  std::vector<std::string> ranks;
  for (int r = 0; r < 4; ++r) {
    std::string t = split_record(r);
    if (r < 2)
      t += R"({"op":"send","fn":"MPI_Send","peer":)" + std::to_string(r + 2) + R"(,"tag":1,"bytes":)" +
           std::to_string((r + 1) * 1000000) + R"(,"comm":3})" "\n";
    else
      t += R"({"op":"recv","fn":"MPI_Recv","peer":)" + std::to_string(r - 2) + R"(,"tag":1,"bytes":)" +
           std::to_string((r - 1) * 1000000) + R"(,"comm":3})" "\n";
    ranks.push_back(t);
  }
  TempDir dir;
  auto result = run(dir, ranks);
  REQUIRE(result.blocked.empty());
  // Rendezvous sends: sender and receiver of one message finish together, 0 with 2 and 1 with 3.
  REQUIRE(result.ranks[0].finish_s == Approx(result.ranks[2].finish_s).epsilon(1e-12));
  REQUIRE(result.ranks[1].finish_s == Approx(result.ranks[3].finish_s).epsilon(1e-12));
  // The flows use disjoint links; the 2 MB one lasts 1 ms longer (the split ends within microseconds).
  REQUIRE(result.ranks[1].finish_s - result.ranks[0].finish_s == Approx(1e-3).margin(5e-5));
}

TEST_CASE("replay compat: a peer that is not a member of the communicator is bad input", "[replay][compat]")
{
  std::vector<std::string> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.push_back(split_record(r));
  ranks[0] += R"({"op":"send","fn":"MPI_Send","peer":1,"tag":1,"bytes":8,"comm":3})" "\n";
  std::string msg = input_error(ranks);
  REQUIRE_THAT(msg, Catch::Contains("rank-00000.jsonl:2") && Catch::Contains("rank 0") &&
                        Catch::Contains("peer 1 is not a member of communicator 3"));
}

TEST_CASE("replay compat: MPI_Probe blocks until the message is sent", "[replay][compat]")
{
  TempDir dir;
  // Rank 0 computes 1 ms, then sends 1000 bytes (eager). Rank 1 probes for any source, then receives:
  // the probe returns at 1 ms, the receive is posted then and the transfer starts.
  auto result = run(dir, {compute(1e6) + R"({"op":"send","fn":"MPI_Send","peer":1,"tag":5,"bytes":1000})" "\n",
                          R"({"op":"probe","fn":"MPI_Probe","peer":"any","tag":5})" "\n"
                          R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":5,"bytes":1000})" "\n"});
  REQUIRE(result.functions.at("MPI_Probe").seconds == Approx(1e-3).epsilon(1e-9));
  REQUIRE(result.makespan_s == Approx(1e-3 + transfer(1000)).epsilon(1e-9));
  REQUIRE(result.ranks[1].wait_s >= 1e-3 * (1 - 1e-9));
}

TEST_CASE("replay compat: a probe for a message nobody sends is a deadlock report", "[replay][compat]")
{
  TempDir dir;
  try {
    run(dir, {compute(1000), R"({"op":"probe","fn":"MPI_Probe","peer":0,"tag":8})" "\n"});
    FAIL("no deadlock reported");
  } catch (const DeadlockError& e) {
    REQUIRE(e.blocked().size() == 1);
    REQUIRE(e.blocked()[0].rank == 1);
    REQUIRE(e.blocked()[0].function == "MPI_Probe");
    REQUIRE_THAT(e.blocked()[0].detail, Catch::Contains("probe for a message from rank 0 tag 8"));
  }
}

TEST_CASE("replay compat: MPI_Iprobe polls cost their recorded seconds", "[replay][compat]")
{
  TempDir dir;
  // Rank 0 sends at 1 ms. Rank 1 polls three times, 0.4 ms each: at 0, 0.4 and 0.8 ms nothing has
  // arrived; it receives at 1.2 ms.
  std::string poll = R"({"op":"probe","fn":"MPI_Iprobe","seconds":0.0004,"peer":0,"tag":5})" "\n";
  auto result = run(dir, {compute(1e6) + R"({"op":"send","fn":"MPI_Send","peer":1,"tag":5,"bytes":1000})" "\n",
                          poll + poll + poll + R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":5,"bytes":1000})" "\n"});
  REQUIRE(result.functions.at("MPI_Iprobe").calls == 3);
  REQUIRE(result.functions.at("MPI_Iprobe").seconds == Approx(1.2e-3).epsilon(1e-9));
  REQUIRE(result.makespan_s == Approx(1.2e-3 + transfer(1000)).epsilon(1e-9));
}

TEST_CASE("replay compat: MPI_Iprobe of unknown duration costs like SMPI's, growing while it fails", "[replay][compat]")
{
  TempDir dir;
  // Rank 0 sends at 1.05 ms. Polls start at 0, 0.1, 0.3, 0.6, 1.0 ms (failures cost 0.1, 0.2, 0.3, 0.4,
  // 0.5 ms) and find the message at 1.5 ms, at no cost; a later failing poll starts over at 0.1 ms.
  std::string poll = R"({"op":"probe","fn":"MPI_Iprobe","peer":0,"tag":5})" "\n";
  std::string other = R"({"op":"probe","fn":"MPI_Iprobe","peer":0,"tag":6})" "\n";
  std::string rank1;
  for (int i = 0; i < 6; ++i)
    rank1 += poll;
  rank1 += other + R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":5,"bytes":1000})" "\n";
  auto result = run(dir, {compute(1.05e6) + R"({"op":"send","fn":"MPI_Send","peer":1,"tag":5,"bytes":1000})" "\n", rank1},
                    {"gridcast/iprobe-cost:1e-4"});
  REQUIRE(result.functions.at("MPI_Iprobe").seconds == Approx(1.6e-3).epsilon(1e-9));
  REQUIRE(result.makespan_s == Approx(1.6e-3 + transfer(1000)).epsilon(1e-9));
}

TEST_CASE("replay compat: MPI_Testall, MPI_Testany and MPI_Testsome over several requests", "[replay][compat]")
{
  TempDir dir;
  // Rank 1 receives from rank 0 (sent at 0, arrived at 21 us) and rank 2 (sent at 5 ms). At 1 ms:
  // - Testall [1,2] fails (2 pending): nothing completes, it costs 0.1 ms (first failure);
  // - Testany [1,2] completes 1: no cost, the failure count starts over;
  // - Testany [1,2] fails (1 is null now, 2 pending): 0.1 ms;
  // - Testall [1,2] fails: 0.2 ms (second consecutive failure);
  // - Testsome [1,2] fails: 0.3 ms.
  // Had the first Testall completed request 1, the first Testany would have failed too.
  std::string rank1 = R"({"op":"irecv","fn":"MPI_Irecv","peer":0,"tag":1,"bytes":1000,"request":1})" "\n"
                      R"({"op":"irecv","fn":"MPI_Irecv","peer":2,"tag":2,"bytes":1000,"request":2})" "\n" +
                      compute(1e6) +
                      R"({"op":"test","fn":"MPI_Testall","requests":[1,2]})" "\n"
                      R"({"op":"test","fn":"MPI_Testany","requests":[1,2]})" "\n"
                      R"({"op":"test","fn":"MPI_Testany","requests":[1,2]})" "\n"
                      R"({"op":"test","fn":"MPI_Testall","requests":[1,2]})" "\n"
                      R"({"op":"test","fn":"MPI_Testsome","requests":[1,2]})" "\n"
                      R"({"op":"waitall","fn":"MPI_Waitall","requests":[1,2]})" "\n";
  auto result = run(dir, {R"({"op":"send","fn":"MPI_Send","peer":1,"tag":1,"bytes":1000})" "\n", rank1,
                          compute(5e6) + R"({"op":"send","fn":"MPI_Send","peer":1,"tag":2,"bytes":1000})" "\n"});
  REQUIRE(result.functions.at("MPI_Testall").seconds == Approx(0.3e-3).epsilon(1e-9));
  REQUIRE(result.functions.at("MPI_Testany").seconds == Approx(0.1e-3).epsilon(1e-9));
  REQUIRE(result.functions.at("MPI_Testsome").seconds == Approx(0.3e-3).epsilon(1e-9));
  REQUIRE(result.makespan_s == Approx(5e-3 + transfer(1000)).epsilon(1e-9));
}

TEST_CASE("replay compat: a nonblocking collective runs while the rank computes", "[replay][compat]")
{
  TempDir dir;
  // Two ranks, an allreduce of 1 MB by recursive doubling: both send 1 MB to each other at once, each
  // host link carries two flows (2 * 10 us + 2 MB / 1 GBps = 2.02 ms). It overlaps the 1 ms of compute
  // that follows; the wait returns when it ends. A blocking allreduce in between keeps its own messages.
  std::vector<std::string> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(R"({"op":"allreduce","fn":"MPI_Iallreduce","bytes":1000000,"request":7})" "\n"
                    R"({"op":"test","fn":"MPI_Test","seconds":0,"request":7})" "\n" +
                    compute(1e6) + R"({"op":"wait","fn":"MPI_Wait","request":7})" "\n");
  auto result = run(dir, ranks, {"gridcast/coll/allreduce:recursive_doubling"});
  REQUIRE(result.blocked.empty());
  REQUIRE(result.makespan_s == Approx(2 * kLat + 2e6 / kBw).epsilon(1e-9));
  REQUIRE(result.functions.at("MPI_Wait").seconds == Approx(2 * (2 * kLat + 2e6 / kBw - 1e-3)).epsilon(1e-9));
  REQUIRE(result.collectives.at("allreduce").at("recursive_doubling") == 1);
}

TEST_CASE("replay compat: nonblocking and blocking collectives in flight together keep their messages apart",
          "[replay][compat]")
{
  TempDir dir2;
  std::vector<std::string> mixed;
  for (int r = 0; r < 2; ++r)
    mixed.push_back(R"({"op":"allreduce","fn":"MPI_Iallreduce","bytes":1000000,"request":7})" "\n"
                    R"({"op":"allreduce","fn":"MPI_Allreduce","bytes":1000000})" "\n"
                    R"({"op":"allreduce","fn":"MPI_Iallreduce","bytes":1000000,"request":8})" "\n"
                    R"({"op":"waitall","fn":"MPI_Waitall","requests":[8,7]})" "\n");
  auto three = run(dir2, mixed, {"gridcast/coll/allreduce:recursive_doubling"});
  REQUIRE(three.blocked.empty());
  REQUIRE(three.messages == 6);
  REQUIRE(three.collectives.at("allreduce").at("recursive_doubling") == 3);
}

TEST_CASE("replay compat: a receive cancelled before it matched: the wait returns at once", "[replay][compat]")
{
  {
    TempDir dir;
    auto result = run(dir, {R"({"op":"irecv","fn":"MPI_Irecv","peer":1,"tag":9,"bytes":8,"request":3})" "\n"
                            R"({"op":"comm_size","fn":"MPI_Cancel","request":3})" "\n"
                            R"({"op":"wait","fn":"MPI_Wait","request":3})" "\n",
                            compute(2e6)});
    REQUIRE(result.blocked.empty());
    REQUIRE(result.ranks[0].finish_s == 0);
    REQUIRE(result.makespan_s == Approx(2e-3).epsilon(1e-9));
    REQUIRE(result.messages == 0);
  }
}

TEST_CASE("replay compat: a receive matched before the cancel completes normally", "[replay][compat]")
{
  {
    TempDir dir;
    auto result = run(dir, {compute(1e6) + R"({"op":"irecv","fn":"MPI_Irecv","peer":1,"tag":9,"bytes":1000,"request":3})" "\n"
                                           R"({"op":"comm_size","fn":"MPI_Cancel","request":3})" "\n"
                                           R"({"op":"wait","fn":"MPI_Wait","request":3})" "\n",
                            R"({"op":"send","fn":"MPI_Send","peer":0,"tag":9,"bytes":1000})" "\n"});
    REQUIRE(result.messages == 1);
    REQUIRE(result.makespan_s == Approx(1e-3 + transfer(1000)).epsilon(1e-9));
  }
}

TEST_CASE("replay compat: a freed rendezvous send still goes, the rank waits for it at finalize", "[replay][compat]")
{
  {
    TempDir dir;
    auto result = run(dir, {R"({"op":"isend","fn":"MPI_Isend","peer":1,"tag":9,"bytes":1000000,"request":4})" "\n"
                            R"({"op":"comm_size","fn":"MPI_Request_free","request":4})" "\n" +
                                compute(1e5) + R"({"op":"finalize","fn":"MPI_Finalize"})" "\n",
                            R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":9,"bytes":1000000})" "\n"});
    REQUIRE(result.ranks[0].finish_s == Approx(transfer(1e6)).epsilon(1e-9));
    REQUIRE(result.functions.at("MPI_Finalize").seconds == Approx(transfer(1e6) - 1e-4).epsilon(1e-9));
  }
}

TEST_CASE("replay compat: a cancel of a request nobody created is bad input", "[replay][compat]")
{
  {
    std::string msg = input_error({R"({"op":"comm_size","fn":"MPI_Cancel","request":5})" "\n"});
    REQUIRE_THAT(msg, Catch::Contains("rank-00000.jsonl:1") && Catch::Contains("MPI_Cancel of request handle 5"));
  }
}

TEST_CASE("replay compat: a request a test completed too early in the simulation is waited for at finalize",
          "[replay][compat]")
{
  TempDir dir;
  // In the recording the test completed request 1; in the simulation the message is sent at 2 ms, after
  // the test. MPI_Finalize completes it, so the rank ends when the message has arrived.
  auto result = run(dir, {R"({"op":"irecv","fn":"MPI_Irecv","peer":1,"tag":1,"bytes":1000,"request":1})" "\n"
                          R"({"op":"test","fn":"MPI_Test","seconds":0.00001,"request":1})" "\n"
                          R"({"op":"finalize","fn":"MPI_Finalize"})" "\n",
                          compute(2e6) + R"({"op":"send","fn":"MPI_Send","peer":0,"tag":1,"bytes":1000})" "\n"});
  REQUIRE(result.ranks[0].finish_s == Approx(2e-3 + transfer(1000)).epsilon(1e-9));
  REQUIRE(result.functions.at("MPI_Test").seconds == Approx(1e-5).epsilon(1e-9));
}

TEST_CASE("replay compat: waiting twice on one request is a no-op the second time", "[replay][compat]")
{
  TempDir dir;
  // Open MPI profiles can name one request twice in a waitall (two requests shared a handle).
  auto result = run(dir, {R"({"op":"isend","fn":"MPI_Isend","peer":1,"tag":1,"bytes":8,"request":1})" "\n"
                          R"({"op":"isend","fn":"MPI_Isend","peer":1,"tag":2,"bytes":8,"request":2})" "\n"
                          R"({"op":"waitall","fn":"MPI_Waitall","requests":[2,2]})" "\n",
                          R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":1,"bytes":8})" "\n"
                          R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":2,"bytes":8})" "\n"});
  REQUIRE(result.blocked.empty());
  REQUIRE(result.messages == 2);
}

TEST_CASE("replay compat: a communicator used without a creation is MPI_COMM_SELF", "[replay][compat]")
{
  TempDir dir;
  auto result = run(dir, {R"({"op":"barrier","fn":"MPI_Barrier","comm":16})" "\n"
                          R"({"op":"allreduce","fn":"MPI_Allreduce","bytes":8,"comm":16})" "\n",
                          compute(1e3)});
  REQUIRE(result.blocked.empty());
  REQUIRE(result.messages == 0);
}

TEST_CASE("replay compat: MPI_COMM_SELF has one member", "[replay][compat]")
{
  std::string msg = input_error({R"({"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":8,"comm":16})" "\n",
                                 compute(1e3)});
  REQUIRE_THAT(msg, Catch::Contains("peer 1 is not a member of communicator 16 (1 ranks)"));
}

TEST_CASE("replay compat: an NCCL communicator from ncclCommInitRank is a communicator of its own", "[replay][compat]")
{
  // Host buffers here: the GPU emulation (tests/emulator/test_gpu.cpp) covers device buffers; this checks the handle.
  TempDir dir;
  auto result = run(dir, {R"({"op":"comm_dup","fn":"ncclCommInitRank","new_comm":65536})" "\n"
                          R"({"op":"allreduce","fn":"ncclAllReduce","bytes":8,"comm":65536})" "\n",
                          R"({"op":"comm_dup","fn":"ncclCommInitRank","new_comm":65536})" "\n"
                          R"({"op":"allreduce","fn":"ncclAllReduce","bytes":8,"comm":65536})" "\n"});
  REQUIRE(result.blocked.empty());
  REQUIRE(result.messages > 0);
}

TEST_CASE("replay compat: a collective on an NCCL communicator never created is a clear error", "[replay][compat]")
{
  std::string msg = input_error({R"({"op":"allreduce","fn":"ncclAllReduce","bytes":8,"comm":65537})" "\n"});
  REQUIRE_THAT(msg, Catch::Contains("communicator handle 65537 was never created by this rank"));
}

TEST_CASE("replay compat: the HPL and LAMMPS example profiles replay to completion, deterministically",
          "[replay][compat][examples]")
{
  TempDir dir;
  std::string source = GRIDCAST_SOURCE_DIR;
  for (const char* example : {"hpl-hpcc", "lammps-lj"}) {
    std::string cmd = "mkdir -p '" + (dir / example).string() + "' && tar -xJf '" + source + "/examples/" + example +
                      "/profiles.tar.xz' -C '" + (dir / example).string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  std::string platform = source + "/platforms/this-machine/platform.xml";
  for (const char* profile : {"hpl-hpcc/profiles/np2-n80", "hpl-hpcc/profiles/np1-n32", "lammps-lj/profiles/np2-atoms4000"}) {
    INFO(profile);
    std::string out1 = (dir / (std::string(profile) + "-out1")).string();
    std::string out2 = (dir / (std::string(profile) + "-out2")).string();
    // Without the timeline: what this checks is prediction.json (timeline.json's bytes are checked on smaller
    // runs), and writing a call-by-call timeline of HPL is most of this test's time under the sanitizers.
    std::string args = "replay '" + (dir / profile).string() + "' --platform '" + platform +
                       "' --ranks-per-host 2 --no-timeline --out ";
    auto first = test::run_gridcast(args + "'" + out1 + "'");
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
    REQUIRE_THAT(first.output, Catch::Contains("makespan: "));
    auto second = test::run_gridcast(args + "'" + out2 + "'");
    REQUIRE(second.exit_code == 0);
    REQUIRE(test::read_file(out1 + "/prediction.json") == test::read_file(out2 + "/prediction.json"));
  }
}

TEST_CASE("replay compat: an SMPI trace of point-to-point on a split communicator agrees with smpirun -replay",
          "[replay][compat][smpi]")
{
  // tests/emulator/data/tit-split-p2p/README.md: SMPI writes world-rank partners; `smpirun -replay`
  // simulated 0.00163945 s on this platform. gridcast matches SMPI within 0.02% on point-to-point traces.
  std::string source = GRIDCAST_SOURCE_DIR;
  auto r = test::run_gridcast("replay '" + source + "/tests/emulator/data/tit-split-p2p/tr.txt' --platform '" + source +
                              "/examples/ring-halo/platform.xml' --hostfile '" + source +
                              "/examples/ring-halo/hostfile' --no-timeline --cfg network/model:SMPI");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto at = r.output.find("makespan: ");
  REQUIRE(at != std::string::npos);
  double makespan = std::stod(r.output.substr(at + 10));
  REQUIRE(makespan == Approx(0.00163945).epsilon(0.01));
}

TEST_CASE("replay compat: MPI_Comm_idup is nonblocking: the rank computes while the duplicate is made",
          "[replay][compat]")
{
  TempDir dir;
  // Rank 0 starts the duplication at 0 and computes 1 ms; rank 1 computes 2 ms first. The creation's
  // 8-byte exchange (an allgather of two) moves when rank 1 joins at 2 ms: an unexpected message moves
  // once its receive is posted, so the two 8-byte messages cross then, sharing each host's link:
  // 2 ms + 2 * 10 us + 16 B / 1 GBps. Rank 0's compute overlaps it, so rank 0 finishes then; a blocking
  // dup would hold rank 0 until then and finish its compute 1 ms later (3.02 ms).
  std::vector<std::string> ranks = {
      R"({"op":"comm_dup","fn":"MPI_Comm_idup","new_comm":3,"request":5})" "\n" + compute(1e6) +
          R"({"op":"wait","fn":"MPI_Wait","request":5})" "\n",
      compute(2e6) + R"({"op":"comm_dup","fn":"MPI_Comm_idup","new_comm":3,"request":5})" "\n"
                     R"({"op":"wait","fn":"MPI_Wait","request":5})" "\n"};
  auto result = run(dir, ranks);
  REQUIRE(result.blocked.empty());
  REQUIRE(result.ranks[0].finish_s == Approx(2e-3 + 2 * kLat + 16 / kBw).epsilon(1e-9));
  REQUIRE(result.ranks[0].finish_s < 2.5e-3);  // blocking: 3e-3 + 2 * kLat + 16 / kBw
}

TEST_CASE("replay compat: a communicator from MPI_Comm_idup carries calls once its wait completed",
          "[replay][compat]")
{
  TempDir dir;
  std::vector<std::string> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(R"({"op":"comm_dup","fn":"MPI_Comm_idup","new_comm":3,"request":5})" "\n"
                    R"({"op":"wait","fn":"MPI_Wait","request":5})" "\n" +
                    std::string(r == 0 ? R"({"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":8,"comm":3})"
                                       : R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":0,"bytes":8,"comm":3})") +
                    "\n");
  auto result = run(dir, ranks);
  REQUIRE(result.blocked.empty());
  REQUIRE(result.messages == 3);  // 2 of the creation's exchange, 1 on the duplicate
}

TEST_CASE("replay compat: a communicator from MPI_Comm_idup used before its wait names the line and rank",
          "[replay][compat]")
{
  std::string message = input_error(
      {R"({"op":"comm_dup","fn":"MPI_Comm_idup","new_comm":3,"request":5})" "\n"
       R"({"op":"barrier","fn":"MPI_Barrier","comm":3})" "\n"
       R"({"op":"wait","fn":"MPI_Wait","request":5})" "\n",
       R"({"op":"comm_dup","fn":"MPI_Comm_idup","new_comm":3,"request":5})" "\n"
       R"({"op":"wait","fn":"MPI_Wait","request":5})" "\n"});
  REQUIRE_THAT(message, Catch::Contains("rank-00000.jsonl:2"));
  REQUIRE_THAT(message, Catch::Contains("rank 0"));
  REQUIRE_THAT(message, Catch::Contains("from MPI_Comm_idup is used before its request 5 completed"));
}

TEST_CASE("replay compat: MPI_Comm_spawn stops the replay, naming the file, line and rank", "[replay][compat]")
{
  std::string message = input_error(
      {R"({"op":"init","fn":"MPI_Init"})" "\n",
       R"({"op":"init","fn":"MPI_Init"})" "\n"
       R"({"op":"dynamic_process","fn":"MPI_Comm_spawn","root":0,"color":2,"new_comm":3})" "\n"});
  REQUIRE_THAT(message, Catch::Contains("rank-00001.jsonl:2"));
  REQUIRE_THAT(message, Catch::Contains("rank 1"));
  REQUIRE_THAT(message, Catch::Contains("dynamic process management (MPI_Comm_spawn) cannot be replayed: the "
                                        "spawned processes are not in the profile"));
}

TEST_CASE("replay compat: MPI_Comm_accept stops the replay: the processes it connects to are not in the profile",
          "[replay][compat]")
{
  std::string accept = input_error(
      {R"({"op":"dynamic_process","fn":"MPI_Comm_accept","new_comm":3})" "\n"});
  REQUIRE_THAT(accept, Catch::Contains("(MPI_Comm_accept) cannot be replayed: the processes it connects to"));
}
