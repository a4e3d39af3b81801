/* Lattice Boltzmann D3Q19 streaming between the blocks of a periodic 3-D grid: each rank keeps its 18
 * neighbours in a table (6 faces, then 12 edges) and walks it with one call site per operation.
 * Weak scaling, NW^3 cells per rank. Written for the corpus' training set.
 *
 *   lbm-d3q19 NW     (NW >= 2)
 *
 * NW steps: over the table, an MPI_Irecv from the neighbour that streams this way, then over it again an
 * MPI_Isend to the neighbour in that direction, all with tag 7: a face carries the 5 distributions that
 * cross it for NW*NW cells (5*NW*NW doubles), an edge the one that crosses it for NW cells (NW doubles);
 * MPI_Waitall of the 36 requests; 300 flop per cell (collision); an MPI_Allreduce of the mass and momentum
 * (4 doubles) every step. */
#include "../corpus.h"

/* D3Q19's 18 moving directions: the 6 faces, then the 12 edges. */
static const int dir[18][3] = {{1, 0, 0},  {-1, 0, 0}, {0, 1, 0},  {0, -1, 0}, {0, 0, 1},  {0, 0, -1},
                               {1, 1, 0},  {-1, -1, 0}, {1, -1, 0}, {-1, 1, 0}, {1, 0, 1},  {-1, 0, -1},
                               {1, 0, -1}, {-1, 0, 1}, {0, 1, 1},  {0, -1, -1}, {0, 1, -1}, {0, -1, 1}};

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "lbm-d3q19", 4, 2, 1);
  int dims[3], nbr[6];
  MPI_Comm cart = corpus_cart(3, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  int coords[3], to[18], from[18], count[18];
  MPI_Cart_coords(cart, rank, 3, coords);
  for (int k = 0; k < 18; k++) {
    int c[3], b[3];
    for (int a = 0; a < 3; a++) {
      c[a] = coords[a] + dir[k][a];
      b[a] = coords[a] - dir[k][a];
    }
    MPI_Cart_rank(cart, c, &to[k]);
    MPI_Cart_rank(cart, b, &from[k]);
    count[k] = k < 6 ? 5 * nw * nw : nw;
  }
  size_t slot = (size_t)5 * nw * nw;
  double* sbuf = calloc(18 * slot, sizeof(double));
  double* rbuf = calloc(18 * slot, sizeof(double));
  MPI_Request req[36];
  double moments[4] = {1.0, 0.0, 0.0, 0.0}, total[4];
  for (int step = 0; step < nw; step++) {
    for (int k = 0; k < 18; k++)
      MPI_Irecv(rbuf + k * slot, count[k], MPI_DOUBLE, from[k], 7, cart, &req[k]);
    for (int k = 0; k < 18; k++)
      MPI_Isend(sbuf + k * slot, count[k], MPI_DOUBLE, to[k], 7, cart, &req[18 + k]);
    MPI_Waitall(36, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(300.0 * nw * nw * nw);
    MPI_Allreduce(moments, total, 4, MPI_DOUBLE, MPI_SUM, cart);
  }
  if (rank == 0)
    printf("lbm-d3q19: np %d, grid %dx%dx%d, %d^3 cells per rank, mass %g\n", np, dims[0], dims[1], dims[2], nw,
           total[0]);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
