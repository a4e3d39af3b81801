/* Master-worker with tasks whose size and cost depend on the worker and the step (a parameter sweep
 * or a Monte Carlo farm with uneven work items); deterministic order, no wildcard receives.
 *
 *   master-worker-dyn NW
 *
 * 4 steps s: rank 0 sends worker w a task of (1 + (w + s) % 4) * NW doubles (tag s), in worker order;
 * the worker computes 1000 * NW * (1 + (w * s) % 3) flop and returns w % 3 + 1 doubles (tag 100 + s);
 * rank 0 receives the results in worker order, merges them (500 flop per worker) and broadcasts the
 * next step's 8 parameters (MPI_Bcast). */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  corpus_need_np(np, 2, "master-worker-dyn");
  int nw = corpus_nw(argc, argv, "master-worker-dyn", 8, 1, 1);
  double* task = calloc((size_t)4 * nw, sizeof(double));
  double result[3] = {0}, params[8] = {0};
  for (int s = 0; s < 4; s++) {
    if (rank == 0) {
      for (int w = 1; w < np; w++)
        MPI_Send(task, (1 + (w + s) % 4) * nw, MPI_DOUBLE, w, s, MPI_COMM_WORLD);
      for (int w = 1; w < np; w++)
        MPI_Recv(result, w % 3 + 1, MPI_DOUBLE, w, 100 + s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      DECLARE_FLOPS(500.0 * (np - 1));
    } else {
      MPI_Recv(task, (1 + (rank + s) % 4) * nw, MPI_DOUBLE, 0, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      DECLARE_FLOPS(1000.0 * nw * (1 + (rank * s) % 3));
      MPI_Send(result, rank % 3 + 1, MPI_DOUBLE, 0, 100 + s, MPI_COMM_WORLD);
    }
    MPI_Bcast(params, 8, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("master-worker-dyn: np %d, nw %d, 4 steps of %d tasks\n", np, nw, np - 1);
  free(task);
  MPI_Finalize();
  return 0;
}
