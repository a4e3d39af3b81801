// The pieces of the memory-system model below the scheduler: the coalescing of a warp-level access into
// per-line sector masks, the set index functions, and the sectored set-associative LRU cache with its
// write policies (the seed's section 4.1). The model (model.hpp) wires L1s and the L2 together.
#pragma once

#include "gridcast/gpu_cache/sheet.hpp"
#include "gridcast/gpu_cache/trace.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace gridcast::gpu_cache {

/// The sectors one warp-level access touches in one line: bit s of `sectors` = sector s of the line.
struct LineRequest {
  std::uint64_t line = 0;    ///< byte address / line size
  std::uint8_t sectors = 0;
};

/// A lane of 16 bytes can straddle two lines: 32 lanes touch at most 64.
constexpr unsigned kMaxLinesPerAccess = 2 * kWarpLanes;

/// Line and sector sizes as shifts (powers of two, at most 8 sectors a line).
struct LineShape {
  unsigned line_shift   = 7;  ///< log2(line bytes)
  unsigned sector_shift = 5;  ///< log2(sector bytes)
  static LineShape of(std::uint32_t line_bytes, std::uint32_t sector_bytes);
};

/// Coalesces the active lanes of `access` into the lines they touch, in ascending line order, each with
/// the mask of the sectors its lanes' bytes fall in (a lane's bytes that straddle sectors or lines touch
/// each). Returns how many entries of `out` are set.
unsigned coalesce(const WarpAccess& access, LineShape shape, std::array<LineRequest, kMaxLinesPerAccess>& out);

/// The set of a line in one slice of `sets` sets (see SetIndex). Ipoly and Xor need a power of two.
class SetIndexer {
public:
  SetIndexer() = default;
  SetIndexer(SetIndex kind, std::uint64_t sets);
  std::uint64_t operator()(std::uint64_t line) const
  {
    switch (kind_) {
      case SetIndex::Linear: return sets_ == mask_ + 1 ? line & mask_ : line % sets_;
      case SetIndex::Xor: return (line ^ (line >> bits_)) & (sets_ - 1);
      case SetIndex::Ipoly: return ipoly(line);
      case SetIndex::Hash: break;
    }
    return (((line * 0x9E3779B97F4A7C15ull) >> 32) * sets_) >> 32;  // the hash's top bits scaled to [0, sets)
  }
  /// The irreducible polynomial over GF(2) of degree `bits` that Ipoly reduces by (bit i = x^i).
  static std::uint64_t ipoly_polynomial(unsigned bits);

private:
  std::uint64_t ipoly(std::uint64_t line) const
  {
    std::uint64_t r = 0;
    for (unsigned b = 0; b < 8; ++b)
      r ^= residue_[b][(line >> (8 * b)) & 0xff];
    return r;
  }
  SetIndex kind_      = SetIndex::Linear;
  std::uint64_t sets_ = 1;
  std::uint64_t mask_ = 0;  ///< sets - 1 when a power of two
  unsigned bits_      = 0;
  /// residue_[b][v] = (v * x^(8b)) mod P: a line's residue is the XOR of its 8 bytes' residues.
  std::vector<std::array<std::uint32_t, 256>> residue_;
};

/// The slice of a line in an L2 of `slices` slices: a multiplicative hash (the real one is not public),
/// independent of the set index bits, its top 32 bits scaled to [0, slices) (no division).
inline std::uint32_t slice_of(std::uint64_t line, std::uint32_t slices)
{
  return std::uint32_t((((line * 0xD6E8FEB86659FD93ull) >> 32) * slices) >> 32);
}

/// `sectors` widened to the whole aligned groups of `group` sectors (a power of two) they fall in.
std::uint8_t widen(std::uint8_t sectors, std::uint32_t group);

/// What one line access did: the sectors that hit, those to read from the next level, those to write to
/// it, and the evicted line's dirty sectors (a write-back to the next level).
struct Outcome {
  std::uint8_t hit = 0;
  std::uint8_t fetch = 0;
  std::uint8_t forward = 0;
  std::uint8_t victim_dirty = 0;
  std::uint64_t victim_line = 0;  ///< set when victim_dirty is not 0
};

/// A sectored set-associative cache with LRU replacement. Lookup is O(1): each set has a small
/// open-addressing hash table (at most 2/3 full) from a line to its way, and keeps its
/// ways in an LRU doubly-linked list of way indices, so a hit, a fill and an eviction never scan the
/// ways. A set's table, tags, sector bits and links lie together in one block of whole cache lines (one
/// 64-byte line for a 4-way set): the model's speed is the host's memory latency, not arithmetic.
class SectorCache {
public:
  SectorCache() = default;
  explicit SectorCache(const CacheGeometry& g);

