// `gridcast calibrate`: statistics, the bench output parser, the curve fit, and the command itself
// (quick MPI run through the real launcher, GPU data sheets, the clean GPU skip without a driver).
#include "gridcast/calibrate/calibrate.hpp"
#include "gridcast/calibrate/measure.hpp"

#include "../foundation/foundation_support.hpp"

#include <dlfcn.h>

#include <cmath>
#include <sstream>

using namespace gridcast;
using namespace gridcast::calibrate;
using gridcast::test::expect_input_error;
using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

platform::PingPongPoint point(std::uint64_t bytes, double t)
{
  return {bytes, platform::Stat{t, t, t, 1}};
}

platform::SizedTiming timing(std::uint64_t bytes, double t)
{
  return {bytes, platform::Stat{t, t, t, 1}};
}

/// A synthetic Open-MPI-like curve: 0.4 us + n / 8 GB/s eagerly, then a rendezvous costing 1.5 us more
/// and running at `rendezvous_Bps` from `threshold` bytes.
std::vector<platform::PingPongPoint> synthetic_curve(std::uint64_t threshold, double rendezvous_Bps = 12e9)
{
  std::vector<platform::PingPongPoint> p;
  for (std::uint64_t n = 1; n <= (64u << 20); n *= 2)
    for (std::uint64_t m : {n, n + n / 2}) {
      if (m == n + n / 2 && n < 2)
        continue;
      double t = m < threshold ? 0.4e-6 + m / 8e9 : 1.9e-6 + m / rendezvous_Bps;
      p.push_back(point(m, t));
    }
  return p;
}

/// The MPI benchmark beside the gridcast under test, when MPI was found at configure time.
std::filesystem::path find_mpi_bench_for_tests()
{
  auto p = std::filesystem::path(GRIDCAST_BIN).parent_path() / "gridcast-mpi-bench";
  return std::filesystem::exists(p) ? p : std::filesystem::path();
}

}  // namespace

TEST_CASE("calibrate: statistics of repetitions", "[calibrate]")
{
  auto s = summarize({3.0, 1.0, 2.0});
  CHECK(s.median == 2.0);
  CHECK(s.min == 1.0);
  CHECK(s.max == 3.0);
  CHECK(s.repetitions == 3);
  CHECK(summarize({4.0, 1.0, 2.0, 3.0}).median == 2.5);
  auto r = summarize_rate({2.0, 1.0, 4.0}, 8.0);  // rates 4, 8, 2
  CHECK(r.median == 4.0);
  CHECK(r.min == 2.0);
  CHECK(r.max == 8.0);
  CHECK_THROWS_AS(summarize({}), InternalError);
}

TEST_CASE("calibrate: gridcast-mpi-bench output is parsed into points", "[calibrate]")
{
  MpiBenchOutput out;
  int planned = 0;
  CHECK(parse_mpi_bench_line("plan 3 1", out, planned));
  CHECK(planned == 4);
  CHECK(parse_mpi_bench_line("pingpong 4096 100 2.0e-6 1.0e-6 3.0e-6", out, planned));
  CHECK(parse_mpi_bench_line("collective bcast 2 8 1000 5e-7 -1e-9 6e-7", out, planned));
  CHECK_FALSE(parse_mpi_bench_line("[vm:123] some launcher warning", out, planned));
  CHECK_FALSE(out.done);
  CHECK(parse_mpi_bench_line("done", out, planned));
  CHECK(out.done);
  REQUIRE(out.pingpong.size() == 1);
  CHECK(out.pingpong[0].bytes == 4096);
  CHECK(out.pingpong[0].one_way_s.median == 2.0e-6);
  CHECK(out.pingpong[0].one_way_s.repetitions == 3);
  REQUIRE(out.collectives.size() == 1);
  CHECK(out.collectives[0].op == "bcast");
  CHECK(out.collectives[0].time_s.min == 0.0);  // a negative difference of timings is clamped
  CHECK_THROWS_AS(parse_mpi_bench_line("pingpong 8 10 fast", out, planned), InputError);
  CHECK_THROWS_AS(parse_mpi_bench_line("pingpong 8", out, planned), InputError);
}

