// SMPI 3.32's nonblocking barrier, allreduce and reduce-scatter (smpi_nbc_impl.cpp), where they differ
// from its blocking defaults: every message of the operation is posted at the call, none waits for
// another. CollectiveRegistry::select_nonblocking (select_smpi.cpp) chooses them under
// CollectiveSelector::Smpi; the other nonblocking collectives have the flat shape of SMPI's blocking
// default (bcast_linear, alltoall_basic_linear...).
#include "colls.hpp"

namespace gridcast::emulator::colls {

/// ibarrier: every rank > 0 sends an empty message to rank 0 and receives one from it; rank 0 posts a
/// receive and a send for every other rank at once. Rank 0's replies do not wait for the arrivals, so
/// this is one round of latency where barrier__ompi_basic_linear takes two (and it does not synchronise:
/// a rank may leave before another has entered).
void barrier_nbc(CollectiveContext& ctx, const CollectiveArgs&)
{
  const int n = ctx.size();
  if (n == 1)
    return;
  std::vector<RequestPtr> reqs;
  if (ctx.rank() != 0) {
    reqs.push_back(ctx.isend(0, 0, tag::kBarrierNbc));
    reqs.push_back(ctx.irecv(0, 0, tag::kBarrierNbc));
  } else {
    // SMPI's receives take any source; all messages are alike, so naming each source times the same.
    for (int i = 1; i < n; ++i) {
      reqs.push_back(ctx.irecv(i, 0, tag::kBarrierNbc));
      reqs.push_back(ctx.isend(i, 0, tag::kBarrierNbc));
    }
  }
  ctx.wait_all(reqs);
}

/// iallreduce: every rank sends its whole buffer to every other rank and receives theirs, all at once
/// (n (n - 1) messages, one round), then reduces locally (the reduction work, after the messages).
void allreduce_nbc(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  exchange_with_every_rank(ctx, a.bytes, tag::kAllreduceNbc);
}

/// ireduce_scatter: every rank sends block j of its buffer to rank j and receives its own block from
/// every other rank, all at once (empty blocks included), then reduces its block locally.
void redscat_nbc(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const BlockCounts counts = redscat_blocks(ctx, a);
  const int n = ctx.size();
  if (counts.total() == 0 || n == 1)
    return;
  const Bytes mine = counts.block(ctx.rank());
  exchange_with_every_rank(
      ctx, tag::kRedScatNbc, [&](int other) { return counts.block(other); }, [mine](int) { return mine; });
}

}  // namespace gridcast::emulator::colls
