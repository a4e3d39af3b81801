// calibration.json: strict reading, deterministic writing, SMPI factor strings.
#include "../foundation/foundation_support.hpp"

#include "gridcast/calibrate/measure.hpp"
#include "gridcast/calibration/calibration.hpp"

#include <string>

using namespace gridcast;
using namespace gridcast::platform;
using gridcast::test::expect_input_error;
using gridcast::test::read_file;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

Stat stat(double median, int reps = 5)
{
  return Stat{median, median * 0.9, median * 1.2, reps};
}

Calibration sample(bool with_network, bool with_gpu)
{
  Calibration c;
  c.host                     = HostInfo{"box", "Some CPU @ 2.0GHz", "2026-11-22T10:00:00Z", "0.1.0", 2, 0.25};
  c.compute.dgemm_flops      = stat(2.5e10);
  c.compute.stream_triad_Bps = stat(1.2e10);
  c.compute.scalar_flops     = stat(1.1e9);
  c.compute.core_speed_flops = 2.5e10;
  if (with_network) {
    NetworkCalibration n;
    n.launcher              = "mpirun --allow-run-as-root";
    n.latency_s             = 4.5e-7;
    n.bandwidth_Bps         = 6.0e9;
    n.eager_threshold_bytes = 4096;
    n.lat_factor            = {{0, 1.0}, {4096, 3.25}};
    n.bw_factor             = {{0, 0.5}, {4096, 0.8}, {1048576, 0.9}};
    n.pingpong              = {{1, stat(5e-7)}, {2, stat(5.1e-7)}, {4194304, stat(9e-4)}};
    n.collectives           = {{"allreduce", 2, 8, stat(1e-6)}, {"bcast", 2, 1048576, stat(2e-4)}};
    c.network               = n;
  }
  if (with_gpu) {
    GpuCalibration g;
    g.source       = "datasheet";
    g.device_name  = "NVIDIA H100 80GB HBM3";
    g.device_count = 1;
    g.memory_bytes = 85e9;
    g.speed_flops  = 6.7e13;
    g.h2d_pinned   = {1e-5, 5.5e10};
    g.d2h_pinned   = {1e-5, 5.5e10};
    g.h2d_pageable = {2e-5, 2e10};
    g.d2h_pageable = {2e-5, 2e10};
    g.d2d          = {5e-6, 2e12};
    g.kernel_launch_s       = 3e-6;
    g.malloc_s              = 1e-4;
    g.free_s                = 5e-5;
    g.host_alloc_s_per_byte = 2e-10;
    c.gpu                   = g;
  }
  return c;
}

nlohmann::json sample_json()
{
  return nlohmann::json::parse(to_json(sample(true, true)).dump());
}

}  // namespace

TEST_CASE("calibration.json round-trips through write and read", "[calibrate]")
{
  TempDir dir;
  for (bool net : {false, true})
    for (bool gpu : {false, true}) {
      Calibration c = sample(net, gpu);
      write_calibration(dir / "c.json", c);
      Calibration back = read_calibration(dir / "c.json");
      CHECK(back.host.name == "box");
      CHECK(back.host.cores == 2);
      CHECK(back.host.load_average == 0.25);
      CHECK(back.compute.dgemm_flops.median == 2.5e10);
      CHECK(back.compute.scalar_flops.max == c.compute.scalar_flops.max);
      CHECK(back.compute.stream_triad_Bps.repetitions == 5);
      CHECK(back.network.has_value() == net);
      CHECK(back.gpu.has_value() == gpu);
      if (net) {
        CHECK(back.network->eager_threshold_bytes == 4096);
        REQUIRE(back.network->bw_factor.size() == 3);
        CHECK(back.network->bw_factor[2].min_bytes == 1048576);
        CHECK(back.network->bw_factor[2].factor == 0.9);
        REQUIRE(back.network->pingpong.size() == 3);
        CHECK(back.network->pingpong[2].one_way_s.median == 9e-4);
        REQUIRE(back.network->collectives.size() == 2);
        CHECK(back.network->collectives[1].op == "bcast");
      }
      if (gpu) {
        CHECK(back.gpu->device_name == "NVIDIA H100 80GB HBM3");
        CHECK(back.gpu->d2d.bandwidth_Bps == 2e12);
        CHECK(back.gpu->p2p.bandwidth_Bps == 0);
      }
      // Writing what was read gives the same bytes: the output is deterministic.
      write_calibration(dir / "again.json", back);
      CHECK(read_file(dir / "c.json") == read_file(dir / "again.json"));
    }
}

