// `gridcast profile` of tests/profiler/apps/mpi_spawn.cpp (1 rank that spawns one child): the spawn is a
// dynamic_process record, the child writes nothing over the parent's files, and `gridcast replay` refuses
// the profile with exit 1 naming the file, line and rank.
#include "../support.hpp"

#include "gridcast/models/profile.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

namespace fs = std::filesystem;
using namespace gridcast;
using models::CallRecord;
using models::Op;

TEST_CASE("profile: MPI_Comm_spawn is recorded, and replay refuses it by file, line and rank", "[profiler][mpi]")
{
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  test::TempDir dir;
  auto r = test::run_gridcast("profile --nw 1 --out '" + (dir / "prof").string() +
                              "' -- mpirun -np 1 --oversubscribe --bind-to none " GRIDCAST_MPI_SPAWN);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.output, Catch::Contains("(complete)"));

  models::ProfileDir prof(dir / "prof");
  REQUIRE(prof.rank_count() == 1);
  auto stream = prof.open(0);
  CallRecord c;
  std::uint64_t spawn_line = 0;
  bool send_after = false, init = false;
  while (stream->next(c)) {
    const std::string& fn = stream->functions().name(c.function);
    init = init || fn == "MPI_Init";
    if (fn == "MPI_Comm_spawn") {
      CHECK(c.op == Op::DynamicProcess);
      CHECK(c.root == 0);
      CHECK(c.color == 1);  // one remote process
      CHECK(c.seconds > 0);
      spawn_line = c.line;
    }
    // The message to the child: on the inter-communicator, to a process with no world rank.
    if (fn == "MPI_Send" && spawn_line > 0)
      send_after = true;
  }
  CHECK(init);  // the parent's records, not overwritten by the child's rank 0
  REQUIRE(spawn_line > 0);
  CHECK(send_after);

  std::string platform = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/this-machine/platform.xml";
  auto rep = test::run_gridcast("replay '" + (dir / "prof").string() + "' --platform '" + platform +
                                "' --ranks-per-host 1 --out '" + (dir / "rep").string() + "'");
  INFO(rep.output);
  CHECK(rep.exit_code == 1);
  CHECK_THAT(rep.output, Catch::Contains("rank-00000") && Catch::Contains(":" + std::to_string(spawn_line) + ":") &&
                             Catch::Contains("rank 0") &&
                             Catch::Contains("dynamic process management (MPI_Comm_spawn) cannot be replayed: the "
                                             "spawned processes are not in the profile"));
}

TEST_CASE("profile: MPI_Comm_accept/connect between ranks of the world are a creation among members, replayed",
          "[profiler][mpi][replay]")
{
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  test::TempDir dir;
  auto r = test::run_gridcast("profile --nw 1 --out '" + (dir / "prof").string() +
                              "' -- mpirun -np 2 --oversubscribe --bind-to none " GRIDCAST_MPI_SPAWN " connect");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.output, Catch::Contains("(complete)"));

  models::ProfileDir prof(dir / "prof");
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    auto stream = prof.open(rank);
    CallRecord c;
    bool created = false, across = false;
    std::int32_t inter = -1;
    while (stream->next(c)) {
      const std::string& fn = stream->functions().name(c.function);
      if (fn == (rank == 0 ? "MPI_Comm_accept" : "MPI_Comm_connect")) {
        CHECK(c.op == Op::CommSplit);
        CHECK(c.counts == std::vector<std::uint64_t>{0, 1});  // both sides, world ranks
        created = true;
        inter = c.new_comm;
      }
      // The message across names the other side's world rank.
      if ((c.op == Op::Send || c.op == Op::Recv) && c.tag == 2 && c.comm == inter)
        across = c.peer == 1 - rank;
    }
    CHECK(created);
    CHECK(across);
  }
  std::string platform = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/this-machine/platform.xml";
  auto rep = test::run_gridcast("replay '" + (dir / "prof").string() + "' --platform '" + platform +
                                "' --ranks-per-host 2 --out '" + (dir / "rep").string() + "'");
  INFO(rep.output);
  CHECK(rep.exit_code == 0);
  CHECK_THAT(rep.output, Catch::Contains("makespan: "));
}

TEST_CASE("profile: a helper the application forks records nothing and writes none of its rank's files", "[profiler][mpi]")
{
  // The forked child copies the rank's unwritten records; at its exit it used to append them to the rank's
  // raw file a second time (MPI_Init, MPI_Allreduce twice in the profile, "hooked" near 200 %).
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  for (int np : {2, 4}) {
    test::TempDir dir;
    auto r = test::run_gridcast("profile --nw 1 --out '" + (dir / "prof").string() + "' -- mpirun -np " +
                                std::to_string(np) + " --oversubscribe --bind-to none " GRIDCAST_MPI_SPAWN " fork");
    INFO("np " << np << ": " << r.output);
    // The helper's exit code reached the application unchanged (it exits 0 only then), and the profile is whole.
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("(complete)"));
    models::ProfileDir prof(dir / "prof");
    for (int rank = 0; rank < np; ++rank) {
      INFO("rank " << rank);
      auto stream = prof.open(rank);
      CallRecord c;
      std::vector<std::string> mpi;
      while (stream->next(c))
        if (c.op != Op::Compute)
          mpi.push_back(stream->functions().name(c.function));
      CHECK(mpi == std::vector<std::string>{"MPI_Init", "MPI_Allreduce", "MPI_Barrier", "MPI_Finalize"});
    }
  }
}
