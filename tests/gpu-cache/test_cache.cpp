// The pieces below the scheduler, against hand-computed answers: coalescing into sector masks, the set
// index functions, LRU order, and every write policy of the sectored cache.
#include "gridcast/gpu_cache/cache.hpp"
#include "model_support.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace gridcast::gpu_cache;
using gridcast::gpu_cache::test::warp_access;

namespace {

std::vector<std::pair<std::uint64_t, unsigned>> coalesced(const WarpAccess& a)
{
  std::array<LineRequest, kMaxLinesPerAccess> out;
  const unsigned n = coalesce(a, LineShape::of(128, 32), out);
  std::vector<std::pair<std::uint64_t, unsigned>> v;
  for (unsigned i = 0; i < n; ++i)
    v.emplace_back(out[i].line, out[i].sectors);
  return v;
}

using Lines = std::vector<std::pair<std::uint64_t, unsigned>>;

}  // namespace

TEST_CASE("gpu-cache coalescing: 32 lanes of 4 contiguous bytes are one line of 4 sectors")
{
  CHECK(coalesced(warp_access(0, 0, AccessKind::GlobalLoad, 1280)) == Lines{{10, 0b1111}});
  // 8-byte lanes: 256 bytes, two lines.
  CHECK(coalesced(warp_access(0, 0, AccessKind::GlobalLoad, 1280, 8, 32, 8)) == Lines{{10, 0b1111}, {11, 0b1111}});
}

TEST_CASE("gpu-cache coalescing: the seed's Fig. 2 - 4 lanes of 8 bytes at a 64-byte stride touch 4 sectors in 2 lines")
{
  CHECK(coalesced(warp_access(0, 0, AccessKind::GlobalLoad, 0, 64, 4, 8)) == Lines{{0, 0b0101}, {1, 0b0101}});
}

TEST_CASE("gpu-cache coalescing: a lane straddling a sector or a line touches both")
{
  WarpAccess a = warp_access(0, 0, AccessKind::GlobalLoad, 30, 0, 1, 4);  // bytes 30..33
  CHECK(coalesced(a) == Lines{{0, 0b0011}});
  a.address[0] = 126;  // bytes 126..129: sector 3 of line 0, sector 0 of line 1
  CHECK(coalesced(a) == Lines{{0, 0b1000}, {1, 0b0001}});
  a.bytes_per_lane = 16;
  a.address[0]     = 120;  // bytes 120..135
  CHECK(coalesced(a) == Lines{{0, 0b1000}, {1, 0b0001}});
  a.bytes_per_lane = 1;
  a.address[0]     = 127;
  CHECK(coalesced(a) == Lines{{0, 0b1000}});
}

TEST_CASE("gpu-cache coalescing: inactive lanes are ignored - lines come in ascending order - duplicates merge")
{
  WarpAccess a = warp_access(0, 0, AccessKind::GlobalLoad, 0, 0, 32, 4);
  a.active_mask = 0b1010;
  a.address[1]  = 5 * 128 + 64;
  a.address[3]  = 2 * 128 + 32;
  a.address[0]  = 9 * 128;  // inactive
  a.address[2]  = 7 * 128;  // inactive
  CHECK(coalesced(a) == Lines{{2, 0b0010}, {5, 0b0100}});
  a.active_mask = 0b1111;
  a.address[0]  = 5 * 128 + 96;
  a.address[2]  = 2 * 128 + 32;  // same sector as lane 3
  CHECK(coalesced(a) == Lines{{2, 0b0010}, {5, 0b1100}});
  a.active_mask = 0;
  CHECK(coalesced(a).empty());
}

