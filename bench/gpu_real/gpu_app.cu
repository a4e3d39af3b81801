// A small MPI + CUDA application with the shapes the GPU emulation must get right, used to check
// gridcast's GPU path against a real GPU (bench/gpu_real/README.md): each rank owns a slab of a 2-D
// grid on its GPU, and every iteration runs a compute-bound kernel, copies its two halo rows to the
// host, exchanges them with its neighbours over MPI, copies them back, and every 10 iterations reduces
// a residual. A pinned bulk copy that overlaps a kernel on a second stream covers copy/kernel overlap.
// Built with `nvcc -cudart shared` so that the profiler's hook sees the CUDA runtime calls.
#include <mpi.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

// Relaxation step with a fixed amount of arithmetic per point (`work` FMAs), so the kernel's duration
// is set by the command line rather than by memory traffic alone.
__global__ void relax(const float* in, float* out, int nx, int ny, int work) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y + 1;
  if (i <= 0 || i >= nx - 1 || j >= ny - 1) return;
  float v = 0.25f * (in[(j - 1) * nx + i] + in[(j + 1) * nx + i] + in[j * nx + i - 1] + in[j * nx + i + 1]);
  float a = v;
  for (int k = 0; k < work; ++k) a = fmaf(a, 0.999f, 0.001f);
  out[j * nx + i] = 0.5f * (v + a);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const double t_start = MPI_Wtime();  // what a replay covers: from the end of MPI_Init to MPI_Finalize
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int nx = argc > 1 ? std::atoi(argv[1]) : 4096;        // points per row
  const int ny = argc > 2 ? std::atoi(argv[2]) : 1024;        // rows per rank (plus two halo rows)
  const int iters = argc > 3 ? std::atoi(argv[3]) : 100;
  const int work = argc > 4 ? std::atoi(argv[4]) : 200;       // FMAs per point per iteration
  const size_t bulk_bytes = size_t(argc > 5 ? std::atoi(argv[5]) : 256) << 20;  // pinned bulk copy, MiB
  int ndev = 0;
  CHECK(cudaGetDeviceCount(&ndev));
  CHECK(cudaSetDevice(rank % ndev));

  const size_t grid_bytes = size_t(nx) * (ny + 2) * sizeof(float);
  const size_t row_bytes = size_t(nx) * sizeof(float);
  std::vector<float> host(size_t(nx) * (ny + 2), 1.0f);
  float *d_a = nullptr, *d_b = nullptr, *d_bulk = nullptr, *h_bulk = nullptr, *h_halo = nullptr;
  CHECK(cudaMalloc(&d_a, grid_bytes));
  CHECK(cudaMalloc(&d_b, grid_bytes));
  CHECK(cudaMalloc(&d_bulk, bulk_bytes));
  CHECK(cudaMallocHost(&h_bulk, bulk_bytes));
  CHECK(cudaMallocHost(&h_halo, 4 * row_bytes));
  cudaStream_t compute, copy;
  CHECK(cudaStreamCreate(&compute));
  CHECK(cudaStreamCreate(&copy));

  // Pageable upload of the initial grid (synchronous).
  CHECK(cudaMemcpy(d_a, host.data(), grid_bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, d_a, grid_bytes, cudaMemcpyDeviceToDevice));

  const int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  const int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  const dim3 block(256), blocks((nx + 255) / 256, ny);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int it = 0; it < iters; ++it) {
    if (it == iters / 2)  // a bulk pinned copy on its own stream, overlapping the kernels
      CHECK(cudaMemcpyAsync(d_bulk, h_bulk, bulk_bytes, cudaMemcpyHostToDevice, copy));
    relax<<<blocks, block, 0, compute>>>(d_a, d_b, nx, ny + 2, work);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_halo, d_b + nx, row_bytes, cudaMemcpyDeviceToHost, compute));
    CHECK(cudaMemcpyAsync(h_halo + nx, d_b + size_t(ny) * nx, row_bytes, cudaMemcpyDeviceToHost, compute));
    CHECK(cudaStreamSynchronize(compute));
    MPI_Sendrecv(h_halo, nx, MPI_FLOAT, up, 0, h_halo + 2 * nx, nx, MPI_FLOAT, down, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(h_halo + nx, nx, MPI_FLOAT, down, 1, h_halo + 3 * nx, nx, MPI_FLOAT, up, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK(cudaMemcpyAsync(d_b, h_halo + 3 * nx, row_bytes, cudaMemcpyHostToDevice, compute));
    CHECK(cudaMemcpyAsync(d_b + size_t(ny + 1) * nx, h_halo + 2 * nx, row_bytes, cudaMemcpyHostToDevice, compute));
    if (it % 10 == 9) {
      float local = 0, global = 0;
      CHECK(cudaMemcpy(&local, d_b + nx + 1, sizeof(float), cudaMemcpyDeviceToHost));
      MPI_Allreduce(&local, &global, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    float* t = d_a; d_a = d_b; d_b = t;
  }
  CHECK(cudaDeviceSynchronize());
  const double t1 = MPI_Wtime();
  CHECK(cudaMemcpy(host.data(), d_a, grid_bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_bulk));
  CHECK(cudaFreeHost(h_bulk));
  CHECK(cudaFreeHost(h_halo));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("loop_s %.6f run_s %.6f ranks %d nx %d ny %d iters %d work %d\n", t1 - t0, MPI_Wtime() - t_start,
                size, nx, ny, iters, work);
  MPI_Finalize();
  return 0;
}
