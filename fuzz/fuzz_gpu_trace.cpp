// A GPU memory trace in any format the readers take (docs/reference/gpu-memory-traces.md), found by
// content as `open_trace` finds it, read to its end. An input of parts ("%%" lines) is an Accel-Sim
// folder: the first part its kernelslist.g, the others kernel-1.traceg, kernel-2.traceg, ...
#include "fuzz_support.hpp"

#include "gridcast/gpu_cache/trace.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto parts = fuzz::split_parts(data, size);
  std::filesystem::path path;
  if (parts.size() == 1) {
    path = fuzz::input_file(data, size, "trace");
  } else {
    fuzz::clear_scratch();
    path = fuzz::scratch();
    fuzz::write_file(path / "kernelslist.g", parts[0]);
    for (std::size_t i = 1; i < parts.size(); ++i)
      fuzz::write_file(path / ("kernel-" + std::to_string(i) + ".traceg"), parts[i]);
  }
  return fuzz::expect_input_errors([&] {
    gpu_cache::KernelLaunch launch;
    gpu_cache::WarpAccess access;
    for (auto reader = gpu_cache::open_trace(path); reader->next_kernel(launch);)
      while (reader->next_access(access)) {
      }
  });
}
