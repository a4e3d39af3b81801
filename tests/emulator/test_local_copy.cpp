// Local copies inside collectives (docs/reference/collectives.md, "Local copies"): charged at the platform's
// gridcast:memcpy-time as CPU work before the messages, only where the platform has the property, and
// switched by --cfg gridcast/coll-local-copy.
#include "gridcast/emulator/collectives.hpp"
#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include "../models/models_support.hpp"

#include <catch2/catch.hpp>

using namespace gridcast;
using gridcast::test::TempDir;

namespace {

/// Host a (1 Gf, 2 cores: the two ranks each get a core) to itself through a FATPIPE loopback of 1 us and
/// 10 GB/s, factors 1 (SimGrid's own would apply otherwise), eager up to 4096 B; `memcpy` the value of
/// gridcast:memcpy-time, none when empty; `llc_bytes` host a's gridcast:llc-bytes, none when empty.
std::string loopback_xml(const std::string& memcpy, const std::string& llc_bytes = "")
{
  std::string props = "    <prop id=\"gridcast:lat-factor\" value=\"0:1\"/>\n"
                      "    <prop id=\"gridcast:bw-factor\" value=\"0:1\"/>\n"
                      "    <prop id=\"gridcast:eager-threshold\" value=\"4096\"/>\n";
  if (not memcpy.empty())
    props += "    <prop id=\"gridcast:memcpy-time\" value=\"" + memcpy + "\"/>\n";
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n  <zone id=\"root\" routing=\"Full\">\n" +
         props +
         "    <host id=\"a\" speed=\"1Gf\" core=\"2\">" +
         (llc_bytes.empty() ? std::string() : "<prop id=\"gridcast:llc-bytes\" value=\"" + llc_bytes + "\"/>") +
         "</host>\n"
         "    <link id=\"loop\" bandwidth=\"10GBps\" latency=\"1us\" sharing_policy=\"FATPIPE\"/>\n"
         "    <route src=\"a\" dst=\"a\"><link_ctn id=\"loop\"/></route>\n  </zone>\n</platform>\n";
}

/// Both ranks on host a run `call` once.
emulator::ReplayResult run_both(const TempDir& dir, const std::string& xml, const std::string& call,
                                const std::vector<std::string>& cfg = {})
{
  test::write_jsonl_profile(dir / "trace", {call, call});
  test::write_file(dir / "platform.xml", xml);
  emulator::ReplayOptions opts;
  opts.platform                 = dir / "platform.xml";
  opts.placement.ranks_per_host = 2;
  for (const std::string& c : cfg)
    emulator::apply_cfg(opts, c);
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  return emulator::replay(trace, opts);
}

/// 1 GB/s: 1 us per 1000 B, linear between the two points.
const std::string k1GBps = "1000:1e-06;1000000:0.001";
const std::string kAlltoall = "{\"op\":\"alltoall\",\"fn\":\"MPI_Alltoall\",\"bytes\":8000}\n";
constexpr double kExchange8000_s = 1e-6 + 8000 / 10e9;  // one 8000 B message on the loopback, alone (FATPIPE)

}  // namespace

// One simulation per TEST_CASE: SimGrid keeps per-process state between engines.
TEST_CASE("local copy: an np 2 alltoall copies its own block first, hand-computed", "[emulator][collectives]")
{
  // 8000 B per destination: MPICH's `linear` (one isend and one irecv with the peer). Each rank first
  // copies its own 8000 B block at 1 GB/s (8 us on its core), then both 8000 B messages cross the
  // loopback at once (FATPIPE: each alone).
  TempDir dir;
  auto r = run_both(dir, loopback_xml(k1GBps), kAlltoall);
  CHECK(r.makespan_s == Approx(8000 / 1e9 + kExchange8000_s).epsilon(1e-9));
  CHECK(r.local_copy_time == k1GBps);
  CHECK(r.collectives.at("alltoall").at("linear") == 1);
}

