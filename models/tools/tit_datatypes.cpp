// Measures the datatype ids that SMPI writes in time-independent traces (Datatype::encode) and their sizes.
// Rank 0 sends one element of every predefined datatype to rank 1 with tag 100 + i and prints
// "TAG <100+i> <name> size <MPI_Type_size>"; the id is the last field of the matching "send" line of the trace.
// Not built by CMake; run by hand on a machine with SimGrid (see docs/reference/tit.md):
//   smpicxx -o tit_datatypes tit_datatypes.cpp
//   smpirun -np 2 -platform p.xml -hostfile hf -trace-ti --cfg=tracing/filename:dt.txt ./tit_datatypes
//   grep '^0 send' dt.txt_files/*rank-1.txt
#include <cstdio>
#include <mpi.h>

// The header of SimGrid 3.32 misspells these three (smpi_MPI_MPI_CXX_...); the library exports these names.
extern "C" SMPI_Datatype smpi_MPI_PTR, smpi_MPI_CXX_FLOAT_COMPLEX, smpi_MPI_CXX_DOUBLE_COMPLEX,
    smpi_MPI_CXX_LONG_DOUBLE_COMPLEX;
// clang-format off
#define DT(x) {x, #x}
#define INTERNAL(x) {SMPI_PREDEFINED_POINTER(MPI_Datatype, smpi_##x), #x}
// clang-format on

struct Entry {
  MPI_Datatype type;
  const char* name;
};

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // clang-format off
  const Entry types[] = {
      DT(MPI_CHAR), DT(MPI_SHORT), DT(MPI_INT), DT(MPI_LONG), DT(MPI_LONG_LONG), DT(MPI_SIGNED_CHAR),
      DT(MPI_UNSIGNED_CHAR), DT(MPI_UNSIGNED_SHORT), DT(MPI_UNSIGNED), DT(MPI_UNSIGNED_LONG),
      DT(MPI_UNSIGNED_LONG_LONG), DT(MPI_FLOAT), DT(MPI_DOUBLE), DT(MPI_LONG_DOUBLE), DT(MPI_WCHAR), DT(MPI_C_BOOL),
      DT(MPI_INT8_T), DT(MPI_INT16_T), DT(MPI_INT32_T), DT(MPI_INT64_T), DT(MPI_UINT8_T), DT(MPI_BYTE),
      DT(MPI_UINT16_T), DT(MPI_UINT32_T), DT(MPI_UINT64_T), DT(MPI_C_FLOAT_COMPLEX), DT(MPI_C_DOUBLE_COMPLEX),
      DT(MPI_C_LONG_DOUBLE_COMPLEX), DT(MPI_AINT), DT(MPI_OFFSET), DT(MPI_FLOAT_INT), DT(MPI_LONG_INT),
      DT(MPI_DOUBLE_INT), DT(MPI_SHORT_INT), DT(MPI_2INT), DT(MPI_LONG_DOUBLE_INT), DT(MPI_2FLOAT), DT(MPI_2DOUBLE),
      DT(MPI_2LONG), DT(MPI_REAL), DT(MPI_REAL4), DT(MPI_REAL8), DT(MPI_REAL16), DT(MPI_COMPLEX8),
      DT(MPI_COMPLEX16), DT(MPI_COMPLEX32), DT(MPI_INTEGER1), DT(MPI_INTEGER2), DT(MPI_INTEGER4), DT(MPI_INTEGER8),
      DT(MPI_INTEGER16), DT(MPI_COUNT), DT(MPI_PACKED), DT(MPI_LB), DT(MPI_UB), DT(MPI_CXX_BOOL),
      INTERNAL(MPI_CXX_FLOAT_COMPLEX), INTERNAL(MPI_CXX_DOUBLE_COMPLEX), INTERNAL(MPI_CXX_LONG_DOUBLE_COMPLEX),
      INTERNAL(MPI_PTR)};
  // clang-format on
  char buf[1024] = {0};
  const int n    = sizeof types / sizeof types[0];
  for (int i = 0; i < n; i++) {
    int size = -1;
    MPI_Type_size(types[i].type, &size);
    if (rank == 0) {
      std::printf("TAG %d %s size %d\n", 100 + i, types[i].name, size);
      MPI_Send(buf, 1, types[i].type, 1, 100 + i, MPI_COMM_WORLD);
    } else {
      MPI_Recv(buf, 1, types[i].type, 0, 100 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  // A derived datatype: written as -1.
  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_INT, &triple);
  MPI_Type_commit(&triple);
  if (rank == 0)
    MPI_Send(buf, 1, triple, 1, 999, MPI_COMM_WORLD);
  else
    MPI_Recv(buf, 1, triple, 0, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Type_free(&triple);
  MPI_Finalize();
  return 0;
}
