/* A linear pipeline with rank-dependent branches.
 *
 *   pipeline NW     NW = problem size: NW/64 items flow through the pipeline, each of 8*NW/np bytes
 *
 * Rank 0 produces items and sends them to rank 1; middle ranks receive from rank-1, work, and send to
 * rank+1; the last rank consumes. Then the middle ranks pair up by parity (odd ranks send their state
 * to rank+1, even ranks receive it from rank-1), and everybody reduces a checksum to the LAST rank. So
 * there are four kinds of rank: first, last, middle even, middle odd. Compute is declared with
 * smpi_execute_flops under SMPI (see record.sh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "../common/example.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = argc > 1 ? atoi(argv[1]) : 512;
  if (np < 4 || np % 2 != 0 || nw < 64 || nw % 64 != 0 || nw % np != 0) {
    fprintf(stderr, "pipeline: needs an even np >= 4 and NW a multiple of 64 and of np\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int items = nw / 64;
  int block = nw / np;  /* doubles per item */
  double* buf = calloc((size_t)block, sizeof(double));
  double sum = 0.0, total = 0.0;
  for (int i = 0; i < items; i++) {
    if (rank == 0) {
      DECLARE_FLOPS(100.0 * block);  /* produce */
      MPI_Send(buf, block, MPI_DOUBLE, 1, 10, MPI_COMM_WORLD);
    } else if (rank == np - 1) {
      MPI_Recv(buf, block, MPI_DOUBLE, rank - 1, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      DECLARE_FLOPS(50.0 * block);  /* consume */
      sum += buf[0];
    } else {
      MPI_Recv(buf, block, MPI_DOUBLE, rank - 1, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      DECLARE_FLOPS(200.0 * block);  /* transform */
      MPI_Send(buf, block, MPI_DOUBLE, rank + 1, 10, MPI_COMM_WORLD);
    }
  }
  if (rank > 0 && rank < np - 1) {
    if (rank % 2 == 1)
      MPI_Send(buf, block, MPI_DOUBLE, rank + 1, 20, MPI_COMM_WORLD);
    else
      MPI_Recv(buf, block, MPI_DOUBLE, rank - 1, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, np - 1, MPI_COMM_WORLD);
  if (rank == np - 1)
    printf("pipeline: np %d, %d items of %d doubles, checksum %g\n", np, items, block, total);
  free(buf);
  MPI_Finalize();
  return 0;
}
