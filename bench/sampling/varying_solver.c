/* A workload with phases and no regular loop for bench/sampling.py (`replay --sample` cuts it into the
 * windows between collectives on MPI_COMM_WORLD): an implicit time stepper whose linear solver takes a
 * different number of iterations every step, as a Krylov solver does.
 *
 *   varying-solver NW STEPS
 *
 * Every step s: a conjugate-gradient-like solve of 2 + h(s) % 7 iterations (h a fixed hash of s, so 2 to 8),
 * each a halo exchange with the six faces of the periodic MPI_Dims_create grid (MPI_Sendrecv of NW*NW
 * doubles), 20 flop per cell of the NW^3 block, an MPI_Allreduce of one double (a dot product), 10 flop
 * per cell and a second MPI_Allreduce; then 30 flop per cell (the update). Every 16th step a checkpoint:
 * an MPI_Reduce of NW*NW doubles to rank 0 and 100 flop per cell (packing). Compute is declared with
 * smpi_execute_flops, so the recording is the same on every machine. */
#include "halo3d.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* splitmix64's finalizer: the solver's iteration count of a step, the same on every rank. */
static uint64_t mix(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int main(int argc, char** argv)
{
  int np, rank, nw, steps;
  halo3d_start(&argc, &argv, "varying-solver", 64, 1, &np, &rank, &nw, &steps);
  MPI_Comm cart;
  int dims[3], nbr[6];
  halo3d_grid(&cart, dims, nbr);
  const int face = nw * nw;
  const double cells = (double)nw * nw * nw;
  double* sbuf = calloc((size_t)face, sizeof(double));
  double* rbuf = calloc((size_t)face, sizeof(double));
  double local = rank, dot = 0;
  long iterations = 0;
  for (int s = 0; s < steps; s++) {
    const int its = 2 + (int)(mix((uint64_t)s) % 7);
    for (int it = 0; it < its; it++) {
      for (int f = 0; f < 6; f++)
        MPI_Sendrecv(sbuf, face, MPI_DOUBLE, nbr[f], f, rbuf, face, MPI_DOUBLE, nbr[f ^ 1], f, cart,
                     MPI_STATUS_IGNORE);
      DECLARE_FLOPS(20.0 * cells);
      MPI_Allreduce(&local, &dot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      DECLARE_FLOPS(10.0 * cells);
      MPI_Allreduce(&local, &dot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    iterations += its;
    DECLARE_FLOPS(30.0 * cells);
    if (s % 16 == 15) {
      MPI_Reduce(sbuf, rbuf, face, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      DECLARE_FLOPS(100.0 * cells);
    }
  }
  if (rank == 0)
    printf("varying-solver: %d ranks (%dx%dx%d), NW %d, %d steps, %ld solver iterations\n", np, dims[0], dims[1],
           dims[2], nw, steps, iterations);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