TEST_CASE("calibration.json rejects unknown keys with their path", "[calibrate]")
{
  nlohmann::json j = sample_json();
  j["network"]["pingpong"][1]["colour"] = "red";
  auto e = expect_input_error([&] { calibration_from_json(j, "cal.json"); });
  CHECK(e.context().file == "cal.json");
  CHECK(e.context().key == "network.pingpong[1].colour");
  CHECK(e.reason() == "unknown key (allowed here: bytes, one_way_s)");  // the shared reader lists the allowed keys

  j = sample_json();
  j["extra"] = 1;
  CHECK(expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key == "extra");
  j = sample_json();
  j["gpu"]["d2d"]["speed"] = 1;
  CHECK(expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key == "gpu.d2d.speed");
}

TEST_CASE("calibration.json checks format and version", "[calibrate]")
{
  nlohmann::json j = sample_json();
  j["version"]     = 3;
  auto e           = expect_input_error([&] { calibration_from_json(j, "cal.json"); });
  CHECK(e.context().key == "version");
  CHECK(e.reason().find("unsupported version 3") != std::string::npos);

  j = sample_json();
  j.erase("version");
  CHECK(expect_input_error([&] { calibration_from_json(j, "cal.json"); }).reason() == "missing required key");
  j           = sample_json();
  j["format"] = "gridcast-profile";
  CHECK(expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key == "format");
}

TEST_CASE("calibration.json rejects bad values with their path", "[calibrate]")
{
  auto key_of = [](nlohmann::json j) {
    return expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key;
  };
  nlohmann::json j                  = sample_json();
  j["network"]["bandwidth_Bps"]     = 0;
  CHECK(key_of(j) == "network.bandwidth_Bps");
  j                                 = sample_json();
  j["compute"]["dgemm_flops"]["min"] = 1e20;  // min above the median
  CHECK(key_of(j) == "compute.dgemm_flops");
  j                                          = sample_json();
  j["compute"]["scalar_flops"]["repetitions"] = 0;
  CHECK(key_of(j) == "compute.scalar_flops.repetitions");
  j                                        = sample_json();
  j["network"]["lat_factor"][0]["min_bytes"] = 10;
  CHECK(key_of(j) == "network.lat_factor[0].min_bytes");
  j                                       = sample_json();
  j["network"]["bw_factor"][2]["min_bytes"] = 4096;  // not ascending
  CHECK(key_of(j) == "network.bw_factor[2].min_bytes");
  j                                    = sample_json();
  j["network"]["bw_factor"][1]["factor"] = -1;
  CHECK(key_of(j) == "network.bw_factor[1].factor");
  j                                          = sample_json();
  j["network"]["eager_threshold_bytes"] = -5;
  CHECK(key_of(j) == "network.eager_threshold_bytes");
  j                  = sample_json();
  j["gpu"]["source"] = "guess";
  CHECK(key_of(j) == "gpu.source");
  j = sample_json();
  j["host"].erase("cores");
  CHECK(key_of(j) == "host.cores");
  j                    = sample_json();
  j["network"]["pingpong"][2]["bytes"] = 1;
  CHECK(key_of(j) == "network.pingpong[2].bytes");
}

TEST_CASE("read_calibration names the file on bad JSON", "[calibrate]")
{
  TempDir dir;
  write_file(dir / "bad.json", "{\"format\": ");
  auto e = expect_input_error([&] { read_calibration(dir / "bad.json"); });
  CHECK(e.context().file == (dir / "bad.json").string());
  CHECK(e.reason().find("invalid JSON") == 0);
  CHECK(expect_input_error([&] { read_calibration(dir / "missing.json"); }).reason().find("cannot open") == 0);
}

