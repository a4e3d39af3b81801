// smpirun's settings in `gridcast replay --cfg`: each smpi/... key is honoured with SMPI's meaning or
// refused (exit 1 naming the key), never accepted and ignored; the network factors the run's model would
// ignore are refused; the TIT layouts smpirun reads replay as it replays them. Expected times are worked
// out by hand on a 2-node cluster of 1 Gflop/s hosts (docs/reference/cfg.md, "SMPI settings").
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

using gridcast::test::run_gridcast;
using gridcast::test::RunResult;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

const char* const kCluster = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                             "<platform version=\"4.1\">\n  <cluster id=\"c\" prefix=\"node-\" suffix=\"\" "
                             "radical=\"0-1\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\"/>\n</platform>\n";

/// Two ranks: computation on both sides of one message, and a sleep.
void write_compute_trace(const TempDir& dir)
{
  write_file(dir / "r0.txt", "0 init\n0 compute 1e8\n0 send 1 0 1000 6\n0 sleep 0.25\n0 finalize\n");
  write_file(dir / "r1.txt", "1 init\n1 recv 0 0 1000 6\n1 compute 2e8\n1 finalize\n");
  write_file(dir / "index.txt", "r0.txt\nr1.txt\n");
}

RunResult replay(const TempDir& dir, const std::string& trace, const std::string& extra = "",
                 const std::filesystem::path& cwd = {})
{
  write_file(dir / "platform.xml", kCluster);
  return run_gridcast("replay " + trace + " --platform " + (dir / "platform.xml").string() + " --out " +
                          (dir / "out").string() + " --no-timeline" + extra,
                      cwd);
}

double makespan(const RunResult& r)
{
  std::smatch m;
  static const std::regex re("makespan: ([0-9.e+-]+) s");
  REQUIRE(std::regex_search(r.output, m, re));
  return std::strtod(m[1].str().c_str(), nullptr);
}

std::string prediction(const TempDir& dir) { return gridcast::test::read_file(dir / "out" / "prediction.json"); }

}  // namespace

TEST_CASE("smpi settings: what smpirun's replay would change, gridcast changes the same way", "[cli][smpi]")
{
  TempDir dir;
  write_compute_trace(dir);
  const std::string index = (dir / "index.txt").string();
  const RunResult plain   = replay(dir, index);
  REQUIRE(plain.exit_code == 0);
  const double base = makespan(plain);
  CHECK(base == Approx(0.1 + 0.25).margin(1e-4));  // rank 0: compute, an eager send, sleep

  SECTION("smpi/simulate-computation:no: compute lines take no time, sleeps still do")
  {
    auto r = replay(dir, index, " --cfg smpi/simulate-computation:no");
    REQUIRE(r.exit_code == 0);
    CHECK(makespan(r) == Approx(0.25).margin(1e-4));
  }
  SECTION("no-effect settings of a TIT replay change nothing, as in smpirun")
  {
    auto r = replay(dir, index,
                    " --cfg smpi/host-speed:1e6 --cfg smpi/cpu-threshold:1 --cfg smpi/wtime:1 "
                    "--cfg smpi/display-timing:yes --cfg smpi/async-small-thresh:0 --cfg smpi/os:0:0:0:0:0 "
                    "--cfg smpi/finalization-barrier:no --cfg smpi/privatization:1");
    REQUIRE(r.exit_code == 0);
    CHECK(makespan(r) == base);
  }
  SECTION("smpi/comp-adjustment-file: speedups per call location")
  {
    write_file(dir / "r0.txt", "0 init\n0 location main.c 5\n0 compute 1e8\n0 send 1 0 1000 6\n"
                               "0 location main.c 9\n0 sleep 0.25\n0 finalize\n");
    write_file(dir / "adjust.csv", "location,speedup\n:0:main.c:5,4\nmain.c:5:main.c:9,5\n");
    auto r = replay(dir, index, " --cfg smpi/comp-adjustment-file:" + (dir / "adjust.csv").string());
    REQUIRE(r.exit_code == 0);
    // rank 0: 1e8 / 4 flops and 0.25 / 5 s; rank 1 receives at 0.025 s and computes 0.2 s after
    CHECK(makespan(r) == Approx(0.025 + 0.2).margin(1e-4));
    write_file(dir / "adjust.csv", "location,speedup\nmain.c:5:main.c:9,zero\n");
    auto bad = replay(dir, index, " --cfg smpi/comp-adjustment-file:" + (dir / "adjust.csv").string());
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.output, Catch::Contains("adjust.csv:2"));
  }
}

