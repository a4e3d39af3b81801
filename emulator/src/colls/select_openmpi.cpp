// Open MPI 4.1's selection (`--cfg gridcast/coll-selector:openmpi-4.1`, docs/reference/collectives.md): the fixed
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

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace gridcast::emulator {
namespace {

using colls::Bytes;

/// A library's fixed decision rules as data: rows by communicator size, in each the Open MPI algorithm
/// number by message size. The first row with n < n_below applies (`two_ranks` instead for n == 2,
/// where not empty), and in it the first step with bytes < below; past the last step, the last one's.
struct DecisionTable {
  static constexpr Bytes kAny = std::numeric_limits<Bytes>::max();
  struct Step {
    Bytes below;  ///< this algorithm while bytes < below
    int algorithm;
  };
  struct Row {
    int n_below;  ///< this row while n < n_below
    std::vector<Step> steps;
  };
  std::vector<Step> two_ranks;
  std::vector<Row> rows;  ///< the last row's n_below is INT_MAX

  int decide(int n, Bytes bytes) const
  {
    const std::vector<Step>* steps = &rows.back().steps;
    if (n == 2 && not two_ranks.empty()) {
      steps = &two_ranks;
    } else {
      for (const Row& row : rows) {
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
};

constexpr Bytes kAny = DecisionTable::kAny;
constexpr int kAnyRanks = std::numeric_limits<int>::max();

/// coll_tuned_decision_fixed.c (4.1), ompi_coll_tuned_allreduce_intra_dec_fixed, commutative branch,
/// by the whole buffer's bytes.
int openmpi41_allreduce_rule(Bytes total, int n)
{
  static const DecisionTable table{
      {},
      {
          {4, {{8, 4}, {4096, 3}, {8192, 4}, {16384, 3}, {65536, 4}, {262144, 5}, {kAny, 6}}},
          {8, {{16, 4}, {8192, 3}, {kAny, 6}}},
          {16, {{8192, 3}, {kAny, 6}}},
          {32, {{64, 5}, {4096, 3}, {kAny, 6}}},
          {64, {{128, 5}, {kAny, 6}}},
          {128, {{262144, 3}, {kAny, 6}}},
          {256, {{131072, 2}, {262144, 3}, {kAny, 6}}},
          {512, {{4096, 2}, {kAny, 6}}},
          {2048, {{2048, 2}, {16384, 3}, {kAny, 6}}},
          {4096, {{2048, 2}, {4096, 5}, {16384, 3}, {kAny, 6}}},
          {kAnyRanks, {{2048, 2}, {16384, 5}, {32768, 3}, {kAny, 6}}},
      }};
  return table.decide(n, total);
}

}  // namespace

/// ompi_coll_tuned_alltoall_intra_dec_fixed (4.1): `block` is one peer's block (dsize x scount).
int colls::openmpi41_alltoall_rule(Bytes block, int n)
{
  static const DecisionTable table{
      {{2, 2}, {4, 5}, {16, 2}, {64, 5}, {256, 2}, {4096, 5}, {32768, 2}, {262144, 4}, {1048576, 5}, {kAny, 2}},
      {
          {8, {{8192, 4}, {16384, 1}, {65536, 4}, {524288, 1}, {1048576, 2}, {kAny, 1}}},
          {16, {{262144, 4}, {kAny, 1}}},
          {32, {{4, 4}, {512, 3}, {8192, 4}, {32768, 1}, {262144, 4}, {524288, 1}, {kAny, 4}}},
          {64, {{512, 3}, {524288, 1}, {kAny, 4}}},
          {128, {{1024, 3}, {2048, 1}, {4096, 4}, {262144, 1}, {kAny, 2}}},
          {256, {{1024, 3}, {2048, 4}, {262144, 1}, {kAny, 2}}},
          {512, {{1024, 3}, {8192, 4}, {32768, 1}, {kAny, 2}}},
          {1024, {{512, 3}, {8192, 4}, {16384, 1}, {131072, 4}, {262144, 1}, {kAny, 2}}},
          {2048, {{512, 3}, {1024, 4}, {2048, 1}, {16384, 4}, {262144, 1}, {kAny, 4}}},
          {4096, {{1024, 3}, {4096, 4}, {8192, 1}, {131072, 4}, {kAny, 1}}},
          {kAnyRanks, {{2048, 3}, {8192, 4}, {16384, 1}, {32768, 4}, {65536, 1}, {kAny, 4}}},
      }};
  return table.decide(n, block);
}

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
    switch (colls::openmpi41_alltoall_rule(args.bytes, comm_size)) {
      case 2:
      case 5: return "pairwise";
      case 3: return "bruck";
      default: return "linear";
    }
  }
  return select(kind, args, comm_size);
}

}  // namespace gridcast::emulator
