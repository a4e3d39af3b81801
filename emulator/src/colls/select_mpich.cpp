// MPICH 3.x's default choice of algorithm (CollectiveSelector::Mpich, gridcast's default): its
// size/Np rules with the MPIR_CVAR_* thresholds of colls.hpp. Each rule is a function of values every
// rank of the communicator shares (the buffer size of a non-v collective, the counts array where MPI
// requires it to be the same everywhere, the communicator size), so all ranks pick the same algorithm.
#include "colls.hpp"

#include <stdexcept>
#include <string>

namespace gridcast::emulator {
namespace colls {

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

}  // namespace colls

std::string CollectiveRegistry::select(CollectiveKind kind, const CollectiveArgs& args, int comm_size) const
{
  using namespace colls;
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


}  // namespace gridcast::emulator
