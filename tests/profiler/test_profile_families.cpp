// `gridcast profile` of tests/profiler/apps/mpi_families.cpp (2 ranks, a second or so), then `gridcast
// replay` of the profile: persistent requests, matched probes, MPI_Alltoallw and the neighbourhood
// collectives are recorded as records the emulator replays.
#include "../support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
using namespace gridcast;
using models::CallRecord;
using models::Op;

namespace {

struct Named {
  CallRecord r;
  std::string fn;
};

/// The records of `rank` without the compute bursts and the local calls of MPI_Comm_rank/size.
std::vector<Named> calls_of(const fs::path& dir, int rank)
{
  models::ProfileDir prof(dir);
  auto stream = prof.open(rank);
  std::vector<Named> out;
  CallRecord r;
  while (stream->next(r)) {
    std::string fn = stream->functions().name(r.function);
    if (r.op == Op::Compute || fn == "MPI_Comm_rank" || fn == "MPI_Comm_size")
      continue;
    out.push_back({r, fn});
  }
  return out;
}

std::string describe(const Named& n)
{
  std::ostringstream s;
  s << models::op_name(n.r.op) << ' ' << n.fn;
  if (n.r.peer != models::kNoRank)
    s << " peer=" << n.r.peer;
  if (n.r.bytes != 0)
    s << " bytes=" << n.r.bytes;
  if (n.r.request != models::kNoRequest)
    s << " request=" << n.r.request;
  for (auto q : n.r.requests)
    s << " r" << q;
  return s.str();
}

/// Profiles `program` (with `args`) with 2 ranks into `out`, at `nw`.
test::RunResult profile_2_ranks(const fs::path& out, const std::string& program, int nw = 2, const std::string& args = "")
{
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return test::run_gridcast("profile --nw " + std::to_string(nw) + " --keep-raw --out '" + out.string() +
                            "' -- mpirun -np 2 --oversubscribe --bind-to none '" + program + "' " + args);
}

}  // namespace

