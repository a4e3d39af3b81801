// GPU emulation end to end on tiny hand-written platforms, against hand-computed times.
// CM02 without cross traffic is used so that one lone flow takes exactly latency + bytes / bandwidth.
#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include "../support.hpp"

#include <catch2/catch.hpp>

using namespace gridcast;
using namespace gridcast::emulator;
using gridcast::test::TempDir;

namespace {

// Figures of the test platform.
constexpr double kRootBw = 10e9;      // the shared PCIe root link of a node: 10 GB/s
constexpr double kRootLat = 1e-6;
constexpr double kDeviceBw = 100e9;   // each GPU's own up/down link: never the bottleneck
constexpr double kNetBw = 5e9;        // the network between the nodes' NICs
constexpr double kNetLat = 2e-6;
constexpr double kNvBw = 50e9;        // NVLink between the two GPUs of a node
constexpr double kNvLat = 0.5e-6;
constexpr double kGpuSpeed = 1e12;
constexpr double kQueue = 10e-6;      // default transfer-queue cost (Stanisic et al. 2014, Table 2)

std::string gpu_host(int node, int gpu, int cores, std::uint64_t memory)
{
  std::string id = "node-" + std::to_string(node) + ".gpu-" + std::to_string(gpu);
  return "<host id=\"" + id + "\" speed=\"1Tf\" core=\"" + std::to_string(cores) +
         "\"><prop id=\"gridcast:kind\" value=\"gpu\"/><prop id=\"gridcast:node\" value=\"" + std::to_string(node) +
         "\"/><prop id=\"gridcast:gpu\" value=\"" + std::to_string(gpu) +
         "\"/><prop id=\"gridcast:memory-bytes\" value=\"" + std::to_string(memory) + "\"/></host>\n";
}

std::string route(const std::string& src, const std::string& dst, const std::vector<std::string>& links)
{
  std::string r = "<route src=\"" + src + "\" dst=\"" + dst + "\" symmetrical=\"NO\">";
  for (const auto& l : links) {
    auto slash = l.find('/');
    if (slash == std::string::npos)
      r += "<link_ctn id=\"" + l + "\"/>";
    else
      r += "<link_ctn id=\"" + l.substr(0, slash) + "\" direction=\"" + l.substr(slash + 1) + "\"/>";
  }
  return r + "</route>\n";
}

/// `nodes` nodes, each a CPU host node-i with two GPUs node-i.gpu-0/1 behind a shared root link
/// (Stanisic et al. 2014, Fig. 2(b)), NVLink between the two GPUs, and one network link between the CPU hosts.
std::string platform_xml(int nodes, int gpu_cores = 1, std::uint64_t gpu_memory = 1000000000, const std::string& extra_root_props = "")
{
  std::string x = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                  "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n" + extra_root_props;
  for (int n = 0; n < nodes; ++n) {
    std::string N = "node-" + std::to_string(n);
    x += "<host id=\"" + N + "\" speed=\"1Gf\" core=\"8\"><prop id=\"gridcast:kind\" value=\"cpu\"/>"
         "<prop id=\"gridcast:node\" value=\"" + std::to_string(n) + "\"/></host>\n";
    for (int g = 0; g < 2; ++g)
      x += gpu_host(n, g, gpu_cores, gpu_memory);
  }
  for (int n = 0; n < nodes; ++n) {
    std::string N = "node-" + std::to_string(n);
    x += "<link id=\"" + N + ".root\" bandwidth=\"10GBps\" latency=\"1us\" sharing_policy=\"SHARED\"/>\n";
    x += "<link id=\"" + N + ".loop\" bandwidth=\"100GBps\" latency=\"0us\" sharing_policy=\"FATPIPE\"/>\n";
    x += "<link id=\"" + N + ".nv\" bandwidth=\"50GBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n";
    for (int g = 0; g < 2; ++g) {
      std::string G = N + ".gpu-" + std::to_string(g);
      x += "<link id=\"" + G + ".up\" bandwidth=\"100GBps\" latency=\"0us\"/>\n";
      x += "<link id=\"" + G + ".down\" bandwidth=\"100GBps\" latency=\"0us\"/>\n";
      x += "<link id=\"" + G + ".copy\" bandwidth=\"100GBps\" latency=\"0us\"/>\n";
    }
  }
  x += "<link id=\"net\" bandwidth=\"5GBps\" latency=\"2us\" sharing_policy=\"SPLITDUPLEX\"/>\n";
  for (int n = 0; n < nodes; ++n) {
    std::string N = "node-" + std::to_string(n);
    x += route(N, N, {N + ".loop"});
    for (int g = 0; g < 2; ++g) {
      std::string G = N + ".gpu-" + std::to_string(g);
      x += route(N, G, {N + ".root", G + ".down"});
      x += route(G, N, {G + ".up", N + ".root"});
      x += route(G, G, {G + ".copy"});
    }
    x += route(N + ".gpu-0", N + ".gpu-1", {N + ".nv/UP"});
    x += route(N + ".gpu-1", N + ".gpu-0", {N + ".nv/DOWN"});
  }
  if (nodes == 2) {
    x += route("node-0", "node-1", {"net/UP"});
    x += route("node-1", "node-0", {"net/DOWN"});
    for (int g = 0; g < 2; ++g)
      for (int h = 0; h < 2; ++h) {
        std::string a = "node-0.gpu-" + std::to_string(g), b = "node-1.gpu-" + std::to_string(h);
        // GPUDirect: the NIC reads GPU memory through the root complex.
        x += route(a, b, {a + ".up", "node-0.root", "net/UP", "node-1.root", b + ".down"});
        x += route(b, a, {b + ".up", "node-1.root", "net/DOWN", "node-0.root", a + ".down"});
      }
  }
  return x + "</zone>\n</platform>\n";
}

struct Setup {
  int nodes = 1;
  int ranks_per_node = 1;
  int gpu_cores = 1;
  std::uint64_t gpu_memory = 1000000000;
  std::string root_props;
  std::vector<std::string> cfg;
  GpuMpiMode mode = GpuMpiMode::HostCopy;
  KernelPricer kernel_price;  ///< --gpu-model cache: kernel times from the memory-system model
};

/// `nodes` nodes with `ranks_per_node` ranks each, other settings at their defaults.
Setup setup(int nodes, int ranks_per_node)
{
  Setup s;
  s.nodes = nodes;
  s.ranks_per_node = ranks_per_node;
  return s;
}

ReplayResult run_gpu(const TempDir& dir, const std::vector<std::string>& ranks, const Setup& s = {})
{
  test::write_jsonl_profile(dir / "trace", ranks, 1e9);
  test::write_file(dir / "platform.xml", platform_xml(s.nodes, s.gpu_cores, s.gpu_memory, s.root_props));
  ReplayOptions opts;
  opts.platform = dir / "platform.xml";
  opts.placement.ranks_per_host = s.ranks_per_node;
  opts.gpu.mpi = s.mode;
  if (s.kernel_price) {
    opts.gpu.kernel_model = "cache";
    opts.gpu.kernel_price = s.kernel_price;
  }
  apply_cfg(opts, "network/model:CM02");
  apply_cfg(opts, "network/crosstraffic:0");
  for (const auto& c : s.cfg)
    apply_cfg(opts, c);
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  return replay(trace, opts);
}

std::string h2d(std::uint64_t bytes, const std::string& fn = "cudaMemcpy", int stream = 0)
{
  return "{\"op\":\"gpu_memcpy\",\"fn\":\"" + fn + "\",\"tag\":1,\"bytes\":" + std::to_string(bytes) +
         ",\"stream\":" + std::to_string(stream) + ",\"memory\":\"device\"}\n";
}

std::string kernel(double seconds_on_gpu, int stream)
{
  return "{\"op\":\"gpu_kernel\",\"fn\":\"cudaLaunchKernel\",\"flops\":" + std::to_string(seconds_on_gpu * kGpuSpeed) +
         ",\"stream\":" + std::to_string(stream) + "}\n";
}

const std::string kDeviceSync = "{\"op\":\"gpu_sync\",\"fn\":\"cudaDeviceSynchronize\"}\n";

}  // namespace

