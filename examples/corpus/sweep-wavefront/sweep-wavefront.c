/* KBA transport sweep (Sweep3D, PARTISN, SNAP): a pipelined wavefront over the non-periodic 2-D
 * MPI_Dims_create(np, 2) grid; weak scaling: every rank owns NW x NW x NW cells.
 *
 *   sweep-wavefront NW     (NW a multiple of 4)
 *
 * 2 iterations of 4 octants (sweep directions +-x, +-y); in each octant the z axis is cut into NW/4
 * blocks of 4 planes and, block after block, a rank receives the incoming faces from its upstream x
 * and y neighbours (MPI_Recv, 4*NW doubles each, tag = octant), computes the block (40 flop per cell)
 * and sends its outgoing faces downstream (MPI_Send): corner ranks start, the others wait their turn.
 * An MPI_Allreduce of the flux error ends each iteration. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "sweep-wavefront", 8, 4, 4);
  int dims[2], nbr[4];
  MPI_Comm cart = corpus_cart(2, 0, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  int xlo = nbr[0], xhi = nbr[1], ylo = nbr[2], yhi = nbr[3];
  int count = 4 * nw;
  double* buf = calloc((size_t)count, sizeof(double));
  double err = 1.0, errsum = 0.0;
  for (int iter = 0; iter < 2; iter++) {
    for (int oct = 0; oct < 4; oct++) {
      int xup = oct & 1 ? xhi : xlo, xdown = oct & 1 ? xlo : xhi;
      int yup = oct & 2 ? yhi : ylo, ydown = oct & 2 ? ylo : yhi;
      for (int kb = 0; kb < nw / 4; kb++) {
        if (xup != MPI_PROC_NULL)
          MPI_Recv(buf, count, MPI_DOUBLE, xup, oct, cart, MPI_STATUS_IGNORE);
        if (yup != MPI_PROC_NULL)
          MPI_Recv(buf, count, MPI_DOUBLE, yup, oct, cart, MPI_STATUS_IGNORE);
        DECLARE_FLOPS(40.0 * 4 * nw * nw);
        if (xdown != MPI_PROC_NULL)
          MPI_Send(buf, count, MPI_DOUBLE, xdown, oct, cart);
        if (ydown != MPI_PROC_NULL)
          MPI_Send(buf, count, MPI_DOUBLE, ydown, oct, cart);
      }
    }
    MPI_Allreduce(&err, &errsum, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  if (rank == 0)
    printf("sweep-wavefront: np %d, grid %dx%d, %d^3 cells per rank, error %g\n", np, dims[0], dims[1], nw, errsum);
  free(buf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
