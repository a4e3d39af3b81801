// Wait states (--analysis waits) on hand-built traces whose waits are known exactly: a late sender of 3 ms,
// a late receiver of a rendezvous send, a barrier after one slow rank, a broadcast whose root is late, a
// reduce whose root is early, and a waitall on two receives whose senders come at 1 and 3 ms. Compute is
// recorded in seconds on a 1 Gf/s host and replayed on 1 Gf/s hosts: each compute record takes its time.
#include "gridcast/emulator/replay.hpp"
#include "gridcast/emulator/report.hpp"
#include "gridcast/emulator/wait_states.hpp"

#include "replay_support.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace gridcast;
using namespace gridcast::emulator;
using namespace gridcast::test;

namespace {

std::string compute_s(double seconds)
{
  std::ostringstream o;
  o << R"({"op":"compute","fn":"compute","seconds":)" << seconds << "}\n";
  return o.str();
}

/// The seconds of `kind` waited by `rank` in `function` (0 if none).
double waited(const WaitStateReport& w, int rank, const std::string& function, WaitKind kind)
{
  for (const WaitEntry& e : w.entries)
    if (e.rank == rank && e.function == function && e.kind == kind)
      return e.total.seconds;
  return 0;
}

double kind_total(const WaitStateReport& w, WaitKind kind)
{
  auto it = w.by_kind.find(kind);
  return it == w.by_kind.end() ? 0.0 : it->second.seconds;
}

}  // namespace

TEST_CASE("wait states: a receive posted 3 ms before its send waits 3 ms as a late sender", "[wait_states]")
{
  TempDir dir;
  auto result = replay_jsonl(dir,
                             {compute_s(0.003) + R"({"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":8})" "\n",
                              R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":0,"bytes":8})" "\n"},
                             2, 1e9, {}, true);
  REQUIRE(result.wait_states);
  const WaitStateReport& w = *result.wait_states;
  CHECK(waited(w, 1, "MPI_Recv", WaitKind::LateSender) == Approx(0.003).epsilon(1e-9));
  CHECK(w.total_s == Approx(0.003).epsilon(1e-9));  // the send (eager) waits for nothing
  REQUIRE(w.entries.size() == 1);
  CHECK(w.entries[0].total.calls == 1);
  CHECK(w.by_rank[1].seconds == Approx(0.003).epsilon(1e-9));
  CHECK(w.by_rank[0].seconds == 0);
}

// One replay per TEST_CASE: SimGrid 3.32 keeps one engine per process (a second one crashes under ASan).
TEST_CASE("wait states: without the option nothing is classified", "[wait_states]")
{
  TempDir dir;
  CHECK_FALSE(replay_jsonl(dir, {compute_s(0.003) + R"({"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":8})" "\n",
                                 R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":0,"bytes":8})" "\n"},
                           2)
                  .wait_states);
}

TEST_CASE("wait states: a rendezvous send posted 2 ms before its receive waits 2 ms as a late receiver",
          "[wait_states]")
{
  TempDir dir;
  // 1 MB is above the 64 KiB eager threshold: the send cannot finish before the receive is posted.
  auto result = replay_jsonl(dir,
                             {R"({"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":1000000})" "\n",
                              compute_s(0.002) + R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":0,"bytes":1000000})" "\n"},
                             2, 1e9, {}, true);
  REQUIRE(result.wait_states);
  const WaitStateReport& w = *result.wait_states;
  CHECK(waited(w, 0, "MPI_Send", WaitKind::LateReceiver) == Approx(0.002).epsilon(1e-9));
  CHECK(w.total_s == Approx(0.002).epsilon(1e-9));  // the receive came after its send: no wait
}

