#include "gridcast/gpu_cache/sheet.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/json_reader.hpp"

#include <bit>

namespace gridcast::gpu_cache {

const char* to_string(SetIndex v)
{
  switch (v) {
    case SetIndex::Linear: return "linear";
    case SetIndex::Xor: return "xor";
    case SetIndex::Ipoly: return "ipoly";
    case SetIndex::Hash: return "hash";
  }
  return "?";
}

const char* to_string(WritePolicy v) { return v == WritePolicy::WriteBack ? "write_back" : "write_through"; }

const char* to_string(WriteAllocate v)
{
  switch (v) {
    case WriteAllocate::None: return "none";
    case WriteAllocate::Fetch: return "fetch";
    case WriteAllocate::Validate: return "validate";
  }
  return "?";
}

CacheGeometry GpuSheet::l1_geometry(std::uint64_t bytes) const
{
  CacheGeometry g;
  g.bytes        = bytes;
  g.line_bytes   = line_bytes;
  g.sector_bytes = sector_bytes;
  g.ways         = l1.ways;
  g.slices       = 1;
  g.set_index    = l1.set_index;
  g.write        = l1.write;
  g.allocate     = l1.allocate;
  return g;
}

void check_geometry(const CacheGeometry& g, const std::string& file, const std::string& key)
{
  auto fail = [&](const std::string& reason) { throw InputError({file, 0, key, -1}, reason); };
  const std::uint64_t per_set = std::uint64_t(g.line_bytes) * g.ways * g.slices;
  if (g.bytes == 0 || g.bytes % per_set != 0)
    fail(std::to_string(g.bytes) + " bytes is not a whole number of sets of " + std::to_string(g.ways) + " ways of " +
         std::to_string(g.line_bytes) + "-byte lines" + (g.slices > 1 ? " in " + std::to_string(g.slices) + " slices" : ""));
  const std::uint64_t sets = g.sets_per_slice();
  if ((g.set_index == SetIndex::Ipoly || g.set_index == SetIndex::Xor) && not std::has_single_bit(sets))
    fail(std::string(to_string(g.set_index)) + " set index needs a power-of-two number of sets per slice, got " +
         std::to_string(sets) + " (use \"hash\")");
  if (g.set_index == SetIndex::Ipoly && sets > (std::uint64_t(1) << 20))
    fail("ipoly set index: more than 2^20 sets per slice");
}

namespace {

SetIndex set_index_of(const JsonObject& o, std::string_view key)
{
  const std::string v = o.string(key);
  if (v == "linear") return SetIndex::Linear;
  if (v == "xor") return SetIndex::Xor;
  if (v == "ipoly") return SetIndex::Ipoly;
  if (v == "hash") return SetIndex::Hash;
  o.fail(key, "expected linear, xor, ipoly or hash, got '" + v + "'");
}

WritePolicy write_policy_of(const JsonObject& o, std::string_view key)
{
  const std::string v = o.string(key);
  if (v == "write_back") return WritePolicy::WriteBack;
  if (v == "write_through") return WritePolicy::WriteThrough;
  o.fail(key, "expected write_back or write_through, got '" + v + "'");
}

WriteAllocate write_allocate_of(const JsonObject& o, std::string_view key)
{
  const std::string v = o.string(key);
  if (v == "none") return WriteAllocate::None;
  if (v == "fetch") return WriteAllocate::Fetch;
  if (v == "validate") return WriteAllocate::Validate;
  o.fail(key, "expected none, fetch or validate, got '" + v + "'");
}

std::uint32_t u32(const JsonObject& o, std::string_view key, std::int64_t lo = 1)
{
  return std::uint32_t(o.integer(key, lo, 0xffffffffll));
}

}  // namespace

GpuSheet read_gpu_sheet(const std::filesystem::path& file)
{
  const nlohmann::json j = read_json_file(file, "GPU data sheet");
  const JsonObject root(j, file.string());
  root.only({"name", "notes", "sm_count", "max_threads_per_sm", "max_threads_per_cta", "max_ctas_per_sm",
             "registers_per_sm", "register_allocation_unit", "shared_reserved_bytes_per_cta",
             "unified_l1_shared_bytes_per_sm", "shared_carveouts_bytes", "line_bytes", "sector_bytes", "l1", "l2",
             "sm_clock_hz", "fp32_flops_per_s", "fp64_flops_per_s", "l2_bandwidth_bytes_per_s",
             "dram_bandwidth_bytes_per_s", "kernel_launch_s"});
  GpuSheet s;
  s.file = file.string();
  s.name = root.string("name");
  if (root.has("notes"))
    (void)root.strings("notes");
  s.sm_count                      = u32(root, "sm_count");
  s.max_threads_per_sm            = u32(root, "max_threads_per_sm", 32);
  s.max_threads_per_cta           = u32(root, "max_threads_per_cta");
  s.max_ctas_per_sm               = u32(root, "max_ctas_per_sm");
  s.registers_per_sm              = u32(root, "registers_per_sm");
  s.register_allocation_unit      = u32(root, "register_allocation_unit");
  s.shared_reserved_bytes_per_cta = u32(root, "shared_reserved_bytes_per_cta", 0);
  s.unified_l1_shared_bytes_per_sm = u32(root, "unified_l1_shared_bytes_per_sm");
  s.line_bytes                    = u32(root, "line_bytes");
  s.sector_bytes                  = u32(root, "sector_bytes");
  if (not std::has_single_bit(s.line_bytes) || s.line_bytes > 4096)
    root.fail("line_bytes", "expected a power of two up to 4096, got " + std::to_string(s.line_bytes));
  if (not std::has_single_bit(s.sector_bytes) || s.sector_bytes > s.line_bytes || s.line_bytes / s.sector_bytes > 8 ||
      s.sector_bytes < 16)
    root.fail("sector_bytes", "expected a power of two of at least 16 bytes, 1 to 8 sectors a line, got " +
                                  std::to_string(s.sector_bytes));

  const auto carveouts = root.integers("shared_carveouts_bytes", 0, 0xffffffffll);
  if (carveouts.empty())
    root.fail("shared_carveouts_bytes", "expected at least one carve-out");
  for (std::size_t i = 0; i < carveouts.size(); ++i) {
    const std::string key = "shared_carveouts_bytes[" + std::to_string(i) + "]";
    if (i > 0 && carveouts[i] <= carveouts[i - 1])
      throw InputError(root.at(key), "carve-outs must be in ascending order");
    if (std::uint64_t(carveouts[i]) >= s.unified_l1_shared_bytes_per_sm)
      throw InputError(root.at(key), "a carve-out of " + std::to_string(carveouts[i]) +
                                         " bytes leaves no L1 in a unified array of " +
                                         std::to_string(s.unified_l1_shared_bytes_per_sm) + " bytes");
    s.shared_carveouts_bytes.push_back(std::uint32_t(carveouts[i]));
  }
  s.max_shared_bytes_per_sm = s.shared_carveouts_bytes.back();

  const JsonObject l1 = root.child("l1");
  l1.only({"ways", "set_index", "write_policy", "write_allocate"});
  s.l1.ways      = std::uint32_t(l1.integer("ways", 1, 127));
  s.l1.set_index = set_index_of(l1, "set_index");
  s.l1.write     = write_policy_of(l1, "write_policy");
  s.l1.allocate  = write_allocate_of(l1, "write_allocate");
  for (std::uint32_t c : s.shared_carveouts_bytes)  // every L1 size a carve-out leaves must be a cache
    check_geometry(s.l1_geometry(s.unified_l1_shared_bytes_per_sm - c), s.file, "l1 (with a carve-out of " + std::to_string(c) + " bytes)");

  const JsonObject l2 = root.child("l2");
  l2.only({"bytes", "ways", "slices", "set_index", "write_policy", "write_allocate", "fetch_bytes"});
  s.l2.bytes        = std::uint64_t(l2.integer("bytes", 1));
  s.l2.line_bytes   = s.line_bytes;
  s.l2.sector_bytes = s.sector_bytes;
  s.l2.ways         = std::uint32_t(l2.integer("ways", 1, 127));
  s.l2.slices       = u32(l2, "slices");
  s.l2.set_index    = set_index_of(l2, "set_index");
  s.l2.write        = write_policy_of(l2, "write_policy");
  s.l2.allocate     = write_allocate_of(l2, "write_allocate");
  if (l2.has("fetch_bytes")) {
    const auto fetch = std::uint64_t(l2.integer("fetch_bytes", 1));
    if (fetch % s.sector_bytes != 0 || fetch > s.line_bytes || ((fetch / s.sector_bytes) & (fetch / s.sector_bytes - 1)) != 0)
      throw InputError({s.file, 0, "l2.fetch_bytes", -1},
                       "expected a power-of-two number of " + std::to_string(s.sector_bytes) + "-byte sectors, at most a " +
                           std::to_string(s.line_bytes) + "-byte line; got " + std::to_string(fetch));
    s.l2.fetch_sectors = std::uint32_t(fetch / s.sector_bytes);
  }
  check_geometry(s.l2, s.file, "l2");

  using B = JsonObject::Bound;
  s.sm_clock_hz                = root.number("sm_clock_hz", B::Positive);
  s.fp32_flops_per_s           = root.number("fp32_flops_per_s", B::Positive);
  s.fp64_flops_per_s           = root.number("fp64_flops_per_s", B::Positive);
  s.l2_bandwidth_bytes_per_s   = root.number("l2_bandwidth_bytes_per_s", B::Positive);
  s.dram_bandwidth_bytes_per_s = root.number("dram_bandwidth_bytes_per_s", B::Positive);
  s.kernel_launch_s            = root.number("kernel_launch_s", B::NonNegative);
  return s;
}

}  // namespace gridcast::gpu_cache
