/* 1-D explicit heat equation, strong scaling: NW*1024 cells split over the ranks in blocks (the first
 * (NW*1024) % np ranks one cell more), non-periodic ends.
 *
 *   heat1d-strong NW
 *
 * 20 steps: a ghost exchange with both neighbours (two MPI_Sendrecv, 2 ghost cells of 8 fields),
 * the update (12 flop per local cell), and every 5th step an MPI_Allreduce (MIN) of the stable time step.
 * At the end the heat content is reduced to rank 0. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "heat1d-strong", 8, 1, 1);
  long cells = block_extent((long)nw * 1024, np, rank);
  int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < np - 1 ? rank + 1 : MPI_PROC_NULL;
  enum { GHOST = 2 * 8 };
  double out[GHOST] = {0}, in[GHOST];
  double dt = 1.0, dtmin = 1.0, heat = 0.0, total = 0.0;
  for (int step = 0; step < 20; step++) {
    MPI_Sendrecv(out, GHOST, MPI_DOUBLE, right, 1, in, GHOST, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(out, GHOST, MPI_DOUBLE, left, 2, in, GHOST, MPI_DOUBLE, right, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    DECLARE_FLOPS(12.0 * cells);
    if (step % 5 == 4)
      MPI_Allreduce(&dt, &dtmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    heat += dtmin;
  }
  MPI_Reduce(&heat, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("heat1d-strong: np %d, %ld cells, heat %g\n", np, (long)nw * 1024, total);
  MPI_Finalize();
  return 0;
}
