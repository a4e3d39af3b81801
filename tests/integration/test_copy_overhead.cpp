// The copy overhead of shared-memory messages (calibration version 2, docs/guides/calibration.md): its schema,
// its property syntax, its fit from the exchange and ping-pong curves, and what the emulator charges.
#include "gridcast/calibrate/measure.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/calibration/calibration.hpp"

#include "../models/models_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using namespace gridcast;
using gridcast::test::expect_input_error;
using gridcast::test::TempDir;

namespace {

platform::Stat stat(double v)
{
  return {v, v, v, 3};
}

nlohmann::json v2_json()
{
  platform::Calibration c;
  c.host                     = platform::HostInfo{"box", "cpu", "2026-11-22T10:00:00Z", "0.1.0", 2, 0.1};
  c.compute.dgemm_flops      = stat(1e10);
  c.compute.stream_triad_Bps = stat(1e10);
  c.compute.scalar_flops     = stat(1e9);
  c.compute.core_speed_flops = 1e10;
  platform::NetworkCalibration n;
  n.launcher      = "mpirun";
  n.latency_s     = 1e-7;
  n.bandwidth_Bps = 1e10;
  n.lat_factor    = {{0, 1.0}};
  n.bw_factor     = {{0, 1.0}};
  n.pingpong      = {{1, stat(3e-7)}, {1024, stat(5e-7)}};
  n.copy_overhead = {{1, 1e-7}, {1024, 2.5e-7}, {65536, 0.0}};
  c.network       = n;
  return nlohmann::json::parse(platform::to_json(c).dump());
}

// Ping-pong and exchange of a synthetic machine: one-way 1 us + n / 10 GB/s; an exchange costs `extra`
// more up to 64 KiB and the same as the one-way time beyond (sizes 1 B to 16 MiB, powers of two).
struct Curves {
  std::vector<platform::PingPongPoint> pingpong;
  std::vector<platform::SizedTiming> exchange;
};
Curves curves(double extra)
{
  Curves c;
  for (std::uint64_t n = 1; n <= (16u << 20); n *= 2) {
    double t = 1e-6 + static_cast<double>(n) / 1e10;
    c.pingpong.push_back({n, stat(t)});
    c.exchange.push_back({n, stat(n <= 65536 ? t + extra : t)});
  }
  return c;
}

/// Hosts a (2 cores) and b; a to itself through a FATPIPE loopback of 1 us and 10 GB/s, a to b through a
/// link of 10 us and 1 GB/s. Factors 1 (so that SMPI's own do not apply), overhead `overhead`.
std::string platform_xml(const std::string& overhead)
{
  std::string props = "    <prop id=\"gridcast:lat-factor\" value=\"0:1\"/>\n"
                      "    <prop id=\"gridcast:bw-factor\" value=\"0:1\"/>\n"
                      "    <prop id=\"gridcast:eager-threshold\" value=\"4096\"/>\n";
  if (not overhead.empty())
    props += "    <prop id=\"gridcast:copy-overhead\" value=\"" + overhead + "\"/>\n";
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n  <zone id=\"root\" routing=\"Full\">\n" +
         props +
         "    <host id=\"a\" speed=\"1Gf\" core=\"2\"/>\n    <host id=\"b\" speed=\"1Gf\" core=\"2\"/>\n"
         "    <link id=\"loop\" bandwidth=\"10GBps\" latency=\"1us\" sharing_policy=\"FATPIPE\"/>\n"
         "    <link id=\"l\" bandwidth=\"1GBps\" latency=\"10us\" sharing_policy=\"FATPIPE\"/>\n"
         "    <route src=\"a\" dst=\"a\"><link_ctn id=\"loop\"/></route>\n"
         "    <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n  </zone>\n</platform>\n";
}

std::string record(const std::string& op, int peer, std::uint64_t bytes)
{
  std::string fn = op == "send" ? "MPI_Send" : "MPI_Recv";
  return "{\"op\":\"" + op + "\",\"fn\":\"" + fn + "\",\"peer\":" + std::to_string(peer) +
         ",\"tag\":0,\"bytes\":" + std::to_string(bytes) + "}\n";
}

std::string sendrecv(int peer, std::uint64_t bytes)
{
  std::string p = std::to_string(peer), b = std::to_string(bytes);
  return "{\"op\":\"sendrecv\",\"fn\":\"MPI_Sendrecv\",\"peer\":" + p + ",\"tag\":3,\"bytes\":" + b + ",\"src\":" + p +
         ",\"recv_tag\":3,\"recv_bytes\":" + b + "}\n";
}

emulator::ReplayResult run(const TempDir& dir, const std::string& xml, const std::vector<std::string>& ranks,
                           int ranks_per_host)
{
  test::write_jsonl_profile(dir / "trace", ranks);
  test::write_file(dir / "platform.xml", xml);
  emulator::ReplayOptions opts;
  opts.platform                 = dir / "platform.xml";
  opts.placement.ranks_per_host = ranks_per_host;
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  return emulator::replay(trace, opts);
}

constexpr double kO = 2e-6;  // the overhead of the emulator tests, every size

}  // namespace

