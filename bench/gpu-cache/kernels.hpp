// The kernel bodies of the GPU memory-system suite, each written once. A body is a function template
// over an accessor A that performs every global-memory access of the kernel:
//   acc.load(site, ptr) -> value,  acc.store(site, ptr, value),  acc.atomic_add(site, ptr, value),
//   acc.sync() (the CTA barrier).
// `site` is a small constant naming the static access site (the load/store instruction in the code).
// The same body is
//   (a) the real CUDA kernel (suite.cu, a plain accessor: *ptr, __syncthreads()),
//   (b) the instrumented CUDA kernel (suite.cu: the access folded into a per-thread hash, then *ptr),
//   (c) the CPU address generator (suite.hpp: the accessor records or folds the access on the host).
// On the host a CTA's threads run one after the other to completion and sync() does nothing. That is
// exact for addresses because no address here depends on shared-memory data (the shared arrays only
// carry values), and the only kernel whose addresses depend on global data (bfs) reads data that no
// thread of the same launch writes: the host reads the same data from its own copy.
// No early return in a body with a barrier: every thread reaches every sync().
#pragma once

#include <cstdint>

#if !defined(__CUDACC__)
#ifndef __host__
#define __host__
#endif
#ifndef __device__
#define __device__
#endif
#endif

#define GCB_HD __host__ __device__

// nvcc: the bodies are __host__ __device__ templates, instantiated with host-only accessors by host code
// only; this keeps nvcc from warning about the host calls in those instantiations.
#if defined(__NVCC__)
#define GCB_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define GCB_EXEC_CHECK_DISABLE
#endif

