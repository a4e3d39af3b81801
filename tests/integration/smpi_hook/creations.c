/* Every way of creating a communicator that SMPI prices by its own code (tests/integration/smpi_hook.cmake):
 * MPI_Cart_create on a grid that may leave ranks out, MPI_Cart_sub rows, MPI_Comm_split with colors in an
 * order other than the ranks' and ranks that take MPI_UNDEFINED, MPI_Comm_dup; collectives on each new
 * communicator, and a non-periodic halo exchange whose ends send to and receive from MPI_PROC_NULL.
 * Compute is declared with smpi_execute_flops, so SMPI's simulated time is the same on every machine. */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* A 2-D grid of the largest even count <= size: with an odd size, the last rank is left out. */
  int dims[2] = {0, 0}, periods[2] = {0, 1};
  MPI_Dims_create(size - size % 2, 2, dims);
  MPI_Comm cart = MPI_COMM_NULL;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  double halo[64] = {0}, in[64] = {0}, sum = 0;
  smpi_execute_flops(2e4 * (rank + 1));
  if (cart != MPI_COMM_NULL) {
    int up = 0, down = 0;
    MPI_Cart_shift(cart, 0, 1, &up, &down); /* non-periodic: MPI_PROC_NULL at the ends */
    MPI_Sendrecv(halo, 64, MPI_DOUBLE, down, 1, in, 64, MPI_DOUBLE, up, 1, cart, MPI_STATUS_IGNORE);
    int remain[2] = {0, 1};
    MPI_Comm row = MPI_COMM_NULL;
    MPI_Cart_sub(cart, remain, &row);
    smpi_execute_flops(1e4);
    MPI_Allreduce(in, &sum, 1, MPI_DOUBLE, MPI_SUM, row);
    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);
  }
  /* Colors listed from the last rank down; every third rank takes MPI_UNDEFINED. */
  int color = rank % 3 == 2 ? MPI_UNDEFINED : (size - 1 - rank) % 2;
  MPI_Comm split = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, color, size - rank, &split);
  if (split != MPI_COMM_NULL) {
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(split, &dup);
    smpi_execute_flops(3e4);
    MPI_Bcast(halo, 64, MPI_DOUBLE, 0, dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&split);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    printf("creations: np %d, grid %dx%d\n", size, dims[0], dims[1]);
  MPI_Finalize();
  return 0;
}