TEST_CASE("copy overhead: calibration.json version 2 carries it, version 1 is still read", "[calibrate]")
{
  nlohmann::json j = v2_json();
  CHECK(j["version"] == 2);
  platform::Calibration c = platform::calibration_from_json(j, "cal.json");
  REQUIRE(c.network->copy_overhead.size() == 3);
  CHECK(c.network->copy_overhead[1].bytes == 1024);
  CHECK(c.network->copy_overhead[1].time_s == 2.5e-7);
  CHECK(nlohmann::json::parse(platform::to_json(c).dump()) == j);

  nlohmann::json v1 = j;
  v1["version"]     = 1;
  v1["network"].erase("copy_overhead");
  CHECK(platform::calibration_from_json(v1, "cal.json").network->copy_overhead.empty());
  v1["network"]["copy_overhead"] = j["network"]["copy_overhead"];
  auto e = expect_input_error([&] { platform::calibration_from_json(v1, "cal.json"); });
  CHECK(e.context().key == "network.copy_overhead");

  nlohmann::json bad = j;
  bad["network"]["copy_overhead"][1]["time_s"] = -1e-7;
  CHECK(expect_input_error([&] { platform::calibration_from_json(bad, "cal.json"); }).context().key ==
        "network.copy_overhead[1].time_s");
  bad                                         = j;
  bad["network"]["copy_overhead"][2]["bytes"] = 1024;
  CHECK(expect_input_error([&] { platform::calibration_from_json(bad, "cal.json"); }).context().key ==
        "network.copy_overhead[2].bytes");
  bad                                         = j;
  bad["network"]["copy_overhead"][0]["width"] = 1;
  CHECK(expect_input_error([&] { platform::calibration_from_json(bad, "cal.json"); }).context().key ==
        "network.copy_overhead[0].width");
}

TEST_CASE("copy overhead: the property syntax and the interpolation", "[calibrate]")
{
  auto points = platform::parse_overhead_points("100:1e-07;300:3e-07;400:0", "p.xml", "gridcast:copy-overhead");
  REQUIRE(points.size() == 3);
  CHECK(platform::format_overhead_points(points) == "100:1e-07;300:3e-07;400:0");
  CHECK(platform::overhead_for(points, 1) == 1e-7);    // below the first size: the first value
  CHECK(platform::overhead_for(points, 200) == Approx(2e-7));
  CHECK(platform::overhead_for(points, 350) == Approx(1.5e-7));
  CHECK(platform::overhead_for(points, 1e9) == 0);     // beyond the last: the last value
  CHECK(platform::overhead_for({}, 100) == 0);
  for (const char* text : {"", "100", "x:1", "100:-1", "100:1;50:1", "100:1;;200:1", "100:nan"}) {
    auto e = expect_input_error([&] { platform::parse_overhead_points(text, "p.xml", "gridcast:copy-overhead"); });
    CHECK(e.context().file == "p.xml");
    CHECK(e.context().key == "gridcast:copy-overhead");
  }
}

