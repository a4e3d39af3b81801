/* 3-D FFT with slab decomposition (the transposes of P3DFFT/FFTW-MPI codes), strong scaling: an
 * NW^3 complex grid cut into z slabs, transposed into y slabs with MPI_Alltoallv and back.
 *
 *   fft-transpose NW     (NW >= np)
 *
 * Rank r owns block_extent(NW, np, r) planes, so where np does not divide NW the counts differ per
 * peer: rank r sends rank s planes(r) x columns(s) x NW complex numbers (16 B). 3 iterations of:
 * 2-D FFTs of the slab (5 n log2 n flop), the forward MPI_Alltoallv, 1-D FFTs along z, the backward
 * MPI_Alltoallv; an MPI_Allreduce of the energy ends each iteration. */
#include "../corpus.h"
#include <math.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "fft-transpose", 16, 1, 1);
  if (nw < np) {
    fprintf(stderr, "fft-transpose: NW %d must be at least np %d (one plane per rank)\n", nw, np);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int* scount = malloc(np * sizeof(int));
  int* rcount = malloc(np * sizeof(int));
  int* sdispl = malloc(np * sizeof(int));
  int* rdispl = malloc(np * sizeof(int));
  long mine = block_extent(nw, np, rank);
  int stotal = 0, rtotal = 0;
  for (int s = 0; s < np; s++) {
    /* sizes in bytes (MPI_BYTE): complex doubles */
    scount[s] = (int)(16 * mine * block_extent(nw, np, s) * nw);
    rcount[s] = (int)(16 * block_extent(nw, np, s) * mine * nw);
    sdispl[s] = stotal; rdispl[s] = rtotal;
    stotal += scount[s]; rtotal += rcount[s];
  }
  char* sbuf = calloc((size_t)stotal, 1);
  char* rbuf = calloc((size_t)rtotal, 1);
  double points = (double)mine * nw * nw, e = 1.0, energy = 0.0;
  for (int iter = 0; iter < 3; iter++) {
    DECLARE_FLOPS(5.0 * points * log2((double)nw * nw));
    MPI_Alltoallv(sbuf, scount, sdispl, MPI_BYTE, rbuf, rcount, rdispl, MPI_BYTE, MPI_COMM_WORLD);
    DECLARE_FLOPS(5.0 * points * log2((double)nw));
    MPI_Alltoallv(rbuf, rcount, rdispl, MPI_BYTE, sbuf, scount, sdispl, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Allreduce(&e, &energy, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("fft-transpose: np %d, %d^3 points, energy %g\n", np, nw, energy);
  free(sbuf); free(rbuf); free(scount); free(rcount); free(sdispl); free(rdispl);
  MPI_Finalize();
  return 0;
}
