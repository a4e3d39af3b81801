/* 3-D Jacobi stencil on a periodic MPI_Cart grid (MPI_Dims_create), weak scaling.
 *
 *   stencil3d NW [D [PERIODIC]]   NW = local edge length: every rank owns NW^3 points
 *                                 D = 3 (default) or 2: ranks on a D-dimensional process grid
 *                                 PERIODIC = 1 (default) or 0: without wrap-around, ranks on the edge of
 *                                 the grid skip their missing neighbours (rank-dependent branches)
 *
 * Every iteration: a halo exchange with the 6 face neighbours (MPI_Irecv/MPI_Isend, tag = direction,
 * NW*NW doubles each), MPI_Waitall, the sweep (declared as 8 flop per point), and an MPI_Allreduce of
 * the residual. Every 4th iteration a checkpoint: MPI_Reduce of the norm to rank 0, which alone then
 * "writes" it (a compute burst), so rank 0 follows another branch. NW iterations in all, so the loop
 * count grows with NW too. Compute is declared with smpi_execute_flops under SMPI (see record.sh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "../common/example.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = example_nw(argc, argv, 8, 4, "stencil3d");
  int ndims = argc > 2 ? atoi(argv[2]) : 3;
  int periodic = argc > 3 ? atoi(argv[3]) : 1;
  if (ndims != 2 && ndims != 3) {
    fprintf(stderr, "stencil3d: D must be 2 or 3\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int dims[3] = {0, 0, 1}, periods[3] = {periodic, periodic, periodic};
  MPI_Dims_create(np, ndims, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &cart);
  MPI_Comm_rank(cart, &rank);
  int nbr[6], ndir = 2 * ndims;
  for (int d = 0; d < ndims; d++)
    MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]);  /* [2d] = lower, [2d+1] = upper */

  size_t face = (size_t)nw * nw;
  double* sendbuf = calloc(6 * face, sizeof(double));
  double* recvbuf = calloc(6 * face, sizeof(double));
  MPI_Request req[12];
  int nreq;
  double residual = 1.0, norm = 0.0, total = 0.0;
  for (int it = 0; it < nw; it++) {
    nreq = 0;
    for (int dir = 0; dir < ndir; dir++)
      /* Receive from the neighbour in direction dir what it sent towards us (its direction dir^1). */
      if (nbr[dir] != MPI_PROC_NULL)
        MPI_Irecv(recvbuf + dir * face, (int)face, MPI_DOUBLE, nbr[dir], dir ^ 1, cart, &req[nreq++]);
    for (int dir = 0; dir < ndir; dir++)
      if (nbr[dir] != MPI_PROC_NULL)
        MPI_Isend(sendbuf + dir * face, (int)face, MPI_DOUBLE, nbr[dir], dir, cart, &req[nreq++]);
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(8.0 * nw * nw * nw);
    double local = residual * 0.5;
    MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, cart);
    if (it % 4 == 3) {
      norm = residual;
      MPI_Reduce(&norm, &total, 1, MPI_DOUBLE, MPI_MAX, 0, cart);
      if (rank == 0)
        DECLARE_FLOPS(1000.0 * nw);  /* writing the checkpoint */
    }
  }
  if (rank == 0)
    printf("stencil3d: np %d, dims %dx%dx%d, %s, nw %d, residual %g\n", np, dims[0], dims[1], dims[2],
           periodic ? "periodic" : "not periodic", nw, total);
  free(sendbuf);
  free(recvbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
