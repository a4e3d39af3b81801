// The memory-system model of a GPU (seed 004, sections 3-4): CTAs scheduled onto SMs as the hardware's
// block scheduler does, the resident warps' accesses interleaved one at a time, coalesced into sector
// requests, filtered through each SM's L1 (sized by the adaptive carve-out of Eq. 7), the misses, stores
// and atomics sent to one sliced L2, whose misses and dirty evictions are the DRAM traffic. Then a
// bounded roofline turns the traffic into a kernel time on the sheet's GPU.
// docs/reference/gpu-cache-model.md maps the seed's method to these functions.
#pragma once

#include "gridcast/gpu_cache/cache.hpp"
#include "gridcast/gpu_cache/sheet.hpp"
#include "gridcast/gpu_cache/trace.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace gridcast::gpu_cache {

constexpr std::size_t kAccessKinds = 5;

/// Resident CTAs per SM (Eq. 3-6) and the carve-out that keeps them (Eq. 7).
struct Occupancy {
  std::uint32_t ctas_per_sm = 0;
  std::uint32_t warps_per_cta = 0;
  std::uint32_t shared_carveout_bytes = 0;
  std::uint64_t l1_bytes = 0;
  // The limits of Eq. 3 (0xffffffff = no limit from that resource).
  std::uint32_t limit_warps = 0, limit_registers = 0, limit_shared = 0, limit_ctas = 0;
};

/// Eq. 3-7 for one launch. Throws InputError (naming the kernel) when one CTA does not fit an SM.
Occupancy occupancy(const GpuSheet& sheet, const KernelLaunch& launch);

/// Sectors accessed and found valid.
struct SectorCount {
  std::uint64_t accesses = 0, hits = 0;
};

struct L2Count {
  std::uint64_t read_sectors = 0, read_hits = 0;
  std::uint64_t write_sectors = 0, write_hits = 0;
  std::uint64_t atomic_sectors = 0, atomic_hits = 0;
};

struct DramCount {
  std::uint64_t read_sectors = 0, write_sectors = 0;
  std::uint64_t dirty_sectors_at_end = 0;  ///< dirty in L2 when the kernel ends (not yet written)
};

enum class Precision { Fp32, Fp64 };

/// The bounded roofline: max(compute, L2 bytes / L2 bandwidth, DRAM bytes / DRAM bandwidth) + launch, plus
/// the exposed latency a calibration measured (Calibration).
struct KernelTime {
  double flops = -1;  ///< < 0: unknown (compute_s is then 0)
  double compute_s = 0, l2_s = 0, dram_s = 0, launch_s = 0, latency_s = 0, predicted_s = 0;
  /// dram, l2, compute, latency or launch: the largest term (launch when it is at least all the others)
  const char* bound = "launch";
};

/// What a duration measured on the source GPU adds to the roofline: the time no term at its peak
/// explains. A kernel slower than its roofline waits on memory latency that too few warps hide (a row
/// walk of 6 144 threads on 132 SMs); that time does not shrink with more bandwidth but with more SMs
/// and a faster clock, so it is kept as SM cycles of the whole GPU (seconds x clock x SMs).
struct Calibration {
  double exposed_sm_cycles = 0;
};
struct KernelMetrics {
  KernelLaunch launch;
  std::uint64_t warp_accesses = 0;
  Occupancy occupancy;
  std::array<SectorCount, kAccessKinds> l1{};  ///< by AccessKind
  L2Count l2;
  DramCount dram;
  KernelTime time;
};

/// Time of a kernel on `sheet`'s GPU from its traffic and flops, plus the calibrated exposed latency
/// spread over this GPU's SMs at its clock.
KernelTime kernel_time(const GpuSheet& sheet, const KernelMetrics& m, Precision precision = Precision::Fp32,
                       const Calibration& calibration = {});

/// Calibration on the source GPU (`source_sheet`, where the kernel's model time is `source`) from the
/// kernel's measured duration there: the part of it the roofline does not explain (0 when the kernel ran
/// at least as fast as the roofline says). Apply it to kernel_time of the same kernel on the target.
Calibration calibrate(const GpuSheet& source_sheet, const KernelTime& source, double measured_s);

struct ModelOptions {
  Precision precision = Precision::Fp32;
  bool use_trace_sm   = true;  ///< time-ordered traces: the SM the trace names (modulo the sheet's SMs)
};

/// L1s of every SM and the L2 with their counters: the part of the model below the scheduler, fed one
/// coalesced access at a time (the tests' reference simulator checks exactly this).
class MemorySystem {
public:
  MemorySystem(const GpuSheet& sheet, std::uint64_t l1_bytes);
  /// Empties the caches and the counters; L1s of a new size when it changed.
  void reset(std::uint64_t l1_bytes);
  void access(std::uint32_t sm, AccessKind kind, const LineRequest* lines, unsigned count)
  {
    for (unsigned i = 0; i < count; ++i)
      access_line(sm, kind, lines[i].line, lines[i].sectors);
  }
  void access_line(std::uint32_t sm, AccessKind kind, std::uint64_t line, std::uint8_t sectors)
  {
    Request r{sm, kind, sectors, line};
    locate(r);
    access(r);
  }

