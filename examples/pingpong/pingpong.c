/* pingpong: 2 ranks bounce a message back and forth, REPS times for each size in SIZES (bytes):
 * below, at and above SMPI's 64 KiB eager/rendezvous threshold. Rank 0 declares 1 Mflop of compute
 * before each size (smpi_execute_flops under SMPI), so the trace has one compute step too.
 * Build and run with any MPI, or record with SMPI: see record.sh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { REPS = 3, TAG = 1 };
static const int SIZES[] = {1, 1024, 65536, 1048576};

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np != 2) {
    if (rank == 0)
      fprintf(stderr, "pingpong needs exactly 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char* buf = calloc(1048576, 1);
  const int peer = 1 - rank;
  for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
#ifdef SMPI_H
    if (rank == 0)
      smpi_execute_flops(1e6);
#endif
    double t0 = MPI_Wtime();
    for (int r = 0; r < REPS; r++) {
      if (rank == 0) {
        MPI_Send(buf, SIZES[s], MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
        MPI_Recv(buf, SIZES[s], MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, SIZES[s], MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, SIZES[s], MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
      }
    }
    if (rank == 0)
      printf("pingpong: %8d bytes, round trip %.3f us\n", SIZES[s], (MPI_Wtime() - t0) / REPS * 1e6);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