TEST_CASE("gpu: one copy takes queue + latency + bytes / bandwidth", "[gpu]")
{
  TempDir dir;
  auto r = run_gpu(dir, {h2d(100000000)});
  // Route node-0 -> node-0.gpu-0: root (10 GB/s, 1 us) then the GPU's down link (100 GB/s, 0 us).
  REQUIRE(r.makespan_s == Approx(kQueue + kRootLat + 1e8 / kRootBw).epsilon(1e-9));
}

// Each TEST_CASE replays once: a SimGrid engine lives once per process (ctest runs each case alone).
TEST_CASE("gpu: a device-to-host copy takes the up link and the same root link", "[gpu]")
{
  TempDir dir2;
  auto back = run_gpu(dir2, {"{\"op\":\"gpu_memcpy\",\"fn\":\"cudaMemcpy\",\"tag\":2,\"bytes\":50000000}\n"});
  REQUIRE(back.makespan_s == Approx(kQueue + kRootLat + 5e7 / kRootBw).epsilon(1e-9));
}

TEST_CASE("gpu: two concurrent copies through the shared root link take twice as long", "[gpu]")
{
  TempDir dir;
  // Two ranks on node-0 drive GPU 0 and GPU 1; both copy 1e8 bytes host to device at once.
  auto r = run_gpu(dir, {h2d(100000000), h2d(100000000)}, setup(1, 2));
  REQUIRE(r.ranks[0].host == "node-0");
  REQUIRE(r.ranks[1].host == "node-0");
  REQUIRE(r.makespan_s == Approx(kQueue + kRootLat + 2 * 1e8 / kRootBw).epsilon(1e-9));
  REQUIRE(r.ranks[0].finish_s == Approx(r.ranks[1].finish_s).epsilon(1e-12));
}

