// A second, naive simulator of the memory system -- per-byte coalescing into a std::set, each set a
// std::list searched linearly, one bool per sector, the set index by polynomial long division -- which
// must agree exactly with the fast model on 10^6 random warp accesses per configuration (strided,
// coalesced, scattered and hot-spot addresses, unaligned and straddling lanes, every access kind);
// 10^5 in the sanitizer build, where the naive simulator runs about ten times slower (the same
// sequence's first tenth: the Release build checks the rest).
#include "model_support.hpp"

#include <catch2/catch.hpp>

#include <list>
#include <map>
#include <random>
#include <set>

using namespace gridcast::gpu_cache;

namespace {

constexpr unsigned kSectors = 4;  // 128-byte lines of 32-byte sectors

std::uint64_t naive_set_index(SetIndex kind, std::uint64_t line, std::uint64_t sets)
{
  unsigned bits = 0;
  while ((std::uint64_t(1) << bits) < sets)
    ++bits;
  switch (kind) {
    case SetIndex::Linear: return line % sets;
    case SetIndex::Xor: return (line ^ (line >> bits)) % sets;
    case SetIndex::Hash: return (((line * 0x9E3779B97F4A7C15ull) >> 32) * sets) >> 32;
    case SetIndex::Ipoly: {
      if (bits == 0)
        return 0;
      const std::uint64_t p = SetIndexer::ipoly_polynomial(bits);
      std::uint64_t r       = line;
      for (int b = 63; b >= int(bits); --b)  // long division over GF(2)
        if ((r >> b) & 1)
          r ^= p << (b - int(bits));
      return r;
    }
  }
  return 0;
}

struct NaiveLine {
  std::uint64_t line;
  bool valid[kSectors] = {};
  bool dirty[kSectors] = {};
};

/// What a naive access did, as lists of sectors.
struct NaiveResult {
  std::vector<unsigned> hit, fetch, forward, victim_dirty;
  std::uint64_t victim_line = 0;
};

class NaiveCache {
public:
  explicit NaiveCache(const CacheGeometry& g) : g_(g), sets_(g.bytes / g.line_bytes / g.ways / g.slices)
  {
    lists_.resize(sets_ * g.slices);
  }

  NaiveResult read(std::uint64_t line, const std::vector<unsigned>& sectors)
  {
    NaiveResult r;
    NaiveLine& l = find_or_allocate(line, r);
    std::set<unsigned> groups;  // a miss fetches every missing sector of its aligned group (fetch_sectors)
    for (unsigned s : sectors) {
      if (l.valid[s])
        r.hit.push_back(s);
      else
        groups.insert(s / g_.fetch_sectors);
    }
    for (unsigned s = 0; s < g_.line_bytes / g_.sector_bytes; ++s)
      if (groups.count(s / g_.fetch_sectors) > 0 && not l.valid[s])
        r.fetch.push_back(s);
    for (unsigned s : sectors)
      l.valid[s] = true;
    for (unsigned s : r.fetch)
      l.valid[s] = true;
    return r;
  }

  NaiveResult write(std::uint64_t line, const std::vector<unsigned>& sectors)
  {
    NaiveResult r;
    const bool back = g_.write == WritePolicy::WriteBack;
    auto& list      = lists_[set_of(line)];
    auto it         = std::find_if(list.begin(), list.end(), [&](const NaiveLine& l) { return l.line == line; });
    if (it == list.end() && g_.allocate == WriteAllocate::None) {
      r.forward = sectors;
      return r;
    }
    NaiveLine& l = find_or_allocate(line, r);
    for (unsigned s : sectors) {
      const bool was = l.valid[s];
      if (was)
        r.hit.push_back(s);
      if (g_.allocate == WriteAllocate::None) {  // the line was present
        if (back && was)
          l.dirty[s] = true;
        else
          r.forward.push_back(s);
        continue;
      }
      if (not was && g_.allocate == WriteAllocate::Fetch)
        r.fetch.push_back(s);
      l.valid[s] = true;
      if (back)
        l.dirty[s] = true;
      else
        r.forward.push_back(s);
    }
    return r;
  }

  NaiveResult atomic(std::uint64_t line, const std::vector<unsigned>& sectors)
  {
    NaiveResult r;
    NaiveLine& l = find_or_allocate(line, r);
    for (unsigned s : sectors) {
      if (l.valid[s])
        r.hit.push_back(s);
      else
        r.fetch.push_back(s);
      l.valid[s] = true;
      if (g_.write == WritePolicy::WriteBack)
        l.dirty[s] = true;
      else
        r.forward.push_back(s);
    }
    return r;
  }

