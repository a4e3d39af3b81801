// The C twin of tests/profiler/apps/mpi_fortran.f90: the same MPI calls with the same arguments, in the
// same order, through the C interface. tests/profiler/test_profile_fortran.cpp checks that the Fortran
// program's profile holds the same records as this one's.
#include <mpi.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int other = 1 - rank;
  int a[64], b[64] = {0};
  for (int& v : a)
    v = rank;
  MPI_Status st;
  MPI_Request reqs[8], pers[2];
  int idx = 0, outcount = 0, indices[3];
  double x[4], y[4];

  if (rank == 0) {
    MPI_Send(a, 10, MPI_INT, 1, 1, MPI_COMM_WORLD);
    MPI_Ssend(a, 3, MPI_INT, 1, 2, MPI_COMM_WORLD);
  } else {
    MPI_Recv(b, 10, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
    MPI_Recv(b, 3, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Sendrecv(a, 5, MPI_INT, other, 3, b, 5, MPI_INT, other, 3, MPI_COMM_WORLD, &st);

  for (int i = 0; i < 8; ++i)
    if (rank == 0)
      MPI_Isend(&a[i], 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &reqs[i]);
    else
      MPI_Irecv(&b[i], 1, MPI_INT, 0, 4, MPI_COMM_WORLD, &reqs[i]);
  MPI_Waitall(8, reqs, MPI_STATUSES_IGNORE);

  MPI_Irecv(b, 2, MPI_INT, other, 5, MPI_COMM_WORLD, &reqs[0]);
  MPI_Isend(a, 2, MPI_INT, other, 5, MPI_COMM_WORLD, &reqs[1]);
  MPI_Wait(&reqs[0], &st);
  MPI_Waitany(2, reqs, &idx, &st);
  MPI_Irecv(b, 2, MPI_INT, other, 6, MPI_COMM_WORLD, &reqs[0]);
  MPI_Isend(a, 2, MPI_INT, other, 6, MPI_COMM_WORLD, &reqs[1]);
  MPI_Waitall(1, reqs, MPI_STATUSES_IGNORE);
  MPI_Waitsome(2, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);

  if (rank == 0) {
    MPI_Send(a, 7, MPI_INT, 1, 7, MPI_COMM_WORLD);
  } else {
    MPI_Probe(0, 7, MPI_COMM_WORLD, &st);
    MPI_Recv(b, 7, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }

  int flag = 0;
  MPI_Send(a, 3, MPI_INT, rank, 11, MPI_COMM_WORLD);
  while (not flag)
    MPI_Iprobe(rank, 11, MPI_COMM_WORLD, &flag, &st);
  MPI_Irecv(b, 3, MPI_INT, rank, 11, MPI_COMM_WORLD, &reqs[0]);
  flag = 0;
  while (not flag)
    MPI_Test(&reqs[0], &flag, &st);
  MPI_Irecv(b, 1, MPI_INT, rank, 12, MPI_COMM_WORLD, &reqs[0]);
  MPI_Send(a, 1, MPI_INT, rank, 12, MPI_COMM_WORLD);
  flag = 0;
  while (not flag)
    MPI_Testall(1, reqs, &flag, MPI_STATUSES_IGNORE);
  MPI_Testany(1, reqs, &idx, &flag, &st);
  MPI_Testsome(1, reqs, &outcount, indices, MPI_STATUSES_IGNORE);

  if (rank == 0)
    MPI_Send_init(a, 4, MPI_INT, 1, 8, MPI_COMM_WORLD, &pers[0]);
  else
    MPI_Recv_init(b, 4, MPI_INT, 0, 8, MPI_COMM_WORLD, &pers[0]);
  for (int i = 0; i < 2; ++i) {
    MPI_Start(&pers[0]);
    MPI_Wait(&pers[0], MPI_STATUS_IGNORE);
  }
  MPI_Startall(1, pers);
  MPI_Waitall(1, pers, MPI_STATUSES_IGNORE);
  MPI_Request_free(&pers[0]);

  for (double& v : x)
    v = rank + 1.0;
  MPI_Bcast(a, 16, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Reduce(x, y, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, x, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Scan(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Alltoall(a, 3, MPI_INT, b, 3, MPI_INT, MPI_COMM_WORLD);
  MPI_Allgather(a, 2, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD);
  MPI_Gather(a, 5, MPI_INT, b, 5, MPI_INT, 1, MPI_COMM_WORLD);
  MPI_Scatter(a, 4, MPI_INT, b, 4, MPI_INT, 0, MPI_COMM_WORLD);
  int counts[2] = {1 + rank, 2}, displs[2] = {0, 8};
  MPI_Alltoallv(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
  counts[0] = 3;
  counts[1] = 4;
  MPI_Gatherv(a, 3 + rank, MPI_INT, b, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Allgatherv(a, 3 + rank, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
  MPI_Scatterv(a, counts, displs, MPI_INT, b, 3 + rank, MPI_INT, 1, MPI_COMM_WORLD);
  MPI_Reduce_scatter_block(x, y, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Ibarrier(MPI_COMM_WORLD, &reqs[0]);
  MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
  MPI_Iallreduce(x, y, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
  MPI_Waitall(1, reqs, MPI_STATUSES_IGNORE);

  MPI_Comm half, dup, cart;
  MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &half);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, dup);
  int dims[1] = {2}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
  MPI_Send(a, 1, MPI_INT, other, 9, cart);
  MPI_Recv(b, 1, MPI_INT, other, 9, cart, &st);

  int coords[1], r = 0, src = 0, dst = 0, ndims = 0, dims2[2] = {0, 0};
  MPI_Cart_get(cart, 1, dims, periods, coords);
  MPI_Cart_rank(cart, coords, &r);
  MPI_Cart_coords(cart, other, 1, coords);
  MPI_Cart_shift(cart, 0, 1, &src, &dst);
  MPI_Cartdim_get(cart, &ndims);
  MPI_Dims_create(4, 2, dims2);
  MPI_Comm_free(&cart);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&half);
  MPI_Finalize();
  return 0;
}