TEST_CASE("local copy: an np 2 Rabenseifner allreduce copies the whole buffer first, hand-computed",
          "[emulator][collectives]")
{
  // 16000 B: Rabenseifner (> 2048 B). Each rank copies 16000 B at 1 GB/s (16 us), then exchanges half the
  // buffer (8000 B) in the reduce-scatter and the other half in the allgather; no reduction work given.
  TempDir dir;
  auto r = run_both(dir, loopback_xml(k1GBps), "{\"op\":\"allreduce\",\"fn\":\"MPI_Allreduce\",\"bytes\":16000}\n");
  CHECK(r.makespan_s == Approx(16000 / 1e9 + 2 * kExchange8000_s).epsilon(1e-9));
  CHECK(r.collectives.at("allreduce").at("rabenseifner") == 1);
}

TEST_CASE("local copy: an np 2 gather copies at the root only, hand-computed", "[emulator][collectives]")
{
  // Root 0 copies its 8000 B block (8 us) before it posts the receive; rank 1's 8000 B send is a
  // rendezvous (above 4096 B), so it starts when the receive is posted.
  TempDir dir;
  auto r = run_both(dir, loopback_xml(k1GBps), "{\"op\":\"gather\",\"fn\":\"MPI_Gather\",\"bytes\":8000,\"root\":0}\n");
  CHECK(r.makespan_s == Approx(8000 / 1e9 + kExchange8000_s).epsilon(1e-9));
}

TEST_CASE("local copy: --cfg gridcast/coll-local-copy:off charges nothing", "[emulator][collectives]")
{
  TempDir dir;
  auto r = run_both(dir, loopback_xml(k1GBps), kAlltoall, {"gridcast/coll-local-copy:off"});
  CHECK(r.makespan_s == Approx(kExchange8000_s).epsilon(1e-9));
  CHECK(r.local_copy_time.empty());
}

TEST_CASE("local copy: a platform without gridcast:memcpy-time charges nothing", "[emulator][collectives]")
{
  TempDir dir;
  auto r = run_both(dir, loopback_xml(""), kAlltoall);
  CHECK(r.makespan_s == Approx(kExchange8000_s).epsilon(1e-9));
  CHECK(r.local_copy_time.empty());
}

TEST_CASE("local copy: coll-local-copy:on without the property is an error naming it", "[emulator][collectives]")
{
  TempDir dir;
  CHECK_THROWS_MATCHES(run_both(dir, loopback_xml(""), kAlltoall, {"gridcast/coll-local-copy:on"}), InputError,
                       Catch::Matchers::Predicate<InputError>([](const InputError& e) {
                         const std::string w = e.what();
                         return w.find("gridcast:memcpy-time") != std::string::npos &&
                                w.find("platform.xml") != std::string::npos;
                       }));
}

TEST_CASE("local copy: a property that is not a positive rate is an error naming it", "[emulator][collectives]")
{
  TempDir dir;
  CHECK_THROWS_MATCHES(run_both(dir, loopback_xml("1000:-3"), kAlltoall), InputError,
                       Catch::Matchers::Predicate<InputError>([](const InputError& e) {
                         return std::string(e.what()).find("gridcast:memcpy-time") != std::string::npos;
                       }));
}

TEST_CASE("local copy: the curve is proportional below its first point and keeps its last slope beyond",
          "[emulator][collectives]")
{
  const std::vector<platform::OverheadPoint> curve = {{1000, 1e-6}, {2000, 3e-6}, {4000, 5e-6}};
  CHECK(emulator::local_copy_seconds(curve, 0) == 0);
  CHECK(emulator::local_copy_seconds(curve, 500) == Approx(0.5e-6));
  CHECK(emulator::local_copy_seconds(curve, 1500) == Approx(2e-6));
  CHECK(emulator::local_copy_seconds(curve, 4000) == Approx(5e-6));
  CHECK(emulator::local_copy_seconds(curve, 8000) == Approx(9e-6));  // 1 us per 1000 B beyond 4000
  CHECK(emulator::local_copy_seconds({}, 8000) == 0);
}

TEST_CASE("local copy: --cfg gridcast/coll-local-copy takes auto, on or off", "[emulator][collectives]")
{
  emulator::ReplayOptions opts;
  CHECK_THROWS_AS(emulator::apply_cfg(opts, "gridcast/coll-local-copy:yes"), InputError);
  emulator::apply_cfg(opts, "gridcast/coll-local-copy:on");
  CHECK(opts.local_copy == emulator::LocalCopyMode::On);
  emulator::apply_cfg(opts, "gridcast/coll-local-copy:auto");
  CHECK(opts.local_copy == emulator::LocalCopyMode::Auto);
}

