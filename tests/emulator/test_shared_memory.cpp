// The shared-memory loopback model: a calibration's shared capacity becomes a SHARED memory-bus link on
// every CPU host's loopback route, beside the per-flow FATPIPE loopback; two opposite transfers then
// share the capacity, while a lone one keeps its calibrated ping-pong time.
#include "../platform/platform_support.hpp"
#include "../models/models_support.hpp"

#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/calibration/calibration.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace gridcast;
using namespace gridcast::test;
using gridcast::test::expect_input_error;

namespace {

constexpr double kBaseLat = 1e-6;  // base loopback latency
constexpr double kBaseBw  = 10e9;  // base loopback bandwidth
constexpr double kBus     = 12e9;  // capacity concurrent transfers share

platform::Calibration calibration(bool with_bus)
{
  platform::Calibration c;
  c.host.name                = "calhost";
  c.host.date                = "2026-11-22";
  c.compute.core_speed_flops = 1e9;
  platform::NetworkCalibration n;
  n.latency_s             = kBaseLat;
  n.bandwidth_Bps         = kBaseBw;
  n.eager_threshold_bytes = 4096;
  n.lat_factor            = {{0, 1.0}, {65536, 2.0}};
  n.bw_factor             = {{0, 1.0}, {65536, 0.5}, {1048576, 0.9}};
  n.shared_bandwidth_Bps  = with_bus ? kBus : 0;
  c.network               = n;
  return c;
}

/// One node, no GPU, no NIC: its CPU host and the loopback route only.
json node_spec()
{
  json k = pcie_kind(0, false);
  k.erase("loopback");
  k.erase("pcie");
  return spec_json(k, 1);
}

std::string sendrecv(std::uint64_t bytes)
{
  std::string b = std::to_string(bytes);
  return "{\"op\":\"sendrecv\",\"fn\":\"MPI_Sendrecv\",\"peer\":\"PEER\",\"tag\":3,\"bytes\":" + b +
         ",\"src\":\"PEER\",\"recv_tag\":3,\"recv_bytes\":" + b + "}\n";
}

std::string for_rank(std::string records, int rank)
{
  const std::string peer = std::to_string(1 - rank);
  for (auto at = records.find("\"PEER\""); at != std::string::npos; at = records.find("\"PEER\""))
    records.replace(at, 6, peer);
  return records;
}

/// Replays `records` on both ranks of node-0 of the platform made from node_spec() and `cal`.
emulator::ReplayResult replay_pair(const TempDir& dir, const platform::Calibration& cal, const std::string& records)
{
  platform::PlatformModel m = build(node_spec(), &cal);
  write_file(dir / "platform.xml", platform::render_xml(m));
  write_jsonl_profile(dir / "trace", {for_rank(records, 0), for_rank(records, 1)});
  emulator::ReplayOptions opts;
  opts.platform = dir / "platform.xml";
  opts.placement.ranks_per_host = 2;
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  return emulator::replay(trace, opts);
}

}  // namespace