  Outcome read(std::uint64_t line, std::uint8_t sectors) { return read(line, sectors, set_of(line)); }
  Outcome write(std::uint64_t line, std::uint8_t sectors) { return write(line, sectors, set_of(line)); }
  /// A read-modify-write performed at this level (global atomics at L2): the missing sectors are read
  /// whatever the allocate policy, the line is allocated and its sectors written.
  Outcome atomic(std::uint64_t line, std::uint8_t sectors) { return atomic(line, sectors, set_of(line)); }
  /// The same with the line's set already computed (set_of), as the model's pipeline does.
  Outcome read(std::uint64_t line, std::uint8_t sectors, std::uint64_t set);
  Outcome write(std::uint64_t line, std::uint8_t sectors, std::uint64_t set);
  Outcome atomic(std::uint64_t line, std::uint8_t sectors, std::uint64_t set);
  /// Asks the host to bring a set's block into its cache ahead of an access: the model's speed is the
  /// latency of the host's memory, which prefetching a few accesses ahead hides.
  void prefetch(std::uint64_t set) const
  {
    // The table and the sector bits and links, not the tags: one line for a 4-way set, two for 20 ways.
    const std::uint8_t* b = block(set);
    for (std::size_t off = 0; off < tags_; off += 64)
      __builtin_prefetch(b + off, 1);
  }

  /// Empties the cache (dirty lines are dropped: write them back first with for_each_dirty).
  void clear();
  template <class F> void for_each_dirty(F&& f) const
  {
    for (std::uint64_t set = 0; set < sets_total_; ++set) {
      const std::uint8_t* b = block(set);
      for (std::uint32_t w = 0; w < ways_; ++w)
        if (b[valid_ + w] != 0 && b[dirty_ + w] != 0)
          f(tags(b)[w], b[dirty_ + w]);
    }
  }
  std::uint64_t dirty_sectors() const;
  const CacheGeometry& geometry() const { return g_; }
  /// The set (all slices numbered together) a line maps to.
  std::uint64_t set_of(std::uint64_t line) const
  {
    return std::uint64_t(slice_of(line, g_.slices)) * sets_ + index_(line);
  }
  /// The lines of a set from most to least recently used (tests).
  std::vector<std::uint64_t> lru_order(std::uint64_t set) const;

private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t(0);
  static constexpr int kNone = -1;
  struct alignas(64) CacheLine {
    std::uint8_t bytes[64];
  };

  // A set's block: [0] MRU way, [1] LRU way, [2, 2 + table) the hash table (way + 1, 0 = empty), the
  // valid, dirty, prev (toward MRU), next (toward LRU) and home (its line's table slot) bytes of each
  // way, then the tags (8-aligned). A way is empty when no sector is valid (every fill validates one).
  // Evictions and the table's shifts read the home bytes, never the tags: only a hit's compare and a
  // dirty victim's write-back touch the tags' lines.
  std::uint8_t* block(std::uint64_t set) { return reinterpret_cast<std::uint8_t*>(storage_.data()) + set * stride_; }
  const std::uint8_t* block(std::uint64_t set) const
  {
    return reinterpret_cast<const std::uint8_t*>(storage_.data()) + set * stride_;
  }
  std::uint64_t* tags(std::uint8_t* b) const { return reinterpret_cast<std::uint64_t*>(b + tags_); }
  const std::uint64_t* tags(const std::uint8_t* b) const { return reinterpret_cast<const std::uint64_t*>(b + tags_); }
  std::uint32_t home(std::uint64_t line) const { return std::uint32_t((line * 0xFF51AFD7ED558CCDull) >> table_shift_); }

  int find(const std::uint8_t* b, std::uint64_t line) const;
  void table_insert(std::uint8_t* b, std::uint64_t line, std::uint8_t way);
  void table_erase(std::uint8_t* b, std::uint8_t way);
  void touch(std::uint8_t* b, std::uint8_t way);
  /// The way holding `line`, made MRU (o.hit: the valid ones of `sectors`), or allocated when absent.
  std::uint8_t way_of(std::uint8_t* b, std::uint64_t line, std::uint8_t sectors, Outcome& o);
  /// Takes the set's LRU way for `line` (the victim's dirty sectors into `o`) and makes it MRU.
  std::uint8_t allocate(std::uint8_t* b, std::uint64_t line, Outcome& o);

  CacheGeometry g_;
  SetIndexer index_;
  std::uint64_t sets_ = 1;        ///< per slice
  std::uint64_t sets_total_ = 0;  ///< all slices
  std::uint32_t ways_ = 1;
  std::uint32_t table_size_ = 0;  ///< per set, a power of two >= 2 ways
  unsigned table_shift_ = 64;
  std::size_t tags_ = 0, valid_ = 0, dirty_ = 0, prev_ = 0, next_ = 0, home_ = 0, stride_ = 0;
  std::vector<CacheLine> storage_;
};

}  // namespace gridcast::gpu_cache