TEST_CASE("gpu: a copy overlapping a longer kernel adds nothing", "[gpu]")
{
  TempDir dir;
  // Kernel of 50 ms on stream 1, async copy of 10 ms on stream 2: the copy hides under the kernel.
  auto overlap = run_gpu(dir, {kernel(0.05, 1) + h2d(100000000, "cudaMemcpyAsync", 2) + kDeviceSync});
  REQUIRE(overlap.makespan_s == Approx(0.05).epsilon(1e-9));
}

TEST_CASE("gpu: --gpu-model cache prices a kernel by its name - others keep their recorded time", "[gpu]")
{
  TempDir dir;
  Setup s;
  s.kernel_price = [](const std::string& function) -> std::optional<KernelPrice> {
    if (function != "_Z11gemm_kernelPf")
      return std::nullopt;
    KernelPrice p;
    p.target_s      = 0.02;                                             // the model's time on this GPU
    p.from_measured = [](double measured_s) { return 3 * measured_s; };  // a calibration that triples
    return p;
  };
  auto named = [](const std::string& fn, const std::string& more) {
    return "{\"op\":\"gpu_kernel\",\"fn\":\"" + fn + "\",\"stream\":1" + more + "}\n";
  };
  // 50 ms recorded, priced at 20 ms; a measured 10 ms calibrated to 30 ms; an unpriced 5 ms kernel stays.
  auto r = run_gpu(dir, {named("_Z11gemm_kernelPf", ",\"flops\":" + std::to_string(0.05 * kGpuSpeed)) +
                         named("_Z11gemm_kernelPf", ",\"device_seconds\":0.01") + kernel(0.005, 1) + kDeviceSync},
                   s);
  REQUIRE(r.makespan_s == Approx(0.02 + 0.03 + 0.005).epsilon(1e-9));
  CHECK(r.gpu_priced_launches == 2);
  CHECK(r.gpu_unpriced_kernels == std::map<std::string, std::uint64_t>{{"cudaLaunchKernel", 1}});
}

TEST_CASE("gpu: a copy on the kernel's stream waits for the kernel", "[gpu]")
{
  TempDir dir2;
  auto serial = run_gpu(dir2, {kernel(0.05, 1) + h2d(100000000, "cudaMemcpyAsync", 1) + kDeviceSync});
  REQUIRE(serial.makespan_s == Approx(0.05 + kRootLat + 1e8 / kRootBw).epsilon(1e-9));
}

TEST_CASE("gpu: a synchronous copy blocks the rank", "[gpu]")
{
  TempDir dir3;
  auto sync = run_gpu(dir3, {h2d(100000000) + "{\"op\":\"compute\",\"flops\":1000000}\n"});
  REQUIRE(sync.makespan_s == Approx(kQueue + kRootLat + 1e8 / kRootBw + 1e-3).epsilon(1e-9));
}

TEST_CASE("gpu: an async copy lets the rank compute while it travels", "[gpu]")
{
  TempDir dir4;
  auto async = run_gpu(dir4, {h2d(100000000, "cudaMemcpyAsync") + "{\"op\":\"compute\",\"flops\":1000000}\n"});
  REQUIRE(async.makespan_s == Approx(kQueue + 1e-3).epsilon(1e-9));
}

TEST_CASE("gpu: a kernel given by its duration runs that long, after the host's launch cost", "[gpu]")
{
  TempDir dir;
  auto r = run_gpu(dir,
                   {"{\"op\":\"gpu_kernel\",\"fn\":\"cudaLaunchKernel\",\"seconds\":5e-06,\"device_seconds\":0.02}\n" +
                    kDeviceSync});
  REQUIRE(r.makespan_s == Approx(5e-6 + 0.02).epsilon(1e-9));
}

namespace {
const std::string kThreeKernels = kernel(0.05, 1) + kernel(0.05, 2) + kernel(0.05, 3) + kDeviceSync;
}

TEST_CASE("gpu: kernels of different streams share a GPU of concurrency 1", "[gpu]")
{
  TempDir dir;
  auto shared = run_gpu(dir, {kThreeKernels});
  REQUIRE(shared.makespan_s == Approx(0.15).epsilon(1e-9));  // one core: the three share the GPU
}

TEST_CASE("gpu: kernels of different streams overlap up to the GPU's concurrency (its host's cores)", "[gpu]")
{
  const std::string& trace = kThreeKernels;
  TempDir dir2;
  Setup two;
  two.gpu_cores = 2;
  auto partly = run_gpu(dir2, {trace}, two);
  // Two at full speed; the three share two cores (2/3 each) until all end at 0.075 s.
  REQUIRE(partly.makespan_s == Approx(0.075).epsilon(1e-9));
}

