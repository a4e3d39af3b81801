/* 3-D 7-point stencil, strong scaling: a global NW^3 grid split over the periodic MPI_Dims_create(np, 3)
 * grid (the plain Cartesian code a new user brings: faces are products of the local extents).
 *
 *   stencil3d-strong NW
 *
 * 8 iterations: MPI_Irecv/MPI_Isend with the 6 face neighbours (tag = direction; the face normal to
 * axis k carries the product of the other two local extents, in doubles), MPI_Waitall, 8 flop per
 * local point, MPI_Allreduce of the residual; after the loop MPI_Reduce of the norm to rank 0. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "stencil3d-strong", 32, 1, 1);
  int dims[3], nbr[6], coords[3];
  MPI_Comm cart = corpus_cart(3, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  MPI_Cart_coords(cart, rank, 3, coords);
  long ext[3], face[3];
  for (int k = 0; k < 3; k++)
    ext[k] = block_extent(nw, dims[k], coords[k]);
  for (int k = 0; k < 3; k++)
    face[k] = ext[(k + 1) % 3] * ext[(k + 2) % 3];
  size_t most = (size_t)(face[0] > face[1] ? (face[0] > face[2] ? face[0] : face[2]) : (face[1] > face[2] ? face[1] : face[2]));
  double* sbuf = calloc(6 * most, sizeof(double));
  double* rbuf = calloc(6 * most, sizeof(double));
  double res = 1.0, sum = 0.0, total = 0.0;
  for (int it = 0; it < 8; it++) {
    MPI_Request req[12];
    for (int dir = 0; dir < 6; dir++)
      MPI_Irecv(rbuf + dir * most, (int)face[dir / 2], MPI_DOUBLE, nbr[dir], dir ^ 1, cart, &req[dir]);
    for (int dir = 0; dir < 6; dir++)
      MPI_Isend(sbuf + dir * most, (int)face[dir / 2], MPI_DOUBLE, nbr[dir], dir, cart, &req[6 + dir]);
    MPI_Waitall(12, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(8.0 * ext[0] * ext[1] * ext[2]);
    MPI_Allreduce(&res, &sum, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_MAX, 0, cart);
  if (rank == 0)
    printf("stencil3d-strong: np %d, grid %dx%dx%d, %d^3 points, norm %g\n", np, dims[0], dims[1], dims[2], nw, total);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
