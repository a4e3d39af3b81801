/* What bench/sampling's programs share: the command line, compute declared to SMPI, and the periodic 3-D
 * process grid of MPI_Dims_create with each rank's six face neighbours. */
#ifndef GRIDCAST_BENCH_SAMPLING_HALO3D_H
#define GRIDCAST_BENCH_SAMPLING_HALO3D_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Under smpicc, the work a block does in flop, so that the recording is the same on every machine;
 * elsewhere nothing. */
#ifdef SMPI_H
#define DECLARE_FLOPS(f) smpi_execute_flops(f)
#else
#define DECLARE_FLOPS(f) ((void)(f))
#endif

/* MPI_Init, then the command line `NAME NW STEPS` (NW defaults to 16, STEPS to default_steps; NW must be
 * at least 2 and STEPS at least least_steps, else rank 0 says so and the run aborts). */
static void halo3d_start(int* argc, char*** argv, const char* name, int default_steps, int least_steps, int* np,
                         int* rank, int* nw, int* steps)
{
  MPI_Init(argc, argv);
  MPI_Comm_size(MPI_COMM_WORLD, np);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  *nw = *argc > 1 ? atoi((*argv)[1]) : 16;
  *steps = *argc > 2 ? atoi((*argv)[2]) : default_steps;
  if (*nw < 2 || *steps < least_steps) {
    if (*rank == 0)
      fprintf(stderr, "%s: NW >= 2 and STEPS >= %d (got %d, %d)\n", name, least_steps, *nw, *steps);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* The periodic MPI_Dims_create grid of every rank, in *cart, its extents in dims; nbr[2k] and nbr[2k + 1]
 * are the lower and upper neighbour along axis k. */
static void halo3d_grid(MPI_Comm* cart, int dims[3], int nbr[6])
{
  int np, periods[3] = {1, 1, 1};
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  dims[0] = dims[1] = dims[2] = 0;
  MPI_Dims_create(np, 3, dims);
  MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, cart);
  for (int k = 0; k < 3; k++)
    MPI_Cart_shift(*cart, k, 1, &nbr[2 * k], &nbr[2 * k + 1]);
}

#endif
