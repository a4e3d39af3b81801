/* Adaptive refinement that grows with the step (a shock or a front refined as it moves, AMR codes):
 * weak scaling on a periodic 1-D ring of ranks, NW base cells per rank.
 *
 *   amr-grow NW
 *
 * 8 steps s: the ranks in the first half of the ring are refined to level s/2, so they hold
 * NW * (1 + s/2) cells; the others stay at NW. Every step: MPI_Sendrecv of half the sender's cells
 * (doubles) to the right neighbour and then to the left one (tags 1, 2; a message's size is the
 * sender's, so the receiver asks with the largest size it may get), 15 flop per cell; every 4th step an
 * MPI_Allgather of the cell counts (the load balancer's view). */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  corpus_need_np(np, 2, "amr-grow");
  int nw = corpus_nw(argc, argv, "amr-grow", 8, 2, 2);
  int left = (rank + np - 1) % np, right = (rank + 1) % np, refined = rank < np / 2;
  size_t most = (size_t)nw * 5;
  double* sbuf = calloc(most, sizeof(double));
  double* rbuf = calloc(most, sizeof(double));
  long* counts = malloc(np * sizeof(long));
  for (int s = 0; s < 8; s++) {
    long cells = (long)nw * (1 + (refined ? s / 2 : 0));
    int half = (int)(cells / 2);
    MPI_Sendrecv(sbuf, half, MPI_DOUBLE, right, 1, rbuf, (int)most, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(sbuf, half, MPI_DOUBLE, left, 2, rbuf, (int)most, MPI_DOUBLE, right, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    DECLARE_FLOPS(15.0 * cells);
    if (s % 4 == 3)
      MPI_Allgather(&cells, 1, MPI_LONG, counts, 1, MPI_LONG, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("amr-grow: np %d, nw %d, rank 0 ends with %ld cells\n", np, nw, counts[0]);
  free(sbuf); free(rbuf); free(counts);
  MPI_Finalize();
  return 0;
}
