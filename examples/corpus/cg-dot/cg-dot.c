/* Conjugate gradient on the 5-point Laplacian of an NW x NW grid (HPCG's and NPB CG's dot products),
 * strong scaling: grid rows split over the ranks in blocks (1-D, non-periodic).
 *
 *   cg-dot NW     (NW >= np, a multiple of 4)
 *
 * NW/4 iterations (the iteration count grows with the problem, as CG's does): the matrix-vector
 * product's halo exchange with the rank above and below (MPI_Irecv/MPI_Isend of one grid row, NW
 * doubles, tags 1 and 2, MPI_Waitall) and its 9 flop per local point; the dot product p.Ap and the new
 * residual norm r.r, each an MPI_Allreduce of one double; three vector updates (2 flop per point each).
 * A final MPI_Allreduce checks the true residual. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "cg-dot", 16, 4, 4);
  if (nw < np) {
    fprintf(stderr, "cg-dot: NW %d must be at least np %d (one grid row per rank)\n", nw, np);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  long rows = block_extent(nw, np, rank), points = rows * nw;
  int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < np - 1 ? rank + 1 : MPI_PROC_NULL;
  double* sbuf = calloc((size_t)2 * nw, sizeof(double));
  double* rbuf = calloc((size_t)2 * nw, sizeof(double));
  double local[2] = {1.0, 1.0}, pAp = 0.0, rr = 0.0;
  for (int it = 0; it < nw / 4; it++) {
    /* The first and the last rank have one neighbour; they skip the other side rather than post
     * requests to MPI_PROC_NULL (which `gridcast import tit` rejects as a negative peer). */
    MPI_Request req[4];
    int n = 0;
    if (up != MPI_PROC_NULL)
      MPI_Irecv(rbuf, nw, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, &req[n++]);
    if (down != MPI_PROC_NULL)
      MPI_Irecv(rbuf + nw, nw, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &req[n++]);
    if (up != MPI_PROC_NULL)
      MPI_Isend(sbuf, nw, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &req[n++]);
    if (down != MPI_PROC_NULL)
      MPI_Isend(sbuf + nw, nw, MPI_DOUBLE, down, 2, MPI_COMM_WORLD, &req[n++]);
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(9.0 * points);
    DECLARE_FLOPS(2.0 * points);
    MPI_Allreduce(&local[0], &pAp, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    DECLARE_FLOPS(4.0 * points);
    MPI_Allreduce(&local[1], &rr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    DECLARE_FLOPS(2.0 * points);
  }
  double check = 0.0;
  MPI_Allreduce(&rr, &check, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf("cg-dot: np %d, %dx%d grid, %d iterations, rr %g\n", np, nw, nw, nw / 4, check);
  free(sbuf);
  free(rbuf);
  MPI_Finalize();
  return 0;
}
