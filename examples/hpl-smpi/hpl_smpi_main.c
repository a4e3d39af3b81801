/* The main() that HPCC's HPL lacks (examples/hpl-smpi/README.md): HPCC's hpcc.c calls HPL_main()
 * between its other benchmarks; this calls it alone, so that a recording holds HPL's calls only.
 * HPL_main reads hpccinf.txt from the working directory (HPL.dat's format) and appends its results to
 * the output file named there. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "hpl.h"

int HPL_main(int ARGC, char** ARGV, HPL_RuntimeData* rdata, int* failure);

/* HPCC's HPL_pdinfo falls back on HPCC's defaults (sized from the machine's memory) when hpccinf.txt is
 * invalid; a recording must run exactly the given parameters, so an invalid file is an error here. */
int HPCC_Defaults(HPL_T_test* TEST, int* NS, int* N, int* NBS, int* NB, HPL_T_ORDER* PMAPPIN, int* NPQS, int* P,
                  int* Q, int* NPFS, HPL_T_FACT* PF, int* NBMS, int* NBM, int* NDVS, int* NDV, int* NRFS,
                  HPL_T_FACT* RF, int* NTPS, HPL_T_TOP* TP, int* NDHS, int* DH, HPL_T_SWAP* FSWAP, int* TSWAP,
                  int* L1NOTRAN, int* UNOTRAN, int* EQUIL, int* ALIGN, MPI_Comm comm)
{
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0)
    fprintf(stderr, "hpl_smpi: hpccinf.txt is missing or invalid (HPL_pdinfo rejected it)\n");
  MPI_Abort(comm, 1);
  return 1;
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  HPL_RuntimeData rdata;
  int failure = 0;
  HPL_main(argc, argv, &rdata, &failure);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    printf("hpl: N=%d NB=%d P=%d Q=%d %s\n", rdata.N, rdata.NB, rdata.nprow, rdata.npcol,
           failure ? "FAILED" : "passed");
  MPI_Finalize();
  return failure ? 1 : 0;
}
