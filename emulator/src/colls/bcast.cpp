// Bcast: MPICH's binomial tree and van de Geijn's scatter-allgather, the flat broadcast (SMPI's
// ibcast), and Open MPI's segmented pipeline.
#include "colls.hpp"

#include <algorithm>

namespace gridcast::emulator::colls {

/// MPIR_Bcast_intra_binomial: ceil(log2 n) rounds of the whole buffer.
void bcast_binomial(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0)
    return;
  binomial_fan_out(ctx, a.root, tag::kBcast, [&](int) { return a.bytes; }, false);
}

/// Van de Geijn's long-message broadcast [TRG05 sec. 4.1]: a binomial scatter of the buffer in n
/// blocks of ceil(bytes/n), then an allgather of the blocks -- recursive doubling when n is a power
/// of two and the buffer is below 512 KiB (MPIR_Bcast_intra_scatter_recursive_doubling_allgather),
/// a ring otherwise (MPIR_Bcast_intra_scatter_ring_allgather).
void bcast_scatter_allgather(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  const Bytes total = a.bytes;
  if (total == 0 || n == 1)
    return;
  const int me = ctx.rank();
  const int root = a.root;
  const int v = wrap(me - root, n);
  const Bytes block = (total + static_cast<Bytes>(n) - 1) / static_cast<Bytes>(n);
  // Bytes of blocks [first, first + count) that exist: the last blocks are short or empty when n does
  // not divide the buffer.
  auto span = [&](int first, int count) {
    const Bytes lo = std::min(total, static_cast<Bytes>(first) * block);
    const Bytes hi = std::min(total, static_cast<Bytes>(first + count) * block);
    return hi - lo;
  };
  // MPII_Scatter_for_bcast: each subtree root receives its subtree's blocks; empty ones are skipped.
  binomial_fan_out(ctx, root, tag::kBcastScatter, [&](int rel) { return span(rel, subtree_size(rel, n)); }, true);

  if (is_pow2(n) && total < kBcastLongMsg) {
    // Recursive doubling on relative ranks: at step i, exchange the 2^i blocks of my subtree for those
    // of the partner's. Zero-size messages are still sent, as in MPICH.
    for (int mask = 1, i = 0; mask < n; mask <<= 1, ++i) {
      const int partner = v ^ mask;
      const int my_root = (v >> i) << i;
      const int partner_root = (partner >> i) << i;
      const int dst = (partner + root) % n;
      ctx.sendrecv(dst, span(my_root, mask), dst, span(partner_root, mask), tag::kBcastAllgather);
    }
  } else {
    // Ring on real ranks: at step i, forward to the right the block received at step i - 1.
    const int left = wrap(me - 1, n);
    const int right = (me + 1) % n;
    int j = me;
    int jnext = left;
    for (int i = 1; i < n; ++i) {
      ctx.sendrecv(right, span(wrap(j - root, n), 1), left, span(wrap(jnext - root, n), 1), tag::kBcastAllgather);
      j = jnext;
      jnext = wrap(jnext - 1, n);
    }
  }
}

/// The root sends the whole buffer to every rank at once (isend all, wait all).
void bcast_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0 || ctx.size() == 1)
    return;
  linear_rooted_uniform(ctx, a.root, Flow::FromRoot, tag::kBcast, a.bytes);
}

/// Open MPI's pipelined broadcast (ompi_coll_base_bcast_intra_pipeline: the generic tree bcast of
/// coll/base on a chain of fan-out 1) with 128 KiB segments, the segment size Open MPI's fixed rules
/// before 4.0 chose for large messages on small communicators (coll_tuned_decision_fixed.c,
/// "Pipeline with 128KB segments", 1024 << 7). Open MPI 4.x's rules no longer segment by default
/// (docs/reference/collectives.md), so it is only used when forced. Relative rank v receives from v - 1 and
/// forwards to v + 1, segment by segment, with two receives posted ahead (double buffering):
///   root:      for each segment: isend to the child, wait;
///   middle:    irecv(0); for i = 1..: irecv(i), wait(i - 1), isend(i - 1) to the child, wait; then the
///              last one;
///   last rank: irecv(0); for i = 1..: irecv(i), wait(i - 1); then wait the last.
void bcast_pipeline(CollectiveContext& ctx, const CollectiveArgs& a)
{
  constexpr Bytes kSegment = Bytes{128} << 10;
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  const int v = wrap(ctx.rank() - a.root, n);
  const int parent = wrap(v - 1 + a.root, n);
  const int child = (v + 1 + a.root) % n;
  const bool has_child = v + 1 < n;
  const Bytes segments = (a.bytes + kSegment - 1) / kSegment;
  auto seg = [&](Bytes i) { return std::min(kSegment, a.bytes - i * kSegment); };
  if (v == 0) {
    for (Bytes i = 0; i < segments; ++i)
      ctx.wait(ctx.isend(child, seg(i), tag::kBcast));
    return;
  }
  RequestPtr pending = ctx.irecv(parent, seg(0), tag::kBcast);
  for (Bytes i = 1; i <= segments; ++i) {
    RequestPtr next = i < segments ? ctx.irecv(parent, seg(i), tag::kBcast) : nullptr;
    ctx.wait(pending);
    if (has_child)
      ctx.wait(ctx.isend(child, seg(i - 1), tag::kBcast));
    pending = next;
  }
}

void bcast_default(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const bool long_msg = default_bcast(a.bytes, ctx.size()) == "scatter_allgather";
  (long_msg ? bcast_scatter_allgather : bcast_binomial)(ctx, a);
}

}  // namespace gridcast::emulator::colls
