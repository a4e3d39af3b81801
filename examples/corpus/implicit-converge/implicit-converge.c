/* Implicit time stepping whose solver iterates until it converges: the iteration count of each step
 * follows the data (the step's right-hand side), not only the size.
 *
 *   implicit-converge NW
 *
 * The global (NW*8) x (NW*8) grid is split over the non-periodic MPI_Dims_create(np, 2) grid. NW/2 steps
 * (a fixed simulated time, the time step shrinking with the cell), each: an explicit predictor (20 flop per local cell), then a Jacobi-preconditioned solve that repeats
 *   a halo exchange with the face neighbours (MPI_Irecv / MPI_Isend / MPI_Waitall, one local face each),
 *   the smoother (10 flop per local cell) and an MPI_Allreduce (SUM) of the residual,
 * until the residual is below 1e-6 of its start. The residual contracts by 1 - 8/NW per iteration (a
 * larger grid converges more slowly) and starts from a value that depends on the step (splitmix64 of the
 * step), so steps take different numbers of iterations, in an order no formula of the step gives; their
 * mean grows about linearly with NW. After the solve, an MPI_Allreduce (MAX) of the time step. */
#include "../corpus.h"

#include <math.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "implicit-converge", 16, 16, 8);
  int dims[2], nbr[4], coords[2];
  MPI_Comm cart = corpus_cart(2, 0, dims, nbr);
  int crank;
  MPI_Comm_rank(cart, &crank);
  MPI_Cart_coords(cart, crank, 2, coords);
  const long nx = block_extent((long)nw * 8, dims[0], coords[0]);
  const long ny = block_extent((long)nw * 8, dims[1], coords[1]);
  const long cells = nx * ny;
  double* out = calloc((size_t)(nx > ny ? nx : ny) * 4, sizeof(double));
  double* in  = calloc((size_t)(nx > ny ? nx : ny) * 4, sizeof(double));
  const double rho = 1.0 - 8.0 / nw;
  long total_iterations = 0;
  const int steps = nw / 2;
  for (int step = 0; step < steps; step++) {
    DECLARE_FLOPS(20.0 * cells);
    const double start = 1.0 + (double)(corpus_mix((unsigned long long)step) % 4000) / 1000.0;  /* 1..5 */
    double residual = start;
    while (residual > 1e-6) {
      MPI_Request req[8];
      int n = 0;
      for (int k = 0; k < 4; k++) {
        if (nbr[k] == MPI_PROC_NULL)
          continue;
        const long face = k < 2 ? ny : nx;  /* along axis 0 the face is the local y extent */
        MPI_Irecv(in + k * (nx > ny ? nx : ny), (int)face, MPI_DOUBLE, nbr[k], k, cart, &req[n++]);
        MPI_Isend(out + k * (nx > ny ? nx : ny), (int)face, MPI_DOUBLE, nbr[k], k ^ 1, cart, &req[n++]);
      }
      MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
      DECLARE_FLOPS(10.0 * cells);
      double mine = residual * rho / np, sum = 0.0;
      MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, cart);
      residual = sum;
      total_iterations++;
    }
    double dt = 1.0, dtmax = 0.0;
    MPI_Allreduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, cart);
  }
  if (rank == 0)
    printf("implicit-converge: np %d, %dx%d cells, %ld solver iterations in %d steps\n", np, nw * 8, nw * 8,
           total_iterations, steps);
  free(out);
  free(in);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
