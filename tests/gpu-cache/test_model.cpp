// The model above the caches against hand-computed answers: occupancy (Eq. 3-6) and the carve-out
// (Eq. 7), the CTA scheduler's issue order, L1 filtering, atomics, write-back flushes, the bounded
// roofline and its calibration, the metrics file, and the data sheets with their errors.
#include "../foundation/foundation_support.hpp"
#include "model_support.hpp"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <sstream>
#include <tuple>

using namespace gridcast::gpu_cache;
using namespace gridcast::gpu_cache::test;
using gridcast::test::expect_input_error;

namespace {

const std::string kGpus = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/gpus/";

KernelLaunch kernel(std::uint32_t threads, std::uint32_t registers, std::uint32_t shared)
{
  KernelLaunch k       = launch_of(1000, threads, shared);
  k.registers_per_thread = registers;
  return k;
}

}  // namespace

TEST_CASE("gpu-cache occupancy: warps - registers and shared memory limit the resident CTAs (Eq. 3-6)")
{
  const GpuSheet h100 = read_gpu_sheet(kGpus + "h100.json");
  Occupancy o = occupancy(h100, kernel(256, 32, 0));
  CHECK(o.warps_per_cta == 8);
  CHECK(o.limit_warps == 8);      // 64 warps / 8
  CHECK(o.limit_registers == 8);  // 65536 / (8 warps x 1024)
  CHECK(o.ctas_per_sm == 8);
  CHECK(o.shared_carveout_bytes == 0);
  CHECK(o.l1_bytes == 256 * 1024);

  CHECK(occupancy(h100, kernel(256, 64, 0)).ctas_per_sm == 4);
  CHECK(occupancy(h100, kernel(256, 33, 0)).ctas_per_sm == 6);  // 33 x 32 = 1056 -> 1280 registers a warp, 10240 a CTA
  CHECK(occupancy(h100, kernel(1024, 0, 0)).ctas_per_sm == 2);
  CHECK(occupancy(h100, kernel(32, 0, 0)).ctas_per_sm == 32);   // max CTAs per SM
  CHECK(occupancy(h100, kernel(100, 0, 0)).warps_per_cta == 4); // threads round up to warps
}

TEST_CASE("gpu-cache carve-out: the smallest carve-out that keeps the resident CTAs (Eq. 7)")
{
  const GpuSheet h100 = read_gpu_sheet(kGpus + "h100.json");
  // 48 KiB + 1 KiB reserved a CTA: 4 CTAs in 228 KiB, and 196 KiB is the smallest carve-out keeping 4.
  Occupancy o = occupancy(h100, kernel(128, 0, 49152));
  CHECK(o.ctas_per_sm == 4);
  CHECK(o.shared_carveout_bytes == 196 * 1024);
  CHECK(o.l1_bytes == 60 * 1024);
  // 1 KiB a CTA: warps limit to 16 CTAs, which need 32 KiB of the 2 KiB each.
  o = occupancy(h100, kernel(128, 0, 1024));
  CHECK(o.ctas_per_sm == 16);
  CHECK(o.shared_carveout_bytes == 32 * 1024);

  const GpuSheet titan = read_gpu_sheet(kGpus + "titan-v.json");  // no reservation on Volta
  o = occupancy(titan, kernel(256, 0, 16384));
  CHECK(o.ctas_per_sm == 6);  // 96 KiB / 16 KiB
  CHECK(o.shared_carveout_bytes == 96 * 1024);
  CHECK(o.l1_bytes == 32 * 1024);
  o = occupancy(titan, kernel(256, 0, 8192));
  CHECK(o.ctas_per_sm == 8);  // warps limit: 8 CTAs of 8 KiB fit 64 KiB
  CHECK(o.shared_carveout_bytes == 64 * 1024);
  CHECK(o.l1_bytes == 64 * 1024);
  o = occupancy(titan, kernel(256, 0, 0));
  CHECK(o.shared_carveout_bytes == 0);
  CHECK(o.l1_bytes == 128 * 1024);
}