TEST_CASE("GPU data sheets default their source and are checked", "[calibrate]")
{
  nlohmann::json g = sample_json()["gpu"];
  g.erase("source");
  GpuCalibration gpu = gpu_calibration_from_json(g, "sheet.json", "");
  CHECK(gpu.source == "datasheet");
  CHECK(gpu.kernel_launch_s == 3e-6);
  g["kernel_launch_s"] = "3us";
  auto e               = expect_input_error([&] { gpu_calibration_from_json(g, "sheet.json", ""); });
  CHECK(e.context().key == "kernel_launch_s");
  CHECK(e.context().file == "sheet.json");
}

TEST_CASE("SMPI factor strings format and parse", "[calibrate]")
{
  std::vector<FactorSegment> s = {{0, 1.5}, {4096, 0.25}, {65536, 0.123456789012345}};
  std::string text             = format_factor_segments(s);
  CHECK(text == "0:1.5;4096:0.25;65536:0.123456789012345");
  auto back = parse_factor_segments(text, "p.xml", "gridcast:bw-factor");
  REQUIRE(back.size() == 3);
  CHECK(back[2].factor == s[2].factor);
  CHECK(back[1].min_bytes == 4096);
  CHECK(parse_factor_segments("0:2;", "p.xml", "k").size() == 1);

  CHECK(factor_for(s, 0) == 1.5);
  CHECK(factor_for(s, 4095) == 1.5);
  CHECK(factor_for(s, 4096) == 0.25);
  CHECK(factor_for(s, 1e9) == s[2].factor);
  CHECK(factor_for({}, 10) == 1);

  for (std::string bad : {"", "5:1", "0:1;0:2", "0:1;10:0", "0:x", "0:1;;8:2", "a:1", "0:-2"}) {
    auto e = expect_input_error([&] { parse_factor_segments(bad, "p.xml", "gridcast:lat-factor"); });
    CHECK(e.context().file == "p.xml");
    CHECK(e.context().key == "gridcast:lat-factor");
  }
}

TEST_CASE("calibration.json: the exchange curve and the shared capacity round-trip and are checked",
          "[calibrate]")
{
  TempDir dir;
  Calibration c                  = sample(true, false);
  c.network->exchange            = {{1, stat(7e-7)}, {4194304, stat(1.2e-3)}};
  c.network->shared_bandwidth_Bps = 7.5e9;
  write_calibration(dir / "c.json", c);
  Calibration back = read_calibration(dir / "c.json");
  REQUIRE(back.network->exchange.size() == 2);
  CHECK(back.network->exchange[1].bytes == 4194304);
  CHECK(back.network->exchange[1].time_s.median == 1.2e-3);
  CHECK(back.network->shared_bandwidth_Bps == 7.5e9);
  write_calibration(dir / "again.json", back);
  CHECK(read_file(dir / "c.json") == read_file(dir / "again.json"));
  // Both are optional: a calibration without them (older files) reads with none, and writes none.
  Calibration old = read_calibration([&] {
    write_calibration(dir / "old.json", sample(true, false));
    return dir / "old.json";
  }());
  CHECK(old.network->exchange.empty());
  CHECK(old.network->shared_bandwidth_Bps == 0);
  CHECK(read_file(dir / "old.json").find("shared_bandwidth_Bps") == std::string::npos);

  auto key_of = [](const nlohmann::json& j) {
    return expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key;
  };
  nlohmann::json j = nlohmann::json::parse(to_json(c).dump());
  j["network"]["shared_bandwidth_Bps"] = 0;
  CHECK(key_of(j) == "network.shared_bandwidth_Bps");
  j["network"]["shared_bandwidth_Bps"] = -3e9;
  CHECK(key_of(j) == "network.shared_bandwidth_Bps");
  j["network"]["shared_bandwidth_Bps"] = "fast";
  CHECK(key_of(j) == "network.shared_bandwidth_Bps");
  j                                     = nlohmann::json::parse(to_json(c).dump());
  j["network"]["exchange"][1]["bytes"]  = 1;  // not ascending
  CHECK(key_of(j) == "network.exchange[1].bytes");
  j                                     = nlohmann::json::parse(to_json(c).dump());
  j["network"]["exchange"][0]["one_way_s"] = j["network"]["exchange"][0]["time_s"];  // wrong name
  CHECK(key_of(j) == "network.exchange[0].one_way_s");
  j                                     = nlohmann::json::parse(to_json(c).dump());
  j["network"]["exchange"][0]["time_s"]["min"] = 1.0;  // above the median
  CHECK(key_of(j) == "network.exchange[0].time_s");
  j                        = nlohmann::json::parse(to_json(c).dump());
  j["network"]["exchange"] = 5;
  CHECK(key_of(j) == "network.exchange");
}

