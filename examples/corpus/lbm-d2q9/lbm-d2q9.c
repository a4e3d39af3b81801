/* Lattice Boltzmann D2Q9 streaming between the blocks of a periodic 2-D grid: each rank keeps its
 * neighbours in a table and walks it with one call site per operation (what most LBM codes do).
 * Weak scaling, NW x NW cells per rank. Written for the corpus' development set.
 *
 *   lbm-d2q9 NW     (NW >= 2)
 *
 * 2*NW steps: over the table of the 8 directions (east, north, west, south, then the diagonals), an
 * MPI_Irecv from the neighbour that streams this way, then over it again an MPI_Isend to the neighbour in
 * that direction, all with tag 0: a face carries the 3 distributions that cross it for NW cells (3*NW
 * doubles), a corner 1 double; MPI_Waitall of the 16 requests; 200 flop per cell (collision); an
 * MPI_Allreduce of the mass (1 double) every 10th step. */
#include "../corpus.h"

static const int dir_x[8] = {1, 0, -1, 0, 1, -1, -1, 1};
static const int dir_y[8] = {0, 1, 0, -1, 1, 1, -1, -1};

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "lbm-d2q9", 8, 2, 1);
  int dims[2], nbr[4];
  MPI_Comm cart = corpus_cart(2, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  int coords[2], to[8], from[8], count[8];
  MPI_Cart_coords(cart, rank, 2, coords);
  for (int k = 0; k < 8; k++) {
    int c[2] = {coords[0] + dir_x[k], coords[1] + dir_y[k]};
    MPI_Cart_rank(cart, c, &to[k]);
    int b[2] = {coords[0] - dir_x[k], coords[1] - dir_y[k]};
    MPI_Cart_rank(cart, b, &from[k]);
    count[k] = dir_x[k] != 0 && dir_y[k] != 0 ? 1 : 3 * nw;
  }
  double* sbuf = calloc((size_t)24 * nw, sizeof(double));
  double* rbuf = calloc((size_t)24 * nw, sizeof(double));
  MPI_Request req[16];
  double mass = 1.0, total = 0.0;
  for (int step = 0; step < 2 * nw; step++) {
    for (int k = 0; k < 8; k++)
      MPI_Irecv(rbuf + (size_t)k * 3 * nw, count[k], MPI_DOUBLE, from[k], 0, cart, &req[k]);
    for (int k = 0; k < 8; k++)
      MPI_Isend(sbuf + (size_t)k * 3 * nw, count[k], MPI_DOUBLE, to[k], 0, cart, &req[8 + k]);
    MPI_Waitall(16, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(200.0 * nw * nw);
    if (step % 10 == 9)
      MPI_Allreduce(&mass, &total, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  if (rank == 0)
    printf("lbm-d2q9: np %d, grid %dx%d, %d^2 cells per rank, mass %g\n", np, dims[0], dims[1], nw, total);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