TEST_CASE("gpu-cache occupancy: a CTA that fits no SM is an error naming the kernel")
{
  const GpuSheet h100 = read_gpu_sheet(kGpus + "h100.json");
  auto e = expect_input_error([&] { occupancy(h100, kernel(2048, 0, 0)); });
  CHECK_THAT(e.what(), Catch::Contains("kernel 'k'") && Catch::Contains("2048 threads per CTA"));
  e = expect_input_error([&] { occupancy(h100, kernel(128, 0, 240 * 1024)); });
  CHECK_THAT(e.what(), Catch::Contains("does not fit"));
  e = expect_input_error([&] { occupancy(h100, kernel(1024, 255, 0)); });
  CHECK_THAT(e.what(), Catch::Contains("255 registers per thread"));
}

namespace {

/// A trace of `ctas` CTAs of 2 warps, each warp 2 accesses; access i of warp w of CTA c reads line
/// c * 100 + w * 10 + i.
std::vector<WarpAccess> labelled_accesses(std::uint32_t ctas, bool grouped)
{
  std::vector<WarpAccess> v;
  auto add = [&](std::uint64_t c, std::uint32_t w, std::uint64_t i) {
    v.push_back(warp_access(c, w, AccessKind::GlobalLoad, (c * 100 + w * 10 + i) * 128));
  };
  if (grouped) {
    for (std::uint64_t c = 0; c < ctas; ++c)
      for (std::uint32_t w = 0; w < 2; ++w)
        for (std::uint64_t i = 0; i < 2; ++i)
          add(c, w, i);
  }
  return v;
}

using Issue = std::tuple<std::uint32_t, std::uint64_t, std::uint64_t, std::uint64_t>;  // sm, cta, warp, i

std::vector<Issue> issue_order(Model& model, VectorTrace& trace)
{
  std::vector<Issue> order;
  model.set_observer([&](std::uint32_t sm, AccessKind, std::uint64_t line, std::uint8_t) {
    order.emplace_back(sm, line / 100, line / 10 % 10, line % 10);
  });
  model.simulate(trace);
  return order;
}

}  // namespace

TEST_CASE("gpu-cache scheduler: CTAs round-robin at launch - refills where one finishes - warps interleaved")
{
  // 2 SMs of 4 warps: 2 CTAs of 2 warps resident on each.
  const GpuSheet sheet = tiny_sheet(2);
  Model model(sheet);
  VectorTrace trace({{launch_of(6, 64), labelled_accesses(6, true)}}, true);
  const std::vector<Issue> expected = {
      {0, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 0}, {1, 1, 1, 0}, {0, 2, 0, 0}, {1, 3, 0, 0}, {0, 2, 1, 0}, {1, 3, 1, 0},
      {0, 0, 0, 1}, {1, 1, 0, 1},   // warp 0 of CTAs 0 and 1 done
      {0, 0, 1, 1}, {1, 1, 1, 1},   // CTAs 0 and 1 done: CTA 4 goes to SM 0, CTA 5 to SM 1
      {0, 2, 0, 1}, {1, 3, 0, 1}, {0, 2, 1, 1}, {1, 3, 1, 1},
      {0, 4, 0, 0}, {1, 5, 0, 0}, {0, 4, 1, 0}, {1, 5, 1, 0}, {0, 4, 0, 1}, {1, 5, 0, 1}, {0, 4, 1, 1}, {1, 5, 1, 1}};
  CHECK(issue_order(model, trace) == expected);
  // Buffered: at most the 4 resident CTAs and the one being read (8 requests each with 4 in flight).
  CHECK(model.peak_buffered_accesses() <= 5 * 4);
}

TEST_CASE("gpu-cache scheduler: buffered accesses stay bounded by residency - whatever the trace length")
{
  const GpuSheet sheet = tiny_sheet(2);
  Model model(sheet);
  VectorTrace trace({{launch_of(2000, 64), labelled_accesses(2000, true)}}, true);
  const auto metrics = model.simulate(trace);
  CHECK(metrics.at(0).warp_accesses == 2000 * 4);
  CHECK(model.peak_buffered_accesses() <= 5 * 4);
}

