/* What the example programs share (include it after <mpi.h>): their compute declared to SMPI, whose
 * smpi_execute_flops makes a recording under smpirun carry it (record.sh), and their size argument. */
#ifndef GRIDCAST_EXAMPLE_H
#define GRIDCAST_EXAMPLE_H

#include <stdio.h>
#include <stdlib.h>

#ifdef SMPI_H /* defined by SMPI's mpi.h */
#define DECLARE_FLOPS(f) smpi_execute_flops(f)
#else
#define DECLARE_FLOPS(f) ((void)(f))
#endif

/* NW, the size argument argv[1] (`fallback` when absent), which must be a positive multiple of
 * `multiple`: otherwise `program` says so and the run aborts. */
static inline int example_nw(int argc, char** argv, int fallback, int multiple, const char* program)
{
  int nw = argc > 1 ? atoi(argv[1]) : fallback;
  if (nw < multiple || nw % multiple != 0) {
    fprintf(stderr, "%s: NW must be a positive multiple of %d\n", program, multiple);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return nw;
}

#endif
