// Collective algorithms expanded into point-to-point messages on the communicator's collective context.
//
// Each algorithm follows the MPICH code it is named after (src/mpi/coll/, MPICH 3.x), message for
// message, so that the simulated time comes from the same sequence of transfers a real run makes:
// same partners, same order, same sizes (a binomial gather forwards whole subtrees, a Bruck alltoall
// moves every block whose index has bit k set at step k...). The analysis of these algorithms is in
// Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH",
// IJHPCA 19(1), 2005; comments cite it as [TRG05].
//
// Conventions shared by all algorithms:
//  - sizes are bytes; an MPI count of elements is modelled as a count of bytes, so block splits
//    (Rabenseifner, ring allreduce) are at byte granularity;
//  - zero-size calls return at once, as MPICH does (no synchronisation either);
//  - messages to self are local copies in MPI and are never posted; where the platform gives a local
//    copy curve (gridcast:memcpy-time), the copies the library makes without a message (a rank's own
//    block, the initial sendbuf-to-recvbuf copy of a reduction) are charged as CPU work before the
//    communication, by the wrapper `copying` (docs/collectives.md, "Local copies");
//  - reduction work (CollectiveArgs::flops) is executed once, after the communication, like SMPI's
//    replayer does (its Reduce/Allreduce/... actions call the collective, then execute comp_size);
//    the wrapper `reducing` does it for every algorithm of a reducing kind;
//  - each phase has its own tag; matching is FIFO per (source, tag, context), and all ranks run the
//    collectives of a communicator in the same order, so consecutive calls cannot cross either way.
#include "gridcast/emulator/collectives.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace gridcast::emulator {

// ---------------------------------------------------------------------------------------------------
// Communicator and CollectiveContext

int Communicator::rank_of(int world_rank) const
{
  // Every collective call asks this once per rank, so a linear scan would cost O(Np^2) per call over
  // the whole communicator. MPI_COMM_WORLD maps i to i; communicators from MPI_Comm_split with equal
  // keys keep world order, so a bisection finds them. The bisection is only trusted when it lands on
  // the rank (ranks are unique), so unsorted communicators still get the right answer from the scan.
  const auto at = [&](int i) { return world_ranks[static_cast<std::size_t>(i)]; };
  if (world_rank >= 0 && world_rank < size() && at(world_rank) == world_rank)
    return world_rank;
  int lo = 0;
  int hi = size();
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (at(mid) < world_rank)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < size() && at(lo) == world_rank)
    return lo;
  auto it = std::find(world_ranks.begin(), world_ranks.end(), world_rank);
  return it == world_ranks.end() ? -1 : static_cast<int>(it - world_ranks.begin());
}

CollectiveContext::CollectiveContext(MessageBoard& board, const Communicator& comm, int world_rank,
                                     std::function<void(double)> compute_flops)
    : board_(board), comm_(comm), world_rank_(world_rank), me_(comm.rank_of(world_rank)),
      compute_(std::move(compute_flops))
{
  if (me_ < 0)
    throw std::invalid_argument("world rank " + std::to_string(world_rank) + " is not a member of communicator " +
                                std::to_string(comm.id));
}

RequestPtr CollectiveContext::isend(int to, std::uint64_t bytes, int tag)
{
  return board_.post_send(world_rank_, comm_.world_ranks.at(static_cast<std::size_t>(to)), bytes, tag,
                          comm_.coll_context, SendMode::Standard, endpoint_);
}

RequestPtr CollectiveContext::irecv(int from, std::uint64_t bytes, int tag)
{
  return board_.post_recv(world_rank_, comm_.world_ranks.at(static_cast<std::size_t>(from)), bytes, tag,
                          comm_.coll_context, endpoint_);
}

void CollectiveContext::send(int to, std::uint64_t bytes, int tag)
{
  wait(isend(to, bytes, tag));
}

void CollectiveContext::recv(int from, std::uint64_t bytes, int tag)
{
  wait(irecv(from, bytes, tag));
}

void CollectiveContext::sendrecv(int to, std::uint64_t send_bytes, int from, std::uint64_t recv_bytes, int tag)
{
  // MPIC_Sendrecv: both posted before either is waited for, so two ranks exchanging large
  // (rendezvous) messages cannot deadlock.
  RequestPtr r = irecv(from, recv_bytes, tag);
  RequestPtr s = isend(to, send_bytes, tag);
  wait(r);
  wait(s);
}

void CollectiveContext::wait(const RequestPtr& r)
{
  partner_wait_s_ += board_.wait(r);
}

void CollectiveContext::wait_all(const std::vector<RequestPtr>& rs)
{
  for (const RequestPtr& r : rs)
    wait(r);
}

void CollectiveContext::compute(double flops)
{
  if (flops > 0 && compute_)
    compute_(flops);
}

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

NodeMap::NodeMap(std::vector<int> node_of_rank, std::vector<std::uint64_t> cache_bytes_of_rank)
    : node_of_rank_(std::move(node_of_rank)), cache_bytes_of_rank_(std::move(cache_bytes_of_rank))
{
  if (node_of_rank_.size() != cache_bytes_of_rank_.size())
    throw std::invalid_argument("NodeMap: " + std::to_string(node_of_rank_.size()) + " nodes for " +
                                std::to_string(cache_bytes_of_rank_.size()) + " cache sizes");
}

std::uint64_t NodeMap::cache_bytes(int world_rank) const
{
  return cache_bytes_of_rank_.at(static_cast<std::size_t>(world_rank));
}

const std::vector<int>& NodeMap::node_ranks(const Communicator& comm, int world_rank)
{
  const int node = node_of_rank_.at(static_cast<std::size_t>(world_rank));
  auto [it, created] = node_ranks_.try_emplace({comm.id, node});
  if (created)
    for (int r = 0; r < comm.size(); ++r)
      if (node_of_rank_.at(static_cast<std::size_t>(comm.world_ranks[static_cast<std::size_t>(r)])) == node)
        it->second.push_back(r);
  return it->second;
}

std::uint64_t CollectiveContext::node_cache_bytes() const
{
  return nodes_ == nullptr ? 0 : nodes_->cache_bytes(world_rank_);
}