TEST_CASE("gpu-cache scheduler: time-ordered traces keep their order and a new CTA takes the SM of the longest idle one")
{
  const GpuSheet sheet = tiny_sheet(2);  // 2 CTAs of 2 warps per SM: 4 resident
  std::vector<WarpAccess> v;
  for (std::uint64_t c : {0, 1, 2, 3, 0, 2, 3, 4, 0})  // CTA 1 idle the longest when CTA 4 appears
    v.push_back(warp_access(c, 0, AccessKind::GlobalLoad, (c * 100) * 128));
  Model model(sheet);
  VectorTrace trace({{launch_of(5, 64), v}}, false);
  const std::vector<Issue> expected = {{0, 0, 0, 0}, {1, 1, 0, 0}, {0, 2, 0, 0}, {1, 3, 0, 0}, {0, 0, 0, 0},
                                       {0, 2, 0, 0}, {1, 3, 0, 0}, {1, 4, 0, 0}, {0, 0, 0, 0}};
  CHECK(issue_order(model, trace) == expected);

  // The trace's SM, when given, wins (modulo the sheet's SMs).
  for (WarpAccess& a : v)
    a.sm = 5;
  Model traced(sheet);
  VectorTrace trace2({{launch_of(5, 64), v}}, false);
  for (const Issue& i : issue_order(traced, trace2))
    CHECK(std::get<0>(i) == 1);
}

TEST_CASE("gpu-cache hierarchy: L1 hits never reach L2 - other SMs miss in their own L1")
{
  const GpuSheet sheet = tiny_sheet(2);
  std::vector<WarpAccess> v = {warp_access(0, 0, AccessKind::GlobalLoad, 0), warp_access(0, 1, AccessKind::GlobalLoad, 0),
                               warp_access(1, 0, AccessKind::GlobalLoad, 0)};
  Model model(sheet);
  v[0].sm = 0, v[1].sm = 0, v[2].sm = 1;
  VectorTrace trace({{launch_of(2, 64), v}}, false);
  const KernelMetrics m = model.simulate(trace).at(0);
  const SectorCount& load = m.l1[std::size_t(AccessKind::GlobalLoad)];
  CHECK(load.accesses == 12);
  CHECK(load.hits == 4);
  CHECK(m.l2.read_sectors == 8);
  CHECK(m.l2.read_hits == 4);
  CHECK(m.dram.read_sectors == 4);
  CHECK(m.dram.write_sectors == 0);
}

TEST_CASE("gpu-cache hierarchy: atomics bypass L1 and are performed at L2")
{
  const GpuSheet sheet = tiny_sheet(1);
  std::vector<WarpAccess> v = {warp_access(0, 0, AccessKind::GlobalAtomic, 0, 0, 32, 4),
                               warp_access(0, 0, AccessKind::GlobalAtomic, 0, 0, 32, 4),
                               warp_access(0, 0, AccessKind::GlobalLoad, 0, 0, 1, 4)};
  Model model(sheet);
  VectorTrace trace({{launch_of(1, 64), v}}, true);
  const KernelMetrics m = model.simulate(trace).at(0);
  CHECK(m.l1[std::size_t(AccessKind::GlobalAtomic)].accesses == 2);  // all lanes on one sector
  CHECK(m.l1[std::size_t(AccessKind::GlobalAtomic)].hits == 0);
  CHECK(m.l1[std::size_t(AccessKind::GlobalLoad)].hits == 0);  // the atomics left nothing in L1
  CHECK(m.l2.atomic_sectors == 2);
  CHECK(m.l2.atomic_hits == 1);
  CHECK(m.l2.read_hits == 1);
  CHECK(m.dram.read_sectors == 1);
  CHECK(m.dram.dirty_sectors_at_end == 1);
}

TEST_CASE("gpu-cache hierarchy: a write-validate L2 takes stores as hits, with no DRAM read")
{
  GpuSheet sheet = tiny_sheet(1);
  sheet.l1       = {2, SetIndex::Linear, WritePolicy::WriteThrough, WriteAllocate::None};
  sheet.l2.allocate = WriteAllocate::Validate;
  // A store of 32 lanes x 4 bytes (one line, 4 sectors), then a load of the same line.
  std::vector<WarpAccess> v = {warp_access(0, 0, AccessKind::GlobalStore, 0),
                               warp_access(0, 0, AccessKind::GlobalLoad, 0)};
  Model model(sheet);
  VectorTrace trace({{launch_of(1, 64), v}}, true);
  const KernelMetrics m = model.simulate(trace).at(0);
  CHECK(m.l2.write_sectors == 4);
  CHECK(m.l2.write_hits == 4);      // allocated and made valid without a read: hits
  CHECK(m.l2.read_sectors == 4);    // the L1 allocates nothing on a store: the load goes to L2
  CHECK(m.l2.read_hits == 4);       // and finds the written sectors
  CHECK(m.dram.read_sectors == 0);
  CHECK(m.dram.dirty_sectors_at_end == 4);
}

