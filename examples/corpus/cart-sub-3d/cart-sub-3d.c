/* Reductions on the planes and lines of a 3-D grid (MPI_Cart_sub), weak scaling: every rank owns NW^3
 * points of the periodic MPI_Dims_create(np, 3) grid (the pencil/plane reductions of spectral-element
 * and plasma codes).
 *
 *   cart-sub-3d NW
 *
 * 6 steps: an MPI_Sendrecv with both neighbours along axis 2 (NW^2 doubles), 20 flop per point, an
 * MPI_Allreduce of NW doubles on the line along axis 0, an MPI_Reduce of NW/2 doubles to the plane's
 * rank 0 on the plane of axes 1 and 2, and an MPI_Bcast of 4 doubles from the line's rank 0. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "cart-sub-3d", 8, 2, 2);
  int dims[3], nbr[6];
  MPI_Comm cart = corpus_cart(3, 1, dims, nbr), line, plane;
  MPI_Comm_rank(cart, &rank);
  int keep_line[3] = {1, 0, 0}, keep_plane[3] = {0, 1, 1};
  MPI_Cart_sub(cart, keep_line, &line);
  MPI_Cart_sub(cart, keep_plane, &plane);
  int down = nbr[4], up = nbr[5];
  int face = nw * nw;
  double* sbuf = calloc((size_t)face, sizeof(double));
  double* rbuf = calloc((size_t)face, sizeof(double));
  double* lsum = calloc((size_t)nw, sizeof(double));
  double* psum = calloc((size_t)nw, sizeof(double));
  double params[4] = {0};
  for (int step = 0; step < 6; step++) {
    MPI_Sendrecv(sbuf, face, MPI_DOUBLE, up, 1, rbuf, face, MPI_DOUBLE, down, 1, cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv(sbuf, face, MPI_DOUBLE, down, 2, rbuf, face, MPI_DOUBLE, up, 2, cart, MPI_STATUS_IGNORE);
    DECLARE_FLOPS(20.0 * nw * nw * nw);
    MPI_Allreduce(sbuf, lsum, nw, MPI_DOUBLE, MPI_SUM, line);
    MPI_Reduce(lsum, psum, nw / 2, MPI_DOUBLE, MPI_SUM, 0, plane);
    MPI_Bcast(params, 4, MPI_DOUBLE, 0, line);
  }
  if (rank == 0)
    printf("cart-sub-3d: np %d, grid %dx%dx%d, %d^3 points per rank\n", np, dims[0], dims[1], dims[2], nw);
  free(sbuf); free(rbuf); free(lsum); free(psum);
  MPI_Comm_free(&line);
  MPI_Comm_free(&plane);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
