/* What the two-rank probes of bench/mpi share: MPI started on exactly two ranks, and sorting times. */
#ifndef GRIDCAST_BENCH_MPI_PROBE_H
#define GRIDCAST_BENCH_MPI_PROBE_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* qsort's comparison of doubles, ascending */
static int by_value(const void* a, const void* b)
{
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* MPI_Init, then this rank (0 or 1); a run on any other number of ranks says so and ends with 1. */
static int start_two_ranks(int* argc, char*** argv, const char* name)
{
  MPI_Init(argc, argv);
  int rank = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np != 2) {
    if (rank == 0)
      fprintf(stderr, "%s: run it with 2 ranks\n", name);
    MPI_Finalize();
    exit(1);
  }
  return rank;
}

#endif