TEST_CASE("gpu-cache hierarchy: stores through a write-through L1 - write-back L1s flushed at the kernel's end")
{
  GpuSheet sheet = tiny_sheet(1);
  std::vector<WarpAccess> v = {warp_access(0, 0, AccessKind::GlobalStore, 0), warp_access(0, 0, AccessKind::LocalStore, 128)};
  {
    Model model(sheet);  // L1 write-through with fetch: each store reads its line's missing sectors
    VectorTrace trace({{launch_of(1, 64), v}}, true);
    const KernelMetrics m = model.simulate(trace).at(0);
    CHECK(m.l2.read_sectors == 8);
    CHECK(m.l2.write_sectors == 8);
    CHECK(m.l2.write_hits == 8);  // the fetch brought them in
    CHECK(m.dram.read_sectors == 8);
    CHECK(m.dram.dirty_sectors_at_end == 8);
  }
  sheet.l1 = {2, SetIndex::Linear, WritePolicy::WriteBack, WriteAllocate::Validate};
  Model model(sheet);
  VectorTrace trace({{launch_of(1, 64), v}}, true);
  const KernelMetrics m = model.simulate(trace).at(0);
  CHECK(m.l2.read_sectors == 0);
  CHECK(m.l2.write_sectors == 8);  // the flush at the end
  CHECK(m.l2.write_hits == 0);
  CHECK(m.dram.read_sectors == 8);  // L2 fetches on write
}

TEST_CASE("gpu-cache hierarchy: each kernel starts with empty caches - as Nsight Compute's cache flush")
{
  const GpuSheet sheet = tiny_sheet(1);
  std::vector<WarpAccess> v = {warp_access(0, 0, AccessKind::GlobalLoad, 0)};
  Model model(sheet);
  VectorTrace trace({{launch_of(1, 64), v}, {launch_of(1, 64), v}}, true);
  const auto m = model.simulate(trace);
  REQUIRE(m.size() == 2);
  CHECK(m[1].l2.read_hits == 0);
  CHECK(m[1].dram.read_sectors == 4);
}

TEST_CASE("gpu-cache kernel time: the largest of compute - L2 and DRAM - plus the launch")
{
  const GpuSheet sheet = tiny_sheet(1);
  KernelMetrics m;
  m.l2.read_sectors   = 1000;
  m.dram.read_sectors = 10;
  KernelTime t = kernel_time(sheet, m);
  CHECK(std::string(t.bound) == "launch");  // 3.2e-8 s of L2 against 1 us of launch
  CHECK(t.predicted_s == Approx(1e-6 + 3.2e-8));
  CHECK(t.flops < 0);
  CHECK(t.compute_s == 0);
  m.dram.read_sectors  = 600000;
  m.dram.write_sectors = 400000;
  t = kernel_time(sheet, m);
  CHECK(std::string(t.bound) == "dram");
  CHECK(t.dram_s == Approx(32e6 / 1e11));
  CHECK(t.predicted_s == Approx(32e6 / 1e11 + 1e-6));
  m.launch.flops = 1e9;
  t = kernel_time(sheet, m);
  CHECK(std::string(t.bound) == "compute");
  CHECK(t.compute_s == Approx(1e-3));
  CHECK(kernel_time(sheet, m, Precision::Fp64).compute_s == Approx(2e-3));
}

