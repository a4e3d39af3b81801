/* Does the state of the buffers change what a shared-memory message costs? (bench/README.md,
 * "Collective timings"). Each figure is one operation timed alone between two barriers, the median of
 * 400 on each rank, the slower rank's (as gridcast-mpi-bench times the collectives):
 *
 *   one-way, ping-pong buffers: rank 0 sends the buffer that the previous round trip moved both ways
 *       (rank 1 received into it and sent it back), as the calibration's ping-pong curve does;
 *   one-way, fresh/own buffers: rank 0 rewrites its send buffer first and rank 1 receives into a
 *       buffer of its own, as an application sends data it has just computed;
 *   exchange, swapped buffers: MPI_Sendrecv of the buffer the previous exchange received, into the one
 *       it sent, as the calibration's exchange curve does;
 *   exchange, fresh/own buffers: each rank rewrites its send buffer first and receives into its own.
 *
 *   mpicc -O2 bench/mpi/buffer_state_probe.c -o /tmp/buffer_state_probe
 *   mpirun --oversubscribe --bind-to none -np 2 /tmp/buffer_state_probe   (add --allow-run-as-root as root)
 */
#include "probe.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kCalls = 400, kMaxBytes = 1 << 20 };

/* median of this rank's calls, the larger of the two ranks' (on rank 0) */
static double slowest_median(double* t, int n)
{
  qsort(t, (size_t)n, sizeof(double), by_value);
  double median = t[n / 2], slowest = 0;
  MPI_Reduce(&median, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char** argv)
{
  const int rank = start_two_ranks(&argc, &argv, "buffer_state_probe");
  const int peer = 1 - rank;
  static double t[kCalls];
  char* a = malloc(kMaxBytes);
  char* b = malloc(kMaxBytes);
  if (a == NULL || b == NULL)
    MPI_Abort(MPI_COMM_WORLD, 1);
  memset(a, 1, kMaxBytes);
  memset(b, 2, kMaxBytes);
  const int sizes[] = {2048, 32768, 524288};
  for (int s = 0; s < 3; ++s) {
    const int n = sizes[s];
    for (int fresh = 0; fresh < 2; ++fresh) {
      for (int i = 0; i < kCalls; ++i) {
        if (fresh) {
          if (rank == 0)
            memset(a, i & 0xff, (size_t)n);
        } else if (rank == 0) { /* a round trip of the buffer first, as in the ping-pong */
          MPI_Send(a, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
          MPI_Recv(a, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(a, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(a, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0)
          MPI_Send(a, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        else
          MPI_Recv(fresh ? b : a, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t[i] = MPI_Wtime() - t0;
      }
      double us = slowest_median(t, kCalls) * 1e6;
      if (rank == 0)
        printf("%7d B  one-way   %-18s %9.3f us\n", n, fresh ? "fresh/own buffers" : "ping-pong buffers", us);
    }
    for (int fresh = 0; fresh < 2; ++fresh) {
      char *x = a, *y = b;
      for (int i = 0; i < kCalls; ++i) {
        if (fresh)
          memset(a, i & 0xff, (size_t)n);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Sendrecv(fresh ? a : x, n, MPI_BYTE, peer, 3, fresh ? b : y, n, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        t[i] = MPI_Wtime() - t0;
        if (!fresh) { /* the next exchange sends what this one received */
          char* swap = x;
          x = y;
          y = swap;
        }
      }
      double us = slowest_median(t, kCalls) * 1e6;
      if (rank == 0)
        printf("%7d B  exchange  %-18s %9.3f us\n", n, fresh ? "fresh/own buffers" : "swapped buffers", us);
    }
  }
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