TEST_CASE("profile: persistent requests, matched probes, alltoallw, neighbourhood collectives, communicator "
          "creations, replayed",
          "[profiler][mpi][replay]")
{
  test::TempDir dir;
  auto r = profile_2_ranks(dir / "prof", GRIDCAST_MPI_FAMILIES);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.output, Catch::Contains("(complete)"));

  std::vector<std::string> got;
  for (const auto& n : calls_of(dir / "prof", 1))
    got.push_back(describe(n));
  auto nb = [&](int k) { return std::to_string((std::int64_t{1} << 40) + k); };
  std::vector<std::string> want = {
      "init MPI_Init",
      // Each start of a persistent request is the irecv it performs, with a fresh request id that the
      // wait names; the wait on the inactive request is a local call.
      "comm_size MPI_Recv_init",
      "irecv MPI_Start peer=0 bytes=100 request=0", "wait MPI_Wait request=0",
      "irecv MPI_Start peer=0 bytes=100 request=1", "wait MPI_Wait request=1",
      "irecv MPI_Start peer=0 bytes=100 request=2", "wait MPI_Wait request=2",
      "comm_size MPI_Wait", "comm_size MPI_Request_free",
      "comm_size MPI_Ssend_init", "comm_size MPI_Recv_init",
      "issend MPI_Startall peer=0 bytes=32 request=3", "irecv MPI_Startall peer=0 bytes=32 request=4",
      "waitall MPI_Waitall r3 r4",
      "issend MPI_Startall peer=0 bytes=32 request=5", "irecv MPI_Startall peer=0 bytes=32 request=6",
      "waitall MPI_Waitall r5 r6",
      "comm_size MPI_Request_free", "comm_size MPI_Request_free",
      // Matched probes: a probe that found the message, then the receive from where it was found.
      "probe MPI_Mprobe peer=-1", "recv MPI_Mrecv peer=0 bytes=40",
      "probe MPI_Improbe peer=0", "irecv MPI_Imrecv peer=0 bytes=48 request=7", "wait MPI_Wait request=7",
      "alltoallv MPI_Alltoallw",
      "comm_split MPI_Cart_create",
      // Neighbourhood collectives: the exchanges with the one neighbour (world rank 0), then a waitall;
      // the nonblocking one's MPI_Wait waits for its exchanges.
      "irecv MPI_Neighbor_alltoall peer=0 bytes=12 request=" + nb(0),
      "isend MPI_Neighbor_alltoall peer=0 bytes=12 request=" + nb(1),
      "waitall MPI_Neighbor_alltoall r" + nb(0) + " r" + nb(1),
      "irecv MPI_Neighbor_allgatherv peer=0 bytes=16 request=" + nb(2),
      "isend MPI_Neighbor_allgatherv peer=0 bytes=16 request=" + nb(3),
      "waitall MPI_Neighbor_allgatherv r" + nb(2) + " r" + nb(3),
      "irecv MPI_Ineighbor_alltoallv peer=0 bytes=20 request=" + nb(4),
      "isend MPI_Ineighbor_alltoallv peer=0 bytes=20 request=" + nb(5),
      "waitall MPI_Wait r" + nb(4) + " r" + nb(5),
      "irecv MPI_Neighbor_alltoallw peer=0 bytes=20 request=" + nb(6),
      "isend MPI_Neighbor_alltoallw peer=0 bytes=20 request=" + nb(7),
      "waitall MPI_Neighbor_alltoallw r" + nb(6) + " r" + nb(7),
      "comm_size MPI_Comm_free",
  };
  REQUIRE(got.size() > want.size());
  CHECK(std::vector<std::string>(got.begin(), got.begin() + static_cast<long>(want.size())) == want);
  auto calls = calls_of(dir / "prof", 1);
  for (const auto& n : calls)
    if (n.fn == "MPI_Alltoallw") {
      CHECK(n.r.counts == std::vector<std::uint64_t>{4, 8});  // (i + 1) ints to rank i
      CHECK(n.r.recv_counts == std::vector<std::uint64_t>{8, 8});  // (rank + 1) ints from each
    }

  // Communicators from the remaining creation calls: MPI_Comm_idup as a nonblocking comm_dup whose
  // request the next wait names, MPI_Comm_create_group (rank 1 alone calls it) and the inter-communicator calls as
  // creations among their members, listed as world ranks; the graph topologies as splits of the world.
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    std::map<std::string, Named> made;
    auto all = calls_of(dir / "prof", rank);
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].r.op == Op::CommSplit)
        made[all[i].fn] = all[i];
    for (const char* fn : {"MPI_Intercomm_create", "MPI_Intercomm_merge", "MPI_Dist_graph_create_adjacent",
                           "MPI_Graph_create"})
      REQUIRE(made.count(fn) == 1);
    CHECK(made.count("MPI_Comm_idup") == 0);
    std::size_t idup = all.size();
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].fn == "MPI_Comm_idup")
        idup = i;
    REQUIRE(idup + 1 < all.size());
    CHECK(all[idup].r.op == Op::CommDup);
    REQUIRE(all[idup].r.request >= 0);
    CHECK(all[idup + 1].r.op == Op::Wait);
    CHECK(all[idup + 1].r.request == all[idup].r.request);
    CHECK(made["MPI_Intercomm_create"].r.counts == std::vector<std::uint64_t>{0, 1});
    CHECK(made["MPI_Intercomm_merge"].r.counts == std::vector<std::uint64_t>{0, 1});
    CHECK(made["MPI_Graph_create"].r.counts.empty());
    CHECK(made.count("MPI_Comm_create_group") == static_cast<std::size_t>(rank));
    if (rank == 1)
      CHECK(made["MPI_Comm_create_group"].r.counts == std::vector<std::uint64_t>{1});
    // The message across the inter-communicator names the other side's world rank.
    bool across = false;
    for (const auto& n : all)
      across = across || ((n.r.op == Op::Send || n.r.op == Op::Recv) && n.r.comm == made["MPI_Intercomm_create"].r.new_comm &&
                          n.r.peer == 1 - rank && n.r.tag == 13);
    CHECK(across);
  }

  // Rank 0 alternated MPI_Iprobe and MPI_Test until the message came: every call is in the profile, in
  // alternation, but the hook wrote the failed ones as one cycle (a handful of raw records).
  {
    auto all = calls_of(dir / "prof", 0);
    std::size_t first = all.size();
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].r.op == Op::Irecv && all[i].r.tag == 60)
        first = i + 1;
    REQUIRE(first < all.size());
    std::size_t probes = 0, tests = 0, i = first;
    bool alternating = true;
    for (; i < all.size() && (all[i].r.op == Op::Probe || all[i].r.op == Op::Test); ++i) {
      bool probe = all[i].r.op == Op::Probe;
      alternating = alternating && probe == ((i - first) % 2 == 0);
      (probe ? probes : tests) += 1;
    }
    CHECK(alternating);
    CHECK(probes == tests);
    CHECK(probes >= 2);
    // Every call counted, although only a sample of a long run's calls is timed.
    auto said = r.output.find("rank 0 polled ");
    REQUIRE(said != std::string::npos);
    CHECK(probes == std::stoul(r.output.substr(said + 14)));
    auto raw_records = fs::file_size(dir / "prof" / "raw" / "rank-0.thread-0.gcraw") / 104;
    INFO("polls " << probes + tests << ", raw records of rank 0 " << raw_records);
    if (probes > 200)  // the loop ran long enough for folding to show
      CHECK(raw_records < probes);
  }

  // The profile replays to completion, and the same profile gives the same prediction.
  std::string platform = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/this-machine/platform.xml";
  for (const char* out : {"replay-a", "replay-b"}) {
    auto rep = test::run_gridcast("replay '" + (dir / "prof").string() + "' --platform '" + platform +
                                  "' --ranks-per-host 2 --out '" + (dir / out).string() + "'");
    INFO(rep.output);
    REQUIRE(rep.exit_code == 0);
    CHECK_THAT(rep.output, Catch::Contains("makespan: "));
    // The hook recorded the MPI library (Open MPI here): its collectives replay under its rules.
    CHECK_THAT(rep.output, Catch::Contains("algorithms of the openmpi-4.1 selector (auto: the run was recorded with Open MPI"));
  }
  CHECK_THAT(models::read_run_info(dir / "prof" / "run.json").mpi_library, Catch::StartsWith("Open MPI"));
  CHECK(test::read_file(dir / "replay-a" / "prediction.json") == test::read_file(dir / "replay-b" / "prediction.json"));
}