TEST_CASE("gpu-cache calibration: the exposed latency of a measured duration, spread over the target's SMs")
{
  const GpuSheet source = tiny_sheet(1);  // 1 SM at 1 GHz, DRAM 1e11 B/s, launch 1 us
  KernelMetrics m;
  m.dram.read_sectors = 1000000;  // 3.2e-4 s at the peak
  const KernelTime on_source = kernel_time(source, m);
  CHECK(on_source.predicted_s == Approx(3.2e-4 + 1e-6));
  // Measured 2 x the DRAM time + launch: 3.2e-4 s that no term explains = 3.2e5 SM cycles.
  const Calibration c = calibrate(source, on_source, 2 * 3.2e-4 + 1e-6);
  CHECK(c.exposed_sm_cycles == Approx(3.2e5));
  const KernelTime again = kernel_time(source, m, Precision::Fp32, c);
  CHECK(again.predicted_s == Approx(2 * 3.2e-4 + 1e-6));  // the source's own measurement back
  CHECK(again.latency_s == Approx(3.2e-4));
  // A target with 4 SMs at 2 GHz and twice the bandwidth: the roofline halves, the latency is 8 x shorter.
  GpuSheet target = tiny_sheet(4);
  target.sm_clock_hz = 2e9;
  target.dram_bandwidth_bytes_per_s = 2e11;
  const KernelTime on_target = kernel_time(target, m, Precision::Fp32, c);
  CHECK(on_target.dram_s == Approx(1.6e-4));
  CHECK(on_target.latency_s == Approx(4e-5));
  CHECK(on_target.predicted_s == Approx(1.6e-4 + 4e-5 + 1e-6));
  // Faster than the roofline, or shorter than the launch: nothing to add.
  CHECK(calibrate(source, on_source, 1e-4).exposed_sm_cycles == 0);
  CHECK(calibrate(source, on_source, 1e-7).exposed_sm_cycles == 0);
  // A kernel whose latency dominates says so.
  const KernelTime slow = kernel_time(source, m, Precision::Fp32, calibrate(source, on_source, 1e-2));
  CHECK(std::string(slow.bound) == "latency");
}

TEST_CASE("gpu-cache metrics file: the keys of the contract - null rates where nothing was accessed")
{
  const GpuSheet sheet = tiny_sheet(1);
  Model model(sheet);
  KernelLaunch k = launch_of(1, 64);
  k.name         = "gemm";
  k.flops        = 2e5;
  VectorTrace trace({{k, {warp_access(0, 0, AccessKind::GlobalLoad, 0), warp_access(0, 1, AccessKind::GlobalLoad, 0)}}}, true);
  const auto metrics = model.simulate(trace);
  const auto j = nlohmann::json::parse(metrics_json(sheet, "t.jsonl", metrics));
  CHECK(j["gpu"] == "tiny");
  CHECK(j["trace"] == "t.jsonl");
  const auto& g = j["kernels"][0];
  CHECK(g["name"] == "gemm");
  CHECK(g["grid"] == nlohmann::json::array({1, 1, 1}));
  CHECK(g["block"] == nlohmann::json::array({64, 1, 1}));
  CHECK(g["warp_accesses"] == 2);
  CHECK(g["occupancy"]["ctas_per_sm"] == 2);
  CHECK(g["occupancy"]["l1_bytes"] == 1024);
  CHECK(g["l1"]["sectors"]["global_load"]["accesses"] == 8);
  CHECK(g["l1"]["sectors"]["global_load"]["hits"] == 4);
  CHECK(g["l1"]["sectors"]["global_store"]["accesses"] == 0);
  CHECK(g["l1"]["hit_rate"]["overall"] == 0.5);
  CHECK(g["l1"]["hit_rate"]["global_load"] == 0.5);
  CHECK(g["l2"]["hit_rate"]["read"] == 0.0);
  CHECK(g["l2"]["hit_rate"]["write"].is_null());
  CHECK(g["dram"]["read_sectors"] == 4);
  CHECK(g["time"]["flops"] == 2e5);
  CHECK(g["time"]["bound"] == "launch");
  for (const char* key : {"compute_s", "l2_s", "dram_s", "launch_s", "predicted_s"})
    CHECK(g["time"][key].is_number());
  // Deterministic: the same text twice.
  CHECK(metrics_json(sheet, "t.jsonl", metrics) == metrics_json(sheet, "t.jsonl", metrics));
  std::ostringstream table;
  print_table(table, metrics);
  CHECK_THAT(table.str(), Catch::Contains("gemm") && Catch::Contains("50.0"));
}

