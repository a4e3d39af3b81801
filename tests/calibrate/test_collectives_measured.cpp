// How the collectives were measured (network.collectives_measured), the bench's method line, the
// warning about disturbed timings and `gridcast calibrate --only-collectives`.
#include "../foundation/foundation_support.hpp"

#include "gridcast/calibrate/measure.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/calibration/calibration.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

using namespace gridcast;
using namespace gridcast::platform;
using gridcast::test::expect_input_error;
using gridcast::test::TempDir;

namespace {

Stat stat(double median, double min, double max)
{
  return Stat{median, min, max, 5};
}

Calibration with_network()
{
  Calibration c;
  c.host                     = HostInfo{"box", "Some CPU", "2026-11-22T10:00:00Z", "0.1.0", 2, 0.25};
  c.compute.dgemm_flops      = stat(2.5e10, 2e10, 3e10);
  c.compute.stream_triad_Bps = stat(1.2e10, 1e10, 1.3e10);
  c.compute.scalar_flops     = stat(1.1e9, 1e9, 1.2e9);
  c.compute.core_speed_flops = 2.5e10;
  NetworkCalibration n;
  n.launcher              = "mpirun";
  n.latency_s             = 4.5e-7;
  n.bandwidth_Bps         = 6.0e9;
  n.eager_threshold_bytes = 4096;
  n.lat_factor            = {{0, 1.0}, {4096, 3.25}};
  n.bw_factor             = {{0, 0.5}, {4096, 0.8}};
  n.pingpong              = {{1, stat(5e-7, 4e-7, 6e-7)}, {4096, stat(2e-6, 1.9e-6, 2.2e-6)}};
  n.collectives           = {{"allreduce", 2, 8, stat(1e-6, 0.9e-6, 1.1e-6)}};
  c.network               = n;
  return c;
}

}  // namespace

TEST_CASE("collectives_measured: round-trips, is optional and is checked", "[calibrate]")
{
  Calibration c = with_network();
  auto j        = nlohmann::json::parse(to_json(c).dump());
  CHECK(j["network"].find("collectives_measured") == j["network"].end());  // absent when unknown
  CHECK_FALSE(calibration_from_json(j, "cal.json").network->collectives_measured.has_value());

  // The per-call median of files written before the loop mean is still read.
  c.network->collectives_measured = CollectivesMeasured{kCollectivesMedianCallSlowestRank, "2026-11-22T13:00:00Z", 1.5};
  CHECK(calibration_from_json(nlohmann::json::parse(to_json(c).dump()), "cal.json")
            .network->collectives_measured->method == "median-call-slowest-rank");

  c.network->collectives_measured = CollectivesMeasured{kCollectivesLoopMeanSlowestRank, "2026-11-22T13:00:00Z", 1.5};
  j                                = nlohmann::json::parse(to_json(c).dump());
  Calibration back                 = calibration_from_json(j, "cal.json");
  REQUIRE(back.network->collectives_measured.has_value());
  CHECK(back.network->collectives_measured->method == "loop-mean-slowest-rank");
  CHECK(back.network->collectives_measured->date == "2026-11-22T13:00:00Z");
  CHECK(back.network->collectives_measured->load_average == 1.5);

  auto bad = j;
  bad["network"]["collectives_measured"]["method"] = "guessed";
  auto e = expect_input_error([&] { calibration_from_json(bad, "cal.json"); });
  CHECK(e.context().key == "network.collectives_measured.method");
  bad = j;
  bad["network"]["collectives_measured"]["when"] = "now";
  CHECK(expect_input_error([&] { calibration_from_json(bad, "cal.json"); }).context().key ==
        "network.collectives_measured.when");
  bad = j;
  bad["network"]["collectives_measured"].erase("date");
  CHECK(expect_input_error([&] { calibration_from_json(bad, "cal.json"); }).context().key ==
        "network.collectives_measured.date");
  bad = j;
  bad["network"]["collectives_measured"]["load_average"] = -1;
  CHECK(expect_input_error([&] { calibration_from_json(bad, "cal.json"); }).context().key ==
        "network.collectives_measured.load_average");
}

TEST_CASE("calibrate: the bench's collectives-method line is parsed", "[calibrate]")
{
  calibrate::MpiBenchOutput out;
  int planned = 0;
  CHECK(parse_mpi_bench_line("plan 0 15 0", out, planned));
  CHECK(planned == 15);
  CHECK(out.collectives_method.empty());
  CHECK(parse_mpi_bench_line("collectives-method loop-mean-slowest-rank", out, planned));
  CHECK(out.collectives_method == "loop-mean-slowest-rank");
  CHECK_THROWS_AS(parse_mpi_bench_line("collectives-method", out, planned), InputError);
  CHECK_THROWS_AS(parse_mpi_bench_line("collectives-method a b", out, planned), InputError);
}

