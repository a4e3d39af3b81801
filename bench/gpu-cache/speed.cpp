// Memory-model speed: feeds generated warp-level accesses (in memory, no file) through the model with a
// GPU data sheet and prints warp accesses per CPU second (median of --runs runs; per wall-clock second
// too) and the peak resident set
// after each of two trace lengths (the second 4x the first: memory must stay flat, since only the
// resident CTAs' accesses are buffered). bench/gpu-cache/speed.py drives it and writes the results.
//
//   gridcast_bench_gpu_cache_speed SHEET.json [--accesses N] [--runs R] [--in-order]
//
// The generated kernel: CTAs of 256 threads, each warp 64 accesses of a mix like the suite's kernels:
// 4-byte coalesced loads and stores (one line), 8-byte loads (two lines), re-reads of a neighbour's line
// (L1 hits), and column walks whose 32 lanes touch 32 lines. Every CTA works on its own data.
#include "gridcast/foundation/errors.hpp"
#include "gridcast/gpu_cache/model.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace gridcast::gpu_cache;

namespace {

constexpr std::uint32_t kThreads = 256, kWarps = kThreads / kWarpLanes, kPerWarp = 64;

/// The accesses of one CTA at base address 0, grouped by warp.
std::vector<WarpAccess> cta_template()
{
  std::vector<WarpAccess> t;
  for (std::uint32_t w = 0; w < kWarps; ++w)
    for (std::uint32_t s = 0; s < kPerWarp; ++s) {
      WarpAccess a;
      a.warp           = w;
      a.active_mask    = 0xffffffffu;
      a.bytes_per_lane = 4;
      const std::uint64_t row = (std::uint64_t(w) * kPerWarp + s) * 128;
      const unsigned k        = s % 20;
      for (unsigned l = 0; l < kWarpLanes; ++l) {
        if (k < 10) {  // 4-byte coalesced loads
          a.kind       = AccessKind::GlobalLoad;
          a.address[l] = row + 4 * l;
        } else if (k < 13) {  // 4-byte coalesced stores to another array
          a.kind       = AccessKind::GlobalStore;
          a.address[l] = (1 << 20) + row + 4 * l;
        } else if (k < 16) {  // 8-byte loads: two lines
          a.kind           = AccessKind::GlobalLoad;
          a.bytes_per_lane = 8;
          a.address[l]     = (2 << 20) + 2 * row + 8 * l;
        } else if (k < 19) {  // the previous row again: an L1 hit
          a.kind       = AccessKind::GlobalLoad;
          a.address[l] = (row >= 128 ? row - 128 : row) + 4 * l;
        } else {  // a column walk: 32 lines
          a.kind       = AccessKind::GlobalLoad;
          a.address[l] = (3 << 20) + std::uint64_t(l) * 4096 + 4 * s;
        }
      }
      t.push_back(a);
    }
  return t;
}

/// A kernel of `ctas` CTAs, each the template moved to its own 4 MiB of addresses.
class GeneratedTrace : public TraceReader {
public:
  GeneratedTrace(const std::vector<WarpAccess>& cta, std::uint64_t ctas, bool grouped)
      : cta_(cta), ctas_(ctas), grouped_(grouped)
  {
  }
  bool next_kernel(KernelLaunch& launch) override
  {
    if (started_)
      return false;
    started_             = true;
    launch.name          = "generated";
    launch.grid          = {std::uint32_t(ctas_), 1, 1};
    launch.block         = {kThreads, 1, 1};
    launch.registers_per_thread = 32;
    launch.flops         = double(ctas_) * kThreads * kPerWarp;
    return true;
  }
  bool next_access(WarpAccess& a) override
  {
    if (cta_index_ == ctas_)
      return false;
    // Grouped: CTA after CTA. In order: the CTAs of a wave of 1024 interleaved access by access.
    const std::uint64_t wave = 1024;
    std::uint64_t cta, item;
    if (grouped_) {
      cta  = cta_index_;
      item = item_;
    } else {
      const std::uint64_t first = cta_index_ / wave * wave, size = std::min(wave, ctas_ - first);
      cta  = first + item_ % size;
      item = item_ / size;
    }
    a = cta_[item];
    a.cta = cta;
    const std::uint64_t base = cta << 22;
    for (unsigned l = 0; l < kWarpLanes; ++l)
      a.address[l] += base;
    if (grouped_) {
      if (++item_ == cta_.size()) {
        item_ = 0;
        ++cta_index_;
      }
    } else {
      const std::uint64_t first = cta_index_ / wave * wave, size = std::min(wave, ctas_ - first);
      if (++item_ == size * cta_.size()) {
        item_ = 0;
        cta_index_ = first + size;
      }
    }
    return true;
  }
  bool grouped_by_cta() const override { return grouped_; }

private:
  const std::vector<WarpAccess>& cta_;
  std::uint64_t ctas_;
  bool grouped_;
  bool started_ = false;
  std::uint64_t cta_index_ = 0, item_ = 0;
};

/// CPU seconds of this process: on a shared machine the wall clock also counts other programs' turns.
double cpu_seconds()
{
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

long peak_rss_kib()
{
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::atol(line.c_str() + 6);
  return -1;
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 2) {
    std::cerr << "usage: gridcast_bench_gpu_cache_speed SHEET.json [--accesses N] [--runs R] [--in-order]\n";
    return 1;
  }
  std::uint64_t accesses = 20'000'000;
  int runs               = 3;
  bool grouped           = true;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--accesses" && i + 1 < argc)
      accesses = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--in-order")
      grouped = false;
    else {
      std::cerr << "gridcast_bench_gpu_cache_speed: unknown argument " << arg << '\n';
      return 1;
    }
  }
  try {
    const GpuSheet sheet = read_gpu_sheet(argv[1]);
    const std::vector<WarpAccess> cta = cta_template();
    std::printf("[");
    for (int length = 0; length < 2; ++length) {
      const std::uint64_t ctas = std::max<std::uint64_t>(1, accesses * (length == 0 ? 1 : 4) / cta.size());
      std::vector<double> rates, wall_rates;
      KernelMetrics last;
      std::uint64_t peak_buffered = 0;
      for (int r = 0; r < runs; ++r) {
        Model model(sheet);
        GeneratedTrace trace(cta, ctas, grouped);
        const auto t0     = std::chrono::steady_clock::now();
        const double cpu0 = cpu_seconds();
        last              = model.simulate(trace).at(0);
        const double cpu  = cpu_seconds() - cpu0;
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rates.push_back(double(last.warp_accesses) / cpu);
        wall_rates.push_back(double(last.warp_accesses) / wall);
        peak_buffered = model.peak_buffered_accesses();
      }
      std::sort(rates.begin(), rates.end());
      std::sort(wall_rates.begin(), wall_rates.end());
      const auto& l1 = last.l1[std::size_t(AccessKind::GlobalLoad)];
      std::printf("%s\n {\"warp_accesses\": %llu, \"mode\": \"%s\", \"runs\": %d, \"accesses_per_s_median\": %.0f, "
                  "\"accesses_per_s_min\": %.0f, \"accesses_per_s_max\": %.0f, \"wall_accesses_per_s_median\": %.0f, "
                  "\"peak_rss_kib\": %ld, "
                  "\"peak_buffered_requests\": %llu, \"l1_load_hit_rate\": %.4f, \"l2_read_sectors\": %llu}",
                  length == 0 ? "" : ",", static_cast<unsigned long long>(last.warp_accesses),
                  grouped ? "grouped" : "in-order", runs, rates[rates.size() / 2], rates.front(), rates.back(),
                  wall_rates[wall_rates.size() / 2], peak_rss_kib(), static_cast<unsigned long long>(peak_buffered),
                  l1.accesses ? double(l1.hits) / double(l1.accesses) : 0.0,
                  static_cast<unsigned long long>(last.l2.read_sectors));
      std::fflush(stdout);
    }
    std::printf("\n]\n");
    return 0;
  } catch (const gridcast::InputError& e) {
    std::cerr << "gridcast_bench_gpu_cache_speed: " << e.what() << '\n';
    return 1;
  }
}