const std::vector<int>& CollectiveContext::node_ranks()
{
  if (nodes_ != nullptr)
    return nodes_->node_ranks(comm_, world_rank_);
  only_me_.assign(1, me_);
  return only_me_;
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

std::string_view collective_name(CollectiveKind k)
{
  // The names of the trace ops (models/call.cpp), which `--cfg gridcast/coll/<op>` also uses.
  switch (k) {
    case CollectiveKind::Barrier: return "barrier";
    case CollectiveKind::Bcast: return "bcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::Allreduce: return "allreduce";
    case CollectiveKind::Alltoall: return "alltoall";
    case CollectiveKind::Alltoallv: return "alltoallv";
    case CollectiveKind::Gather: return "gather";
    case CollectiveKind::Gatherv: return "gatherv";
    case CollectiveKind::Allgather: return "allgather";
    case CollectiveKind::Allgatherv: return "allgatherv";
    case CollectiveKind::Scatter: return "scatter";
    case CollectiveKind::Scatterv: return "scatterv";
    case CollectiveKind::ReduceScatter: return "reducescatter";
    case CollectiveKind::Scan: return "scan";
    case CollectiveKind::Exscan: return "exscan";
  }
  throw std::invalid_argument("collective_name: invalid CollectiveKind " + std::to_string(static_cast<int>(k)));
}

namespace {

using Bytes = std::uint64_t;

// ---------------------------------------------------------------------------------------------------
// MPICH's decision thresholds (MPIR_CVAR_* defaults of MPICH 3.x), in bytes unless named otherwise.

constexpr Bytes kBcastShortMsg = 12288;
constexpr Bytes kBcastLongMsg = 524288;
constexpr int kBcastMinProcs = 8;
constexpr Bytes kReduceShortMsg = 2048;
constexpr Bytes kAllreduceShortMsg = 2048;
constexpr Bytes kAllgatherShortMsg = 81920;
constexpr Bytes kAllgatherLongMsg = 524288;
constexpr Bytes kAlltoallShortMsg = 256;
constexpr Bytes kAlltoallMediumMsg = 32768;
constexpr int kAlltoallThrottle = 32;  ///< isends/irecvs in flight per batch (MPIR_CVAR_ALLTOALL_THROTTLE)
constexpr Bytes kRedScatCommutativeLongMsg = 524288;

// ---------------------------------------------------------------------------------------------------
// Tags, one per phase. They live in the collective context, so they never meet application tags.

namespace tag {
constexpr int kBarrier = 1;
constexpr int kBarrierFanIn = 2;
constexpr int kBarrierFanOut = 3;
constexpr int kBarrierNbc = 4;          ///< SMPI's ibarrier: both directions at once
constexpr int kBcast = 10;
constexpr int kBcastScatter = 11;
constexpr int kBcastAllgather = 12;
constexpr int kReduce = 20;
constexpr int kReduceFold = 21;        ///< non-power-of-two fold into the power-of-two group
constexpr int kReduceScatter = 22;     ///< Rabenseifner: recursive-halving reduce-scatter
constexpr int kReduceHandoff = 23;     ///< Rabenseifner: root outside the group takes over block 0
constexpr int kReduceGather = 24;      ///< Rabenseifner: binomial gather of the blocks to the root
constexpr int kAllreduce = 30;
constexpr int kAllreduceFold = 31;
constexpr int kAllreduceScatter = 32;  ///< reduce-scatter phase (Rabenseifner, ring)
constexpr int kAllreduceGather = 33;   ///< allgather phase (Rabenseifner, ring)
constexpr int kAllreduceUnfold = 34;
constexpr int kAllreduceNbc = 35;       ///< SMPI's iallreduce: every rank's buffer to every rank
constexpr int kAllgather = 40;
constexpr int kAllgatherv = 45;
constexpr int kAlltoall = 50;
constexpr int kAlltoallv = 55;
constexpr int kGather = 60;
constexpr int kGatherv = 65;
constexpr int kScatter = 70;
constexpr int kScatterv = 75;
constexpr int kRedScat = 80;
constexpr int kRedScatFold = 81;
constexpr int kRedScatUnfold = 82;
constexpr int kRedScatScatterv = 83;
constexpr int kRedScatNbc = 84;         ///< SMPI's ireduce_scatter: every block to its rank directly
constexpr int kScan = 90;
constexpr int kExscan = 95;
}  // namespace tag

// ---------------------------------------------------------------------------------------------------
// Small arithmetic

bool is_pow2(int n)
{
  return n > 0 && std::has_single_bit(static_cast<unsigned>(n));
}

/// Largest power of two <= n (MPICH's comm->pof2).
int pof2_floor(int n)
{
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
}

int log2_exact(int pof2)
{
  return std::countr_zero(static_cast<unsigned>(pof2));
}

/// a mod n in [0, n), also for negative a.
int wrap(int a, int n)
{
  int r = a % n;
  return r < 0 ? r + n : r;
}

/// Size of the binomial subtree rooted at relative rank v (MPICH numbering: the children of v are
/// v + m for the powers of two m below v's lowest set bit).
int subtree_size(int v, int n)
{
  return v == 0 ? n : std::min(v & -v, n - v);
}

/// `total` bytes cut into `parts` blocks, the first `total % parts` of them one byte larger
/// (MPICH's cnts[] for Rabenseifner's algorithms). O(1) per query: big communicators never pay O(Np).
struct EvenSplit {
  Bytes total;
  int parts;

  Bytes offset(int i) const
  {
    const auto p = static_cast<Bytes>(parts);
    const auto k = static_cast<Bytes>(i);
    return k * (total / p) + std::min(k, total % p);
  }
  Bytes range(int first, int last) const { return offset(last) - offset(first); }
  Bytes block(int i) const { return range(i, i + 1); }
};

/// Per-rank sizes of a v-collective: `counts` when the trace gives them, else one size for all ranks.
/// Prefix sums make range queries O(1) (the reduce-scatter needs them).
class BlockCounts {
public:
  BlockCounts(const std::vector<Bytes>& counts, int n, Bytes uniform) : n_(n), uniform_(uniform)
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
  Bytes prefix(int i) const
  {
    return prefix_.empty() ? static_cast<Bytes>(i) * uniform_ : prefix_[static_cast<std::size_t>(i)];
  }
  Bytes block(int i) const { return prefix(i + 1) - prefix(i); }
  Bytes total() const { return prefix(n_); }

private:
  int n_;
  Bytes uniform_;
  std::vector<Bytes> prefix_;
};

/// Waits for the non-empty requests of a pairwise step: zero-size v-blocks are not sent (MPICH skips them).
void exchange_nonempty(CollectiveContext& ctx, int to, Bytes send_bytes, int from, Bytes recv_bytes, int t)
{
  std::vector<RequestPtr> reqs;
  if (recv_bytes > 0)
    reqs.push_back(ctx.irecv(from, recv_bytes, t));
  if (send_bytes > 0)
    reqs.push_back(ctx.isend(to, send_bytes, t));
  ctx.wait_all(reqs);
}

// ---------------------------------------------------------------------------------------------------
// Binomial trees (MPICH numbering, relative to the root). Fan-in: receive from the children, smallest
// subtree first, then send to the parent (reduce, gather). Fan-out: receive from the parent, then
// send to the children, largest subtree first (bcast, scatter), so that with blocking sends the
// deepest branch starts first and the tree finishes in ceil(log2 n) rounds.

template <class UpBytes>
void binomial_fan_in(CollectiveContext& ctx, int root, int t, UpBytes up)
{
  const int n = ctx.size();
  const int v = wrap(ctx.rank() - root, n);
  auto real = [&](int rel) { return (rel + root) % n; };
  for (int mask = 1; mask < n; mask <<= 1) {
    if (v & mask) {
      ctx.send(real(v - mask), up(v), t);
      return;
    }
    if (int child = v | mask; child < n)
      ctx.recv(real(child), up(child), t);
  }
}

/// `skip_empty`: a zero-size message is neither sent nor expected (MPICH's scatter for bcast).
template <class DownBytes>
void binomial_fan_out(CollectiveContext& ctx, int root, int t, DownBytes down, bool skip_empty)
{
  const int n = ctx.size();
  const int v = wrap(ctx.rank() - root, n);
  auto real = [&](int rel) { return (rel + root) % n; };
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (v & mask) {
      if (Bytes b = down(v); b > 0 || not skip_empty)
        ctx.recv(real(v - mask), b, t);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (v + mask < n) {
      if (Bytes b = down(v + mask); b > 0 || not skip_empty)
        ctx.send(real(v + mask), b, t);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Barrier

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

// ---------------------------------------------------------------------------------------------------
// Bcast

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
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  if (ctx.rank() != a.root) {
    ctx.recv(a.root, a.bytes, tag::kBcast);
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < n; ++i)
    if (i != a.root)
      reqs.push_back(ctx.isend(i, a.bytes, tag::kBcast));
  ctx.wait_all(reqs);
}

// ---------------------------------------------------------------------------------------------------
// Reduce

/// Open MPI's pipelined broadcast (ompi_coll_base_bcast_intra_pipeline: the generic tree bcast of
/// coll/base on a chain of fan-out 1) with 128 KiB segments, the segment size Open MPI's fixed rules
/// before 4.0 chose for large messages on small communicators (coll_tuned_decision_fixed.c,
/// "Pipeline with 128KB segments", 1024 << 7). Open MPI 4.x's rules no longer segment by default
/// (docs/collectives.md), so it is only used when forced. Relative rank v receives from v - 1 and
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
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  if (ctx.rank() != a.root) {
    ctx.send(a.root, a.bytes, tag::kReduce);
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < n; ++i)
    if (i != a.root)
      reqs.push_back(ctx.irecv(i, a.bytes, tag::kReduce));
  ctx.wait_all(reqs);
}

/// MPIR_Reduce_intra_reduce_scatter_gather [TRG05 sec. 4.4]: fold to a power of two (odd ranks below
/// 2*rem hand their buffer to rank - 1), reduce-scatter by recursive halving, then a binomial gather
/// of the blocks to the root. If the root was folded away, newrank 0 hands it block 0 first and the
/// root plays newrank 0 in the gather.
void reduce_rabenseifner(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  const Bytes total = a.bytes;
  if (total == 0 || n == 1)
    return;
  const int me = ctx.rank();
  const int root = a.root;
  const int pof2 = pof2_floor(n);
  const int rem = n - pof2;
  const EvenSplit cnts{total, pof2};
  auto real = [&](int newr) { return newr < rem ? newr * 2 : newr + rem; };

  int newrank;
  if (me < 2 * rem) {
    if (me % 2 != 0) {
      ctx.send(me - 1, total, tag::kReduceFold);
      newrank = -1;
    } else {
      ctx.recv(me + 1, total, tag::kReduceFold);
      newrank = me / 2;
    }
  } else {
    newrank = me - rem;
  }

  int send_idx = 0;
  int recv_idx = 0;
  int last_idx = pof2;
  if (newrank != -1) {
    for (int mask = 1; mask < pof2;) {
      const int newdst = newrank ^ mask;
      const int dst = real(newdst);
      Bytes send_cnt;
      Bytes recv_cnt;
      if (newrank < newdst) {
        send_idx = recv_idx + pof2 / (mask * 2);
        send_cnt = cnts.range(send_idx, last_idx);
        recv_cnt = cnts.range(recv_idx, send_idx);
      } else {
        recv_idx = send_idx + pof2 / (mask * 2);
        send_cnt = cnts.range(send_idx, recv_idx);
        recv_cnt = cnts.range(recv_idx, last_idx);
      }
      ctx.sendrecv(dst, send_cnt, dst, recv_cnt, tag::kReduceScatter);
      send_idx = recv_idx;
      mask <<= 1;
      if (mask < pof2)  // the gather below needs last_idx as it stood before the last step
        last_idx = recv_idx + pof2 / mask;
    }
  }

  const bool root_folded = root < 2 * rem && root % 2 != 0;
  int newroot;
  if (root_folded) {
    if (me == root) {
      ctx.recv(0, cnts.block(0), tag::kReduceHandoff);
      newrank = 0;
      send_idx = 0;
      last_idx = 2;
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
    const int dst = (newdst == 0 && root_folded) ? root : real(newdst);
    const int newdst_tree_root = (newdst >> j) << j;
    const int newroot_tree_root = (newroot >> j) << j;
    Bytes send_cnt;
    Bytes recv_cnt;
    if (newrank < newdst) {
      if (mask != pof2 / 2)
        last_idx = last_idx + pof2 / (mask * 2);
      recv_idx = send_idx + pof2 / (mask * 2);
      send_cnt = cnts.range(send_idx, recv_idx);
      recv_cnt = cnts.range(recv_idx, last_idx);
    } else {
      recv_idx = send_idx - pof2 / (mask * 2);
      send_cnt = cnts.range(send_idx, last_idx);
      recv_cnt = cnts.range(recv_idx, send_idx);
    }
    if (newdst_tree_root == newroot_tree_root) {  // the partner's half holds the root: hand over, done
      ctx.send(dst, send_cnt, tag::kReduceGather);
      return;
    }
    ctx.recv(dst, recv_cnt, tag::kReduceGather);
    if (newrank > newdst)
      send_idx = recv_idx;
  }
}

// ---------------------------------------------------------------------------------------------------
// Allreduce. Non-power-of-two sizes fold as MPICH does: even ranks below 2*rem hand their buffer to
// rank + 1, sit out, and get the result back at the end.

struct Fold {
  int pof2;
  int rem;
  int newrank;  ///< -1 for a rank that sat out
  int real(int newr) const { return newr < rem ? newr * 2 + 1 : newr + rem; }
};

Fold allreduce_fold_in(CollectiveContext& ctx, Bytes total)
{
  const int me = ctx.rank();
  const int pof2 = pof2_floor(ctx.size());
  const int rem = ctx.size() - pof2;
  if (me >= 2 * rem)
    return {pof2, rem, me - rem};
  if (me % 2 == 0) {
    ctx.send(me + 1, total, tag::kAllreduceFold);
    return {pof2, rem, -1};
  }
  ctx.recv(me - 1, total, tag::kAllreduceFold);
  return {pof2, rem, me / 2};
}

void allreduce_fold_out(CollectiveContext& ctx, const Fold& f, Bytes total)
{
  const int me = ctx.rank();
  if (me >= 2 * f.rem)
    return;
  if (me % 2 != 0)
    ctx.send(me - 1, total, tag::kAllreduceUnfold);
  else
    ctx.recv(me + 1, total, tag::kAllreduceUnfold);
}

/// MPIR_Allreduce_intra_recursive_doubling [TRG05 sec. 4.5]: log2(pof2) exchanges of the whole
/// buffer, plus the fold and unfold when n is not a power of two.
void allreduce_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (a.bytes == 0 || ctx.size() == 1)
    return;
  const Fold f = allreduce_fold_in(ctx, a.bytes);
  if (f.newrank != -1) {
    for (int mask = 1; mask < f.pof2; mask <<= 1) {
      const int dst = f.real(f.newrank ^ mask);
      ctx.sendrecv(dst, a.bytes, dst, a.bytes, tag::kAllreduce);
    }
  }
  allreduce_fold_out(ctx, f, a.bytes);
}

/// MPIR_Allreduce_intra_reduce_scatter_allgather, Rabenseifner's algorithm [TRG05 sec. 4.5]:
/// reduce-scatter by recursive halving (partners at distance 1, 2, 4...; halves of the buffer), then
/// allgather by recursive doubling in reverse, plus the fold and unfold.
void allreduce_rabenseifner(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const Bytes total = a.bytes;
  if (total == 0 || ctx.size() == 1)
    return;
  const Fold f = allreduce_fold_in(ctx, total);
  if (f.newrank != -1) {
    const int pof2 = f.pof2;
    const int newrank = f.newrank;
    const EvenSplit cnts{total, pof2};
    int send_idx = 0;
    int recv_idx = 0;
    int last_idx = pof2;
    int mask = 1;
    while (mask < pof2) {
      const int newdst = newrank ^ mask;
      const int dst = f.real(newdst);
      Bytes send_cnt;
      Bytes recv_cnt;
      if (newrank < newdst) {
        send_idx = recv_idx + pof2 / (mask * 2);
        send_cnt = cnts.range(send_idx, last_idx);
        recv_cnt = cnts.range(recv_idx, send_idx);
      } else {
        recv_idx = send_idx + pof2 / (mask * 2);
        send_cnt = cnts.range(send_idx, recv_idx);
        recv_cnt = cnts.range(recv_idx, last_idx);
      }
      ctx.sendrecv(dst, send_cnt, dst, recv_cnt, tag::kAllreduceScatter);
      send_idx = recv_idx;
      mask <<= 1;
      if (mask < pof2)
        last_idx = recv_idx + pof2 / mask;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
      const int newdst = newrank ^ mask;
      const int dst = f.real(newdst);
      Bytes send_cnt;
      Bytes recv_cnt;
      if (newrank < newdst) {
        if (mask != pof2 / 2)
          last_idx = last_idx + pof2 / (mask * 2);
        recv_idx = send_idx + pof2 / (mask * 2);
        send_cnt = cnts.range(send_idx, recv_idx);
        recv_cnt = cnts.range(recv_idx, last_idx);
      } else {
        recv_idx = send_idx - pof2 / (mask * 2);
        send_cnt = cnts.range(send_idx, last_idx);
        recv_cnt = cnts.range(recv_idx, send_idx);
      }
      ctx.sendrecv(dst, send_cnt, dst, recv_cnt, tag::kAllreduceGather);
      if (newrank > newdst)
        send_idx = recv_idx;
    }
  }
  allreduce_fold_out(ctx, f, total);
}

/// Ring allreduce (Open MPI's ompi_coll_base_allreduce_intra_ring, Patarasuk & Yuan 2009): the
/// buffer in n chunks; n - 1 ring steps of reduce-scatter, then n - 1 ring steps of allgather.
void allreduce_ring(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  const int me = ctx.rank();
  const int left = wrap(me - 1, n);
  const int right = (me + 1) % n;
  const EvenSplit chunks{a.bytes, n};
  // Step i sends the chunk reduced so far to the right; after n - 1 steps rank r holds chunk r + 1.
  for (int i = 0; i < n - 1; ++i)
    ctx.sendrecv(right, chunks.block(wrap(me - i, n)), left, chunks.block(wrap(me - i - 1, n)),
                 tag::kAllreduceScatter);
  for (int i = 0; i < n - 1; ++i)
    ctx.sendrecv(right, chunks.block(wrap(me + 1 - i, n)), left, chunks.block(wrap(me - i, n)),
                 tag::kAllreduceGather);
}

// Forward: the default reduce and bcast, for allreduce's reduce_bcast and reduce-scatter's fallback.
void reduce_default(CollectiveContext& ctx, const CollectiveArgs& a);
void bcast_default(CollectiveContext& ctx, const CollectiveArgs& a);

/// A reduce to rank 0 followed by a broadcast from rank 0, each with MPICH's default choice.
void allreduce_reduce_bcast(CollectiveContext& ctx, const CollectiveArgs& a)
{
  CollectiveArgs at0 = a;
  at0.root = 0;
  reduce_default(ctx, at0);
  bcast_default(ctx, at0);
}

// ---------------------------------------------------------------------------------------------------
// Allgather (bytes = each rank's contribution)

void allgather_ring(CollectiveContext& ctx, const CollectiveArgs& a);

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

// ---------------------------------------------------------------------------------------------------
// Allgatherv (recv_counts[i] = rank i's contribution, the same array on every rank)

BlockCounts allgatherv_blocks(CollectiveContext& ctx, const CollectiveArgs& a)
{
  return BlockCounts(a.recv_counts, ctx.size(), a.bytes);
}

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

// ---------------------------------------------------------------------------------------------------
// Alltoall (bytes = size sent to each peer)

/// MPIR_Alltoall_intra_pairwise [TRG05 sec. 4.6]: n - 1 exchanges; XOR partners when n is a power of
/// two, otherwise send to rank + i and receive from rank - i.
void alltoall_pairwise(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  const int me = ctx.rank();
  const bool pow2 = is_pow2(n);
  for (int i = 1; i < n; ++i) {
    const int dst = pow2 ? me ^ i : (me + i) % n;
    const int src = pow2 ? me ^ i : wrap(me - i, n);
    ctx.sendrecv(dst, a.bytes, src, a.bytes, tag::kAlltoall);
  }
}

/// Number of block indices in [0, n) with bit `bit` set: the blocks Bruck's step moves.
Bytes blocks_with_bit(int n, int bit)
{
  const int period = 2 * bit;
  return static_cast<Bytes>((n / period) * bit + std::max(0, n % period - bit));
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

void alltoall_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  auto each = [&](int) { return a.bytes; };
  scattered_exchange(ctx, tag::kAlltoall, each, each);
}

// ---------------------------------------------------------------------------------------------------
// Alltoallv (counts[j] to rank j, recv_counts[j] from rank j; zero blocks are not sent)

struct AlltoallvSizes {
  BlockCounts to;
  BlockCounts from;
  AlltoallvSizes(CollectiveContext& ctx, const CollectiveArgs& a)
      : to(a.counts, ctx.size(), a.bytes), from(a.recv_counts, ctx.size(), a.recv_bytes != 0 ? a.recv_bytes : a.bytes)
  {
  }
};

/// Pairwise exchange as for alltoall, each step with that pair's sizes.
void alltoallv_pairwise(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const AlltoallvSizes s(ctx, a);
  const int n = ctx.size();
  const int me = ctx.rank();
  const bool pow2 = is_pow2(n);
  for (int i = 1; i < n; ++i) {
    const int dst = pow2 ? me ^ i : (me + i) % n;
    const int src = pow2 ? me ^ i : wrap(me - i, n);
    exchange_nonempty(ctx, dst, s.to.block(dst), src, s.from.block(src), tag::kAlltoallv);
  }
}

/// MPICH's default alltoallv: the scattered isend/irecv batches of alltoall_linear.
void alltoallv_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const AlltoallvSizes s(ctx, a);
  scattered_exchange(
      ctx, tag::kAlltoallv, [&](int j) { return s.to.block(j); }, [&](int j) { return s.from.block(j); });
}

// ---------------------------------------------------------------------------------------------------
// Gather / Scatter (bytes = one rank's block)

/// MPIR_Gather_intra_binomial: every subtree root forwards its whole subtree's blocks, so the root
/// receives (n - 1) blocks in ceil(log2 n) messages.
void gather_binomial(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  binomial_fan_in(ctx, a.root, tag::kGather, [&](int v) { return static_cast<Bytes>(subtree_size(v, n)) * a.bytes; });
}

void gather_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  if (ctx.rank() != a.root) {
    ctx.send(a.root, a.bytes, tag::kGather);
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < n; ++i)
    if (i != a.root)
      reqs.push_back(ctx.irecv(i, a.bytes, tag::kGather));
  ctx.wait_all(reqs);
}

/// MPIR_Gatherv_allcomm_linear: the root posts a receive per non-empty block and waits for all;
/// every other rank sends its block (bytes) if it is not empty.
void gatherv_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  const int me = ctx.rank();
  if (me != a.root) {
    if (a.bytes > 0)
      ctx.send(a.root, a.bytes, tag::kGatherv);
    return;
  }
  const BlockCounts from(a.recv_counts, n, a.recv_bytes != 0 ? a.recv_bytes : a.bytes);
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < n; ++i)
    if (i != me && from.block(i) > 0)
      reqs.push_back(ctx.irecv(i, from.block(i), tag::kGatherv));
  ctx.wait_all(reqs);
}

