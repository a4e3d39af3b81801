// The host side of bench/gpu-cache's kernel suite: the grouping of lanes into warp instructions, and
// the host generator's addresses for a few threads worked out by hand from the kernels' index formulas.
#include "../../bench/gpu-cache/suite.hpp"
#include "../../bench/gpu-cache/warp_group.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace gcbench;

namespace {

LaneAccess at(std::uint8_t site, std::uint64_t address, std::uint8_t kind = kKindLoad)
{
  return LaneAccess{address, site, kind, 4};
}

/// Groups the given lanes (the rest empty).
std::vector<WarpInstruction> group(const std::vector<std::vector<LaneAccess>>& given)
{
  static const std::vector<LaneAccess> none;
  const std::vector<LaneAccess>* lanes[32];
  for (unsigned l = 0; l < 32; ++l)
    lanes[l] = l < given.size() ? &given[l] : &none;
  std::vector<WarpInstruction> out;
  group_warp(lanes, out);
  return out;
}

struct Recorder {
  std::vector<LaneAccess> accesses;
  void note(int site, unsigned kind, unsigned bytes, std::uint64_t address)
  {
    accesses.push_back(LaneAccess{address, std::uint8_t(site), std::uint8_t(kind), std::uint8_t(bytes)});
  }
};

/// Every thread's accesses of CTA `cta` of launch `li` of a CI-size case at the default bases.
std::vector<Recorder> run_cta(const Case& c, std::size_t li, std::uint64_t cta, std::uint64_t& out_of_bounds)
{
  const LaunchSpec& l  = c.launches.at(li);
  const auto bases     = default_bases(c);
  std::vector<std::vector<unsigned char>> contents(c.buffers.size());
  HostMemory memory;
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    if (contents_decide_addresses(c, i))
      contents[i] = initial_contents(c, i);
    memory.regions.push_back({bases[i], c.buffers[i].bytes, contents[i].empty() ? nullptr : contents[i].data()});
  }
  std::vector<Recorder> threads(l.block.count());
  std::vector<float> shared;
  out_of_bounds = run_cta_host(l, bind_bases(c, bases), memory, cta, shared, [&](unsigned tid) { return &threads[tid]; });
  return threads;
}

}  // namespace

TEST_CASE("suite warp grouping: identical lanes give one instruction per position, in order")
{
  std::vector<std::vector<LaneAccess>> lanes(32);
  for (unsigned l = 0; l < 32; ++l)
    lanes[l] = {at(0, 1000 + 4 * l), at(1, 5000 + 4 * l), at(0, 2000 + 4 * l)};
  lanes[7].clear();  // an idle lane
  const auto out = group(lanes);
  REQUIRE(out.size() == 3);
  CHECK(out[0].site == 0);
  CHECK(out[1].site == 1);
  CHECK(out[2].site == 0);
  for (const auto& w : out)
    CHECK(w.active_mask == (0xffffffffu & ~(1u << 7)));
  CHECK(out[0].address[31] == 1000 + 4 * 31);
  CHECK(out[2].address[3] == 2000 + 12);
}

TEST_CASE("suite warp grouping: divergent lanes meet at the k-th occurrence of a site")
{
  // lane 0 runs the loop twice, lane 2 once, lane 1 not at all (a BFS frontier of varying degree)
  const auto out = group({{at(0, 0), at(3, 30), at(4, 40), at(3, 31), at(4, 41)}, {at(0, 4)}, {at(0, 8), at(3, 32), at(4, 42)}});
  REQUIRE(out.size() == 5);
  const std::uint8_t sites[] = {0, 3, 4, 3, 4};
  const std::uint32_t masks[] = {0b111, 0b101, 0b101, 0b001, 0b001};
  for (int i = 0; i < 5; ++i) {
    CHECK(out[i].site == sites[i]);
    CHECK(out[i].active_mask == masks[i]);
  }
  CHECK(out[1].address[2] == 32);
  CHECK(out[3].address[0] == 31);
}

TEST_CASE("suite warp grouping: order by the earliest position in any lane, ties by site")
{
  // site 5 is first in lane 0, site 2 first in lane 1: both start at position 0, so site 2 goes first
  const auto out = group({{at(5, 100), at(2, 200)}, {at(2, 204), at(5, 104)}, {at(7, 1), at(5, 108)}});
  REQUIRE(out.size() == 3);
  CHECK(out[0].site == 2);
  CHECK(out[0].active_mask == 0b011);
  CHECK(out[1].site == 5);
  CHECK(out[1].active_mask == 0b111);
  CHECK(out[2].site == 7);
  CHECK(out[2].first_position == 0);
}

TEST_CASE("suite warp grouping: one site with two kinds is a body bug")
{
  CHECK_THROWS_AS(group({{at(1, 0, kKindLoad)}, {at(1, 4, kKindStore)}}), std::logic_error);
}

