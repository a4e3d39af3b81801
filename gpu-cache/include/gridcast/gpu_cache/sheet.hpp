// GPU memory data sheets (platforms/gpus/*.json): what the memory-system model (model.hpp) needs to know
// of a GPU -- SMs and their occupancy limits, the unified L1/shared-memory array and its carve-outs, the
// L1 and L2 geometries and policies, and the peaks of the bounded roofline. Every key carries its unit
// in its name; docs/reference/gpu-cache-model.md gives each figure's source.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gridcast::gpu_cache {

/// How an address's line picks its set (cache.hpp implements each).
enum class SetIndex {
  Linear,  ///< line modulo sets
  Xor,     ///< the set bits XOR the next higher bits (power-of-two sets)
  Ipoly,   ///< the line as a GF(2) polynomial modulo an irreducible one (Rau, ISCA 1991; power-of-two sets)
  Hash,    ///< a multiplicative hash of the line, modulo sets (any number of sets)
};
enum class WritePolicy { WriteThrough, WriteBack };
/// What a store that misses does: None leaves the line out (the store goes to the next level), Fetch
/// reads the missing sectors from the next level and allocates them (the seed's write-allocate), Validate
/// allocates the written sectors without reading them (a store covers its sectors).
enum class WriteAllocate { None, Fetch, Validate };

const char* to_string(SetIndex v);
const char* to_string(WritePolicy v);
const char* to_string(WriteAllocate v);

/// One sectored, set-associative LRU cache (an L1, or the whole L2 when slices > 1).
struct CacheGeometry {
  std::uint64_t bytes        = 0;    ///< capacity (all slices)
  std::uint32_t line_bytes   = 128;
  std::uint32_t sector_bytes = 32;
  std::uint32_t ways         = 4;
  std::uint32_t slices       = 1;    ///< L2 slices (address -> slice by a hash); sets are per slice
  SetIndex set_index         = SetIndex::Linear;
  WritePolicy write          = WritePolicy::WriteBack;
  WriteAllocate allocate     = WriteAllocate::Fetch;
  /// Sectors a read miss brings from below together: the missing sectors of the aligned groups of this
  /// many sectors that hold the requested ones (1: the sector alone; 2: 64 bytes, as Ampere's and
  /// Hopper's L2 fetch from DRAM). The extra sectors are fills, not accesses: a later request hits them.
  std::uint32_t fetch_sectors = 1;

  std::uint64_t lines() const { return bytes / line_bytes; }
  std::uint64_t sets_per_slice() const { return lines() / (std::uint64_t(ways) * slices); }
};

/// The policies of an L1 (its size follows the kernel's carve-out, so it is not part of it).
struct L1Policy {
  std::uint32_t ways     = 4;
  SetIndex set_index     = SetIndex::Hash;
  WritePolicy write      = WritePolicy::WriteThrough;
  WriteAllocate allocate = WriteAllocate::Fetch;
};

struct GpuSheet {
  std::string name;
  std::string file;  ///< where it was read from (errors, the metrics' "gpu")

  std::uint32_t sm_count = 0;
  // Occupancy limits of one SM (Eq. 3-6 of the seed).
  std::uint32_t max_threads_per_sm        = 2048;
  std::uint32_t max_threads_per_cta       = 1024;
  std::uint32_t max_ctas_per_sm           = 32;
  std::uint32_t registers_per_sm          = 65536;
  std::uint32_t register_allocation_unit  = 256;   ///< registers are given to a warp in multiples of this
  std::uint32_t max_shared_bytes_per_sm   = 0;     ///< the largest carve-out
  std::uint32_t shared_reserved_bytes_per_cta = 0; ///< what the driver adds to a CTA that uses shared memory
  // The unified L1/shared-memory array (Eq. 7): L1 = unified - carve-out.
  std::uint64_t unified_l1_shared_bytes_per_sm = 0;
  std::vector<std::uint32_t> shared_carveouts_bytes;  ///< ascending; the last is max_shared_bytes_per_sm

  std::uint32_t line_bytes   = 128;
  std::uint32_t sector_bytes = 32;
  L1Policy l1;
  CacheGeometry l2;

  // The bounded roofline's peaks (model.hpp: kernel_time).
  double sm_clock_hz                = 0;
  double fp32_flops_per_s           = 0;
  double fp64_flops_per_s           = 0;
  double l2_bandwidth_bytes_per_s   = 0;
  double dram_bandwidth_bytes_per_s = 0;
  double kernel_launch_s            = 0;

  /// The geometry of an L1 of `bytes` with this sheet's lines and policies.
  CacheGeometry l1_geometry(std::uint64_t bytes) const;
};

/// Reads and checks a data sheet; errors name the file and the key path (InputError, exit 1): an unknown
/// key, a missing one, a bad value, or figures that contradict each other (sets that are not whole, an
/// ipoly index over a number of sets that is not a power of two, carve-outs beyond the unified array).
GpuSheet read_gpu_sheet(const std::filesystem::path& file);

/// The same checks of the cache geometry (an L1 of a carve-out, the L2): throws InputError at `context`.
void check_geometry(const CacheGeometry& g, const std::string& file, const std::string& key);

}  // namespace gridcast::gpu_cache
