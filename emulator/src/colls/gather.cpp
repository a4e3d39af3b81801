// Gather (bytes = one rank's block): MPICH's binomial tree and the flat gather (SMPI's default);
// gatherv: MPICH's linear gatherv.
#include "colls.hpp"

namespace gridcast::emulator::colls {

/// MPIR_Gather_intra_binomial: every subtree root forwards its whole subtree's blocks, so the root
/// receives (n - 1) blocks in ceil(log2 n) messages.
void gather_binomial(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  binomial_fan_in(ctx, a.root, tag::kGather, [&](int v) { return static_cast<Bytes>(subtree_size(v, n)) * a.bytes; });
}

/// The root receives every block at once (irecv all, wait all).
void gather_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0 || ctx.size() == 1)
    return;
  linear_rooted_uniform(ctx, a.root, Flow::ToRoot, tag::kGather, a.bytes);
}

/// MPIR_Gatherv_allcomm_linear: the root posts a receive per non-empty block and waits for all;
/// every other rank sends its block (bytes) if it is not empty.
void gatherv_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (ctx.rank() != a.root) {
    if (a.bytes > 0)
      ctx.send(a.root, a.bytes, tag::kGatherv);
    return;
  }
  // Only the root reads the receive counts (MPI ignores them elsewhere).
  const BlockCounts from(a.recv_counts, ctx.size(), a.recv_bytes != 0 ? a.recv_bytes : a.bytes);
  linear_rooted(ctx, a.root, Flow::ToRoot, tag::kGatherv, [&](int i) { return from.block(i); }, true);
}

}  // namespace gridcast::emulator::colls
