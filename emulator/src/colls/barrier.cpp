// Barrier: MPICH's dissemination and binomial barriers, and SMPI 3.32's default (Open MPI's basic
// linear). SMPI's nonblocking barrier is in nbc.cpp.
#include "colls.hpp"

namespace gridcast::emulator::colls {

/// Dissemination (Hensgen, Finkel & Manber 1988; MPICH's barrier): ceil(log2 n) rounds, in round k
/// every rank signals rank + 2^k and waits for rank - 2^k.
void barrier_dissemination(CollectiveContext& ctx, const CollectiveArgs&)
{
  const int n = ctx.size();
  const int me = ctx.rank();
  for (int mask = 1; mask < n; mask <<= 1)
    ctx.sendrecv((me + mask) % n, 0, wrap(me - mask, n), 0, tag::kBarrier);
}

/// Empty binomial gather to rank 0, then empty binomial broadcast: 2 ceil(log2 n) rounds.
void barrier_binomial(CollectiveContext& ctx, const CollectiveArgs&)
{
  binomial_fan_in(ctx, 0, tag::kBarrierFanIn, [](int) -> Bytes { return 0; });
  binomial_fan_out(ctx, 0, tag::kBarrierFanOut, [](int) -> Bytes { return 0; }, false);
}

/// barrier__ompi_basic_linear (SMPI's default): every rank sends an empty message to rank 0 and waits
/// for its reply; rank 0 receives them all, then replies to all (2 (n - 1) messages through rank 0).
void barrier_linear(CollectiveContext& ctx, const CollectiveArgs&)
{
  if (ctx.size() == 1)
    return;
  linear_rooted_uniform(ctx, 0, Flow::ToRoot, tag::kBarrierFanIn, 0);
  linear_rooted_uniform(ctx, 0, Flow::FromRoot, tag::kBarrierFanOut, 0);
}

}  // namespace gridcast::emulator::colls
