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
      case SetIndex::Linear: return line % sets_;
      case SetIndex::Xor: return (line ^ (line >> bits_)) & (sets_ - 1);
      case SetIndex::Ipoly: return ipoly(line);
      case SetIndex::Hash: break;
    }
    return ((line * 0x9E3779B97F4A7C15ull) >> 20) % sets_;
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
  unsigned bits_      = 0;
  /// residue_[b][v] = (v * x^(8b)) mod P: a line's residue is the XOR of its 8 bytes' residues.
  std::vector<std::array<std::uint32_t, 256>> residue_;
};

/// The slice of a line in an L2 of `slices` slices: a multiplicative hash (the real one is not public),
/// independent of the set index bits.
inline std::uint32_t slice_of(std::uint64_t line, std::uint32_t slices)
{
  return slices == 1 ? 0 : std::uint32_t(((line * 0xD6E8FEB86659FD93ull) >> 32) % slices);
}

/// What one line access did: the sectors that hit, those to read from the next level, those to write to
/// it, and the evicted line's dirty sectors (a write-back to the next level).
struct Outcome {
  std::uint8_t hit = 0;
  std::uint8_t fetch = 0;
  std::uint8_t forward = 0;
  std::uint8_t victim_dirty = 0;
  std::uint64_t victim_line = 0;
};

/// A sectored set-associative cache with LRU replacement. Lookup is O(1): an open-addressing hash table
/// maps a line to its slot; each set keeps its ways in an LRU doubly-linked list (way indices), so a hit,
/// a fill and an eviction never scan the ways.
class SectorCache {
public:
  SectorCache() = default;
  explicit SectorCache(const CacheGeometry& g);

  Outcome read(std::uint64_t line, std::uint8_t sectors);
  Outcome write(std::uint64_t line, std::uint8_t sectors);
  /// A read-modify-write performed at this level (global atomics at L2): the missing sectors are read
  /// whatever the allocate policy, the line is allocated and its sectors written.
  Outcome atomic(std::uint64_t line, std::uint8_t sectors);

  /// Empties the cache (dirty lines are dropped: write them back first with for_each_dirty).
  void clear();
  template <class F> void for_each_dirty(F&& f) const
  {
    for (const Slot& s : slots_)
      if (s.line != kEmpty && s.dirty != 0)
        f(s.line, s.dirty);
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
  struct Slot {
    std::uint64_t line = kEmpty;
    std::uint8_t valid = 0, dirty = 0;
    std::uint8_t prev = 0, next = 0;  ///< ways of the same set, toward MRU / LRU
  };
  struct SetHead {
    std::uint8_t mru = 0, lru = 0;
  };
  struct Entry {
    std::uint64_t line;
    std::uint32_t slot;
  };

  std::uint32_t find(std::uint64_t line) const;
  void table_insert(std::uint64_t line, std::uint32_t slot);
  void table_erase(std::uint64_t line);
  std::size_t home(std::uint64_t line) const { return (line * 0x9E3779B97F4A7C15ull) >> table_shift_; }
  void touch(std::uint64_t set, std::uint32_t slot);
  /// Takes the set's LRU way for `line` (the victim's dirty sectors into `o`) and makes it MRU.
  std::uint32_t allocate(std::uint64_t line, Outcome& o);

  CacheGeometry g_;
  SetIndexer index_;
  std::uint64_t sets_ = 1;  ///< per slice
  std::uint32_t ways_ = 1;
  std::vector<Slot> slots_;       ///< set * ways + way
  std::vector<SetHead> heads_;
  std::vector<Entry> table_;      ///< power-of-two size, at most half full
  unsigned table_shift_ = 64;
};

}  // namespace gridcast::gpu_cache
