// Scan and exscan: the chain of n - 1 hops, MPICH's recursive doubling, and SMPI's direct exchange
// (every rank's buffer to every higher rank). The two collectives move the same messages on their own
// tags.
#include "colls.hpp"

namespace gridcast::emulator::colls {
namespace {

/// Rank i waits for the prefix of ranks < i from i - 1, then passes its own on: n - 1 sequential hops.
void prefix_linear(CollectiveContext& ctx, const CollectiveArgs& a, int t)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  if (me > 0)
    ctx.recv(me - 1, a.bytes, t);
  if (me < n - 1)
    ctx.send(me + 1, a.bytes, t);
}

/// MPIR_Scan_intra_recursive_doubling / MPIR_Exscan_intra_recursive_doubling: ceil(log2 n) exchanges
/// of the whole buffer with rank ^ 2^k when that rank exists.
void prefix_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a, int t)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  for (int mask = 1; mask < n; mask <<= 1)
    if (int dst = me ^ mask; dst < n)
      ctx.sendrecv(dst, a.bytes, dst, a.bytes, t);
}

/// SMPI's scan and exscan (smpi_coll.cpp): every rank receives the buffer of every lower rank and
/// sends its own to every higher rank, all at once (n (n - 1) / 2 messages, one round).
void prefix_direct(CollectiveContext& ctx, const CollectiveArgs& a, int t)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  const int me = ctx.rank();
  receive_all_then_send_all(
      ctx, t, me, [&](int i) { return PeerBytes{i, a.bytes}; }, n - 1 - me,
      [&](int i) { return PeerBytes{me + 1 + i, a.bytes}; });
}

}  // namespace

void scan_linear(CollectiveContext& ctx, const CollectiveArgs& a) { prefix_linear(ctx, a, tag::kScan); }
void scan_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a)
{
  prefix_recursive_doubling(ctx, a, tag::kScan);
}
void exscan_linear(CollectiveContext& ctx, const CollectiveArgs& a) { prefix_linear(ctx, a, tag::kExscan); }
void exscan_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a)
{
  prefix_recursive_doubling(ctx, a, tag::kExscan);
}
void scan_direct(CollectiveContext& ctx, const CollectiveArgs& a) { prefix_direct(ctx, a, tag::kScan); }
void exscan_direct(CollectiveContext& ctx, const CollectiveArgs& a) { prefix_direct(ctx, a, tag::kExscan); }

}  // namespace gridcast::emulator::colls
