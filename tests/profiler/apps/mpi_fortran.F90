! A 2-rank Fortran MPI program making one call of each family the C tests cover: through `use mpi` (the
! mpif.h entry points), or `use mpi_f08` when built with -DGRIDCAST_F08. tests/profiler/apps/mpi_fortran_twin.cpp makes the same calls in C, in the same
! order; tests/profiler/test_profile_fortran.cpp checks that the two profiles hold the same records.
program mpi_fortran
#ifdef GRIDCAST_F08
  use mpi_f08
  implicit none
  type(MPI_Request) :: reqs(8), pers(2)
  type(MPI_Status) :: st
  type(MPI_Comm) :: half, dup, cart
#else
  use mpi
  implicit none
  integer :: reqs(8), pers(2), st(MPI_STATUS_SIZE)
  integer :: half, dup, cart
#endif
  integer :: ierr, rank, size, other, i, idx, outcount
  integer :: indices(3), a(64), b(64), counts(2), displs(2), dims(1)
  integer :: coords(1), src, dst, ndims, dims2(2)
  logical :: periods(1), flag
  double precision :: x(4), y(4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  other = 1 - rank
  a = rank
  b = 0

  ! point to point, blocking: 0 sends 10 ints, 1 receives them; then a Sendrecv both ways
  if (rank == 0) then
    call MPI_Send(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
    call MPI_Ssend(a, 3, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, ierr)
  else
    call MPI_Recv(b, 10, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, st, ierr)
    call MPI_Recv(b, 3, MPI_INTEGER, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end if
  call MPI_Sendrecv(a, 5, MPI_INTEGER, other, 3, b, 5, MPI_INTEGER, other, 3, MPI_COMM_WORLD, st, ierr)

  ! nonblocking: eight small sends (one shared handle in Open MPI) and eight receives, one Waitall each
  if (rank == 0) then
    do i = 1, 8
      call MPI_Isend(a(i), 1, MPI_INTEGER, 1, 4, MPI_COMM_WORLD, reqs(i), ierr)
    end do
  else
    do i = 1, 8
      call MPI_Irecv(b(i), 1, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, reqs(i), ierr)
    end do
  end if
  call MPI_Waitall(8, reqs, MPI_STATUSES_IGNORE, ierr)

  ! Wait, Waitany, Waitsome, Testall on requests both ranks make
  call MPI_Irecv(b, 2, MPI_INTEGER, other, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a, 2, MPI_INTEGER, other, 5, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Wait(reqs(1), st, ierr)
  call MPI_Waitany(2, reqs, idx, st, ierr)
  call MPI_Irecv(b, 2, MPI_INTEGER, other, 6, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a, 2, MPI_INTEGER, other, 6, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(1, reqs, MPI_STATUSES_IGNORE, ierr)
  call MPI_Waitsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! probes: 1 probes for the message 0 sends
  if (rank == 0) then
    call MPI_Send(a, 7, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, ierr)
  else
    call MPI_Probe(0, 7, MPI_COMM_WORLD, st, ierr)
    call MPI_Recv(b, 7, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end if

  ! tests and an Iprobe, on messages each rank sends itself (complete once the send returned, so that the
  ! calls do not depend on timing), and on null requests
  call MPI_Send(a, 3, MPI_INTEGER, rank, 11, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(rank, 11, MPI_COMM_WORLD, flag, st, ierr)
  end do
  call MPI_Irecv(b, 3, MPI_INTEGER, rank, 11, MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, st, ierr)
  end do
  call MPI_Irecv(b, 1, MPI_INTEGER, rank, 12, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Send(a, 1, MPI_INTEGER, rank, 12, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(1, reqs, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  call MPI_Testany(1, reqs, idx, flag, st, ierr)
  call MPI_Testsome(1, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)

  ! persistent requests, started twice
  if (rank == 0) then
    call MPI_Send_init(a, 4, MPI_INTEGER, 1, 8, MPI_COMM_WORLD, pers(1), ierr)
  else
    call MPI_Recv_init(b, 4, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, pers(1), ierr)
  end if
  do i = 1, 2
    call MPI_Start(pers(1), ierr)
    call MPI_Wait(pers(1), MPI_STATUS_IGNORE, ierr)
  end do
  call MPI_Startall(1, pers, ierr)
  call MPI_Waitall(1, pers, MPI_STATUSES_IGNORE, ierr)
  call MPI_Request_free(pers(1), ierr)

  ! collectives, MPI_IN_PLACE among them
  x = rank + 1.0d0
  call MPI_Bcast(a, 16, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(x, y, 4, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(x, y, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, x, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call MPI_Scan(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Alltoall(a, 3, MPI_INTEGER, b, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Allgather(a, 2, MPI_INTEGER, b, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Gather(a, 5, MPI_INTEGER, b, 5, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  call MPI_Scatter(a, 4, MPI_INTEGER, b, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  counts = (/ 1 + rank, 2 /)
  displs = (/ 0, 8 /)
  call MPI_Alltoallv(a, counts, displs, MPI_INTEGER, b, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  counts = (/ 3, 4 /)
  call MPI_Gatherv(a, 3 + rank, MPI_INTEGER, b, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Allgatherv(a, 3 + rank, MPI_INTEGER, b, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Scatterv(a, counts, displs, MPI_INTEGER, b, 3 + rank, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  call MPI_Reduce_scatter_block(x, y, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  call MPI_Iallreduce(x, y, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Waitall(1, reqs, MPI_STATUSES_IGNORE, ierr)

  ! communicators
  call MPI_Comm_split(MPI_COMM_WORLD, rank, 0, half, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, dup, ierr)
  dims(1) = 2
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_Send(a, 1, MPI_INTEGER, other, 9, cart, ierr) ! buffered: 4 bytes go at once
  call MPI_Recv(b, 1, MPI_INTEGER, other, 9, cart, st, ierr)

  ! local calls: the process topology
  call MPI_Cart_get(cart, 1, dims, periods, coords, ierr)
  call MPI_Cart_rank(cart, coords, i, ierr)
  call MPI_Cart_coords(cart, other, 1, coords, ierr)
  call MPI_Cart_shift(cart, 0, 1, src, dst, ierr)
  call MPI_Cartdim_get(cart, ndims, ierr)
  dims2 = 0
  call MPI_Dims_create(4, 2, dims2, ierr)
  call MPI_Comm_free(cart, ierr)
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_free(half, ierr)
  call MPI_Finalize(ierr)
end program mpi_fortran
