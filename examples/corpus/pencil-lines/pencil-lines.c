/* Line and plane reductions on MPI_Cart_sub communicators of a 3-D grid (pencil solvers, ADI, spectral
 * codes that sum along one axis).
 *
 *   pencil-lines NW
 *
 * The global NW x NW x NW grid is split over the periodic MPI_Dims_create(np, 3) grid. MPI_Cart_sub makes
 * the x lines (remain {1,0,0}) and the yz planes (remain {0,1,1}). 12 steps, each:
 *   a face halo along every axis (two MPI_Sendrecv per axis, the face normal to the axis),
 *   30 flop per local cell,
 *   an MPI_Allreduce (SUM) along the x line of the rank's y-z column sums (ny*nz doubles),
 *   an MPI_Reduce (SUM) over the yz plane to the plane's rank 0 of the rank's x profile (nx doubles), the
 *   plane root's own work on it (50 flop per x cell), then an MPI_Bcast of the result over the plane,
 *   and every 4th step an MPI_Allreduce (MAX) over the world of one double. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "pencil-lines", 8, 4, 1);
  int dims[3], nbr[6], coords[3], crank;
  MPI_Comm cart = corpus_cart(3, 1, dims, nbr);
  MPI_Comm_rank(cart, &crank);
  MPI_Cart_coords(cart, crank, 3, coords);
  long ext[3];
  for (int k = 0; k < 3; k++)
    ext[k] = block_extent(nw, dims[k], coords[k]);
  const long cells = ext[0] * ext[1] * ext[2];
  MPI_Comm line, plane;
  int line_keep[3] = {1, 0, 0}, plane_keep[3] = {0, 1, 1};
  MPI_Cart_sub(cart, line_keep, &line);
  MPI_Cart_sub(cart, plane_keep, &plane);
  int plane_rank;
  MPI_Comm_rank(plane, &plane_rank);
  long most = ext[0] * ext[1];
  if (ext[1] * ext[2] > most)
    most = ext[1] * ext[2];
  if (ext[0] * ext[2] > most)
    most = ext[0] * ext[2];
  double* a = calloc((size_t)most, sizeof(double));
  double* b = calloc((size_t)most, sizeof(double));
  double local = 1.0, global = 0.0;
  for (int step = 0; step < 12; step++) {
    for (int k = 0; k < 3; k++) {
      const int face = (int)(cells / ext[k]);
      MPI_Sendrecv(a, face, MPI_DOUBLE, nbr[2 * k + 1], 10 + k, b, face, MPI_DOUBLE, nbr[2 * k], 10 + k, cart,
                   MPI_STATUS_IGNORE);
      MPI_Sendrecv(a, face, MPI_DOUBLE, nbr[2 * k], 20 + k, b, face, MPI_DOUBLE, nbr[2 * k + 1], 20 + k, cart,
                   MPI_STATUS_IGNORE);
    }
    DECLARE_FLOPS(30.0 * cells);
    MPI_Allreduce(a, b, (int)(ext[1] * ext[2]), MPI_DOUBLE, MPI_SUM, line);
    MPI_Reduce(a, b, (int)ext[0], MPI_DOUBLE, MPI_SUM, 0, plane);
    if (plane_rank == 0)
      DECLARE_FLOPS(50.0 * ext[0]);
    MPI_Bcast(b, (int)ext[0], MPI_DOUBLE, 0, plane);
    if (step % 4 == 3)
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("pencil-lines: np %d, grid %dx%dx%d, %d^3 cells\n", np, dims[0], dims[1], dims[2], nw);
  free(a);
  free(b);
  MPI_Comm_free(&line);
  MPI_Comm_free(&plane);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
