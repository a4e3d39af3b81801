// SMPI 3.32's default choice (CollectiveSelector::Smpi): what `smpirun` runs with
// smpi/coll-selector:default (its default), from src/smpi/colls/smpi_default_selector.cpp, and for the
// nonblocking collectives the flat "nbc" algorithms of smpi_nbc_impl.cpp, which post every message at
// once. Choosing them lets gridcast and SMPI exchange the same messages when they are compared. SMPI
// posts empty messages too: these algorithms do, except where a whole call is empty (as everywhere in
// gridcast).
#include "colls.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace gridcast::emulator {
namespace colls {
namespace {

/// alltoall__default = alltoall__ompi: Open MPI 4.1's decision table on (n, bytes per destination), as
/// SMPI 3.32 carries it. Open MPI's "linear_sync" and "two_proc" are SMPI's basic_linear.
std::string smpi_alltoall(Bytes bytes, int n)
{
  switch (openmpi41_alltoall_rule(bytes, n)) {
    case 2: return "pairwise";
    case 3: return "bruck";
    default: return "basic_linear";  // 1 linear, 4 linear with sync, 5 two-proc
  }
}

}  // namespace

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

}  // namespace colls

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

}  // namespace gridcast::emulator