namespace gcbench {

/// One launch kind (a __global__ function of suite.cu). A suite kernel (a "case") has one or two.
enum Op : int {
  OpGemm, Op2mm1, Op2mm2, OpAtax1, OpAtax2, OpBicg1, OpBicg2, OpGesummv, OpMvt1, OpMvt2, OpSyrk,
  OpConv2d, OpJacobi2d, OpReduce, OpTranspose, OpBfs, OpCount
};

/// The launch's arguments: the case's buffer base addresses (in the case's buffer order) and sizes.
struct LaunchArgs {
  std::uint64_t base[6];
  std::int64_t ni, nj, nk, nl;
  std::int32_t level;  ///< bfs: the frontier's level
  float alpha, beta;
};

/// The CUDA built-ins a body uses, as plain numbers so the host can give them.
struct ThreadIdx {
  unsigned bx, by, tx, ty, bdx, bdy, gdx, gdy;
};

constexpr int kGemmTile = 16;
constexpr int kReduceBlock = 256;
constexpr int kReducePerThread = 4;

/// Floats of static shared memory a launch kind's CTA uses (0: none).
GCB_HD constexpr int shared_floats(int op) {
  return op == OpGemm ? 2 * kGemmTile * kGemmTile : op == OpReduce ? kReduceBlock : 0;
}

/// The access kinds, numbered as gridcast::gpu_cache::AccessKind numbers them.
constexpr unsigned kKindLoad = 0, kKindStore = 1, kKindAtomic = 4;

/// The per-thread check hash: every access (kind, bytes, address) folded in program order.
constexpr std::uint64_t kHashSeed = 0x243f6a8885a308d3ULL;
GCB_HD inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
GCB_HD inline std::uint64_t fold_access(std::uint64_t hash, unsigned kind, unsigned bytes, std::uint64_t address) {
  return mix64(hash ^ mix64(address ^ (std::uint64_t(kind) << 56) ^ (std::uint64_t(bytes) << 48)));
}

template <class T>
GCB_HD inline T* ptr(std::uint64_t base) {
  return reinterpret_cast<T*>(base);
}

// ---------------------------------------------------------------------------------------------
// The bodies. Buffer order is the case's (suite.hpp: make_case); i/j are rows/columns, row-major.

/// C = alpha*A*B + beta*C, N x N, 16x16 tiles through shared memory (N a multiple of 16).
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void gemm_body(const LaunchArgs& a, const ThreadIdx& t, A& acc, float* shared) {
  const float* Am = ptr<const float>(a.base[0]);
  const float* Bm = ptr<const float>(a.base[1]);
  float* Cm = ptr<float>(a.base[2]);
  const std::int64_t n = a.ni;
  float* sA = shared;
  float* sB = shared + kGemmTile * kGemmTile;
  const std::int64_t row = std::int64_t(t.by) * kGemmTile + t.ty;
  const std::int64_t col = std::int64_t(t.bx) * kGemmTile + t.tx;
  float sum = 0;
  for (std::int64_t k0 = 0; k0 < n; k0 += kGemmTile) {
    sA[t.ty * kGemmTile + t.tx] = acc.load(0, &Am[row * n + k0 + t.tx]);
    sB[t.ty * kGemmTile + t.tx] = acc.load(1, &Bm[(k0 + t.ty) * n + col]);
    acc.sync();
    for (int k = 0; k < kGemmTile; ++k) sum += sA[t.ty * kGemmTile + k] * sB[k * kGemmTile + t.tx];
    acc.sync();
  }
  const float c = acc.load(2, &Cm[row * n + col]);
  acc.store(3, &Cm[row * n + col], a.alpha * sum + a.beta * c);
}

/// The thread's global x and y (the column and the row of 2D kernels).
GCB_HD inline std::int64_t global_x(const ThreadIdx& t) { return std::int64_t(t.bx) * t.bdx + t.tx; }
GCB_HD inline std::int64_t global_y(const ThreadIdx& t) { return std::int64_t(t.by) * t.bdy + t.ty; }

/// out = alpha * X*Y (+ beta*out when Accumulate), PolyBench's untiled product: thread (column j = x,
/// row i = y); X is rows x inner, Y inner x cols. A warp reads one X element (broadcast) and a row of Y.
GCB_EXEC_CHECK_DISABLE
template <bool Accumulate, class A>
GCB_HD void matmul(const ThreadIdx& t, A& acc, const float* X, const float* Y, float* out, std::int64_t rows,
                   std::int64_t cols, std::int64_t inner, float alpha, float beta) {
  const std::int64_t j = global_x(t), i = global_y(t);
  if (i >= rows || j >= cols) return;
  const float old = Accumulate ? acc.load(0, &out[i * cols + j]) : 0.0f;
  float sum = 0;
  for (std::int64_t k = 0; k < inner; ++k) sum += acc.load(1, &X[i * inner + k]) * acc.load(2, &Y[k * cols + j]);
  acc.store(3, &out[i * cols + j], alpha * sum + beta * old);
}

/// y[o] = M v (+ y[o] when Accumulate), one thread per output o; M is rows x cols. ByRows: o is a row
/// of M, each lane walks its own row (uncoalesced, the PolyBench row kernels); else o is a column and
/// the lanes of a warp read side by side (coalesced).
GCB_EXEC_CHECK_DISABLE
template <bool ByRows, bool Accumulate, class A>
GCB_HD void matvec(const ThreadIdx& t, A& acc, const float* M, std::int64_t rows, std::int64_t cols, const float* v,
                   float* y) {
  const std::int64_t o = global_x(t);
  if (o >= (ByRows ? rows : cols)) return;
  float sum = Accumulate ? acc.load(0, &y[o]) : 0.0f;
  for (std::int64_t k = 0; k < (ByRows ? cols : rows); ++k)
    sum += acc.load(1, &M[ByRows ? o * cols + k : k * cols + o]) * acc.load(2, &v[k]);
  acc.store(3, &y[o], sum);
}

/// 2mm (buffers A ni x nk, B nk x nj, C nj x nl, D ni x nl, tmp ni x nj): tmp = alpha*A*B, then
/// D = tmp*C + beta*D.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void mm2_first_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matmul<false>(t, acc, ptr<const float>(a.base[0]), ptr<const float>(a.base[1]), ptr<float>(a.base[4]), a.ni, a.nj,
                a.nk, a.alpha, 0.0f);
}
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void mm2_second_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matmul<true>(t, acc, ptr<const float>(a.base[4]), ptr<const float>(a.base[2]), ptr<float>(a.base[3]), a.ni, a.nl,
               a.nj, 1.0f, a.beta);
}

/// atax (buffers A ni x nj, x, y, tmp): tmp = A*x by rows, then y = A^T*tmp by columns.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void atax_first_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matvec<true, false>(t, acc, ptr<const float>(a.base[0]), a.ni, a.nj, ptr<const float>(a.base[1]), ptr<float>(a.base[3]));
}
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void atax_second_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matvec<false, false>(t, acc, ptr<const float>(a.base[0]), a.ni, a.nj, ptr<const float>(a.base[3]), ptr<float>(a.base[2]));
}

/// bicg (buffers A ni x nj, r, s, p, q): s = A^T*r by columns, then q = A*p by rows.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void bicg_first_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matvec<false, false>(t, acc, ptr<const float>(a.base[0]), a.ni, a.nj, ptr<const float>(a.base[1]), ptr<float>(a.base[2]));
}
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void bicg_second_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matvec<true, false>(t, acc, ptr<const float>(a.base[0]), a.ni, a.nj, ptr<const float>(a.base[3]), ptr<float>(a.base[4]));
}

