// Library wrappers resolved with dlsym(RTLD_NEXT): BLAS/LAPACK (Fortran and CBLAS), the CUDA runtime and
// NCCL. The GPU declarations are our own (no CUDA headers): only the types' sizes and calling conventions
// matter, and they are stable across CUDA 10-12 and NCCL 2.x.
#include "core.hpp"

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

using namespace gridcast::hook;

namespace {

/// The real function behind our wrapper; a missing one is fatal only if it is actually called (the
/// application linked to it, so it cannot be missing unless the library was unloaded).
template <typename F>
F real_function(const char* name)
{
  void* p = next_symbol(name);
  if (p == nullptr) {
    std::fprintf(stderr, "gridcast-hook: %s is called but no library after the hook defines it\n", name);
    std::abort();
  }
  return reinterpret_cast<F>(p);
}


}  // namespace

namespace {

/// What sets a BLAS/LAPACK call's cost, as the call passed it (ExtraKind::LibArgs): 0 and '-' for the
/// arguments a function does not have. Plain values on the stack: the call path allocates nothing.
struct LibValues {
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, incx = 0, incy = 0;
  char trans_a = '-', trans_b = '-', side = '-', uplo = '-', diag = '-';
};

/// An option letter as one of N T C L R U ('-' for anything else): Fortran callers may pass lower case.
char letter(char c)
{
  if (c >= 'a' && c <= 'z')
    c = static_cast<char>(c - 'a' + 'A');
  return c == 'N' || c == 'T' || c == 'C' || c == 'L' || c == 'R' || c == 'U' ? c : '-';
}
/// A Fortran CHARACTER argument's letter.
char letter(const char* c) { return c == nullptr ? '-' : letter(*c); }
/// A CBLAS enum's letter: CblasNoTrans/Trans/ConjTrans 111-113, Upper/Lower 121-122, NonUnit/Unit
/// 131-132, Left/Right 141-142 (the values every CBLAS defines).
char cblas_letter(int e)
{
  switch (e) {
    case 111: return 'N';
    case 112: return 'T';
    case 113: return 'C';
    case 121: return 'U';
    case 122: return 'L';
    case 131: return 'N';
    case 132: return 'U';
    case 141: return 'L';
    case 142: return 'R';
    default: return '-';
  }
}

void finish_library_call(Call& call, const LibValues& v)
{
  std::int64_t values[kLibArgValues] = {};
  values[kLibM] = v.m;
  values[kLibN] = v.n;
  values[kLibK] = v.k;
  values[kLibLdA] = v.lda;
  values[kLibLdB] = v.ldb;
  values[kLibLdC] = v.ldc;
  values[kLibIncX] = v.incx;
  values[kLibIncY] = v.incy;
  std::int64_t options = 0;
  int shift = 0;
  for (char c : {v.trans_a, v.trans_b, v.side, v.uplo, v.diag}) {
    options |= static_cast<std::int64_t>(static_cast<unsigned char>(c)) << shift;
    shift += 8;
  }
  values[kLibOptions] = options;
  call.finish(ExtraKind::LibArgs, values, kLibArgValues);
}

}  // namespace

// One library call is one compute record, once per nest (cblas_dgemm -> dgemm_ is one call): Call's
// depth guard does that. An unselected function is passed through without touching the depth, so that
// the selected functions it calls are still recorded. The record carries the arguments that set the
// call's cost (the trailing LibValues designators), read after the call: the routines do not change them.