TEST_CASE("calibrate: the eager/rendezvous switch is found where the curve jumps", "[calibrate]")
{
  CHECK(detect_eager_threshold(synthetic_curve(4096)) == 4096);
  CHECK(detect_eager_threshold(synthetic_curve(65536, 8e9)) == 65536);
  // The detector looks for a step up: a switch hidden by a faster rendezvous bandwidth (7.4 us at 64 KiB
  // against 8.6 us on the eager trend) is not seen.
  CHECK(detect_eager_threshold(synthetic_curve(65536, 12e9)) == 0);
  // A smooth curve has no switch.
  std::vector<platform::PingPongPoint> smooth;
  for (std::uint64_t n = 1; n <= (1u << 20); n *= 2)
    smooth.push_back(point(n, 1e-6 + n / 1e10));
  CHECK(detect_eager_threshold(smooth) == 0);
}

TEST_CASE("calibrate: the fitted factors reproduce every measured size", "[calibrate]")
{
  auto curve = synthetic_curve(4096);
  NetworkFit fit = fit_network(curve, 0.02);
  CHECK(fit.eager_threshold_bytes == 4096);
  REQUIRE_FALSE(fit.lat_factor.empty());
  CHECK(fit.lat_factor.front().min_bytes == 0);
  CHECK(fit.lat_factor.size() == fit.bw_factor.size());
  // Two straight pieces: two segments, split exactly at the switch.
  REQUIRE(fit.lat_factor.size() == 2);
  CHECK(fit.lat_factor[1].min_bytes == 4096);
  for (const auto& p : curve)
    CHECK(model_time_s(fit, static_cast<double>(p.bytes)) == Approx(p.one_way_s.median).epsilon(0.02));

  // A noisy, bumpy curve still fits within the tolerance at every point.
  std::vector<platform::PingPongPoint> bumpy;
  std::uint64_t k = 0;
  for (const auto& p : curve) {
    double wobble = 1.0 + 0.08 * std::sin(static_cast<double>(k++) * 1.7);
    bumpy.push_back(point(p.bytes, p.one_way_s.median * wobble));
  }
  NetworkFit f2 = fit_network(bumpy, 0.02);
  for (const auto& p : bumpy)
    CHECK(model_time_s(f2, static_cast<double>(p.bytes)) == Approx(p.one_way_s.median).epsilon(0.021));
  for (const auto& s : f2.lat_factor)
    CHECK(s.factor > 0);
  for (const auto& s : f2.bw_factor)
    CHECK(s.factor > 0);
}

TEST_CASE("calibrate: the panel update's side fits the requested working set", "[calibrate]")
{
  // Three operands of 8-byte doubles: C m x m, A m x 32, B 32 x m.
  for (std::uint64_t bytes : {16384ull, 1ull << 20, 128ull << 20}) {
    const int m              = panel_update_side(bytes);
    const double operands    = 8.0 * (static_cast<double>(m) * m + 64.0 * m);
    const double next_larger = 8.0 * (static_cast<double>(m + 1) * (m + 1) + 64.0 * (m + 1));
    INFO(bytes << " bytes: m " << m);
    CHECK(std::abs(operands - static_cast<double>(bytes)) <= next_larger - operands);
  }
  CHECK(panel_update_side(0) == 8);  // never an empty matrix
}