TEST_CASE("shared memory: the calibrated capacity is a SHARED link on the loopback route", "[calibrate][platform]")
{
  platform::Calibration cal = calibration(true);
  platform::PlatformModel m = build(node_spec(), &cal);
  REQUIRE(m.links.size() == 2);
  CHECK(m.links[0].name == "node-0.loopback");
  CHECK(m.links[0].sharing == platform::Sharing::Fatpipe);
  CHECK(m.links[0].bandwidth_Bps == kBaseBw);
  CHECK(m.links[0].latency_s == kBaseLat);
  CHECK(m.links[1].name == "node-0.memory-bus");
  CHECK(m.links[1].sharing == platform::Sharing::Shared);
  // Written 5% wide: SimGrid's cross-traffic charges each loopback flow 1.05 of its rate there.
  CHECK(m.links[1].bandwidth_Bps == Approx(kBus * platform::kCrossTrafficWeight));
  CHECK(m.links[1].latency_s == 0);
  REQUIRE(m.routes.size() == 1);
  CHECK(m.routes[0].src == "node-0");
  CHECK(m.routes[0].dst == "node-0");
  REQUIRE(m.routes[0].links.size() == 2);
  CHECK(m.routes[0].links[0].link == 0);
  CHECK(m.routes[0].links[1].link == 1);
  Loaded loaded(m);
  double latency = 0;
  auto links = loaded.route("node-0", "node-0", &latency);
  std::sort(links.begin(), links.end());  // SimGrid lists a route's links in its own order
  CHECK(links == std::vector<std::string>{"node-0.loopback", "node-0.memory-bus"});
  CHECK(latency == Approx(kBaseLat));

  // Without a shared capacity (older calibrations, other specs) the loopback is the FATPIPE link alone.
  platform::Calibration plain = calibration(false);
  platform::PlatformModel p   = build(node_spec(), &plain);
  REQUIRE(p.links.size() == 1);
  CHECK(p.links[0].name == "node-0.loopback");
  // A spec may give the capacity itself; one without a bandwidth and no calibration names the key.
  json s = node_spec();
  s["node_kinds"]["k"]["loopback"]   = link_json("8GBps", "0.4us");
  s["node_kinds"]["k"]["memory_bus"] = json{{"bandwidth", "20GBps"}};
  platform::PlatformModel given      = build(s);
  REQUIRE(given.links.size() == 2);
  CHECK(given.links[1].bandwidth_Bps == Approx(20e9 * platform::kCrossTrafficWeight));
  s["node_kinds"]["k"]["memory_bus"] = json{{"latency", "0.1us"}};
  auto e = expect_input_error([&] { build(s); });
  CHECK(e.context().key == "node_kinds.k.memory_bus.bandwidth");
}

TEST_CASE("shared memory: two opposite transfers share the bus, hand-computed", "[calibrate][platform]")
{
  // Both ranks MPI_Sendrecv 64 KiB, then 8 MiB (rendezvous: each transfer starts at once, both posted).
  // SimGrid applies a flow's bandwidth factor bf(n) to every link of its route: each of the two flows
  // runs at bf(n) * min(B, C/2), B the FATPIPE loopback alone, C the bus they divide (C/2 = 6 GB/s):
  //   64 KiB: L*2 + 65536 / (0.5 * 6e9);   8 MiB: L*2 + 8 MiB / (0.9 * 6e9)
  TempDir dir;
  auto r = replay_pair(dir, calibration(true), sendrecv(65536) + sendrecv(8u << 20));
  const double expected =
      (kBaseLat * 2 + 65536 / (0.5 * kBus / 2)) + (kBaseLat * 2 + (8u << 20) / (0.9 * kBus / 2));
  CHECK(r.makespan_s == Approx(expected).epsilon(1e-6));
  CHECK(r.bw_factor == "0:1;65536:0.5;1048576:0.9");
}

TEST_CASE("shared memory: a lone transfer keeps its ping-pong time under the bus", "[calibrate][platform]")
{
  // One way only (rank 0 sends 8 MiB, rank 1 receives): 0.9 * min(B, C) = 9 GB/s: L*2 + 8 MiB / 9e9.
  TempDir dir;
  platform::PlatformModel m = build(node_spec(), [] {
    static platform::Calibration c = calibration(true);
    return &c;
  }());
  write_file(dir / "platform.xml", platform::render_xml(m));
  const std::string b = std::to_string(8u << 20);
  write_jsonl_profile(dir / "trace",
                      {"{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":0,\"bytes\":" + b + "}\n",
                       "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":0,\"bytes\":" + b + "}\n"});
  emulator::ReplayOptions opts;
  opts.platform       = dir / "platform.xml";
  opts.placement.ranks_per_host = 2;
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  auto r = emulator::replay(trace, opts);
  CHECK(r.makespan_s == Approx(kBaseLat * 2 + (8u << 20) / (0.9 * kBaseBw)).epsilon(1e-6));
}
