// Collective operations, kept symbolic in traces and expanded into point-to-point algorithms at the
// target Np. Each algorithm runs inside the calling rank's actor on a CollectiveContext
// (collective_context.hpp), so its messages never match the application's own point-to-point traffic.
// The default choice follows MPICH's size/Np rules (see select_*); `--cfg gridcast/coll/<op>:<algo>`
// forces one. The algorithms are in emulator/src/colls/, one file per collective, and each library's
// selection rules in its own file there.
#pragma once

#include "gridcast/emulator/collective_context.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::emulator {

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

/// Whose default choice `select` reproduces (`--cfg gridcast/coll-selector:mpich|smpi`, docs/reference/collectives.md):
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
  /// `--cfg gridcast/coll-selector:openmpi-4.1` (docs/reference/collectives.md).
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
