/* A code whose collective roots rotate with the step (ensemble or I/O aggregator rotation, a pivot row owned
 * by rank step mod np): strong scaling of NW^2 points.
 *
 *   rotating-root NW     (NW a multiple of 4)
 *
 * 12 steps; in step s: MPI_Bcast of NW doubles from root s mod np, 5 flop per point of the rank's share
 * (NW^2 / np points, the first NW^2 mod np ranks one more), MPI_Reduce of 4 doubles to root (s + 1) mod np,
 * which then does 100 flop per rank of the communicator. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "rotating-root", 16, 4, 4);
  double* row = calloc((size_t)nw, sizeof(double));
  double part[4] = {1, 2, 3, 4}, total[4];
  long points = block_extent((long)nw * nw, np, rank);
  for (int s = 0; s < 12; s++) {
    MPI_Bcast(row, nw, MPI_DOUBLE, s % np, MPI_COMM_WORLD);
    DECLARE_FLOPS(5.0 * points);
    MPI_Reduce(part, total, 4, MPI_DOUBLE, MPI_SUM, (s + 1) % np, MPI_COMM_WORLD);
    if (rank == (s + 1) % np)
      DECLARE_FLOPS(100.0 * np);
  }
  if (rank == 0)
    printf("rotating-root: np %d, %d^2 points\n", np, nw);
  free(row);
  MPI_Finalize();
  return 0;
}
