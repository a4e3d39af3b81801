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
#include "colls.hpp"

#include <stdexcept>
#include <string>

namespace gridcast::emulator {
namespace {

using colls::Bytes;


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

}  // namespace gridcast::emulator
