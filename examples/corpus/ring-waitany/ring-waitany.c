/* A 1-D periodic ring that completes its exchanges in whatever order they come (MPI_Waitany), with work that
 * depends on the rank (a static imbalance: rank mod 3 sets it): weak scaling, NW^2 points per rank.
 *
 *   ring-waitany NW     (NW a multiple of 4)
 *
 * NW/2 steps: MPI_Irecv from both neighbours, MPI_Isend of NW doubles to both (tags 0 and 1), MPI_Waitany
 * until the four complete, then (1 + rank mod 3) * 10 flop per point; an MPI_Allreduce of one double every
 * 2nd step. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "ring-waitany", 8, 4, 4);
  int left = (rank + np - 1) % np, right = (rank + 1) % np;
  double* out[2] = {calloc((size_t)nw, sizeof(double)), calloc((size_t)nw, sizeof(double))};
  double* in[2] = {calloc((size_t)nw, sizeof(double)), calloc((size_t)nw, sizeof(double))};
  double x = 1.0, sum = 0.0;
  for (int step = 0; step < nw / 2; step++) {
    MPI_Request req[4];
    MPI_Irecv(in[0], nw, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in[1], nw, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(out[0], nw, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(out[1], nw, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[3]);
    for (int done = 0; done < 4; done++) {
      int which;
      MPI_Waitany(4, req, &which, MPI_STATUS_IGNORE);
    }
    DECLARE_FLOPS((1.0 + rank % 3) * 10.0 * nw * nw);
    if (step % 2 == 1)
      MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("ring-waitany: np %d, %d^2 points per rank, %g\n", np, nw, sum);
  for (int k = 0; k < 2; k++) {
    free(out[k]);
    free(in[k]);
  }
  MPI_Finalize();
  return 0;
}
