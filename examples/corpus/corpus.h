/* Shared by the corpus programs: declared compute under SMPI, the size knob, block splits.
 * Compute is declared with smpi_execute_flops under SMPI (record.sh turns computation benchmarking
 * off), so a recording holds exactly these flops and is the same on every machine. */
#ifndef CORPUS_H
#define CORPUS_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef SMPI_H /* defined by SMPI's mpi.h */
#define DECLARE_FLOPS(f) smpi_execute_flops(f)
#else
#define DECLARE_FLOPS(f) ((void)(f))
#endif

/* The size knob NW from argv[1] (default dflt); aborts unless NW >= min and NW % multiple == 0. */
static inline int corpus_nw(int argc, char** argv, const char* name, int dflt, int min, int multiple)
{
  int nw = argc > 1 ? atoi(argv[1]) : dflt;
  if (nw < min || nw % multiple != 0) {
    fprintf(stderr, "%s: NW must be >= %d and a multiple of %d (got %s)\n", name, min, multiple,
            argc > 1 ? argv[1] : "nothing");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return nw;
}

/* Extent of block i when n items are split over p blocks, the first n % p blocks one larger (what
 * codes that split a global grid over an MPI_Dims_create grid do when it does not divide). */
static inline long block_extent(long n, int p, int i) { return n / p + (i < n % p ? 1 : 0); }

/* Aborts unless np >= min (a program that needs a master and workers, a 2-D grid, ...). */
static inline void corpus_need_np(int np, int min, const char* name)
{
  if (np < min) {
    fprintf(stderr, "%s: needs at least %d ranks\n", name, min);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* The Cartesian communicator of MPI_Dims_create(np, ndims) (dims filled in; periodic on every axis or on
 * none) and the neighbours along each axis: nbr[2k] the lower, nbr[2k+1] the upper one, MPI_PROC_NULL
 * past the edge of a non-periodic grid. */
static inline MPI_Comm corpus_cart(int ndims, int periodic, int* dims, int* nbr)
{
  int np, periods[3] = {periodic, periodic, periodic};
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  for (int k = 0; k < ndims; k++)
    dims[k] = 0;
  MPI_Dims_create(np, ndims, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &cart);
  for (int k = 0; k < ndims; k++)
    MPI_Cart_shift(cart, k, 1, &nbr[2 * k], &nbr[2 * k + 1]);
  return cart;
}

/* splitmix64: the deterministic generator of graph-partition's graph. */
static inline unsigned long long corpus_mix(unsigned long long x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
#endif
