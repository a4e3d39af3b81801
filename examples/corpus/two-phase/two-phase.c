/* A code with two phases of different structure (a solver followed by an I/O or analysis stage):
 * weak scaling, NW x NW points per rank.
 *
 *   two-phase NW     (NW a multiple of 4)
 *
 * Phase 1, NW/4 steps on the periodic MPI_Dims_create(np, 2) grid: a halo exchange with the 4
 * neighbours (MPI_Sendrecv, NW doubles, tag = direction), 10 flop per point, an MPI_Allreduce.
 * Phase 2, analysis on the ranks as a ring: 3 rounds of MPI_Sendrecv to rank + 1 from rank - 1 of
 * NW^2/4 doubles (tag 50 + round), each followed by 2 flop per point; then an MPI_Gather of NW doubles
 * to rank 0, which alone writes the result (50 flop per gathered double). */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "two-phase", 8, 4, 4);
  int dims[2], nbr[4];
  MPI_Comm cart = corpus_cart(2, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  size_t big = (size_t)nw * nw / 4;
  double* sbuf = calloc(big, sizeof(double));
  double* rbuf = calloc(big, sizeof(double));
  double res = 1.0, sum = 0.0;
  for (int step = 0; step < nw / 4; step++) {
    for (int dir = 0; dir < 4; dir++)
      MPI_Sendrecv(sbuf, nw, MPI_DOUBLE, nbr[dir], dir, rbuf, nw, MPI_DOUBLE, nbr[dir ^ 1], dir, cart,
                   MPI_STATUS_IGNORE);
    DECLARE_FLOPS(10.0 * nw * nw);
    MPI_Allreduce(&res, &sum, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  int next = (rank + 1) % np, prev = (rank + np - 1) % np;
  for (int round = 0; round < 3; round++) {
    MPI_Sendrecv(sbuf, (int)big, MPI_DOUBLE, next, 50 + round, rbuf, (int)big, MPI_DOUBLE, prev, 50 + round,
                 cart, MPI_STATUS_IGNORE);
    DECLARE_FLOPS(2.0 * nw * nw);
  }
  double* all = rank == 0 ? calloc((size_t)nw * np, sizeof(double)) : NULL;
  MPI_Gather(sbuf, nw, MPI_DOUBLE, all, nw, MPI_DOUBLE, 0, cart);
  if (rank == 0) {
    DECLARE_FLOPS(50.0 * nw * np);
    printf("two-phase: np %d, grid %dx%d, %d^2 points per rank, residual %g\n", np, dims[0], dims[1], nw, sum);
  }
  free(all);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