TEST_CASE("gpu: kernels of different streams overlap fully below the GPU's concurrency", "[gpu]")
{
  const std::string& trace = kThreeKernels;
  TempDir dir3;
  Setup four;
  four.gpu_cores = 4;
  REQUIRE(run_gpu(dir3, {trace}, four).makespan_s == Approx(0.05).epsilon(1e-9));
}

TEST_CASE("gpu: stream and device synchronisation", "[gpu]")
{
  TempDir dir;
  // Stream 1 runs 50 ms, stream 2 runs 20 ms (the GPU runs two kernels at once). Waiting for stream 2
  // alone, then computing 1 ms, ends at 21 ms; the device synchronisation afterwards waits for stream 1.
  Setup two;
  two.gpu_cores = 2;
  auto r = run_gpu(dir, {kernel(0.05, 1) + kernel(0.02, 2) +
                         "{\"op\":\"gpu_sync\",\"fn\":\"cudaStreamSynchronize\",\"stream\":2}\n"
                         "{\"op\":\"compute\",\"flops\":1000000}\n" +
                         kDeviceSync},
                   two);
  REQUIRE(r.functions.at("cudaStreamSynchronize").seconds == Approx(0.02).epsilon(1e-9));
  REQUIRE(r.functions.at("cudaDeviceSynchronize").seconds == Approx(0.029).epsilon(1e-9));
  REQUIRE(r.makespan_s == Approx(0.05).epsilon(1e-9));
}

TEST_CASE("gpu: event synchronisation", "[gpu]")
{
  // An event recorded on stream 1 after its first kernel: synchronising on it waits for that kernel only.
  TempDir dir2;
  auto e = run_gpu(dir2, {kernel(0.03, 1) + "{\"op\":\"gpu_sync\",\"fn\":\"cudaEventRecord\",\"stream\":1,\"request\":7}\n" +
                          kernel(0.04, 1) + "{\"op\":\"gpu_sync\",\"fn\":\"cudaEventSynchronize\",\"request\":7}\n" +
                          "{\"op\":\"sleep\",\"seconds\":0.001}\n"});
  // The rank ends at 31 ms; the makespan is the rank's end (stream work nobody waits for is not counted).
  REQUIRE(e.ranks[0].finish_s == Approx(0.031).epsilon(1e-9));
}

TEST_CASE("gpu: malloc and free costs", "[gpu]")
{
  TempDir dir;
  auto ok = run_gpu(dir, {"{\"op\":\"gpu_malloc\",\"fn\":\"cudaMalloc\",\"bytes\":600000000,\"memory\":\"device\"}\n"
                          "{\"op\":\"gpu_free\",\"fn\":\"cudaFree\",\"bytes\":600000000,\"memory\":\"device\"}\n"
                          "{\"op\":\"gpu_malloc\",\"fn\":\"cudaMalloc\",\"bytes\":600000000,\"memory\":\"device\"}\n"
                          "{\"op\":\"gpu_malloc\",\"fn\":\"cudaHostAlloc\",\"bytes\":2000000}\n"});
  REQUIRE(ok.makespan_s == Approx(175e-6 + 125e-6 + 175e-6 + 2 * 650e-6).epsilon(1e-9));
}

TEST_CASE("gpu: device memory overflow is an error naming rank, call and sizes", "[gpu]")
{

  // Three ranks on node-0 and its two GPUs: ranks 0 and 1 drive GPUs 0 and 1, rank 2 wraps around to GPU 0
  // and finds 600 MB of its 1 GB taken by rank 0.
  TempDir dir2;
  const std::string alloc = "{\"op\":\"gpu_malloc\",\"fn\":\"cudaMalloc\",\"bytes\":600000000,\"memory\":\"device\"}\n";
  try {
    run_gpu(dir2, {alloc, "{\"op\":\"sleep\",\"seconds\":1}\n", "{\"op\":\"sleep\",\"seconds\":0.5}\n" + alloc},
            setup(1, 3));
    FAIL("no error");
  } catch (const InputError& e) {
    std::string what = e.what();
    INFO(what);
    REQUIRE(what.find("rank-00002.jsonl:2") != std::string::npos);
    REQUIRE(what.find("rank 2") != std::string::npos);
    REQUIRE(what.find("cudaMalloc of 600000000 bytes on node-0.gpu-0") != std::string::npos);
    REQUIRE(what.find("600000000 of 1000000000 bytes") != std::string::npos);
  }
}

TEST_CASE("gpu: platform calibration properties replace the default runtime costs", "[gpu]")
{
  TempDir dir;
  Setup s;
  s.root_props = "<prop id=\"gridcast:gpu-malloc-s\" value=\"0.001\"/><prop id=\"gridcast:gpu-queue-s\" value=\"0\"/>\n";
  auto r = run_gpu(dir, {"{\"op\":\"gpu_malloc\",\"fn\":\"cudaMalloc\",\"bytes\":1,\"memory\":\"device\"}\n" + h2d(1000000)}, s);
  REQUIRE(r.makespan_s == Approx(0.001 + kRootLat + 1e6 / kRootBw).epsilon(1e-9));
}

