// A 1-rank MPI program that spawns one copy of itself with MPI_Comm_spawn and sends it one message over
// the inter-communicator (tests/profiler/test_profile_spawn.cpp). The profile records the spawn; replay
// and fit must refuse it, since the spawned process is not in the profile.
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  if (parent == MPI_COMM_NULL) {
    MPI_Comm children;
    char* no_args[] = {nullptr};
    MPI_Comm_spawn(argv[0], no_args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, MPI_ERRCODES_IGNORE);
    int x = 7;
    MPI_Send(&x, 1, MPI_INT, 0, 1, children);
    MPI_Comm_disconnect(&children);
    std::printf("mpi_spawn: spawned one child\n");
  } else {
    int x = 0;
    MPI_Recv(&x, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE);
    MPI_Comm_disconnect(&parent);
  }
  MPI_Finalize();
  return 0;
}