TEST_CASE("calibrate: --only-rate-curve adds the rate by working set and keeps the rest", "[calibrate]")
{
  TempDir dir;
  const std::string base = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/this-machine/calibration.json";
  auto r = run_gridcast("calibrate --quick --quiet --only-rate-curve " + base + " -o " + (dir / "c.json").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  platform::Calibration before = platform::read_calibration(base);
  platform::Calibration after  = platform::read_calibration(dir / "c.json");
  CHECK(after.compute.rate_by_working_set.size() == 9);
  CHECK(after.compute.library_rates.size() == 12);  // every BLAS kernel the hook records arguments of
  after.compute.rate_by_working_set = before.compute.rate_by_working_set;
  after.compute.library_rates       = before.compute.library_rates;
  CHECK(platform::to_json(after).dump() == platform::to_json(before).dump());
  auto bad = run_gridcast("calibrate --only-rate-curve " + base + " --no-mpi -o " + (dir / "d.json").string());
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("--only-rate-curve measures the compute rate alone"));
  auto missing = run_gridcast("calibrate --only-rate-curve " + (dir / "none.json").string() + " -o " +
                              (dir / "e.json").string());
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("none.json"));
}

TEST_CASE("calibrate: --help explains every option", "[calibrate]")
{
  auto r = run_gridcast("calibrate --help");
  CHECK(r.exit_code == 0);
  for (const char* opt : {"--out", "--mpirun", "--quick", "--gpu-json", "--gpu-only", "--no-mpi", "--no-gpu",
                          "--quiet", "--only-rate-curve"})
    CHECK(r.output.find(opt) != std::string::npos);
  CHECK(run_gridcast("calibrate --quick").exit_code == 1);  // -o missing
}

TEST_CASE("calibrate: quick run with a GPU data sheet writes a valid calibration", "[calibrate]")
{
  TempDir dir;
  // A data sheet without `source`: it becomes "datasheet".
  write_file(dir / "gpu.json", R"J({"device_name": "H100 (data sheet)", "device_count": 8, "memory_bytes": 8.0e10,
    "speed_flops": 6.7e13, "h2d_pageable": {"latency_s": 1e-5, "bandwidth_Bps": 2.5e10},
    "d2h_pageable": {"latency_s": 1e-5, "bandwidth_Bps": 2.5e10}, "h2d_pinned": {"latency_s": 8e-6, "bandwidth_Bps": 5.5e10},
    "d2h_pinned": {"latency_s": 8e-6, "bandwidth_Bps": 5.5e10}, "d2d": {"latency_s": 3e-6, "bandwidth_Bps": 2.0e12},
    "p2p": {"latency_s": 5e-6, "bandwidth_Bps": 4.5e11}, "kernel_launch_s": 3e-6, "malloc_s": 1.75e-4,
    "free_s": 1.25e-4, "host_alloc_s_per_byte": 6.5e-10})J");
  auto r = run_gridcast("calibrate --quick --no-mpi -o " + (dir / "c.json").string() + " --gpu-json " +
                        (dir / "gpu.json").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("[compute]") != std::string::npos);  // progress on stderr
  auto c = platform::read_calibration(dir / "c.json");
  CHECK(c.compute.core_speed_flops > 0);
  CHECK(c.compute.core_speed_flops == c.compute.dgemm_flops.median);
  CHECK(c.compute.dgemm_flops.repetitions == ComputeSizes::quick().dgemm_repetitions);
  // The reduction curve: 1 KiB x 4^k up to the quick maximum (1 MiB), a positive time each.
  REQUIRE(c.compute.reduction.size() == 6);
  CHECK(c.compute.reduction.front().bytes == 1024);
  CHECK(c.compute.reduction.back().bytes == (1u << 20));
  for (const auto& p : c.compute.reduction)
    CHECK(p.time_s.median > 0);
  // The memcpy curves: 1 KiB x 2^k up to 1 MiB, on one core and (with several cores) on all at once.
  REQUIRE(c.compute.memcpy.size() == 11);
  CHECK(c.compute.memcpy.back().bytes == (1u << 20));
  CHECK(c.compute.memcpy_all_cores.size() == (c.host.cores > 1 ? 11u : 0u));
  // The rate by working set: 16 KiB doubling up to the quick maximum (4 MiB), sizes strictly ascending.
  REQUIRE(c.compute.rate_by_working_set.size() == 9);
  CHECK(c.compute.rate_by_working_set.front().bytes == Approx(16384).epsilon(0.05));
  CHECK(c.compute.rate_by_working_set.back().bytes == Approx(4u << 20).epsilon(0.05));
  for (std::size_t i = 0; i < c.compute.rate_by_working_set.size(); ++i) {
    CHECK(c.compute.rate_by_working_set[i].flops.median > 0);
    CHECK(c.compute.rate_by_working_set[i].flops.repetitions == ComputeSizes::quick().rate_repetitions);
    if (i > 0)
      CHECK(c.compute.rate_by_working_set[i].bytes > c.compute.rate_by_working_set[i - 1].bytes);
  }
  // A rate curve per BLAS kernel, each in its work unit, sizes ascending, within the same range; and
  // the file reads back as written.
  REQUIRE(c.compute.library_rates.size() == 12);
  for (const platform::KernelRateCurve& k : c.compute.library_rates) {
    INFO(k.kernel);
    CHECK(k.work == (k.kernel == "dgemm" || k.kernel == "dtrsm" || k.kernel == "dsyrk" || k.kernel == "dgemv" ||
                             k.kernel == "dger" || k.kernel == "dtrsv"
                         ? "flops"
                         : "bytes"));
    REQUIRE(k.points.size() >= 5);
    CHECK(k.points.back().bytes <= (4u << 20) * 1.1);
    for (std::size_t i = 0; i < k.points.size(); ++i) {
      CHECK(k.points[i].rate.median > 0);
      if (i > 0)
        CHECK(k.points[i].bytes > k.points[i - 1].bytes);
    }
  }
  CHECK(platform::to_json(platform::read_calibration(dir / "c.json")).dump() == platform::to_json(c).dump());
  CHECK_FALSE(c.network.has_value());
  REQUIRE(c.gpu.has_value());
  CHECK(c.gpu->source == "datasheet");
  CHECK(c.gpu->device_count == 8);
  CHECK(c.gpu->p2p.bandwidth_Bps == 4.5e11);
  CHECK(c.host.cores >= 1);
}