TEST_CASE("gpu: --cfg wins over the platform's runtime costs", "[gpu]")
{
  Setup s;
  s.root_props = "<prop id=\"gridcast:gpu-malloc-s\" value=\"0.001\"/>\n";
  TempDir dir2;
  s.cfg = {"gridcast/gpu/malloc-cost:0.002"};
  auto c = run_gpu(dir2, {"{\"op\":\"gpu_malloc\",\"fn\":\"cudaMalloc\",\"bytes\":1,\"memory\":\"device\"}\n"}, s);
  REQUIRE(c.makespan_s == Approx(0.002).epsilon(1e-9));
}

namespace {
const std::uint64_t kMsg = 1000000;  // rendezvous (above the 64 KiB eager threshold)
std::vector<std::string> device_pingpong()
{
  return {"{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":0,\"bytes\":1000000,\"memory\":\"device\"}\n",
          "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":0,\"bytes\":1000000,\"memory\":\"device\"}\n"};
}
double staging_copy(double bytes) { return 2000e-9 + 0.07e-9 * bytes; }
}  // namespace

TEST_CASE("gpu: HostCopy costs the two staging copies plus the network transfer", "[gpu]")
{
  TempDir dir;
  auto r = run_gpu(dir, device_pingpong(), setup(2, 1));
  REQUIRE(r.ranks[1].host == "node-1");
  REQUIRE(r.makespan_s == Approx(2 * staging_copy(kMsg) + kNetLat + kMsg / kNetBw).epsilon(1e-9));
}

TEST_CASE("gpu: host buffers take the bare network transfer", "[gpu]")
{
  TempDir dir2;
  auto host = run_gpu(dir2, {"{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":0,\"bytes\":1000000}\n",
                             "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":0,\"bytes\":1000000}\n"},
                      setup(2, 1));
  REQUIRE(host.makespan_s == Approx(kNetLat + kMsg / kNetBw).epsilon(1e-9));
}

TEST_CASE("gpu: GPUDirect skips the copies: pinning, then GPU to GPU along the route", "[gpu]")
{
  TempDir dir;
  Setup s = setup(2, 1);
  s.mode = GpuMpiMode::GpuDirect;
  auto r = run_gpu(dir, device_pingpong(), s);
  // Route node-0.gpu-0 -> node-1.gpu-0: up (0 us), root (1 us), net (2 us), root (1 us), down (0 us);
  // the narrowest link is the network.
  REQUIRE(r.makespan_s == Approx(4000e-9 + 2 * kRootLat + kNetLat + kMsg / kNetBw).epsilon(1e-9));
}

TEST_CASE("gpu: GPUDirect sends small messages by rendezvous too", "[gpu]")
{
  Setup s = setup(2, 1);
  s.mode = GpuMpiMode::GpuDirect;
  // The sender waits for the receive, posted 5 ms late.
  TempDir dir2;
  auto small = run_gpu(dir2, {"{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":0,\"bytes\":8,\"memory\":\"device\"}\n",
                              "{\"op\":\"sleep\",\"seconds\":0.005}\n"
                              "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":0,\"bytes\":8,\"memory\":\"device\"}\n"},
                       s);
  REQUIRE(small.ranks[0].finish_s > 0.005);
}

TEST_CASE("gpu: device-buffer allreduce under HostCopy stages before and after", "[gpu]")
{
  const std::uint64_t n = 10000000;
  const std::string mpi = "{\"op\":\"allreduce\",\"fn\":\"MPI_Allreduce\",\"bytes\":10000000,\"memory\":\"device\"}\n";
  TempDir dir;
  Setup s = setup(2, 1);
  s.cfg = {"gridcast/coll/allreduce:ring"};
  auto hc = run_gpu(dir, {mpi, mpi}, s);
  // Ring of 2 on the network (full duplex): 2 steps of n/2 bytes each way.
  double ring = 2 * (kNetLat + (n / 2.0) / kNetBw);
  REQUIRE(hc.makespan_s == Approx(2 * staging_copy(n) + ring).epsilon(1e-9));
}

TEST_CASE("gpu: NCCL allreduce runs GPU to GPU", "[gpu]")
{
  const std::uint64_t n = 10000000;
  // NCCL on the two GPUs of one node: the ring crosses NVLink, no staging, no pinning.
  TempDir dir2;
  const std::string nccl = "{\"op\":\"allreduce\",\"fn\":\"ncclAllReduce\",\"bytes\":10000000,\"stream\":0,\"memory\":\"device\"}\n";
  auto nc = run_gpu(dir2, {nccl + kDeviceSync, nccl + kDeviceSync}, setup(1, 2));  // NCCL is stream-ordered
  REQUIRE(nc.collectives.at("allreduce").count("ring") == 1);
  REQUIRE(nc.makespan_s == Approx(2 * (kNvLat + (n / 2.0) / kNvBw)).epsilon(1e-9));
}