TEST_CASE("gpu-cache set index: the ipoly polynomials are irreducible")
{
  auto degree = [](std::uint64_t p) { return 63 - std::countl_zero(p); };
  auto mod    = [&](std::uint64_t a, std::uint64_t p) {
    while (a != 0 && degree(a) >= degree(p))
      a ^= p << (degree(a) - degree(p));
    return a;
  };
  for (unsigned bits = 1; bits <= 20; ++bits) {
    const std::uint64_t p = SetIndexer::ipoly_polynomial(bits);
    REQUIRE(degree(p) == int(bits));
    for (std::uint64_t d = 2; degree(d) <= int(bits) / 2; ++d)
      CHECK(mod(p, d) != 0);
  }
}

TEST_CASE("gpu-cache set index: ipoly spreads every power-of-two stride over all sets")
{
  for (std::uint64_t sets : {16ull, 256ull, 1024ull}) {
    const SetIndexer index(SetIndex::Ipoly, sets);
    for (unsigned j = 0; j <= 24; ++j) {
      std::set<std::uint64_t> seen;
      for (std::uint64_t k = 0; k < sets; ++k)
        seen.insert(index((k << j) ^ 12345));  // a constant XORed in keeps the map one-to-one
      CHECK(seen.size() == sets);
    }
  }
  // A linear index puts a stride of `sets` lines in one set.
  const SetIndexer linear(SetIndex::Linear, 256);
  std::set<std::uint64_t> seen;
  for (std::uint64_t k = 0; k < 256; ++k)
    seen.insert(linear(k * 256));
  CHECK(seen.size() == 1);
}

TEST_CASE("gpu-cache set index: linear - xor and hash by hand")
{
  CHECK(SetIndexer(SetIndex::Linear, 24)(50) == 2);
  CHECK(SetIndexer(SetIndex::Xor, 16)(0x35) == ((0x5 ^ 0x3) & 15));
  const SetIndexer hash(SetIndex::Hash, 24);
  std::vector<int> count(24);
  for (std::uint64_t line = 0; line < 24000; ++line)
    ++count[hash(line * 4096)];
  for (int c : count) {
    CHECK(c > 800);
    CHECK(c < 1200);
  }
}

TEST_CASE("gpu-cache LRU: a hit moves the line to the front - a fill evicts the least recently used")
{
  SectorCache c({512, 128, 32, 4, 1, SetIndex::Linear, WritePolicy::WriteBack, WriteAllocate::Fetch});
  for (std::uint64_t line : {1, 2, 3, 4})
    c.read(line, 1);
  CHECK(c.lru_order(0) == std::vector<std::uint64_t>{4, 3, 2, 1});
  CHECK(c.read(2, 1).hit == 1);
  CHECK(c.lru_order(0) == std::vector<std::uint64_t>{2, 4, 3, 1});
  const Outcome o = c.read(5, 1);
  CHECK(o.hit == 0);
  CHECK(o.victim_dirty == 0);  // line 1 left clean
  CHECK(c.lru_order(0) == std::vector<std::uint64_t>{5, 2, 4, 3});
  c.read(3, 1);
  c.read(6, 1);  // evicts 4
  CHECK(c.lru_order(0) == std::vector<std::uint64_t>{6, 3, 5, 2});
}

TEST_CASE("gpu-cache read: sectors of a present line miss until fetched")
{
  SectorCache c({256, 128, 32, 2, 1, SetIndex::Linear, WritePolicy::WriteBack, WriteAllocate::Fetch});
  Outcome o = c.read(0, 0b0001);
  CHECK((o.hit == 0 && o.fetch == 0b0001 && o.victim_dirty == 0));
  o = c.read(0, 0b0011);
  CHECK((o.hit == 0b0001 && o.fetch == 0b0010));
  o = c.read(1, 0b1111);
  CHECK((o.hit == 0 && o.fetch == 0b1111));
  o = c.read(2, 0b0001);  // evicts line 0, clean
  CHECK((o.fetch == 0b0001 && o.victim_dirty == 0));
  CHECK(c.read(1, 0b1111).hit == 0b1111);
  CHECK(c.read(0, 0b0001).hit == 0);
}

