/* SUMMA matrix multiply on a P x Q = MPI_Dims_create(np, 2) grid with row and column communicators
 * made by MPI_Comm_split; strong scaling: NW x NW matrices split over the grid.
 *
 *   summa NW
 *
 * max(P, Q) panel steps k: the A panel (local rows x NW/max(P,Q) doubles) is broadcast along the row
 * communicator from column k % Q, the B panel (NW/max(P,Q) x local columns) along the column
 * communicator from row k % P, then 2*rows*cols*width flop. At the end an MPI_Allreduce of the row's
 * norm on the row communicator and an MPI_Reduce of it on the column communicator to its row 0. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "summa", 64, 1, 1);
  int dims[2] = {0, 0};
  MPI_Dims_create(np, 2, dims);
  int P = dims[0], Q = dims[1], prow = rank / Q, pcol = rank % Q;
  int steps = P > Q ? P : Q;
  if (nw < steps) {
    fprintf(stderr, "summa: NW %d is smaller than the process grid %dx%d\n", nw, P, Q);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm row, col;
  MPI_Comm_split(MPI_COMM_WORLD, prow, pcol, &row);
  MPI_Comm_split(MPI_COMM_WORLD, pcol, prow, &col);
  long rows = block_extent(nw, P, prow), cols = block_extent(nw, Q, pcol), width = nw / steps;
  double* a = calloc((size_t)(rows * width), sizeof(double));
  double* b = calloc((size_t)(width * cols), sizeof(double));
  for (int k = 0; k < steps; k++) {
    MPI_Bcast(a, (int)(rows * width), MPI_DOUBLE, k % Q, row);
    MPI_Bcast(b, (int)(width * cols), MPI_DOUBLE, k % P, col);
    DECLARE_FLOPS(2.0 * rows * cols * width);
  }
  double norm = 1.0, rownorm = 0.0, total = 0.0;
  MPI_Allreduce(&norm, &rownorm, 1, MPI_DOUBLE, MPI_SUM, row);
  MPI_Reduce(&rownorm, &total, 1, MPI_DOUBLE, MPI_SUM, 0, col);
  if (rank == 0)
    printf("summa: np %d, grid %dx%d, %dx%d matrices, norm %g\n", np, P, Q, nw, nw, total);
  free(a);
  free(b);
  MPI_Comm_free(&row);
  MPI_Comm_free(&col);
  MPI_Finalize();
  return 0;
}
