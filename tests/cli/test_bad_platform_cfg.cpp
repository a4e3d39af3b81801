// Platforms and --cfg values that SimGrid 3.32 answers with an abort, a segmentation fault or a solver
// that never stops: gridcast must find each first and exit 1 naming the file, line and attribute (or the
// --cfg key). Each case is the exact reproducer of a crash seen before the checks existed.
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <string>

using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

/// A 2-rank trace: one message each way, so that every run needs a route between the two hosts.
void write_pingpong(const TempDir& dir)
{
  write_file(dir / "t0.txt", "0 init\n0 send 1 0 1000 1\n0 recv 1 0 1000 1\n0 finalize\n");
  write_file(dir / "t1.txt", "1 init\n1 recv 0 0 1000 1\n1 send 0 0 1000 1\n1 finalize\n");
  write_file(dir / "trace.txt", "t0.txt\nt1.txt\n");
}

std::string cluster(const std::string& attributes)
{
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n"
         "  <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-1\" " +
         attributes + "/>\n</platform>\n";
}

const std::string kGood = "speed=\"1Gf\" bw=\"1.25GBps\" lat=\"5us\"";

std::string replace(std::string s, const std::string& from, const std::string& to)
{
  s.replace(s.find(from), from.size(), to);
  return s;
}

/// Runs a replay of the 2-rank trace on `xml` and returns gridcast's result.
gridcast::test::RunResult replay_on(const TempDir& dir, const std::string& xml, const std::string& extra = "")
{
  write_file(dir / "platform.xml", xml);
  return run_gridcast("replay " + (dir / "trace.txt").string() + " --platform " + (dir / "platform.xml").string() +
                      " --out " + (dir / "out").string() + extra);
}

}  // namespace

TEST_CASE("bad platform: every value SimGrid would abort on is an input error naming file, line and attribute",
          "[cli][platform]")
{
  TempDir dir;
  write_pingpong(dir);
  REQUIRE(replay_on(dir, cluster(kGood)).exit_code == 0);
  struct Case {
    std::string from, to, says;
  };
  for (const Case& c : {Case{"speed=\"1Gf\"", "speed=\"0f\"", "platform.xml:4: key 'speed'"},
                        Case{"speed=\"1Gf\"", "speed=\"nanf\"", "not a finite number"},
                        Case{"speed=\"1Gf\"", "speed=\"1Gf,0f\"", "key 'speed'"},
                        Case{"bw=\"1.25GBps\"", "bw=\"0GBps\"", "key 'bw'"},
                        Case{"bw=\"1.25GBps\"", "bw=\"-1GBps\"", "must be greater than zero"},
                        Case{"lat=\"5us\"", "lat=\"-5us\"", "must not be negative"},
                        Case{"speed=\"1Gf\"", "speed=\"1Gf\" core=\"0\"", "key 'core'"},
                        Case{"speed=\"1Gf\"", "speed=\"1Gf\" core=\"-2\"", "key 'core'"}}) {
    INFO(c.to);
    auto r = replay_on(dir, cluster(replace(kGood, c.from, c.to)));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(c.says));
  }
}

TEST_CASE("bad platform: a cut file, no zone, an unknown routing and hosts without a route exit 1", "[cli][platform]")
{
  TempDir dir;
  write_pingpong(dir);
  const std::string head = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  auto cut = replay_on(dir, head);
  CHECK(cut.exit_code == 1);
  CHECK_THAT(cut.output, Catch::Contains("platform.xml"));
  auto empty = replay_on(dir, head + "<platform version=\"4.1\">\n</platform>\n");
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.output, Catch::Contains("no zone"));
  const std::string zone = head + "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"ROUTING\">\n"
                                  "    <host id=\"node-0\" speed=\"1Gf\"/>\n    <host id=\"node-1\" speed=\"1Gf\"/>\n"
                                  "    <link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\nROUTES  </zone>\n</platform>\n";
  auto bogus = replay_on(dir, replace(replace(zone, "ROUTING", "Bogus"), "ROUTES", ""));
  CHECK(bogus.exit_code == 1);
  CHECK_THAT(bogus.output, Catch::Contains("unknown routing"));
  for (const char* routing : {"Full", "Floyd", "Dijkstra"}) {
    INFO(routing);
    auto none = replay_on(dir, replace(replace(zone, "ROUTING", routing), "ROUTES", ""));
    CHECK(none.exit_code == 1);
    CHECK_THAT(none.output, Catch::Contains("has no route from host 'node-0' to host 'node-1'"));
    // One route each way (the default symmetrical="YES") is enough, and the run succeeds.
    auto ok = replay_on(dir, replace(replace(zone, "ROUTING", routing), "ROUTES",
                                     "    <route src=\"node-0\" dst=\"node-1\"><link_ctn id=\"l\"/></route>\n"));
    CHECK(ok.exit_code == 0);
    // Only one direction given: the way back is missing.
    auto one_way = replay_on(dir, replace(replace(zone, "ROUTING", routing), "ROUTES",
                                          "    <route src=\"node-0\" dst=\"node-1\" symmetrical=\"NO\">"
                                          "<link_ctn id=\"l\"/></route>\n"));
    CHECK(one_way.exit_code == 1);
    CHECK_THAT(one_way.output, Catch::Contains("to host 'node-0'"));
  }
}

TEST_CASE("bad --cfg: SimGrid settings that would abort, crash or hang are refused with their key", "[cli]")
{
  TempDir dir;
  write_pingpong(dir);
  const std::string xml = cluster(kGood);
  for (const char* cfg : {"network/model:nope", "network/model:ns-3", "surf/precision:-1", "surf/precision:0",
                          "maxmin/precision:-1", "contexts/factory:nope", "network/optim:nope", "cpu/optim:nope",
                          "cpu/model:nope", "host/model:nope", "contexts/stack-size:-1", "contexts/guard-size:-1",
                          "smpi/bw-factor:garbage", "smpi/lat-factor:0:-1", "network/maxmin-selective-update:no",
                          "cpu/maxmin-selective-update:0", "contexts/stack-size:1e30", "contexts/guard-size:1e30"}) {
    INFO(cfg);
    auto r = replay_on(dir, xml, std::string(" --cfg ") + cfg);
    CHECK(r.exit_code == 1);
    const std::string key = std::string(cfg).substr(0, std::string(cfg).find(':'));
    CHECK_THAT(r.output, Catch::Contains("key '" + key + "'"));
  }
  // Valid values of the same keys still run.
  for (const char* cfg : {"network/model:IB", "surf/precision:1e-8", "smpi/bw-factor:65472:0.94;0:0.81",
                          "network/optim:Full", "contexts/factory:thread"}) {
    INFO(cfg);
    CHECK(replay_on(dir, xml, std::string(" --cfg '") + cfg + "'").exit_code == 0);
  }
  // Selective update may be off where the solver recomputes everything anyway.
  CHECK(replay_on(dir, xml, " --cfg network/optim:Full --cfg network/maxmin-selective-update:no").exit_code == 0);
}