TEST_CASE("gpu: bad GPU records are errors naming the call", "[gpu]")
{
  TempDir dir;
  REQUIRE_THROWS_WITH(run_gpu(dir, {"{\"op\":\"gpu_memcpy\",\"fn\":\"cudaMemcpy\",\"tag\":9,\"bytes\":8}\n"}),
                      Catch::Contains("rank-00000.jsonl:1") && Catch::Contains("copy kind"));
}

TEST_CASE("gpu: synchronising an event never recorded is an error", "[gpu]")
{
  TempDir dir2;
  REQUIRE_THROWS_WITH(run_gpu(dir2, {"{\"op\":\"gpu_sync\",\"fn\":\"cudaEventSynchronize\",\"request\":3}\n"}),
                      Catch::Contains("event 3 was never recorded"));
}

TEST_CASE("gpu: freeing more than was allocated is an error", "[gpu]")
{
  TempDir dir3;
  REQUIRE_THROWS_WITH(run_gpu(dir3, {"{\"op\":\"gpu_free\",\"fn\":\"cudaFree\",\"bytes\":8,\"memory\":\"device\"}\n"}),
                      Catch::Contains("cudaFree of 8 bytes, but the rank holds 0"));
}

TEST_CASE("gpu: --gpu-mpi and gridcast/gpu settings are checked", "[gpu]")
{
  REQUIRE(parse_gpu_mpi_mode("gpudirect", "--gpu-mpi") == GpuMpiMode::GpuDirect);
  REQUIRE(parse_gpu_mpi_mode("hostcopy", "--gpu-mpi") == GpuMpiMode::HostCopy);
  REQUIRE_THROWS_WITH(parse_gpu_mpi_mode("direct", "--gpu-mpi"), Catch::Contains("hostcopy or gpudirect"));
  ReplayOptions o;
  REQUIRE_THROWS_WITH(apply_cfg(o, "gridcast/gpu/pin-cost:-1"), Catch::Contains("gridcast/gpu/pin-cost"));
  REQUIRE_THROWS_WITH(apply_cfg(o, "gridcast/gpu/nccl-algorithm:star"), Catch::Contains("ring or tree"));
  apply_cfg(o, "gridcast/gpu/pin-cost:1e-5");
  REQUIRE(o.gpu.costs.pin_s == 1e-5);
}

TEST_CASE("gpu: the CLI replays GPU traces deterministically with --gpu-mpi and --ranks-per-node", "[gpu][cli]")
{
  TempDir dir;
  std::vector<std::string> ranks;
  for (int r = 0; r < 4; ++r) {
    int peer = r ^ 1;
    ranks.push_back(kernel(0.01, 1) + h2d(1000000, "cudaMemcpyAsync", 2) + kDeviceSync +
                    "{\"op\":\"sendrecv\",\"fn\":\"MPI_Sendrecv\",\"peer\":" + std::to_string(peer) +
                    ",\"bytes\":200000,\"src\":" + std::to_string(peer) + ",\"recv_bytes\":200000,\"memory\":\"device\"}\n"
                    "{\"op\":\"allreduce\",\"fn\":\"ncclAllReduce\",\"bytes\":4000000,\"memory\":\"device\"}\n");
  }
  test::write_jsonl_profile(dir / "trace", ranks, 1e9);
  test::write_file(dir / "platform.xml", platform_xml(2));
  const std::string base = (dir / "trace").string() + " --platform " + (dir / "platform.xml").string() +
                           " --ranks-per-node 2 --gpu-mpi gpudirect --out ";
  auto a = test::run_gridcast("replay " + base + (dir / "a").string());
  auto b = test::run_gridcast("replay " + base + (dir / "b").string());
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  const std::string pa = test::read_file(dir / "a" / "prediction.json");
  REQUIRE(pa.find("\"gpu_mpi\": \"gpudirect\"") != std::string::npos);
  REQUIRE(pa.find("\"node-1\"") != std::string::npos);  // ranks 2 and 3 on the second node
  REQUIRE(pa == test::read_file(dir / "b" / "prediction.json"));
  REQUIRE(test::read_file(dir / "a" / "timeline.json") == test::read_file(dir / "b" / "timeline.json"));
  auto bad = test::run_gridcast("replay " + (dir / "trace").string() + " --platform " +
                                (dir / "platform.xml").string() + " --gpu-mpi direct");
  REQUIRE(bad.exit_code == 1);
  REQUIRE(bad.output.find("hostcopy or gpudirect") != std::string::npos);
}

namespace {
/// Rank 0 sends the same 1 MB device buffer to rank 1 twice (same tag: the same halo buffer), then once
/// with tag 1 (another buffer); rank 1 receives them.
std::vector<std::string> device_pingpong_reused(const std::string& between = "")
{
  std::string send0 = "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":0,\"bytes\":1000000,\"memory\":\"device\"}\n";
  std::string send1 = "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":1,\"bytes\":1000000,\"memory\":\"device\"}\n";
  std::string recv0 = "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":0,\"bytes\":1000000,\"memory\":\"device\"}\n";
  std::string recv1 = "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":1,\"bytes\":1000000,\"memory\":\"device\"}\n";
  return {send0 + between + send0 + send1, recv0 + between + recv0 + recv1};
}
// One GPUDirect transfer node-0.gpu-0 -> node-1.gpu-0 (see the GPUDirect test above).
constexpr double kDirect = 2 * kRootLat + kNetLat + kMsg / kNetBw;
constexpr double kPin = 4000e-9;
}  // namespace