/// MPIR_Scatter_intra_binomial: the root sends each subtree root its whole subtree's blocks, largest
/// subtree first; (n - 1) blocks leave the root in ceil(log2 n) messages.
void scatter_binomial(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0)
    return;
  binomial_fan_out(
      ctx, a.root, tag::kScatter, [&](int v) { return static_cast<Bytes>(subtree_size(v, n)) * a.bytes; }, false);
}

void scatter_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  if (ctx.rank() != a.root) {
    ctx.recv(a.root, a.bytes, tag::kScatter);
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < n; ++i)
    if (i != a.root)
      reqs.push_back(ctx.isend(i, a.bytes, tag::kScatter));
  ctx.wait_all(reqs);
}

/// Linear scatterv from `root` with the per-rank sizes `to` (MPIR_Scatterv_allcomm_linear);
/// non-root ranks receive `mine` if it is not empty.
void scatterv_from(CollectiveContext& ctx, int root, const BlockCounts& to, Bytes mine, int t)
{
  const int n = ctx.size();
  const int me = ctx.rank();
  if (me != root) {
    if (mine > 0)
      ctx.recv(root, mine, t);
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < n; ++i)
    if (i != me && to.block(i) > 0)
      reqs.push_back(ctx.isend(i, to.block(i), t));
  ctx.wait_all(reqs);
}

