/* A 9-point stencil on a periodic 2-D grid that exchanges with its 8 neighbours, the 4 faces and the 4
 * corners (2-D lattice Boltzmann D2Q9, 9-point finite differences): weak scaling, NW x NW cells per rank.
 * Written for the corpus' development set.
 *
 *   stencil9-2d NW     (NW >= 2)
 *
 * 2*NW steps: for each neighbour in the order of the code's table below, MPI_Irecv of what it sends
 * this way, then for each an MPI_Isend (tag = the direction's index: 0 .. 7), NW doubles to a face and 2
 * to a corner; MPI_Waitall of the 16 requests; 9 flop per cell; an MPI_Allreduce every 4th step. */
#include "../corpus.h"

/* The directions in the order D2Q9 codes list their velocities (east, north, west, south, then the
 * diagonals), and for each the index of its opposite. */
static const int dir_x[8] = {1, 0, -1, 0, 1, -1, -1, 1};
static const int dir_y[8] = {0, 1, 0, -1, 1, 1, -1, -1};
static const int opposite[8] = {2, 3, 0, 1, 6, 7, 4, 5};

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "stencil9-2d", 8, 2, 1);
  int dims[2], nbr[4];
  MPI_Comm cart = corpus_cart(2, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  int coords[2];
  MPI_Cart_coords(cart, rank, 2, coords);
  int peer[8], count[8];
  for (int k = 0; k < 8; k++) {
    int c[2] = {coords[0] + dir_x[k], coords[1] + dir_y[k]};
    MPI_Cart_rank(cart, c, &peer[k]);
    count[k] = dir_x[k] != 0 && dir_y[k] != 0 ? 2 : nw;
  }
  double* sbuf = calloc((size_t)8 * nw, sizeof(double));
  double* rbuf = calloc((size_t)8 * nw, sizeof(double));
  MPI_Request req[16];
  double res = 1.0, res_sum = 0.0;
  for (int step = 0; step < 2 * nw; step++) {
    /* What the neighbour in direction k sends me travels in its direction opposite[k]. */
    for (int k = 0; k < 8; k++)
      MPI_Irecv(rbuf + (size_t)k * nw, count[k], MPI_DOUBLE, peer[k], opposite[k], cart, &req[k]);
    for (int k = 0; k < 8; k++)
      MPI_Isend(sbuf + (size_t)k * nw, count[k], MPI_DOUBLE, peer[k], k, cart, &req[8 + k]);
    MPI_Waitall(16, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(9.0 * nw * nw);
    if (step % 4 == 3)
      MPI_Allreduce(&res, &res_sum, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  if (rank == 0)
    printf("stencil9-2d: np %d, grid %dx%d, %d^2 cells per rank\n", np, dims[0], dims[1], nw);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
