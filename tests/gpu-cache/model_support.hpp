// What the memory-model tests share: a small GPU sheet built in code, an in-memory trace, and warp
// accesses written in one line.
#pragma once

#include "gridcast/gpu_cache/model.hpp"
#include "gridcast/gpu_cache/sheet.hpp"
#include "gridcast/gpu_cache/trace.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace gridcast::gpu_cache::test {

/// A GPU of `sms` SMs with a 1 KiB-per-SM unified array (carve-outs 0 and 512 B: L1 of 1 KiB or 512 B),
/// 2-way L1s and a 4 KiB, 2-way, 2-slice L2; 128 B lines of 4 sectors.
inline GpuSheet tiny_sheet(std::uint32_t sms = 2)
{
  GpuSheet s;
  s.name                           = "tiny";
  s.sm_count                       = sms;
  s.max_threads_per_sm             = 128;
  s.max_threads_per_cta            = 128;
  s.max_ctas_per_sm                = 2;
  s.registers_per_sm               = 8192;
  s.register_allocation_unit       = 256;
  s.unified_l1_shared_bytes_per_sm = 1024;
  s.shared_carveouts_bytes         = {0, 512};
  s.max_shared_bytes_per_sm        = 512;
  s.l1                             = {2, SetIndex::Linear, WritePolicy::WriteThrough, WriteAllocate::Fetch};
  s.l2 = {4096, 128, 32, 2, 2, SetIndex::Linear, WritePolicy::WriteBack, WriteAllocate::Fetch};
  s.sm_clock_hz                = 1e9;
  s.fp32_flops_per_s           = 1e12;
  s.fp64_flops_per_s           = 5e11;
  s.l2_bandwidth_bytes_per_s   = 1e12;
  s.dram_bandwidth_bytes_per_s = 1e11;
  s.kernel_launch_s            = 1e-6;
  return s;
}

/// One warp-level access: `lanes` lanes from lane 0, lane i at base + i * stride.
inline WarpAccess warp_access(std::uint64_t cta, std::uint32_t warp, AccessKind kind, std::uint64_t base,
                              std::uint64_t stride = 4, unsigned lanes = 32, std::uint8_t bytes = 4)
{
  WarpAccess a;
  a.cta            = cta;
  a.warp           = warp;
  a.kind           = kind;
  a.bytes_per_lane = bytes;
  a.active_mask    = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  for (unsigned i = 0; i < lanes; ++i)
    a.address[i] = base + i * stride;
  return a;
}

/// A trace held in memory: kernels, each with its accesses.
class VectorTrace : public TraceReader {
public:
  VectorTrace(std::vector<std::pair<KernelLaunch, std::vector<WarpAccess>>> kernels, bool grouped)
      : kernels_(std::move(kernels)), grouped_(grouped)
  {
  }
  bool next_kernel(KernelLaunch& launch) override
  {
    if (next_kernel_ >= kernels_.size())
      return false;
    current_ = next_kernel_++;
    next_access_ = 0;
    launch = kernels_[current_].first;
    return true;
  }
  bool next_access(WarpAccess& access) override
  {
    const auto& list = kernels_[current_].second;
    if (next_access_ >= list.size())
      return false;
    access = list[next_access_++];
    return true;
  }
  bool grouped_by_cta() const override { return grouped_; }

private:
  std::vector<std::pair<KernelLaunch, std::vector<WarpAccess>>> kernels_;
  bool grouped_;
  std::size_t current_ = 0, next_kernel_ = 0, next_access_ = 0;
};

inline KernelLaunch launch_of(std::uint32_t ctas, std::uint32_t threads, std::uint32_t shared = 0)
{
  KernelLaunch k;
  k.name                 = "k";
  k.grid                 = {ctas, 1, 1};
  k.block                = {threads, 1, 1};
  k.shared_bytes_per_cta = shared;
  return k;
}

}  // namespace gridcast::gpu_cache::test