// Cold copies (docs/reference/collectives.md, "Cold copies"): past the node's last-level cache, at the out-of-cache
// rate of the curve's largest copy.
namespace {
/// 1 GB/s to 1 MB, then 4 MB in 8 ms: 0.5 GB/s out of cache (2 ns per byte at the largest copy).
const std::string kTwoRates = "1000:1e-06;1000000:0.001;4000000:0.008";
}  // namespace

TEST_CASE("cold copy: the cold rate is the largest copy's, never below the curve", "[emulator][collectives]")
{
  const auto curve = platform::parse_overhead_points(kTwoRates, "p.xml", "k");
  CHECK(emulator::local_cold_copy_seconds(curve, 8000) == Approx(16e-6));      // 8000 B at 2 ns/B
  CHECK(emulator::local_cold_copy_seconds(curve, 4000000) == Approx(8e-3));    // the largest copy itself
  // Beyond the largest copy the curve's own extrapolation (its last slope, 7 ms per 3 MB) is steeper than
  // 2 ns/B, and wins.
  CHECK(emulator::local_cold_copy_seconds(curve, 8000000) == Approx(8e-3 + 4e6 * 7e-3 / 3e6));
  CHECK(emulator::local_cold_copy_seconds(curve, 0) == 0);
  CHECK(emulator::local_cold_copy_seconds({}, 8000) == 0);
  // A curve whose largest copy is the fastest per byte: the curve point wins.
  const std::vector<platform::OverheadPoint> falling = {{1000, 4e-6}, {4000, 4e-6}};
  CHECK(emulator::local_cold_copy_seconds(falling, 1000) == Approx(4e-6));
}

TEST_CASE("cold copy: an alltoall whose node data fits the cache copies at the curve point", "[emulator][collectives]")
{
  // Each rank's buffers: 2 x 2 blocks of 8000 B = 32000 B; the node's two ranks: 64000 B, not more than
  // the 64000 B cache: the 8000 B copy at the curve (8 us), as without the property.
  TempDir dir;
  auto r = run_both(dir, loopback_xml(kTwoRates, "64000"), kAlltoall);
  CHECK(r.makespan_s == Approx(8000 / 1e9 + kExchange8000_s).epsilon(1e-9));
}

TEST_CASE("cold copy: an alltoall whose node data exceeds the cache copies at the out-of-cache rate",
          "[emulator][collectives]")
{
  // 64000 B of the node's buffers > 63999 B: the 8000 B copy at 2 ns/B, 16 us.
  TempDir dir;
  auto r = run_both(dir, loopback_xml(kTwoRates, "63999"), kAlltoall);
  CHECK(r.makespan_s == Approx(16e-6 + kExchange8000_s).epsilon(1e-9));
}

TEST_CASE("cold copy: an allreduce counts its send and receive buffers, both ranks of the node",
          "[emulator][collectives]")
{
  // 16000 B Rabenseifner: 2 x 16000 B per rank, 64000 B on the node > 63999 B: the 16000 B copy at 2 ns/B
  // (32 us instead of the curve's 16 us), then the two 8000 B exchanges.
  TempDir dir;
  auto r = run_both(dir, loopback_xml(kTwoRates, "63999"), "{\"op\":\"allreduce\",\"fn\":\"MPI_Allreduce\",\"bytes\":16000}\n");
  CHECK(r.makespan_s == Approx(32e-6 + 2 * kExchange8000_s).epsilon(1e-9));
}

