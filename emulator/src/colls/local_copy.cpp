// The local-copy model (docs/reference/collectives.md, "Local copies" and "Cold copies"): what a copy costs by
// size on a rank's CPU, which copies each collective makes without a message, how much data its
// buffers touch, and the wrappers that charge the copy before an algorithm and the reduction work
// after it.
#include "colls.hpp"

#include <algorithm>
#include <utility>

namespace gridcast::emulator {

double local_copy_seconds(const std::vector<platform::OverheadPoint>& points, std::uint64_t bytes)
{
  if (points.empty() || bytes == 0)
    return 0;
  const double b = static_cast<double>(bytes);
  const platform::OverheadPoint& first = points.front();
  if (b <= static_cast<double>(first.bytes))
    return first.time_s * b / static_cast<double>(first.bytes);
  const platform::OverheadPoint& last = points.back();
  if (b <= static_cast<double>(last.bytes) || points.size() < 2)
    return platform::overhead_for(points, b);
  const platform::OverheadPoint& before = points[points.size() - 2];
  const double slope_s_per_byte = (last.time_s - before.time_s) / static_cast<double>(last.bytes - before.bytes);
  return last.time_s + std::max(0.0, slope_s_per_byte) * (b - static_cast<double>(last.bytes));
}

double local_cold_copy_seconds(const std::vector<platform::OverheadPoint>& points, std::uint64_t bytes)
{
  if (points.empty() || bytes == 0)
    return 0;
  const platform::OverheadPoint& last = points.back();
  const double out_of_cache_s_per_byte = last.time_s / static_cast<double>(last.bytes);
  return std::max(local_copy_seconds(points, bytes), out_of_cache_s_per_byte * static_cast<double>(bytes));
}


void CollectiveContext::local_copy(std::uint64_t bytes, bool cold)
{
  if (not cold)
    return local_copy(bytes);
  if (bytes == 0 || not charges_local_copies())
    return;
  compute(local_cold_copy_seconds(*local_copy_time_, bytes) * sg4::this_actor::get_host()->get_speed());
}

void CollectiveContext::local_copy(std::uint64_t bytes)
{
  // A memcpy is memory bound: its time comes from the calibrated copy curve whatever the core's flop
  // rate, so the seconds are turned into the flops that take that long on this host (one core).
  if (bytes == 0 || local_copy_time_ == nullptr || local_copy_time_->empty())
    return;
  compute(local_copy_seconds(*local_copy_time_, bytes) * sg4::this_actor::get_host()->get_speed());
}

namespace colls {

/// A reducing algorithm: the communication, then the rank's reduction work (SMPI replay order).
CollectiveAlgorithm reducing(AlgorithmFn fn)
{
  return [fn](CollectiveContext& ctx, const CollectiveArgs& a) {
    fn(ctx, a);
    ctx.compute(a.flops);
  };
}

/// An algorithm preceded by its local copy (CollectiveContext::local_copy; free without a copy rate).
/// MPICH and Open MPI make these copies first ("make local copy first" in the pairwise alltoall, the
/// sendbuf-to-recvbuf copy that opens Rabenseifner), so the copy delays the rank's first message.
/// Cold-copy rule (docs/reference/collectives.md, "Cold copies"): where the node's last-level cache is known and
/// the buffers of the node's ranks in this call (`touched`, summed) exceed it, the copy is charged at the
/// out-of-cache rate: in a loop of such calls the copy's data was last touched a call earlier, with more
/// than the cache's worth of other data in between.
CollectiveAlgorithm copying(CopyBytesFn bytes, TouchedBytesFn touched, CollectiveAlgorithm fn)
{
  return [bytes, touched, fn = std::move(fn)](CollectiveContext& ctx, const CollectiveArgs& a) {
    const Bytes copy = bytes(ctx, a);
    if (copy > 0 && ctx.charges_local_copies()) {
      bool cold = false;
      if (const std::uint64_t cache = ctx.node_cache_bytes(); cache > 0) {
        Bytes node_bytes = 0;
        for (int r : ctx.node_ranks())
          node_bytes += touched(ctx, a, r);
        cold = node_bytes > cache;
      }
      ctx.local_copy(copy, cold);
    }
    fn(ctx, a);
  };
}

namespace {
Bytes sum_or(const std::vector<std::uint64_t>& v, Bytes each, int n)
{
  if (v.empty())
    return each * static_cast<Bytes>(n);
  Bytes total = 0;
  for (std::uint64_t b : v)
    total += b;
  return total;
}
}  // namespace

// What each collective's buffers hold, per communicator rank (TouchedBytesFn):
/// alltoall: a block to and from every rank.
Bytes touched_alltoall(const CollectiveContext& ctx, const CollectiveArgs& a, int)
{
  return 2 * a.bytes * static_cast<Bytes>(ctx.size());
}
/// alltoallv: the calling rank's send and receive counts.
Bytes touched_alltoallv(const CollectiveContext& ctx, const CollectiveArgs& a, int)
{
  return sum_or(a.counts, a.bytes, ctx.size()) + sum_or(a.recv_counts, a.recv_bytes, ctx.size());
}
/// allgather: the rank's block, and every rank's block.
Bytes touched_allgather(const CollectiveContext& ctx, const CollectiveArgs& a, int)
{
  return a.bytes * static_cast<Bytes>(1 + ctx.size());
}
/// allgatherv: the rank's block (recv_counts[rank]), and every block.
Bytes touched_allgatherv(const CollectiveContext& ctx, const CollectiveArgs& a, int rank)
{
  const Bytes own = a.recv_counts.empty() ? a.bytes : a.recv_counts[static_cast<std::size_t>(rank)];
  return own + sum_or(a.recv_counts, a.bytes, ctx.size());
}
/// gather: every rank's block; the root also receives all of them.
Bytes touched_gather(const CollectiveContext& ctx, const CollectiveArgs& a, int rank)
{
  return a.bytes + (rank == a.root ? a.bytes * static_cast<Bytes>(ctx.size()) : 0);
}
/// gatherv: the rank's block; the root also receives every block (recv_counts, else recv_bytes each).
Bytes touched_gatherv(const CollectiveContext& ctx, const CollectiveArgs& a, int rank)
{
  return a.bytes + (rank == a.root ? sum_or(a.recv_counts, a.recv_bytes, ctx.size()) : 0);
}
/// scatter: every rank's block; the root also sends all of them.
Bytes touched_scatter(const CollectiveContext& ctx, const CollectiveArgs& a, int rank)
{
  return a.bytes + (rank == a.root ? a.bytes * static_cast<Bytes>(ctx.size()) : 0);
}
/// scatterv: the block received; the root also sends every block (counts, else bytes each).
Bytes touched_scatterv(const CollectiveContext& ctx, const CollectiveArgs& a, int rank)
{
  return a.recv_bytes + (rank == a.root ? sum_or(a.counts, a.bytes, ctx.size()) : 0);
}
/// allreduce, tree reduces: the send buffer and the receive (or temporary) buffer.
Bytes touched_two_buffers(const CollectiveContext&, const CollectiveArgs& a, int) { return 2 * a.bytes; }
/// SMPI's linear reduce: the send buffer; the root also its receive buffer.
Bytes touched_root_two_buffers(const CollectiveContext&, const CollectiveArgs& a, int rank)
{
  return a.bytes + (rank == a.root ? a.bytes : 0);
}

// What each collective copies locally, per rank (docs/reference/collectives.md, "Local copies"):
/// alltoall, allgather: the rank's own block, sendbuf to its place in recvbuf.
Bytes copy_own_block(const CollectiveContext&, const CollectiveArgs& a) { return a.bytes; }
/// alltoallv: the block the rank sends to itself.
Bytes copy_own_v_block(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  return a.counts.empty() ? a.bytes : a.counts[static_cast<std::size_t>(ctx.rank())];
}
/// allgatherv: the rank's own block (recv_counts[me], every rank's array is the same).
Bytes copy_own_allgatherv_block(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  return a.recv_counts.empty() ? a.bytes : a.recv_counts[static_cast<std::size_t>(ctx.rank())];
}
/// gather, gatherv, scatter: the root's own block; the other ranks copy nothing.
Bytes copy_root_block(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  return ctx.rank() == a.root ? a.bytes : 0;
}
/// scatterv: the root's block to itself.
Bytes copy_root_v_block(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (ctx.rank() != a.root)
    return 0;
  return a.counts.empty() ? a.bytes : a.counts[static_cast<std::size_t>(a.root)];
}
/// allreduce, and the tree reduces: the whole sendbuf into recvbuf (or a temporary) on every rank.
Bytes copy_whole_buffer(const CollectiveContext&, const CollectiveArgs& a) { return a.bytes; }
/// SMPI's linear reduce: only the root accumulates into its recvbuf.
Bytes copy_root_buffer(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  return ctx.rank() == a.root ? a.bytes : 0;
}
/// reduce-scatter by recursive halving or by a reduce of the whole buffer: the whole buffer.
Bytes copy_redscat_total(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  return redscat_blocks(ctx, a).total();
}
/// reduce-scatter, SMPI's linear reduce to rank 0 then scatterv: rank 0 copies the whole buffer.
Bytes copy_redscat_total_at_0(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  return ctx.rank() == 0 ? copy_redscat_total(ctx, a) : 0;
}
/// pairwise reduce-scatter: the rank's own block of sendbuf into recvbuf.
Bytes copy_redscat_own_block(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  return redscat_blocks(ctx, a).block(ctx.rank());
}
/// reduce-scatter: the whole send buffer and the rank's block of the result.
Bytes touched_redscat(const CollectiveContext& ctx, const CollectiveArgs& a, int rank)
{
  const BlockCounts blocks = redscat_blocks(ctx, a);
  return blocks.total() + blocks.block(rank);
}

}  // namespace colls

}  // namespace gridcast::emulator