  /// One line request with its L1 set: locate() computes it and prefetches the set's block, access()
  /// runs it some requests later (Model's pipeline), when the block is in the host's cache. What L1
  /// sends to L2 waits likewise in a queue of its own (its set prefetched when queued), so L2 blocks are
  /// fetched only for L1's misses; L2 sees its requests in the same order. The counters are complete
  /// after finish().
  struct Request {
    std::uint32_t sm;
    AccessKind kind;
    std::uint8_t sectors;
    std::uint64_t line;
    std::uint64_t l1_set = 0;
  };
  void locate(Request& r) const
  {
    if (r.kind != AccessKind::GlobalAtomic) {
      r.l1_set = l1s_[r.sm].set_of(r.line);
      l1s_[r.sm].prefetch(r.l1_set);
    }
  }
  void access(const Request& r);
  /// Kernel end: dirty L1 lines written to L2 (write-back L1s; SM by SM, each SM's lines in ascending
  /// order), L2's dirty sectors counted.
  void finish();

  std::array<SectorCount, kAccessKinds> l1{};
  L2Count l2;
  DramCount dram;

private:
  enum class L2Kind : std::uint8_t { Read, Write, Atomic };
  struct L2Request {
    std::uint64_t line, set;
    std::uint8_t sectors;
    L2Kind kind;
  };
  void queue_l2(L2Kind kind, std::uint64_t line, std::uint8_t sectors);
  void run_l2(const L2Request& r);
  void drain_l2();
  static constexpr std::size_t kL2Queue = 16;
  std::array<L2Request, kL2Queue> l2_queue_{};
  std::size_t l2_head_ = 0, l2_size_ = 0;

  void l2_read(std::uint64_t line, std::uint8_t sectors, std::uint64_t set);
  void l2_write(std::uint64_t line, std::uint8_t sectors, std::uint64_t set);
  void l2_atomic(std::uint64_t line, std::uint8_t sectors, std::uint64_t set);
  void l2_victim(const Outcome& o);
  void dram_traffic(const Outcome& o);

  const GpuSheet& sheet_;
  std::uint64_t l1_bytes_ = 0;
  std::vector<SectorCache> l1s_;
  SectorCache l2c_;
};

/// Runs every kernel of a trace (or the next one: simulate_kernel) through the model.
class Model {
public:
  explicit Model(const GpuSheet& sheet, ModelOptions options = {});
  /// The current kernel of `reader` (after its next_kernel() gave `launch`): all of its accesses.
  KernelMetrics simulate_kernel(const KernelLaunch& launch, TraceReader& reader);
  std::vector<KernelMetrics> simulate(TraceReader& reader);
  /// Called with every line request in the order the model issues them (the scheduler's tests).
  using Observer = std::function<void(std::uint32_t sm, AccessKind kind, std::uint64_t line, std::uint8_t sectors)>;
  void set_observer(Observer observer) { observer_ = std::move(observer); }
  /// Peak number of line requests buffered for resident CTAs so far (traces grouped by CTA).
  std::uint64_t peak_buffered_accesses() const { return peak_buffered_; }

private:
  void run_grouped(const Occupancy& occ, TraceReader& reader, std::uint64_t& warp_accesses);
  void run_in_order(const Occupancy& occ, TraceReader& reader, std::uint64_t& warp_accesses);
  /// The pipeline: a request is located (its sets prefetched) on issue and run kPipeline issues later.
  void issue(std::uint32_t sm, AccessKind kind, std::uint64_t line, std::uint8_t sectors);
  void drain();
  static constexpr std::size_t kPipeline = 32;
  std::array<MemorySystem::Request, kPipeline> pipeline_{};
  std::size_t pipeline_head_ = 0, pipeline_size_ = 0;

  const GpuSheet& sheet_;
  ModelOptions options_;
  LineShape shape_;
  MemorySystem memory_;
  std::uint64_t peak_buffered_ = 0;
  Observer observer_;
};

/// Hit rate of a count: hits / accesses, or < 0 when there was no access ("null" in the metrics).
double rate(std::uint64_t hits, std::uint64_t accesses);

/// The metrics file (docs/reference/gpu-cache-model.md, "Metrics"): deterministic, keys in a fixed order.
std::string metrics_json(const GpuSheet& sheet, const std::string& trace, const std::vector<KernelMetrics>& kernels);
/// The console table: one line per kernel.
void print_table(std::ostream& out, const std::vector<KernelMetrics>& kernels);

}  // namespace gridcast::gpu_cache