#define GRIDCAST_WRAP_VOID(name, params, args, ...)                                         \
  extern "C" void name params                                                               \
  {                                                                                         \
    using F = void(*) params;                                                               \
    static F real = real_function<F>(#name);                                                \
    if (not selected(Fn::name))                                                             \
      return real args;                                                                     \
    Call gridcast_call_(Fn::name);                                                          \
    real args;                                                                              \
    if (gridcast_call_)                                                                     \
      finish_library_call(gridcast_call_, LibValues{__VA_ARGS__});                          \
  }
#define GRIDCAST_WRAP_RET(ret, name, params, args, ...)                                     \
  extern "C" ret name params                                                                \
  {                                                                                         \
    using F = ret(*) params;                                                                \
    static F real = real_function<F>(#name);                                                \
    if (not selected(Fn::name))                                                             \
      return real args;                                                                     \
    Call gridcast_call_(Fn::name);                                                          \
    ret gridcast_value_ = real args;                                                        \
    if (gridcast_call_)                                                                     \
      finish_library_call(gridcast_call_, LibValues{__VA_ARGS__});                          \
    return gridcast_value_;                                                                 \
  }

using Len = std::size_t;  // gfortran's hidden CHARACTER lengths, forwarded whatever the caller passed
using I = const int*;
using D = const double*;
using C = const char*;

// Fortran BLAS / LAPACK as HPL and LAMMPS call them: every argument by reference.
GRIDCAST_WRAP_VOID(dgemm_, (C ta, C tb, I m, I n, I k, D al, D a, I la, D b, I lb, D be, double* c, I lc, Len l1, Len l2),
                   (ta, tb, m, n, k, al, a, la, b, lb, be, c, lc, l1, l2),
                   .m = *m, .n = *n, .k = *k, .lda = *la, .ldb = *lb, .ldc = *lc, .trans_a = letter(ta),
                   .trans_b = letter(tb))
GRIDCAST_WRAP_VOID(dtrsm_, (C s, C u, C t, C d, I m, I n, D al, D a, I la, double* b, I lb, Len l1, Len l2, Len l3, Len l4),
                   (s, u, t, d, m, n, al, a, la, b, lb, l1, l2, l3, l4),
                   .m = *m, .n = *n, .lda = *la, .ldb = *lb, .trans_a = letter(t), .side = letter(s),
                   .uplo = letter(u), .diag = letter(d))
GRIDCAST_WRAP_VOID(dsyrk_, (C u, C t, I n, I k, D al, D a, I la, D be, double* c, I lc, Len l1, Len l2),
                   (u, t, n, k, al, a, la, be, c, lc, l1, l2),
                   .n = *n, .k = *k, .lda = *la, .ldc = *lc, .trans_a = letter(t), .uplo = letter(u))
GRIDCAST_WRAP_VOID(dgemv_, (C t, I m, I n, D al, D a, I la, D x, I ix, D be, double* y, I iy, Len l1),
                   (t, m, n, al, a, la, x, ix, be, y, iy, l1),
                   .m = *m, .n = *n, .lda = *la, .incx = *ix, .incy = *iy, .trans_a = letter(t))
GRIDCAST_WRAP_VOID(dger_, (I m, I n, D al, D x, I ix, D y, I iy, double* a, I la), (m, n, al, x, ix, y, iy, a, la),
                   .m = *m, .n = *n, .lda = *la, .incx = *ix, .incy = *iy)
GRIDCAST_WRAP_VOID(dtrsv_, (C u, C t, C d, I n, D a, I la, double* x, I ix, Len l1, Len l2, Len l3),
                   (u, t, d, n, a, la, x, ix, l1, l2, l3),
                   .n = *n, .lda = *la, .incx = *ix, .trans_a = letter(t), .uplo = letter(u), .diag = letter(d))
GRIDCAST_WRAP_VOID(dscal_, (I n, D al, double* x, I ix), (n, al, x, ix), .n = *n, .incx = *ix)
GRIDCAST_WRAP_VOID(daxpy_, (I n, D al, D x, I ix, double* y, I iy), (n, al, x, ix, y, iy), .n = *n, .incx = *ix,
                   .incy = *iy)
GRIDCAST_WRAP_VOID(dcopy_, (I n, D x, I ix, double* y, I iy), (n, x, ix, y, iy), .n = *n, .incx = *ix, .incy = *iy)
GRIDCAST_WRAP_RET(double, ddot_, (I n, D x, I ix, D y, I iy), (n, x, ix, y, iy), .n = *n, .incx = *ix, .incy = *iy)
GRIDCAST_WRAP_RET(int, idamax_, (I n, D x, I ix), (n, x, ix), .n = *n, .incx = *ix)
GRIDCAST_WRAP_VOID(dswap_, (I n, double* x, I ix, double* y, I iy), (n, x, ix, y, iy), .n = *n, .incx = *ix,
                   .incy = *iy)
GRIDCAST_WRAP_VOID(dgetrf_, (I m, I n, double* a, I la, int* ipiv, int* info), (m, n, a, la, ipiv, info),
                   .m = *m, .n = *n, .lda = *la)
GRIDCAST_WRAP_VOID(dgetrs_, (C t, I n, I nrhs, D a, I la, I ipiv, double* b, I lb, int* info, Len l1),
                   (t, n, nrhs, a, la, ipiv, b, lb, info, l1),
                   .n = *n, .k = *nrhs, .lda = *la, .ldb = *lb, .trans_a = letter(t))
GRIDCAST_WRAP_VOID(dpotrf_, (C u, I n, double* a, I la, int* info, Len l1), (u, n, a, la, info, l1), .n = *n,
                   .lda = *la, .uplo = letter(u))

// CBLAS: enums are ints, scalars by value. The order (row or column major) does not change the cost.
using E = int;
GRIDCAST_WRAP_VOID(cblas_dgemm, (E o, E ta, E tb, int m, int n, int k, double al, D a, int la, D b, int lb, double be,
                                 double* c, int lc),
                   (o, ta, tb, m, n, k, al, a, la, b, lb, be, c, lc),
                   .m = m, .n = n, .k = k, .lda = la, .ldb = lb, .ldc = lc, .trans_a = cblas_letter(ta),
                   .trans_b = cblas_letter(tb))
GRIDCAST_WRAP_VOID(cblas_dtrsm, (E o, E s, E u, E t, E d, int m, int n, double al, D a, int la, double* b, int lb),
                   (o, s, u, t, d, m, n, al, a, la, b, lb),
                   .m = m, .n = n, .lda = la, .ldb = lb, .trans_a = cblas_letter(t), .side = cblas_letter(s),
                   .uplo = cblas_letter(u), .diag = cblas_letter(d))
GRIDCAST_WRAP_VOID(cblas_dsyrk, (E o, E u, E t, int n, int k, double al, D a, int la, double be, double* c, int lc),
                   (o, u, t, n, k, al, a, la, be, c, lc),
                   .n = n, .k = k, .lda = la, .ldc = lc, .trans_a = cblas_letter(t), .uplo = cblas_letter(u))
GRIDCAST_WRAP_VOID(cblas_dgemv, (E o, E t, int m, int n, double al, D a, int la, D x, int ix, double be, double* y,
                                 int iy),
                   (o, t, m, n, al, a, la, x, ix, be, y, iy),
                   .m = m, .n = n, .lda = la, .incx = ix, .incy = iy, .trans_a = cblas_letter(t))
GRIDCAST_WRAP_VOID(cblas_dger, (E o, int m, int n, double al, D x, int ix, D y, int iy, double* a, int la),
                   (o, m, n, al, x, ix, y, iy, a, la), .m = m, .n = n, .lda = la, .incx = ix, .incy = iy)
GRIDCAST_WRAP_VOID(cblas_dtrsv, (E o, E u, E t, E d, int n, D a, int la, double* x, int ix), (o, u, t, d, n, a, la, x, ix),
                   .n = n, .lda = la, .incx = ix, .trans_a = cblas_letter(t), .uplo = cblas_letter(u),
                   .diag = cblas_letter(d))
GRIDCAST_WRAP_VOID(cblas_dscal, (int n, double al, double* x, int ix), (n, al, x, ix), .n = n, .incx = ix)
GRIDCAST_WRAP_VOID(cblas_daxpy, (int n, double al, D x, int ix, double* y, int iy), (n, al, x, ix, y, iy), .n = n,
                   .incx = ix, .incy = iy)
GRIDCAST_WRAP_VOID(cblas_dcopy, (int n, D x, int ix, double* y, int iy), (n, x, ix, y, iy), .n = n, .incx = ix,
                   .incy = iy)
GRIDCAST_WRAP_RET(double, cblas_ddot, (int n, D x, int ix, D y, int iy), (n, x, ix, y, iy), .n = n, .incx = ix,
                  .incy = iy)
GRIDCAST_WRAP_RET(std::size_t, cblas_idamax, (int n, D x, int ix), (n, x, ix), .n = n, .incx = ix)
GRIDCAST_WRAP_VOID(cblas_dswap, (int n, double* x, int ix, double* y, int iy), (n, x, ix, y, iy), .n = n, .incx = ix,
                   .incy = iy)

// ------------------------------------------------------------------ CUDA runtime and NCCL

namespace {

using cudaError_t = int;
using cudaStream_t = void*;
struct dim3 {
  unsigned x, y, z;
};
/// cudaPointerAttributes as of CUDA 10+: the memory type comes first. Newer runtimes may write more
/// fields than the four we read (a smaller struct here let cudaPointerGetAttributes overwrite the
/// caller's stack on a real CUDA 13 runtime), so the struct keeps generous room after them.
struct PointerAttributes {
  int type;  // 0 unregistered, 1 host, 2 device, 3 managed
  int device;
  void* device_pointer;
  void* host_pointer;
  unsigned char reserved[256];
};
enum : int { kMemcpyHostToHost = 0, kMemcpyHostToDevice = 1, kMemcpyDeviceToHost = 2, kMemcpyDeviceToDevice = 3 };

std::mutex g_gpu_mutex;
std::unordered_map<void*, std::int32_t> g_streams;        // cudaStream_t -> id (0 = default stream)
std::unordered_map<void*, std::int32_t> g_nccl_comms;     // ncclComm_t -> id

std::int32_t stream_id(cudaStream_t s)
{
  if (s == nullptr)
    return 0;
  std::lock_guard<std::mutex> lock(g_gpu_mutex);
  auto [it, added] = g_streams.try_emplace(s, static_cast<std::int32_t>(g_streams.size() + 1));
  return it->second;
}

/// cudaEvent_t -> id (0, 1, ...): the trace names an event by the order it was first seen, since the
/// runtime reuses handles and their values mean nothing in another run.
std::unordered_map<void*, std::int64_t> g_events;

std::int64_t event_id(void* event)
{
  std::lock_guard<std::mutex> lock(g_gpu_mutex);
  auto [it, added] = g_events.try_emplace(event, static_cast<std::int64_t>(g_events.size()));
  return it->second;
}

std::int32_t nccl_comm_id(void* comm)
{
  std::lock_guard<std::mutex> lock(g_gpu_mutex);
  auto [it, added] = g_nccl_comms.try_emplace(comm, kNcclCommBase + static_cast<std::int32_t>(g_nccl_comms.size()));
  return it->second;
}

int current_device()
{
  using F = cudaError_t (*)(int*);
  static F get = reinterpret_cast<F>(next_symbol("cudaGetDevice"));
  int d = -1;
  if (get != nullptr && get(&d) != 0)
    d = -1;
  return d;
}

std::uint64_t nccl_type_bytes(int type)
{
  // ncclInt8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64, Bfloat16
  static constexpr std::uint64_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return type >= 0 && type < 10 ? kSizes[type] : 0;
}

void gpu_fields(RawRecord& r, cudaStream_t stream)
{
  r.color = stream_id(stream);
  r.key = current_device();
}

}  // namespace

namespace gridcast::hook {
bool is_device_memory(const void* buffer)
{
  using F = cudaError_t (*)(PointerAttributes*, const void*);
  static std::atomic<int> state{0};  // 0 unresolved, 1 available, 2 absent
  static F get = nullptr;
  if (state.load(std::memory_order_acquire) == 0) {
    get = reinterpret_cast<F>(next_symbol("cudaPointerGetAttributes"));
    state.store(get != nullptr ? 1 : 2, std::memory_order_release);
  }
  if (state.load(std::memory_order_relaxed) != 1)
    return false;
  PointerAttributes a{};
  if (get(&a, buffer) != 0)
    return false;  // older runtimes fail on plain host memory
  return a.type == 2 || a.type == 3;
}
}  // namespace gridcast::hook

#define GRIDCAST_GPU_PROLOGUE(name, params)                                                 \
  using F = cudaError_t(*) params;                                                          \
  static F real = real_function<F>(#name);                                                  \
  Call c(Fn::name)

extern "C" {

cudaError_t cudaMalloc(void** ptr, std::size_t size)
{
  GRIDCAST_GPU_PROLOGUE(cudaMalloc, (void**, std::size_t));
  cudaError_t rc = real(ptr, size);
  if (c) {
    c.r.bytes = size;
    c.r.flags |= kFlagDeviceMemory;
    gpu_fields(c.r, nullptr);
    c.finish();
  }
  return rc;
}

cudaError_t cudaFree(void* ptr)
{
  GRIDCAST_GPU_PROLOGUE(cudaFree, (void*));
  cudaError_t rc = real(ptr);
  if (c) {
    c.r.flags |= kFlagDeviceMemory;
    gpu_fields(c.r, nullptr);
    c.finish();
  }
  return rc;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t count, int kind)
{
  GRIDCAST_GPU_PROLOGUE(cudaMemcpy, (void*, const void*, std::size_t, int));
  cudaError_t rc = real(dst, src, count, kind);
  if (c) {
    c.r.bytes = count;
    c.r.peer = kind;
    if (kind == kMemcpyHostToDevice || kind == kMemcpyDeviceToDevice || (kind > 3 && is_device_memory(dst)))
      c.r.flags |= kFlagDeviceMemory;  // where the destination lives
    gpu_fields(c.r, nullptr);
    c.finish();
  }
  return rc;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t count, int kind, cudaStream_t stream)
{
  GRIDCAST_GPU_PROLOGUE(cudaMemcpyAsync, (void*, const void*, std::size_t, int, cudaStream_t));
  cudaError_t rc = real(dst, src, count, kind, stream);
  if (c) {
    c.r.bytes = count;
    c.r.peer = kind;
    if (kind == kMemcpyHostToDevice || kind == kMemcpyDeviceToDevice || (kind > 3 && is_device_memory(dst)))
      c.r.flags |= kFlagDeviceMemory;
    gpu_fields(c.r, stream);
    c.finish();
  }
  return rc;
}

}  // extern "C"

namespace {
using LaunchFn = cudaError_t (*)(const void*, dim3, dim3, void**, std::size_t, cudaStream_t);

/// Both launch entry points record the same gpu_kernel: threads launched (a size the GPU model can scale
/// with), dynamic shared memory, stream and device.
cudaError_t record_launch(LaunchFn real, const void* kernel, dim3 grid, dim3 block, void** args,
                          std::size_t shared_bytes, cudaStream_t stream)
{
  Call c(Fn::cudaLaunchKernel);
  cudaError_t rc = real(kernel, grid, block, args, shared_bytes, stream);
  if (c) {
    c.r.bytes = std::uint64_t{grid.x} * grid.y * grid.z * block.x * block.y * block.z;
    c.r.recv_bytes = shared_bytes;
    c.r.tag = kernel_function_id(kernel);  // the kernel's name: the profile's function of this launch
    gpu_fields(c.r, stream);
    c.finish();
  }
  return rc;
}
}  // namespace

extern "C" {

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
                             cudaStream_t stream)
{
  static LaunchFn real = real_function<LaunchFn>("cudaLaunchKernel");
  return record_launch(real, func, grid, block, args, shared_bytes, stream);
}

/// nvcc 12.8+ and 13 compile `kernel<<<grid, block, shared, stream>>>` to an inline helper that calls
/// this entry point with the kernel's handle; the runtime then jumps to cudaLaunchKernel inside the
/// library, where no interposer sees it. Recorded as cudaLaunchKernel (a nested call is counted once).
cudaError_t __cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
                               cudaStream_t stream)
{
  static LaunchFn real = real_function<LaunchFn>("__cudaLaunchKernel");
  return record_launch(real, kernel, grid, block, args, shared_bytes, stream);
}

cudaError_t cudaDeviceSynchronize(void)
{
  GRIDCAST_GPU_PROLOGUE(cudaDeviceSynchronize, ());
  cudaError_t rc = real();
  if (c) {
    c.r.color = -1;  // every stream
    c.r.key = current_device();
    c.finish();
  }
  return rc;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  GRIDCAST_GPU_PROLOGUE(cudaStreamSynchronize, (cudaStream_t));
  cudaError_t rc = real(stream);
  if (c) {
    gpu_fields(c.r, stream);
    c.finish();
  }
  return rc;
}

// Events order work between streams and the host. Each is a gpu_sync record whose `request` is the
// event's id; `color` the stream that records it or waits for it (docs/reference/traces.md, GPU records).
cudaError_t cudaEventRecord(void* event, cudaStream_t stream)
{
  GRIDCAST_GPU_PROLOGUE(cudaEventRecord, (void*, cudaStream_t));
  cudaError_t rc = real(event, stream);
  if (c) {
    c.r.request = event_id(event);
    gpu_fields(c.r, stream);
    c.finish();
  }
  return rc;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, void* event, unsigned flags)
{
  GRIDCAST_GPU_PROLOGUE(cudaStreamWaitEvent, (cudaStream_t, void*, unsigned));
  cudaError_t rc = real(stream, event, flags);
  if (c) {
    c.r.request = event_id(event);
    gpu_fields(c.r, stream);
    c.finish();
  }
  return rc;
}

cudaError_t cudaEventSynchronize(void* event)
{
  GRIDCAST_GPU_PROLOGUE(cudaEventSynchronize, (void*));
  cudaError_t rc = real(event);
  if (c) {
    c.r.request = event_id(event);
    c.r.color = -1;  // the host waits, no stream does
    c.r.key = current_device();
    c.finish();
  }
  return rc;
}

cudaError_t cudaSetDevice(int device)
{
  GRIDCAST_GPU_PROLOGUE(cudaSetDevice, (int));
  cudaError_t rc = real(device);
  if (c) {
    c.r.color = -1;  // no stream
    c.r.key = device;
    c.finish();
  }
  return rc;
}

// NCCL: ncclResult_t, ncclDataType_t and ncclRedOp_t are ints, ncclComm_t a pointer.
using ncclResult_t = int;
using ncclComm_t = void*;
struct ncclUniqueId {
  char internal[128];
};

#define GRIDCAST_NCCL_PROLOGUE(name, params)                                                \
  using F = ncclResult_t(*) params;                                                         \
  static F real = real_function<F>(#name);                                                  \
  Call c(Fn::name)

static void nccl_fields(RawRecord& r, const void* buf, std::size_t count, int type, ncclComm_t comm,
                        cudaStream_t stream)
{
  r.bytes = count * nccl_type_bytes(type);
  r.comm = nccl_comm_id(comm);
  gpu_fields(r, stream);
  r.flags |= kFlagDeviceMemory;
  (void)buf;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, int type, int op, ncclComm_t comm,
                           cudaStream_t stream)
{
  GRIDCAST_NCCL_PROLOGUE(ncclAllReduce, (const void*, void*, std::size_t, int, int, ncclComm_t, cudaStream_t));
  ncclResult_t rc = real(send, recv, count, type, op, comm, stream);
  if (c) {
    nccl_fields(c.r, send, count, type, comm, stream);
    c.finish();
  }
  return rc;
}

ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, int type, int root, ncclComm_t comm,
                           cudaStream_t stream)
{
  GRIDCAST_NCCL_PROLOGUE(ncclBroadcast, (const void*, void*, std::size_t, int, int, ncclComm_t, cudaStream_t));
  ncclResult_t rc = real(send, recv, count, type, root, comm, stream);
  if (c) {
    nccl_fields(c.r, send, count, type, comm, stream);
    c.r.root = root;
    c.finish();
  }
  return rc;
}

ncclResult_t ncclReduce(const void* send, void* recv, std::size_t count, int type, int op, int root, ncclComm_t comm,
                        cudaStream_t stream)
{
  GRIDCAST_NCCL_PROLOGUE(ncclReduce, (const void*, void*, std::size_t, int, int, int, ncclComm_t, cudaStream_t));
  ncclResult_t rc = real(send, recv, count, type, op, root, comm, stream);
  if (c) {
    nccl_fields(c.r, send, count, type, comm, stream);
    c.r.root = root;
    c.finish();
  }
  return rc;
}

ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t count, int type, ncclComm_t comm,
                           cudaStream_t stream)
{
  GRIDCAST_NCCL_PROLOGUE(ncclAllGather, (const void*, void*, std::size_t, int, ncclComm_t, cudaStream_t));
  ncclResult_t rc = real(send, recv, count, type, comm, stream);
  if (c) {
    nccl_fields(c.r, send, count, type, comm, stream);
    c.r.recv_bytes = c.r.bytes;
    c.finish();
  }
  return rc;
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, std::size_t count, int type, int op, ncclComm_t comm,
                               cudaStream_t stream)
{
  GRIDCAST_NCCL_PROLOGUE(ncclReduceScatter, (const void*, void*, std::size_t, int, int, ncclComm_t, cudaStream_t));
  ncclResult_t rc = real(send, recv, count, type, op, comm, stream);
  if (c) {
    nccl_fields(c.r, send, count, type, comm, stream);
    c.r.recv_bytes = c.r.bytes;  // per rank; the converter spreads it over the communicator
    c.finish();
  }
  return rc;
}

ncclResult_t ncclSend(const void* buf, std::size_t count, int type, int peer, ncclComm_t comm, cudaStream_t stream)
{
  GRIDCAST_NCCL_PROLOGUE(ncclSend, (const void*, std::size_t, int, int, ncclComm_t, cudaStream_t));
  ncclResult_t rc = real(buf, count, type, peer, comm, stream);
  if (c) {
    nccl_fields(c.r, buf, count, type, comm, stream);
    c.r.peer = peer;  // rank in the NCCL communicator
    c.finish();
  }
  return rc;
}

ncclResult_t ncclRecv(void* buf, std::size_t count, int type, int peer, ncclComm_t comm, cudaStream_t stream)
{
  GRIDCAST_NCCL_PROLOGUE(ncclRecv, (void*, std::size_t, int, int, ncclComm_t, cudaStream_t));
  ncclResult_t rc = real(buf, count, type, peer, comm, stream);
  if (c) {
    nccl_fields(c.r, buf, count, type, comm, stream);
    c.r.peer = peer;
    c.finish();
  }
  return rc;
}

}  // extern "C"

namespace {

/// ncclGroupStart and ncclGroupEnd: a record on no stream, on the current device.
template <typename Call>
ncclResult_t nccl_group_mark(Call& c, ncclResult_t rc)
{
  if (c) {
    c.r.color = -1;  // no stream
    c.r.key   = current_device();
    c.finish();
  }
  return rc;
}

}  // namespace

extern "C" {

ncclResult_t ncclGroupStart(void)
{
  GRIDCAST_NCCL_PROLOGUE(ncclGroupStart, ());
  return nccl_group_mark(c, real());
}

ncclResult_t ncclGroupEnd(void)
{
  GRIDCAST_NCCL_PROLOGUE(ncclGroupEnd, ());
  return nccl_group_mark(c, real());
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank)
{
  GRIDCAST_NCCL_PROLOGUE(ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int));
  ncclResult_t rc = real(comm, nranks, id, rank);
  if (c) {
    c.r.new_comm = nccl_comm_id(*comm);
    c.r.root = rank;            // this rank in the new communicator
    c.r.bytes = static_cast<std::uint64_t>(nranks);
    c.r.key = current_device();
    c.finish();
  }
  return rc;
}

}  // extern "C"