TEST_CASE("calibration.json: the reduction curve round-trips and is checked", "[calibrate]")
{
  TempDir dir;
  Calibration c       = sample(false, false);
  c.compute.reduction = {{1024, stat(2e-8)}, {16777216, stat(1.1e-3)}};
  write_calibration(dir / "c.json", c);
  Calibration back = read_calibration(dir / "c.json");
  REQUIRE(back.compute.reduction.size() == 2);
  CHECK(back.compute.reduction[1].bytes == 16777216);
  CHECK(back.compute.reduction[1].time_s.median == 1.1e-3);
  write_calibration(dir / "again.json", back);
  CHECK(read_file(dir / "c.json") == read_file(dir / "again.json"));
  CHECK(read_calibration([&] {
          write_calibration(dir / "old.json", sample(false, false));
          return dir / "old.json";
        }())
            .compute.reduction.empty());

  auto key_of = [](const nlohmann::json& j) {
    return expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key;
  };
  nlohmann::json j                       = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["reduction"][0]["bytes"]  = 0;
  CHECK(key_of(j) == "compute.reduction[0].bytes");
  j                                      = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["reduction"][1]["bytes"]  = 1024;
  CHECK(key_of(j) == "compute.reduction[1].bytes");
  j = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["reduction"][0]["time_s"] = {{"median", 0}, {"min", 0}, {"max", 0}, {"repetitions", 3}};
  CHECK(key_of(j) == "compute.reduction[0].time_s");
  j                                      = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["reduction"][0]["flops"]  = 1;
  CHECK(key_of(j) == "compute.reduction[0].flops");
}

TEST_CASE("calibration.json: the memcpy curves round-trip and are checked", "[calibrate]")
{
  TempDir dir;
  Calibration c              = sample(false, false);
  c.compute.memcpy           = {{1024, stat(6e-9)}, {2048, stat(1e-8)}};
  c.compute.memcpy_all_cores = {{1024, stat(7e-9)}, {2048, stat(1.2e-8)}};
  write_calibration(dir / "c.json", c);
  Calibration back = read_calibration(dir / "c.json");
  REQUIRE(back.compute.memcpy.size() == 2);
  REQUIRE(back.compute.memcpy_all_cores.size() == 2);
  CHECK(back.compute.memcpy[1].time_s.median == 1e-8);
  CHECK(back.compute.memcpy_all_cores[0].time_s.median == 7e-9);
  write_calibration(dir / "again.json", back);
  CHECK(read_file(dir / "c.json") == read_file(dir / "again.json"));
  CHECK(back.compute.reduction.empty());  // each curve optional on its own

  auto key_of = [](const nlohmann::json& j) {
    return expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key;
  };
  nlohmann::json j                              = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["memcpy_all_cores"][1]["bytes"]  = 1024;
  CHECK(key_of(j) == "compute.memcpy_all_cores[1].bytes");
  j                                             = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["memcpy"][0]["time_s"] = {{"median", 0}, {"min", 0}, {"max", 0}, {"repetitions", 3}};
  CHECK(key_of(j) == "compute.memcpy[0].time_s");
  j                                       = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["memcpy"][0]["copiers"]    = 2;
  CHECK(key_of(j) == "compute.memcpy[0].copiers");
  j                                       = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["memcpy_one_core"]         = j["compute"]["memcpy"];
  CHECK(key_of(j) == "compute.memcpy_one_core");
}

