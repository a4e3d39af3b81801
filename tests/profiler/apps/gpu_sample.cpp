// An MPI + "CUDA" + "NCCL" program for the profiler tests, linked to the test double fake_gpu.cpp.
// The declarations are the program's own, as an application built against the real headers would call.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" {
struct dim3 {
  unsigned x, y, z;
};
struct ncclUniqueId {
  char internal[128];
};
int cudaSetDevice(int);
int cudaMalloc(void**, std::size_t);
int cudaFree(void*);
int cudaMemcpy(void*, const void*, std::size_t, int);
int cudaMemcpyAsync(void*, const void*, std::size_t, int, void*);
int cudaLaunchKernel(const void*, dim3, dim3, void**, std::size_t, void*);
int __cudaLaunchKernel(const void*, dim3, dim3, void**, std::size_t, void*);
int cudaDeviceSynchronize(void);
int cudaEventRecord(void*, void*);
int cudaStreamWaitEvent(void*, void*, unsigned);
int cudaEventSynchronize(void*);
int cudaStreamSynchronize(void*);
int ncclCommInitRank(void**, int, ncclUniqueId, int);
int ncclAllReduce(const void*, void*, std::size_t, int, int, void*, void*);
int ncclSend(const void*, std::size_t, int, int, void*, void*);
int ncclRecv(void*, std::size_t, int, int, void*, void*);
int ncclGroupStart(void);
int ncclGroupEnd(void);
}

static void kernel_stub() {}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  cudaSetDevice(rank);
  void* d = nullptr;
  cudaMalloc(&d, 4096);
  std::vector<char> h(4096, 1);
  cudaMemcpy(d, h.data(), 4096, 1);  // host to device
  void* stream = reinterpret_cast<void*>(0x5);
  dim3 grid{8, 2, 1}, block{128, 1, 1};
  cudaLaunchKernel(reinterpret_cast<const void*>(&kernel_stub), grid, block, nullptr, 256, stream);
  // The launch path of nvcc 12.8+/13 stubs: one record, although the runtime forwards to cudaLaunchKernel.
  dim3 grid2{4, 1, 1};
  __cudaLaunchKernel(reinterpret_cast<const void*>(&kernel_stub), grid2, block, nullptr, 0, stream);
  cudaStreamSynchronize(stream);
  // An MPI message from "device" memory (CUDA-aware MPI), 1024 bytes
  int peer = (rank + 1) % size, from = (rank + size - 1) % size;
  std::vector<char> in(1024);
  MPI_Sendrecv(d, 1024, MPI_BYTE, peer, 1, in.data(), 1024, MPI_BYTE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  void* comm = nullptr;
  ncclCommInitRank(&comm, size, id, rank);
  ncclAllReduce(d, d, 256, 7 /* ncclFloat32 */, 0, comm, stream);
  ncclGroupStart();
  ncclSend(d, 100, 8 /* ncclFloat64 */, peer, comm, stream);
  ncclRecv(d, 100, 8, from, comm, stream);
  ncclGroupEnd();
  cudaMemcpyAsync(h.data(), d, 2048, 2, stream);  // device to host
  // Events: recorded on `stream`, waited for by another stream, then by the host.
  void* event = reinterpret_cast<void*>(0x77);
  void* other = reinterpret_cast<void*>(0x9);
  cudaEventRecord(event, stream);
  cudaStreamWaitEvent(other, event, 0);
  cudaEventSynchronize(event);
  cudaDeviceSynchronize();
  cudaFree(d);
  MPI_Finalize();
  return 0;
}
