/* What does a collective timed alone between barriers measure? (docs/guides/calibration.md, "Collective
 * timings"). An 8 B MPI_Allreduce between two ranks, timed two ways, on each rank:
 *
 *   per call:  (barrier, barrier, timed allreduce) x 4000; percentiles and mean of the calls, as
 *              gridcast-mpi-bench's former method `median-call-slowest-rank` timed them (OSU's layout);
 *   loop:      barrier, then 4000 back-to-back allreduces timed together, divided by 4000, as
 *              gridcast-mpi-bench times the collectives now (`loop-mean-slowest-rank`, IMB's loop);
 *   ping-pong: 4000 round trips of 8 B, half the mean round trip, as the calibration's curve.
 *
 * On the 2-core VM of 2026-11-22 (15:58 UTC, load 10, real-time priority, 6 runs): per call median
 * 0.41-0.42 us, mean 0.44-0.45 us (the barrier's exit skew lands in every call), loop 0.41-0.42 us a
 * call, ping-pong 0.35 us one way. In the VM's intermittent fast state (docs/guides/calibration.md) the per
 * call figure fell to 0.16 us on both ranks.
 *
 *   mpicc -O2 bench/mpi/percall_probe.c -o /tmp/percall_probe
 *   mpirun --oversubscribe --bind-to none -np 2 /tmp/percall_probe   (add --allow-run-as-root as root)
 */
#include "probe.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kCalls = 4000 };

int main(int argc, char** argv)
{
  const int rank = start_two_ranks(&argc, &argv, "percall_probe");
  static double t[kCalls];
  double x[1] = {0}, y[1] = {0};
  for (int i = 0; i < 100; ++i) /* warm-up */
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

  double per_call_mean = 0;
  for (int i = 0; i < kCalls; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t[i] = MPI_Wtime() - t0;
    per_call_mean += t[i] / kCalls;
  }
  qsort(t, kCalls, sizeof(double), by_value);

  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < kCalls; ++i)
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double loop = (MPI_Wtime() - t0) / kCalls;

  char buf[8] = {0};
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int i = 0; i < kCalls; ++i) {
    if (rank == 0) {
      MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  double one_way = (MPI_Wtime() - t0) / kCalls / 2;

  for (int r = 0; r < 2; ++r) {
    if (r == rank)
      printf("rank %d allreduce 8 B per call: p10 %.3f median %.3f p90 %.3f mean %.3f us; loop %.3f us a call; "
             "ping-pong one-way %.3f us\n",
             rank, t[kCalls / 10] * 1e6, t[kCalls / 2] * 1e6, t[9 * kCalls / 10] * 1e6, per_call_mean * 1e6,
             loop * 1e6, one_way * 1e6);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
