// The GPU memory-system suite on the device: one program, nvcc -O3 -arch=sm_90 -std=c++17 and nothing
// else (bench/gpu-cache/run-on-device.sh builds and runs it).
//
//   suite [--check all|CASE] [--bases-out FILE] [--size device|ci]   (the default: --check all at device size)
//       For each case at device size: cudaMalloc its buffers, fill them (suite.hpp: initial_contents),
//       print the layout (buffer bases, kernels' registers: the file gen_traces --bases reads), run each
//       launch's instrumented kernel, which folds every access of every thread into a hash, and compare
//       the per-thread hashes and counts with the host generator's (the same bodies run on the CPU with
//       the device's addresses). Prints MATCH or MISMATCH per launch.
//   suite --plain all|CASE [--bases-out FILE]
//       The same buffers and data, then only the uninstrumented kernels (k_gemm, k_2mm_1, ...: plain
//       extern "C" names, for ncu's --kernel-name). Messages go to stderr: stdout stays ncu's.
// Exit status: 0 when every launch matched (or ran), 1 when one did not, 2 on a usage error.
#include "kernels.hpp"
#include "suite.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace gcbench {

/// The real kernel: plain loads and stores.
struct PlainAccessor {
  template <class T>
  __device__ T load(int, const T* p) const {
    return *p;
  }
  template <class T>
  __device__ void store(int, T* p, typename Identity<T>::type v) const {
    *p = v;
  }
  __device__ void atomic_add(int, float* p, float v) const { atomicAdd(p, v); }
  __device__ void sync() const { __syncthreads(); }
};

/// The instrumented kernel: every access folded into the thread's hash, then performed.
struct CheckAccessor {
  unsigned long long hash = kHashSeed, count = 0;
  template <class T>
  __device__ T load(int, const T* p) {
    note(kKindLoad, sizeof(T), p);
    return *p;
  }
  template <class T>
  __device__ void store(int, T* p, typename Identity<T>::type v) {
    note(kKindStore, sizeof(T), p);
    *p = v;
  }
  __device__ void atomic_add(int, float* p, float v) {
    note(kKindAtomic, sizeof(float), p);
    atomicAdd(p, v);
  }
  __device__ void sync() const { __syncthreads(); }

private:
  __device__ void note(unsigned kind, unsigned bytes, const void* p) {
    hash = fold_access(hash, kind, bytes, reinterpret_cast<std::uint64_t>(p));
    ++count;
  }
};

__device__ inline ThreadIdx this_thread() {
  return ThreadIdx{blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y, blockDim.x, blockDim.y, gridDim.x, gridDim.y};
}

template <int OP>
__global__ void check_kernel(LaunchArgs a, unsigned long long* hashes, unsigned long long* counts) {
  __shared__ float shared[shared_floats(OP) > 0 ? shared_floats(OP) : 1];
  CheckAccessor acc;
  const ThreadIdx t = this_thread();
  run_body<OP>(a, t, acc, shared);
  const std::uint64_t cta = std::uint64_t(t.by) * t.gdx + t.bx;
  const std::uint64_t thread = cta * (t.bdx * t.bdy) + t.ty * t.bdx + t.tx;
  hashes[thread] = acc.hash;
  counts[thread] = acc.count;
}

}  // namespace gcbench

// The uninstrumented kernels, one extern "C" function per launch kind (the names ncu reports).
#define GCB_KERNELS(X)                                                                                          \
  X(k_gemm, OpGemm) X(k_2mm_1, Op2mm1) X(k_2mm_2, Op2mm2) X(k_atax_1, OpAtax1) X(k_atax_2, OpAtax2)           \
  X(k_bicg_1, OpBicg1) X(k_bicg_2, OpBicg2) X(k_gesummv, OpGesummv) X(k_mvt_1, OpMvt1) X(k_mvt_2, OpMvt2)   \
  X(k_syrk, OpSyrk) X(k_conv2d, OpConv2d) X(k_jacobi2d, OpJacobi2d) X(k_reduce, OpReduce)                    \
  X(k_transpose, OpTranspose) X(k_bfs, OpBfs)

#define GCB_DEFINE_PLAIN(NAME, OP)                                         \
  extern "C" __global__ void NAME(gcbench::LaunchArgs a) {                 \
    __shared__ float shared[gcbench::shared_floats(gcbench::OP) > 0 ? gcbench::shared_floats(gcbench::OP) : 1]; \
    gcbench::PlainAccessor acc;                                            \
    gcbench::run_body<gcbench::OP>(a, gcbench::this_thread(), acc, shared); \
  }
GCB_KERNELS(GCB_DEFINE_PLAIN)

