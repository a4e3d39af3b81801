/* An all-pairs particle code (direct N-body, small molecular systems): strong scaling of 16 NW
 * particles dealt out in blocks, the first (16 NW) mod np ranks one more.
 *
 *   allgatherv-blocks NW     (NW a multiple of 4)
 *
 * 10 steps; in each, MPI_Allgatherv of every rank's positions (3 doubles per particle, counts per rank
 * from the block split), 20 flop per pair of (own particle, any particle), MPI_Allreduce of the energy,
 * and every 2nd step an MPI_Allreduce of 3 doubles (the total momentum). */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "allgatherv-blocks", 16, 4, 4);
  long n = 16L * nw;
  int* counts = malloc(sizeof(int) * (size_t)np);
  int* displs = malloc(sizeof(int) * (size_t)np);
  int off = 0;
  for (int r = 0; r < np; r++) {
    counts[r] = 3 * (int)block_extent(n, np, r);
    displs[r] = off;
    off += counts[r];
  }
  double* pos = calloc((size_t)off, sizeof(double));
  double e = 1.0, etot, p[3] = {0, 0, 0}, ptot[3];
  long mine = block_extent(n, np, rank);
  for (int step = 0; step < 10; step++) {
    MPI_Allgatherv(pos + displs[rank], counts[rank], MPI_DOUBLE, pos, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    DECLARE_FLOPS(20.0 * (double)mine * (double)n);
    MPI_Allreduce(&e, &etot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (step % 2 == 1)
      MPI_Allreduce(p, ptot, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("allgatherv-blocks: np %d, %ld particles\n", np, n);
  free(pos);
  free(displs);
  free(counts);
  MPI_Finalize();
  return 0;
}