/// The root sends counts[i] to rank i; rank i receives recv_bytes.
void scatterv_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  scatterv_from(ctx, a.root, BlockCounts(a.counts, ctx.size(), a.bytes), a.recv_bytes, tag::kScatterv);
}

// ---------------------------------------------------------------------------------------------------
// Reduce-scatter (recv_counts[i] = bytes rank i ends with, the same array on every rank)

BlockCounts redscat_blocks(const CollectiveContext& ctx, const CollectiveArgs& a)
{
  // MPI_Reduce_scatter_block has one count for all: recv_bytes, or the buffer split evenly.
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
  const int pof2 = pof2_floor(n);
  const int rem = n - pof2;

  int newrank;
  if (me < 2 * rem) {
    if (me % 2 == 0) {
      ctx.send(me + 1, total, tag::kRedScatFold);
      newrank = -1;
    } else {
      ctx.recv(me - 1, total, tag::kRedScatFold);
      newrank = me / 2;
    }
  } else {
    newrank = me - rem;
  }

  if (newrank != -1) {
    // newrank i answers for old ranks [old_first(i), old_first(i + 1)): its own and, below rem, its left
    // neighbour's; ranges of new blocks are ranges of old ones.
    auto old_first = [&](int i) { return i < rem ? 2 * i : i + rem; };
    auto range = [&](int first, int last) { return counts.prefix(old_first(last)) - counts.prefix(old_first(first)); };
    int send_idx = 0;
    int recv_idx = 0;
    int last_idx = pof2;
    for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
      const int newdst = newrank ^ mask;
      const int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
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
  const BlockCounts counts = redscat_blocks(ctx, a);
  if (counts.total() == 0)
    return;
  CollectiveArgs whole = a;
  whole.bytes = counts.total();
  whole.root = 0;
  reduce_default(ctx, whole);
  scatterv_from(ctx, 0, counts, counts.block(ctx.rank()), tag::kRedScatScatterv);
}

// ---------------------------------------------------------------------------------------------------
// Scan / Exscan

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

// ---------------------------------------------------------------------------------------------------
// Default choices. Each is a function of values every rank of the communicator shares (the buffer
// size of a non-v collective, the counts array where MPI requires it to be the same everywhere, the
// communicator size), so all ranks pick the same algorithm.

std::string default_bcast(Bytes bytes, int n)
{
  return bytes < kBcastShortMsg || n < kBcastMinProcs ? "binomial" : "scatter_allgather";
}

std::string default_reduce(Bytes bytes, int n)
{
  // MPICH: builtin op, more than 2 KiB and at least one element per process of the power-of-two group.
  return bytes > kReduceShortMsg && bytes >= static_cast<Bytes>(pof2_floor(n)) ? "rabenseifner" : "binomial";
}

std::string default_allreduce(Bytes bytes, int n)
{
  return bytes <= kAllreduceShortMsg || bytes < static_cast<Bytes>(pof2_floor(n)) ? "recursive_doubling"
                                                                                    : "rabenseifner";
}

std::string default_allgather(Bytes bytes, int n)
{
  const Bytes total = bytes * static_cast<Bytes>(n);
  if (total < kAllgatherLongMsg && is_pow2(n))
    return "recursive_doubling";
  return total < kAllgatherShortMsg ? "bruck" : "ring";
}

std::string default_alltoall(Bytes bytes, int n)
{
  if (bytes <= kAlltoallShortMsg && n >= 8)
    return "bruck";
  return bytes <= kAlltoallMediumMsg ? "linear" : "pairwise";
}

std::string default_reduce_scatter(const CollectiveArgs& a, int n)
{
  const Bytes uniform = a.recv_bytes != 0 ? a.recv_bytes : a.bytes / static_cast<Bytes>(n);
  const Bytes total = BlockCounts(a.recv_counts, n, uniform).total();
  return total < kRedScatCommutativeLongMsg ? "recursive_halving" : "pairwise";
}

void reduce_default(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (default_reduce(a.bytes, ctx.size()) == "rabenseifner")
    reduce_rabenseifner(ctx, a);
  else
    reduce_binomial(ctx, a);
}

void bcast_default(CollectiveContext& ctx, const CollectiveArgs& a)
{
  if (default_bcast(a.bytes, ctx.size()) == "scatter_allgather")
    bcast_scatter_allgather(ctx, a);
  else
    bcast_binomial(ctx, a);
}

// ---------------------------------------------------------------------------------------------------
// SMPI 3.32's default algorithms: what `smpirun` runs with smpi/coll-selector:default (its default),
// from src/smpi/colls/smpi_default_selector.cpp and the flat "nbc" algorithms of smpi_nbc_impl.cpp,
// which post every message at once. CollectiveSelector::Smpi chooses them (select_smpi below), so that
// gridcast and SMPI exchange the same messages when they are compared. SMPI posts empty messages too:
// these algorithms do, except where a whole call is empty (as everywhere in gridcast).

/// barrier__ompi_basic_linear: every rank sends an empty message to rank 0 and waits for its reply;
/// rank 0 receives them all, then replies to all (2 (n - 1) messages through rank 0).
void barrier_linear(CollectiveContext& ctx, const CollectiveArgs&)
{
  const int n = ctx.size();
  if (n == 1)
    return;
  if (ctx.rank() != 0) {
    ctx.send(0, 0, tag::kBarrierFanIn);
    ctx.recv(0, 0, tag::kBarrierFanOut);
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 1; i < n; ++i)
    reqs.push_back(ctx.irecv(i, 0, tag::kBarrierFanIn));
  ctx.wait_all(reqs);
  reqs.clear();
  for (int i = 1; i < n; ++i)
    reqs.push_back(ctx.isend(i, 0, tag::kBarrierFanOut));
  ctx.wait_all(reqs);
}

/// allreduce__default: SMPI's flat reduce to rank 0 (ireduce: rank 0 posts n - 1 receives at once),
/// then a binomial broadcast from rank 0 (bcast__binomial_tree, the same tree as MPICH's).
void allreduce_linear_reduce_bcast(CollectiveContext& ctx, const CollectiveArgs& a)
{
  CollectiveArgs at0 = a;
  at0.root = 0;
  reduce_linear(ctx, at0);
  bcast_binomial(ctx, at0);
}

/// One round in which this rank sends `bytes` to every other rank and receives as many from each, all
/// requests posted at once (the flat nbc algorithms of SMPI's smpi_nbc_impl.cpp).
void exchange_with_every_rank(CollectiveContext& ctx, std::uint64_t bytes, int tag)
{
  const int n = ctx.size();
  const int me = ctx.rank();
  std::vector<RequestPtr> reqs;
  for (int other = 0; other < n; ++other) {
    if (other == me)
      continue;
    reqs.push_back(ctx.isend(other, bytes, tag));
    reqs.push_back(ctx.irecv(other, bytes, tag));
  }
  ctx.wait_all(reqs);
}

/// iallgather: every rank sends its block to every other rank and receives theirs, all at once.
void allgather_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  exchange_with_every_rank(ctx, a.bytes, tag::kAllgather);
}

