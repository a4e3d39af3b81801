/* Is Open MPI's bcast at np 2 faster than one message? (bench/README.md, "Collectives at np 2")
 *
 *   mpicc -O2 bench/mpi/bcast_probe.c -o /tmp/bcast_probe
 *   mpirun --oversubscribe --bind-to none -np 2 /tmp/bcast_probe            # add --allow-run-as-root as root
 *
 * For 64 KiB, 1 MiB and 16 MiB, rank 0 prints the median over 15 repetitions (each about 2 ms of calls) of:
 *   pingpong      one-way time of a ping-pong, buffers never rewritten (as gridcast calibrate measures it)
 *   bcast         what MPI_Bcast adds to a loop of barriers, the send buffer rewritten before each call
 *                 (as gridcast calibrate timed the collectives before the loop method of docs/guides/calibration.md)
 *   send/recv     the same loop with MPI_Send (rank 0) / MPI_Recv (rank 1) of the same buffer instead
 *   bcast cold    the bcast loop without rewriting the buffer
 * If bcast and send/recv agree, the bcast is one message (Open MPI 4.1's fixed rules at np 2 send it
 * unsegmented) and what makes it faster than the ping-pong is how the data sits in the caches, not the
 * collective's algorithm. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPS = 15 };

static int rank;
static char *a, *b;

static int cmp(const void* x, const void* y)
{
  double d = *(const double*)x - *(const double*)y;
  return d < 0 ? -1 : d > 0;
}

static double median(double* v, int n)
{
  qsort(v, n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* mode 0: ping-pong round trips; 1: barrier + bcast; 2: barrier + send/recv; 3: barrier + bcast, no
   rewrite; 4: barriers alone (with rewrite); 5: barriers alone (no rewrite). */
static void body(int mode, int n, int bytes)
{
  for (int i = 0; i < n; ++i) {
    if (mode == 0) {
      if (rank == 0) {
        MPI_Send(a, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(b, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(b, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(a, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
      continue;
    }
    if (mode == 1 || mode == 2 || mode == 4)
      memset(a, i & 0xff, (size_t)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mode == 1 || mode == 3)
      MPI_Bcast(a, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (mode == 2) {
      if (rank == 0)
        MPI_Send(a, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      else
        MPI_Recv(a, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
}

/* Seconds per call of `mode` on the slowest rank. */
static double timed(int mode, int n, int bytes)
{
  double t, slowest;
  MPI_Barrier(MPI_COMM_WORLD);
  t = MPI_Wtime();
  body(mode, n, bytes);
  t = (MPI_Wtime() - t) / n;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char** argv)
{
  const int sizes[] = {64 << 10, 1 << 20, 16 << 20};
  const char* names[] = {"pingpong", "bcast", "send/recv", "bcast cold"};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  a = malloc(16 << 20);
  b = malloc(16 << 20);
  memset(a, 1, 16 << 20);
  memset(b, 2, 16 << 20);
  for (int s = 0; s < 3; ++s) {
    int bytes = sizes[s];
    double v[4][REPS];
    body(0, 2, bytes);
    int n = (int)(2e-3 / timed(0, 2, bytes));  /* about 2 ms of round trips */
    n = n < 2 ? 2 : n;
    for (int r = 0; r < REPS; ++r) {  /* interleaved, so that load changes touch every variant alike */
      v[0][r] = timed(0, n, bytes) / 2;
      v[1][r] = timed(1, n, bytes) - timed(4, n, bytes);
      v[2][r] = timed(2, n, bytes) - timed(4, n, bytes);
      v[3][r] = timed(3, n, bytes) - timed(5, n, bytes);
    }
    if (rank == 0) {
      printf("%9d B:", bytes);
      for (int k = 0; k < 4; ++k)
        printf("  %s %.2f us", names[k], median(v[k], REPS) * 1e6);
      printf("\n");
      fflush(stdout);
    }
  }
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
