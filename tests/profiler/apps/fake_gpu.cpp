// A test double of the CUDA runtime and NCCL: the symbols libgridcast-hook.so wraps, with the real
// signatures (declared here as the hook declares them, without CUDA headers) and trivial behaviour.
// "Device" memory is host memory remembered in a set, so cudaPointerGetAttributes can tell it apart.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace {
std::mutex g_mutex;
std::set<const void*> g_device;
int g_current = 0;
struct dim3 {
  unsigned x, y, z;
};
/// CUDA 13's cudaPointerAttributes is 88 bytes (four fields, then reserved space); the runtime writes
/// all of it, so a caller that declares fewer bytes gets its stack overwritten. The double does the same.
struct PointerAttributes {
  int type;
  int device;
  void* device_pointer;
  void* host_pointer;
  long reserved[8];
};
static_assert(sizeof(PointerAttributes) == 88);
}  // namespace

extern "C" {
int cudaMalloc(void** p, std::size_t n)
{
  *p = std::malloc(n == 0 ? 1 : n);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_device.insert(*p);
  return 0;
}
int cudaFree(void* p)
{
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_device.erase(p);
  }
  std::free(p);
  return 0;
}
int cudaMemcpy(void* dst, const void* src, std::size_t n, int)
{
  std::memcpy(dst, src, n);
  return 0;
}
int cudaMemcpyAsync(void* dst, const void* src, std::size_t n, int, void*)
{
  std::memcpy(dst, src, n);
  return 0;
}
int cudaLaunchKernel(const void*, dim3, dim3, void**, std::size_t, void*) { return 0; }
/// CUDA 12.3+: the kernel's name from its handle. The double knows a name only when the test gives one
/// (GRIDCAST_FAKE_KERNEL_NAME); otherwise it fails as the runtime does for a handle it does not know
/// (cudaErrorInvalidDeviceFunction), and the hook falls back to the host stub's symbol.
int cudaFuncGetName(const char** name, const void*)
{
  const char* given = std::getenv("GRIDCAST_FAKE_KERNEL_NAME");
  if (given == nullptr)
    return 98;
  *name = given;
  return 0;
}
/// What nvcc 12.8+/13 host stubs call for `kernel<<<...>>>` (through an inline __cudaLaunchKernel_helper):
/// the kernel handle from __cudaGetKernel, then the same arguments; the real runtime forwards it to
/// cudaLaunchKernel inside the library.
int __cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args, std::size_t shared, void* stream)
{
  return cudaLaunchKernel(kernel, grid, block, args, shared, stream);
}
int cudaDeviceSynchronize(void) { return 0; }
int cudaEventRecord(void*, void*) { return 0; }
int cudaStreamWaitEvent(void*, void*, unsigned) { return 0; }
int cudaEventSynchronize(void*) { return 0; }
int cudaStreamSynchronize(void*) { return 0; }
int cudaSetDevice(int d)
{
  g_current = d;
  return 0;
}
int cudaGetDevice(int* d)
{
  *d = g_current;
  return 0;
}
int cudaPointerGetAttributes(PointerAttributes* a, const void* p)
{
  std::lock_guard<std::mutex> lock(g_mutex);
  std::memset(a, 0, sizeof *a);
  a->type = g_device.count(p) > 0 ? 2 : 0;
  a->device = g_current;
  return 0;
}

struct ncclUniqueId {
  char internal[128];
};
int ncclCommInitRank(void** comm, int, ncclUniqueId, int rank)
{
  *comm = reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x1000 + rank));
  return 0;
}
int ncclAllReduce(const void* s, void* r, std::size_t n, int, int, void*, void*)
{
  if (s != r)
    std::memmove(r, s, n);  // fine for the test's float counts: not a real reduction
  return 0;
}
int ncclBroadcast(const void*, void*, std::size_t, int, int, void*, void*) { return 0; }
int ncclReduce(const void*, void*, std::size_t, int, int, int, void*, void*) { return 0; }
int ncclAllGather(const void*, void*, std::size_t, int, void*, void*) { return 0; }
int ncclReduceScatter(const void*, void*, std::size_t, int, int, void*, void*) { return 0; }
int ncclSend(const void*, std::size_t, int, int, void*, void*) { return 0; }
int ncclRecv(void*, std::size_t, int, int, void*, void*) { return 0; }
int ncclGroupStart(void) { return 0; }
int ncclGroupEnd(void) { return 0; }
}
