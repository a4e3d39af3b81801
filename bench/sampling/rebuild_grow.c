/* A workload with phases for bench/sampling.py (`replay --sample` of a recorded trace): a 3-D periodic
 * halo exchange on the MPI_Dims_create grid, like a particle code's time steps.
 *
 *   rebuild-grow NW STEPS
 *
 * Every step s: six MPI_Sendrecv (one per face) of NW*NW*(1 + s/STEPS) doubles each, so messages grow
 * with the step (particles gathering); 50 flop per cell of the NW^3 block; an MPI_Allreduce of one double
 * (the thermodynamic output). Every 10th step is a rebuild (neighbour lists rebuilt, particles migrated):
 * the same calls with 4x the bytes and 3x the flops. Compute is declared with smpi_execute_flops, so the
 * recording is the same on every machine. */
#include "halo3d.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv)
{
  int np, rank, nw, steps;
  halo3d_start(&argc, &argv, "rebuild-grow", 100, 10, &np, &rank, &nw, &steps);
  MPI_Comm cart;
  int dims[3], nbr[6];
  halo3d_grid(&cart, dims, nbr);
  const size_t most = (size_t)nw * nw * 2 * 4;
  double* sbuf = calloc(most, sizeof(double));
  double* rbuf = calloc(most, sizeof(double));
  double local = rank, total = 0;
  for (int s = 0; s < steps; s++) {
    const int rebuild = s % 10 == 0;
    const int count = (int)((double)nw * nw * (1.0 + (double)s / steps)) * (rebuild ? 4 : 1);
    for (int f = 0; f < 6; f++)
      MPI_Sendrecv(sbuf, count, MPI_DOUBLE, nbr[f], f, rbuf, (int)most, MPI_DOUBLE, nbr[f ^ 1], f, cart,
                   MPI_STATUS_IGNORE);
    DECLARE_FLOPS(50.0 * nw * nw * nw * (rebuild ? 3 : 1));
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  if (rank == 0)
    printf("rebuild-grow: %d ranks (%dx%dx%d), NW %d, %d steps, total %g\n", np, dims[0], dims[1], dims[2], nw,
           steps, total);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