TEST_CASE("profile: each request keeps the id of its creation, whatever handle MPI gave it", "[profiler][mpi]")
{
  test::TempDir dir;
  auto r = profile_2_ranks(dir / "prof", GRIDCAST_MPI_REQUESTS);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.output, Catch::Contains("(complete)"));

  std::vector<std::string> got;
  for (const auto& n : calls_of(dir / "prof", 0))
    if (n.r.op != Op::Init && n.r.op != Op::Finalize)
      got.push_back(describe(n));
  std::vector<std::string> want;
  auto isend = [&](int tag, int id) {
    want.push_back("isend MPI_Isend peer=1 bytes=4 request=" + std::to_string(id));
    (void)tag;
  };
  // 1. eight sends that completed at once (one shared handle), one waitall naming all eight
  for (int i = 0; i < 8; ++i)
    isend(1, i);
  want.push_back("waitall MPI_Waitall r0 r1 r2 r3 r4 r5 r6 r7");
  // 2. waited in reverse order: each wait names the request created where it reads the handle
  for (int i = 8; i < 16; ++i)
    isend(2, i);
  for (int i = 15; i >= 8; --i)
    want.push_back("wait MPI_Wait request=" + std::to_string(i));
  // 3. made in a temporary: the oldest first
  for (int i = 16; i < 20; ++i)
    isend(3, i);
  want.push_back("test MPI_Testall r16 r17 r18 r19");
  // 4. freed by the application, then another
  isend(4, 20);
  want.push_back("comm_size MPI_Request_free request=20");
  isend(4, 21);
  want.push_back("wait MPI_Wait request=21");
  // 5. a persistent send between shared handles: each start a fresh id
  want.push_back("comm_size MPI_Send_init");
  isend(5, 22);
  want.push_back("isend MPI_Start peer=1 bytes=4 request=23");
  isend(5, 24);
  want.push_back("waitall MPI_Waitall r22 r24 r23");
  isend(5, 25);
  want.push_back("isend MPI_Start peer=1 bytes=4 request=26");
  isend(5, 27);
  want.push_back("waitall MPI_Waitall r25 r27 r26");
  want.push_back("comm_size MPI_Request_free");
  // 6. receives whose handle value MPI likely reuses
  want.push_back("irecv MPI_Irecv peer=1 bytes=16384 request=28");
  want.push_back("wait MPI_Wait request=28");
  want.push_back("irecv MPI_Irecv peer=1 bytes=16384 request=29");
  want.push_back("wait MPI_Wait request=29");
  REQUIRE(got.size() >= want.size());
  CHECK(std::vector<std::string>(got.begin(), got.begin() + static_cast<long>(want.size())) == want);

  // 7. MPI_Waitany, MPI_Waitsome and MPI_Testany: every request completed once, under its own id.
  std::vector<std::int64_t> created, waitsome, testany;
  std::vector<std::vector<std::int64_t>> waitany;
  for (const auto& n : calls_of(dir / "prof", 0)) {
    if (n.r.op == Op::Isend && n.r.tag == 7)
      created.push_back(n.r.request);
    if (n.fn == "MPI_Waitany")
      waitany.push_back(n.r.requests);  // the requests still active: one fewer each time
    if (n.fn == "MPI_Waitsome")
      waitsome.insert(waitsome.end(), n.r.requests.begin(), n.r.requests.end());  // those it completed
    if (n.fn == "MPI_Testany" && n.r.request != models::kNoRequest)
      testany.push_back(n.r.request);
  }
  std::sort(waitsome.begin(), waitsome.end());
  std::sort(testany.begin(), testany.end());
  CHECK(created == std::vector<std::int64_t>{30, 31, 32, 33, 34, 35, 36, 37, 38});
  CHECK(waitany == std::vector<std::vector<std::int64_t>>{{30, 31, 32}, {31, 32}, {32}});
  CHECK(waitsome == std::vector<std::int64_t>{33, 34, 35});
  CHECK(testany == std::vector<std::int64_t>{36, 37, 38});
}