TEST_CASE("gpu-cache read: a 64-byte fetch brings the other sector of the pair, which a later read hits")
{
  CHECK(widen(0b0001, 2) == 0b0011);
  CHECK(widen(0b0100, 2) == 0b1100);
  CHECK(widen(0b0110, 2) == 0b1111);
  CHECK(widen(0b0010, 4) == 0b1111);
  CHECK(widen(0b1000, 1) == 0b1000);
  CacheGeometry g{256, 128, 32, 2, 1, SetIndex::Linear, WritePolicy::WriteBack, WriteAllocate::Validate};
  g.fetch_sectors = 2;
  SectorCache c(g);
  Outcome o = c.read(0, 0b0001);  // sector 0 misses: sectors 0 and 1 come from below
  CHECK((o.hit == 0 && o.fetch == 0b0011));
  o = c.read(0, 0b0010);  // the fill: a hit, nothing fetched
  CHECK((o.hit == 0b0010 && o.fetch == 0));
  o = c.read(0, 0b1100);  // both of the other pair requested: fetched once each
  CHECK((o.hit == 0 && o.fetch == 0b1100));
  CHECK(c.write(1, 0b0001).fetch == 0);  // writes validate their sectors: no fill
  o = c.read(1, 0b0011);  // sector 0 written (a hit), sector 1 missing: only it is fetched
  CHECK((o.hit == 0b0001 && o.fetch == 0b0010));
}

namespace {

enum class StepOp { Read, Write, Atomic };
struct Step {
  StepOp op;
  std::uint64_t line;
  unsigned sectors, hit, fetch, forward, victim_dirty;
};

void run_steps(WritePolicy w, WriteAllocate a, const std::vector<Step>& steps)
{
  SectorCache c({256, 128, 32, 2, 1, SetIndex::Linear, w, a});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    INFO("policy " << to_string(w) << "/" << to_string(a) << ", step " << i);
    const auto m = std::uint8_t(s.sectors);
    const Outcome o = s.op == StepOp::Read    ? c.read(s.line, m)
                      : s.op == StepOp::Write ? c.write(s.line, m)
                                              : c.atomic(s.line, m);
    CHECK(unsigned(o.hit) == s.hit);
    CHECK(unsigned(o.fetch) == s.fetch);
    CHECK(unsigned(o.forward) == s.forward);
    CHECK(unsigned(o.victim_dirty) == s.victim_dirty);
  }
}

// Lines 0 (A), 1 (B), 2 (C) share the one set of 2 ways.
constexpr std::uint64_t A = 0, B = 1, C = 2;

}  // namespace

TEST_CASE("gpu-cache write-through - no allocate: stores go below and never allocate")
{
  run_steps(WritePolicy::WriteThrough, WriteAllocate::None,
            {{StepOp::Write, A, 0b0011, 0, 0, 0b0011, 0},
             {StepOp::Read, A, 0b0111, 0, 0b0111, 0, 0},    // A was not allocated by the store
             {StepOp::Write, A, 0b1001, 0b0001, 0, 0b1001, 0},  // present: sector 0 hits, all go below
             {StepOp::Read, A, 0b1000, 0, 0b1000, 0, 0},    // sector 3 was not allocated
             {StepOp::Read, B, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Read, C, 0b0001, 0, 0b0001, 0, 0}});  // evicts A, never dirty
}

TEST_CASE("gpu-cache write-through - fetch on write: missing sectors are read - the store goes below")
{
  run_steps(WritePolicy::WriteThrough, WriteAllocate::Fetch,
            {{StepOp::Write, A, 0b0011, 0, 0b0011, 0b0011, 0},
             {StepOp::Read, A, 0b0111, 0b0011, 0b0100, 0, 0},
             {StepOp::Write, A, 0b1000, 0, 0b1000, 0b1000, 0},
             {StepOp::Read, A, 0b1111, 0b1111, 0, 0, 0},
             {StepOp::Read, B, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Read, C, 0b0001, 0, 0b0001, 0, 0}});  // evicts A, clean
}