  /// Every dirty line, ascending, with its dirty sectors.
  std::map<std::uint64_t, std::vector<unsigned>> dirty() const
  {
    std::map<std::uint64_t, std::vector<unsigned>> d;
    for (const auto& list : lists_)
      for (const NaiveLine& l : list)
        for (unsigned s = 0; s < kSectors; ++s)
          if (l.dirty[s])
            d[l.line].push_back(s);
    return d;
  }

private:
  std::uint64_t set_of(std::uint64_t line) const
  {
    return std::uint64_t(slice_of(line, g_.slices)) * sets_ + naive_set_index(g_.set_index, line, sets_);
  }

  NaiveLine& find_or_allocate(std::uint64_t line, NaiveResult& r)
  {
    auto& list = lists_[set_of(line)];
    for (auto it = list.begin(); it != list.end(); ++it)
      if (it->line == line) {
        list.splice(list.begin(), list, it);  // most recently used in front
        return list.front();
      }
    if (list.size() == g_.ways) {
      const NaiveLine& victim = list.back();
      r.victim_line           = victim.line;
      for (unsigned s = 0; s < kSectors; ++s)
        if (victim.dirty[s])
          r.victim_dirty.push_back(s);
      list.pop_back();
    }
    list.push_front(NaiveLine{line});
    return list.front();
  }

  CacheGeometry g_;
  std::uint64_t sets_;
  std::vector<std::list<NaiveLine>> lists_;
};

/// The hierarchy, spelled out: L1 per SM, atomics at L2, L2 misses and dirty evictions to DRAM.
class NaiveGpu {
public:
  explicit NaiveGpu(const GpuSheet& sheet) : l2_allocate_(sheet.l2.allocate), l2c_(sheet.l2)
  {
    for (std::uint32_t i = 0; i < sheet.sm_count; ++i)
      l1s_.emplace_back(sheet.l1_geometry(sheet.unified_l1_shared_bytes_per_sm));
  }

  void access(std::uint32_t sm, AccessKind kind, const WarpAccess& a)
  {
    // Coalescing, byte by byte.
    std::set<std::uint64_t> sectors;
    for (unsigned lane = 0; lane < kWarpLanes; ++lane)
      if ((a.active_mask >> lane) & 1)
        for (unsigned b = 0; b < a.bytes_per_lane; ++b)
          sectors.insert((a.address[lane] + b) / 32);
    std::map<std::uint64_t, std::vector<unsigned>> lines;
    for (std::uint64_t s : sectors)
      lines[s / kSectors].push_back(unsigned(s % kSectors));
    for (const auto& [line, list] : lines) {
      SectorCount& c = l1[std::size_t(kind)];
      c.accesses += list.size();
      if (kind == AccessKind::GlobalAtomic) {
        l2_atomic(line, list);
        continue;
      }
      const bool load = kind == AccessKind::GlobalLoad || kind == AccessKind::LocalLoad;
      const NaiveResult r = load ? l1s_[sm].read(line, list) : l1s_[sm].write(line, list);
      c.hits += r.hit.size();
      if (not r.victim_dirty.empty())
        l2_write(r.victim_line, r.victim_dirty);
      if (not r.fetch.empty())
        l2_read(line, r.fetch);
      if (not r.forward.empty())
        l2_write(line, r.forward);
    }
  }

  void finish()
  {
    for (NaiveCache& c : l1s_)
      for (const auto& [line, list] : c.dirty())
        l2_write(line, list);
    for (const auto& [line, list] : l2c_.dirty())
      dram.dirty_sectors_at_end += list.size();
  }

  std::array<SectorCount, kAccessKinds> l1{};
  L2Count l2;
  DramCount dram;

private:
  void l2_read(std::uint64_t line, const std::vector<unsigned>& s)
  {
    l2.read_sectors += s.size();
    const NaiveResult r = l2c_.read(line, s);
    l2.read_hits += r.hit.size();
    dram.read_sectors += r.fetch.size();
    dram.write_sectors += r.victim_dirty.size();
  }
  void l2_write(std::uint64_t line, const std::vector<unsigned>& s)
  {
    l2.write_sectors += s.size();
    const NaiveResult r = l2c_.write(line, s);
    // a write-validate L2 takes every written sector without a DRAM read: all hits
    l2.write_hits += l2_allocate_ == WriteAllocate::Validate ? s.size() : r.hit.size();
    dram.read_sectors += r.fetch.size();
    dram.write_sectors += r.victim_dirty.size() + r.forward.size();
  }
  void l2_atomic(std::uint64_t line, const std::vector<unsigned>& s)
  {
    l2.atomic_sectors += s.size();
    const NaiveResult r = l2c_.atomic(line, s);
    l2.atomic_hits += r.hit.size();
    dram.read_sectors += r.fetch.size();
    dram.write_sectors += r.victim_dirty.size() + r.forward.size();
  }

