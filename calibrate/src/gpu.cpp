// GPU figures through the CUDA driver API, loaded with dlopen at run time: gridcast builds without CUDA
// and a machine without a driver simply skips this part. Only the few driver entry points used here are
// declared (their C signatures from cuda.h, which is not needed). The driver calls are the ones behind
// the runtime's: cuMemAlloc is what cudaMalloc does after creating the context, cuMemHostAlloc is
// cudaHostAlloc, cuMemcpy* are cudaMemcpy.
//
// Every copy is synchronous and timed with steady_clock; a figure is the median of its repetitions.
// Latency: an 8-byte copy. Bandwidth: bytes / (time of a large copy - latency).
#include "gridcast/calibrate/measure.hpp"

#include "gridcast/foundation/errors.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::calibrate {

namespace {

using CUresult    = int;
using CUdevice    = int;
using CUcontext   = void*;
using CUmodule    = void*;
using CUfunction  = void*;
using CUstream    = void*;
using CUdeviceptr = unsigned long long;

/// The driver entry points, resolved by name.
struct Driver {
  void* handle = nullptr;
  CUresult (*cuInit)(unsigned)                                       = nullptr;
  CUresult (*cuDeviceGetCount)(int*)                                 = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int)                            = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice)                  = nullptr;
  CUresult (*cuDeviceTotalMem)(std::size_t*, CUdevice)               = nullptr;  // _v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice)         = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice)                    = nullptr;  // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext)                             = nullptr;
  CUresult (*cuCtxSynchronize)()                                     = nullptr;
  CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned)             = nullptr;
  CUresult (*cuDeviceCanAccessPeer)(int*, CUdevice, CUdevice)        = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t)                  = nullptr;  // _v2
  CUresult (*cuMemFree)(CUdeviceptr)                                 = nullptr;  // _v2
  CUresult (*cuMemHostAlloc)(void**, std::size_t, unsigned)          = nullptr;
  CUresult (*cuMemFreeHost)(void*)                                   = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t)    = nullptr;  // _v2
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t)          = nullptr;  // _v2
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, std::size_t)    = nullptr;  // _v2
  CUresult (*cuMemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, std::size_t) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*)               = nullptr;
  CUresult (*cuModuleUnload)(CUmodule)                               = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;

  ~Driver()
  {
    if (handle != nullptr)
      dlclose(handle);
  }
};

template <class F> void resolve(Driver& d, F& fn, const char* name)
{
  void* sym = dlsym(d.handle, name);
  if (sym == nullptr)
    throw InputError({"libcuda.so.1", 0, "", -1}, std::string("the CUDA driver lacks ") + name +
                                                      " (driver too old?)");
  fn = reinterpret_cast<F>(sym);
}

void check(const Driver& d, CUresult r, const char* call)
{
  if (r == 0)
    return;
  const char* text = nullptr;
  if (d.cuGetErrorString != nullptr)
    d.cuGetErrorString(r, &text);
  throw InputError({"CUDA", 0, call, -1}, std::string(call) + " failed with CUDA error " + std::to_string(r) +
                                              (text != nullptr ? std::string(" (") + text + ")" : std::string()));
}

// An empty kernel in PTX, JIT-compiled by the driver for whatever GPU it finds. The oldest PTX ISA and
// target that a driver accepts first: new drivers may refuse long-retired targets, old drivers new ISAs.
std::string empty_kernel_ptx(const char* isa_version, const char* target)
{
  return std::string(".version ") + isa_version + "\n.target " + target +
         "\n.address_size 64\n.visible .entry gridcast_empty()\n{\n  ret;\n}\n";
}

using Clock = std::chrono::steady_clock;

/// Median seconds of `reps` calls of `f`, after one untimed warm-up call.
double median_time(int reps, const std::function<void()>& f)
{
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return summarize(std::move(t)).median;
}

