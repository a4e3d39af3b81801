// Collective operations, kept symbolic in traces and expanded here into point-to-point algorithms at
// the target Np. Each algorithm runs inside the calling rank's actor and uses the communicator's
// collective context, so its messages never match the application's own point-to-point traffic.
// The default choice follows MPICH's size/Np rules (see select_*); `--cfg gridcast/coll/<op>:<algo>`
// forces one.
#pragma once

#include "gridcast/emulator/p2p.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gridcast::emulator {

/// A communicator: its members as world ranks, in communicator-rank order.
struct Communicator {
  int id = 0;                   ///< global id (0 = MPI_COMM_WORLD)
  std::vector<int> world_ranks;  ///< world_ranks[i] = world rank of communicator rank i
  int p2p_context = 0;          ///< matching context of application point-to-point messages
  int coll_context = 1;         ///< matching context of collective-internal messages

  int size() const { return static_cast<int>(world_ranks.size()); }
  /// Communicator rank of `world_rank`, or -1 if not a member.
  int rank_of(int world_rank) const;
};

/// Which world ranks share a node, and each node's last-level cache, for the cold-copy rule of local
/// copies (docs/collectives.md, "Cold copies"). Nodes are opaque ids (the replay uses one per host).
class NodeMap {
public:
  /// `node_of_rank[r]`: world rank r's node; `cache_bytes_of_rank[r]`: that node's last-level cache in
  /// bytes, 0 where unknown (then the rule never applies to the rank). Both have one entry per rank.
  NodeMap(std::vector<int> node_of_rank, std::vector<std::uint64_t> cache_bytes_of_rank);
  std::uint64_t cache_bytes(int world_rank) const;
  /// The communicator ranks on `world_rank`'s node, itself included, ascending; computed once per
  /// (communicator, node) and kept (communicator ids are never reused within a run).
  const std::vector<int>& node_ranks(const Communicator& comm, int world_rank);

private:
  std::vector<int> node_of_rank_;
  std::vector<std::uint64_t> cache_bytes_of_rank_;
  std::map<std::pair<int, int>, std::vector<int>> node_ranks_;  ///< (comm id, node) -> comm ranks
};

/// What a collective algorithm sees: the calling rank inside one communicator, with point-to-point
/// helpers addressed by communicator rank on the collective context.
class CollectiveContext {
public:
  CollectiveContext(MessageBoard& board, const Communicator& comm, int world_rank,
                    std::function<void(double)> compute_flops);

  int rank() const { return me_; }
  int size() const { return comm_.size(); }
  const Communicator& comm() const { return comm_; }

  RequestPtr isend(int to, std::uint64_t bytes, int tag = 0);
  RequestPtr irecv(int from, std::uint64_t bytes, int tag = 0);
  void send(int to, std::uint64_t bytes, int tag = 0);
  void recv(int from, std::uint64_t bytes, int tag = 0);
  void sendrecv(int to, std::uint64_t send_bytes, int from, std::uint64_t recv_bytes, int tag = 0);
  void wait(const RequestPtr& r);
  void wait_all(const std::vector<RequestPtr>& rs);
  /// Reduction work (flops) executed on the rank's host.
  void compute(double flops);
  /// Seconds of a local memory copy by size on the rank's CPU (gridcast:memcpy-time of a calibrated
  /// platform, unless `gridcast/coll-local-copy` says otherwise); nullptr or empty (the default): local
  /// copies cost nothing. The points must outlive the context.
  void set_local_copy_time(const std::vector<platform::OverheadPoint>* points) { local_copy_time_ = points; }
  /// A copy the MPI library makes inside the collective without a message (sendbuf to recvbuf, a rank's
  /// own block): local_copy_seconds(points, bytes) executed on the rank's host, as compute work.
  void local_copy(std::uint64_t bytes);
  /// The same, cold (`cold`: the data the call touches on the node exceeds its last-level cache, so the
  /// copy's source and destination come from main memory): local_cold_copy_seconds.
  void local_copy(std::uint64_t bytes, bool cold);
  /// Whether local copies cost anything in this context (a copy curve is set and not empty).
  bool charges_local_copies() const { return local_copy_time_ != nullptr && not local_copy_time_->empty(); }
  /// Where the rank's node is known (set_node_map): its last-level cache in bytes, else 0.
  void set_node_map(NodeMap* nodes) { nodes_ = nodes; }
  std::uint64_t node_cache_bytes() const;
  /// The communicator ranks on this rank's node, itself included (only itself without a node map).
  const std::vector<int>& node_ranks();
  /// Where this collective's messages leave from and arrive at (a GPU host for NCCL run by a stream);
  /// nullptr (the default): the board's choice for the rank.
  void set_endpoint(sg4::Host* host) { endpoint_ = host; }

  /// Seconds spent waiting for partners inside this collective so far.
  double partner_wait_s() const { return partner_wait_s_; }

private:
  MessageBoard& board_;
  const Communicator& comm_;
  int world_rank_;
  int me_;
  std::function<void(double)> compute_;
  double partner_wait_s_ = 0;
  const std::vector<platform::OverheadPoint>* local_copy_time_ = nullptr;
  NodeMap* nodes_ = nullptr;
  std::vector<int> only_me_;
  sg4::Host* endpoint_ = nullptr;
};

