/* ring-halo: a small but real MPI program whose TIT trace exercises the main replay paths.
 *
 * A 2-D Jacobi solver on a periodic NPX x NPY process grid (MPI_Dims_create), NX x NY points per rank.
 * Every iteration:
 *   1. halo exchange with the 4 neighbours: MPI_Irecv x4, MPI_Isend x4, MPI_Waitall    (eager, 4 KiB)
 *   2. the Jacobi sweep (declared to SMPI as 4 flops per point, see below)
 *   3. a ring pass: a 128 KiB buffer travels 0 -> 1 -> ... -> np-1 -> 0 with blocking
 *      MPI_Send/MPI_Recv                                                            (rendezvous)
 *   4. monitoring: every rank but 0 sends its local residual to rank 0, which receives them with
 *      MPI_ANY_SOURCE in arrival order
 *   5. MPI_Allreduce of the residual (the convergence test of a real solver)
 *
 * Build and run with any MPI (mpicc; mpirun -np 8 ./ring_halo) or with SMPI, see record.sh.
 * Compute cost: under SMPI (SMPI_H is defined by SMPI's mpi.h) the sweep declares its cost with
 * smpi_execute_flops(), and record.sh records with smpi/simulate-computation:no, so the trace holds
 * exactly these flops whatever the recording machine: the traces re-record byte for byte.
 * Only MPI_COMM_WORLD is used: TI traces do not record communicators.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NX = 512, NY = 512, ITERS = 20, RING_DOUBLES = 16384 /* 128 KiB */ };
enum { TAG_EAST = 0, TAG_WEST = 1, TAG_NORTH = 2, TAG_SOUTH = 3, TAG_RING = 10, TAG_MONITOR = 11 };

#define AT(u, i, j) ((u)[(size_t)(i) * (NY + 2) + (size_t)(j)])

static int wrap(int c, int n) { return (c + n) % n; }

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);

  /* Process grid, row-major like MPI_Cart_create (computed by hand: the trace keeps no communicator). */
  int dims[2] = {0, 0};
  MPI_Dims_create(np, 2, dims);
  const int px = rank / dims[1], py = rank % dims[1];
  const int north = wrap(px - 1, dims[0]) * dims[1] + py, south = wrap(px + 1, dims[0]) * dims[1] + py;
  const int west = px * dims[1] + wrap(py - 1, dims[1]), east = px * dims[1] + wrap(py + 1, dims[1]);
  const int next = (rank + 1) % np, prev = (rank + np - 1) % np;

  double* u    = calloc((size_t)(NX + 2) * (NY + 2), sizeof *u);
  double* v    = calloc((size_t)(NX + 2) * (NY + 2), sizeof *v);
  double* ring = calloc(RING_DOUBLES, sizeof *ring);
  double *send_w = malloc(NX * sizeof(double)), *send_e = malloc(NX * sizeof(double));
  double *recv_w = malloc(NX * sizeof(double)), *recv_e = malloc(NX * sizeof(double));
  if (!u || !v || !ring || !send_w || !send_e || !recv_w || !recv_e) {
    fprintf(stderr, "rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int i = 1; i <= NX; i++) /* a hot spot on rank 0, so the residual means something */
    for (int j = 1; j <= NY; j++)
      AT(u, i, j) = (rank == 0 && abs(i - NX / 2) < 16 && abs(j - NY / 2) < 16) ? 100.0 : 0.0;

  double global_residual = 0.0;
  for (int it = 0; it < ITERS; it++) {
    /* 1. Halo exchange. Messages travelling east carry TAG_EAST, and so on: with an extent-2
     *    dimension both neighbours are the same rank and the tag tells the two messages apart. */
    MPI_Request req[8];
    MPI_Irecv(&AT(u, 0, 1), NY, MPI_DOUBLE, north, TAG_SOUTH, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&AT(u, NX + 1, 1), NY, MPI_DOUBLE, south, TAG_NORTH, MPI_COMM_WORLD, &req[1]);
    MPI_Irecv(recv_w, NX, MPI_DOUBLE, west, TAG_EAST, MPI_COMM_WORLD, &req[2]);
    MPI_Irecv(recv_e, NX, MPI_DOUBLE, east, TAG_WEST, MPI_COMM_WORLD, &req[3]);
    for (int i = 0; i < NX; i++) {
      send_w[i] = AT(u, i + 1, 1);
      send_e[i] = AT(u, i + 1, NY);
    }
    MPI_Isend(&AT(u, 1, 1), NY, MPI_DOUBLE, north, TAG_NORTH, MPI_COMM_WORLD, &req[4]);
    MPI_Isend(&AT(u, NX, 1), NY, MPI_DOUBLE, south, TAG_SOUTH, MPI_COMM_WORLD, &req[5]);
    MPI_Isend(send_w, NX, MPI_DOUBLE, west, TAG_WEST, MPI_COMM_WORLD, &req[6]);
    MPI_Isend(send_e, NX, MPI_DOUBLE, east, TAG_EAST, MPI_COMM_WORLD, &req[7]);
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < NX; i++) {
      AT(u, i + 1, 0)      = recv_w[i];
      AT(u, i + 1, NY + 1) = recv_e[i];
    }

    /* 2. Jacobi sweep: 4 flops per point (3 adds, 1 multiply), plus the residual. */
    double local_residual = 0.0;
    for (int i = 1; i <= NX; i++)
      for (int j = 1; j <= NY; j++) {
        AT(v, i, j) = 0.25 * (AT(u, i - 1, j) + AT(u, i + 1, j) + AT(u, i, j - 1) + AT(u, i, j + 1));
        local_residual += fabs(AT(v, i, j) - AT(u, i, j));
      }
#ifdef SMPI_H
    smpi_execute_flops(4.0 * NX * NY);
#endif
    double* tmp = u;
    u           = v;
    v           = tmp;

    /* 3. Ring pass of a 128 KiB buffer (blocking, above SMPI's 64 KiB eager threshold). */
    if (rank == 0) {
      ring[0] = local_residual;
      MPI_Send(ring, RING_DOUBLES, MPI_DOUBLE, next, TAG_RING, MPI_COMM_WORLD);
      MPI_Recv(ring, RING_DOUBLES, MPI_DOUBLE, prev, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(ring, RING_DOUBLES, MPI_DOUBLE, prev, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ring[0] += local_residual;
      MPI_Send(ring, RING_DOUBLES, MPI_DOUBLE, next, TAG_RING, MPI_COMM_WORLD);
    }

    /* 4. Monitoring: rank 0 takes the reports in whatever order they arrive. */
    if (rank == 0) {
      double worst = local_residual, report;
      for (int k = 1; k < np; k++) {
        MPI_Recv(&report, 1, MPI_DOUBLE, MPI_ANY_SOURCE, TAG_MONITOR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        worst = fmax(worst, report);
      }
      (void)worst;
    } else {
      MPI_Send(&local_residual, 1, MPI_DOUBLE, 0, TAG_MONITOR, MPI_COMM_WORLD);
    }

    /* 5. Global residual. */
    MPI_Allreduce(&local_residual, &global_residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }

  if (rank == 0)
    printf("ring-halo: %d ranks on a %dx%d grid, %d iterations, residual %.6g\n", np, dims[0], dims[1], ITERS,
           global_residual);
  free(u);
  free(v);
  free(ring);
  free(send_w);
  free(send_e);
  free(recv_w);
  free(recv_e);
  MPI_Finalize();
  return 0;
}