TEST_CASE("wait states: a barrier after one slow rank is the slow rank's lead on every other", "[wait_states]")
{
  TempDir dir;
  std::vector<std::string> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.push_back(compute_s(r == 2 ? 0.005 : 0.001) + R"({"op":"barrier","fn":"MPI_Barrier"})" "\n");
  auto result = replay_jsonl(dir, ranks, 4, 1e9, {}, true);
  REQUIRE(result.wait_states);
  const WaitStateReport& w = *result.wait_states;
  for (int r : {0, 1, 3})
    CHECK(waited(w, r, "MPI_Barrier", WaitKind::WaitAtBarrier) == Approx(0.004).epsilon(1e-9));
  CHECK(waited(w, 2, "MPI_Barrier", WaitKind::WaitAtBarrier) == 0);
  CHECK(kind_total(w, WaitKind::WaitAtBarrier) == Approx(0.012).epsilon(1e-9));
  CHECK(w.by_kind.at(WaitKind::WaitAtBarrier).calls == 3);
  CHECK(w.total_s == Approx(0.012).epsilon(1e-9));
  // The longest first, ties in rank order.
  REQUIRE(w.entries.size() == 3);
  CHECK(w.entries[0].rank == 0);
  CHECK(w.entries[2].rank == 3);
  CHECK(w.rank_time_s >= 4 * 0.005);
}

TEST_CASE("wait states: a late broadcast root and an early reduce root", "[wait_states]")
{
  TempDir dir;
  std::vector<std::string> ranks;
  // bcast from rank 1, which computes 2 ms first; then a reduce to rank 0, which enters at once while
  // the others compute 1 ms.
  for (int r = 0; r < 3; ++r)
    ranks.push_back((r == 1 ? compute_s(0.002) : std::string()) +
                    R"({"op":"bcast","fn":"MPI_Bcast","bytes":8,"root":1})" "\n" +
                    (r == 0 ? std::string() : compute_s(0.001)) +
                    R"({"op":"reduce","fn":"MPI_Reduce","bytes":8,"root":0})" "\n");
  auto result = replay_jsonl(dir, ranks, 3, 1e9, {}, true);
  REQUIRE(result.wait_states);
  const WaitStateReport& w = *result.wait_states;
  CHECK(waited(w, 0, "MPI_Bcast", WaitKind::LateBroadcast) == Approx(0.002).epsilon(1e-9));
  CHECK(waited(w, 2, "MPI_Bcast", WaitKind::LateBroadcast) == Approx(0.002).epsilon(1e-9));
  CHECK(waited(w, 1, "MPI_Bcast", WaitKind::LateBroadcast) == 0);
  // Each rank leaves the bcast when the root's data reaches it (tens of microseconds apart, down the tree);
  // the non-roots then compute 1 ms: the root of the reduce waits until the first of them enters.
  const double early = waited(w, 0, "MPI_Reduce", WaitKind::EarlyReduce);
  CHECK(early == Approx(0.001).margin(1e-4));
  CHECK(kind_total(w, WaitKind::EarlyReduce) == Approx(early).epsilon(1e-12));  // only the root waits
}

TEST_CASE("wait states: a waitall on two receives waits for the later sender once", "[wait_states]")
{
  TempDir dir;
  auto result = replay_jsonl(
      dir,
      {R"({"op":"irecv","fn":"MPI_Irecv","peer":1,"tag":0,"bytes":8,"request":1})" "\n"
       R"({"op":"irecv","fn":"MPI_Irecv","peer":2,"tag":0,"bytes":8,"request":2})" "\n"
       R"({"op":"waitall","fn":"MPI_Waitall","requests":[1,2]})" "\n",
       compute_s(0.001) + R"({"op":"send","fn":"MPI_Send","peer":0,"tag":0,"bytes":8})" "\n",
       compute_s(0.003) + R"({"op":"send","fn":"MPI_Send","peer":0,"tag":0,"bytes":8})" "\n"},
      3, 1e9, {}, true);
  REQUIRE(result.wait_states);
  const WaitStateReport& w = *result.wait_states;
  CHECK(waited(w, 0, "MPI_Waitall", WaitKind::LateSender) == Approx(0.003).epsilon(1e-9));
  REQUIRE(w.entries.size() == 1);
  CHECK(w.entries[0].total.calls == 1);
}

