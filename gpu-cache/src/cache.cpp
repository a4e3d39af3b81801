#include "gridcast/gpu_cache/cache.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <bit>

namespace gridcast::gpu_cache {

LineShape LineShape::of(std::uint32_t line_bytes, std::uint32_t sector_bytes)
{
  if (not std::has_single_bit(line_bytes) || not std::has_single_bit(sector_bytes) || sector_bytes > line_bytes ||
      line_bytes / sector_bytes > 8)
    throw InternalError("line/sector sizes must be powers of two with at most 8 sectors a line");
  return {unsigned(std::countr_zero(line_bytes)), unsigned(std::countr_zero(sector_bytes))};
}

unsigned coalesce(const WarpAccess& access, LineShape shape, std::array<LineRequest, kMaxLinesPerAccess>& out)
{
  // Sector numbers of every lane's first and last byte, duplicates next to each other dropped: lanes of
  // a coalesced access come in address order, so the list is usually sorted already and short.
  std::array<std::uint64_t, 2 * kWarpLanes> sectors;
  unsigned n       = 0;
  bool sorted      = true;
  const unsigned last_byte = access.bytes_per_lane == 0 ? 0 : access.bytes_per_lane - 1u;
  for (std::uint32_t mask = access.active_mask; mask != 0; mask &= mask - 1) {
    const std::uint64_t a  = access.address[unsigned(std::countr_zero(mask))];
    const std::uint64_t s0 = a >> shape.sector_shift;
    const std::uint64_t s1 = (a + last_byte) >> shape.sector_shift;  // a lane spans at most 2 sectors (16 <= 32 bytes)
    for (std::uint64_t s = s0;; s = s1) {
      if (n == 0 || sectors[n - 1] != s) {
        sorted = sorted && (n == 0 || sectors[n - 1] < s);
        sectors[n++] = s;
      }
      if (s == s1)
        break;
    }
  }
  if (not sorted) {
    std::sort(sectors.begin(), sectors.begin() + n);
    n = unsigned(std::unique(sectors.begin(), sectors.begin() + n) - sectors.begin());
  }
  const unsigned per_line = shape.line_shift - shape.sector_shift;
  const std::uint64_t sector_in_line = (std::uint64_t(1) << per_line) - 1;
  unsigned lines = 0;
  for (unsigned i = 0; i < n; ++i) {
    const std::uint64_t line = sectors[i] >> per_line;
    const auto bit           = std::uint8_t(1u << (sectors[i] & sector_in_line));
    if (lines > 0 && out[lines - 1].line == line)
      out[lines - 1].sectors |= bit;
    else
      out[lines++] = {line, bit};
  }
  return lines;
}

std::uint64_t SetIndexer::ipoly_polynomial(unsigned bits)
{
  // Primitive (hence irreducible) polynomials of each degree, bit i = x^i; the tests check that none
  // has a factor.
  static constexpr std::uint64_t kPolynomials[] = {
      0x1,     0x3,     0x7,     0xB,     0x13,    0x25,    0x43,     0x83,     0x11D,    0x211,   0x409,
      0x805,   0x1053,  0x201B,  0x4443,  0x8003,  0x1100B, 0x20009,  0x40081,  0x80027,  0x100009};
  if (bits >= std::size(kPolynomials))
    throw InternalError("ipoly set index: more than 2^20 sets per slice");
  return kPolynomials[bits];
}

SetIndexer::SetIndexer(SetIndex kind, std::uint64_t sets) : kind_(kind), sets_(sets)
{
  if (sets == 0)
    throw InternalError("a cache of no set");
  if ((kind == SetIndex::Ipoly || kind == SetIndex::Xor) && not std::has_single_bit(sets))
    throw InternalError("ipoly and xor set indexes need a power-of-two number of sets");
  bits_ = unsigned(std::countr_zero(sets));
  if (kind != SetIndex::Ipoly)
    return;
  // x^i mod P for every bit i of a 64-bit line number, then the residue of each byte value at each of
  // the 8 byte positions: reduction is linear over GF(2).
  const std::uint64_t p = ipoly_polynomial(bits_);
  std::array<std::uint32_t, 64> bit_residue{};
  std::uint64_t r = 1;
  for (unsigned i = 0; i < 64; ++i) {
    bit_residue[i] = std::uint32_t(r);
    r <<= 1;
    if (bits_ > 0 && (r >> bits_) & 1)
      r ^= p;
    if (bits_ == 0)
      r = 0;
  }
  if (bits_ == 0)
    bit_residue.fill(0);
  residue_.assign(8, {});
  for (unsigned b = 0; b < 8; ++b)
    for (unsigned v = 0; v < 256; ++v) {
      std::uint32_t x = 0;
      for (unsigned k = 0; k < 8; ++k)
        if ((v >> k) & 1)
          x ^= bit_residue[8 * b + k];
      residue_[b][v] = x;
    }
}

SectorCache::SectorCache(const CacheGeometry& g) : g_(g)
{
  if (g.ways == 0 || g.ways > 255 || g.slices == 0 || g.sets_per_slice() == 0 ||
      g.sets_per_slice() * g.ways * g.slices * g.line_bytes != g.bytes)
    throw InternalError("cache geometry not checked: " + std::to_string(g.bytes) + " bytes, " +
                        std::to_string(g.ways) + " ways");
  sets_  = g.sets_per_slice();
  ways_  = g.ways;
  index_ = SetIndexer(g.set_index, sets_);
  const std::uint64_t all_sets = sets_ * g.slices;
  slots_.resize(all_sets * ways_);
  heads_.resize(all_sets);
  std::size_t size = 16;
  while (size < 2 * slots_.size())
    size *= 2;
  table_.resize(size);
  table_shift_ = 64u - unsigned(std::countr_zero(size));
  clear();
}

void SectorCache::clear()
{
  // Each set's list runs way 0 (MRU) .. way W-1 (LRU), all empty: a fill takes the LRU way, so empty
  // ways are used before any line is evicted.
  for (std::uint64_t set = 0; set < heads_.size(); ++set) {
    Slot* s = &slots_[set * ways_];
    for (std::uint32_t w = 0; w < ways_; ++w) {
      s[w] = Slot{};
      s[w].prev = std::uint8_t(w == 0 ? 0 : w - 1);
      s[w].next = std::uint8_t(w + 1 == ways_ ? w : w + 1);
    }
    heads_[set] = {0, std::uint8_t(ways_ - 1)};
  }
  for (Entry& e : table_)
    e = {kEmpty, 0};
}

std::uint64_t SectorCache::dirty_sectors() const
{
  std::uint64_t n = 0;
  for (const Slot& s : slots_)
    if (s.line != kEmpty)
      n += unsigned(std::popcount(unsigned(s.dirty)));
  return n;
}

std::vector<std::uint64_t> SectorCache::lru_order(std::uint64_t set) const
{
  std::vector<std::uint64_t> lines;
  std::uint8_t w = heads_[set].mru;
  for (std::uint32_t i = 0; i < ways_; ++i) {
    const Slot& s = slots_[set * ways_ + w];
    if (s.line != kEmpty)
      lines.push_back(s.line);
    w = s.next;
  }
  return lines;
}

std::uint32_t SectorCache::find(std::uint64_t line) const
{
  const std::size_t mask = table_.size() - 1;
  for (std::size_t i = home(line);; i = (i + 1) & mask) {
    if (table_[i].line == line)
      return table_[i].slot;
    if (table_[i].line == kEmpty)
      return ~std::uint32_t(0);
  }
}

void SectorCache::table_insert(std::uint64_t line, std::uint32_t slot)
{
  const std::size_t mask = table_.size() - 1;
  std::size_t i          = home(line);
  while (table_[i].line != kEmpty)
    i = (i + 1) & mask;
  table_[i] = {line, slot};
}

void SectorCache::table_erase(std::uint64_t line)
{
  // Linear probing with backward-shift deletion: no tombstones, so probe lengths stay short forever.
  const std::size_t mask = table_.size() - 1;
  std::size_t i          = home(line);
  while (table_[i].line != line)
    i = (i + 1) & mask;
  for (std::size_t j = (i + 1) & mask; table_[j].line != kEmpty; j = (j + 1) & mask) {
    const std::size_t k = home(table_[j].line);
    // Entry j may fill the hole at i unless its home lies cyclically in (i, j].
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (not stays) {
      table_[i] = table_[j];
      i         = j;
    }
  }
  table_[i].line = kEmpty;
}

void SectorCache::touch(std::uint64_t set, std::uint32_t slot)
{
  SetHead& h       = heads_[set];
  Slot* base       = &slots_[set * ways_];
  const auto w     = std::uint8_t(slot - set * ways_);
  if (h.mru == w)
    return;
  Slot& s = base[w];
  // Unlink (w is not the MRU, so it has a predecessor), then put in front.
  base[s.prev].next = s.next;
  if (h.lru == w)
    h.lru = s.prev;
  else
    base[s.next].prev = s.prev;
  s.next           = h.mru;
  s.prev           = w;
  base[h.mru].prev = w;
  h.mru            = w;
}

std::uint32_t SectorCache::allocate(std::uint64_t line, Outcome& o)
{
  const std::uint64_t set = set_of(line);
  const std::uint32_t slot = std::uint32_t(set * ways_ + heads_[set].lru);
  Slot& s                  = slots_[slot];
  if (s.line != kEmpty) {
    o.victim_line  = s.line;
    o.victim_dirty = s.dirty;
    table_erase(s.line);
  }
  s.line  = line;
  s.valid = 0;
  s.dirty = 0;
  table_insert(line, slot);
  touch(set, slot);
  return slot;
}

Outcome SectorCache::read(std::uint64_t line, std::uint8_t sectors)
{
  Outcome o;
  std::uint32_t slot = find(line);
  if (slot == ~std::uint32_t(0)) {
    slot = allocate(line, o);
  } else {
    o.hit = slots_[slot].valid & sectors;
    touch(slot / ways_, slot);
  }
  o.fetch = sectors & ~o.hit;
  slots_[slot].valid |= sectors;
  return o;
}

Outcome SectorCache::write(std::uint64_t line, std::uint8_t sectors)
{
  Outcome o;
  const bool back    = g_.write == WritePolicy::WriteBack;
  std::uint32_t slot = find(line);
  if (slot == ~std::uint32_t(0)) {
    if (g_.allocate == WriteAllocate::None) {
      o.forward = sectors;  // around the cache, whatever the write policy
      return o;
    }
    slot = allocate(line, o);
  } else {
    o.hit = slots_[slot].valid & sectors;
    touch(slot / ways_, slot);
  }
  Slot& s              = slots_[slot];
  const auto missing   = std::uint8_t(sectors & ~s.valid);
  switch (g_.allocate) {
    case WriteAllocate::None:  // a present line: hit sectors are written, missing ones go below
      if (back) {
        s.dirty |= o.hit;
        o.forward = missing;
      } else {
        o.forward = sectors;
      }
      return o;
    case WriteAllocate::Fetch: o.fetch = missing; break;
    case WriteAllocate::Validate: break;
  }
  s.valid |= sectors;
  if (back)
    s.dirty |= sectors;
  else
    o.forward = sectors;
  return o;
}

Outcome SectorCache::atomic(std::uint64_t line, std::uint8_t sectors)
{
  Outcome o;
  std::uint32_t slot = find(line);
  if (slot == ~std::uint32_t(0)) {
    slot = allocate(line, o);
  } else {
    o.hit = slots_[slot].valid & sectors;
    touch(slot / ways_, slot);
  }
  Slot& s = slots_[slot];
  o.fetch = sectors & ~s.valid;
  s.valid |= sectors;
  if (g_.write == WritePolicy::WriteBack)
    s.dirty |= sectors;
  else
    o.forward = sectors;
  return o;
}

}  // namespace gridcast::gpu_cache
