// A 2-rank time stepper with no loop that repeats, whose collectives are on the communicators codes
// make instead of MPI_COMM_WORLD: a periodic 1-D MPI_Cart_create of every rank, a duplicate of world, and
// a split by rank parity (one rank each). Each step runs 1 to 4 solver iterations (a hash of the step),
// each a halo swap on the Cartesian communicator, an MPI_Allreduce on it, one on the duplicate and one on
// the split, then an MPI_Bcast on the Cartesian communicator.
// Argument: the number of steps (default 12). tests/profiler/test_profile_families.cpp profiles it and
// checks that `replay --sample` cuts it at the collectives on the Cartesian and duplicate communicators.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long steps = argc > 1 ? std::atol(argv[1]) : 12;
  if (size != 2 || steps < 1) {
    std::fprintf(stderr, "mpi_windows: run with 2 ranks and a number of steps >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int dims[1] = {size}, periods[1] = {1};
  MPI_Comm cart, dup, half;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int lower = 0, upper = 0;
  MPI_Cart_shift(cart, 0, 1, &lower, &upper);
  double halo_out[64] = {}, halo_in[64] = {}, local = rank, sum = 0;
  for (unsigned long s = 0; s < static_cast<unsigned long>(steps); ++s) {
    const unsigned long iterations = 1 + ((s * 2654435761UL) >> 7) % 4;
    for (unsigned long it = 0; it < iterations; ++it) {
      MPI_Sendrecv(halo_out, 64, MPI_DOUBLE, upper, 0, halo_in, 64, MPI_DOUBLE, lower, 0, cart, MPI_STATUS_IGNORE);
      MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, cart);
      MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, dup);
      MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, half);
    }
    MPI_Bcast(&sum, 1, MPI_DOUBLE, 0, cart);
  }
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