/// Seconds to copy `bytes` locally from a gridcast:memcpy-time curve ("bytes:seconds;...", sizes
/// ascending): linear between points, proportional to the size below the first point, and beyond the
/// last at the slope of the last segment (a copy keeps growing with its size; the last points are out of
/// every cache). 0 for an empty curve.
double local_copy_seconds(const std::vector<platform::OverheadPoint>& points, std::uint64_t bytes);
/// Seconds of a cold copy of `bytes` (source and destination out of every cache): at the per-byte time
/// of the curve's largest copy (measured well beyond the caches: the out-of-cache rate), and never less
/// than local_copy_seconds (a copy cannot be faster cold than with its source just written). 0 for an
/// empty curve.
double local_cold_copy_seconds(const std::vector<platform::OverheadPoint>& points, std::uint64_t bytes);

/// The collectives gridcast expands, by kind.
enum class CollectiveKind {
  Barrier, Bcast, Reduce, Allreduce, Alltoall, Alltoallv, Gather, Gatherv, Allgather, Allgatherv,
  Scatter, Scatterv, ReduceScatter, Scan, Exscan
};
std::string_view collective_name(CollectiveKind k);

/// Arguments of one collective call, in bytes (per rank where the MPI call takes a per-rank count).
struct CollectiveArgs {
  std::uint64_t bytes = 0;       ///< send size per destination (or the buffer size of bcast/reduce...)
  std::uint64_t recv_bytes = 0;  ///< receive size per source where distinct
  int root = 0;                  ///< communicator rank
  double flops = 0;              ///< reduction work of this rank for the whole call
  std::vector<std::uint64_t> counts;       ///< v-collectives: bytes to each communicator rank
  std::vector<std::uint64_t> recv_counts;  ///< v-collectives: bytes from each communicator rank
};

using CollectiveAlgorithm = std::function<void(CollectiveContext&, const CollectiveArgs&)>;

/// Whose default choice `select` reproduces (`--cfg gridcast/coll-selector:mpich|smpi`, docs/collectives.md):
/// MPICH 3.x's (gridcast's default), or SMPI 3.32's `smpi/coll-selector:default`, which is what `smpirun`
/// runs unless told otherwise, so that a comparison with SMPI compares the same messages.
enum class CollectiveSelector { Mpich, Smpi, OpenMpi41 };
/// The `gridcast/coll-selector` value of each selector: mpich, smpi, openmpi-4.1.
std::string_view collective_selector_name(CollectiveSelector selector);

/// Every algorithm gridcast knows, by kind and name (e.g. Allreduce / "ring").
class CollectiveRegistry {
public:
  CollectiveRegistry();
  const CollectiveAlgorithm* find(CollectiveKind kind, const std::string& name) const;
  std::vector<std::string> names(CollectiveKind kind) const;
  /// The algorithm an MPICH-like library would choose for this size and communicator size. All ranks
  /// of a communicator must choose the same one, so the choice depends only on arguments every rank
  /// shares (for v-collectives: the total bytes exchanged as this rank sees it is NOT shared, so those
  /// choose by communicator size only).
  std::string select(CollectiveKind kind, const CollectiveArgs& args, int comm_size) const;
  /// Open MPI 4.1's choice (its tuned component's fixed rules, commutative reductions) for allreduce
  /// and alltoall, mapped to gridcast's algorithms; select() for the other collectives. Chosen with
  /// `--cfg gridcast/coll-selector:openmpi-4.1` (docs/collectives.md).
  std::string select_openmpi41(CollectiveKind kind, const CollectiveArgs& args, int comm_size) const;
  /// The same with the choice of `selector`: Mpich is the overload above, OpenMpi41 select_openmpi41.
  std::string select(CollectiveKind kind, const CollectiveArgs& args, int comm_size, CollectiveSelector selector) const;
  /// The choice for a nonblocking collective (MPI_Ibcast, ...). SMPI 3.32 runs these with the flat
  /// algorithms of smpi_nbc_impl.cpp, not its blocking selection: under the Smpi selector a broadcast
  /// is the root's sends to every rank ("linear"), an alltoall every pair's exchange posted at once
  /// ("basic_linear"), and a barrier, allreduce and reduce-scatter SMPI's one-round "nbc" algorithms
  /// (ibarrier: rank 0 replies without waiting for the arrivals; iallreduce: every rank's buffer to every
  /// rank; ireduce_scatter: every block to its rank). The other kinds have the same flat shape as SMPI's
  /// blocking choice. Other selectors: select().
  std::string select_nonblocking(CollectiveKind kind, const CollectiveArgs& args, int comm_size,
                                 CollectiveSelector selector) const;

private:
  std::map<CollectiveKind, std::map<std::string, CollectiveAlgorithm>> algorithms_;
};

}  // namespace gridcast::emulator
