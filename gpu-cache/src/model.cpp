#include "gridcast/gpu_cache/model.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <unordered_map>

namespace gridcast::gpu_cache {

namespace {

constexpr std::uint32_t kNoLimit = std::numeric_limits<std::uint32_t>::max();

/// Sectors in a mask (at most 8 a line): a table, since without -mpopcnt std::popcount is a library call.
constexpr auto kPopcount = [] {
  std::array<std::uint8_t, 256> t{};
  for (unsigned v = 0; v < 256; ++v)
    t[v] = std::uint8_t(std::popcount(v));
  return t;
}();
unsigned pop(std::uint8_t sectors) { return kPopcount[sectors]; }

std::string kernel_label(const KernelLaunch& launch)
{
  return "kernel '" + launch.name + "' (launch " + std::to_string(launch.launch_id) + ")";
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Occupancy: Eq. 3-6 (resident CTAs per SM) and Eq. 7 (the smallest carve-out that keeps them).

Occupancy occupancy(const GpuSheet& sheet, const KernelLaunch& launch)
{
  const std::uint64_t threads = launch.block.count();
  if (threads == 0 || threads > sheet.max_threads_per_cta)
    throw InputError({}, kernel_label(launch) + ": " + std::to_string(threads) + " threads per CTA; " + sheet.name +
                             " runs 1 to " + std::to_string(sheet.max_threads_per_cta));
  Occupancy occ;
  occ.warps_per_cta = std::uint32_t((threads + kWarpLanes - 1) / kWarpLanes);
  occ.limit_ctas    = sheet.max_ctas_per_sm;
  occ.limit_warps   = (sheet.max_threads_per_sm / kWarpLanes) / occ.warps_per_cta;  // Eq. 4, in whole warps
  occ.limit_registers = kNoLimit;
  if (launch.registers_per_thread > 0) {  // Eq. 5: registers are allocated per warp, in units
    const std::uint64_t unit     = sheet.register_allocation_unit;
    const std::uint64_t per_warp = (std::uint64_t(launch.registers_per_thread) * kWarpLanes + unit - 1) / unit * unit;
    occ.limit_registers          = std::uint32_t(sheet.registers_per_sm / (per_warp * occ.warps_per_cta));
  }
  const std::uint64_t shared_need =
      launch.shared_bytes_per_cta == 0 ? 0 : std::uint64_t(launch.shared_bytes_per_cta) + sheet.shared_reserved_bytes_per_cta;
  auto active = [&](std::uint64_t carveout) {  // Eq. 3 with Eq. 6 for a carve-out
    std::uint32_t n = std::min({occ.limit_ctas, occ.limit_warps, occ.limit_registers});
    if (shared_need > 0)
      n = std::min<std::uint64_t>(n, carveout / shared_need);
    return n;
  };
  occ.ctas_per_sm  = active(sheet.max_shared_bytes_per_sm);
  occ.limit_shared = shared_need == 0 ? kNoLimit : std::uint32_t(sheet.max_shared_bytes_per_sm / shared_need);
  if (occ.ctas_per_sm == 0)
    throw InputError({}, kernel_label(launch) + ": one CTA (" + std::to_string(threads) + " threads, " +
                             std::to_string(launch.registers_per_thread) + " registers per thread, " +
                             std::to_string(launch.shared_bytes_per_cta) + " bytes of shared memory) does not fit an SM of " +
                             sheet.name);
  for (std::uint32_t c : sheet.shared_carveouts_bytes)  // Eq. 7: ascending, the last is the maximum
    if (active(c) == occ.ctas_per_sm) {
      occ.shared_carveout_bytes = c;
      break;
    }
  occ.l1_bytes = sheet.unified_l1_shared_bytes_per_sm - occ.shared_carveout_bytes;
  return occ;
}

// ---------------------------------------------------------------------------------------------------
// The caches below the scheduler.

MemorySystem::MemorySystem(const GpuSheet& sheet, std::uint64_t l1_bytes) : sheet_(sheet), l2c_(sheet.l2)
{
  reset(l1_bytes);
}

void MemorySystem::reset(std::uint64_t l1_bytes)
{
  if (l1_bytes != l1_bytes_ || l1s_.empty()) {
    l1s_.assign(sheet_.sm_count, SectorCache(sheet_.l1_geometry(l1_bytes)));
    l1_bytes_ = l1_bytes;
  } else {
    for (SectorCache& c : l1s_)
      c.clear();
  }
  l2c_.clear();
  l2_head_ = l2_size_ = 0;
  l1   = {};
  l2   = {};
  dram = {};
}

void MemorySystem::access(const Request& r)
{
  SectorCount& count = l1[std::size_t(r.kind)];
  count.accesses += pop(r.sectors);
  switch (r.kind) {
    case AccessKind::GlobalLoad:
    case AccessKind::LocalLoad:
    case AccessKind::GlobalStore:
    case AccessKind::LocalStore: {
      // A load never forwards anything below; a store may fetch (write-allocate) and forward.
      const bool load = r.kind == AccessKind::GlobalLoad || r.kind == AccessKind::LocalLoad;
      const Outcome o = load ? l1s_[r.sm].read(r.line, r.sectors, r.l1_set) : l1s_[r.sm].write(r.line, r.sectors, r.l1_set);
      count.hits += pop(o.hit);
      l2_victim(o);
      if (o.fetch != 0)
        queue_l2(L2Kind::Read, r.line, o.fetch);
      if (o.forward != 0)
        queue_l2(L2Kind::Write, r.line, o.forward);
      return;
    }
    case AccessKind::GlobalAtomic:  // performed at L2: L1 neither hits nor keeps the line
      queue_l2(L2Kind::Atomic, r.line, r.sectors);
      return;
  }
}

void MemorySystem::l2_victim(const Outcome& o)
{
  if (o.victim_dirty != 0)
    queue_l2(L2Kind::Write, o.victim_line, o.victim_dirty);
}

void MemorySystem::queue_l2(L2Kind kind, std::uint64_t line, std::uint8_t sectors)
{
  if (l2_size_ == kL2Queue) {
    run_l2(l2_queue_[l2_head_]);
    l2_head_ = (l2_head_ + 1) % kL2Queue;
    --l2_size_;
  }
  L2Request& r = l2_queue_[(l2_head_ + l2_size_) % kL2Queue];
  r            = {line, l2c_.set_of(line), sectors, kind};
  l2c_.prefetch(r.set);
  ++l2_size_;
}

void MemorySystem::run_l2(const L2Request& r)
{
  switch (r.kind) {
    case L2Kind::Read: l2_read(r.line, r.sectors, r.set); return;
    case L2Kind::Write: l2_write(r.line, r.sectors, r.set); return;
    case L2Kind::Atomic: l2_atomic(r.line, r.sectors, r.set); return;
  }
}

void MemorySystem::drain_l2()
{
  for (; l2_size_ > 0; --l2_size_, l2_head_ = (l2_head_ + 1) % kL2Queue)
    run_l2(l2_queue_[l2_head_]);
}

void MemorySystem::l2_read(std::uint64_t line, std::uint8_t sectors, std::uint64_t set)
{
  l2.read_sectors += pop(sectors);
  const Outcome o = l2c_.read(line, sectors, set);
  l2.read_hits += pop(o.hit);
  dram_traffic(o);
}

void MemorySystem::l2_write(std::uint64_t line, std::uint8_t sectors, std::uint64_t set)
{
  l2.write_sectors += pop(sectors);
  const Outcome o = l2c_.write(line, sectors, set);
  // A write the L2 takes without reading anything from DRAM is a hit, as Nsight Compute counts it: under
  // write-validate every written sector (the line is allocated and the sectors made valid), otherwise the
  // sectors that were present.
  l2.write_hits += pop(l2c_.geometry().allocate == WriteAllocate::Validate ? sectors : o.hit);
  dram_traffic(o);
}

void MemorySystem::l2_atomic(std::uint64_t line, std::uint8_t sectors, std::uint64_t set)
{
  l2.atomic_sectors += pop(sectors);
  const Outcome o = l2c_.atomic(line, sectors, set);
  l2.atomic_hits += pop(o.hit);
  dram_traffic(o);
}

void MemorySystem::dram_traffic(const Outcome& o)
{
  // What L2 sends below: fetches are reads; dirty victims and write-through stores are writes.
  dram.read_sectors += pop(o.fetch);
  dram.write_sectors += pop(o.victim_dirty) + pop(o.forward);
}

void MemorySystem::finish()
{
  drain_l2();
  std::vector<LineRequest> dirty;
  for (const SectorCache& c : l1s_) {
    dirty.clear();
    c.for_each_dirty([&](std::uint64_t line, std::uint8_t sectors) { dirty.push_back({line, sectors}); });
    std::sort(dirty.begin(), dirty.end(), [](const LineRequest& a, const LineRequest& b) { return a.line < b.line; });
    for (const LineRequest& r : dirty)
      l2_write(r.line, r.sectors, l2c_.set_of(r.line));
  }
  dram.dirty_sectors_at_end = l2c_.dirty_sectors();
}

// ---------------------------------------------------------------------------------------------------
// The scheduler.

Model::Model(const GpuSheet& sheet, ModelOptions options)
    : sheet_(sheet), options_(options), shape_(LineShape::of(sheet.line_bytes, sheet.sector_bytes)),
      memory_(sheet, sheet.unified_l1_shared_bytes_per_sm - sheet.shared_carveouts_bytes.front())
{
}

std::vector<KernelMetrics> Model::simulate(TraceReader& reader)
{
  std::vector<KernelMetrics> all;
  KernelLaunch launch;
  while (reader.next_kernel(launch))
    all.push_back(simulate_kernel(launch, reader));
  return all;
}

KernelMetrics Model::simulate_kernel(const KernelLaunch& launch, TraceReader& reader)
{
  KernelMetrics m;
  m.launch    = launch;
  m.occupancy = occupancy(sheet_, launch);
  memory_.reset(m.occupancy.l1_bytes);
  if (reader.grouped_by_cta())
    run_grouped(m.occupancy, reader, m.warp_accesses);
  else
    run_in_order(m.occupancy, reader, m.warp_accesses);
  drain();
  memory_.finish();
  m.l1   = memory_.l1;
  m.l2   = memory_.l2;
  m.dram = memory_.dram;
  m.time = kernel_time(sheet_, m, options_.precision);
  return m;
}

void Model::issue(std::uint32_t sm, AccessKind kind, std::uint64_t line, std::uint8_t sectors)
{
  // The requests' order is the scheduler's alone (never the caches' state), so the sets of the next
  // kPipeline requests can be fetched into the host's cache while the current one runs.
  if (pipeline_size_ == kPipeline) {
    const MemorySystem::Request& r = pipeline_[pipeline_head_];
    memory_.access(r);
    if (observer_)
      observer_(r.sm, r.kind, r.line, r.sectors);
    --pipeline_size_;
    pipeline_head_ = (pipeline_head_ + 1) % kPipeline;
  }
  MemorySystem::Request& r = pipeline_[(pipeline_head_ + pipeline_size_) % kPipeline];
  r                        = {sm, kind, sectors, line};
  memory_.locate(r);
  ++pipeline_size_;
}

void Model::drain()
{
  for (; pipeline_size_ > 0; --pipeline_size_, pipeline_head_ = (pipeline_head_ + 1) % kPipeline) {
    const MemorySystem::Request& r = pipeline_[pipeline_head_];
    memory_.access(r);
    if (observer_)
      observer_(r.sm, r.kind, r.line, r.sectors);
  }
}

namespace {

/// One coalesced line request of a buffered access; `last` closes the warp-level access.
struct Buffered {
  std::uint64_t line;
  std::uint8_t sectors;
  AccessKind kind;
  bool last;
};

struct CtaBuffer {
  std::vector<std::vector<Buffered>> warps;  ///< capacity kept between CTAs: memory follows residency
  std::vector<std::size_t> position;
  std::uint32_t live_warps = 0;
  std::uint64_t requests   = 0;
};

struct ActiveWarp {
  CtaBuffer* cta;
  std::uint32_t warp;
};

struct SmQueue {
  std::vector<ActiveWarp> warps;  ///< resident warps in round-robin order
  std::size_t next = 0;
};

}  // namespace

void Model::run_grouped(const Occupancy& occ, TraceReader& reader, std::uint64_t& warp_accesses)
{
  // The trace gives one CTA after the other, the hardware runs ctas_per_sm of them on every SM at once:
  // the resident CTAs' accesses are buffered (coalesced), and replayed warp by warp in round-robin.
  const std::uint32_t sms = sheet_.sm_count;
  std::vector<std::unique_ptr<CtaBuffer>> pool;  // free buffers
  std::vector<SmQueue> queue(sms);
  WarpAccess pending;
  bool has_pending = reader.next_access(pending);
  std::uint64_t buffered = 0;
  std::array<LineRequest, kMaxLinesPerAccess> lines;

  auto read_cta = [&]() -> CtaBuffer* {
    if (not has_pending)
      return nullptr;
    std::unique_ptr<CtaBuffer> owned;
    if (pool.empty()) {
      owned = std::make_unique<CtaBuffer>();
    } else {
      owned = std::move(pool.back());
      pool.pop_back();
    }
    CtaBuffer* b = owned.release();
    for (auto& w : b->warps)
      w.clear();
    const std::uint64_t cta = pending.cta;
    do {
      if (pending.warp >= occ.warps_per_cta)
        throw InputError({}, "CTA " + std::to_string(cta) + ": an access of warp " + std::to_string(pending.warp) +
                                 " in a CTA of " + std::to_string(occ.warps_per_cta) + " warps");
      if (b->warps.size() < occ.warps_per_cta)
        b->warps.resize(occ.warps_per_cta);
      ++warp_accesses;
      const unsigned n = coalesce(pending, shape_, lines);
      auto& w          = b->warps[pending.warp];
      for (unsigned i = 0; i < n; ++i)
        w.push_back({lines[i].line, lines[i].sectors, pending.kind, i + 1 == n});
      buffered += n;
      has_pending = reader.next_access(pending);
    } while (has_pending && pending.cta == cta);
    b->position.assign(b->warps.size(), 0);
    b->live_warps = 0;
    b->requests   = 0;
    for (const auto& w : b->warps) {
      b->live_warps += w.empty() ? 0 : 1;
      b->requests += w.size();
    }
    peak_buffered_ = std::max(peak_buffered_, buffered);
    return b;
  };
  auto place = [&](std::uint32_t sm, CtaBuffer* b) {
    for (std::uint32_t w = 0; w < b->warps.size(); ++w)
      if (not b->warps[w].empty())
        queue[sm].warps.push_back({b, w});
    if (b->live_warps == 0)  // a CTA whose accesses touched nothing (no active lane)
      pool.emplace_back(b);
  };

  // Launch: the first CTAs round-robin over the SMs, up to ctas_per_sm each.
  const std::uint64_t first_wave = std::uint64_t(sms) * occ.ctas_per_sm;
  for (std::uint64_t j = 0; j < first_wave; ++j) {
    CtaBuffer* b = read_cta();
    if (b == nullptr)
      break;
    place(std::uint32_t(j % sms), b);
  }
  std::vector<std::uint32_t> active;
  for (std::uint32_t sm = 0; sm < sms; ++sm)
    if (not queue[sm].warps.empty())
      active.push_back(sm);

  // Rounds: every SM with work issues one warp-level access of its next resident warp.
  while (not active.empty()) {
    std::size_t kept = 0;
    for (std::uint32_t sm : active) {
      SmQueue& q          = queue[sm];
      const ActiveWarp aw = q.warps[q.next];
      auto& items         = aw.cta->warps[aw.warp];
      std::size_t& pos    = aw.cta->position[aw.warp];
      for (;;) {
        const Buffered& r = items[pos++];
        issue(sm, r.kind, r.line, r.sectors);
        if (r.last)
          break;
      }
      if (pos == items.size()) {  // the warp is done
        q.warps.erase(q.warps.begin() + std::ptrdiff_t(q.next));
        if (--aw.cta->live_warps == 0) {  // the CTA is done: the SM takes the next one
          buffered -= aw.cta->requests;
          pool.emplace_back(aw.cta);
          while (CtaBuffer* b = read_cta()) {
            place(sm, b);
            if (b->live_warps > 0)
              break;
          }
        }
      } else {
        ++q.next;
      }
      if (q.next >= q.warps.size())
        q.next = 0;
      if (not q.warps.empty()) {  // this SM's next warp runs a round later: fetch its requests now
        const ActiveWarp& n = q.warps[q.next];
        __builtin_prefetch(n.cta->warps[n.warp].data() + n.cta->position[n.warp]);
      }
      if (not q.warps.empty())
        active[kept++] = sm;
    }
    active.resize(kept);
  }
}

void Model::run_in_order(const Occupancy& occ, TraceReader& reader, std::uint64_t& warp_accesses)
{
  // Time order: the trace is the issue order. A CTA's SM is the trace's when it says, else the
  // scheduler's: the first CTAs round-robin, then a new CTA takes the SM of the resident CTA that was
  // idle the longest (taken for finished).
  const std::uint32_t sms = sheet_.sm_count;
  const std::uint64_t slots = std::uint64_t(sms) * occ.ctas_per_sm;
  struct Resident {
    std::uint32_t sm;
    std::uint64_t last_seen;
  };
  std::unordered_map<std::uint64_t, Resident> resident;
  std::array<LineRequest, kMaxLinesPerAccess> lines;
  WarpAccess a;
  std::uint64_t t = 0;
  while (reader.next_access(a)) {
    ++warp_accesses;
    ++t;
    std::uint32_t sm = 0;
    if (options_.use_trace_sm && a.sm >= 0) {
      sm = std::uint32_t(a.sm) % sms;
    } else if (auto it = resident.find(a.cta); it != resident.end()) {
      it->second.last_seen = t;
      sm                   = it->second.sm;
    } else {
      if (resident.size() < slots) {
        sm = std::uint32_t(resident.size() % sms);
      } else {
        auto oldest = resident.begin();
        for (auto r = resident.begin(); r != resident.end(); ++r)
          if (r->second.last_seen < oldest->second.last_seen)
            oldest = r;
        sm = oldest->second.sm;
        resident.erase(oldest);
      }
      resident.emplace(a.cta, Resident{sm, t});
    }
    const unsigned n = coalesce(a, shape_, lines);
    for (unsigned i = 0; i < n; ++i)
      issue(sm, a.kind, lines[i].line, lines[i].sectors);
  }
}

// ---------------------------------------------------------------------------------------------------
// Kernel time.

KernelTime kernel_time(const GpuSheet& sheet, const KernelMetrics& m, Precision precision, const Calibration& c)
{
  KernelTime t;
  const double sector = sheet.sector_bytes;
  const double l2_bytes = double(m.l2.read_sectors + m.l2.write_sectors + m.l2.atomic_sectors) * sector;
  const double dram_bytes = double(m.dram.read_sectors + m.dram.write_sectors) * sector;
  const double peak = precision == Precision::Fp64 ? sheet.fp64_flops_per_s : sheet.fp32_flops_per_s;
  t.flops     = m.launch.flops;
  t.compute_s = t.flops >= 0 ? t.flops / peak : 0;
  t.l2_s      = l2_bytes / sheet.l2_bandwidth_bytes_per_s;
  t.dram_s    = dram_bytes / sheet.dram_bandwidth_bytes_per_s;
  t.launch_s  = sheet.kernel_launch_s;
  t.latency_s = c.exposed_sm_cycles / (sheet.sm_clock_hz * double(sheet.sm_count));
  const double work = std::max({t.compute_s, t.l2_s, t.dram_s});
  t.predicted_s     = work + t.launch_s + t.latency_s;
  if (std::max(work, t.latency_s) <= 0 || t.launch_s >= std::max(work, t.latency_s))
    t.bound = "launch";
  else if (t.latency_s > work)
    t.bound = "latency";
  else if (work == t.dram_s)
    t.bound = "dram";
  else if (work == t.l2_s)
    t.bound = "l2";
  else
    t.bound = "compute";
  return t;
}

Calibration calibrate(const GpuSheet& source_sheet, const KernelTime& source, double measured_s)
{
  Calibration c;
  const double roofline_s = source.predicted_s - source.latency_s;
  if (measured_s > roofline_s)
    c.exposed_sm_cycles = (measured_s - roofline_s) * source_sheet.sm_clock_hz * double(source_sheet.sm_count);
  return c;
}

double rate(std::uint64_t hits, std::uint64_t accesses)
{
  return accesses == 0 ? -1.0 : double(hits) / double(accesses);
}

}  // namespace gridcast::gpu_cache
