/* A halo exchange set up once with persistent requests, its reduction overlapped with compute (what
 * Fortran stencil codes and pipelined Krylov solvers do): weak scaling, NW x NW points per rank on the
 * periodic MPI_Dims_create(np, 2) grid.
 *
 *   persistent-halo NW     (NW >= 4)
 *
 * MPI_Send_init / MPI_Recv_init of the four faces (NW doubles each, tags 10 + direction) once; NW/2
 * steps: MPI_Startall of the eight requests, 5 flop per interior point, MPI_Waitall, 5 flop per boundary
 * point, then an MPI_Iallreduce of 2 doubles overlapped with 2 flop per point and completed by MPI_Wait.
 * The requests are freed at the end. */
#include "../corpus.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int nw = corpus_nw(argc, argv, "persistent-halo", 16, 4, 1);
  int dims[2], nbr[4];
  MPI_Comm cart = corpus_cart(2, 1, dims, nbr);
  MPI_Comm_rank(cart, &rank);
  double* sbuf = calloc((size_t)4 * nw, sizeof(double));
  double* rbuf = calloc((size_t)4 * nw, sizeof(double));
  MPI_Request req[8];
  for (int d = 0; d < 4; d++) {
    /* Direction d sends to nbr[d] and receives from the opposite neighbour, which sends the same way. */
    int opposite = d ^ 1;
    MPI_Recv_init(rbuf + (size_t)d * nw, nw, MPI_DOUBLE, nbr[opposite], 10 + d, cart, &req[2 * d]);
    MPI_Send_init(sbuf + (size_t)d * nw, nw, MPI_DOUBLE, nbr[d], 10 + d, cart, &req[2 * d + 1]);
  }
  double local[2] = {1.0, 2.0}, global[2];
  long interior = (long)(nw - 2) * (nw - 2), boundary = (long)nw * nw - interior;
  for (int step = 0; step < nw / 2; step++) {
    MPI_Startall(8, req);
    DECLARE_FLOPS(5.0 * interior);
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(5.0 * boundary);
    MPI_Request red;
    MPI_Iallreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, cart, &red);
    DECLARE_FLOPS(2.0 * nw * nw);
    MPI_Wait(&red, MPI_STATUS_IGNORE);
  }
  for (int k = 0; k < 8; k++)
    MPI_Request_free(&req[k]);
  if (rank == 0)
    printf("persistent-halo: np %d, grid %dx%d, %d^2 points per rank, %d steps\n", np, dims[0], dims[1], nw,
           nw / 2);
  free(sbuf);
  free(rbuf);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
