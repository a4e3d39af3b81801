/* Geometric multigrid V-cycle with red-black Gauss-Seidel smoothing (HPGMG, the MG of NPB), weak
 * scaling: every rank owns NW x NW points of the periodic MPI_Dims_create(np, 2) grid.
 *
 *   multigrid-vcycle NW     (NW a power of two >= 8)
 *
 * Level l has (NW >> l)^2 points down to 4 x 4, so the number of levels grows with log2(NW) and the
 * halo messages (NW >> l doubles) halve per level. 3 V-cycles; on every level, down and then up: two
 * smoothing half-sweeps (red, then black), each a halo exchange with the 4 neighbours (MPI_Sendrecv,
 * tag = 2*level + colour) and 6 flop per point of the colour; the coarsest level is solved with an
 * MPI_Allreduce of 16 doubles; each cycle ends with an MPI_Allreduce of the residual norm. */
#include "../corpus.h"

static void halo(MPI_Comm cart, const int* nbr, double* sbuf, double* rbuf, int n, int tag)
{
  for (int k = 0; k < 2; k++) {
    MPI_Sendrecv(sbuf, n, MPI_DOUBLE, nbr[2 * k + 1], tag, rbuf, n, MPI_DOUBLE, nbr[2 * k], tag, cart,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(sbuf, n, MPI_DOUBLE, nbr[2 * k], tag, rbuf, n, MPI_DOUBLE, nbr[2 * k + 1], tag, cart,
                 MPI_STATUS_IGNORE);
  }
}

static void smooth(MPI_Comm cart, const int* nbr, double* sbuf, double* rbuf, int n, int level)
{
  for (int colour = 0; colour < 2; colour++) {
    halo(cart, nbr, sbuf, rbuf, n, 2 * level + colour);
    DECLARE_FLOPS(6.0 * n * n / 2);
  }
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "multigrid-vcycle", 16, 8, 1);
  if (nw & (nw - 1)) {
    fprintf(stderr, "multigrid-vcycle: NW must be a power of two\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int dims[2], nbr[4];
  MPI_Comm cart = corpus_cart(2, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  int levels = 0;
  while ((nw >> levels) >= 4)
    levels++;
  double* sbuf = calloc((size_t)nw, sizeof(double));
  double* rbuf = calloc((size_t)nw, sizeof(double));
  double coarse[16] = {0}, coarse_sum[16], norm = 1.0, norm_sum = 0.0;
  for (int cycle = 0; cycle < 3; cycle++) {
    for (int l = 0; l < levels - 1; l++) {  /* down: smooth, restrict */
      smooth(cart, nbr, sbuf, rbuf, nw >> l, l);
      DECLARE_FLOPS(4.0 * (nw >> l) * (nw >> l));
    }
    MPI_Allreduce(coarse, coarse_sum, 16, MPI_DOUBLE, MPI_SUM, cart);
    for (int l = levels - 2; l >= 0; l--) {  /* up: prolong, smooth */
      DECLARE_FLOPS(4.0 * (nw >> l) * (nw >> l));
      smooth(cart, nbr, sbuf, rbuf, nw >> l, l);
    }
    MPI_Allreduce(&norm, &norm_sum, 1, MPI_DOUBLE, MPI_SUM, cart);
  }
  if (rank == 0)
    printf("multigrid-vcycle: np %d, grid %dx%d, %d^2 points per rank, %d levels, norm %g\n", np, dims[0],
           dims[1], nw, levels, norm_sum);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