/// gesummv: tmp = A*x, y = alpha*A*x + beta*B*x, one thread per row (A, B n x n; buffers A, B, x, y, tmp).
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void gesummv_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  const float* Am = ptr<const float>(a.base[0]);
  const float* Bm = ptr<const float>(a.base[1]);
  const float* x = ptr<const float>(a.base[2]);
  float* y = ptr<float>(a.base[3]);
  float* tmp = ptr<float>(a.base[4]);
  const std::int64_t i = global_x(t);
  if (i >= a.ni) return;
  float sa = 0, sb = 0;
  for (std::int64_t j = 0; j < a.ni; ++j) {
    const float xj = acc.load(0, &x[j]);
    sa += acc.load(1, &Am[i * a.ni + j]) * xj;
    sb += acc.load(2, &Bm[i * a.ni + j]) * xj;
  }
  acc.store(3, &tmp[i], sa);
  acc.store(4, &y[i], a.alpha * sa + a.beta * sb);
}

/// mvt (buffers A n x n, x1, x2, y1, y2): x1 += A*y1 by rows, then x2 += A^T*y2 by columns.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void mvt_first_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matvec<true, true>(t, acc, ptr<const float>(a.base[0]), a.ni, a.ni, ptr<const float>(a.base[3]), ptr<float>(a.base[1]));
}
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void mvt_second_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  matvec<false, true>(t, acc, ptr<const float>(a.base[0]), a.ni, a.ni, ptr<const float>(a.base[4]), ptr<float>(a.base[2]));
}

/// syrk: C = alpha*A*A^T + beta*C (A ni x nk, C ni x ni; buffers A, C); thread (j = x, i = y).
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void syrk_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  const float* Am = ptr<const float>(a.base[0]);
  float* Cm = ptr<float>(a.base[1]);
  const std::int64_t j = global_x(t), i = global_y(t);
  if (i >= a.ni || j >= a.ni) return;
  const float c = acc.load(0, &Cm[i * a.ni + j]);
  float sum = 0;
  for (std::int64_t k = 0; k < a.nk; ++k) sum += acc.load(1, &Am[i * a.nk + k]) * acc.load(2, &Am[j * a.nk + k]);
  acc.store(3, &Cm[i * a.ni + j], a.alpha * sum + a.beta * c);
}

/// conv2d: PolyBench's 3x3 convolution of A into B (ni x nj; buffers A, B), interior points only.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void conv2d_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  const float* Am = ptr<const float>(a.base[0]);
  float* Bm = ptr<float>(a.base[1]);
  const std::int64_t j = global_x(t), i = global_y(t);
  if (i < 1 || i >= a.ni - 1 || j < 1 || j >= a.nj - 1) return;
  const std::int64_t n = a.nj;
  const float v = 0.2f * acc.load(0, &Am[(i - 1) * n + (j - 1)]) + 0.5f * acc.load(1, &Am[(i - 1) * n + j]) +
                  -0.8f * acc.load(2, &Am[(i - 1) * n + (j + 1)]) + -0.3f * acc.load(3, &Am[i * n + (j - 1)]) +
                  0.6f * acc.load(4, &Am[i * n + j]) + -0.9f * acc.load(5, &Am[i * n + (j + 1)]) +
                  0.4f * acc.load(6, &Am[(i + 1) * n + (j - 1)]) + 0.7f * acc.load(7, &Am[(i + 1) * n + j]) +
                  0.1f * acc.load(8, &Am[(i + 1) * n + (j + 1)]);
  acc.store(9, &Bm[i * n + j], v);
}

/// jacobi2d: one sweep of the 5-point stencil from A into B (n x n; buffers A, B), interior points only.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void jacobi2d_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  const float* Am = ptr<const float>(a.base[0]);
  float* Bm = ptr<float>(a.base[1]);
  const std::int64_t j = global_x(t), i = global_y(t);
  const std::int64_t n = a.ni;
  if (i < 1 || i >= n - 1 || j < 1 || j >= n - 1) return;
  const float v = acc.load(0, &Am[i * n + j]) + acc.load(1, &Am[i * n + j - 1]) + acc.load(2, &Am[i * n + j + 1]) +
                  acc.load(3, &Am[(i + 1) * n + j]) + acc.load(4, &Am[(i - 1) * n + j]);
  acc.store(5, &Bm[i * n + j], 0.2f * v);
}

