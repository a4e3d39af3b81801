// Message patterns several collectives are built from (colls.hpp): pairwise and all-to-all exchanges,
// flat rooted collectives, the power-of-two fold of MPICH's reductions and Rabenseifner's halving.
#include "colls.hpp"

#include <stdexcept>
#include <string>

namespace gridcast::emulator::colls {

BlockCounts::BlockCounts(const std::vector<Bytes>& counts, int n, Bytes uniform) : n_(n), uniform_(uniform)
{
  if (counts.empty())
    return;
  if (static_cast<int>(counts.size()) != n)
    throw std::invalid_argument("collective counts have " + std::to_string(counts.size()) +
                                " entries, the communicator has " + std::to_string(n) + " ranks");
  prefix_.resize(counts.size() + 1, 0);
  for (std::size_t i = 0; i < counts.size(); ++i)
    prefix_[i + 1] = prefix_[i] + counts[i];
}

void exchange_nonempty(CollectiveContext& ctx, int to, Bytes send_bytes, int from, Bytes recv_bytes, int t)
{
  std::vector<RequestPtr> reqs;
  if (recv_bytes > 0)
    reqs.push_back(ctx.irecv(from, recv_bytes, t));
  if (send_bytes > 0)
    reqs.push_back(ctx.isend(to, send_bytes, t));
  ctx.wait_all(reqs);
}

void exchange_with_every_rank(CollectiveContext& ctx, Bytes bytes, int t)
{
  auto each = [bytes](int) { return bytes; };
  exchange_with_every_rank(ctx, t, each, each);
}

void linear_rooted_uniform(CollectiveContext& ctx, int root, Flow flow, int t, Bytes bytes)
{
  linear_rooted(ctx, root, flow, t, [bytes](int) { return bytes; }, false);
}

Fold fold_in(CollectiveContext& ctx, Bytes total, int keeper, int t)
{
  const int me = ctx.rank();
  const int pof2 = pof2_floor(ctx.size());
  const int rem = ctx.size() - pof2;
  if (me >= 2 * rem)
    return {pof2, rem, me - rem, keeper};
  if (me % 2 != keeper) {
    ctx.send(me ^ 1, total, t);
    return {pof2, rem, -1, keeper};
  }
  ctx.recv(me ^ 1, total, t);
  return {pof2, rem, me / 2, keeper};
}

HalvingIndices rabenseifner_reduce_scatter(CollectiveContext& ctx, const Fold& f, const EvenSplit& cnts, int t)
{
  const int pof2 = f.pof2;
  const int newrank = f.newrank;
  HalvingIndices ix{0, 0, pof2};
  if (newrank == -1)
    return ix;
  for (int mask = 1; mask < pof2;) {
    const int newdst = newrank ^ mask;
    StepBytes b;
    if (newrank < newdst) {
      ix.send_idx = ix.recv_idx + pof2 / (mask * 2);
      b = {cnts.range(ix.send_idx, ix.last_idx), cnts.range(ix.recv_idx, ix.send_idx)};
    } else {
      ix.recv_idx = ix.send_idx + pof2 / (mask * 2);
      b = {cnts.range(ix.send_idx, ix.recv_idx), cnts.range(ix.recv_idx, ix.last_idx)};
    }
    const int dst = f.real(newdst);
    ctx.sendrecv(dst, b.send, dst, b.recv, t);
    ix.send_idx = ix.recv_idx;
    mask <<= 1;
    if (mask < pof2)  // the gather that follows needs last_idx as it stood before the last step
      ix.last_idx = ix.recv_idx + pof2 / mask;
  }
  return ix;
}

StepBytes rabenseifner_gather_step(HalvingIndices& ix, int newrank, int newdst, int mask, int pof2,
                                   const EvenSplit& cnts)
{
  StepBytes b;
  if (newrank < newdst) {
    if (mask != pof2 / 2)
      ix.last_idx = ix.last_idx + pof2 / (mask * 2);
    ix.recv_idx = ix.send_idx + pof2 / (mask * 2);
    b = {cnts.range(ix.send_idx, ix.recv_idx), cnts.range(ix.recv_idx, ix.last_idx)};
  } else {
    ix.recv_idx = ix.send_idx - pof2 / (mask * 2);
    b = {cnts.range(ix.send_idx, ix.last_idx), cnts.range(ix.recv_idx, ix.send_idx)};
  }
  if (newrank > newdst)
    ix.send_idx = ix.recv_idx;
  return b;
}

}  // namespace gridcast::emulator::colls