namespace gcbench {
namespace {

bool g_quiet_stdout = false;  // --plain: stdout belongs to ncu

/// Messages: stdout in check mode (the address_check file), stderr in plain mode.
FILE* msg() { return g_quiet_stdout ? stderr : stdout; }

#define GCB_CASE_PLAIN(NAME, OP) \
  case OP: NAME<<<grid, block>>>(a); break;
void launch_plain(int op, dim3 grid, dim3 block, const LaunchArgs& a) {
  switch (op) { GCB_KERNELS(GCB_CASE_PLAIN) default: break; }
}

#define GCB_CASE_ATTR(NAME, OP) \
  case OP: return cudaFuncGetAttributes(attr, NAME);
cudaError_t plain_attributes(int op, cudaFuncAttributes* attr) {
  switch (op) { GCB_KERNELS(GCB_CASE_ATTR) default: return cudaErrorInvalidValue; }
}

#define GCB_CHECK_NAME(NAME, OP) \
  if (std::strcmp(#NAME, kernel_name(OP)) != 0) return false;
bool names_agree() {
  GCB_KERNELS(GCB_CHECK_NAME)
  return true;
}

template <int OP = 0>
void launch_check(int op, dim3 grid, dim3 block, const LaunchArgs& a, unsigned long long* h, unsigned long long* c) {
  if constexpr (OP < OpCount) {
    if (op == OP) check_kernel<OP><<<grid, block>>>(a, h, c);
    else launch_check<OP + 1>(op, grid, block, a, h, c);
  }
}

/// A CUDA call that failed: says where, and the case goes on to its end (its buffers are freed).
struct CudaFailure {
  std::string what;
};
void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaFailure{std::string(what) + ": " + cudaGetErrorString(e)};
}

/// The host generator's hash and count of every thread of a launch, CTAs spread over the cores.
void host_hashes(const LaunchSpec& l, const LaunchArgs& a, const HostMemory& memory, std::vector<std::uint64_t>& hashes,
                 std::vector<std::uint64_t>& counts, std::uint64_t& out_of_bounds) {
  const std::uint64_t ctas = l.grid.count(), threads = l.block.count();
  hashes.assign(ctas * threads, 0);
  counts.assign(ctas * threads, 0);
  std::atomic<std::uint64_t> next{0}, oob{0};
  auto work = [&] {
    std::vector<float> shared;
    std::vector<HashSink> sinks(threads);
    for (std::uint64_t cta; (cta = next.fetch_add(1)) < ctas;) {
      oob += run_cta_host(l, a, memory, cta, shared, [&](unsigned tid) {
        sinks[tid] = HashSink{};
        return &sinks[tid];
      });
      for (std::uint64_t t = 0; t < threads; ++t) {
        hashes[cta * threads + t] = sinks[t].hash;
        counts[cta * threads + t] = sinks[t].count;
      }
    }
  };
  const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  out_of_bounds = oob;
}

/// Checks one launch; returns true on MATCH.
bool check_launch(const Case& c, const LaunchSpec& l, const LaunchArgs& a, const HostMemory& memory) {
  const std::uint64_t n = l.grid.count() * l.block.count();
  unsigned long long *d_hash = nullptr, *d_count = nullptr;
  std::vector<std::uint64_t> dev_hash(n), dev_count(n), host_hash, host_count;
  cudaError_t e = cudaMalloc(&d_hash, n * 8);
  if (e == cudaSuccess) e = cudaMalloc(&d_count, n * 8);
  if (e == cudaSuccess) e = cudaMemset(d_hash, 0, n * 8);
  if (e == cudaSuccess) e = cudaMemset(d_count, 0, n * 8);
  if (e == cudaSuccess) {
    launch_check(l.op, dim3(l.grid.x, l.grid.y), dim3(l.block.x, l.block.y), a, d_hash, d_count);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(dev_hash.data(), d_hash, n * 8, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(dev_count.data(), d_count, n * 8, cudaMemcpyDeviceToHost);
  cudaFree(d_hash);
  cudaFree(d_count);
  cuda_ok(e, kernel_name(l.op));
  std::uint64_t out_of_bounds = 0;
  host_hashes(l, a, memory, host_hash, host_count, out_of_bounds);
  std::uint64_t differing = 0, first = n, accesses = 0;
  for (std::uint64_t t = 0; t < n; ++t) {
    accesses += dev_count[t];
    if (dev_hash[t] != host_hash[t] || dev_count[t] != host_count[t]) {
      if (differing++ == 0) first = t;
    }
  }
  const bool match = differing == 0 && out_of_bounds == 0;
  std::fprintf(msg(), "%s %s %s threads %llu accesses %llu differing_threads %llu out_of_bounds %llu\n",
               match ? "MATCH" : "MISMATCH", c.name.c_str(), kernel_name(l.op), (unsigned long long)n,
               (unsigned long long)accesses, (unsigned long long)differing, (unsigned long long)out_of_bounds);
  if (differing)
    std::fprintf(msg(), "  first differing thread %llu: device hash %016llx count %llu, host hash %016llx count %llu\n",
                 (unsigned long long)first, (unsigned long long)dev_hash[first], (unsigned long long)dev_count[first],
                 (unsigned long long)host_hash[first], (unsigned long long)host_count[first]);
  return match;
}

/// One case: buffers, data, layout, then the check or the plain launches. Returns false on a failure.
bool run_case(const std::string& name, SizeClass size, bool check, FILE* layout) {
  const Case c = make_case(name, size);
  std::vector<void*> buffers(c.buffers.size(), nullptr);
  std::vector<std::uint64_t> bases;
  std::vector<std::vector<unsigned char>> host_copies(c.buffers.size());
  bool ok = true;
  try {
    for (std::size_t i = 0; i < c.buffers.size(); ++i) {
      cuda_ok(cudaMalloc(&buffers[i], c.buffers[i].bytes), "cudaMalloc");
      bases.push_back(reinterpret_cast<std::uint64_t>(buffers[i]));
      std::vector<unsigned char> contents = initial_contents(c, i);
      cuda_ok(cudaMemcpy(buffers[i], contents.data(), contents.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
      if (contents_decide_addresses(c, i)) host_copies[i] = std::move(contents);
    }
    std::fprintf(layout, "case %s\n", c.name.c_str());
    for (std::size_t i = 0; i < c.buffers.size(); ++i)
      std::fprintf(layout, "buffer %s 0x%llx %llu\n", c.buffers[i].name.c_str(), (unsigned long long)bases[i],
                   (unsigned long long)c.buffers[i].bytes);
    for (const LaunchSpec& l : c.launches) {
      cudaFuncAttributes attr{};
      cuda_ok(plain_attributes(l.op, &attr), "cudaFuncGetAttributes");
      std::fprintf(layout, "kernel %s registers %d shared_bytes %zu\n", kernel_name(l.op), attr.numRegs,
                   attr.sharedSizeBytes);
    }
    std::fflush(layout);
    const LaunchArgs a = bind_bases(c, bases);
    HostMemory memory;
    for (std::size_t i = 0; i < c.buffers.size(); ++i)
      memory.regions.push_back({bases[i], c.buffers[i].bytes, host_copies[i].empty() ? nullptr : host_copies[i].data()});
    for (const LaunchSpec& l : c.launches) {
      if (check) {
        ok = check_launch(c, l, a, memory) && ok;
      } else {
        launch_plain(l.op, dim3(l.grid.x, l.grid.y), dim3(l.block.x, l.block.y), a);
        cuda_ok(cudaGetLastError(), kernel_name(l.op));
        cuda_ok(cudaDeviceSynchronize(), kernel_name(l.op));
        std::fprintf(msg(), "ran %s %s grid %u %u block %u %u\n", c.name.c_str(), kernel_name(l.op), l.grid.x, l.grid.y,
                     l.block.x, l.block.y);
      }
    }
  } catch (const CudaFailure& f) {
    std::fprintf(msg(), "ERROR %s: %s\n", c.name.c_str(), f.what.c_str());
    ok = false;
  }
  for (void* p : buffers)
    if (p) cudaFree(p);
  std::fflush(msg());
  return ok;
}

int usage() {
  std::fprintf(stderr, "usage: suite [--check all|CASE | --plain all|CASE] [--bases-out FILE] [--size device|ci]\ncases:");
  for (const std::string& n : case_names()) std::fprintf(stderr, " %s", n.c_str());
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace
}  // namespace gcbench

int main(int argc, char** argv) {
  using namespace gcbench;
  if (!names_agree()) {
    std::fprintf(stderr, "suite: internal error: kernel names differ between suite.cu and suite.hpp\n");
    return 2;
  }
  bool check = true;
  SizeClass size = SizeClass::Device;
  std::string which = "all", bases_out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--check" || arg == "--plain") && i + 1 < argc) {
      check = arg == "--check";
      which = argv[++i];
    } else if (arg == "--bases-out" && i + 1 < argc) {
      bases_out = argv[++i];
    } else if (arg == "--size" && i + 1 < argc && (argv[i + 1] == std::string("ci") || argv[i + 1] == std::string("device"))) {
      size = argv[++i] == std::string("ci") ? SizeClass::Ci : SizeClass::Device;
    } else {
      return usage();
    }
  }
  std::vector<std::string> cases;
  for (const std::string& n : case_names())
    if (which == "all" || which == n) cases.push_back(n);
  if (cases.empty()) return usage();
  g_quiet_stdout = !check;
  FILE* layout = bases_out.empty() ? msg() : std::fopen(bases_out.c_str(), "w");
  if (!layout) {
    std::fprintf(stderr, "suite: cannot write %s\n", bases_out.c_str());
    return 2;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "suite: no CUDA device\n");
    return 1;
  }
  std::fprintf(layout, "# buffer bases and kernel resources of the suite on the device (gen_traces --bases)\n");
  std::fprintf(layout, "gpu %s sms %d l2_bytes %d\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize);
  bool ok = true;
  for (const std::string& n : cases) ok = run_case(n, size, check, layout) && ok;
  if (layout != msg()) std::fclose(layout);
  std::fprintf(msg(), "%s\n", ok ? (check ? "ALL MATCH" : "ALL RAN") : "FAILURES (see above)");
  return ok ? 0 : 1;
}