TEST_CASE("calibrate: the memcpy curve, alone and with two copiers at once, has every size", "[calibrate]")
{
  // Shape only (no timing assertion): sizes 1 KiB x 2^k up to the maximum, positive medians, one
  // progress call per size, the same sizes with two copiers (threads pinned to cores 0 and 1 when the
  // machine has them; pinning to an absent core is refused by the OS and the copier runs anyway).
  for (int copiers : {1, 2}) {
    int calls = 0;
    auto curve = gridcast::calibrate::measure_memcpy(16384, 2, copiers, [&](std::uint64_t) { ++calls; });
    REQUIRE(curve.size() == 5);
    CHECK(calls == 5);
    for (std::size_t i = 0; i < curve.size(); ++i) {
      CHECK(curve[i].bytes == (std::uint64_t{1024} << i));
      CHECK(curve[i].time_s.median > 0);
      CHECK(curve[i].time_s.repetitions == 2);
    }
  }
}

TEST_CASE("calibration.json: the rate by working set round-trips and is checked", "[calibrate]")
{
  TempDir dir;
  Calibration c                 = sample(false, false);
  c.compute.rate_by_working_set = {{16384, stat(8e9)}, {4194304, stat(7.5e9)}, {134217728, stat(3e9)}};
  write_calibration(dir / "c.json", c);
  Calibration back = read_calibration(dir / "c.json");
  REQUIRE(back.compute.rate_by_working_set.size() == 3);
  CHECK(back.compute.rate_by_working_set[2].bytes == 134217728);
  CHECK(back.compute.rate_by_working_set[2].flops.median == 3e9);
  write_calibration(dir / "again.json", back);
  CHECK(read_file(dir / "c.json") == read_file(dir / "again.json"));
  write_calibration(dir / "old.json", sample(false, false));  // files before it: no curve, still read
  CHECK(read_calibration(dir / "old.json").compute.rate_by_working_set.empty());

  auto key_of = [](const nlohmann::json& j) {
    return expect_input_error([&] { calibration_from_json(j, "cal.json"); }).context().key;
  };
  nlohmann::json j = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["rate_by_working_set"][0]["bytes"] = 0;
  CHECK(key_of(j) == "compute.rate_by_working_set[0].bytes");
  j = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["rate_by_working_set"][1]["bytes"] = 16384;
  CHECK(key_of(j) == "compute.rate_by_working_set[1].bytes");
  j = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["rate_by_working_set"][1]["flops"] = {{"median", 0}, {"min", 0}, {"max", 0}, {"repetitions", 3}};
  CHECK(key_of(j) == "compute.rate_by_working_set[1].flops");
  j = nlohmann::json::parse(to_json(c).dump());
  j["compute"]["rate_by_working_set"][1]["time_s"] = 1;
  CHECK(key_of(j) == "compute.rate_by_working_set[1].time_s");
}

TEST_CASE("calibration.json and GPU data sheets: the fuzzers' number overflows are input errors",
          "[calibrate]")
{
  // The exact reproducers (fuzz/regressions/): a number past the range of a double made the JSON library
  // throw an exception of another kind than a parse error, which left the program as an internal error.
  const std::string dir = std::string(GRIDCAST_SOURCE_DIR) + "/fuzz/regressions/";
  auto calibration = expect_input_error([&] { (void)read_calibration(dir + "calibration_json/number-overflow.json"); });
  CHECK_THAT(calibration.what(), Catch::Contains("number-overflow.json") && Catch::Contains("number overflow"));
  auto sheet = expect_input_error([&] { (void)read_gpu_datasheet(dir + "gpu_datasheet/number-overflow.json"); });
  CHECK_THAT(sheet.what(), Catch::Contains("number-overflow.json") && Catch::Contains("number overflow"));
}