TEST_CASE("smpi settings: what gridcast cannot honour is refused with the key", "[cli][smpi]")
{
  TempDir dir;
  write_compute_trace(dir);
  const std::string index = (dir / "index.txt").string();
  for (const char* cfg :
       {"smpi/async-small-thresh:100000", "smpi/os:0:1e-6:1e-9", "smpi/or:1024:0:1e-9", "smpi/ois:0:1e-6:0",
        "smpi/finalization-barrier:yes", "smpi/init:1", "smpi/iprobe-cpu-usage:0.5", "smpi/allreduce:rab_rdb",
        "smpi/coll-selector:mpich", "smpi/np:8", "smpi/hostfile:h", "smpi/replay:t", "smpi/no-such-setting:1",
        "smpi/simulate-computation:maybe", "network/bandwidth-factor:0.5", "network/latency-factor:2"}) {
    INFO(cfg);
    auto r = replay(dir, index, std::string(" --cfg ") + cfg);
    CHECK(r.exit_code == 1);
    const std::string key = std::string(cfg).substr(0, std::string(cfg).find(':'));
    CHECK_THAT(r.output, Catch::Contains("key '" + key + "'"));
  }
  SECTION("an unknown smpi key lists the accepted ones")
  {
    auto r = replay(dir, index, " --cfg smpi/no-such-setting:1");
    CHECK_THAT(r.output, Catch::Contains("smpi/simulate-computation") && Catch::Contains("smpi/comp-adjustment-file"));
  }
  SECTION("the network factors go with their model")
  {
    CHECK(replay(dir, index, " --cfg network/model:CM02 --cfg network/bandwidth-factor:0.5").exit_code == 0);
    auto smpi_factor = replay(dir, index, " --cfg network/model:CM02 --cfg 'smpi/bw-factor:0:0.5'");
    CHECK(smpi_factor.exit_code == 1);
    CHECK_THAT(smpi_factor.output, Catch::Contains("key 'smpi/bw-factor'"));
    auto ib = replay(dir, index, " --cfg 'smpi/IB-penalty-factors:0.965;0.925;1.35'");
    CHECK(ib.exit_code == 1);
    CHECK_THAT(ib.output, Catch::Contains("network/model:IB"));
  }
  SECTION("TIT-only settings and the adjustment file are refused for a profile")
  {
    gridcast::test::write_jsonl_profile(dir / "profile", {"{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n"});
    for (const char* cfg : {"smpi/host-speed:1e9", "smpi/wtime:0", "smpi/cpu-threshold:1e-6"}) {
      INFO(cfg);
      auto r = replay(dir, (dir / "profile").string(), std::string(" --cfg ") + cfg);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.output, Catch::Contains("only accepted for SMPI time-independent traces"));
    }
    write_file(dir / "adjust.csv", "location,speedup\n");
    auto r = replay(dir, (dir / "profile").string(),
                    " --cfg smpi/comp-adjustment-file:" + (dir / "adjust.csv").string());
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("key 'smpi/comp-adjustment-file'"));
  }
}