TEST_CASE("copy overhead: fitted as exchange minus ping-pong on the latency-dominated sizes", "[calibrate]")
{
  // One-way 1 us + n/1e10: the transfer is 90% of the time from n = 90 000 B, so sizes up to 64 KiB
  // are latency-dominated and get exchange - ping-pong = 0.3 us; 128 KiB, the first other size, 0.
  Curves c = curves(0.3e-6);
  calibrate::NetworkFit base = calibrate::fit_network(c.pingpong);
  auto o = calibrate::fit_copy_overhead(base, c.pingpong, c.exchange);
  REQUIRE(o.size() == 18);  // 1 B .. 64 KiB, then 128 KiB
  for (std::size_t i = 0; i + 1 < o.size(); ++i) {
    CHECK(o[i].bytes == (std::uint64_t{1} << i));
    CHECK(o[i].time_s == Approx(0.3e-6));
  }
  CHECK(o.back().bytes == 131072);
  CHECK(o.back().time_s == 0);

  // The factors model the rest: model + overhead gives back the ping-pong within the fit's 2%.
  calibrate::NetworkModel m = calibrate::fit_network_model(c.pingpong, c.exchange);
  REQUIRE(m.copy_overhead.size() == 18);
  for (const auto& p : c.pingpong) {
    double n = static_cast<double>(p.bytes);
    CHECK(calibrate::model_time_s(m.fit, n) + platform::overhead_for(m.copy_overhead, n) ==
          Approx(p.one_way_s.median).epsilon(0.02));
  }
  CHECK(m.fit.latency_s == Approx(0.7e-6).epsilon(0.01));  // 1 us less the overhead

  // One noisy size does not make an overhead (median of three), and no overhead exceeds half the
  // one-way time.
  Curves spike = curves(0);
  spike.exchange[5].time_s = stat(spike.exchange[5].time_s.median * 3);
  CHECK(calibrate::fit_copy_overhead(base, spike.pingpong, spike.exchange).empty());
  Curves big = curves(5e-6);
  auto capped = calibrate::fit_copy_overhead(base, big.pingpong, big.exchange);
  REQUIRE_FALSE(capped.empty());
  CHECK(capped[0].time_s == Approx(0.5 * big.pingpong[0].one_way_s.median));
  // Without an exchange curve: no overhead, the plain fit.
  calibrate::NetworkModel plain = calibrate::fit_network_model(c.pingpong, {});
  CHECK(plain.copy_overhead.empty());
  CHECK(plain.shared_bandwidth_Bps == 0);
  CHECK(plain.fit.latency_s == base.latency_s);
}

TEST_CASE("copy overhead: a ping-pong pays it once per one-way trip, hand-computed", "[calibrate]")
{
  // Both ranks on host a: each trip is 1 us + 1000 B / 10 GB/s on the loopback, then o on the
  // receiver's (and the sender's) timeline; the reply leaves once the receive has completed.
  TempDir dir;
  auto r = run(dir, platform_xml("0:2e-06"),
               {record("send", 1, 1000) + record("recv", 1, 1000), record("recv", 0, 1000) + record("send", 0, 1000)}, 2);
  CHECK(r.makespan_s == Approx(2 * (1e-6 + 1000 / 10e9 + kO)).epsilon(1e-9));
  CHECK(r.copy_overhead == "0:2e-06");
}

TEST_CASE("copy overhead: an exchange pays it twice per rank, hand-computed", "[calibrate]")
{
  // Both ranks MPI_Sendrecv 1000 B (eager) then 8000 B (rendezvous) at once: each transfer takes
  // 1 us + n / 10 GB/s (FATPIPE: alone), then each rank pays o for the message it sent and o for the
  // one it received, one after the other.
  TempDir dir;
  auto r = run(dir, platform_xml("0:2e-06"), {sendrecv(1, 1000) + sendrecv(1, 8000), sendrecv(0, 1000) + sendrecv(0, 8000)}, 2);
  CHECK(r.makespan_s == Approx((1e-6 + 1000 / 10e9 + 2 * kO) + (1e-6 + 8000 / 10e9 + 2 * kO)).epsilon(1e-9));
}

TEST_CASE("copy overhead: messages between hosts pay nothing", "[calibrate]")
{
  TempDir dir;
  const std::vector<std::string> ranks = {record("send", 1, 1000) + record("recv", 1, 1000),
                                          record("recv", 0, 1000) + record("send", 0, 1000)};
  auto across = run(dir, platform_xml("0:2e-06"), ranks, 1);  // rank 0 on a, rank 1 on b
  CHECK(across.makespan_s == Approx(2 * (10e-6 + 1000 / 1e9)).epsilon(1e-9));
}