/// alltoall__basic_linear (Open MPI's, as in SMPI): receives posted from rank + 1, rank + 2, ...,
/// sends to rank - 1, rank - 2, ..., all at once (MPICH's `linear` throttles them by 32).
void alltoall_basic_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  const int me = ctx.rank();
  std::vector<RequestPtr> reqs;
  for (int i = 1; i < n; ++i)
    reqs.push_back(ctx.irecv((me + i) % n, a.bytes, tag::kAlltoall));
  for (int i = 1; i < n; ++i)
    reqs.push_back(ctx.isend(wrap(me - i, n), a.bytes, tag::kAlltoall));
  ctx.wait_all(reqs);
}

/// ialltoallv: receives from every other rank in rank order, then sends to every other rank in rank
/// order, all at once; empty blocks are sent as empty messages.
void alltoallv_basic_linear(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const AlltoallvSizes s(ctx, a);
  const int n = ctx.size();
  const int me = ctx.rank();
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < n; ++i)
    if (i != me)
      reqs.push_back(ctx.irecv(i, s.from.block(i), tag::kAlltoallv));
  for (int i = 0; i < n; ++i)
    if (i != me)
      reqs.push_back(ctx.isend(i, s.to.block(i), tag::kAlltoallv));
  ctx.wait_all(reqs);
}

