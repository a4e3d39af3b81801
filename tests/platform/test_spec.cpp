#include "platform_support.hpp"

#include "gridcast/foundation/errors.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

using namespace gridcast;
using namespace gridcast::test;

namespace {

/// The InputError message of building `spec` (with `cal`), or "no error".
std::string error_of(const json& spec, const platform::Calibration* cal = nullptr)
{
  try {
    build(spec, cal);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("spec: unknown keys are rejected with their key path", "[platform][spec]")
{
  json s                                     = spec_json(pcie_kind(2), 2, {{"topology", "star"}});
  s["node_kinds"]["k"]["pcie"]["root"]["bw"] = "1GBps";
  CHECK_THAT(error_of(s), Catch::Contains("spec.json") && Catch::Contains("node_kinds.k.pcie.root.bw") &&
                              Catch::Contains("unknown key"));
  json t         = spec_json(pcie_kind(2), 2, {{"topology", "star"}});
  t["colour"]    = "blue";
  CHECK_THAT(error_of(t), Catch::Contains("colour") && Catch::Contains("unknown key"));
}

TEST_CASE("spec: units that do not parse and zero bandwidths name the key", "[platform][spec]")
{
  json s                                 = spec_json(pcie_kind(2), 1, nullptr);
  s["node_kinds"]["k"].erase("nics");
  s["node_kinds"]["k"]["gpus"]["speed"] = "10 TFLOPS";
  CHECK_THAT(error_of(s), Catch::Contains("node_kinds.k.gpus.speed") && Catch::Contains("unknown unit"));
  s["node_kinds"]["k"]["gpus"]["speed"]                 = "10Tf";
  s["node_kinds"]["k"]["pcie"]["device_up"]["bandwidth"] = "0GBps";
  CHECK_THAT(error_of(s), Catch::Contains("node_kinds.k.pcie.device_up.bandwidth") &&
                              Catch::Contains("must be positive"));
  s["node_kinds"]["k"]["pcie"]["device_up"]["bandwidth"] = 13e9;  // a bare number: no unit guessed
  CHECK_THAT(error_of(s), Catch::Contains("node_kinds.k.pcie.device_up.bandwidth") &&
                              Catch::Contains("expected a string with a unit"));
}

TEST_CASE("spec: a figure in neither spec nor calibration names the key, the calibration fills it",
          "[platform][spec]")
{
  json k = pcie_kind(0, false);
  k.erase("core_speed");
  k.erase("loopback");
  json s = spec_json(k, 1);
  CHECK_THAT(error_of(s), Catch::Contains("node_kinds.k.core_speed") && Catch::Contains("--calibration"));
  platform::Calibration cal = calibration();
  platform::PlatformModel m = build(s, &cal);
  REQUIRE(m.hosts.size() == 1);
  CHECK(m.hosts[0].speed_flops == 2.5e9);
  CHECK(m.hosts[0].cores == 8);
  REQUIRE(m.links.size() == 1);  // no GPU, no NIC: the CPU host and its loopback only
  CHECK(m.links[0].name == "node-0.loopback");
  CHECK(m.links[0].bandwidth_Bps == 7.5e9);
  CHECK(m.links[0].latency_s == 4e-7);
  cal.network.reset();
  CHECK_THAT(error_of(s, &cal), Catch::Contains("node_kinds.k.loopback.bandwidth") && Catch::Contains("calhost"));
}

TEST_CASE("spec: a calibration's factors become root-zone properties", "[platform][spec]")
{
  platform::Calibration cal = calibration();
  platform::PlatformModel m = build(spec_json(pcie_kind(0, false), 1), &cal);
  auto prop                 = [&](const std::string& name) { return zone_property(m, name); };
  CHECK(prop("gridcast:lat-factor") == "0:1.5;4096:2");
  CHECK(prop("gridcast:bw-factor") == "0:0.5;65536:0.9");
  CHECK(prop("gridcast:eager-threshold") == "4096");
  CHECK(prop("gridcast:calibration") == "calhost 2026-11-22");
  CHECK(prop("gridcast:platform") == "test");
  CHECK(prop("gridcast:memcpy-time") == "(absent)");  // neither a STREAM figure nor a reduction curve
  // A copy moves 2 bytes of memory traffic per byte copied, the triad's rate counts traffic.
  cal.compute.stream_triad_Bps = {2e10, 1.9e10, 2.1e10, 5};
  CHECK(zone_property(build(spec_json(pcie_kind(0, false), 1), &cal), "gridcast:memcpy-time") ==
        "1048576:0.0001048576;1073741824:0.1073741824");
  // A reduction curve (3 streams) wins: 2/3 of its times.
  cal.compute.reduction = {{1024, {3e-7, 3e-7, 3e-7, 3}}, {1048576, {6e-4, 6e-4, 6e-4, 3}}};
  const auto copy = platform::parse_overhead_points(
      zone_property(build(spec_json(pcie_kind(0, false), 1), &cal), "gridcast:memcpy-time"), "p.xml", "k");
  REQUIRE(copy.size() == 2);
  CHECK(copy[0].bytes == 1024);
  CHECK(copy[0].time_s == Approx(2e-7));
  CHECK(copy[1].bytes == 1048576);
  CHECK(copy[1].time_s == Approx(4e-4));
  // A measured memcpy curve wins over both, taken as it is (one core, source just written).
  cal.compute.memcpy = {{1024, {1e-8, 1e-8, 1e-8, 3}}, {2048, {2e-8, 2e-8, 2e-8, 3}}, {4096, {5e-8, 5e-8, 5e-8, 3}}};
  cal.compute.memcpy_all_cores = {{1024, {9e-8, 9e-8, 9e-8, 3}}};  // recorded, not what is charged
  CHECK(zone_property(build(spec_json(pcie_kind(0, false), 1), &cal), "gridcast:memcpy-time") ==
        "1024:1e-08;2048:2e-08;4096:5e-08");
  platform::PlatformModel plain = build(spec_json(pcie_kind(0, false), 1));
  for (const auto& p : plain.zone_properties)
    CHECK(p.name.rfind("gridcast:lat", 0) == std::string::npos);
}

TEST_CASE("spec: GPU counts that do not match the fabric", "[platform][spec]")
{
  json k          = pcie_kind(4);
  k["nics"]       = {{"count", 2}, {"attach", "gpu"}, {"link", link_json("100Gbps", "1us")}};
  CHECK_THAT(error_of(spec_json(k, 2, {{"topology", "star"}})),
             Catch::Contains("node_kinds.k.nics.count") && Catch::Contains("4 GPUs"));
  json n    = pcie_kind(4, false);
  n["nvlink"] = {{"topology", "pairwise"}, {"link", link_json("75GBps", "1us")}, {"pairs", {{0, 1}, {2, 4}}}};
  CHECK_THAT(error_of(spec_json(n, 1)), Catch::Contains("node_kinds.k.nvlink.pairs[1]") && Catch::Contains("4 GPUs"));
  json w = pcie_kind(0, false);
  w["nvlink"] = {{"topology", "nvswitch"}, {"link", link_json("450GBps", "1us")}};
  CHECK_THAT(error_of(spec_json(w, 1)), Catch::Contains("NVLink without GPUs"));
}

TEST_CASE("spec: topology parameters must multiply out to the endpoints", "[platform][spec]")
{
  json ft = {{"topology", "fat_tree"}, {"link", link_json("100Gbps", "0.2us")},
             {"fat_tree", {{"down", {4, 3}}, {"up", {1, 2}}}}};
  CHECK_THAT(error_of(spec_json(pcie_kind(1), 10, ft)),
             Catch::Contains("network.fat_tree.down") && Catch::Contains("12 endpoints") &&
                 Catch::Contains("has 10"));
  json torus = {{"topology", "torus"}, {"link", link_json("100Gbps", "0.2us")}, {"torus", {{"dims", {3, 3}}}}};
  CHECK_THAT(error_of(spec_json(pcie_kind(1), 8, torus)), Catch::Contains("network.torus.dims"));
  json df = {{"topology", "dragonfly"}, {"link", link_json("100Gbps", "0.2us")},
             {"dragonfly", {{"groups", 3}, {"routers_per_group", 2}, {"endpoints_per_router", 2}}}};
  CHECK_THAT(error_of(spec_json(pcie_kind(1), 8, df)), Catch::Contains("network.dragonfly"));
  CHECK_THAT(error_of(spec_json(pcie_kind(1, false), 3)), Catch::Contains("need a network"));
  json wrong = {{"topology", "hypercube"}};
  CHECK_THAT(error_of(spec_json(pcie_kind(1), 2, wrong)), Catch::Contains("network.topology"));
}

TEST_CASE("spec: read_spec names the file of bad JSON", "[platform][spec]")
{
  TempDir dir;
  write_file(dir / "bad.json", "{ \"name\": ");
  try {
    platform::read_spec(dir / "bad.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("bad.json") && Catch::Contains("invalid JSON"));
  }
}

namespace {

/// A memcpy curve 1 KiB x 2^k up to `sizes` points with `per_byte_s(bytes)` seconds per byte.
std::vector<platform::OverheadPoint> curve_of(int sizes, const std::function<double(std::uint64_t)>& per_byte_s)
{
  std::vector<platform::OverheadPoint> c;
  for (int k = 0; k < sizes; ++k) {
    const std::uint64_t b = std::uint64_t{1024} << k;
    c.push_back({b, per_byte_s(b) * static_cast<double>(b)});
  }
  return c;
}

constexpr std::uint64_t kMiB = 1024 * 1024;

/// The value of `name` on the platform's first (CPU) host, or "(absent)".
std::string host_property(const platform::PlatformModel& m, const std::string& name)
{
  for (const auto& p : m.hosts.at(0).properties)
    if (p.name == name)
      return p.value;
  return "(absent)";
}

}  // namespace

TEST_CASE("cache knee: a step curve gives the bytes its first out-of-cache copy touches", "[platform][cache]")
{
  // 1 ps/B up to 8 MiB, 2 ps/B at 16 MiB (exactly half the out-of-cache level), 4 ps/B beyond: the knee is
  // the 16 MiB copy, which touches 32 MiB (source and destination).
  auto c = curve_of(17, [](std::uint64_t b) { return b <= 8 * kMiB ? 1e-12 : b == 16 * kMiB ? 2e-12 : 4e-12; });
  REQUIRE(c.back().bytes == 64 * kMiB);
  CHECK(platform::cache_bytes_from_memcpy(c) == 32 * kMiB);
  // An L2 step below changes nothing: only the step up to the out-of-cache level counts.
  auto l2 = curve_of(17, [](std::uint64_t b) { return b <= 256 * 1024 ? 0.5e-12 : b <= 8 * kMiB ? 1e-12 : b == 16 * kMiB ? 2e-12 : 4e-12; });
  CHECK(platform::cache_bytes_from_memcpy(l2) == 32 * kMiB);
}

TEST_CASE("cache knee: between two sizes the knee is interpolated in log2 of the size", "[platform][cache]")
{
  // 3 ps/B at 16 MiB: half the level (2 ps/B) is reached half way from 8 MiB (1 ps/B) to 16 MiB, at
  // 8 MiB x sqrt(2); twice that, in whole KiB.
  auto c = curve_of(17, [](std::uint64_t b) { return b <= 8 * kMiB ? 1e-12 : b == 16 * kMiB ? 3e-12 : 4e-12; });
  const auto expected = static_cast<std::uint64_t>(2 * 8 * 1024 * std::sqrt(2.0)) * 1024;
  CHECK(platform::cache_bytes_from_memcpy(c) == expected);
  // A little slower at 16 MiB moves the capacity a little, not by a factor 2 (continuous in the data).
  auto d = curve_of(17, [](std::uint64_t b) { return b <= 8 * kMiB ? 1e-12 : b == 16 * kMiB ? 3.1e-12 : 4e-12; });
  CHECK(*platform::cache_bytes_from_memcpy(d) < expected);
  CHECK(*platform::cache_bytes_from_memcpy(d) > expected * 9 / 10);
}

TEST_CASE("cache knee: no knee on a flat curve, a short one or a bad one", "[platform][cache]")
{
  CHECK_FALSE(platform::cache_bytes_from_memcpy(curve_of(17, [](std::uint64_t) { return 1e-12; })).has_value());
  // A cache at most 2x faster than main memory is not told apart from it.
  CHECK_FALSE(platform::cache_bytes_from_memcpy(curve_of(17, [](std::uint64_t b) { return b <= 8 * kMiB ? 2.1e-12 : 4e-12; }))
                  .has_value());
  CHECK_FALSE(platform::cache_bytes_from_memcpy({{1024, 1e-9}, {2048, 1e-6}}).has_value());
  CHECK_FALSE(platform::cache_bytes_from_memcpy({{1024, 1e-9}, {2048, 0}, {4096, 1e-6}}).has_value());
  CHECK_FALSE(platform::cache_bytes_from_memcpy({{2048, 1e-9}, {1024, 1e-9}, {4096, 1e-6}}).has_value());
}

TEST_CASE("cache knee: this machine's committed memcpy curve shows its 32 MiB L3 within the curve's resolution",
          "[platform][cache]")
{
  // lscpu: L3 32 MiB (one instance), L2 2 x 1 MiB. The curve's step is 2x, so the estimate is within 2x.
  const platform::Calibration cal =
      platform::read_calibration(std::string(GRIDCAST_SOURCE_DIR) + "/platforms/this-machine/calibration.json");
  std::vector<platform::OverheadPoint> c;
  for (const auto& t : cal.compute.memcpy)
    c.push_back({t.bytes, t.time_s.median});
  const auto knee = platform::cache_bytes_from_memcpy(c);
  REQUIRE(knee.has_value());
  CHECK(*knee > 16 * kMiB);
  CHECK(*knee < 64 * kMiB);
}

TEST_CASE("spec: the node's last-level cache, given or from the calibration's memcpy knee", "[platform][spec][cache]")
{
  json k = pcie_kind(0, false);
  CHECK(host_property(build(spec_json(k, 1)), "gridcast:llc-bytes") == "(absent)");
  k["llc"] = "32MiB";
  CHECK(host_property(build(spec_json(k, 1)), "gridcast:llc-bytes") == "33554432");
  // From the calibration's memcpy curve where the spec does not say; the spec wins where it does.
  platform::Calibration cal = calibration();
  for (const auto& p : curve_of(17, [](std::uint64_t b) { return b <= 8 * kMiB ? 1e-12 : b == 16 * kMiB ? 2e-12 : 4e-12; }))
    cal.compute.memcpy.push_back({p.bytes, {p.time_s, p.time_s, p.time_s, 3}});
  CHECK(host_property(build(spec_json(k, 1), &cal), "gridcast:llc-bytes") == "33554432");
  k["llc"] = "1GiB";
  CHECK(host_property(build(spec_json(k, 1), &cal), "gridcast:llc-bytes") == "1073741824");
  k.erase("llc");
  CHECK(host_property(build(spec_json(k, 1), &cal), "gridcast:llc-bytes") == "33554432");
  // Bad values name the key.
  k["llc"] = "32 furlongs";
  CHECK_THAT(error_of(spec_json(k, 1)), Catch::Contains("node_kinds.k.llc"));
  k["llc"] = "0MiB";
  CHECK_THAT(error_of(spec_json(k, 1)), Catch::Contains("node_kinds.k.llc") && Catch::Contains("positive"));
}