TEST_CASE("calibrate: --only-memcpy replaces the memcpy curves and keeps the rest", "[calibrate]")
{
  TempDir dir;
  REQUIRE(run_gridcast("calibrate --quick --no-mpi --no-gpu --quiet -o " + (dir / "c.json").string()).exit_code == 0);
  platform::Calibration c = platform::read_calibration(dir / "c.json");
  c.compute.memcpy        = {timing(1024, 1.0)};  // marks: both curves must be measured again
  c.compute.memcpy_all_cores.clear();
  platform::write_calibration(dir / "c.json", c);
  auto r = run_gridcast("calibrate --only-memcpy " + (dir / "c.json").string() + " --quick --quiet -o " +
                        (dir / "d.json").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  platform::Calibration d = platform::read_calibration(dir / "d.json");
  REQUIRE(d.compute.memcpy.size() == 11);
  CHECK(d.compute.memcpy[0].time_s.median < 1.0);
  CHECK(d.compute.memcpy_all_cores.size() == (c.host.cores > 1 ? 11u : 0u));
  d.compute.memcpy           = c.compute.memcpy;  // the rest, byte for byte
  d.compute.memcpy_all_cores = c.compute.memcpy_all_cores;
  CHECK(platform::to_json(d).dump() == platform::to_json(c).dump());
  CHECK(run_gridcast("calibrate --only-memcpy " + (dir / "c.json").string() + " --mpirun x -o " +
                     (dir / "e.json").string())
            .exit_code == 1);
  CHECK(run_gridcast("calibrate --only-memcpy " + (dir / "missing.json").string() + " -o " +
                     (dir / "e.json").string())
            .exit_code == 1);
}

TEST_CASE("calibrate: a bad GPU data sheet is an error naming file and key", "[calibrate]")
{
  TempDir dir;
  write_file(dir / "gpu.json", R"({"device_name": "x", "device_count": 1, "memory_bytes": 1, "speed_flops": 1,
    "h2d_pageable": {"latency_s": 1e-5, "bandwidth_Bps": 2.5e10, "jitter": 1}})");
  auto r = run_gridcast("calibrate --quick --no-mpi -o " + (dir / "c.json").string() + " --gpu-json " +
                        (dir / "gpu.json").string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find((dir / "gpu.json").string()) != std::string::npos);
  CHECK(r.output.find("h2d_pageable.jitter") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "c.json"));
}