TEST_CASE("calibrate: collective timings whose median is far above their best are named", "[calibrate]")
{
  std::vector<CollectiveTiming> t = {{"allreduce", 2, 8, stat(1.0e-6, 0.9e-6, 5e-6)},     // 1.11x: fine
                                     {"bcast", 2, 65536, stat(13e-6, 10e-6, 14e-6)},      // 1.30x
                                     {"alltoall", 2, 16777216, stat(3e-3, 1e-3, 4e-3)}};  // 3.00x
  auto bad = calibrate::disturbed_collectives(t);
  REQUIRE(bad.size() == 2);
  CHECK(bad[0] == "bcast 64 KiB (median 1.30x best)");
  CHECK(bad[1] == "alltoall 16 MiB (median 3.00x best)");
  CHECK(calibrate::disturbed_collectives(t, 0.5).size() == 1);
}

TEST_CASE("calibrate: bcasts at np 2 far from the ping-pong of the same size are named", "[calibrate]")
{
  std::vector<PingPongPoint> curve = {{8, stat(4e-7, 3.9e-7, 4.1e-7)}, {65536, stat(7e-6, 6.9e-6, 7.1e-6)},
                                      {16777216, stat(1.5e-3, 1.4e-3, 1.6e-3)}};
  std::vector<CollectiveTiming> t = {{"bcast", 2, 8, stat(4.4e-7, 4.3e-7, 4.5e-7)},           // 1.10x: one message
                                     {"bcast", 2, 65536, stat(3.5e-6, 3.4e-6, 3.6e-6)},       // 0.50x
                                     {"bcast", 2, 16777216, stat(2.4e-3, 2.3e-3, 2.5e-3)},    // 1.60x
                                     {"bcast", 2, 4096, stat(9e-6, 9e-6, 9e-6)},              // not on the curve
                                     {"bcast", 2, 8, stat(1e-9, 1e-9, 1e-9)},                 // 0.0025x
                                     {"bcast", 4, 8, stat(9e-6, 9e-6, 9e-6)},                 // not np 2
                                     {"allreduce", 2, 8, stat(9e-6, 9e-6, 9e-6)}};            // not a bcast
  auto off = calibrate::bcasts_off_pingpong(t, curve);
  REQUIRE(off.size() == 3);
  CHECK(off[0] == "bcast 64 KiB (0.50x the ping-pong)");
  CHECK(off[1] == "bcast 16 MiB (1.60x the ping-pong)");
  CHECK(off[2] == "bcast 8 B (0.0025x the ping-pong)");
  CHECK(calibrate::bcasts_off_pingpong(t, curve, 0.05).size() == 4);
  CHECK(calibrate::bcasts_off_pingpong(t, {}).empty());
}

TEST_CASE("calibrate: --only-collectives replaces the collectives and keeps the rest", "[calibrate][mpi]")
{
  TempDir dir;
  write_calibration(dir / "old.json", with_network());
  // Bad combinations and inputs fail before any measurement.
  auto usage = test::run_gridcast("calibrate --only-collectives '" + (dir / "old.json").string() +
                                  "' --refit x.json -o y.json");
  CHECK(usage.exit_code == 1);
  CHECK(usage.output.find("--only-collectives") != std::string::npos);
  Calibration no_net = with_network();
  no_net.network.reset();
  write_calibration(dir / "no-net.json", no_net);
  auto missing = test::run_gridcast("calibrate --only-collectives '" + (dir / "no-net.json").string() + "' -o y.json");
  CHECK(missing.exit_code == 1);
  CHECK(missing.output.find("no-net.json") != std::string::npos);

  if (not std::filesystem::exists(std::filesystem::path(GRIDCAST_BIN).parent_path() / "gridcast-mpi-bench")) {
    WARN("gridcast-mpi-bench not built (no MPI): the measurement is skipped");
    return;
  }
  auto r = test::run_gridcast("calibrate --only-collectives '" + (dir / "old.json").string() +
                              "' --quick --quiet -o '" + (dir / "new.json").string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Calibration fresh = read_calibration(dir / "new.json");
  REQUIRE(fresh.network.has_value());
  CHECK(fresh.network->collectives.size() == 12);  // 3 ops x 4 sizes up to 1 MiB (--quick)
  for (const auto& t : fresh.network->collectives) {
    CHECK(t.np == 2);
    CHECK(t.time_s.repetitions == 3);
    CHECK(t.time_s.min > 0);
  }
  REQUIRE(fresh.network->collectives_measured.has_value());
  CHECK(fresh.network->collectives_measured->method == kCollectivesLoopMeanSlowestRank);
  // Everything else is what the old file held, to the byte.
  auto strip = [](Calibration c) {
    c.network->collectives.clear();
    c.network->collectives_measured.reset();
    return to_json(c).dump();
  };
  CHECK(strip(fresh) == strip(read_calibration(dir / "old.json")));
}
