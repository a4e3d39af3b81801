// What the gpu-cache tests share: comparisons of trace records and a reader drained to its end.
#pragma once

#include "../foundation/foundation_support.hpp"

#include "gridcast/gpu_cache/trace.hpp"

namespace gridcast::test {

inline bool same_dim(const gpu_cache::Dim3& a, const gpu_cache::Dim3& b)
{
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

/// Equal as the model sees them: the inactive lanes' addresses are unspecified.
inline bool same_access(const gpu_cache::WarpAccess& a, const gpu_cache::WarpAccess& b)
{
  if (a.cta != b.cta || a.warp != b.warp || a.sm != b.sm || a.kind != b.kind || a.bytes_per_lane != b.bytes_per_lane ||
      a.active_mask != b.active_mask)
    return false;
  for (unsigned lane = 0; lane < gpu_cache::kWarpLanes; ++lane)
    if (((a.active_mask >> lane) & 1) && a.address[lane] != b.address[lane])
      return false;
  return true;
}

/// Reads every launch and access; returns the number of accesses.
inline std::uint64_t drain(gpu_cache::TraceReader& reader)
{
  std::uint64_t n = 0;
  gpu_cache::KernelLaunch k;
  gpu_cache::WarpAccess a;
  while (reader.next_kernel(k))
    while (reader.next_access(a))
      ++n;
  return n;
}

/// Reads the whole trace, which must fail, and returns the error's message.
inline std::string trace_error(const std::filesystem::path& path, gpu_cache::TraceFormat format)
{
  return expect_input_error([&] { drain(*gpu_cache::open_trace(path, format)); }).what();
}

}  // namespace gridcast::test