TEST_CASE("gpu-cache data sheets: the committed ones load with the published figures")
{
  const GpuSheet h100 = read_gpu_sheet(kGpus + "h100.json");
  CHECK(h100.sm_count == 132);
  CHECK(h100.unified_l1_shared_bytes_per_sm == 256 * 1024);
  CHECK(h100.max_shared_bytes_per_sm == 228 * 1024);
  CHECK(h100.shared_carveouts_bytes.size() == 10);
  CHECK(h100.l2.bytes == 50ull * 1024 * 1024);
  CHECK(h100.l2.sets_per_slice() == 256);
  CHECK(h100.dram_bandwidth_bytes_per_s == 3.35e12);
  CHECK(h100.l2.allocate == WriteAllocate::Validate);
  CHECK(h100.l2.fetch_sectors == 2);  // 64-byte DRAM fetches
  const GpuSheet h200 = read_gpu_sheet(kGpus + "h200.json");
  CHECK(h200.l2.bytes == 60ull * 1024 * 1024);
  CHECK(h200.dram_bandwidth_bytes_per_s == 4.8e12);
  const GpuSheet titan = read_gpu_sheet(kGpus + "titan-v.json");  // the seed's Table 3
  CHECK(titan.sm_count == 80);
  CHECK(titan.l1.ways == 4);
  CHECK(titan.l2.ways == 32);
  CHECK(titan.l2.bytes == 4718592);
  CHECK(titan.l1.write == WritePolicy::WriteThrough);
  CHECK(titan.l2.write == WritePolicy::WriteBack);
  CHECK(read_gpu_sheet(kGpus + "v100.json").l2.bytes == 6 * 1024 * 1024);
  CHECK(read_gpu_sheet(kGpus + "a100.json").sm_count == 108);
}

namespace {

std::string sheet_error(const std::string& from, const std::string& to)
{
  gridcast::test::TempDir dir;
  std::string text = gridcast::test::read_file(kGpus + "h100.json");
  const auto at    = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  gridcast::test::write_file(dir / "bad.json", text);
  const auto e = expect_input_error([&] { read_gpu_sheet(dir / "bad.json"); });
  CHECK(e.context().file == (dir / "bad.json").string());
  return e.what();
}

}  // namespace

TEST_CASE("gpu-cache data sheets: errors name the file and the key")
{
  CHECK_THAT(sheet_error("\"ways\": 20", "\"associativity\": 20"), Catch::Contains("l2.associativity") && Catch::Contains("unknown key"));
  CHECK_THAT(sheet_error("\"sm_count\"", "\"sms\""), Catch::Contains("sms") && Catch::Contains("unknown key"));
  CHECK_THAT(sheet_error("\"set_index\": \"ipoly\"", "\"set_index\": \"modulo\""),
             Catch::Contains("l2.set_index") && Catch::Contains("expected linear, xor, ipoly or hash"));
  CHECK_THAT(sheet_error("\"slices\": 80", "\"slices\": 100"), Catch::Contains("l2") && Catch::Contains("not a whole number of sets"));
  CHECK_THAT(sheet_error("\"ways\": 20, \"slices\": 80", "\"ways\": 16, \"slices\": 64"),
             Catch::Contains("ipoly set index needs a power-of-two number of sets"));
  CHECK_THAT(sheet_error("[0, 8192, 16384", "[0, 16384, 8192"), Catch::Contains("shared_carveouts_bytes[2]") && Catch::Contains("ascending"));
  CHECK_THAT(sheet_error("200704, 233472", "200704, 262144"), Catch::Contains("shared_carveouts_bytes[9]") && Catch::Contains("leaves no L1"));
  CHECK_THAT(sheet_error("\"l1\": {\"ways\": 4", "\"l1\": {\"ways\": 64"), Catch::Contains("l1 (with a carve-out"));
  CHECK_THAT(sheet_error("\"dram_bandwidth_bytes_per_s\": 3.35e12", "\"dram_bandwidth_bytes_per_s\": 0"),
             Catch::Contains("dram_bandwidth_bytes_per_s") && Catch::Contains("> 0"));
  CHECK_THAT(sheet_error("\"kernel_launch_s\": 2.0e-6", "\"x\": 1"), Catch::Contains("key 'x'"));
  CHECK_THAT(sheet_error("\"sm_count\": 132,", ""), Catch::Contains("key 'sm_count'") && Catch::Contains("missing required key"));
  CHECK_THAT(sheet_error("\"fetch_bytes\": 64", "\"fetch_bytes\": 96"),
             Catch::Contains("l2.fetch_bytes") && Catch::Contains("power-of-two number of 32-byte sectors"));
}
