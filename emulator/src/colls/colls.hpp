// What the collective algorithms of emulator/src/colls/ share: MPICH's thresholds, the tags of every
// phase, small arithmetic, the message patterns several collectives are built from, and the declarations
// of every algorithm, which registry.cpp registers. One file per collective holds its algorithms
// (allreduce.cpp, bcast.cpp...), one per library its selection rules (select_mpich.cpp, select_smpi.cpp,
// select_openmpi.cpp), as SimGrid's src/smpi/colls/ does.
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
//    communication, by the wrapper `copying` (local_copy.cpp; docs/reference/collectives.md, "Local copies");
//  - reduction work (CollectiveArgs::flops) is executed once, after the communication, like SMPI's
//    replayer does (its Reduce/Allreduce/... actions call the collective, then execute comp_size);
//    the wrapper `reducing` does it for every algorithm of a reducing kind;
//  - each phase has its own tag; matching is FIFO per (source, tag, context), and all ranks run the
//    collectives of a communicator in the same order, so consecutive calls cannot cross either way.
#pragma once

#include "gridcast/emulator/collectives.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace gridcast::emulator::colls {

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
// Tags, one per phase. They live in the collective context, so they never meet application tags; they
// stay together here so that no two phases can share one by accident.

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

inline bool is_pow2(int n)
{
  return n > 0 && std::has_single_bit(static_cast<unsigned>(n));
}

/// Largest power of two <= n (MPICH's comm->pof2).
inline int pof2_floor(int n)
{
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
}

inline int log2_exact(int pof2)
{
  return std::countr_zero(static_cast<unsigned>(pof2));
}

/// a mod n in [0, n), also for negative a.
inline int wrap(int a, int n)
{
  int r = a % n;
  return r < 0 ? r + n : r;
}

/// Size of the binomial subtree rooted at relative rank v (MPICH numbering: the children of v are
/// v + m for the powers of two m below v's lowest set bit).
inline int subtree_size(int v, int n)
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
  BlockCounts(const std::vector<Bytes>& counts, int n, Bytes uniform);
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

// ---------------------------------------------------------------------------------------------------
// Message patterns several collectives share (patterns.cpp, templates here)

/// Waits for the non-empty requests of a pairwise step: zero-size v-blocks are not sent (MPICH skips them).
void exchange_nonempty(CollectiveContext& ctx, int to, Bytes send_bytes, int from, Bytes recv_bytes, int t);

/// One round in which this rank sends `to(other)` bytes to every other rank and receives `from(other)`
/// from each, all requests posted at once, a send and a receive per rank in rank order (the flat nbc
/// algorithms of SMPI's smpi_nbc_impl.cpp).
template <class SendBytes, class RecvBytes>
void exchange_with_every_rank(CollectiveContext& ctx, int t, SendBytes to, RecvBytes from)
{
  const int n = ctx.size();
  const int me = ctx.rank();
  std::vector<RequestPtr> reqs;
  for (int other = 0; other < n; ++other) {
    if (other == me)
      continue;
    reqs.push_back(ctx.isend(other, to(other), t));
    reqs.push_back(ctx.irecv(other, from(other), t));
  }
  ctx.wait_all(reqs);
}

/// exchange_with_every_rank of the same `bytes` both ways with every rank.
void exchange_with_every_rank(CollectiveContext& ctx, Bytes bytes, int t);

/// A peer and the bytes of the message exchanged with it.
struct PeerBytes {
  int peer;
  Bytes bytes;
};