// One simulation per TEST_CASE: SimGrid keeps per-process state between engines.
TEST_CASE("copy overhead: a platform without it charges nothing", "[calibrate]")
{
  TempDir dir;
  const std::vector<std::string> ranks = {record("send", 1, 1000) + record("recv", 1, 1000),
                                          record("recv", 0, 1000) + record("send", 0, 1000)};
  auto plain = run(dir, platform_xml(""), ranks, 2);
  CHECK(plain.makespan_s == Approx(2 * (1e-6 + 1000 / 10e9)).epsilon(1e-9));
  CHECK(plain.copy_overhead.empty());
}

TEST_CASE("copy overhead: gridcast calibrate --refit brings a version-1 file to version 2", "[calibrate]")
{
  // A version-1 calibration of the synthetic curves (no overhead, factors of the plain fit).
  nlohmann::json j = v2_json();
  j["version"]     = 1;
  Curves c         = curves(0.3e-6);
  calibrate::NetworkFit base = calibrate::fit_network(c.pingpong);
  nlohmann::json pp = nlohmann::json::array(), ex = nlohmann::json::array();
  for (const auto& p : c.pingpong)
    pp.push_back({{"bytes", p.bytes}, {"one_way_s", {{"median", p.one_way_s.median}, {"min", p.one_way_s.min},
                                                     {"max", p.one_way_s.max}, {"repetitions", 3}}}});
  for (const auto& p : c.exchange)
    ex.push_back({{"bytes", p.bytes}, {"time_s", {{"median", p.time_s.median}, {"min", p.time_s.min},
                                                  {"max", p.time_s.max}, {"repetitions", 3}}}});
  j["network"]["pingpong"]  = pp;
  j["network"]["exchange"]  = ex;
  j["network"]["latency_s"] = base.latency_s;
  j["network"].erase("copy_overhead");
  TempDir dir;
  test::write_file(dir / "v1.json", j.dump(2));
  auto r = test::run_gridcast("calibrate --refit '" + (dir / "v1.json").string() + "' -o '" + (dir / "v2.json").string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  platform::Calibration v2 = platform::read_calibration(dir / "v2.json");
  CHECK(v2.version == 2);
  CHECK(v2.network->copy_overhead.size() == 18);
  CHECK(v2.network->latency_s == Approx(0.7e-6).epsilon(0.01));
  CHECK(v2.network->pingpong.size() == c.pingpong.size());  // the measurements are kept as they were
  CHECK(v2.host.name == "box");
  // The fit depends on the curves alone: fitting the result again gives the same bytes.
  auto again = test::run_gridcast("calibrate --refit '" + (dir / "v2.json").string() + "' -o '" +
                                  (dir / "v2b.json").string() + "'");
  REQUIRE(again.exit_code == 0);
  CHECK(test::read_file(dir / "v2.json") == test::read_file(dir / "v2b.json"));
  // Measuring options do not go with --refit.
  auto bad = test::run_gridcast("calibrate --refit '" + (dir / "v1.json").string() + "' --no-gpu -o x.json");
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("--refit measures nothing") != std::string::npos);
}

namespace {

// A ping-pong curve shaped like this machine's (Open MPI vader: inline sends to 256 B, eager to 4 KiB
// with a steep 2-4 KiB stretch, rendezvous beyond with 1.2 us of handshake and 13 GB/s), each size's
// median scaled by 1 +- `noise` drawn from mt19937 (its output is fixed by the standard) seeded with
// `seed`; the exchange is 1.3 times the one-way time while latency matters. By construction the
// transfer is 89.4% of the rendezvous line at 128 KiB and 92.6% at 192 KiB.
Curves noisy_curves(unsigned seed, double noise)
{
  std::mt19937 gen(seed);
  auto jitter = [&] { return 1.0 + noise * (2.0 * static_cast<double>(gen()) / 4294967295.0 - 1.0); };
  Curves c;
  std::vector<std::uint64_t> sizes;  // calibrate's: powers of two and their midpoints, 1 B to 64 MiB
  for (std::uint64_t p = 1; p <= (64u << 20); p *= 2) {
    sizes.push_back(p);
    if (p >= 2 && p + p / 2 <= (64u << 20))
      sizes.push_back(p + p / 2);
  }
  for (std::uint64_t n : sizes) {
      const double b = static_cast<double>(n);
      double t       = n <= 256 ? 0.35e-6 + b / 20e9
                     : n <= 2048 ? 0.62e-6 + b / 16e9
                     : n < 4096  ? 0.75e-6 + (b - 2048) * 3.6e-10  // a line through 0 (nearly): the trap
                                 : 1.2e-6 + b / 13e9;
      c.pingpong.push_back({n, stat(t * jitter())});
      c.exchange.push_back({n, stat((n < 196608 ? 1.3 * t : 1.1 * t) * jitter())});
    }
  return c;
}

}  // namespace

