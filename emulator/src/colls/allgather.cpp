// Allgather (bytes = each rank's contribution): MPICH's recursive doubling, ring and Bruck, and the
// flat exchange (SMPI's default); allgatherv (recv_counts[i] = rank i's contribution, the same array
// on every rank): MPICH's ring and the flat exchange.
#include "colls.hpp"

namespace gridcast::emulator::colls {

/// MPICH's recursive doubling [TRG05 sec. 4.2]: log2 n exchanges of 1, 2, 4... contributions. Defined
/// here for powers of two only (MPICH never selects its non-power-of-two variant); other sizes run
/// the ring.
void allgather_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (not is_pow2(n)) {
    allgather_ring(ctx, a);
    return;
  }
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  for (int mask = 1; mask < n; mask <<= 1) {
    const Bytes b = static_cast<Bytes>(mask) * a.bytes;
    ctx.sendrecv(me ^ mask, b, me ^ mask, b, tag::kAllgather);
  }
}

/// MPICH's ring: n - 1 steps, each forwarding to the right the contribution received from the left.
void allgather_ring(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  for (int i = 1; i < n; ++i)
    ctx.sendrecv((me + 1) % n, a.bytes, wrap(me - 1, n), a.bytes, tag::kAllgather);
}

/// Bruck et al. 1997 (MPIR_Allgather_intra_brucks): floor(log2 n) steps sending everything gathered
/// so far to rank - 2^k, plus one step of the remaining n - pof2 contributions when n is not a power
/// of two.
void allgather_bruck(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  Bytes held = a.bytes;
  int pof2 = 1;
  for (; pof2 <= n / 2; pof2 *= 2, held *= 2)
    ctx.sendrecv(wrap(me - pof2, n), held, (me + pof2) % n, held, tag::kAllgather);
  if (int rem = n - pof2; rem > 0) {
    const Bytes b = static_cast<Bytes>(rem) * a.bytes;
    ctx.sendrecv(wrap(me - pof2, n), b, (me + pof2) % n, b, tag::kAllgather);
  }
}

/// iallgather: every rank sends its block to every other rank and receives theirs, all at once.
void allgather_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  exchange_with_every_rank(ctx, a.bytes, tag::kAllgather);
}

namespace {

BlockCounts allgatherv_blocks(CollectiveContext& ctx, const CollectiveArgs& a)
{
  return BlockCounts(a.recv_counts, ctx.size(), a.bytes);
}

}  // namespace

/// MPICH's ring for allgatherv: like the allgather ring, with the size of the block being forwarded.
void allgatherv_ring(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  const BlockCounts blocks = allgatherv_blocks(ctx, a);
  if (blocks.total() == 0)
    return;
  const int me = ctx.rank();
  const int left = wrap(me - 1, n);
  const int right = (me + 1) % n;
  int j = me;
  int jnext = left;
  for (int i = 1; i < n; ++i) {
    ctx.sendrecv(right, blocks.block(j), left, blocks.block(jnext), tag::kAllgatherv);
    j = jnext;
    jnext = wrap(jnext - 1, n);
  }
}

/// Every rank sends its block to every other rank at once (isend/irecv all, wait all).
void allgatherv_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  const BlockCounts blocks = allgatherv_blocks(ctx, a);
  const int me = ctx.rank();
  std::vector<RequestPtr> reqs;
  for (int i = 1; i < n; ++i) {
    const int src = (me + i) % n;
    if (blocks.block(src) > 0)
      reqs.push_back(ctx.irecv(src, blocks.block(src), tag::kAllgatherv));
  }
  for (int i = 1; i < n; ++i) {
    const int dst = wrap(me - i, n);
    if (blocks.block(me) > 0)
      reqs.push_back(ctx.isend(dst, blocks.block(me), tag::kAllgatherv));
  }
  ctx.wait_all(reqs);
}

}  // namespace gridcast::emulator::colls