TEST_CASE("gpu: GPUDirect registers a reused buffer once (registration cache)", "[gpu]")
{
  TempDir dir;
  Setup s = setup(2, 1);
  s.mode = GpuMpiMode::GpuDirect;
  auto r = run_gpu(dir, device_pingpong_reused(), s);
  // Both sides pin in parallel before the first transfer (tag 0) and before the third (tag 1: another
  // buffer); the second transfer reuses the tag-0 registration.
  REQUIRE(r.makespan_s == Approx(2 * kPin + 3 * kDirect).epsilon(1e-9));
}

TEST_CASE("gpu: GPUDirect pin-policy call pins on every call", "[gpu]")
{
  TempDir dir;
  Setup s = setup(2, 1);
  s.mode = GpuMpiMode::GpuDirect;
  s.cfg = {"gridcast/gpu/pin-policy:call"};
  auto r = run_gpu(dir, device_pingpong_reused(), s);
  REQUIRE(r.makespan_s == Approx(3 * kPin + 3 * kDirect).epsilon(1e-9));
}

TEST_CASE("gpu: a device cudaFree empties the registration cache", "[gpu]")
{
  TempDir dir;
  Setup s = setup(2, 1);
  s.mode = GpuMpiMode::GpuDirect;
  // Both ranks allocate and free 8 bytes between the two tag-0 transfers: the second one pins again.
  const std::string churn = "{\"op\":\"gpu_malloc\",\"fn\":\"cudaMalloc\",\"bytes\":8,\"memory\":\"device\"}\n"
                            "{\"op\":\"gpu_free\",\"fn\":\"cudaFree\",\"bytes\":8,\"memory\":\"device\"}\n";
  std::vector<std::string> ranks = device_pingpong_reused(churn);
  // The churn sits between the first and the second send/recv on both ranks (see device_pingpong_reused).
  auto r = run_gpu(dir, ranks, s);
  REQUIRE(r.makespan_s == Approx(3 * kPin + 3 * kDirect + 175e-6 + 125e-6).epsilon(1e-9));
}

TEST_CASE("gpu: gridcast/gpu/pin-policy is checked", "[gpu]")
{
  ReplayOptions o;
  REQUIRE(o.gpu.pin_policy == PinPolicy::Cache);
  REQUIRE_THROWS_WITH(apply_cfg(o, "gridcast/gpu/pin-policy:never"), Catch::Contains("cache or call"));
  apply_cfg(o, "gridcast/gpu/pin-policy:call");
  REQUIRE(o.gpu.pin_policy == PinPolicy::Call);
}

namespace {
const std::string kNcclAllreduce10MB =
    "{\"op\":\"allreduce\",\"fn\":\"ncclAllReduce\",\"bytes\":10000000,\"stream\":0,\"memory\":\"device\"}\n";
const std::string kStreamSync0 = "{\"op\":\"gpu_sync\",\"fn\":\"cudaStreamSynchronize\",\"stream\":0}\n";
std::string host_sleep(double s) { return "{\"op\":\"sleep\",\"seconds\":" + std::to_string(s) + "}\n"; }
// The NCCL ring allreduce of 10 MB on the two GPUs of one node: 2 steps of 5 MB over NVLink.
constexpr double kNcclRing = 2 * (kNvLat + 5e6 / kNvBw);  // 201 us
}  // namespace

TEST_CASE("gpu: an NCCL collective is enqueued on its stream, the host goes on", "[gpu]")
{
  TempDir dir;
  // Each rank enqueues the allreduce, then works 1 ms on the host, then synchronises the stream: the
  // collective (201 us) ran during the host work, so the rank ends at 1 ms (blocking the rank: 1.201 ms).
  const std::string rank = kNcclAllreduce10MB + host_sleep(0.001) + kStreamSync0;
  auto r = run_gpu(dir, {rank, rank}, setup(1, 2));
  REQUIRE(kNcclRing == Approx(201e-6));
  REQUIRE(r.makespan_s == Approx(0.001).epsilon(1e-9));
}

TEST_CASE("gpu: a synchronisation waits for the enqueued NCCL collective", "[gpu]")
{
  TempDir dir;
  const std::string rank = kNcclAllreduce10MB + host_sleep(0.0001) + kStreamSync0;
  auto r = run_gpu(dir, {rank, rank}, setup(1, 2));
  REQUIRE(r.makespan_s == Approx(kNcclRing).epsilon(1e-9));
}