/// Latency (8-byte copy) and bandwidth (large copy) of one kind of copy. copy(bytes) copies `bytes`
/// synchronously.
platform::GpuLinkFigures measure_link(const std::function<void(std::size_t)>& copy, std::size_t big, int reps)
{
  platform::GpuLinkFigures l;
  l.latency_s    = median_time(reps * 10, [&] { copy(8); });
  double t       = median_time(reps, [&] { copy(big); });
  l.bandwidth_Bps = static_cast<double>(big) / std::max(t - l.latency_s, 1e-12);
  return l;
}

/// dlopen the driver and resolve every entry point; false when there is no driver.
bool open_driver(Driver& d)
{
  d.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (d.handle == nullptr)
    return false;
  resolve(d, d.cuGetErrorString, "cuGetErrorString");
  resolve(d, d.cuInit, "cuInit");
  resolve(d, d.cuDeviceGetCount, "cuDeviceGetCount");
  resolve(d, d.cuDeviceGet, "cuDeviceGet");
  resolve(d, d.cuDeviceGetName, "cuDeviceGetName");
  resolve(d, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  resolve(d, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(d, d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  resolve(d, d.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(d, d.cuCtxSynchronize, "cuCtxSynchronize");
  resolve(d, d.cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess");
  resolve(d, d.cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer");
  resolve(d, d.cuMemAlloc, "cuMemAlloc_v2");
  resolve(d, d.cuMemFree, "cuMemFree_v2");
  resolve(d, d.cuMemHostAlloc, "cuMemHostAlloc");
  resolve(d, d.cuMemFreeHost, "cuMemFreeHost");
  resolve(d, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(d, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(d, d.cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  resolve(d, d.cuMemcpyPeer, "cuMemcpyPeer");
  resolve(d, d.cuModuleLoadData, "cuModuleLoadData");
  resolve(d, d.cuModuleUnload, "cuModuleUnload");
  resolve(d, d.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(d, d.cuLaunchKernel, "cuLaunchKernel");
  return true;
}

/// One measuring session on GPU 0 (context current): the driver, how hard to measure, and the progress
/// report each measurement ends with.
struct Session {
  const Driver& d;
  int reps;
  std::size_t big;  ///< bytes of a large copy
  CUdevice dev0;
  CUcontext ctx0;
  std::function<void(const std::string&)> next;
};

/// Host-device copies from pageable and pinned memory, and copies within GPU 0.
void measure_copies(const Session& s, platform::GpuCalibration& g)
{
  const Driver& d = s.d;
  CUdeviceptr dbuf = 0, dbuf2 = 0;
  check(d, d.cuMemAlloc(&dbuf, s.big), "cuMemAlloc_v2");
  check(d, d.cuMemAlloc(&dbuf2, s.big), "cuMemAlloc_v2");
  std::vector<char> pageable(s.big, 1);
  void* pinned = nullptr;
  check(d, d.cuMemHostAlloc(&pinned, s.big, 0), "cuMemHostAlloc");
  std::memset(pinned, 1, s.big);

  g.h2d_pageable = measure_link([&](std::size_t n) { check(d, d.cuMemcpyHtoD(dbuf, pageable.data(), n), "cuMemcpyHtoD_v2"); }, s.big, s.reps);
  s.next("host to device, pageable");
  g.d2h_pageable = measure_link([&](std::size_t n) { check(d, d.cuMemcpyDtoH(pageable.data(), dbuf, n), "cuMemcpyDtoH_v2"); }, s.big, s.reps);
  s.next("device to host, pageable");
  g.h2d_pinned = measure_link([&](std::size_t n) { check(d, d.cuMemcpyHtoD(dbuf, pinned, n), "cuMemcpyHtoD_v2"); }, s.big, s.reps);
  s.next("host to device, pinned");
  g.d2h_pinned = measure_link([&](std::size_t n) { check(d, d.cuMemcpyDtoH(pinned, dbuf, n), "cuMemcpyDtoH_v2"); }, s.big, s.reps);
  s.next("device to host, pinned");
  g.d2d = measure_link(
      [&](std::size_t n) {
        check(d, d.cuMemcpyDtoD(dbuf2, dbuf, n), "cuMemcpyDtoD_v2");
        check(d, d.cuCtxSynchronize(), "cuCtxSynchronize");  // device-to-device copies return early
      },
      s.big, s.reps);
  s.next("device to device");
  check(d, d.cuMemFreeHost(pinned), "cuMemFreeHost");
  check(d, d.cuMemFree(dbuf), "cuMemFree_v2");
  check(d, d.cuMemFree(dbuf2), "cuMemFree_v2");
}

/// Copies from GPU 0 to GPU 1 (where there are two).
void measure_peer(const Session& s, int count, platform::GpuCalibration& g)
{
  if (count < 2) {
    s.next("peer to peer skipped: one GPU");
    return;
  }
  const Driver& d = s.d;
  CUdeviceptr src = 0;
  check(d, d.cuMemAlloc(&src, s.big), "cuMemAlloc_v2");
  CUdevice dev1 = 0;
  check(d, d.cuDeviceGet(&dev1, 1), "cuDeviceGet");
  int can = 0;
  check(d, d.cuDeviceCanAccessPeer(&can, s.dev0, dev1), "cuDeviceCanAccessPeer");
  CUcontext ctx1 = nullptr;
  check(d, d.cuDevicePrimaryCtxRetain(&ctx1, dev1), "cuDevicePrimaryCtxRetain");
  check(d, d.cuCtxSetCurrent(ctx1), "cuCtxSetCurrent");
  CUdeviceptr peer = 0;
  check(d, d.cuMemAlloc(&peer, s.big), "cuMemAlloc_v2");
  check(d, d.cuCtxSetCurrent(s.ctx0), "cuCtxSetCurrent");
  if (can != 0) {
    CUresult r = d.cuCtxEnablePeerAccess(ctx1, 0);
    if (r != 704 /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */)
      check(d, r, "cuCtxEnablePeerAccess");
  }
  // Without peer access the driver stages through the host: that is then what p2p costs.
  g.p2p = measure_link(
      [&](std::size_t n) {
        check(d, d.cuMemcpyPeer(peer, ctx1, src, s.ctx0, n), "cuMemcpyPeer");
        check(d, d.cuCtxSynchronize(), "cuCtxSynchronize");
      },
      s.big, s.reps);
  check(d, d.cuCtxSetCurrent(ctx1), "cuCtxSetCurrent");
  check(d, d.cuMemFree(peer), "cuMemFree_v2");
  check(d, d.cuCtxSetCurrent(s.ctx0), "cuCtxSetCurrent");
  check(d, d.cuDevicePrimaryCtxRelease(dev1), "cuDevicePrimaryCtxRelease_v2");
  check(d, d.cuMemFree(src), "cuMemFree_v2");
  s.next("peer to peer, GPU 0 to GPU 1" + std::string(can != 0 ? "" : " (no peer access: staged)"));
}

/// Seconds to launch an empty kernel and wait for it.
double measure_launch(const Session& s)
{
  const Driver& d = s.d;
  CUmodule module = nullptr;
  CUresult loaded = 0;
  for (auto [isa, target] : {std::pair{"6.0", "sm_50"}, std::pair{"7.0", "sm_70"}, std::pair{"8.0", "sm_90"}}) {
    const std::string ptx = empty_kernel_ptx(isa, target);
    loaded                = d.cuModuleLoadData(&module, ptx.c_str());
    if (loaded == 0)
      break;
  }
  check(d, loaded, "cuModuleLoadData (empty kernel, PTX ISA 6.0 to 8.0)");
  CUfunction empty = nullptr;
  check(d, d.cuModuleGetFunction(&empty, module, "gridcast_empty"), "cuModuleGetFunction");
  double t = median_time(s.reps * 20, [&] {
    check(d, d.cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), "cuLaunchKernel");
    check(d, d.cuCtxSynchronize(), "cuCtxSynchronize");
  });
  check(d, d.cuModuleUnload(module), "cuModuleUnload");
  s.next("empty kernel launch");
  return t;
}

/// Device malloc/free of 1 MiB blocks, and pinned host allocation per byte.
void measure_allocation(const Session& s, bool quick, platform::GpuCalibration& g)
{
  const Driver& d = s.d;
  {  // Each alloc timed, then its free.
    std::vector<double> ta, tf;
    for (int r = 0; r < s.reps * 4; ++r) {
      CUdeviceptr p = 0;
      auto t0       = Clock::now();
      check(d, d.cuMemAlloc(&p, 1u << 20), "cuMemAlloc_v2");
      auto t1 = Clock::now();
      check(d, d.cuMemFree(p), "cuMemFree_v2");
      auto t2 = Clock::now();
      ta.push_back(std::chrono::duration<double>(t1 - t0).count());
      tf.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    g.malloc_s = summarize(std::move(ta)).median;
    g.free_s   = summarize(std::move(tf)).median;
  }
  s.next("device malloc/free");
  {  // Pinned host memory costs in proportion to its size (the pages are locked): seconds per byte.
    const std::size_t bytes = quick ? (16u << 20) : (64u << 20);
    std::vector<double> t;
    for (int r = 0; r < (quick ? 3 : 7); ++r) {
      void* h = nullptr;
      auto t0 = Clock::now();
      check(d, d.cuMemHostAlloc(&h, bytes, 0), "cuMemHostAlloc");
      t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      check(d, d.cuMemFreeHost(h), "cuMemFreeHost");
    }
    g.host_alloc_s_per_byte = summarize(std::move(t)).median / static_cast<double>(bytes);
  }
  s.next("pinned host allocation");
}

}  // namespace

GpuProbe measure_gpu(bool quick, Progress& progress)
{
  GpuProbe probe;
  Driver d;
  if (not open_driver(d)) {
    probe.skipped_because = "no CUDA driver on this machine (libcuda.so.1 not found)";
    return probe;
  }
  CUresult init = d.cuInit(0);
  if (init == 100 /* CUDA_ERROR_NO_DEVICE */) {
    probe.skipped_because = "the CUDA driver sees no GPU";
    return probe;
  }
  check(d, init, "cuInit");
  int count = 0;
  check(d, d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count < 1) {
    probe.skipped_because = "the CUDA driver sees no GPU";
    return probe;
  }

  const int total_steps = 10;
  int step              = 0;
  Session s{d, quick ? 5 : 21, quick ? (8u << 20) : (256u << 20), 0, nullptr,
            [&](const std::string& what) { progress.step("gpu", ++step, total_steps, what); }};

  platform::GpuCalibration g;
  g.source       = "measured";
  g.device_count = count;
  check(d, d.cuDeviceGet(&s.dev0, 0), "cuDeviceGet");
  char name[256] = {};
  check(d, d.cuDeviceGetName(name, sizeof name - 1, s.dev0), "cuDeviceGetName");
  g.device_name = name;
  std::size_t mem = 0;
  check(d, d.cuDeviceTotalMem(&mem, s.dev0), "cuDeviceTotalMem_v2");
  g.memory_bytes = static_cast<double>(mem);
  check(d, d.cuDevicePrimaryCtxRetain(&s.ctx0, s.dev0), "cuDevicePrimaryCtxRetain");
  check(d, d.cuCtxSetCurrent(s.ctx0), "cuCtxSetCurrent");
  s.next("context on " + g.device_name);

  measure_copies(s, g);
  measure_peer(s, count, g);
  g.kernel_launch_s = measure_launch(s);
  measure_allocation(s, quick, g);

  check(d, d.cuDevicePrimaryCtxRelease(s.dev0), "cuDevicePrimaryCtxRelease_v2");
  probe.gpu = g;
  return probe;
}

}  // namespace gridcast::calibrate