TEST_CASE("smpi settings: a test costs SMPI's test sleep under the smpi selector", "[cli][smpi]")
{
  // Rank 1 tests three times before rank 0 sends (each fails), computes 0.3 s, and tests once more (it
  // succeeds); rank 0 tests its isend once, at 0.3 s. SMPI sleeps k x smpi/test before each test, k shared
  // by the ranks: 1, 2, 3 for the failures (k = 4 after), 4 for rank 0's success (k = 1 after), 1 for
  // rank 1's: rank 1 ends at 6e-4 + 0.3 + 1e-4. gridcast's own rule charges failures only (1, 2, 3).
  TempDir dir;
  write_file(dir / "r0.txt", "0 init\n0 compute 1e8\n0 isend 1 0 100000 6\n0 compute 2e8\n0 test 0 1 0\n0 finalize\n");
  write_file(dir / "r1.txt",
             "1 init\n1 irecv 0 0 100000 6\n1 test 0 1 0\n1 test 0 1 0\n1 test 0 1 0\n1 compute 3e8\n"
             "1 test 0 1 0\n1 finalize\n");
  write_file(dir / "index.txt", "r0.txt\nr1.txt\n");
  const std::string index = (dir / "index.txt").string();
  auto smpi = replay(dir, index, " --cfg gridcast/coll-selector:smpi");
  REQUIRE(smpi.exit_code == 0);
  CHECK(makespan(smpi) == Approx(0.3007).epsilon(1e-9));
  auto def = replay(dir, index);  // a TIT trace: the default (auto) is smpirun's selector, and its rule
  REQUIRE(def.exit_code == 0);
  CHECK(makespan(def) == makespan(smpi));
  auto mpich = replay(dir, index, " --cfg gridcast/coll-selector:mpich");
  REQUIRE(mpich.exit_code == 0);
  CHECK(makespan(mpich) == Approx(0.3006).epsilon(1e-9));
  auto no_growth = replay(dir, index, " --cfg gridcast/coll-selector:smpi --cfg smpi/grow-injected-times:no "
                                      "--cfg smpi/test:1e-3");
  REQUIRE(no_growth.exit_code == 0);
  CHECK(makespan(no_growth) == Approx(0.003 + 0.3 + 0.001).epsilon(1e-9));
}

TEST_CASE("smpi layouts: smpirun's split traces, relative to the working directory, are said so", "[cli][smpi]")
{
  TempDir dir;
  write_compute_trace(dir);
  std::filesystem::create_directories(dir / "sub");
  write_file(dir / "sub" / "split_traces", "r0.txt\nr1.txt\n");
  auto r = replay(dir, "sub/split_traces", "", dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(prediction(dir), Catch::Contains("\"paths_relative_to\": \"working directory\""));
  auto beside = replay(dir, "index.txt", "", dir.path());
  REQUIRE(beside.exit_code == 0);
  CHECK(makespan(beside) == makespan(r));
  CHECK_THAT(prediction(dir), not Catch::Contains("paths_relative_to"));
}

TEST_CASE("smpi collectives: a TIT trace's default selector is smpirun's, and says why", "[cli][smpi]")
{
  TempDir dir;
  write_file(dir / "all.txt", "0 init\n1 init\n0 allreduce 1000 0 6\n1 allreduce 1000 0 6\n0 finalize\n1 finalize\n");
  write_file(dir / "index.txt", "all.txt\n");
  const std::string index = (dir / "index.txt").string();
  auto def = replay(dir, index);
  REQUIRE(def.exit_code == 0);
  CHECK_THAT(def.output, Catch::Contains("algorithms of the smpi selector (auto: the input was recorded by SMPI"));
  CHECK_THAT(prediction(dir), Catch::Contains("\"coll_selector\": \"smpi\""));
  CHECK_THAT(prediction(dir), Catch::Contains("\"coll_selector_why\": \"auto: the input was recorded by SMPI"));
  auto smpi = replay(dir, index, " --cfg gridcast/coll-selector:smpi");
  REQUIRE(smpi.exit_code == 0);
  CHECK(makespan(smpi) == makespan(def));
  // auto named after another selector undoes it; a named one says it was named.
  auto back = replay(dir, index, " --cfg gridcast/coll-selector:mpich --cfg gridcast/coll-selector:auto");
  REQUIRE(back.exit_code == 0);
  CHECK(makespan(back) == makespan(def));
  for (const char* cfg : {"smpi/coll-selector:default", "gridcast/coll-selector:mpich"}) {
    INFO(cfg);
    auto r = replay(dir, index, std::string(" --cfg ") + cfg);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains(std::string("(--cfg ") + cfg + ")"));
    CHECK_THAT(prediction(dir), Catch::Contains(std::string("\"coll_selector_why\": \"--cfg ") + cfg + "\""));
  }
}
