// Calibration factors carried by a platform reach SimGrid's network model: a ping-pong on a hand-written
// platform takes latency*lf + bytes/(bandwidth*bf) per message, with the factors of its size segment.
#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include "../models/models_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gridcast;
using namespace gridcast::emulator;
using gridcast::test::TempDir;

namespace {

constexpr double kLinkLat = 10e-6;  // the link below
constexpr double kLinkBw  = 1e9;

/// Two hosts joined by one link; `props` go on the root zone.
std::string two_hosts_xml(const std::string& props, const std::string& sharing = "SHARED")
{
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n  <zone id=\"root\" routing=\"Full\">\n" +
         props +
         "    <host id=\"a\" speed=\"1Gf\"/>\n    <host id=\"b\" speed=\"1Gf\"/>\n"
         "    <link id=\"l\" bandwidth=\"1GBps\" latency=\"10us\" sharing_policy=\"" +
         sharing + "\"/>\n    <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n  </zone>\n</platform>\n";
}

const std::string kProps = "    <prop id=\"gridcast:lat-factor\" value=\"0:2;1000:3.5\"/>\n"
                           "    <prop id=\"gridcast:bw-factor\" value=\"0:0.5;1000:0.25\"/>\n"
                           "    <prop id=\"gridcast:eager-threshold\" value=\"4096\"/>\n"
                           "    <prop id=\"gridcast:calibration\" value=\"box 2026-11-22\"/>\n";

std::string pingpong_rank(int rank, std::uint64_t bytes)
{
  std::string peer = std::to_string(1 - rank), b = std::to_string(bytes);
  std::string send = "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":" + peer + ",\"tag\":0,\"bytes\":" + b + "}\n";
  std::string recv = "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":" + peer + ",\"tag\":0,\"bytes\":" + b + "}\n";
  return rank == 0 ? send + recv : recv + send;
}

ReplayResult pingpong(const TempDir& dir, const std::string& xml, std::uint64_t bytes,
                      std::vector<std::string> cfg = {})
{
  test::write_jsonl_profile(dir / "trace", {pingpong_rank(0, bytes), pingpong_rank(1, bytes)});
  test::write_file(dir / "platform.xml", xml);
  ReplayOptions opts;
  opts.platform = dir / "platform.xml";
  for (const auto& c : cfg)
    apply_cfg(opts, c);
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  return replay(trace, opts);
}

}  // namespace

TEST_CASE("calibration factors: a small ping-pong takes the first segment's factors", "[calibrate]")
{
  TempDir dir;
  // SMPI's network model (gridcast's default), cross-traffic off so that the lone flow is not slowed
  // by its own acknowledgements (SimGrid adds 5% of reverse traffic on shared links otherwise).
  auto r = pingpong(dir, two_hosts_xml(kProps), 100, {"network/crosstraffic:0"});
  REQUIRE(r.makespan_s == Approx(2 * (kLinkLat * 2 + 100 / (kLinkBw * 0.5))).epsilon(1e-9));
  CHECK(r.lat_factor == "0:2;1000:3.5");
  CHECK(r.bw_factor == "0:0.5;1000:0.25");
  CHECK(r.calibration == "box 2026-11-22");
  CHECK(r.eager_threshold_bytes == 4096);
  CHECK(r.eager_threshold_source == "platform");
}

TEST_CASE("calibration factors: a segment applies from its min_bytes up", "[calibrate]")
{
  TempDir dir;
  auto r = pingpong(dir, two_hosts_xml(kProps), 1000, {"network/crosstraffic:0"});
  REQUIRE(r.makespan_s == Approx(2 * (kLinkLat * 3.5 + 1000 / (kLinkBw * 0.25))).epsilon(1e-9));
}

// One simulation per TEST_CASE: SimGrid keeps per-process state between engines.
TEST_CASE("calibration factors: a large ping-pong takes the last segment's factors", "[calibrate]")
{
  TempDir dir;
  auto r = pingpong(dir, two_hosts_xml(kProps), 1000000, {"network/crosstraffic:0"});
  REQUIRE(r.makespan_s == Approx(2 * (kLinkLat * 3.5 + 1e6 / (kLinkBw * 0.25))).epsilon(1e-9));
}

TEST_CASE("calibration factors: on a FATPIPE link cross-traffic changes nothing", "[calibrate]")
{
  TempDir dir;
  auto r = pingpong(dir, two_hosts_xml(kProps, "FATPIPE"), 1000000);
  REQUIRE(r.makespan_s == Approx(2 * (kLinkLat * 3.5 + 1e6 / (kLinkBw * 0.25))).epsilon(1e-9));
}

TEST_CASE("calibration factors: without properties nothing is installed", "[calibrate]")
{
  TempDir dir;
  auto r = pingpong(dir, two_hosts_xml(""), 1000000, {"network/model:CM02", "network/crosstraffic:0"});
  REQUIRE(r.makespan_s == Approx(2 * (kLinkLat + 1e6 / kLinkBw)).epsilon(1e-9));
  CHECK(r.lat_factor.empty());
  CHECK(r.eager_threshold_bytes == 65536);
  CHECK(r.eager_threshold_source == "default");
}

TEST_CASE("calibration factors: --cfg sets the eager threshold over the platform's", "[calibrate]")
{
  TempDir dir;
  auto r = pingpong(dir, two_hosts_xml(kProps), 100, {"gridcast/eager-threshold:1KiB"});
  CHECK(r.eager_threshold_bytes == 1024);
  CHECK(r.eager_threshold_source == "cfg");
}

TEST_CASE("calibration factors: bad properties name the platform file and the property", "[calibrate]")
{
  TempDir dir;
  auto e = test::expect_input_error([&] {
    pingpong(dir, two_hosts_xml("    <prop id=\"gridcast:bw-factor\" value=\"0:1;10:zero\"/>\n"), 100);
  });
  CHECK(e.context().file == (dir / "platform.xml").string());
  CHECK(e.context().key == "gridcast:bw-factor");
}

TEST_CASE("calibration factors: a bad eager threshold names the property", "[calibrate]")
{
  TempDir dir;
  auto e = test::expect_input_error([&] {
    pingpong(dir, two_hosts_xml("    <prop id=\"gridcast:eager-threshold\" value=\"4k\"/>\n"), 100);
  });
  CHECK(e.context().file == (dir / "platform.xml").string());
  CHECK(e.context().key == "gridcast:eager-threshold");
}

TEST_CASE("calibration factors: prediction.json records that they were used", "[calibrate]")
{
  TempDir dir;
  test::write_jsonl_profile(dir / "trace", {pingpong_rank(0, 100), pingpong_rank(1, 100)});
  test::write_file(dir / "platform.xml", two_hosts_xml(kProps));
  auto r = test::run_gridcast("replay " + (dir / "trace").string() + " --platform " + (dir / "platform.xml").string() +
                              " --out " + (dir / "out").string() + " --no-timeline");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(test::read_file(dir / "out" / "prediction.json"));
  CHECK(j["calibration"]["factors_used"] == true);
  CHECK(j["calibration"]["lat_factor"] == "0:2;1000:3.5");
  CHECK(j["calibration"]["eager_threshold_from"] == "platform");
  CHECK(j["config"]["eager_threshold_bytes"] == 4096);
}