TEST_CASE("copy overhead: the cut to transfer-dominated sizes withstands noisy curves", "[calibrate]")
{
  // The 2-3 KiB stretch fitted alone is a line with almost no intercept, which a test of one size at a
  // time calls transfer-dominated; the boundary must still land at 128-256 KiB for every seed.
  int single_size_wrong = 0;
  for (unsigned seed = 1; seed <= 200; ++seed) {
    Curves c                   = noisy_curves(seed, 0.015);
    calibrate::NetworkFit base = calibrate::fit_network(c.pingpong);
    std::vector<std::uint64_t> sizes;
    for (const auto& p : c.pingpong)
      sizes.push_back(p.bytes);
    const std::uint64_t from = calibrate::transfer_dominated_from(base, sizes);
    INFO("seed " << seed);
    CHECK(from >= 131072);
    CHECK(from <= 262144);
    auto o = calibrate::fit_copy_overhead(base, c.pingpong, c.exchange);
    REQUIRE_FALSE(o.empty());
    CHECK(o.back().bytes == from);
    CHECK(o.back().time_s == 0);
    for (std::size_t i = 0; i + 1 < o.size(); ++i)  // every size below the cut keeps its overhead
      CHECK(o[i].time_s > 0);
    for (std::uint64_t n : sizes)  // what the test of one size at a time would have said
      if (calibrate::transfer_share(base, static_cast<double>(n)) >= 0.9) {
        single_size_wrong += n < 131072 ? 1 : 0;
        break;
      }
  }
  // The trap is real: a test of one size at a time (the fit before) cuts below 128 KiB on most seeds.
  CHECK(single_size_wrong > 100);
}

TEST_CASE("copy overhead: the boundary is the step that fits the per-size verdicts best", "[calibrate]")
{
  // A hand-made fit: lf 1, bf 1 (L = 1 us, B = 1 GB/s: 90% transfer from 9000 B) with a segment where
  // lf is 0.001 (1000-1999 B: looks transfer-dominated, 2 sizes) before 4 latency-dominated sizes.
  calibrate::NetworkFit f;
  f.latency_s     = 1e-6;
  f.bandwidth_Bps = 1e9;
  f.lat_factor    = {{0, 1.0}, {1000, 0.001}, {2000, 1.0}};
  f.bw_factor     = {{0, 1.0}};
  const std::vector<std::uint64_t> sizes{100,   500,   1000,  1500,  2000,  3000,  4000,
                                         6000,  8000,  10000, 20000, 40000, 80000, 160000};
  CHECK(calibrate::transfer_share(f, 1500) > 0.9);
  CHECK(calibrate::transfer_share(f, 8000) < 0.9);
  CHECK(calibrate::transfer_dominated_from(f, sizes) == 10000);
  // One latency-dominated size inside the tail changes nothing; a run of them longer than the part of
  // the tail before it moves the boundary past it.
  f.lat_factor = {{0, 1.0}, {40000, 100.0}, {50000, 1.0}};
  CHECK(calibrate::transfer_share(f, 40000) < 0.9);
  CHECK(calibrate::transfer_dominated_from(f, sizes) == 10000);
  f.lat_factor = {{0, 1.0}, {20000, 100.0}, {60000, 1.0}};  // 10000 alone, then 20000 and 40000
  CHECK(calibrate::transfer_dominated_from(f, sizes) == 80000);
  // The last sizes latency-dominated: the tail before them still wins.
  f.lat_factor = {{0, 1.0}, {80000, 100.0}};
  CHECK(calibrate::transfer_dominated_from(f, sizes) == 10000);
  // Nothing transfer-dominated: 0 (no cut); everything: the first size.
  f.lat_factor = {{0, 1000.0}};
  CHECK(calibrate::transfer_dominated_from(f, sizes) == 0);
  f.lat_factor = {{0, 1e-6}};
  CHECK(calibrate::transfer_dominated_from(f, sizes) == 100);
}
