/* 2-D Jacobi solver on a periodic MPI_Cart grid whose global reductions overlap its halo exchange and
 * sweep through nonblocking collectives, weak scaling.
 *
 *   overlap_solver NW   NW = local edge length: every rank owns NW^2 points (NW a multiple of 4)
 *
 * Every iteration (NW of them, so the loop count grows with NW):
 *   MPI_Ibcast of the iteration's parameters (NW doubles) from rank 0, which overlaps the posting of
 *   the halo exchange with the 4 face neighbours (MPI_Irecv/MPI_Isend, tag = direction, NW doubles each);
 *   MPI_Wait on it, the sweep (8 flop per point), then MPI_Waitall on the halo requests.
 * Every 4th iteration is a convergence check: MPI_Ireduce of the residual (one double) to rank 0, posted
 *   first, overlaps the halo exchange and the sweep and is waited for after the sweep; the broadcast
 *   carries rank 0's verdict in the next iteration; rank 0 alone logs the previous check's residual
 *   (1000 NW flop after posting the broadcast, 500 NW after posting the receives), and after the halo's
 *   MPI_Waitall every rank updates its relaxation factor (4 NW flop).
 * At the end: MPI_Iallreduce of the norm, MPI_Igather of each rank's iteration count to rank 0 and
 * MPI_Ibarrier, completed by one MPI_Waitall of the three.
 * Compute is declared with smpi_execute_flops under SMPI (see record.sh).
 *
 * The collectives' MPI_Wait calls come before the halo's MPI_Waitall on purpose: SMPI's time-independent
 * trace writes "waitall N" without saying which requests, and a reader (gridcast's, SMPI's replay)
 * completes every pending request there, so a collective still pending at a waitall it does not belong
 * to would be taken as completed by it. The iteration reduces to rank 0 (and lets the broadcast carry
 * the verdict) rather than with MPI_Iallreduce because SMPI 3.32 runs MPI_Iallreduce and MPI_Iallgather
 * as np^2 point-to-point messages: a recording at np 256 takes minutes per call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "../common/example.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = example_nw(argc, argv, 8, 4, "overlap_solver");
  int dims[2] = {0, 0}, periods[2] = {1, 1};
  MPI_Dims_create(np, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  MPI_Comm_rank(cart, &rank);
  int nbr[4];
  for (int d = 0; d < 2; d++)
    MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]); /* [2d] = lower, [2d+1] = upper */

  size_t edge = (size_t)nw;
  double* sendbuf = calloc(4 * edge, sizeof(double));
  double* recvbuf = calloc(4 * edge, sizeof(double));
  double* params = calloc(edge, sizeof(double));
  MPI_Request halo[8], red, upd;
  double local = 1.0, residual = 0.0;
  for (int it = 0; it < nw; it++) {
    const int check = it % 4 == 3;
    if (check) /* the residual of the previous sweep is reduced while this iteration runs */
      MPI_Ireduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, 0, cart, &red);
    MPI_Ibcast(params, (int)edge, MPI_DOUBLE, 0, cart, &upd);
    if (check && rank == 0)
      DECLARE_FLOPS(1000.0 * nw); /* rank 0 logs the previous check's residual while the broadcast runs */
    for (int dir = 0; dir < 4; dir++)
      MPI_Irecv(recvbuf + dir * edge, (int)edge, MPI_DOUBLE, nbr[dir], dir ^ 1, cart, &halo[dir]);
    if (check && rank == 0)
      DECLARE_FLOPS(500.0 * nw); /* and appends it to its history while the receives are posted */
    for (int dir = 0; dir < 4; dir++)
      MPI_Isend(sendbuf + dir * edge, (int)edge, MPI_DOUBLE, nbr[dir], dir, cart, &halo[4 + dir]);
    MPI_Wait(&upd, MPI_STATUS_IGNORE); /* the sweep needs the parameters */
    DECLARE_FLOPS(8.0 * nw * nw);
    if (check)
      MPI_Wait(&red, MPI_STATUS_IGNORE);
    MPI_Waitall(8, halo, MPI_STATUSES_IGNORE);
    local = residual * 0.5 + params[0];
    /* Every rank updates its relaxation factor. Ending the check iteration with a call a plain one lacks
     * also matters to the trace model: without it, the non-root ranks' iterations fold as a loop rotated
     * to start at the waitall, whose shape at 2 check periods (Nw 8) differs from the one at 3 or more.
     * Rank 0's own computes are apart from it and from each other: adjacent computes of different amounts
     * would fold into one loop; and two of them set rank 0's rolled trace more than the 3 % Myers
     * threshold apart from the others', so that it gets a trace group of its own. */
    if (check)
      DECLARE_FLOPS(4.0 * nw);
  }
  double norm = residual, total = 0.0;
  int iters = nw;
  int* all_iters = calloc((size_t)np, sizeof(int));
  MPI_Request fin[3];
  MPI_Iallreduce(&norm, &total, 1, MPI_DOUBLE, MPI_MAX, cart, &fin[0]);
  MPI_Igather(&iters, 1, MPI_INT, all_iters, 1, MPI_INT, 0, cart, &fin[1]);
  MPI_Ibarrier(cart, &fin[2]);
  MPI_Waitall(3, fin, MPI_STATUSES_IGNORE);
  if (rank == 0)
    printf("overlap_solver: np %d, dims %dx%d, nw %d, residual %g\n", np, dims[0], dims[1], nw, total);
  free(all_iters);
  free(params);
  free(sendbuf);
  free(recvbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
