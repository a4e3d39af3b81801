// Allreduce: MPICH's recursive doubling and Rabenseifner's reduce-scatter-allgather, the ring, a
// reduce then a bcast (MPICH's defaults, or SMPI's flat reduce and binomial bcast). Non-power-of-two
// sizes fold as MPICH does: even ranks below 2*rem hand their buffer to rank + 1, sit out, and get
// the result back at the end. SMPI's nonblocking allreduce is in nbc.cpp.
#include "colls.hpp"

namespace gridcast::emulator::colls {
namespace {

Fold allreduce_fold_in(CollectiveContext& ctx, Bytes total)
{
  return fold_in(ctx, total, 1, tag::kAllreduceFold);
}

void allreduce_fold_out(CollectiveContext& ctx, const Fold& f, Bytes total)
{
  const int me = ctx.rank();
  if (me >= 2 * f.rem)
    return;
  if (me % 2 != 0)
    ctx.send(me - 1, total, tag::kAllreduceUnfold);
  else
    ctx.recv(me + 1, total, tag::kAllreduceUnfold);
}

/// `reduce` to rank 0, then `bcast` from rank 0.
void reduce_then_bcast_at_0(CollectiveContext& ctx, const CollectiveArgs& a, AlgorithmFn reduce, AlgorithmFn bcast)
{
  CollectiveArgs at0 = a;
  at0.root = 0;
  reduce(ctx, at0);
  bcast(ctx, at0);
}

}  // namespace

/// MPIR_Allreduce_intra_recursive_doubling [TRG05 sec. 4.5]: log2(pof2) exchanges of the whole
/// buffer, plus the fold and unfold when n is not a power of two.
void allreduce_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0 || ctx.size() == 1)
    return;
  const Fold f = allreduce_fold_in(ctx, a.bytes);
  if (f.newrank != -1) {
    for (int mask = 1; mask < f.pof2; mask <<= 1) {
      const int dst = f.real(f.newrank ^ mask);
      ctx.sendrecv(dst, a.bytes, dst, a.bytes, tag::kAllreduce);
    }
  }
  allreduce_fold_out(ctx, f, a.bytes);
}

/// MPIR_Allreduce_intra_reduce_scatter_allgather, Rabenseifner's algorithm [TRG05 sec. 4.5]:
/// reduce-scatter by recursive halving (partners at distance 1, 2, 4...; halves of the buffer), then
/// allgather by recursive doubling in reverse, plus the fold and unfold.
void allreduce_rabenseifner(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const Bytes total = a.bytes;
  if (total == 0 || ctx.size() == 1)
    return;
  const Fold f = allreduce_fold_in(ctx, total);
  if (f.newrank != -1) {
    const int pof2 = f.pof2;
    const int newrank = f.newrank;
    const EvenSplit cnts{total, pof2};
    HalvingIndices ix = rabenseifner_reduce_scatter(ctx, f, cnts, tag::kAllreduceScatter);
    for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
      const int newdst = newrank ^ mask;
      const int dst = f.real(newdst);
      const StepBytes b = rabenseifner_gather_step(ix, newrank, newdst, mask, pof2, cnts);
      ctx.sendrecv(dst, b.send, dst, b.recv, tag::kAllreduceGather);
    }
  }
  allreduce_fold_out(ctx, f, total);
}

/// Ring allreduce (Open MPI's ompi_coll_base_allreduce_intra_ring, Patarasuk & Yuan 2009): the
/// buffer in n chunks; n - 1 ring steps of reduce-scatter, then n - 1 ring steps of allgather.
void allreduce_ring(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  const int me = ctx.rank();
  const int left = wrap(me - 1, n);
  const int right = (me + 1) % n;
  const EvenSplit chunks{a.bytes, n};
  // Step i sends the chunk reduced so far to the right; after n - 1 steps rank r holds chunk r + 1.
  for (int i = 0; i < n - 1; ++i)
    ctx.sendrecv(right, chunks.block(wrap(me - i, n)), left, chunks.block(wrap(me - i - 1, n)),
                 tag::kAllreduceScatter);
  for (int i = 0; i < n - 1; ++i)
    ctx.sendrecv(right, chunks.block(wrap(me + 1 - i, n)), left, chunks.block(wrap(me - i, n)),
                 tag::kAllreduceGather);
}

/// A reduce to rank 0 followed by a broadcast from rank 0, each with MPICH's default choice.
void allreduce_reduce_bcast(CollectiveContext& ctx, const CollectiveArgs& a)
{
  reduce_then_bcast_at_0(ctx, a, reduce_default, bcast_default);
}

/// allreduce__default (SMPI's default): SMPI's flat reduce to rank 0 (ireduce: rank 0 posts n - 1
/// receives at once), then a binomial broadcast from rank 0 (bcast__binomial_tree, the same tree as
/// MPICH's).
void allreduce_linear_reduce_bcast(CollectiveContext& ctx, const CollectiveArgs& a)
{
  reduce_then_bcast_at_0(ctx, a, reduce_linear, bcast_binomial);
}

}  // namespace gridcast::emulator::colls