/// reduce_scatter__default with equal blocks: SMPI's flat reduce of the whole buffer to rank 0, then a
/// flat scatterv of the blocks (iscatterv posts every block, empty ones included).
void redscat_linear_reduce_scatterv(CollectiveContext& ctx, const CollectiveArgs& a)
{
  const BlockCounts counts = redscat_blocks(ctx, a);
  if (counts.total() == 0)
    return;
  CollectiveArgs whole = a;
  whole.bytes = counts.total();
  whole.root = 0;
  reduce_linear(ctx, whole);
  const int n = ctx.size();
  if (ctx.rank() != 0) {
    ctx.recv(0, counts.block(ctx.rank()), tag::kRedScatScatterv);
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 1; i < n; ++i)
    reqs.push_back(ctx.isend(i, counts.block(i), tag::kRedScatScatterv));
  ctx.wait_all(reqs);
}

/// SMPI's scan and exscan (smpi_coll.cpp): every rank receives the buffer of every lower rank and
/// sends its own to every higher rank, all at once (n (n - 1) / 2 messages, one round).
void prefix_direct(CollectiveContext& ctx, const CollectiveArgs& a, int t)
{
  const int n = ctx.size();
  if (a.bytes == 0 || n == 1)
    return;
  const int me = ctx.rank();
  std::vector<RequestPtr> reqs;
  for (int other = 0; other < me; ++other)
    reqs.push_back(ctx.irecv(other, a.bytes, t));
  for (int other = me + 1; other < n; ++other)
    reqs.push_back(ctx.isend(other, a.bytes, t));
  ctx.wait_all(reqs);
}
void scan_direct(CollectiveContext& ctx, const CollectiveArgs& a) { prefix_direct(ctx, a, tag::kScan); }
void exscan_direct(CollectiveContext& ctx, const CollectiveArgs& a) { prefix_direct(ctx, a, tag::kExscan); }

// SMPI 3.32's nonblocking barrier, allreduce and reduce-scatter (smpi_nbc_impl.cpp) differ from the
// blocking defaults above: every message of the operation is posted at the call, none waits for another.
// CollectiveRegistry::select_nonblocking chooses them under CollectiveSelector::Smpi.

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
  const int me = ctx.rank();
  std::vector<RequestPtr> reqs;
  for (int other = 0; other < n; ++other) {
    if (other == me)
      continue;
    reqs.push_back(ctx.isend(other, counts.block(other), tag::kRedScatNbc));
    reqs.push_back(ctx.irecv(other, counts.block(me), tag::kRedScatNbc));
  }
  ctx.wait_all(reqs);
}

/// alltoall__default = alltoall__ompi: Open MPI 4.1's decision table on (n, bytes per destination), as
/// SMPI 3.32 carries it. Open MPI's "linear_sync" and "two_proc" are SMPI's basic_linear.
std::string smpi_alltoall(Bytes bytes, int n)
{
  struct Step {
    Bytes below;  ///< this algorithm while bytes < below
    const char* algorithm;
  };
  struct Row {
    int n_below;  ///< this row while n < n_below (n == 2 has its own row)
    std::vector<Step> steps;
  };
  constexpr Bytes kAny = std::numeric_limits<Bytes>::max();
  static const char* const L = "basic_linear";
  static const char* const P = "pairwise";
  static const char* const B = "bruck";
  static const std::vector<Step> two{{2, P},     {4, L},      {16, P},      {64, L},  {256, P},
                                     {4096, L},  {32768, P},  {1048576, L}, {kAny, P}};
  static const std::vector<Row> table{
      {8, {{524288, L}, {1048576, P}, {kAny, L}}},
      {16, {{kAny, L}}},
      {32, {{4, L}, {512, B}, {kAny, L}}},
      {64, {{512, B}, {kAny, L}}},
      {128, {{1024, B}, {262144, L}, {kAny, P}}},
      {256, {{1024, B}, {262144, L}, {kAny, P}}},
      {512, {{1024, B}, {32768, L}, {kAny, P}}},
      {1024, {{512, B}, {262144, L}, {kAny, P}}},
      {2048, {{512, B}, {kAny, L}}},
      {4096, {{1024, B}, {kAny, L}}},
      {std::numeric_limits<int>::max(), {{2048, B}, {kAny, L}}},
  };
  const std::vector<Step>* steps = &table.back().steps;
  if (n == 2) {
    steps = &two;
  } else {
    for (const Row& row : table) {
      if (n < row.n_below) {
        steps = &row.steps;
        break;
      }
    }
  }
  for (const Step& s : *steps)
    if (bytes < s.below)
      return s.algorithm;
  return steps->back().algorithm;
}

/// SMPI 3.32's default selector. Only alltoall depends on the size; reduce-scatter on whether the
/// blocks are equal (SMPI hands unequal ones to its MPICH reduce-scatter, here MPICH's rule).
std::string select_smpi(CollectiveKind kind, const CollectiveArgs& args, int n)
{
  using K = CollectiveKind;
  switch (kind) {
    case K::Barrier: return "linear";
    case K::Bcast: return "binomial";
    case K::Reduce: return "linear";
    case K::Allreduce: return "linear_reduce_bcast";
    case K::Allgather: return "linear";
    case K::Allgatherv: return "linear";
    case K::Alltoall: return smpi_alltoall(args.bytes, n);
    case K::Alltoallv: return "basic_linear";
    case K::Gather: return "linear";
    case K::Gatherv: return "linear";
    case K::Scatter: return "linear";
    case K::Scatterv: return "linear";
    case K::ReduceScatter: {
      const bool equal = std::adjacent_find(args.recv_counts.begin(), args.recv_counts.end(),
                                            std::not_equal_to<>()) == args.recv_counts.end();
      return equal ? "linear_reduce_scatterv" : default_reduce_scatter(args, n);
    }
    case K::Scan: return "direct";
    case K::Exscan: return "direct";
  }
  throw std::invalid_argument("select: invalid CollectiveKind " + std::to_string(static_cast<int>(kind)));
}

using AlgorithmFn = void (*)(CollectiveContext&, const CollectiveArgs&);

/// A reducing algorithm: the communication, then the rank's reduction work (SMPI replay order).
CollectiveAlgorithm reducing(AlgorithmFn fn)
{
  return [fn](CollectiveContext& ctx, const CollectiveArgs& a) {
    fn(ctx, a);
    ctx.compute(a.flops);
  };
}

/// Bytes the library copies locally (no message) on this rank before an algorithm's communication.
using CopyBytesFn = Bytes (*)(const CollectiveContext&, const CollectiveArgs&);

