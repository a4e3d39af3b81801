// Reduce-scatter (recv_counts[i] = bytes rank i ends with, the same array on every rank): MPICH's
// recursive halving and pairwise exchange, and a reduce of the whole buffer to rank 0 followed by a
// scatterv (MPICH's generic fallback, or SMPI's flat default). SMPI's nonblocking reduce-scatter is in
// nbc.cpp.
#include "colls.hpp"

namespace gridcast::emulator::colls {
namespace {

/// The whole buffer reduced to rank 0 by `reduce`, then a linear scatterv of the blocks from rank 0;
/// `skip_empty`: empty blocks are not sent (MPICH's scatterv), else sent as empty messages (SMPI's).
void reduce_whole_then_scatterv(CollectiveContext& ctx, const CollectiveArgs& a, AlgorithmFn reduce, bool skip_empty)
{
  const BlockCounts counts = redscat_blocks(ctx, a);
  if (counts.total() == 0)
    return;
  CollectiveArgs whole = a;
  whole.bytes = counts.total();
  whole.root = 0;
  reduce(ctx, whole);
  linear_rooted(ctx, 0, Flow::FromRoot, tag::kRedScatScatterv, [&](int i) { return counts.block(i); }, skip_empty);
}

}  // namespace

BlockCounts redscat_blocks(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  return BlockCounts(a.recv_counts, n, a.recv_bytes != 0 ? a.recv_bytes : a.bytes / static_cast<Bytes>(n));
}

/// MPIR_Reduce_scatter_intra_recursive_halving [TRG05 sec. 4.3] (commutative op): fold to a power of
/// two (even ranks below 2*rem hand everything to rank + 1), log2(pof2) halving exchanges where the
/// partner at distance pof2/2, pof2/4... gets the half it is responsible for, then the odd ranks
/// below 2*rem return their left neighbour's block.
void redscat_recursive_halving(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const BlockCounts counts = redscat_blocks(ctx, a);
  const Bytes total = counts.total();
  const int n = ctx.size();
  if (total == 0 || n == 1)
    return;
  const int me = ctx.rank();
  const Fold f = fold_in(ctx, total, 1, tag::kRedScatFold);
  const int rem = f.rem;

  if (const int newrank = f.newrank; newrank != -1) {
    // newrank i answers for old ranks [old_first(i), old_first(i + 1)): its own and, below rem, its left
    // neighbour's; ranges of new blocks are ranges of old ones.
    auto old_first = [&](int i) { return i < rem ? 2 * i : i + rem; };
    auto range = [&](int first, int last) { return counts.prefix(old_first(last)) - counts.prefix(old_first(first)); };
    int send_idx = 0;
    int recv_idx = 0;
    int last_idx = f.pof2;
    for (int mask = f.pof2 >> 1; mask > 0; mask >>= 1) {
      const int newdst = newrank ^ mask;
      const int dst = f.real(newdst);
      Bytes send_cnt;
      Bytes recv_cnt;
      if (newrank < newdst) {
        send_idx = recv_idx + mask;
        send_cnt = range(send_idx, last_idx);
        recv_cnt = range(recv_idx, send_idx);
      } else {
        recv_idx = send_idx + mask;
        send_cnt = range(send_idx, recv_idx);
        recv_cnt = range(recv_idx, last_idx);
      }
      exchange_nonempty(ctx, dst, send_cnt, dst, recv_cnt, tag::kRedScat);
      send_idx = recv_idx;
      last_idx = recv_idx + mask;
    }
  }

  if (me < 2 * rem) {
    if (me % 2 != 0) {
      if (counts.block(me - 1) > 0)
        ctx.send(me - 1, counts.block(me - 1), tag::kRedScatUnfold);
    } else if (counts.block(me) > 0) {
      ctx.recv(me + 1, counts.block(me), tag::kRedScatUnfold);
    }
  }
}

/// MPIR_Reduce_scatter_intra_pairwise: n - 1 steps, sending rank + i its block and receiving mine
/// from rank - i (zero-size blocks included, as MPICH's sendrecv does).
void redscat_pairwise(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const BlockCounts counts = redscat_blocks(ctx, a);
  const int n = ctx.size();
  if (counts.total() == 0)
    return;
  const int me = ctx.rank();
  for (int i = 1; i < n; ++i) {
    const int dst = (me + i) % n;
    const int src = wrap(me - i, n);
    ctx.sendrecv(dst, counts.block(dst), src, counts.block(me), tag::kRedScat);
  }
}

/// The generic fallback (MPICH's MPIR_Reduce_scatter for intercommunicators, SMPI's "default"): reduce
/// the whole buffer to rank 0 with the default reduce, then a linear scatterv of the blocks.
void redscat_reduce_scatterv(CollectiveContext& ctx, const CollectiveArgs& a)
{
  reduce_whole_then_scatterv(ctx, a, reduce_default, true);
}

/// reduce_scatter__default with equal blocks: SMPI's flat reduce of the whole buffer to rank 0, then a
/// flat scatterv of the blocks (iscatterv posts every block, empty ones included).
void redscat_linear_reduce_scatterv(CollectiveContext& ctx, const CollectiveArgs& a)
{
  reduce_whole_then_scatterv(ctx, a, reduce_linear, false);
}

}  // namespace gridcast::emulator::colls
