// Reduce: MPICH's binomial tree and Rabenseifner's reduce-scatter-gather, and the flat reduce (SMPI's
// default).
#include "colls.hpp"

namespace gridcast::emulator::colls {

/// MPIR_Reduce_intra_binomial (commutative op): ceil(log2 n) rounds of the whole buffer.
void reduce_binomial(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0)
    return;
  binomial_fan_in(ctx, a.root, tag::kReduce, [&](int) { return a.bytes; });
}

/// The root receives every buffer at once (irecv all, wait all).
void reduce_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0 || ctx.size() == 1)
    return;
  linear_rooted_uniform(ctx, a.root, Flow::ToRoot, tag::kReduce, a.bytes);
}

/// MPIR_Reduce_intra_reduce_scatter_gather [TRG05 sec. 4.4]: fold to a power of two (odd ranks below
/// 2*rem hand their buffer to rank - 1), reduce-scatter by recursive halving, then a binomial gather
/// of the blocks to the root. If the root was folded away, newrank 0 hands it block 0 first and the
/// root plays newrank 0 in the gather.
void reduce_rabenseifner(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const Bytes total = a.bytes;
  if (total == 0 || ctx.size() == 1)
    return;
  const int me = ctx.rank();
  const int root = a.root;
  const Fold f = fold_in(ctx, total, 0, tag::kReduceFold);
  const int pof2 = f.pof2;
  const int rem = f.rem;
  const EvenSplit cnts{total, pof2};
  HalvingIndices ix = rabenseifner_reduce_scatter(ctx, f, cnts, tag::kReduceScatter);
  int newrank = f.newrank;

  const bool root_folded = root < 2 * rem && root % 2 != 0;
  int newroot;
  if (root_folded) {
    if (me == root) {
      ctx.recv(0, cnts.block(0), tag::kReduceHandoff);
      newrank = 0;
      ix.send_idx = 0;
      ix.last_idx = 2;
    } else if (newrank == 0) {
      ctx.send(root, cnts.block(0), tag::kReduceHandoff);
      newrank = -1;
    }
    newroot = 0;
  } else {
    newroot = root < 2 * rem ? root / 2 : root - rem;
  }

  if (newrank == -1)
    return;
  int j = log2_exact(pof2) - 1;
  for (int mask = pof2 >> 1; mask > 0; mask >>= 1, --j) {
    const int newdst = newrank ^ mask;
    const int dst = (newdst == 0 && root_folded) ? root : f.real(newdst);
    const int newdst_tree_root = (newdst >> j) << j;
    const int newroot_tree_root = (newroot >> j) << j;
    const StepBytes b = rabenseifner_gather_step(ix, newrank, newdst, mask, pof2, cnts);
    if (newdst_tree_root == newroot_tree_root) {  // the partner's half holds the root: hand over, done
      ctx.send(dst, b.send, tag::kReduceGather);
      return;
    }
    ctx.recv(dst, b.recv, tag::kReduceGather);
  }
}

void reduce_default(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const bool long_msg = default_reduce(a.bytes, ctx.size()) == "rabenseifner";
  (long_msg ? reduce_rabenseifner : reduce_binomial)(ctx, a);
}

}  // namespace gridcast::emulator::colls
