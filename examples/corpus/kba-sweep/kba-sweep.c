/* KBA transport sweep on a 2-D process grid (x, y from MPI_Dims_create(np, 2), not periodic): the
 * discrete-ordinates sweep of Sweep3D-like codes, written for the corpus' development set.
 *
 *   kba-sweep NW
 *
 * The global grid is (NW*8) x (NW*8) x 24 cells, x and y split over the process grid in blocks (the first
 * ranks one cell more), z cut into 4 blocks that pipeline the sweep. 2 iterations, each sweeping from the
 * four corners of the x-y plane: per z block, a rank receives the upstream x face (guarded: a rank on the
 * upstream edge calls nothing) and the upstream y face (MPI_Recv from MPI_PROC_NULL on the edge), solves its
 * block (30 flop per cell and angle, 6 angles), and sends both downstream faces the same two ways. After
 * each iteration an MPI_Allreduce of the flux change; at the end the flux is reduced to rank 0. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "kba-sweep", 8, 1, 1);
  int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
  MPI_Dims_create(np, 2, dims);
  MPI_Comm grid;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
  MPI_Comm_rank(grid, &rank);
  MPI_Cart_coords(grid, rank, 2, coords);
  int xlo, xhi, ylo, yhi;
  MPI_Cart_shift(grid, 0, 1, &xlo, &xhi);
  MPI_Cart_shift(grid, 1, 1, &ylo, &yhi);
  long nx = block_extent((long)nw * 8, dims[0], coords[0]);
  long ny = block_extent((long)nw * 8, dims[1], coords[1]);
  enum { NZ = 24, ZBLOCKS = 4, ANGLES = 6 };
  const long zb = NZ / ZBLOCKS;
  long xface = ny * zb * ANGLES, yface = nx * zb * ANGLES;
  double* xbuf = calloc((size_t)xface, sizeof(double));
  double* ybuf = calloc((size_t)yface, sizeof(double));
  double change = 1.0, global = 0.0, flux = (double)rank, total = 0.0;
  for (int iter = 0; iter < 2; iter++) {
    for (int corner = 0; corner < 4; corner++) {
      int xup = corner & 1 ? xhi : xlo, xdown = corner & 1 ? xlo : xhi;
      int yup = corner & 2 ? yhi : ylo, ydown = corner & 2 ? ylo : yhi;
      for (int k = 0; k < ZBLOCKS; k++) {
        if (xup != MPI_PROC_NULL)
          MPI_Recv(xbuf, (int)xface, MPI_DOUBLE, xup, 10 + corner, grid, MPI_STATUS_IGNORE);
        MPI_Recv(ybuf, (int)yface, MPI_DOUBLE, yup, 20 + corner, grid, MPI_STATUS_IGNORE);
        DECLARE_FLOPS(30.0 * ANGLES * nx * ny * zb);
        if (xdown != MPI_PROC_NULL)
          MPI_Send(xbuf, (int)xface, MPI_DOUBLE, xdown, 10 + corner, grid);
        MPI_Send(ybuf, (int)yface, MPI_DOUBLE, ydown, 20 + corner, grid);
      }
    }
    MPI_Allreduce(&change, &global, 1, MPI_DOUBLE, MPI_MAX, grid);
  }
  MPI_Reduce(&flux, &total, 1, MPI_DOUBLE, MPI_SUM, 0, grid);
  if (rank == 0)
    printf("kba-sweep np %d NW %d grid %dx%d flux %.1f\n", np, nw, dims[0], dims[1], total);
  free(xbuf);
  free(ybuf);
  MPI_Comm_free(&grid);
  MPI_Finalize();
  return 0;
}
