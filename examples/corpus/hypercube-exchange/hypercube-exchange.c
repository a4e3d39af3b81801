/* A hand-written recursive-doubling exchange (what codes that roll their own allreduce or butterfly FFT
 * do): weak scaling, NW x NW doubles per rank, np a power of two.
 *
 *   hypercube-exchange NW     (NW a multiple of 4)
 *
 * NW/4 steps; in each, log2(np) rounds: round k exchanges NW * 2^k doubles with partner rank XOR 2^k
 * (MPI_Sendrecv, tag k) and adds them in (1 flop per double received); then 20 flop per point and, every
 * 4th step, an MPI_Barrier. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "hypercube-exchange", 8, 4, 4);
  if ((np & (np - 1)) != 0) {
    fprintf(stderr, "hypercube-exchange: np must be a power of two (got %d)\n", np);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  size_t most = (size_t)nw * np;
  double* sbuf = calloc(most, sizeof(double));
  double* rbuf = calloc(most, sizeof(double));
  for (int step = 0; step < nw / 4; step++) {
    for (int k = 0; (1 << k) < np; k++) {
      int count = nw << k;
      MPI_Sendrecv(sbuf, count, MPI_DOUBLE, rank ^ (1 << k), k, rbuf, count, MPI_DOUBLE, rank ^ (1 << k), k,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      DECLARE_FLOPS((double)count);
    }
    DECLARE_FLOPS(20.0 * nw * nw);
    if (step % 4 == 3)
      MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("hypercube-exchange: np %d, %d^2 points per rank, %d steps\n", np, nw, nw / 4);
  free(sbuf);
  free(rbuf);
  MPI_Finalize();
  return 0;
}