  std::vector<NaiveCache> l1s_;
  WriteAllocate l2_allocate_;
  NaiveCache l2c_;
};

/// Random warp accesses, the same sequence for a seed: a mix of coalesced, strided, scattered and
/// hot-spot addresses over about three L2s of data, unaligned bases, partial masks, every kind.
class RandomAccesses {
public:
  explicit RandomAccesses(std::uint64_t seed) : rng_(seed) {}
  WarpAccess next()
  {
    WarpAccess a;
    a.cta                 = rng_() % 64;
    a.warp                = 0;
    a.sm                  = std::int32_t(rng_() % 4);
    const unsigned k      = rng_() % 10;
    a.kind                = k < 5 ? AccessKind::GlobalLoad : k < 7 ? AccessKind::GlobalStore : k == 7 ? AccessKind::LocalLoad
                                                                 : k == 8 ? AccessKind::LocalStore : AccessKind::GlobalAtomic;
    static constexpr std::uint8_t kBytes[] = {1, 2, 4, 4, 4, 8, 16};
    a.bytes_per_lane      = kBytes[rng_() % 7];
    a.active_mask         = rng_() % 10 < 7 ? 0xffffffffu : std::uint32_t(rng_());
    const std::uint64_t region = 96 * 1024;
    std::uint64_t base         = kBase + rng_() % region;
    if (rng_() % 4 != 0)
      base &= ~std::uint64_t(a.bytes_per_lane - 1);  // mostly aligned, sometimes not
    const unsigned pattern = rng_() % 10;
    static constexpr std::uint64_t kStrides[] = {32, 64, 128, 256, 4096, 32768};
    const std::uint64_t stride = pattern < 4 ? a.bytes_per_lane : kStrides[rng_() % 6];
    for (unsigned lane = 0; lane < kWarpLanes; ++lane) {
      if (pattern < 6)
        a.address[lane] = base + lane * stride;
      else if (pattern < 8)
        a.address[lane] = kBase + rng_() % region;
      else
        a.address[lane] = kBase + 3 * region + rng_() % 1024;  // a hot spot: L1 hits
    }
    return a;
  }

private:
  static constexpr std::uint64_t kBase = 0x7f3a00000000ull;
  std::mt19937_64 rng_;
};

class RandomTrace : public TraceReader {
public:
  RandomTrace(std::uint64_t seed, std::uint64_t count) : gen_(seed), count_(count) {}
  bool next_kernel(KernelLaunch& launch) override
  {
    if (started_)
      return false;
    started_ = true;
    launch   = test::launch_of(64, 32);
    return true;
  }
  bool next_access(WarpAccess& access) override
  {
    if (count_ == 0)
      return false;
    --count_;
    access = gen_.next();
    return true;
  }
  bool grouped_by_cta() const override { return false; }

private:
  RandomAccesses gen_;
  std::uint64_t count_;
  bool started_ = false;
};

void agree(L1Policy l1, SetIndex l2_index, WritePolicy l2_write, WriteAllocate l2_allocate, std::uint64_t seed,
           std::uint32_t l2_fetch_sectors = 1)
{
  GpuSheet sheet                       = test::tiny_sheet(4);
  sheet.unified_l1_shared_bytes_per_sm = 4096;  // L1s of 4 KiB: 8 sets of 4 ways
  sheet.shared_carveouts_bytes         = {0, 2048};
  sheet.max_shared_bytes_per_sm        = 2048;
  sheet.l1                             = l1;
  sheet.l2 = {32768, 128, 32, 4, 2, l2_index, l2_write, l2_allocate};  // 2 slices of 32 sets of 4 ways
  sheet.l2.fetch_sectors = l2_fetch_sectors;
#ifdef GRIDCAST_SANITIZED
  constexpr std::uint64_t kAccesses = 100'000;
#else
  constexpr std::uint64_t kAccesses = 1'000'000;
#endif

  Model model(sheet);
  RandomTrace trace(seed, kAccesses);
  const std::vector<KernelMetrics> fast = model.simulate(trace);
  REQUIRE(fast.size() == 1);
  REQUIRE(fast[0].warp_accesses == kAccesses);

  NaiveGpu naive(sheet);
  RandomAccesses gen(seed);
  for (std::uint64_t i = 0; i < kAccesses; ++i) {
    const WarpAccess a = gen.next();
    naive.access(std::uint32_t(a.sm), a.kind, a);
  }
  naive.finish();

  const KernelMetrics& m = fast[0];
  for (std::size_t k = 0; k < kAccessKinds; ++k) {
    INFO("kind " << k);
    CHECK(m.l1[k].accesses == naive.l1[k].accesses);
    CHECK(m.l1[k].hits == naive.l1[k].hits);
  }
  CHECK(m.l2.read_sectors == naive.l2.read_sectors);
  CHECK(m.l2.read_hits == naive.l2.read_hits);
  CHECK(m.l2.write_sectors == naive.l2.write_sectors);
  CHECK(m.l2.write_hits == naive.l2.write_hits);
  CHECK(m.l2.atomic_sectors == naive.l2.atomic_sectors);
  CHECK(m.l2.atomic_hits == naive.l2.atomic_hits);
  CHECK(m.dram.read_sectors == naive.dram.read_sectors);
  CHECK(m.dram.write_sectors == naive.dram.write_sectors);
  CHECK(m.dram.dirty_sectors_at_end == naive.dram.dirty_sectors_at_end);
  // The configuration was exercised: hits and misses at both levels, DRAM traffic both ways.
  CHECK(m.l1[0].hits > 0);
  CHECK(m.l1[0].hits < m.l1[0].accesses);
  CHECK(m.l2.read_hits > 0);
  CHECK(m.l2.read_hits < m.l2.read_sectors);
  CHECK(m.dram.write_sectors > 0);
}

}  // namespace

