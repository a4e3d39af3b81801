// Alltoall (bytes = size sent to each peer): MPICH's pairwise, Bruck and scattered (throttled)
// exchanges, and Open MPI's basic linear (SMPI's default); alltoallv (counts[j] to rank j,
// recv_counts[j] from rank j; zero blocks are not sent): MPICH's pairwise and scattered exchanges,
// and SMPI's flat ialltoallv.
#include "colls.hpp"

#include <algorithm>

namespace gridcast::emulator::colls {
namespace {

/// Partners of step i (1 <= i < n) of MPICH's pairwise exchange: the XOR partner when n is a power of
/// two, otherwise send to rank + i and receive from rank - i.
struct PairwisePartners {
  int dst;
  int src;
};

PairwisePartners pairwise_partners(int me, int i, int n)
{
  if (is_pow2(n))
    return {me ^ i, me ^ i};
  return {(me + i) % n, wrap(me - i, n)};
}

/// Number of block indices in [0, n) with bit `bit` set: the blocks Bruck's step moves.
Bytes blocks_with_bit(int n, int bit)
{
  const int period = 2 * bit;
  return static_cast<Bytes>((n / period) * bit + std::max(0, n % period - bit));
}

/// MPIR_Alltoall_intra_scattered: irecvs from rank + i and isends to rank - i, in batches of 32 that
/// are each waited for before the next is posted (the throttle keeps a large communicator from
/// flooding one receiver).
template <class SendBytes, class RecvBytes>
void scattered_exchange(CollectiveContext& ctx, int t, SendBytes to, RecvBytes from)
{
  const int n = ctx.size();
  const int me = ctx.rank();
  for (int first = 0; first < n; first += kAlltoallThrottle) {
    const int batch = std::min(kAlltoallThrottle, n - first);
    std::vector<RequestPtr> reqs;
    for (int i = first; i < first + batch; ++i) {
      const int src = (me + i) % n;
      if (src != me && from(src) > 0)
        reqs.push_back(ctx.irecv(src, from(src), t));
    }
    for (int i = first; i < first + batch; ++i) {
      const int dst = wrap(me - i, n);
      if (dst != me && to(dst) > 0)
        reqs.push_back(ctx.isend(dst, to(dst), t));
    }
    ctx.wait_all(reqs);
  }
}

struct AlltoallvSizes {
  BlockCounts to;
  BlockCounts from;
  AlltoallvSizes(CollectiveContext& ctx, const CollectiveArgs& a)
      : to(a.counts, ctx.size(), a.bytes), from(a.recv_counts, ctx.size(), a.recv_bytes != 0 ? a.recv_bytes : a.bytes)
  {
  }
};

}  // namespace

/// MPIR_Alltoall_intra_pairwise [TRG05 sec. 4.6]: n - 1 exchanges; XOR partners when n is a power of
/// two, otherwise send to rank + i and receive from rank - i.
void alltoall_pairwise(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  for (int i = 1; i < n; ++i) {
    const PairwisePartners p = pairwise_partners(me, i, n);
    ctx.sendrecv(p.dst, a.bytes, p.src, a.bytes, tag::kAlltoall);
  }
}

/// MPIR_Alltoall_intra_brucks [TRG05 sec. 4.6]: ceil(log2 n) steps; at step k every rank sends to
/// rank + 2^k the blocks whose index has bit k set (n/2 blocks when n is a power of two).
void alltoall_bruck(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  for (int pof2 = 1; pof2 < n; pof2 *= 2) {
    const Bytes b = blocks_with_bit(n, pof2) * a.bytes;
    ctx.sendrecv((me + pof2) % n, b, wrap(me - pof2, n), b, tag::kAlltoall);
  }
}

/// MPICH's medium-message alltoall (MPIR_Alltoall_intra_scattered): the throttled batches of
/// scattered_exchange, the same block to and from every rank.
void alltoall_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  auto each = [&](int) { return a.bytes; };
  scattered_exchange(ctx, tag::kAlltoall, each, each);
}

/// alltoall__basic_linear (Open MPI's, as in SMPI): receives posted from rank + 1, rank + 2, ...,
/// sends to rank - 1, rank - 2, ..., all at once (MPICH's `linear` throttles them by 32).
void alltoall_basic_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  const int me = ctx.rank();
  receive_all_then_send_all(
      ctx, tag::kAlltoall, n - 1, [&](int i) { return PeerBytes{(me + i + 1) % n, a.bytes}; }, n - 1,
      [&](int i) { return PeerBytes{wrap(me - i - 1, n), a.bytes}; });
}

/// Pairwise exchange as for alltoall, each step with that pair's sizes.
void alltoallv_pairwise(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const AlltoallvSizes s(ctx, a);
  const int n = ctx.size();
  const int me = ctx.rank();
  for (int i = 1; i < n; ++i) {
    const PairwisePartners p = pairwise_partners(me, i, n);
    exchange_nonempty(ctx, p.dst, s.to.block(p.dst), p.src, s.from.block(p.src), tag::kAlltoallv);
  }
}

/// MPICH's default alltoallv: the scattered isend/irecv batches of alltoall_linear.
void alltoallv_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const AlltoallvSizes s(ctx, a);
  scattered_exchange(
      ctx, tag::kAlltoallv, [&](int j) { return s.to.block(j); }, [&](int j) { return s.from.block(j); });
}

/// ialltoallv: receives from every other rank in rank order, then sends to every other rank in rank
/// order, all at once; empty blocks are sent as empty messages.
void alltoallv_basic_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const AlltoallvSizes s(ctx, a);
  const int n = ctx.size();
  const int me = ctx.rank();
  auto other = [me](int i) { return i < me ? i : i + 1; };  // the i-th rank but me, in rank order
  receive_all_then_send_all(
      ctx, tag::kAlltoallv, n - 1, [&](int i) { return PeerBytes{other(i), s.from.block(other(i))}; }, n - 1,
      [&](int i) { return PeerBytes{other(i), s.to.block(other(i))}; });
}

}  // namespace gridcast::emulator::colls