namespace {

/// Every field of a record but its time and where it was read: what the Fortran and C paths must agree on.
std::string full_describe(const Named& n)
{
  std::ostringstream s;
  const CallRecord& r = n.r;
  s << describe(n) << " tag=" << r.tag << " src=" << r.src << " recv_tag=" << r.recv_tag << " recv_bytes=" << r.recv_bytes
    << " comm=" << r.comm << " root=" << r.root << " color=" << r.color << " key=" << r.key << " new_comm=" << r.new_comm;
  for (auto c : r.counts)
    s << " c" << c;
  for (auto c : r.recv_counts)
    s << " rc" << c;
  return s.str();
}

}  // namespace

TEST_CASE("profile: a Fortran program's records are those of its C twin", "[profiler][mpi][fortran]")
{
  std::vector<std::pair<std::string, std::string>> programs;
#ifdef GRIDCAST_FORTRAN_MPI
  programs.emplace_back("use mpi", GRIDCAST_FORTRAN_MPI);
#endif
#ifdef GRIDCAST_FORTRAN_F08
  programs.emplace_back("use mpi_f08", GRIDCAST_FORTRAN_F08);
#endif
  if (programs.empty()) {
    WARN("no MPI Fortran compiler was found at configure time: nothing to check");
    return;
  }
  test::TempDir dir;
  auto twin = profile_2_ranks(dir / "c", GRIDCAST_MPI_FORTRAN_TWIN);
  INFO(twin.output);
  REQUIRE(twin.exit_code == 0);
  for (const auto& [name, program] : programs) {
    INFO(name);
    auto run = profile_2_ranks(dir / "f", program);
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    REQUIRE_THAT(run.output, Catch::Contains("(complete)"));
    for (int rank : {0, 1}) {
      INFO("rank " << rank);
      std::vector<std::string> want, got;
      for (const auto& n : calls_of(dir / "c", rank))
        want.push_back(full_describe(n));
      for (const auto& n : calls_of(dir / "f", rank))
        got.push_back(full_describe(n));
      CHECK(want.size() > 50);
      CHECK(got == want);
    }
    fs::remove_all(dir / "f");
  }
}