TEST_CASE("calibrate: without a CUDA driver the GPU part is skipped cleanly", "[calibrate]")
{
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) {
    dlclose(driver);
    WARN("a CUDA driver is present: the skip path cannot be exercised here");
    return;
  }
  TempDir dir;
  auto r = run_gridcast("calibrate --gpu-only -o " + (dir / "gpu.json").string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("no CUDA driver") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "gpu.json"));
  auto r2 = run_gridcast("calibrate --quick --no-mpi -o " + (dir / "c.json").string());
  CHECK(r2.exit_code == 0);
  CHECK(r2.output.find("[gpu] skipped: no CUDA driver") != std::string::npos);
  CHECK_FALSE(platform::read_calibration(dir / "c.json").gpu.has_value());
}

TEST_CASE("calibrate: quick MPI run through the real launcher", "[calibrate][mpi]")
{
  if (find_mpi_bench_for_tests().empty()) {
    WARN("gridcast-mpi-bench not built (no MPI): skipped");
    return;
  }
  TempDir dir;
  auto r = run_gridcast("calibrate --quick --no-gpu --quiet -o " + (dir / "c.json").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto c = platform::read_calibration(dir / "c.json");
  REQUIRE(c.network.has_value());
  const auto& n = *c.network;
  CHECK(n.pingpong.size() == 40);  // 1 B .. 1 MiB, powers of two and midpoints
  CHECK(n.pingpong.front().bytes == 1);
  CHECK(n.pingpong.back().bytes == (1u << 20));
  CHECK(n.pingpong.back().one_way_s.repetitions == 3);
  CHECK(n.latency_s > 0);
  CHECK(n.bandwidth_Bps > 0);
  CHECK(n.collectives.size() == 12);  // 3 ops x 4 sizes up to 1 MiB
  REQUIRE(n.exchange.size() == n.pingpong.size());  // the exchange curve, same sizes
  CHECK(n.exchange.back().bytes == (1u << 20));
  // The shared capacity, when a size was transfer-dominated, never slows a lone flow.
  CHECK((n.shared_bandwidth_Bps == 0 || n.shared_bandwidth_Bps >= n.bandwidth_Bps));
  CHECK(n.launcher.find("mpirun") != std::string::npos);
  // The factors and the copy overhead (the emulator adds it to every one-way time between ranks of one
  // host) reproduce the measured medians.
  NetworkFit fit{n.latency_s, n.bandwidth_Bps, n.eager_threshold_bytes, n.lat_factor, n.bw_factor};
  for (const auto& p : n.pingpong) {
    double bytes = static_cast<double>(p.bytes);
    CHECK(model_time_s(fit, bytes) + platform::overhead_for(n.copy_overhead, bytes) ==
          Approx(p.one_way_s.median).epsilon(0.05));
  }
}

TEST_CASE("calibrate: a launcher that fails is reported with the command", "[calibrate][mpi]")
{
  if (find_mpi_bench_for_tests().empty()) {
    WARN("gridcast-mpi-bench not built (no MPI): skipped");
    return;
  }
  TempDir dir;
  auto r = run_gridcast("calibrate --quick --no-gpu --quiet --mpirun gridcast-no-such-launcher -o " +
                        (dir / "c.json").string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("launcher not found") != std::string::npos);
  CHECK(r.output.find("gridcast-no-such-launcher") != std::string::npos);
}

TEST_CASE("calibrate: exchange lines of gridcast-mpi-bench are parsed", "[calibrate]")
{
  MpiBenchOutput out;
  int planned = 0;
  CHECK(parse_mpi_bench_line("plan 3 1 3", out, planned));
  CHECK(planned == 7);
  CHECK(parse_mpi_bench_line("exchange 4096 100 3.0e-6 2.0e-6 4.0e-6", out, planned));
  REQUIRE(out.exchange.size() == 1);
  CHECK(out.exchange[0].bytes == 4096);
  CHECK(out.exchange[0].time_s.median == 3.0e-6);
  CHECK(out.exchange[0].time_s.min == 2.0e-6);
  CHECK(out.pingpong.empty());
  CHECK_THROWS_AS(parse_mpi_bench_line("exchange 8 10", out, planned), InputError);
  CHECK_THROWS_AS(parse_mpi_bench_line("exchange big", out, planned), InputError);
}

TEST_CASE("calibrate: the shared capacity is fitted from the transfer-dominated exchanges", "[calibrate]")
{
  auto curve     = synthetic_curve(4096);  // rendezvous at 12 GB/s
  NetworkFit fit = fit_network(curve, 0.02);
  // Exchanges where both flows share 18 GB/s: each moves n bytes at 9 GB/s after the latency part;
  // small sizes cost 1.5x the ping-pong (CPU contention the fit must not read as bandwidth).
  const double C = 18e9;
  std::vector<platform::SizedTiming> exchange;
  for (const auto& p : curve) {
    double n       = static_cast<double>(p.bytes);
    double latency = fit.latency_s * platform::factor_for(fit.lat_factor, n);
    double single  = n / (fit.bandwidth_Bps * platform::factor_for(fit.bw_factor, n));
    double bf      = platform::factor_for(fit.bw_factor, n);
    exchange.push_back(timing(p.bytes, n < 65536 ? 1.5 * (latency + single) : latency + n / (bf * C / 2)));
  }
  double fitted = fit_shared_bandwidth(fit, exchange);
  CHECK(fitted == Approx(C).epsilon(1e-6));

  // Exchanges no slower than the ping-pong: the capacity never binds a lone flow, nor a pair.
  std::vector<platform::SizedTiming> free_exchange;
  for (const auto& p : curve)
    free_exchange.push_back(timing(p.bytes, model_time_s(fit, static_cast<double>(p.bytes))));
  double wide = fit_shared_bandwidth(fit, free_exchange);
  CHECK(wide >= 2 * 12e9 * 0.99);
  // Exchanges suggesting less than one flow's rate: the capacity stays at the base bandwidth, so that
  // a lone flow (bf*min(B, C)) keeps its ping-pong time.
  std::vector<platform::SizedTiming> slow;
  for (const auto& p : curve)
    slow.push_back(timing(p.bytes, 10 * model_time_s(fit, static_cast<double>(p.bytes))));
  CHECK(fit_shared_bandwidth(fit, slow) == fit.bandwidth_Bps);
  // No transfer-dominated size: nothing to fit.
  std::vector<platform::SizedTiming> tiny(exchange.begin(), exchange.begin() + 5);
  CHECK(fit_shared_bandwidth(fit, tiny) == 0);
}

// `gridcast profile` (cli/cmd_profile.cpp) measures the host speed with this function when no calibration is
// given; the case keeps its profiler name, but tests gridcast::calibrate, so it lives with its tests.
TEST_CASE("profiler: without a calibration the host speed is measured as gridcast calibrate does", "[profiler]")
{
  // calibrate's core_speed_flops is the dgemm median; the profiler's fallback must be the same figure.
  auto stat = calibrate::measure_dgemm_flops(64, 3);
  CHECK(stat.repetitions == 3);
  CHECK(stat.median > 0);
  CHECK(stat.min <= stat.median);
  CHECK(stat.median <= stat.max);
}
