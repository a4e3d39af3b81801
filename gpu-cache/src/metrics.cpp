// The per-kernel metrics file and console table of `gridcast gpu-cache` (the contract with the kernel
// suite's compare.py: docs/reference/gpu-cache-model.md, "Metrics").
#include "gridcast/gpu_cache/model.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace gridcast::gpu_cache {

namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kKindKeys[kAccessKinds] = {"global_load", "global_store", "local_load", "local_store",
                                                 "global_atomic"};

ojson rate_json(std::uint64_t hits, std::uint64_t accesses)
{
  return accesses == 0 ? ojson(nullptr) : ojson(double(hits) / double(accesses));
}

ojson dim_json(const Dim3& d) { return ojson::array({d.x, d.y, d.z}); }

SectorCount sum(const KernelMetrics& m, std::initializer_list<AccessKind> kinds)
{
  SectorCount s;
  for (AccessKind k : kinds) {
    s.accesses += m.l1[std::size_t(k)].accesses;
    s.hits += m.l1[std::size_t(k)].hits;
  }
  return s;
}

SectorCount l1_all(const KernelMetrics& m)
{
  return sum(m, {AccessKind::GlobalLoad, AccessKind::GlobalStore, AccessKind::LocalLoad, AccessKind::LocalStore,
                 AccessKind::GlobalAtomic});
}

SectorCount l2_all(const KernelMetrics& m)
{
  return {m.l2.read_sectors + m.l2.write_sectors + m.l2.atomic_sectors, m.l2.read_hits + m.l2.write_hits + m.l2.atomic_hits};
}

}  // namespace

std::string metrics_json(const GpuSheet& sheet, const std::string& trace, const std::vector<KernelMetrics>& kernels)
{
  ojson doc;
  doc["gpu"]    = sheet.name;
  doc["trace"]  = trace;
  ojson& list   = doc["kernels"] = ojson::array();
  for (const KernelMetrics& m : kernels) {
    ojson k;
    k["name"]          = m.launch.name;
    k["launch_id"]     = m.launch.launch_id;
    k["grid"]          = dim_json(m.launch.grid);
    k["block"]         = dim_json(m.launch.block);
    k["warp_accesses"] = m.warp_accesses;
    k["occupancy"]     = {{"ctas_per_sm", m.occupancy.ctas_per_sm},
                          {"shared_carveout_bytes", m.occupancy.shared_carveout_bytes},
                          {"l1_bytes", m.occupancy.l1_bytes}};
    ojson sectors;
    for (std::size_t i = 0; i < kAccessKinds; ++i)
      sectors[kKindKeys[i]] = {{"accesses", m.l1[i].accesses}, {"hits", m.l1[i].hits}};
    const SectorCount all    = l1_all(m);
    const SectorCount global = sum(m, {AccessKind::GlobalLoad, AccessKind::GlobalStore, AccessKind::GlobalAtomic});
    const SectorCount& load  = m.l1[std::size_t(AccessKind::GlobalLoad)];
    k["l1"] = {{"sectors", sectors},
               {"hit_rate",
                {{"overall", rate_json(all.hits, all.accesses)},
                 {"global", rate_json(global.hits, global.accesses)},
                 {"global_load", rate_json(load.hits, load.accesses)}}}};
    const SectorCount l2 = l2_all(m);
    k["l2"] = {{"read_sectors", m.l2.read_sectors},
               {"read_hits", m.l2.read_hits},
               {"write_sectors", m.l2.write_sectors},
               {"write_hits", m.l2.write_hits},
               {"atomic_sectors", m.l2.atomic_sectors},
               {"hit_rate",
                {{"overall", rate_json(l2.hits, l2.accesses)},
                 {"read", rate_json(m.l2.read_hits, m.l2.read_sectors)},
                 {"write", rate_json(m.l2.write_hits, m.l2.write_sectors)}}}};
    k["dram"] = {{"read_sectors", m.dram.read_sectors},
                 {"write_sectors", m.dram.write_sectors},
                 {"dirty_sectors_at_end", m.dram.dirty_sectors_at_end}};
    k["time"] = {{"flops", m.time.flops < 0 ? ojson(nullptr) : ojson(m.time.flops)},
                 {"compute_s", m.time.compute_s},
                 {"l2_s", m.time.l2_s},
                 {"dram_s", m.time.dram_s},
                 {"launch_s", m.time.launch_s},
                 {"predicted_s", m.time.predicted_s},
                 {"bound", m.time.bound}};
    list.push_back(std::move(k));
  }
  return doc.dump(2) + "\n";
}

void print_table(std::ostream& out, const std::vector<KernelMetrics>& kernels)
{
  auto pct = [](std::uint64_t hits, std::uint64_t accesses) {
    char buf[16];
    if (accesses == 0)
      std::snprintf(buf, sizeof buf, "-");
    else
      std::snprintf(buf, sizeof buf, "%.1f", 100.0 * double(hits) / double(accesses));
    return std::string(buf);
  };
  char line[320];
  std::snprintf(line, sizeof line, "%-24s %6s %12s %7s %7s %7s %7s %12s %12s %12s  %s\n", "kernel", "launch",
                "warp-acc", "CTA/SM", "L1 KiB", "L1 hit%", "L2 hit%", "DRAM rd sec", "DRAM wr sec", "time us", "bound");
  out << line;
  for (const KernelMetrics& m : kernels) {
    const SectorCount l1 = l1_all(m), l2 = l2_all(m);
    std::string name     = m.launch.name.size() > 24 ? m.launch.name.substr(0, 21) + "..." : m.launch.name;
    std::snprintf(line, sizeof line, "%-24s %6llu %12llu %7u %7llu %7s %7s %12llu %12llu %12.3f  %s\n", name.c_str(),
                  static_cast<unsigned long long>(m.launch.launch_id), static_cast<unsigned long long>(m.warp_accesses),
                  m.occupancy.ctas_per_sm, static_cast<unsigned long long>(m.occupancy.l1_bytes / 1024),
                  pct(l1.hits, l1.accesses).c_str(), pct(l2.hits, l2.accesses).c_str(),
                  static_cast<unsigned long long>(m.dram.read_sectors), static_cast<unsigned long long>(m.dram.write_sectors),
                  m.time.predicted_s * 1e6, m.time.bound);
    out << line;
  }
}

}  // namespace gridcast::gpu_cache
