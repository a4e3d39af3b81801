/* A 2-D halo code with periodic diagnostics (what production codes do for their residual and their
 * output): weak scaling, NW x NW points per rank on the periodic MPI_Dims_create(np, 2) grid.
 *
 *   diag-every-k NW     (NW a multiple of 4)
 *
 * 20 steps; in each, MPI_Irecv and MPI_Isend of one NW-double face with each of the 4 neighbours of the
 * Cartesian communicator, MPI_Waitall, 9 flop per point. Every 5th step an MPI_Allreduce of 2 doubles on
 * the Cartesian communicator; every 10th an MPI_Gather of NW doubles per rank to rank 0, which then writes
 * them (10 flop per gathered double). */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "diag-every-k", 16, 4, 4);
  int dims[2], nbr[4];
  MPI_Comm cart = corpus_cart(2, 1, dims, nbr);
  double* send = calloc((size_t)4 * nw, sizeof(double));
  double* recv = calloc((size_t)4 * nw, sizeof(double));
  double* all = calloc((size_t)nw * np, sizeof(double));
  double norm[2] = {1, 2}, sum[2];
  MPI_Request req[8];
  for (int step = 1; step <= 20; step++) {
    for (int f = 0; f < 4; f++) {
      MPI_Irecv(recv + (size_t)f * nw, nw, MPI_DOUBLE, nbr[f], f ^ 1, cart, &req[f]);
      MPI_Isend(send + (size_t)f * nw, nw, MPI_DOUBLE, nbr[f], f, cart, &req[4 + f]);
    }
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(9.0 * nw * nw);
    if (step % 5 == 0)
      MPI_Allreduce(norm, sum, 2, MPI_DOUBLE, MPI_SUM, cart);
    if (step % 10 == 0) {
      MPI_Gather(send, nw, MPI_DOUBLE, all, nw, MPI_DOUBLE, 0, cart);
      if (rank == 0)
        DECLARE_FLOPS(10.0 * nw * np);
    }
  }
  if (rank == 0)
    printf("diag-every-k: np %d (%d x %d), %d^2 points per rank\n", np, dims[0], dims[1], nw);
  free(all);
  free(recv);
  free(send);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
