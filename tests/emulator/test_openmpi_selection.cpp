// Open MPI 4.1's collective selection (`--cfg gridcast/coll-selector:openmpi-4.1`): the fixed rules
// of coll_tuned_decision_fixed.c (4.1) for commutative allreduce and for alltoall, mapped to gridcast's
// algorithms. Expected values read off the 4.1 source by hand.
#include "../models/models_support.hpp"

#include "gridcast/emulator/collectives.hpp"
#include "gridcast/emulator/config.hpp"

#include <catch2/catch.hpp>

using namespace gridcast;
using namespace gridcast::emulator;
using gridcast::test::expect_input_error;

namespace {

std::string ompi(CollectiveKind kind, std::uint64_t bytes, int n)
{
  CollectiveArgs a;
  a.bytes = bytes;
  return CollectiveRegistry().select_openmpi41(kind, a, n);
}

}  // namespace

TEST_CASE("openmpi-4.1 selection: allreduce follows the fixed rules", "[collectives][openmpi]")
{
  using K = CollectiveKind;
  // np 2 (communicator under 4): ring below 8 B, recursive doubling to 4 KiB, ring from 4 KiB, recursive
  // doubling from 8 KiB, ring from 16 KiB, segmented ring (run as the ring: segment size 0) from 64 KiB,
  // Rabenseifner from 256 KiB.
  CHECK(ompi(K::Allreduce, 4, 2) == "ring");
  CHECK(ompi(K::Allreduce, 8, 2) == "recursive_doubling");
  CHECK(ompi(K::Allreduce, 4096, 2) == "ring");
  CHECK(ompi(K::Allreduce, 8192, 2) == "recursive_doubling");
  CHECK(ompi(K::Allreduce, 65536, 2) == "ring");
  CHECK(ompi(K::Allreduce, 262143, 2) == "ring");
  CHECK(ompi(K::Allreduce, 262144, 2) == "rabenseifner");
  CHECK(ompi(K::Allreduce, 16u << 20, 3) == "rabenseifner");
  // Larger communicators.
  CHECK(ompi(K::Allreduce, 8191, 4) == "recursive_doubling");
  CHECK(ompi(K::Allreduce, 8192, 7) == "rabenseifner");
  CHECK(ompi(K::Allreduce, 32, 16) == "ring");  // segmented ring below 64 B at 16..31 ranks
  CHECK(ompi(K::Allreduce, 100000, 200) == "reduce_bcast");  // non-overlapping below 128 KiB at 128..255
  CHECK(ompi(K::Allreduce, 200000, 200) == "recursive_doubling");
  CHECK(ompi(K::Allreduce, 1024, 5000) == "reduce_bcast");
  CHECK(ompi(K::Allreduce, 20000, 5000) == "recursive_doubling");
  CHECK(ompi(K::Allreduce, 1u << 20, 5000) == "rabenseifner");
}

TEST_CASE("openmpi-4.1 selection: alltoall follows the fixed rules by block size", "[collectives][openmpi]")
{
  using K = CollectiveKind;
  // np 2: pairwise / two-proc (both one exchange: pairwise), linear with sync from 32 KiB blocks.
  CHECK(ompi(K::Alltoall, 1, 2) == "pairwise");
  CHECK(ompi(K::Alltoall, 4, 2) == "pairwise");
  CHECK(ompi(K::Alltoall, 2048, 2) == "pairwise");
  CHECK(ompi(K::Alltoall, 32768, 2) == "linear");
  CHECK(ompi(K::Alltoall, 262144, 2) == "pairwise");
  CHECK(ompi(K::Alltoall, 8u << 20, 2) == "pairwise");
  CHECK(ompi(K::Alltoall, 100, 4) == "linear");           // linear with sync
  CHECK(ompi(K::Alltoall, 600000, 4) == "pairwise");
  CHECK(ompi(K::Alltoall, 100, 20) == "bruck");           // modified Bruck
  CHECK(ompi(K::Alltoall, 1000, 100) == "bruck");
  CHECK(ompi(K::Alltoall, 1u << 20, 100) == "pairwise");
  CHECK(ompi(K::Alltoall, 70000, 8192) == "linear");
}

TEST_CASE("openmpi-4.1 selection: other collectives keep the MPICH choice", "[collectives][openmpi]")
{
  CollectiveRegistry r;
  for (auto kind : {CollectiveKind::Bcast, CollectiveKind::Reduce, CollectiveKind::Allgather}) {
    for (std::uint64_t bytes : {8ull, 65536ull, 1ull << 24}) {
      CollectiveArgs a;
      a.bytes = bytes;
      CHECK(r.select_openmpi41(kind, a, 16) == r.select(kind, a, 16));
    }
  }
  // Every name it returns is a registered algorithm.
  for (int n : {2, 3, 8, 64, 300, 5000})
    for (std::uint64_t bytes = 1; bytes <= (1ull << 26); bytes *= 4) {
      CHECK(r.find(CollectiveKind::Allreduce, ompi(CollectiveKind::Allreduce, bytes, n)) != nullptr);
      CHECK(r.find(CollectiveKind::Alltoall, ompi(CollectiveKind::Alltoall, bytes, n)) != nullptr);
    }
}

TEST_CASE("openmpi-4.1 selection: the --cfg setting is checked", "[collectives][openmpi]")
{
  ReplayOptions o;
  CHECK(o.coll_selector == CollectiveSelector::Mpich);
  apply_cfg(o, "gridcast/coll-selector:openmpi-4.1");
  CHECK(o.coll_selector == CollectiveSelector::OpenMpi41);
  apply_cfg(o, "gridcast/coll-selector:mpich");
  CHECK(o.coll_selector == CollectiveSelector::Mpich);
  auto e = expect_input_error([&] { apply_cfg(o, "gridcast/coll-selector:openmpi-5"); });
  CHECK(e.context().key == "gridcast/coll-selector");
  CHECK(e.reason().find("openmpi-4.1") != std::string::npos);
}