namespace {

// Eight configurations: every L1 write policy x allocate option, every L2 one, every set index on each,
// and L2 read misses that fetch 64 bytes or whole lines. Each is a test case of its own (a process of
// its own under ctest), so that the slow naive simulator runs in parallel and under each test's limit.
struct Config {
  L1Policy l1;
  SetIndex l2_index;
  WritePolicy l2_write;
  WriteAllocate l2_allocate;
  std::uint32_t l2_fetch_sectors = 1;
};

void agree_on(int i)
{
  using enum SetIndex;
  using enum WritePolicy;
  using enum WriteAllocate;
  const Config configs[] = {
      {{4, Linear, WriteThrough, None}, Ipoly, WriteBack, Fetch},
      {{4, Hash, WriteThrough, Fetch}, Xor, WriteBack, Validate},
      {{4, Xor, WriteThrough, Validate}, Hash, WriteBack, None},
      {{4, Ipoly, WriteBack, None}, Linear, WriteThrough, None},
      {{4, Hash, WriteBack, Fetch}, Ipoly, WriteThrough, Fetch},
      {{4, Linear, WriteBack, Validate}, Hash, WriteThrough, Validate},
      {{4, Hash, WriteThrough, Validate}, Ipoly, WriteBack, Validate, 2},
      {{4, Linear, WriteBack, Fetch}, Linear, WriteBack, Fetch, 4},
  };
  const Config& c = configs[i];
  INFO("L1 " << to_string(c.l1.write) << "/" << to_string(c.l1.allocate) << "/" << to_string(c.l1.set_index) << ", L2 "
             << to_string(c.l2_write) << "/" << to_string(c.l2_allocate) << "/" << to_string(c.l2_index) << ", L2 fetches "
             << c.l2_fetch_sectors << " sectors");
  agree(c.l1, c.l2_index, c.l2_write, c.l2_allocate, std::uint64_t(i + 1), c.l2_fetch_sectors);
}

}  // namespace

TEST_CASE("gpu-cache reference: random accesses - L1 write-through/no-allocate, L2 write-back/fetch, ipoly")
{
  agree_on(0);
}

TEST_CASE("gpu-cache reference: random accesses - L1 write-through/fetch, L2 write-back/validate, xor")
{
  agree_on(1);
}

TEST_CASE("gpu-cache reference: random accesses - L1 write-through/validate, L2 write-back/no-allocate, hash")
{
  agree_on(2);
}

TEST_CASE("gpu-cache reference: random accesses - L1 write-back/no-allocate, L2 write-through/no-allocate, linear")
{
  agree_on(3);
}

TEST_CASE("gpu-cache reference: random accesses - L1 write-back/fetch, L2 write-through/fetch, ipoly")
{
  agree_on(4);
}

TEST_CASE("gpu-cache reference: random accesses - L1 write-back/validate, L2 write-through/validate, hash")
{
  agree_on(5);
}

TEST_CASE("gpu-cache reference: random accesses - L2 write-back/validate fetching 64 bytes, ipoly")
{
  agree_on(6);
}

TEST_CASE("gpu-cache reference: random accesses - L2 write-back/fetch fetching whole lines, linear")
{
  agree_on(7);
}
