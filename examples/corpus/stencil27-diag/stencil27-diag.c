/* A 27-point stencil on a periodic 3-D grid that exchanges with all 26 neighbours: faces, edges and
 * corners (LULESH-like hydrodynamics, lattice Boltzmann D3Q27): weak scaling, NW^3 cells per rank.
 *
 *   stencil27-diag NW     (NW >= 2)
 *
 * NW steps: MPI_Irecv from and MPI_Isend to each of the 26 neighbours at offsets (dx, dy, dz) in
 * {-1, 0, 1}^3 of the periodic MPI_Dims_create(np, 3) grid (tag = the offset's index), carrying NW^2
 * doubles for a face, NW for an edge and 1 for a corner, MPI_Waitall, then 27 flop per cell; an
 * MPI_Allreduce of the time step (1 double) every step. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "stencil27-diag", 4, 2, 1);
  int dims[3], nbr[6];
  MPI_Comm cart = corpus_cart(3, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  int coords[3];
  MPI_Cart_coords(cart, rank, 3, coords);
  int peer[26], count[26], n = 0;
  for (int dx = -1; dx <= 1; dx++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dz = -1; dz <= 1; dz++) {
        if (dx == 0 && dy == 0 && dz == 0)
          continue;
        int c[3] = {coords[0] + dx, coords[1] + dy, coords[2] + dz};
        MPI_Cart_rank(cart, c, &peer[n]);  /* periodic: wraps */
        int zeros = (dx == 0) + (dy == 0) + (dz == 0);
        count[n] = zeros == 2 ? nw * nw : zeros == 1 ? nw : 1;
        n++;
      }
  double* sbuf = calloc((size_t)26 * nw * nw, sizeof(double));
  double* rbuf = calloc((size_t)26 * nw * nw, sizeof(double));
  MPI_Request req[52];
  double dt = 1.0, dt_min = 0.0;
  for (int step = 0; step < nw; step++) {
    for (int k = 0; k < 26; k++)
      /* The message from the neighbour at offset -o carries tag k' where o is offset k: the sender tags
       * with its own index of the offset, so the receive from peer[k] (at offset o) expects 25 - k. */
      MPI_Irecv(rbuf + (size_t)k * nw * nw, count[k], MPI_DOUBLE, peer[k], 25 - k, cart, &req[k]);
    for (int k = 0; k < 26; k++)
      MPI_Isend(sbuf + (size_t)k * nw * nw, count[k], MPI_DOUBLE, peer[k], k, cart, &req[26 + k]);
    MPI_Waitall(52, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(27.0 * nw * nw * nw);
    MPI_Allreduce(&dt, &dt_min, 1, MPI_DOUBLE, MPI_MIN, cart);
  }
  if (rank == 0)
    printf("stencil27-diag: np %d, grid %dx%dx%d, %d^3 cells per rank\n", np, dims[0], dims[1], dims[2], nw);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