TEST_CASE("profile, fit, predict: a timing-dependent MPI_Waitsome loop is one construct", "[profiler][mpi][fit]")
{
  test::TempDir dir;
  std::string profiles;
  std::map<int, std::vector<std::size_t>> waitsome_calls;  // per size, rank 1's calls in each run
  for (int n : {2, 3, 4})
    for (int run = 0; run < 2; ++run) {
      auto out = dir / ("n" + std::to_string(n) + "-" + std::to_string(run));
      auto r = profile_2_ranks(out, GRIDCAST_MPI_WAITSOME, n, std::to_string(n));
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      std::size_t calls = 0;
      for (const auto& c : calls_of(out, 1))
        calls += c.fn == "MPI_Waitsome";
      waitsome_calls[n].push_back(calls);
      profiles += " '" + out.string() + "'";
    }
  INFO("MPI_Waitsome calls of rank 1 per run: 2: " << waitsome_calls[2][0] << ", " << waitsome_calls[2][1]
                                                   << "; 3: " << waitsome_calls[3][0] << ", " << waitsome_calls[3][1]
                                                   << "; 4: " << waitsome_calls[4][0] << ", " << waitsome_calls[4][1]);
  auto fit = test::run_gridcast("fit" + profiles + " -o '" + (dir / "model.json").string() + "'");
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK_THAT(fit.output, Catch::Contains("1 trace group(s)"));
  std::string platform = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/this-machine/platform.xml";
  auto predict = test::run_gridcast("predict '" + (dir / "model.json").string() + "' --nw 8 --np 2 --platform '" +
                                    platform + "' --ranks-per-host 2");
  INFO(predict.output);
  REQUIRE(predict.exit_code == 0);
  CHECK_THAT(predict.output, Catch::Contains("makespan"));
}

TEST_CASE("profile, replay --sample: collectives on a Cartesian communicator and a duplicate of world cut windows",
          "[profiler][mpi][sampling]")
{
  test::TempDir dir;
  const fs::path out = dir / "windows";
  auto r = profile_2_ranks(out, GRIDCAST_MPI_WINDOWS, 2, "12");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // 12 steps of 30 solver iterations in all: the allreduces on the Cartesian communicator and on the
  // duplicate (60), the steps' broadcasts (12) and the three creations on world cut 75 heads; the
  // allreduce on the split by parity cuts none.
  auto phases = test::run_gridcast("phases '" + out.string() + "'");
  INFO(phases.output);
  REQUIRE(phases.exit_code == 0);
  CHECK_THAT(phases.output, Catch::Contains("74 units (the windows between collectives on communicators of every rank)"));
  const std::string platform = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/this-machine/platform.xml";
  auto sampled = test::run_gridcast("replay '" + out.string() + "' --platform '" + platform +
                                    "' --ranks-per-host 2 --sample 20 --out '" + (dir / "sampled").string() + "'");
  INFO(sampled.output);
  REQUIRE(sampled.exit_code == 0);
  CHECK_THAT(sampled.output, Catch::Contains(" of 74 windows sampled"));
}
