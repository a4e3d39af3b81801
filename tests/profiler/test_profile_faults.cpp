// The hook under faults, in real Open MPI runs at 2 and 4 ranks (tests/profiler/apps/mpi_sample.cpp's
// modes): a signal that ends one rank, MPI_Abort, an exit without MPI_Finalize, a rank killed with SIGKILL,
// and a disk that fills during the run (a forked child: test_profile_spawn.cpp).
// In each the application behaves as it would without the hook, what was recorded up to the fault is
// read back as whole records, and `gridcast profile` says how far the profile goes (exit 1).
#include "../support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace gridcast;

namespace {

std::string mpirun(int np)
{
  // Open MPI refuses root unless told; test machines and containers often run as root.
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return "mpirun -np " + std::to_string(np) + " --oversubscribe --bind-to none ";
}

/// The function names of a rank's records, in order.
std::vector<std::string> functions_of(const fs::path& profile, int rank)
{
  models::ProfileDir prof(profile);
  auto stream = prof.open(rank);
  std::vector<std::string> out;
  models::CallRecord r;
  while (stream->next(r))
    out.push_back(stream->functions().name(r.function));
  return out;
}

struct Call {
  models::Op op;
  std::string fn;
};

/// A rank's calls without the computation between them and local MPI calls (MPI_Comm_rank...).
std::vector<Call> calls_of(const fs::path& profile, int rank)
{
  models::ProfileDir prof(profile);
  auto stream = prof.open(rank);
  std::vector<Call> out;
  models::CallRecord r;
  while (stream->next(r))
    if (not(r.op == models::Op::Compute && stream->functions().name(r.function) == "compute") &&
        r.op != models::Op::CommSize)
      out.push_back({r.op, stream->functions().name(r.function)});
  return out;
}

long count_of(const std::vector<std::string>& fns, const std::string& name)
{
  return static_cast<long>(std::count(fns.begin(), fns.end(), name));
}

}  // namespace

TEST_CASE("profile faults: SIGTERM or SIGINT of one rank keeps every rank's records up to the signal",
          "[profiler][mpi]")
{
  for (int np : {2, 4})
    for (std::string mode : {"term", "int"}) {
      test::TempDir dir;
      const fs::path out = dir / "prof";
      auto r = test::run_gridcast("profile --nw 4 --encoding jsonl --out '" + out.string() + "' -- " + mpirun(np) +
                                  GRIDCAST_MPI_SAMPLE " " + mode);
      INFO("np " << np << ' ' << mode << ": " << r.output);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.output, Catch::Contains("marked complete=false"));
      models::ProfileDir prof(out);
      CHECK_FALSE(prof.info().complete);
      CHECK(prof.info().np == np);
      const auto rank0 = calls_of(out, 0);
      REQUIRE(rank0.size() >= 14);
      CHECK(rank0.front().fn == "MPI_Init");
      CHECK(rank0.back().fn == "MPI_Cart_create");  // the last call before the signal
      for (const auto& c : rank0)
        CHECK(c.op != models::Op::Finalize);
      // The others' records read as well. The launcher ends them (SIGTERM, whose handler flushes, then
      // SIGKILL on a loaded machine, which leaves what was flushed: possibly nothing).
      for (int rank = 1; rank < np; ++rank) {
        const auto other = functions_of(out, rank);
        INFO("rank " << rank);
        if (not other.empty())
          CHECK(other.front() == "MPI_Init");
      }
    }
}

TEST_CASE("profile faults: MPI_Abort and exit without MPI_Finalize leave incomplete profiles", "[profiler][mpi]")
{
  for (int np : {2, 4})
    for (std::string mode : {"abort", "noexit"}) {
      test::TempDir dir;
      const fs::path out = dir / "prof";
      auto r = test::run_gridcast("profile --nw 4 --out '" + out.string() + "' -- " + mpirun(np) +
                                  GRIDCAST_MPI_SAMPLE " " + mode);
      INFO("np " << np << ' ' << mode << ": " << r.output);
      CHECK(r.exit_code == 1);
      models::ProfileDir prof(out);
      CHECK_FALSE(prof.info().complete);
      const auto rank0 = calls_of(out, 0);
      REQUIRE_FALSE(rank0.empty());
      CHECK(rank0.front().fn == "MPI_Init");
      if (mode == "abort") {
        CHECK_THAT(r.output, Catch::Contains("abort"));
      } else {
        CHECK_THAT(r.output, Catch::Contains("exit-without-finalize"));
        CHECK(rank0.back().op == models::Op::Send);  // the last call of rank 0 before exit(0)
      }
    }
}