TEST_CASE("wait states: analysis.json names every wait and is the same bytes run after run", "[wait_states]")
{
  TempDir dir;
  std::vector<std::string> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(compute_s(0.001 * (r + 1)) + R"({"op":"allreduce","fn":"MPI_Allreduce","bytes":8})" "\n");
  auto result = replay_jsonl(dir, ranks, 3, 1e9, {}, true);
  RunDescription run;
  run.command = "replay";
  write_analysis(dir / "a.json", result, run);
  write_analysis(dir / "b.json", result, run);
  std::string a = read_file(dir / "a.json"), b = read_file(dir / "b.json");
  CHECK(a == b);
  CHECK_THAT(a, Catch::Contains("\"format\": \"gridcast-analysis\"") && Catch::Contains("\"kind\": \"wait_at_nxn\"") &&
                    Catch::Contains("\"function\": \"MPI_Allreduce\""));
  const WaitStateReport& w = *result.wait_states;
  CHECK(waited(w, 0, "MPI_Allreduce", WaitKind::WaitAtNxN) == Approx(0.002).epsilon(1e-9));
  CHECK(waited(w, 1, "MPI_Allreduce", WaitKind::WaitAtNxN) == Approx(0.001).epsilon(1e-9));
  std::ostringstream console;
  print_wait_states(console, w);
  CHECK_THAT(console.str(), Catch::Contains("wait at N x N: 0.003 s in 2 call(s)") &&
                                Catch::Contains("most: rank 0 MPI_Allreduce, wait at N x N: 0.002 s"));
}

TEST_CASE("critical path: a three-stage pipeline's path is every stage's compute and the two messages",
          "[wait_states]")
{
  TempDir dir;
  // Rank 0 computes 2 ms and sends to rank 1, which computes 1 ms and sends to rank 2, which computes 1 ms.
  const std::string send_to_1 = R"({"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":8})" "\n";
  const std::string send_to_2 = R"({"op":"send","fn":"MPI_Send","peer":2,"tag":0,"bytes":8})" "\n";
  auto result = replay_jsonl(dir,
                             {compute_s(0.002) + send_to_1,
                              R"({"op":"recv","fn":"MPI_Recv","peer":0,"tag":0,"bytes":8})" "\n" + compute_s(0.001) +
                                  send_to_2,
                              R"({"op":"recv","fn":"MPI_Recv","peer":1,"tag":0,"bytes":8})" "\n" + compute_s(0.001)},
                             3, 1e9, {}, true, true);
  REQUIRE(result.wait_states);
  REQUIRE(result.wait_states->critical_path);
  const CriticalPath& p = *result.wait_states->critical_path;
  CHECK(p.length_s == Approx(result.makespan_s).epsilon(1e-12));
  CHECK(p.end_rank == 2);
  CHECK(p.rank_changes == 2);  // 2 -> 1 -> 0
  double compute_s = 0, recv_s = 0, total = 0;
  for (const auto& [f, s] : p.by_function) {
    total += s;
    if (f == "compute")
      compute_s = s;
    if (f == "MPI_Recv")
      recv_s = s;
  }
  CHECK(total == Approx(p.length_s).epsilon(1e-12));
  CHECK(compute_s == Approx(0.004).epsilon(1e-9));
  CHECK(recv_s == Approx(2 * transfer(8)).epsilon(1e-3));  // the two messages, each received once its send left
  CHECK(p.by_rank[0] == Approx(0.002).epsilon(1e-9));
  CHECK(p.by_rank[1] + p.by_rank[2] == Approx(p.length_s - 0.002).epsilon(1e-9));
}

