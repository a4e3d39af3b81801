// Scatter (bytes = one rank's block): MPICH's binomial tree and the flat scatter (SMPI's default);
// scatterv: MPICH's linear scatterv, which the reduce-scatter fallback also ends with.
#include "colls.hpp"

namespace gridcast::emulator::colls {

/// MPIR_Scatter_intra_binomial: the root sends each subtree root its whole subtree's blocks, largest
/// subtree first; (n - 1) blocks leave the root in ceil(log2 n) messages.
void scatter_binomial(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  binomial_fan_out(
      ctx, a.root, tag::kScatter, [&](int v) { return static_cast<Bytes>(subtree_size(v, n)) * a.bytes; }, false);
}

/// The root sends every block at once (isend all, wait all).
void scatter_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0 || ctx.size() == 1)
    return;
  linear_rooted_uniform(ctx, a.root, Flow::FromRoot, tag::kScatter, a.bytes);
}

void scatterv_from(CollectiveContext& ctx, int root, const BlockCounts& to, Bytes mine, int t)
{
  const int me = ctx.rank();
  linear_rooted(ctx, root, Flow::FromRoot, t, [&](int i) { return i == me ? mine : to.block(i); }, true);
}

/// The root sends counts[i] to rank i; rank i receives recv_bytes.
void scatterv_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  scatterv_from(ctx, a.root, BlockCounts(a.counts, ctx.size(), a.bytes), a.recv_bytes, tag::kScatterv);
}

}  // namespace gridcast::emulator::colls