TEST_CASE("suite host generator: gemm's first thread reads a row of A and a column of B, tile by tile")
{
  const Case c = make_case("gemm", SizeClass::Ci);
  const std::int64_t n = c.args.ni;
  const int tiles = int(n / kGemmTile);
  std::uint64_t oob = 1;
  const auto threads = run_cta(c, 0, 1, oob);  // CTA 1: bx = 1, by = 0
  CHECK(oob == 0);
  const auto bases = default_bases(c);
  // thread 17: tx = 1, ty = 1 -> row 1, column 16 + 1
  const auto& a = threads[17].accesses;
  REQUIRE(a.size() == 2 * std::size_t(tiles) + 2);
  for (int tile = 0; tile < tiles; ++tile) {
    CHECK(a[2 * tile].address == bases[0] + 4 * (1 * n + tile * 16 + 1));
    CHECK(a[2 * tile + 1].address == bases[1] + 4 * ((tile * 16 + 1) * n + 17));
  }
  CHECK(a[2 * tiles].address == bases[2] + 4 * (1 * n + 17));
  CHECK(a[2 * tiles + 1].kind == kKindStore);
  CHECK(a[2 * tiles + 1].address == a[2 * tiles].address);
}

TEST_CASE("suite host generator: the naive transpose stores a column, the reduction adds once per CTA")
{
  std::uint64_t oob = 1;
  const Case t = make_case("transpose", SizeClass::Ci);
  const auto tt = run_cta(t, 0, 0, oob);
  CHECK(oob == 0);
  const std::int64_t n = t.args.ni;
  // thread (tx 3, ty 2): loads in[2][3], stores out[3][2]
  const auto& a = tt[2 * 32 + 3].accesses;
  REQUIRE(a.size() == 2);
  CHECK(a[0].address == default_bases(t)[0] + 4 * (2 * n + 3));
  CHECK(a[1].address == default_bases(t)[1] + 4 * (3 * n + 2));

  const Case r = make_case("reduction", SizeClass::Ci);
  const auto rt = run_cta(r, 0, 2, oob);
  CHECK(oob == 0);
  REQUIRE(rt[0].accesses.size() == 5);
  CHECK(rt[0].accesses[4].kind == kKindAtomic);
  CHECK(rt[0].accesses[4].address == default_bases(r)[1]);
  CHECK(rt[0].accesses[1].address == default_bases(r)[0] + 4 * (2 * 1024 + 256));
  for (std::size_t tid = 1; tid < rt.size(); ++tid)
    CHECK(rt[tid].accesses.size() == 4);
}

TEST_CASE("suite host generator: bfs expands exactly the frontier's edges, from the graph's own data")
{
  const Case c = make_case("bfs", SizeClass::Ci);
  const BfsGraph& g = *c.graph;
  std::uint64_t frontier = 0, marked = 0, edges = 0;
  for (std::size_t v = 0; v < g.levels.size(); ++v)
    if (g.levels[v] == g.level) {
      ++frontier;
      for (std::int32_t e = g.rows[v]; e < g.rows[v + 1]; ++e) {
        ++edges;
        marked += g.levels[g.cols[e]] < 0;
      }
    }
  REQUIRE(frontier > 1000);  // the largest frontier of a 16384-vertex random graph of degree 8
  std::uint64_t loads = 0, stores = 0, oob = 0;
  for (std::uint64_t cta = 0; cta < c.launches[0].grid.count(); ++cta) {
    std::uint64_t o = 0;
    for (const auto& t : run_cta(c, 0, cta, o))
      for (const auto& a : t.accesses)
        (a.kind == kKindStore ? stores : loads) += 1;
    oob += o;
  }
  CHECK(oob == 0);
  CHECK(stores == marked);
  CHECK(loads == g.levels.size() + 2 * frontier + 2 * edges);
}

TEST_CASE("suite host generator: no kernel leaves its buffers (CI sizes)")
{
  for (const std::string& name : case_names()) {
    const Case c = make_case(name, SizeClass::Ci);
    for (std::size_t li = 0; li < c.launches.size(); ++li) {
      std::uint64_t total = 0;
      for (std::uint64_t cta = 0; cta < c.launches[li].grid.count(); ++cta) {
        std::uint64_t oob = 0;
        run_cta(c, li, cta, oob);
        total += oob;
      }
      INFO(name << " launch " << li);
      CHECK(total == 0);
    }
  }
}

TEST_CASE("suite bases file: a bad line or a buffer of another size names the file and line")
{
  const auto dir = std::filesystem::temp_directory_path() / "gridcast-suite-bases-test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "bases.txt").string();
  auto message = [&](const std::string& text) -> std::string {
    std::ofstream(path) << text;
    try {
      const DeviceLayout layout = read_layout(path);
      bases_from_layout(layout, make_case("jacobi2d", SizeClass::Ci));
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  const std::uint64_t bytes = make_case("jacobi2d", SizeClass::Ci).buffers[0].bytes;
  const std::string good_b = "buffer B 0x7f0000400000 " + std::to_string(bytes) + "\n";
  CHECK(message("gpu X\ncase jacobi2d\nbuffer A 0x7f0000200000 " + std::to_string(bytes) + "\n" + good_b).empty());
  CHECK(message("case jacobi2d\nbuffer A 7f0000200000 " + std::to_string(bytes) + "\n") == path + ":2: expected 'buffer NAME 0xBASE BYTES'");
  CHECK(message("case jacobi2d\nbuffer A 0x7fz 4\n") == path + ":2: bad base address '0x7fz'");
  CHECK(message("case jacobi2d\nbuffer A 0x7f0000200000 4\n" + good_b).rfind(path + ":2: buffer A of 4 bytes", 0) == 0);
  CHECK(message("case gemm\n") == path + ": no 'case jacobi2d'");
  CHECK(message("bogus 1\n") == path + ":1: unknown key 'bogus'");
  std::filesystem::remove_all(dir);
}