TEST_CASE("imbalance per iteration: the most loaded rank's compute over the mean in every iteration all ranks completed",
          "[wait_states]")
{
  // Three ranks; iteration 0: 1, 1, 4 ms of compute (mean 2, rank 2 at 4: 2 ms over), iteration 1: 3, 1, 2 ms
  // (rank 0 1 ms over). Rank 1 never reaches head 3, so iteration 2 is not measured.
  emulator::WaitStateRecorder rec(3, false);
  const double at[3][4] = {{0, 0.001, 0.004, 0.005}, {0, 0.001, 0.002, -1}, {0, 0.004, 0.006, 0.007}};
  for (int r = 0; r < 3; ++r)
    for (std::uint64_t i = 0; i < 4; ++i)
      if (at[r][i] >= 0) {
        rec.iteration(r, i, at[r][i]);
        rec.iteration(r, i, at[r][i]);  // a head seen twice counts once
      }
  const auto report = rec.report({0.01, 0.01, 0.01});
  REQUIRE(report.iterations.size() == 2);
  CHECK(report.iterations[0].iteration == 0);
  CHECK(report.iterations[0].mean_compute_s == Approx(0.002));
  CHECK(report.iterations[0].max_rank == 2);
  CHECK(report.iterations[0].imbalance_s() == Approx(0.002));
  CHECK(report.iterations[1].max_rank == 0);
  CHECK(report.iterations[1].imbalance_s() == Approx(0.001));
  std::ostringstream text;
  emulator::print_wait_states(text, report);
  CHECK_THAT(text.str(), Catch::Contains("imbalance per iteration of the steady loop (2 measured)"));
  CHECK_THAT(text.str(), Catch::Contains("the largest 0.002 s in iteration 0 (rank 2)"));
}

TEST_CASE("imbalance per iteration: a replay finds a recorded trace's loop by folding each rank's calls",
          "[wait_states]")
{
  // A barrier, 4 iterations of compute + allreduce, a barrier. Rank 1 computes 4 ms in iteration 2, every
  // other rank 1 ms in each: iteration 2's mean is 2 ms, rank 1 2 ms over it; the others are balanced.
  TempDir dir;
  std::vector<std::string> ranks;
  for (int r = 0; r < 3; ++r) {
    std::string text = R"({"op":"barrier","fn":"MPI_Barrier"})" "\n";
    for (int i = 0; i < 4; ++i)
      text += compute_s(r == 1 && i == 2 ? 0.004 : 0.001) + R"({"op":"allreduce","fn":"MPI_Allreduce","bytes":8})" "\n";
    ranks.push_back(text + R"({"op":"barrier","fn":"MPI_Barrier"})" "\n");
  }
  auto result = replay_jsonl(dir, ranks, 3, 1e9, {}, true);
  REQUIRE(result.wait_states);
  const WaitStateReport& w = *result.wait_states;
  CHECK(w.iterations_note.empty());
  REQUIRE(w.iterations.size() == 4);  // the loop's end is marked too: its last iteration is measured
  for (const IterationImbalance& it : w.iterations) {
    INFO("iteration " << it.iteration);
    CHECK(it.iteration == static_cast<std::uint64_t>(&it - w.iterations.data()));
    CHECK(it.imbalance_s() == Approx(it.iteration == 2 ? 0.002 : 0.0).margin(1e-12));
    if (it.iteration == 2)
      CHECK(it.max_rank == 1);
  }
  std::ostringstream text;
  emulator::print_wait_states(text, w);
  CHECK_THAT(text.str(), Catch::Contains("imbalance per iteration of the recorded loop of 1 call on rank 0 (4 "
                                         "measured)"));
  CHECK_THAT(text.str(), Catch::Contains("the largest 0.002 s in iteration 2 (rank 1)"));
}

TEST_CASE("imbalance per iteration: ranks whose recorded loops differ are not measured and say why",
          "[wait_states]")
{
  // No communication: rank 0 calls dgemm_ 4 times, rank 1 3 times; iteration k of one is not of the other.
  TempDir dir;
  const std::string dgemm = R"({"op":"compute","fn":"dgemm_","seconds":0.001})" "\n";
  auto result = replay_jsonl(dir, {dgemm + dgemm + dgemm + dgemm, dgemm + dgemm + dgemm}, 2, 1e9, {}, true);
  REQUIRE(result.wait_states);
  CHECK(result.wait_states->iterations.empty());
  CHECK(result.wait_states->iterations_note == "the ranks' loops differ: rank 0's has 4 iterations, rank 1's 3");
  std::ostringstream text;
  emulator::print_wait_states(text, *result.wait_states);
  CHECK_THAT(text.str(), Catch::Contains("imbalance per iteration: not measured: the ranks' loops differ"));
}