TEST_CASE("profile faults: a rank killed with SIGKILL keeps the records it flushed and reads as killed",
          "[profiler][mpi]")
{
  for (int np : {2, 4}) {
    test::TempDir dir;
    const fs::path out = dir / "prof";
    auto r = test::run_gridcast("profile --nw 4 --out '" + out.string() + "' -- " + mpirun(np) +
                                GRIDCAST_MPI_SAMPLE " kill");
    INFO("np " << np << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("killed"));
    CHECK_THAT(r.output, Catch::Contains("INCOMPLETE"));
    models::ProfileDir prof(out);
    CHECK_FALSE(prof.info().complete);
    // The killed rank wrote one buffer of 4096 records before its 5000 allreduces ended; the rest died
    // with it. What was written reads as the calls they were, nothing misread after them.
    const auto killed = functions_of(out, np - 1);
    REQUIRE_FALSE(killed.empty());
    CHECK(killed.front() == "MPI_Init");
    const long allreduces = count_of(killed, "MPI_Allreduce");
    CHECK(allreduces >= 4000);
    CHECK(allreduces < 5000);
    CHECK(killed.back() == "MPI_Allreduce");
    for (const auto& fn : killed)
      CHECK((fn.rfind("MPI_", 0) == 0 || fn == "compute"));
  }
}

TEST_CASE("profile faults: a disk that fills during the run stops the records at a whole one and the "
          "application runs on",
          "[profiler][mpi]")
{
  // A 192 KiB file system of its own (a tmpfs in a private mount namespace) for the raw files: 5000
  // allreduces a rank need about 520 KB, so every rank's file fills it mid-run. The profile itself goes
  // to the usual disk (--raw-dir).
  test::TempDir dir;
  const fs::path small = dir / "small-disk";
  fs::create_directories(small);
  auto probe = test::run_command("unshare -m sh -c \"mount -t tmpfs -o size=192k gridcast-test '" +
                                 small.string() + "'\"");
  if (probe.exit_code != 0) {
    WARN("no private tmpfs here (unshare -m and mount need CAP_SYS_ADMIN): " << probe.output);
    return;
  }
  for (int np : {2, 4}) {
    const fs::path out = dir / ("prof-" + std::to_string(np));
    const std::string profile = std::string(GRIDCAST_BIN) + " profile --nw 4 --raw-dir '" + (small / "raw").string() +
                                "' --out '" + out.string() + "' -- " + mpirun(np) + GRIDCAST_MPI_SAMPLE " fill";
    auto r = test::run_command("unshare -m sh -c \"mount -t tmpfs -o size=192k gridcast-test '" + small.string() +
                               "' && exec " + profile + "\"");
    INFO("np " << np << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("mpi_sample: fill run finished"));  // the application's own end
    CHECK_THAT(r.output, Catch::Contains("No space left on device"));
    CHECK_THAT(r.output, Catch::Contains("records were lost"));
    CHECK_THAT(r.output, Catch::Contains("INCOMPLETE"));
    models::ProfileDir prof(out);
    CHECK_FALSE(prof.info().complete);
    long recorded = 0;
    for (int rank = 0; rank < np; ++rank) {
      const auto fns = functions_of(out, rank);
      INFO("rank " << rank);
      if (fns.empty())
        continue;  // the disk was full before this rank's file got its header: no records, and it says so
      CHECK(fns.front() == "MPI_Init");
      recorded += count_of(fns, "MPI_Allreduce");
    }
    CHECK(recorded > 0);
    CHECK(recorded < 5000L * np);
  }
}