/// Bytes of one communicator rank's send and receive buffers in this call (a temporary buffer where the
/// library reduces into one): the data the rank touches, summed over a node's ranks by the cold-copy rule.
/// Fields of a v-collective that only the calling rank knows (its counts) stand for its node-mates' too.
using TouchedBytesFn = Bytes (*)(const CollectiveContext&, const CollectiveArgs&, int rank);

/// An algorithm preceded by its local copy (CollectiveContext::local_copy; free without a copy rate).
/// MPICH and Open MPI make these copies first ("make local copy first" in the pairwise alltoall, the
/// sendbuf-to-recvbuf copy that opens Rabenseifner), so the copy delays the rank's first message.
/// Cold-copy rule (docs/collectives.md, "Cold copies"): where the node's last-level cache is known and
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

// What each collective's buffers hold, per communicator rank (TouchedBytesFn):
Bytes sum_or(const std::vector<std::uint64_t>& v, Bytes each, int n)
{
  if (v.empty())
    return each * static_cast<Bytes>(n);
  Bytes total = 0;
  for (std::uint64_t b : v)
    total += b;
  return total;
}
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

// What each collective copies locally, per rank (docs/collectives.md, "Local copies"):
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

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Registry

CollectiveRegistry::CollectiveRegistry()
{
  using K = CollectiveKind;
  // `copying(bytes, touched, fn)`: the local copy the library makes before the messages (free unless
  // the platform gives a copy rate; cold past the node's cache); bcast, barrier, scan and exscan are not
  // charged one.
  algorithms_[K::Barrier] = {{"dissemination", barrier_dissemination}, {"binomial", barrier_binomial}};
  algorithms_[K::Bcast] = {
      {"binomial", bcast_binomial}, {"scatter_allgather", bcast_scatter_allgather}, {"linear", bcast_linear}};
  algorithms_[K::Bcast].emplace("pipeline", bcast_pipeline);  // Open MPI's, 128 KiB segments
  algorithms_[K::Reduce] = {{"binomial", copying(copy_whole_buffer, touched_two_buffers, reducing(reduce_binomial))},
                            {"linear", copying(copy_root_buffer, touched_root_two_buffers, reducing(reduce_linear))},
                            {"rabenseifner", copying(copy_whole_buffer, touched_two_buffers, reducing(reduce_rabenseifner))}};
  algorithms_[K::Allreduce] = {
      {"recursive_doubling", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_recursive_doubling))},
      {"rabenseifner", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_rabenseifner))},
      {"ring", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_ring))},
      {"reduce_bcast", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_reduce_bcast))}};
  algorithms_[K::Allgather] = {{"recursive_doubling", copying(copy_own_block, touched_allgather, allgather_recursive_doubling)},
                               {"ring", copying(copy_own_block, touched_allgather, allgather_ring)},
                               {"bruck", copying(copy_own_block, touched_allgather, allgather_bruck)}};
  algorithms_[K::Allgatherv] = {{"ring", copying(copy_own_allgatherv_block, touched_allgatherv, allgatherv_ring)},
                                {"linear", copying(copy_own_allgatherv_block, touched_allgatherv, allgatherv_linear)}};
  algorithms_[K::Alltoall] = {{"pairwise", copying(copy_own_block, touched_alltoall, alltoall_pairwise)},
                              {"bruck", copying(copy_own_block, touched_alltoall, alltoall_bruck)},
                              {"linear", copying(copy_own_block, touched_alltoall, alltoall_linear)}};
  algorithms_[K::Alltoallv] = {{"pairwise", copying(copy_own_v_block, touched_alltoallv, alltoallv_pairwise)},
                               {"linear", copying(copy_own_v_block, touched_alltoallv, alltoallv_linear)}};
  algorithms_[K::Gather] = {{"binomial", copying(copy_root_block, touched_gather, gather_binomial)},
                            {"linear", copying(copy_root_block, touched_gather, gather_linear)}};
  algorithms_[K::Gatherv] = {{"linear", copying(copy_root_block, touched_gatherv, gatherv_linear)}};
  algorithms_[K::Scatter] = {{"binomial", copying(copy_root_block, touched_scatter, scatter_binomial)},
                             {"linear", copying(copy_root_block, touched_scatter, scatter_linear)}};
  algorithms_[K::Scatterv] = {{"linear", copying(copy_root_v_block, touched_scatterv, scatterv_linear)}};
  algorithms_[K::ReduceScatter] = {
      {"recursive_halving", copying(copy_redscat_total, touched_redscat, reducing(redscat_recursive_halving))},
      {"pairwise", copying(copy_redscat_own_block, touched_redscat, reducing(redscat_pairwise))},
      {"reduce_scatterv", copying(copy_redscat_total, touched_redscat, reducing(redscat_reduce_scatterv))}};
  algorithms_[K::Scan] = {{"linear", reducing(scan_linear)}, {"recursive_doubling", reducing(scan_recursive_doubling)}};
  algorithms_[K::Exscan] = {{"linear", reducing(exscan_linear)},
                            {"recursive_doubling", reducing(exscan_recursive_doubling)}};
  // SMPI 3.32's defaults (CollectiveSelector::Smpi)
  algorithms_[K::Barrier].emplace("linear", barrier_linear);
  algorithms_[K::Allreduce].emplace("linear_reduce_bcast",
                                    copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_linear_reduce_bcast)));
  algorithms_[K::Allgather].emplace("linear", copying(copy_own_block, touched_allgather, allgather_linear));
  algorithms_[K::Alltoall].emplace("basic_linear", copying(copy_own_block, touched_alltoall, alltoall_basic_linear));
  algorithms_[K::Alltoallv].emplace("basic_linear", copying(copy_own_v_block, touched_alltoallv, alltoallv_basic_linear));
  algorithms_[K::ReduceScatter].emplace("linear_reduce_scatterv",
                                        copying(copy_redscat_total_at_0, touched_redscat, reducing(redscat_linear_reduce_scatterv)));
  algorithms_[K::Scan].emplace("direct", reducing(scan_direct));
  algorithms_[K::Exscan].emplace("direct", reducing(exscan_direct));
  // SMPI 3.32's nonblocking ones where they differ from its blocking defaults (select_nonblocking)
  algorithms_[K::Barrier].emplace("nbc", barrier_nbc);
  algorithms_[K::Allreduce].emplace("nbc", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_nbc)));
  algorithms_[K::ReduceScatter].emplace("nbc", copying(copy_redscat_own_block, touched_redscat, reducing(redscat_nbc)));
}

const CollectiveAlgorithm* CollectiveRegistry::find(CollectiveKind kind, const std::string& name) const
{
  auto k = algorithms_.find(kind);
  if (k == algorithms_.end())
    return nullptr;
  auto a = k->second.find(name);
  return a == k->second.end() ? nullptr : &a->second;
}

std::vector<std::string> CollectiveRegistry::names(CollectiveKind kind) const
{
  std::vector<std::string> out;
  if (auto k = algorithms_.find(kind); k != algorithms_.end())
    for (const auto& [name, algo] : k->second)
      out.push_back(name);
  return out;
}

std::string CollectiveRegistry::select(CollectiveKind kind, const CollectiveArgs& args, int comm_size) const
{
  if (comm_size < 1)
    throw std::invalid_argument("select: communicator size " + std::to_string(comm_size));
  using K = CollectiveKind;
  switch (kind) {
    case K::Barrier: return "dissemination";
    case K::Bcast: return default_bcast(args.bytes, comm_size);
    case K::Reduce: return default_reduce(args.bytes, comm_size);
    case K::Allreduce: return default_allreduce(args.bytes, comm_size);
    case K::Allgather: return default_allgather(args.bytes, comm_size);
    case K::Allgatherv: return "ring";
    case K::Alltoall: return default_alltoall(args.bytes, comm_size);
    case K::Alltoallv: return "linear";  // MPICH: scattered isend/irecv, the sizes are not shared
    case K::Gather: return "binomial";
    case K::Gatherv: return "linear";
    case K::Scatter: return "binomial";
    case K::Scatterv: return "linear";
    case K::ReduceScatter: return default_reduce_scatter(args, comm_size);
    case K::Scan: return "recursive_doubling";
    case K::Exscan: return "recursive_doubling";
  }
  throw std::invalid_argument("select: invalid CollectiveKind " + std::to_string(static_cast<int>(kind)));
}