TEST_CASE("gpu-cache write-through - validate: stores allocate their sectors without reading")
{
  run_steps(WritePolicy::WriteThrough, WriteAllocate::Validate,
            {{StepOp::Write, A, 0b0011, 0, 0, 0b0011, 0},
             {StepOp::Read, A, 0b0111, 0b0011, 0b0100, 0, 0},
             {StepOp::Write, A, 0b1000, 0, 0, 0b1000, 0},
             {StepOp::Read, A, 0b1111, 0b1111, 0, 0, 0},
             {StepOp::Read, B, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Read, C, 0b0001, 0, 0b0001, 0, 0}});
}

TEST_CASE("gpu-cache write-back - no allocate: store misses go below - store hits make sectors dirty")
{
  run_steps(WritePolicy::WriteBack, WriteAllocate::None,
            {{StepOp::Write, A, 0b0011, 0, 0, 0b0011, 0},
             {StepOp::Read, A, 0b0111, 0, 0b0111, 0, 0},
             {StepOp::Write, A, 0b1001, 0b0001, 0, 0b1000, 0},  // sector 0 hits (dirty), sector 3 goes below
             {StepOp::Read, B, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Read, C, 0b0001, 0, 0b0001, 0b0000, 0b0001}});  // evicts A: its dirty sector written back
}

TEST_CASE("gpu-cache write-back - fetch on write: the seed's state machine (Fig. 4)")
{
  run_steps(WritePolicy::WriteBack, WriteAllocate::Fetch,
            {{StepOp::Write, A, 0b0011, 0, 0b0011, 0, 0},  // write miss: read the sectors, then write them
             {StepOp::Read, A, 0b0111, 0b0011, 0b0100, 0, 0},
             {StepOp::Write, A, 0b1000, 0, 0b1000, 0, 0},
             {StepOp::Write, A, 0b1000, 0b1000, 0, 0, 0},
             {StepOp::Read, B, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Read, C, 0b0001, 0, 0b0001, 0, 0b1011}});  // replacing A writes its dirty sectors back
}

TEST_CASE("gpu-cache write-back - validate: stores allocate dirty sectors without reading")
{
  run_steps(WritePolicy::WriteBack, WriteAllocate::Validate,
            {{StepOp::Write, A, 0b0011, 0, 0, 0, 0},
             {StepOp::Read, A, 0b0111, 0b0011, 0b0100, 0, 0},
             {StepOp::Write, A, 0b1000, 0, 0, 0, 0},
             {StepOp::Read, B, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Read, C, 0b0001, 0, 0b0001, 0, 0b1011}});
}

TEST_CASE("gpu-cache atomics: read-modify-write - the missing sectors read whatever the allocate policy")
{
  run_steps(WritePolicy::WriteBack, WriteAllocate::None,
            {{StepOp::Atomic, A, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Atomic, A, 0b0011, 0b0001, 0b0010, 0, 0},
             {StepOp::Read, B, 0b0001, 0, 0b0001, 0, 0},
             {StepOp::Read, C, 0b0001, 0, 0b0001, 0, 0b0011}});
  run_steps(WritePolicy::WriteThrough, WriteAllocate::None, {{StepOp::Atomic, A, 0b0001, 0, 0b0001, 0b0001, 0}});
}

TEST_CASE("gpu-cache clear empties every set and the dirty count")
{
  SectorCache c({1024, 128, 2, 2, 2, SetIndex::Hash, WritePolicy::WriteBack, WriteAllocate::Fetch});
  for (std::uint64_t line = 0; line < 64; ++line)
    c.write(line, 0b0101);
  CHECK(c.dirty_sectors() == 8 * 2);  // 8 lines stay, 2 dirty sectors each
  c.clear();
  CHECK(c.dirty_sectors() == 0);
  CHECK(c.read(63, 1).hit == 0);
}