TEST_CASE("gpu: an NCCL collective starts after the earlier work of its stream", "[gpu]")
{
  TempDir dir;
  // Rank 0's stream runs a 1 ms kernel first, so the ring starts at 1 ms for both ranks (rank 1's
  // stream waits inside the collective for rank 0's).
  auto r = run_gpu(dir, {kernel(0.001, 0) + kNcclAllreduce10MB + kStreamSync0, kNcclAllreduce10MB + kStreamSync0},
                   setup(1, 2));
  REQUIRE(r.makespan_s == Approx(0.001 + kNcclRing).epsilon(1e-9));
  REQUIRE(r.ranks[1].finish_s == Approx(0.001 + kNcclRing).epsilon(1e-9));
}

TEST_CASE("gpu: cudaStreamWaitEvent makes a stream wait for another stream's event", "[gpu]")
{
  TempDir dir;
  Setup s = setup(1, 1);
  s.gpu_cores = 2;  // the two streams' kernels could run side by side
  // Stream 1 runs 2 ms, records event 7; stream 0 waits for it, then runs 1 ms: 3 ms (without the wait
  // stream 0 would end at 1 ms, which is all the host synchronises).
  auto r = run_gpu(dir, {kernel(0.002, 1) +
                         "{\"op\":\"gpu_sync\",\"fn\":\"cudaEventRecord\",\"request\":7,\"stream\":1}\n"
                         "{\"op\":\"gpu_sync\",\"fn\":\"cudaStreamWaitEvent\",\"request\":7,\"stream\":0}\n" +
                         kernel(0.001, 0) + kStreamSync0},
                   s);
  REQUIRE(r.makespan_s == Approx(0.003).epsilon(1e-9));
}

namespace {
/// A launch as the profiler records it: the host-side cost only, no device time.
std::string recorded_launch(double host_s, int stream = 0)
{
  return "{\"op\":\"gpu_kernel\",\"fn\":\"cudaLaunchKernel\",\"seconds\":" + std::to_string(host_s) +
         ",\"stream\":" + std::to_string(stream) + "}\n";
}
std::string recorded_device_sync(double blocked_s)
{
  return "{\"op\":\"gpu_sync\",\"fn\":\"cudaDeviceSynchronize\",\"seconds\":" + std::to_string(blocked_s) + "}\n";
}
}  // namespace

TEST_CASE("gpu: a recorded kernel takes its device time from the next synchronisation", "[gpu]")
{
  TempDir dir;
  // Recorded: launch (5 us), 2 ms of host work, then 3 ms blocked in cudaDeviceSynchronize: the GPU was
  // busy from the end of the launch to the end of the synchronisation, 5 ms. Replayed: the kernel runs
  // 5 ms from 5 us; the host's 2 ms overlap it; the synchronisation returns at 5.005 ms.
  auto r = run_gpu(dir, {recorded_launch(5e-6) + host_sleep(0.002) + recorded_device_sync(0.003)});
  REQUIRE(r.makespan_s == Approx(5e-6 + 0.005).epsilon(1e-9));
}

TEST_CASE("gpu: kernels pending at one synchronisation share its device time", "[gpu]")
{
  TempDir dir;
  // Two launches (no host cost), then 4 ms blocked in cudaStreamSynchronize: 2 ms each, 4 ms in all.
  auto r = run_gpu(dir, {recorded_launch(0) + recorded_launch(0) +
                         "{\"op\":\"gpu_sync\",\"fn\":\"cudaStreamSynchronize\",\"stream\":0,\"seconds\":0.004}\n"});
  REQUIRE(r.makespan_s == Approx(0.004).epsilon(1e-9));
}

TEST_CASE("gpu: a blocking copy gives the pending kernels of its stream their time", "[gpu]")
{
  TempDir dir;
  // Recorded: launch, 1 ms of host work, a blocking 1e8-byte host-to-device cudaMemcpy that took 12 ms
  // (waiting for the kernel, then copying). The kernel gets 1 + 12 = 13 ms (the approximation counts
  // the copy's own time too, docs/guides/gpu.md); replayed: kernel 13 ms, then the copy (queue 10 us on the host
  // before, 1 us + 10 ms on the root link).
  auto r = run_gpu(dir, {recorded_launch(0) + host_sleep(0.001) +
                         "{\"op\":\"gpu_memcpy\",\"fn\":\"cudaMemcpy\",\"tag\":1,\"bytes\":100000000,\"stream\":0,"
                         "\"memory\":\"device\",\"seconds\":0.012}\n"});
  REQUIRE(r.makespan_s == Approx(0.013 + kRootLat + 1e8 / kRootBw).epsilon(1e-9));
}

TEST_CASE("gpu: without a measured synchronisation a recorded kernel takes no time", "[gpu]")
{
  TempDir dir;
  auto r = run_gpu(dir, {recorded_launch(0) + host_sleep(0.001) + kDeviceSync});
  REQUIRE(r.makespan_s == Approx(0.001).epsilon(1e-9));
}