// ---------------------------------------------------------------------------------------------------
// Open MPI 4.1's selection (`--cfg gridcast/coll-selector:openmpi-4.1`, docs/collectives.md): the fixed
// decision rules of its tuned component (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c of 4.1,
// used while coll_tuned_use_dynamic_rules is false, the default), for the commutative reductions a
// trace records. Each Open MPI algorithm maps to the gridcast algorithm that moves the same bytes in
// the same steps:
//   allreduce 3 recursive doubling -> recursive_doubling; 4 ring -> ring; 5 segmented ring -> ring
//   (the fixed rules pass segment size 0, with which Open MPI runs the plain ring); 6 Rabenseifner ->
//   rabenseifner; 1 basic linear and 2 non-overlapping (a reduce, then a bcast) -> reduce_bcast.
//   alltoall 1 linear and 4 linear with sync -> linear; 2 pairwise and 5 two-proc -> pairwise;
//   3 modified Bruck -> bruck.
// Other collectives keep the MPICH choice of select().

namespace {

/// coll_tuned_decision_fixed.c (4.1), ompi_coll_tuned_allreduce_intra_dec_fixed, commutative branch.
int openmpi41_allreduce_rule(Bytes total, int n)
{
  if (n < 4)
    return total < 8 ? 4 : total < 4096 ? 3 : total < 8192 ? 4 : total < 16384 ? 3 : total < 65536 ? 4
         : total < 262144 ? 5 : 6;
  if (n < 8)
    return total < 16 ? 4 : total < 8192 ? 3 : 6;
  if (n < 16)
    return total < 8192 ? 3 : 6;
  if (n < 32)
    return total < 64 ? 5 : total < 4096 ? 3 : 6;
  if (n < 64)
    return total < 128 ? 5 : 6;
  if (n < 128)
    return total < 262144 ? 3 : 6;
  if (n < 256)
    return total < 131072 ? 2 : total < 262144 ? 3 : 6;
  if (n < 512)
    return total < 4096 ? 2 : 6;
  if (n < 2048)
    return total < 2048 ? 2 : total < 16384 ? 3 : 6;
  if (n < 4096)
    return total < 2048 ? 2 : total < 4096 ? 5 : total < 16384 ? 3 : 6;
  return total < 2048 ? 2 : total < 16384 ? 5 : total < 32768 ? 3 : 6;
}

/// ompi_coll_tuned_alltoall_intra_dec_fixed (4.1): `block` is one peer's block (dsize x scount).
int openmpi41_alltoall_rule(Bytes block, int n)
{
  if (n == 2)
    return block < 2 ? 2 : block < 4 ? 5 : block < 16 ? 2 : block < 64 ? 5 : block < 256 ? 2 : block < 4096 ? 5
         : block < 32768 ? 2 : block < 262144 ? 4 : block < 1048576 ? 5 : 2;
  if (n < 8)
    return block < 8192 ? 4 : block < 16384 ? 1 : block < 65536 ? 4 : block < 524288 ? 1 : block < 1048576 ? 2 : 1;
  if (n < 16)
    return block < 262144 ? 4 : 1;
  if (n < 32)
    return block < 4 ? 4 : block < 512 ? 3 : block < 8192 ? 4 : block < 32768 ? 1 : block < 262144 ? 4
         : block < 524288 ? 1 : 4;
  if (n < 64)
    return block < 512 ? 3 : block < 524288 ? 1 : 4;
  if (n < 128)
    return block < 1024 ? 3 : block < 2048 ? 1 : block < 4096 ? 4 : block < 262144 ? 1 : 2;
  if (n < 256)
    return block < 1024 ? 3 : block < 2048 ? 4 : block < 262144 ? 1 : 2;
  if (n < 512)
    return block < 1024 ? 3 : block < 8192 ? 4 : block < 32768 ? 1 : 2;
  if (n < 1024)
    return block < 512 ? 3 : block < 8192 ? 4 : block < 16384 ? 1 : block < 131072 ? 4 : block < 262144 ? 1 : 2;
  if (n < 2048)
    return block < 512 ? 3 : block < 1024 ? 4 : block < 2048 ? 1 : block < 16384 ? 4 : block < 262144 ? 1 : 4;
  if (n < 4096)
    return block < 1024 ? 3 : block < 4096 ? 4 : block < 8192 ? 1 : block < 131072 ? 4 : 1;
  return block < 2048 ? 3 : block < 8192 ? 4 : block < 16384 ? 1 : block < 32768 ? 4 : block < 65536 ? 1 : 4;
}

}  // namespace

std::string CollectiveRegistry::select_openmpi41(CollectiveKind kind, const CollectiveArgs& args, int comm_size) const
{
  if (comm_size < 1)
    throw std::invalid_argument("select_openmpi41: communicator size " + std::to_string(comm_size));
  if (kind == CollectiveKind::Allreduce) {
    switch (openmpi41_allreduce_rule(args.bytes, comm_size)) {
      case 1:
      case 2: return "reduce_bcast";
      case 3: return "recursive_doubling";
      case 4:
      case 5: return "ring";
      default: return "rabenseifner";
    }
  }
  if (kind == CollectiveKind::Alltoall) {
    switch (openmpi41_alltoall_rule(args.bytes, comm_size)) {
      case 2:
      case 5: return "pairwise";
      case 3: return "bruck";
      default: return "linear";
    }
  }
  return select(kind, args, comm_size);
}

std::string CollectiveRegistry::select(CollectiveKind kind, const CollectiveArgs& args, int comm_size,
                                       CollectiveSelector selector) const
{
  switch (selector) {
  case CollectiveSelector::Mpich:
    return select(kind, args, comm_size);
  case CollectiveSelector::OpenMpi41:
    return select_openmpi41(kind, args, comm_size);
  case CollectiveSelector::Smpi:
    break;
  }
  if (comm_size < 1)
    throw std::invalid_argument("select: communicator size " + std::to_string(comm_size));
  return select_smpi(kind, args, comm_size);
}

std::string CollectiveRegistry::select_nonblocking(CollectiveKind kind, const CollectiveArgs& args, int comm_size,
                                                   CollectiveSelector selector) const
{
  if (selector == CollectiveSelector::Smpi && comm_size >= 1 && kind == CollectiveKind::Bcast)
    return "linear";
  if (selector == CollectiveSelector::Smpi && comm_size >= 1 && kind == CollectiveKind::Alltoall)
    return "basic_linear";
  if (selector == CollectiveSelector::Smpi && comm_size >= 1 &&
      (kind == CollectiveKind::Barrier || kind == CollectiveKind::Allreduce || kind == CollectiveKind::ReduceScatter))
    return "nbc";
  return select(kind, args, comm_size, selector);
}

std::string_view collective_selector_name(CollectiveSelector selector)
{
  switch (selector) {
  case CollectiveSelector::Mpich:
    return "mpich";
  case CollectiveSelector::Smpi:
    return "smpi";
  case CollectiveSelector::OpenMpi41:
    return "openmpi-4.1";
  }
  throw std::invalid_argument("collective_selector_name: unknown selector");
}

}  // namespace gridcast::emulator