/// reduction: each thread sums 4 elements (coalesced, strided by the block), a shared-memory tree,
/// one atomicAdd per CTA (buffers x[ni], out[1]).
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void reduce_body(const LaunchArgs& a, const ThreadIdx& t, A& acc, float* shared) {
  const float* x = ptr<const float>(a.base[0]);
  float* out = ptr<float>(a.base[1]);
  const std::int64_t first = std::int64_t(t.bx) * (kReduceBlock * kReducePerThread) + t.tx;
  float v = 0;
  for (int k = 0; k < kReducePerThread; ++k) {
    const std::int64_t e = first + std::int64_t(k) * kReduceBlock;
    if (e < a.ni) v += acc.load(0, &x[e]);
  }
  shared[t.tx] = v;
  acc.sync();
  for (int stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    if (int(t.tx) < stride) shared[t.tx] += shared[t.tx + stride];
    acc.sync();
  }
  if (t.tx == 0) acc.atomic_add(1, out, shared[0]);
}

/// transpose, naive: out[j][i] = in[i][j] (n x n; buffers in, out): loads coalesced, stores strided.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void transpose_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  const float* in = ptr<const float>(a.base[0]);
  float* out = ptr<float>(a.base[1]);
  const std::int64_t j = global_x(t), i = global_y(t);
  if (i >= a.ni || j >= a.ni) return;
  acc.store(1, &out[j * a.ni + i], acc.load(0, &in[i * a.ni + j]));
}

/// bfs: one level-synchronous step over a CSR graph (buffers row_offsets[ni+1], columns, levels[ni],
/// next[ni]; ints). A frontier vertex (levels == level) marks its unvisited neighbours (levels < 0) in
/// `next`; levels is not written in the launch, so every address is fixed by the data before it.
GCB_EXEC_CHECK_DISABLE
template <class A>
GCB_HD void bfs_body(const LaunchArgs& a, const ThreadIdx& t, A& acc) {
  const std::int32_t* rows = ptr<const std::int32_t>(a.base[0]);
  const std::int32_t* cols = ptr<const std::int32_t>(a.base[1]);
  const std::int32_t* levels = ptr<const std::int32_t>(a.base[2]);
  std::int32_t* next = ptr<std::int32_t>(a.base[3]);
  const std::int64_t v = global_x(t);
  if (v >= a.ni) return;
  if (acc.load(0, &levels[v]) != a.level) return;
  const std::int32_t begin = acc.load(1, &rows[v]);
  const std::int32_t end = acc.load(2, &rows[v + 1]);
  for (std::int32_t e = begin; e < end; ++e) {
    const std::int32_t u = acc.load(3, &cols[e]);
    if (acc.load(4, &levels[u]) < 0) acc.store(5, &next[u], std::int32_t(1));
  }
}

/// The body of one launch kind: what both the CUDA kernels and the host generators call.
GCB_EXEC_CHECK_DISABLE
template <int OP, class A>
GCB_HD void run_body(const LaunchArgs& a, const ThreadIdx& t, A& acc, float* shared) {
  if constexpr (OP == OpGemm) gemm_body(a, t, acc, shared);
  else if constexpr (OP == Op2mm1) mm2_first_body(a, t, acc);
  else if constexpr (OP == Op2mm2) mm2_second_body(a, t, acc);
  else if constexpr (OP == OpAtax1) atax_first_body(a, t, acc);
  else if constexpr (OP == OpAtax2) atax_second_body(a, t, acc);
  else if constexpr (OP == OpBicg1) bicg_first_body(a, t, acc);
  else if constexpr (OP == OpBicg2) bicg_second_body(a, t, acc);
  else if constexpr (OP == OpGesummv) gesummv_body(a, t, acc);
  else if constexpr (OP == OpMvt1) mvt_first_body(a, t, acc);
  else if constexpr (OP == OpMvt2) mvt_second_body(a, t, acc);
  else if constexpr (OP == OpSyrk) syrk_body(a, t, acc);
  else if constexpr (OP == OpConv2d) conv2d_body(a, t, acc);
  else if constexpr (OP == OpJacobi2d) jacobi2d_body(a, t, acc);
  else if constexpr (OP == OpReduce) reduce_body(a, t, acc, shared);
  else if constexpr (OP == OpTranspose) transpose_body(a, t, acc);
  else if constexpr (OP == OpBfs) bfs_body(a, t, acc);
  (void)shared;
}

}  // namespace gcbench
