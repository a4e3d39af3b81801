// Placeholder for the NVBit and Accel-Sim readers, which follow in the next commit.
#include "trace_io.hpp"

namespace gridcast::gpu_cache::detail {
std::unique_ptr<TraceReader> open_nvbit(const std::filesystem::path& path)
{
  throw InputError({path.string(), 0, {}, -1}, "NVBit mem_trace text is not read yet by this build");
}
std::unique_ptr<TraceReader> open_accelsim(const std::filesystem::path& path)
{
  throw InputError({path.string(), 0, {}, -1}, "Accel-Sim traces are not read yet by this build");
}
}  // namespace gridcast::gpu_cache::detail