/// A flat round: `recvs` receives (the i-th from recv_at(i)), then `sends` sends (the i-th to
/// send_at(i)), all posted before any is waited for; empty messages are posted too (SMPI's flat
/// algorithms: alltoall basic_linear, ialltoallv, scan direct).
template <class RecvAt, class SendAt>
void receive_all_then_send_all(CollectiveContext& ctx, int t, int recvs, RecvAt recv_at, int sends, SendAt send_at)
{
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < recvs; ++i) {
    const PeerBytes p = recv_at(i);
    reqs.push_back(ctx.irecv(p.peer, p.bytes, t));
  }
  for (int i = 0; i < sends; ++i) {
    const PeerBytes p = send_at(i);
    reqs.push_back(ctx.isend(p.peer, p.bytes, t));
  }
  ctx.wait_all(reqs);
}

/// Which way the data of a linear (flat) rooted collective flows.
enum class Flow { ToRoot, FromRoot };

/// A flat rooted collective: the root posts a message with every other rank at once (irecv or isend
/// each, ascending rank order, then waits for all); every other rank exchanges its one message with the
/// root, blocking. `block(i)`: the bytes of rank i's message. `skip_empty`: an empty block is neither
/// sent nor expected (MPICH's v-collectives); otherwise empty messages are posted (SMPI's).
template <class BlockBytes>
void linear_rooted(CollectiveContext& ctx, int root, Flow flow, int t, BlockBytes block, bool skip_empty)
{
  const int me = ctx.rank();
  const bool to_root = flow == Flow::ToRoot;
  if (me != root) {
    if (const Bytes b = block(me); b > 0 || not skip_empty) {
      if (to_root)
        ctx.send(root, b, t);
      else
        ctx.recv(root, b, t);
    }
    return;
  }
  std::vector<RequestPtr> reqs;
  for (int i = 0; i < ctx.size(); ++i)
    if (const Bytes b = block(i); i != root && (b > 0 || not skip_empty))
      reqs.push_back(to_root ? ctx.irecv(i, b, t) : ctx.isend(i, b, t));
  ctx.wait_all(reqs);
}

/// linear_rooted of the same `bytes` for every rank, empty messages included.
void linear_rooted_uniform(CollectiveContext& ctx, int root, Flow flow, int t, Bytes bytes);

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

// The power-of-two group of MPICH's reductions on other sizes: the first 2*rem ranks pair up (rank and
// rank ^ 1), one of each pair hands its whole buffer to the other and sits out.

struct Fold {
  int pof2;
  int rem;
  int newrank;  ///< -1 for a rank that sat out
  int keeper;   ///< parity of the pair's rank that stays in: 1 in allreduce and reduce-scatter, 0 in reduce
  /// The rank of new rank `newr` in the communicator.
  int real(int newr) const { return newr < rem ? newr * 2 + keeper : newr + rem; }
};

/// The fold: the rank of each pair whose parity is not `keeper` sends `total` bytes to the other.
Fold fold_in(CollectiveContext& ctx, Bytes total, int keeper, int t);

/// Rabenseifner's index arithmetic on the pof2 blocks of an EvenSplit (MPICH's send_idx, recv_idx and
/// last_idx), shared by the reduce and the allreduce [TRG05 sec. 4.4, 4.5].
struct HalvingIndices {
  int send_idx = 0;
  int recv_idx = 0;
  int last_idx;
};

struct StepBytes {
  Bytes send;
  Bytes recv;
};

/// Recursive-halving reduce-scatter among the power-of-two group, partners at distance 1, 2, 4...:
/// each step exchanges the half of the current range the partner is responsible for. Returns the
/// indices as they stand for the allgather or gather that follows.
HalvingIndices rabenseifner_reduce_scatter(CollectiveContext& ctx, const Fold& f, const EvenSplit& cnts, int t);

/// The sizes of one step, at distance `mask`, of the recursive-doubling (all)gather that undoes
/// rabenseifner_reduce_scatter, and the indices moved on past it.
StepBytes rabenseifner_gather_step(HalvingIndices& ix, int newrank, int newdst, int mask, int pof2,
                                   const EvenSplit& cnts);

// ---------------------------------------------------------------------------------------------------
// The algorithms, one file per collective. Every one has the CollectiveAlgorithm signature.

