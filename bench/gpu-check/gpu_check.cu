// Real-GPU check of the rules gridcast's GPU emulation is built on (docs/guides/gpu.md). Each case
// prints one JSON line: what was measured on this GPU and what gridcast's rule predicts from the
// measured single-operation figures. Built and run by bench/gpu-check/run.sh only where nvcc exists.
//
// Cases:
//   copy_fit          pinned host-to-device copies of 1, 16, 256 MiB: latency + bytes / bandwidth
//   two_copies        two streams copy at once: the shared link makes them take about twice one copy
//   copy_under_kernel a copy on one stream under a longer kernel on another adds (almost) nothing
//   stream_wait_event stream 0 waits (cudaStreamWaitEvent) for a kernel on stream 1: times add up
//   recorded_kernel   a kernel's device time vs the span gridcast takes from the next synchronisation
//                     (end of launch to end of cudaDeviceSynchronize), one and two kernels per sync
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                                     \
  do {                                                                                               \
    cudaError_t e_ = (x);                                                                            \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
      std::exit(2);                                                                                  \
    }                                                                                                \
  } while (0)

using Clock = std::chrono::steady_clock;
static double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// One thread spinning on the SM clock: a kernel of a chosen duration that leaves the rest of the GPU free.
__global__ void spin(long long cycles)
{
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

static long long g_cycles_per_s = 0;
static long long cycles(double seconds) { return static_cast<long long>(seconds * static_cast<double>(g_cycles_per_s)); }

static void host_busy(double seconds)
{
  double end = now_s() + seconds;
  while (now_s() < end) {
  }
}

/// Median of `reps` timings of `f` (seconds, host clock around f, which must synchronise).
template <class F>
static double median_time(int reps, F f)
{
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double b = now_s();
    f();
    t.push_back(now_s() - b);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main()
{
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("gpu-check skipped: no CUDA device\n");
    return 0;
  }
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  g_cycles_per_s = static_cast<long long>(clock_khz) * 1000;
  std::printf("{\"case\":\"device\",\"name\":\"%s\",\"clock_hz\":%lld}\n", prop.name, g_cycles_per_s);

  // Calibrate the spin kernel: the SM clock may differ from the nominal rate under boost.
  cudaStream_t s0, s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e0, e1, ev;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  spin<<<1, 1, 0, s0>>>(cycles(0.001));  // warm-up
  CHECK(cudaStreamSynchronize(s0));
  CHECK(cudaEventRecord(e0, s0));
  spin<<<1, 1, 0, s0>>>(cycles(0.020));
  CHECK(cudaEventRecord(e1, s0));
  CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  g_cycles_per_s = static_cast<long long>(static_cast<double>(g_cycles_per_s) * 0.020 / (ms / 1e3));
  std::printf("{\"case\":\"spin_calibration\",\"asked_s\":0.020,\"got_s\":%.6f,\"cycles_per_s\":%lld}\n", ms / 1e3,
              g_cycles_per_s);

  // copy_fit: latency + bytes / bandwidth from 1 and 256 MiB, checked on 16 MiB.
  const size_t big = 256u << 20;
  char* h = nullptr;
  char* h2 = nullptr;
  char* d = nullptr;
  char* d2 = nullptr;
  CHECK(cudaMallocHost(&h, big));
  CHECK(cudaMallocHost(&h2, big));
  CHECK(cudaMalloc(&d, big));
  CHECK(cudaMalloc(&d2, big));
  auto copy_time = [&](size_t bytes) {
    return median_time(9, [&] { CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice)); });
  };
  double t1 = copy_time(1u << 20), t256 = copy_time(big), t16 = copy_time(16u << 20);
  double bw = (big - (1u << 20)) / (t256 - t1);
  double lat = t1 - (1u << 20) / bw;
  double pred16 = lat + (16u << 20) / bw;
  std::printf("{\"case\":\"copy_fit\",\"latency_s\":%.3e,\"bandwidth_Bps\":%.4e,\"t16MiB_s\":%.6f,"
              "\"predicted_s\":%.6f,\"error\":%.4f}\n",
              lat, bw, t16, pred16, t16 / pred16 - 1);

  // two_copies: two 256 MiB copies on two streams at once vs one.
  double two = median_time(5, [&] {
    CHECK(cudaMemcpyAsync(d, h, big, cudaMemcpyHostToDevice, s1));
    CHECK(cudaMemcpyAsync(d2, h2, big, cudaMemcpyHostToDevice, s2));
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaStreamSynchronize(s2));
  });
  std::printf("{\"case\":\"two_copies\",\"one_s\":%.6f,\"two_s\":%.6f,\"ratio\":%.3f,\"gridcast_ratio\":2}\n", t256,
              two, two / t256);

  // copy_under_kernel: a 50 ms kernel on s1 and a 16 MiB copy on s2.
  double under = median_time(5, [&] {
    spin<<<1, 1, 0, s1>>>(cycles(0.050));
    CHECK(cudaMemcpyAsync(d, h, 16u << 20, cudaMemcpyHostToDevice, s2));
    CHECK(cudaDeviceSynchronize());
  });
  std::printf("{\"case\":\"copy_under_kernel\",\"kernel_s\":0.050,\"copy_s\":%.6f,\"together_s\":%.6f,"
              "\"gridcast_s\":0.050}\n",
              t16, under);

  // stream_wait_event: s1 runs 20 ms and records ev; s0 waits for ev, then runs 10 ms.
  double waited = median_time(5, [&] {
    spin<<<1, 1, 0, s1>>>(cycles(0.020));
    CHECK(cudaEventRecord(ev, s1));
    CHECK(cudaStreamWaitEvent(s0, ev, 0));
    spin<<<1, 1, 0, s0>>>(cycles(0.010));
    CHECK(cudaStreamSynchronize(s0));
  });
  double unwaited = median_time(5, [&] {
    spin<<<1, 1, 0, s1>>>(cycles(0.020));
    spin<<<1, 1, 0, s0>>>(cycles(0.010));
    CHECK(cudaStreamSynchronize(s0));
    CHECK(cudaStreamSynchronize(s1));
  });
  std::printf("{\"case\":\"stream_wait_event\",\"waited_s\":%.6f,\"gridcast_s\":0.030,\"without_wait_s\":%.6f,"
              "\"gridcast_without_s\":0.020}\n",
              waited, unwaited);

  // recorded_kernel: what a profile sees (launch time, host work, time blocked in the sync) and the
  // device time gridcast derives, vs the kernel's real duration (events).
  struct Case {
    const char* name;
    std::vector<double> kernels_s;
    double host_work_s;
  };
  std::vector<Case> cases = {{"one_kernel_host_shorter", {0.020}, 0.005},
                             {"one_kernel_host_longer", {0.010}, 0.015},
                             {"two_kernels", {0.010, 0.010}, 0.005}};
  for (const Case& c : cases) {
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(e0, s0));
    double launch_end = 0;
    for (double k : c.kernels_s) {
      spin<<<1, 1, 0, s0>>>(cycles(k));
      launch_end = now_s();
    }
    CHECK(cudaEventRecord(e1, s0));
    host_busy(c.host_work_s);
    double sync_begin = now_s();
    CHECK(cudaDeviceSynchronize());
    double sync_end = now_s();
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    double blocked = sync_end - sync_begin;
    // gridcast: the span from the last launch's end to the sync's end, when the sync blocked measurably.
    double span = sync_end - launch_end;
    std::printf("{\"case\":\"recorded_kernel\",\"name\":\"%s\",\"device_s\":%.6f,\"host_work_s\":%.6f,"
                "\"sync_blocked_s\":%.6f,\"gridcast_device_s\":%.6f,\"error\":%.4f}\n",
                c.name, ms / 1e3, c.host_work_s, blocked, span, span / (ms / 1e3) - 1);
  }
  CHECK(cudaFreeHost(h));
  CHECK(cudaFreeHost(h2));
  CHECK(cudaFree(d));
  CHECK(cudaFree(d2));
  return 0;
}