TEST_CASE("cold copy: ranks of other hosts do not count towards a node's data", "[emulator][collectives]")
{
  // One rank per host (two hosts with the same 40000 B cache): each node holds 32000 B, under it.
  TempDir dir;
  const std::string xml =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n  <zone id=\"root\" routing=\"Full\">\n"
      "    <prop id=\"gridcast:lat-factor\" value=\"0:1\"/>\n    <prop id=\"gridcast:bw-factor\" value=\"0:1\"/>\n"
      "    <prop id=\"gridcast:eager-threshold\" value=\"4096\"/>\n"
      "    <prop id=\"gridcast:memcpy-time\" value=\"" + kTwoRates + "\"/>\n"
      "    <host id=\"a\" speed=\"1Gf\"><prop id=\"gridcast:llc-bytes\" value=\"40000\"/></host>\n"
      "    <host id=\"b\" speed=\"1Gf\"><prop id=\"gridcast:llc-bytes\" value=\"40000\"/></host>\n"
      "    <link id=\"ab\" bandwidth=\"10GBps\" latency=\"1us\" sharing_policy=\"FATPIPE\"/>\n"
      "    <route src=\"a\" dst=\"b\"><link_ctn id=\"ab\"/></route>\n  </zone>\n</platform>\n";
  test::write_jsonl_profile(dir / "trace", {kAlltoall, kAlltoall});
  test::write_file(dir / "platform.xml", xml);
  emulator::ReplayOptions opts;
  opts.platform                 = dir / "platform.xml";
  opts.placement.ranks_per_host = 1;
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  auto r = emulator::replay(trace, opts);
  CHECK(r.makespan_s == Approx(8000 / 1e9 + kExchange8000_s).epsilon(1e-9));
}

TEST_CASE("cold copy: a bad gridcast:llc-bytes is an error naming the property and the host",
          "[emulator][collectives]")
{
  TempDir dir;
  CHECK_THROWS_MATCHES(run_both(dir, loopback_xml(kTwoRates, "lots"), kAlltoall), InputError,
                       Catch::Matchers::Predicate<InputError>([](const InputError& e) {
                         const std::string w = e.what();
                         return w.find("gridcast:llc-bytes") != std::string::npos &&
                                w.find("host a") != std::string::npos && w.find("platform.xml") != std::string::npos;
                       }));
}

TEST_CASE("cold copy: NodeMap groups a communicator's ranks by node, in communicator order",
          "[emulator][collectives]")
{
  emulator::NodeMap nodes({0, 1, 0, 1, 2}, {100, 200, 100, 200, 0});
  emulator::Communicator world{0, {0, 1, 2, 3, 4}, 0, 1};
  CHECK(nodes.node_ranks(world, 2) == std::vector<int>{0, 2});
  CHECK(nodes.node_ranks(world, 3) == std::vector<int>{1, 3});
  CHECK(nodes.node_ranks(world, 4) == std::vector<int>{4});
  emulator::Communicator odd{7, {3, 4, 1}, 2, 3};  // world ranks 3, 4, 1 as communicator ranks 0, 1, 2
  CHECK(nodes.node_ranks(odd, 1) == std::vector<int>{0, 2});
  CHECK(nodes.cache_bytes(1) == 200);
  CHECK(nodes.cache_bytes(4) == 0);
  CHECK_THROWS(emulator::NodeMap({0, 1}, {100}));
}

TEST_CASE("cold copy: a replay on the committed this-machine platform writes identical outputs twice",
          "[emulator][collectives][cli]")
{
  // 16 MiB alltoall at np 2 (8 MiB per destination): the node's buffers (64 MiB) exceed the platform's
  // gridcast:llc-bytes, so the copy is cold; two runs give the same prediction.json bytes.
  TempDir dir;
  const std::string call = "{\"op\":\"alltoall\",\"fn\":\"MPI_Alltoall\",\"bytes\":8388608}\n";
  test::write_jsonl_profile(dir / "trace", {call, call});
  const std::string args = "replay '" + (dir / "trace").string() + "' --platform '" + std::string(GRIDCAST_SOURCE_DIR) +
                           "/platforms/this-machine/platform.xml' --ranks-per-host 2 --no-timeline --out ";
  auto first = test::run_gridcast(args + "'" + (dir / "out1").string() + "'");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  auto second = test::run_gridcast(args + "'" + (dir / "out2").string() + "'");
  REQUIRE(second.exit_code == 0);
  CHECK(test::read_file(dir / "out1" / "prediction.json") == test::read_file(dir / "out2" / "prediction.json"));
}