using AlgorithmFn = void (*)(CollectiveContext&, const CollectiveArgs&);

// barrier.cpp
void barrier_dissemination(CollectiveContext& ctx, const CollectiveArgs& a);
void barrier_binomial(CollectiveContext& ctx, const CollectiveArgs& a);
void barrier_linear(CollectiveContext& ctx, const CollectiveArgs& a);
// bcast.cpp
void bcast_binomial(CollectiveContext& ctx, const CollectiveArgs& a);
void bcast_scatter_allgather(CollectiveContext& ctx, const CollectiveArgs& a);
void bcast_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void bcast_pipeline(CollectiveContext& ctx, const CollectiveArgs& a);
/// MPICH's default choice of broadcast (default_bcast), run.
void bcast_default(CollectiveContext& ctx, const CollectiveArgs& a);
// reduce.cpp
void reduce_binomial(CollectiveContext& ctx, const CollectiveArgs& a);
void reduce_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void reduce_rabenseifner(CollectiveContext& ctx, const CollectiveArgs& a);
/// MPICH's default choice of reduce (default_reduce), run.
void reduce_default(CollectiveContext& ctx, const CollectiveArgs& a);
// allreduce.cpp
void allreduce_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a);
void allreduce_rabenseifner(CollectiveContext& ctx, const CollectiveArgs& a);
void allreduce_ring(CollectiveContext& ctx, const CollectiveArgs& a);
void allreduce_reduce_bcast(CollectiveContext& ctx, const CollectiveArgs& a);
void allreduce_linear_reduce_bcast(CollectiveContext& ctx, const CollectiveArgs& a);
// allgather.cpp (allgather and allgatherv)
void allgather_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a);
void allgather_ring(CollectiveContext& ctx, const CollectiveArgs& a);
void allgather_bruck(CollectiveContext& ctx, const CollectiveArgs& a);
void allgather_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void allgatherv_ring(CollectiveContext& ctx, const CollectiveArgs& a);
void allgatherv_linear(CollectiveContext& ctx, const CollectiveArgs& a);
// alltoall.cpp (alltoall and alltoallv)
void alltoall_pairwise(CollectiveContext& ctx, const CollectiveArgs& a);
void alltoall_bruck(CollectiveContext& ctx, const CollectiveArgs& a);
void alltoall_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void alltoall_basic_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void alltoallv_pairwise(CollectiveContext& ctx, const CollectiveArgs& a);
void alltoallv_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void alltoallv_basic_linear(CollectiveContext& ctx, const CollectiveArgs& a);
// gather.cpp (gather and gatherv)
void gather_binomial(CollectiveContext& ctx, const CollectiveArgs& a);
void gather_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void gatherv_linear(CollectiveContext& ctx, const CollectiveArgs& a);
// scatter.cpp (scatter and scatterv)
void scatter_binomial(CollectiveContext& ctx, const CollectiveArgs& a);
void scatter_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void scatterv_linear(CollectiveContext& ctx, const CollectiveArgs& a);
/// Linear scatterv from `root` with the per-rank sizes `to` (MPIR_Scatterv_allcomm_linear);
/// non-root ranks receive `mine` if it is not empty.
void scatterv_from(CollectiveContext& ctx, int root, const BlockCounts& to, Bytes mine, int t);
// reduce_scatter.cpp
/// The blocks of a reduce-scatter: recv_counts[i] = bytes rank i ends with, the same array on every
/// rank; MPI_Reduce_scatter_block has one count for all (recv_bytes, or the buffer split evenly).
BlockCounts redscat_blocks(const CollectiveContext& ctx, const CollectiveArgs& a);
void redscat_recursive_halving(CollectiveContext& ctx, const CollectiveArgs& a);
void redscat_pairwise(CollectiveContext& ctx, const CollectiveArgs& a);
void redscat_reduce_scatterv(CollectiveContext& ctx, const CollectiveArgs& a);
void redscat_linear_reduce_scatterv(CollectiveContext& ctx, const CollectiveArgs& a);
// scan.cpp (scan and exscan)
void scan_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void scan_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a);
void scan_direct(CollectiveContext& ctx, const CollectiveArgs& a);
void exscan_linear(CollectiveContext& ctx, const CollectiveArgs& a);
void exscan_recursive_doubling(CollectiveContext& ctx, const CollectiveArgs& a);
void exscan_direct(CollectiveContext& ctx, const CollectiveArgs& a);
// nbc.cpp: SMPI 3.32's nonblocking barrier, allreduce and reduce-scatter
void barrier_nbc(CollectiveContext& ctx, const CollectiveArgs& a);
void allreduce_nbc(CollectiveContext& ctx, const CollectiveArgs& a);
void redscat_nbc(CollectiveContext& ctx, const CollectiveArgs& a);

