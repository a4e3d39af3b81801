/* 2-D Jacobi, strong scaling: a global NW x NW grid split over the non-periodic MPI_Dims_create(np, 2)
 * grid (block extents differ by one where the grid does not divide NW).
 *
 *   jacobi2d-strong NW
 *
 * 10 sweeps: MPI_Irecv/MPI_Isend with the up to 4 face neighbours (tag = direction; an x face carries
 * the local y extent, a y face the local x extent, in doubles), MPI_Waitall, 5 flop per local point,
 * and every 2nd sweep an MPI_Allreduce of the residual. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "jacobi2d-strong", 64, 1, 1);
  int dims[2], nbr[4], coords[2];
  MPI_Comm cart = corpus_cart(2, 0, dims, nbr);
  if (nw < dims[0] || nw < dims[1]) {
    fprintf(stderr, "jacobi2d-strong: NW %d is smaller than the process grid %dx%d\n", nw, dims[0], dims[1]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_rank(cart, &rank);
  MPI_Cart_coords(cart, rank, 2, coords);
  long ext[2] = {block_extent(nw, dims[0], coords[0]), block_extent(nw, dims[1], coords[1])};
  double* sbuf = calloc((size_t)(2 * (ext[0] + ext[1])), sizeof(double));
  double* rbuf = calloc((size_t)(2 * (ext[0] + ext[1])), sizeof(double));
  double res = 1.0, sum = 0.0;
  for (int it = 0; it < 10; it++) {
    MPI_Request req[8];
    int n = 0;
    for (int dir = 0; dir < 4; dir++)
      if (nbr[dir] != MPI_PROC_NULL)
        MPI_Irecv(rbuf, (int)ext[1 - dir / 2], MPI_DOUBLE, nbr[dir], dir ^ 1, cart, &req[n++]);
    for (int dir = 0; dir < 4; dir++)
      if (nbr[dir] != MPI_PROC_NULL)
        MPI_Isend(sbuf, (int)ext[1 - dir / 2], MPI_DOUBLE, nbr[dir], dir, cart, &req[n++]);
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(5.0 * ext[0] * ext[1]);
    if (it % 2 == 1)
      MPI_Allreduce(&res, &sum, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  if (rank == 0)
    printf("jacobi2d-strong: np %d, grid %dx%d, %dx%d points, residual %g\n", np, dims[0], dims[1], nw, nw, sum);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
