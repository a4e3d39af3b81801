// GPU memory traces: what one kernel launch's warps read and wrote, as the memory-system model
// (model.hpp) consumes it. No SimGrid here: the component is a library of its own so that the
// standalone address generators of bench/gpu-cache and the fuzz harnesses carry it.
//
// Traces reach gigabytes, so every reader streams: one kernel header, then that kernel's warp-level
// accesses one at a time, then the next kernel. docs/reference/gpu-memory-traces.md gives the exact
// text of every accepted format.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace gridcast::gpu_cache {

constexpr unsigned kWarpLanes = 32;

/// What a warp-level memory instruction does. Shared-memory and constant accesses never reach L1/L2
/// as data-cache traffic and are not part of a trace.
enum class AccessKind : std::uint8_t {
  GlobalLoad,   ///< LDG: through L1 (when cached) to L2
  GlobalStore,  ///< STG
  LocalLoad,    ///< LDL: per-thread local memory (spills, stack), cached in L1
  LocalStore,   ///< STL
  GlobalAtomic, ///< ATOM/RED on global memory: performed at L2, never cached in L1
};
const char* to_string(AccessKind kind);

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t count() const { return std::uint64_t(x) * y * z; }
};

/// One kernel launch as a trace describes it.
struct KernelLaunch {
  std::string name;                       ///< kernel (function) name, mangled or not, as recorded
  std::uint64_t launch_id = 0;            ///< 0-based order of the launch in its trace
  Dim3 grid;                              ///< CTAs
  Dim3 block;                             ///< threads per CTA
  std::uint32_t shared_bytes_per_cta = 0; ///< static + dynamic shared memory of one CTA
  std::uint32_t registers_per_thread = 0; ///< 0 = unknown (occupancy then ignores registers)
  double flops = -1;                      ///< floating-point operations of the whole launch; < 0 = unknown
};

/// One warp-level memory instruction: the addresses of its active lanes. The CTA is linear in the
/// launch's grid (x fastest), the warp is its index within the CTA (threads 32w..32w+31, x fastest).
struct WarpAccess {
  std::uint64_t cta = 0;
  std::uint32_t warp = 0;
  std::int32_t sm = -1;                   ///< the SM that ran the CTA, when the trace knows it; -1 = not known
  AccessKind kind = AccessKind::GlobalLoad;
  std::uint8_t bytes_per_lane = 4;        ///< 1, 2, 4, 8 or 16
  std::uint32_t active_mask = 0;          ///< bit i set = lane i accessed address[i]
  std::array<std::uint64_t, kWarpLanes> address{};  ///< byte addresses; inactive lanes' entries are unspecified
};

enum class TraceFormat {
  Auto,         ///< by content: the native header, NVBit's "MEMTRACE:" lines or Accel-Sim's "-kernel name"
  NativeJsonl,  ///< gridcast's JSON lines
  NativeBinary, ///< gridcast's binary encoding
  NvbitMemTrace,///< the text NVBit's tools/mem_trace prints
  AccelSim,     ///< Accel-Sim tracer's kernel-N.traceg files (one file, or the folder with kernelslist.g)
};

/// A streamed trace. next_kernel() advances to the next launch (skipping what is left of the current
/// one); next_access() gives the current launch's accesses in trace order and false at its end.
/// Errors (truncation, an unknown instruction, more than 32 addresses, a bad number) throw
/// gridcast::InputError naming the file and line (or byte offset for the binary encoding).
class TraceReader {
public:
  virtual ~TraceReader() = default;
  virtual bool next_kernel(KernelLaunch& launch) = 0;
  virtual bool next_access(WarpAccess& access) = 0;
  /// True when the accesses of a launch come grouped by CTA (all of one CTA, then the next: the native
  /// encodings as the generators write them, Accel-Sim); false when in time order (NVBit).
  virtual bool grouped_by_cta() const = 0;
};

std::unique_ptr<TraceReader> open_trace(const std::filesystem::path& path, TraceFormat format = TraceFormat::Auto);

/// Writes the native encodings (JSON lines when the path ends in .jsonl, binary otherwise). Accesses
/// belong to the last launch begun; close() (or the destructor) finishes the file.
class TraceWriter {
public:
  explicit TraceWriter(const std::filesystem::path& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  void begin_kernel(const KernelLaunch& launch);
  void write(const WarpAccess& access);
  void close();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gridcast::gpu_cache
