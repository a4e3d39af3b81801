#include "gridcast/gpu_cache/cache.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <bit>

namespace gridcast::gpu_cache {

std::uint8_t widen(std::uint8_t sectors, std::uint32_t group)
{
  std::uint8_t out = 0;
  const auto whole = std::uint8_t((1u << group) - 1);
  for (std::uint32_t first = 0; first < 8; first += group)
    if ((sectors >> first) & whole)
      out |= std::uint8_t(whole << first);
  return out;
}

LineShape LineShape::of(std::uint32_t line_bytes, std::uint32_t sector_bytes)
{
  if (not std::has_single_bit(line_bytes) || not std::has_single_bit(sector_bytes) || sector_bytes > line_bytes ||
      line_bytes / sector_bytes > 8)
    throw InternalError("line/sector sizes must be powers of two with at most 8 sectors a line");
  return {unsigned(std::countr_zero(line_bytes)), unsigned(std::countr_zero(sector_bytes))};
}

namespace {

/// The lines and sectors of the bytes [first, last], in ascending order.
unsigned span_lines(std::uint64_t first, std::uint64_t last, LineShape shape,
                    std::array<LineRequest, kMaxLinesPerAccess>& out)
{
  const unsigned per_line            = shape.line_shift - shape.sector_shift;
  const std::uint64_t sector_in_line = (std::uint64_t(1) << per_line) - 1;
  unsigned lines                     = 0;
  for (std::uint64_t s = first >> shape.sector_shift, end = last >> shape.sector_shift; s <= end; ++s) {
    const std::uint64_t line = s >> per_line;
    const auto bit           = std::uint8_t(1u << (s & sector_in_line));
    if (lines > 0 && out[lines - 1].line == line)
      out[lines - 1].sectors |= bit;
    else
      out[lines++] = {line, bit};
  }
  return lines;
}

}  // namespace

unsigned coalesce(const WarpAccess& access, LineShape shape, std::array<LineRequest, kMaxLinesPerAccess>& out)
{
  // The common case first: all lanes on, each right after the one before (a fully coalesced access).
  if (access.active_mask == 0xffffffffu && access.bytes_per_lane > 0) {
    bool contiguous = true;
    for (unsigned l = 1; l < kWarpLanes; ++l)
      contiguous &= access.address[l] == access.address[l - 1] + access.bytes_per_lane;
    const std::uint64_t first = access.address[0], last = access.address[kWarpLanes - 1] + access.bytes_per_lane - 1;
    if (contiguous && last > first)
      return span_lines(first, last, shape, out);
  }
  // Sector numbers of every lane's first and last byte, duplicates next to each other dropped: lanes of
  // a coalesced access come in address order, so the list is usually sorted already and short.
  std::array<std::uint64_t, 2 * kWarpLanes> sectors;
  unsigned n       = 0;
  bool sorted      = true;
  const unsigned last_byte = access.bytes_per_lane == 0 ? 0 : access.bytes_per_lane - 1u;
  for (std::uint32_t mask = access.active_mask; mask != 0; mask &= mask - 1) {
    const std::uint64_t a  = access.address[unsigned(std::countr_zero(mask))];
    const std::uint64_t s0 = a >> shape.sector_shift;
    const std::uint64_t end = a > ~std::uint64_t(0) - last_byte ? ~std::uint64_t(0) : a + last_byte;  // no wrap
    const std::uint64_t s1  = end >> shape.sector_shift;  // a lane spans at most 2 sectors (16 <= 32 bytes)
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
  mask_ = std::has_single_bit(sets) ? sets - 1 : 0;
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
  if (g.ways == 0 || g.ways > 127 || g.slices == 0 || g.sets_per_slice() == 0 ||
      g.sets_per_slice() * g.ways * g.slices * g.line_bytes != g.bytes)
    throw InternalError("cache geometry not checked: " + std::to_string(g.bytes) + " bytes, " +
                        std::to_string(g.ways) + " ways");
  sets_       = g.sets_per_slice();
  sets_total_ = sets_ * g.slices;
  ways_       = g.ways;
  index_      = SetIndexer(g.set_index, sets_);
  table_size_  = std::bit_ceil(ways_ + ways_ / 2);  // at most 2/3 full
  table_shift_ = 64u - unsigned(std::countr_zero(table_size_));
  valid_       = 2 + table_size_;
  dirty_       = valid_ + ways_;
  prev_        = dirty_ + ways_;
  next_        = prev_ + ways_;
  home_        = next_ + ways_;
  tags_        = (home_ + ways_ + 7) / 8 * 8;
  stride_      = (tags_ + 8 * ways_ + 63) / 64 * 64;
  storage_.resize(sets_total_ * stride_ / 64);
  clear();
}

void SectorCache::clear()
{
  // Each set's list runs way 0 (MRU) .. way W-1 (LRU), all empty: a fill takes the LRU way, so empty
  // ways are used before any line is evicted.
  for (std::uint64_t set = 0; set < sets_total_; ++set) {
    std::uint8_t* b = block(set);
    std::fill(b, b + stride_, std::uint8_t(0));
    b[0] = 0;
    b[1] = std::uint8_t(ways_ - 1);
    for (std::uint32_t w = 0; w < ways_; ++w) {
      tags(b)[w]     = kEmpty;
      b[prev_ + w]   = std::uint8_t(w == 0 ? 0 : w - 1);
      b[next_ + w]   = std::uint8_t(w + 1 == ways_ ? w : w + 1);
    }
  }
}

std::uint64_t SectorCache::dirty_sectors() const
{
  std::uint64_t n = 0;
  for_each_dirty([&](std::uint64_t, std::uint8_t d) { n += unsigned(std::popcount(unsigned(d))); });
  return n;
}

std::vector<std::uint64_t> SectorCache::lru_order(std::uint64_t set) const
{
  std::vector<std::uint64_t> lines;
  const std::uint8_t* b = block(set);
  std::uint8_t w        = b[0];
  for (std::uint32_t i = 0; i < ways_; ++i) {
    if (b[valid_ + w] != 0)
      lines.push_back(tags(b)[w]);
    w = b[next_ + w];
  }
  return lines;
}

int SectorCache::find(const std::uint8_t* b, std::uint64_t line) const
{
  const std::uint8_t* table = b + 2;
  const std::uint32_t mask  = table_size_ - 1;
  for (std::uint32_t i = home(line);; i = (i + 1) & mask) {
    const std::uint8_t e = table[i];
    if (e == 0)
      return kNone;
    if (tags(b)[e - 1] == line)
      return e - 1;
  }
}

void SectorCache::table_insert(std::uint8_t* b, std::uint64_t line, std::uint8_t way)
{
  std::uint8_t* table      = b + 2;
  const std::uint32_t mask = table_size_ - 1;
  const std::uint32_t h    = home(line);
  std::uint32_t i          = h;
  while (table[i] != 0)
    i = (i + 1) & mask;
  table[i]          = std::uint8_t(way + 1);
  b[home_ + way]    = std::uint8_t(h);
}

void SectorCache::table_erase(std::uint8_t* b, std::uint8_t way)
{
  // Linear probing with backward-shift deletion: no tombstones, so probe lengths stay short forever.
  std::uint8_t* table      = b + 2;
  const std::uint32_t mask = table_size_ - 1;
  std::uint32_t i          = b[home_ + way];
  while (table[i] != way + 1)
    i = (i + 1) & mask;
  for (std::uint32_t j = (i + 1) & mask; table[j] != 0; j = (j + 1) & mask) {
    const std::uint32_t k = b[home_ + table[j] - 1];
    // Entry j may fill the hole at i unless its home lies cyclically in (i, j].
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (not stays) {
      table[i] = table[j];
      i        = j;
    }
  }
  table[i] = 0;
}

void SectorCache::touch(std::uint8_t* b, std::uint8_t w)
{
  if (b[0] == w)
    return;
  std::uint8_t* prev = b + prev_;
  std::uint8_t* next = b + next_;
  // Unlink (w is not the MRU, so it has a predecessor), then put in front.
  next[prev[w]] = next[w];
  if (b[1] == w)
    b[1] = prev[w];
  else
    prev[next[w]] = prev[w];
  next[w]    = b[0];
  prev[w]    = w;
  prev[b[0]] = w;
  b[0]       = w;
}

std::uint8_t SectorCache::allocate(std::uint8_t* b, std::uint64_t line, Outcome& o)
{
  const std::uint8_t w = b[1];
  if (b[valid_ + w] != 0) {
    o.victim_dirty = b[dirty_ + w];
    if (o.victim_dirty != 0)
      o.victim_line = tags(b)[w];
    table_erase(b, w);
  }
  tags(b)[w]     = line;
  b[valid_ + w]  = 0;
  b[dirty_ + w]  = 0;
  table_insert(b, line, w);
  touch(b, w);
  return w;
}

std::uint8_t SectorCache::way_of(std::uint8_t* b, std::uint64_t line, std::uint8_t sectors, Outcome& o)
{
  const int w = find(b, line);
  if (w == kNone)
    return allocate(b, line, o);
  o.hit = b[valid_ + w] & sectors;
  touch(b, std::uint8_t(w));
  return std::uint8_t(w);
}

Outcome SectorCache::read(std::uint64_t line, std::uint8_t sectors, std::uint64_t set)
{
  Outcome o;
  std::uint8_t* b      = block(set);
  const std::uint8_t w = way_of(b, line, sectors, o);
  o.fetch              = sectors & ~o.hit;
  if (o.fetch != 0 && g_.fetch_sectors > 1)
    o.fetch = std::uint8_t(widen(o.fetch, g_.fetch_sectors) & ~b[valid_ + w]);  // the groups' missing sectors
  b[valid_ + w] |= sectors | o.fetch;
  return o;
}

Outcome SectorCache::write(std::uint64_t line, std::uint8_t sectors, std::uint64_t set)
{
  Outcome o;
  const bool back = g_.write == WritePolicy::WriteBack;
  std::uint8_t* b = block(set);
  if (g_.allocate == WriteAllocate::None && find(b, line) == kNone) {
    o.forward = sectors;  // around the cache, whatever the write policy
    return o;
  }
  const std::uint8_t w = way_of(b, line, sectors, o);
  std::uint8_t& valid  = b[valid_ + w];
  std::uint8_t& dirty  = b[dirty_ + w];
  const auto missing   = std::uint8_t(sectors & ~valid);
  switch (g_.allocate) {
    case WriteAllocate::None:  // a present line: hit sectors are written, missing ones go below
      if (back) {
        dirty |= o.hit;
        o.forward = missing;
      } else {
        o.forward = sectors;
      }
      return o;
    case WriteAllocate::Fetch: o.fetch = missing; break;
    case WriteAllocate::Validate: break;
  }
  valid |= sectors;
  if (back)
    dirty |= sectors;
  else
    o.forward = sectors;
  return o;
}

Outcome SectorCache::atomic(std::uint64_t line, std::uint8_t sectors, std::uint64_t set)
{
  Outcome o;
  std::uint8_t* b      = block(set);
  const std::uint8_t w = way_of(b, line, sectors, o);
  o.fetch              = sectors & ~o.hit;
  b[valid_ + w] |= sectors;
  if (g_.write == WritePolicy::WriteBack)
    b[dirty_ + w] |= sectors;
  else
    o.forward = sectors;
  return o;
}

}  // namespace gridcast::gpu_cache
