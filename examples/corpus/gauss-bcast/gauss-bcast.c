/* Textbook parallel Gaussian elimination (the MPI course's LU): an NW x NW system, rows dealt out
 * cyclically (row i on rank i mod np), strong scaling.
 *
 *   gauss-bcast NW     (NW a multiple of 4, at least 8)
 *
 * NW - 1 elimination steps; in step k the owner of row k (rank k mod np) scales its pivot row (NW - k
 * flop), broadcasts its NW - k + 1 remaining entries (MPI_Bcast, root k mod np), and every rank updates
 * its rows below k (2 flop per entry). Then an MPI_Allreduce of the residual and a back substitution
 * closed by an MPI_Allgather of every rank's share of the solution. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "gauss-bcast", 16, 8, 4);
  double* row = calloc((size_t)nw + 1, sizeof(double));
  for (int k = 0; k < nw - 1; k++) {
    int owner = k % np;
    if (rank == owner)
      DECLARE_FLOPS((double)(nw - k));
    MPI_Bcast(row, nw - k + 1, MPI_DOUBLE, owner, MPI_COMM_WORLD);
    /* rows i > k with i mod np == rank */
    long below = 0;
    for (int i = k + 1; i < nw; i++)
      if (i % np == rank)
        below++;
    DECLARE_FLOPS(2.0 * (double)below * (nw - k + 1));
  }
  double res = 1.0, total = 0.0;
  MPI_Allreduce(&res, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int mine = (int)block_extent(nw, np, 0);
  DECLARE_FLOPS(2.0 * mine * nw);
  double* part = calloc((size_t)mine, sizeof(double));
  double* x = calloc((size_t)mine * np, sizeof(double));
  MPI_Allgather(part, mine, MPI_DOUBLE, x, mine, MPI_DOUBLE, MPI_COMM_WORLD);
  if (rank == 0)
    printf("gauss-bcast: np %d, %d x %d system\n", np, nw, nw);
  free(x);
  free(part);
  free(row);
  MPI_Finalize();
  return 0;
}