// ---------------------------------------------------------------------------------------------------
// Selection rules (select_mpich.cpp): MPICH's default choice by kind, also used where another
// library's selector keeps MPICH's rule and by the algorithms built from a default reduce or bcast.

std::string default_bcast(Bytes bytes, int n);
std::string default_reduce(Bytes bytes, int n);
std::string default_allreduce(Bytes bytes, int n);
std::string default_allgather(Bytes bytes, int n);
std::string default_alltoall(Bytes bytes, int n);
std::string default_reduce_scatter(const CollectiveArgs& a, int n);
/// Open MPI 4.1's fixed rule for alltoall (select_openmpi.cpp), as an Open MPI algorithm number (1
/// linear, 2 pairwise, 3 modified Bruck, 4 linear with sync, 5 two-proc), by one peer's block in bytes:
/// SMPI 3.32's default alltoall carries the same table.
int openmpi41_alltoall_rule(Bytes block, int n);
/// SMPI 3.32's default selector (select_smpi.cpp).
std::string select_smpi(CollectiveKind kind, const CollectiveArgs& args, int n);

// ---------------------------------------------------------------------------------------------------
// The local-copy model and the reduction work around an algorithm (local_copy.cpp)

/// A reducing algorithm: the communication, then the rank's reduction work (SMPI replay order).
CollectiveAlgorithm reducing(AlgorithmFn fn);

/// Bytes the library copies locally (no message) on this rank before an algorithm's communication.
using CopyBytesFn = Bytes (*)(const CollectiveContext&, const CollectiveArgs&);

/// Bytes of one communicator rank's send and receive buffers in this call (a temporary buffer where the
/// library reduces into one): the data the rank touches, summed over a node's ranks by the cold-copy rule.
/// Fields of a v-collective that only the calling rank knows (its counts) stand for its node-mates' too.
using TouchedBytesFn = Bytes (*)(const CollectiveContext&, const CollectiveArgs&, int rank);

/// An algorithm preceded by its local copy (CollectiveContext::local_copy; free without a copy rate).
CollectiveAlgorithm copying(CopyBytesFn bytes, TouchedBytesFn touched, CollectiveAlgorithm fn);

// What each collective's buffers hold, per communicator rank (TouchedBytesFn)
Bytes touched_alltoall(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_alltoallv(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_allgather(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_allgatherv(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_gather(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_gatherv(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_scatter(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_scatterv(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_two_buffers(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_root_two_buffers(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);
Bytes touched_redscat(const CollectiveContext& ctx, const CollectiveArgs& a, int rank);

// What each collective copies locally, per rank (CopyBytesFn)
Bytes copy_own_block(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_own_v_block(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_own_allgatherv_block(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_root_block(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_root_v_block(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_whole_buffer(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_root_buffer(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_redscat_total(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_redscat_total_at_0(const CollectiveContext& ctx, const CollectiveArgs& a);
Bytes copy_redscat_own_block(const CollectiveContext& ctx, const CollectiveArgs& a);

}  // namespace gridcast::emulator::colls
