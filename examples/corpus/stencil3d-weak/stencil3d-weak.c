/* 3-D stencil with two fields, weak scaling: every rank owns NW^3 points on the non-periodic
 * MPI_Dims_create(np, 3) grid, so ranks on faces, edges and corners of the grid skip missing neighbours.
 *
 *   stencil3d-weak NW
 *
 * 6 steps, each: for each axis an MPI_Sendrecv up and one down of the velocity field (NW^2 doubles,
 * tag 10 + direction) and then of the pressure field (NW^2/2 doubles, tag 20 + direction), 30 flop
 * per point, an MPI_Allreduce (MAX) of the CFL number. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "stencil3d-weak", 8, 2, 2);
  int dims[3], nbr[6];
  MPI_Comm cart = corpus_cart(3, 0, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  int face = nw * nw;
  double* sbuf = calloc((size_t)face, sizeof(double));
  double* rbuf = calloc((size_t)face, sizeof(double));
  double cfl = 0.5, cflmax = 0.0;
  for (int step = 0; step < 6; step++) {
    for (int field = 0; field < 2; field++) {
      int count = field == 0 ? face : face / 2;
      for (int k = 0; k < 3; k++) {
        /* up: send to the upper neighbour, receive from the lower one; then the other way */
        MPI_Sendrecv(sbuf, count, MPI_DOUBLE, nbr[2 * k + 1], 10 * (field + 1) + 2 * k, rbuf, count, MPI_DOUBLE,
                     nbr[2 * k], 10 * (field + 1) + 2 * k, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(sbuf, count, MPI_DOUBLE, nbr[2 * k], 10 * (field + 1) + 2 * k + 1, rbuf, count, MPI_DOUBLE,
                     nbr[2 * k + 1], 10 * (field + 1) + 2 * k + 1, cart, MPI_STATUS_IGNORE);
      }
    }
    DECLARE_FLOPS(30.0 * nw * nw * nw);
    MPI_Allreduce(&cfl, &cflmax, 1, MPI_DOUBLE, MPI_MAX, cart);
  }
  if (rank == 0)
    printf("stencil3d-weak: np %d, grid %dx%dx%d, %d^3 points per rank, cfl %g\n", np, dims[0], dims[1], dims[2], nw, cflmax);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
