// What a collective algorithm runs on: a communicator, the calling rank's view of it (point-to-point
// helpers on the communicator's collective context, so collective messages never match the
// application's own), the node map of the cold-copy rule and the local-copy cost model. The
// collectives themselves, their kinds, arguments and selection are in collectives.hpp.
#pragma once

#include "gridcast/emulator/p2p.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace gridcast::emulator {

class TimelineWriter;

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
/// copies (docs/reference/collectives.md, "Cold copies"). Nodes are opaque ids (the replay uses one per host).
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

  /// Where the collective's messages are drawn as arrows (timeline.json), as point-to-point ones are;
  /// nullptr (the default): not drawn. The writer must outlive the context.
  void set_timeline(TimelineWriter* timeline) { timeline_ = timeline; }

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
  TimelineWriter* timeline_ = nullptr;
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

}  // namespace gridcast::emulator
