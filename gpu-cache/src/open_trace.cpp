// open_trace: the format by content when not given (docs/reference/gpu-memory-traces.md, "Which format").
#include "trace_io.hpp"

#include <cstring>

namespace fs = std::filesystem;

namespace gridcast::gpu_cache {

using namespace detail;

namespace {

/// How much of a text trace the detection reads: NVBit prints its banner (about 40 lines) and the
/// application's own output before the first launch.
constexpr std::size_t kSniffBytes = std::size_t{1} << 16;

TraceFormat detect(const fs::path& path)
{
  std::error_code ec;
  if (fs::is_directory(path, ec) || path.filename() == "kernelslist.g")
    return TraceFormat::AccelSim;
  InputFile file(path);
  std::string head(kSniffBytes, '\0');
  head.resize(file.read(head.data(), head.size()));
  if (head.size() >= sizeof kBinaryMagic && std::memcmp(head.data(), kBinaryMagic, sizeof kBinaryMagic) == 0)
    return TraceFormat::NativeBinary;
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && head[first] == '{')
    return TraceFormat::NativeJsonl;
  if (first != std::string::npos && starts_with(std::string_view(head).substr(first), "-kernel name"))
    return TraceFormat::AccelSim;
  std::size_t at = 0;
  while (at < head.size()) {
    std::size_t nl = head.find('\n', at);
    const std::string_view line = std::string_view(head).substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (starts_with(line, "MEMTRACE: ") ||
        (starts_with(line, "Kernel ") && line.find(" - grid size ") != std::string_view::npos) ||
        (starts_with(line, "CTA ") && line.find(" - warp ") != std::string_view::npos))
      return TraceFormat::NvbitMemTrace;
    if (nl == std::string::npos)
      break;
    at = nl + 1;
  }
  throw InputError({path.string(), 0, {}, -1},
                   "not a memory trace of a known format (gridcast's JSON lines or binary encoding, NVBit "
                   "mem_trace output with MEMTRACE: lines, Accel-Sim .traceg or its folder; "
                   "docs/reference/gpu-memory-traces.md)");
}

}  // namespace

std::unique_ptr<TraceReader> open_trace(const fs::path& path, TraceFormat format)
{
  if (format == TraceFormat::Auto)
    format = detect(path);
  switch (format) {
    case TraceFormat::NativeJsonl: return open_native_jsonl(path);
    case TraceFormat::NativeBinary: return open_native_binary(path);
    case TraceFormat::NvbitMemTrace: return open_nvbit(path);
    case TraceFormat::AccelSim: return open_accelsim(path);
    case TraceFormat::Auto: break;
  }
  throw InternalError("open_trace: trace format " + std::to_string(static_cast<int>(format)));
}

}  // namespace gridcast::gpu_cache
