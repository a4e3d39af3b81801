/* Master-worker task farm with wildcard receives.
 *
 *   master_worker NW     NW = tasks per worker; a task is NW doubles
 *
 * Workers ask for work (tag REQUEST), the master answers whoever asked first (MPI_Recv with
 * MPI_ANY_SOURCE, reply to status.MPI_SOURCE) with a task (tag TASK) until NW*(np-1) tasks are handed
 * out, then with a STOP message. Workers receive with MPI_ANY_TAG and stop on STOP. Compute is declared
 * with smpi_execute_flops under SMPI (see record.sh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef SMPI_H  /* defined by SMPI's mpi.h */
#define DECLARE_FLOPS(f) smpi_execute_flops(f)
#else
#define DECLARE_FLOPS(f) ((void)(f))
#endif

enum { REQUEST = 1, TASK = 2, STOP = 3 };

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = argc > 1 ? atoi(argv[1]) : 4;
  if (np < 2 || nw < 1) {
    fprintf(stderr, "master_worker: needs 2 ranks or more and NW >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double* task = calloc((size_t)nw, sizeof(double));
  double result = 0.0;
  if (rank == 0) {
    long tasks = (long)nw * (np - 1), done = 0;
    MPI_Status st;
    for (long t = 0; t < tasks; t++) {
      MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, REQUEST, MPI_COMM_WORLD, &st);
      MPI_Send(task, nw, MPI_DOUBLE, st.MPI_SOURCE, TASK, MPI_COMM_WORLD);
    }
    for (int w = 1; w < np; w++) {  /* the last request of every worker gets STOP */
      MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, REQUEST, MPI_COMM_WORLD, &st);
      MPI_Send(NULL, 0, MPI_DOUBLE, st.MPI_SOURCE, STOP, MPI_COMM_WORLD);
      done++;
    }
    printf("master_worker: np %d, %ld tasks of %d doubles, %ld workers stopped\n", np, tasks, nw, done);
  } else {
    MPI_Status st;
    for (;;) {
      MPI_Send(&result, 1, MPI_DOUBLE, 0, REQUEST, MPI_COMM_WORLD);
      MPI_Recv(task, nw, MPI_DOUBLE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == STOP)
        break;
      DECLARE_FLOPS(20000.0 * nw);
      result += 1.0;
    }
  }
  free(task);
  MPI_Finalize();
  return 0;
}
