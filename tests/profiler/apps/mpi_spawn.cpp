// Dynamic process management (tests/profiler/test_profile_spawn.cpp). Without arguments: 1 rank that
// spawns one copy of itself with MPI_Comm_spawn and sends it one message over the inter-communicator;
// the profile records the spawn, and replay and fit must refuse it, since the spawned process is not in
// the profile. With `connect`: 2 ranks, rank 0 accepts on a port that rank 1 connects to (both on
// MPI_COMM_SELF), then one message across: an inter-communicator between ranks of the world, which the
// profile writes as a creation among its members and the replay reproduces. With `fork`: each rank forks a
// helper that exits at once with code 3 (its exit runs the hook's exit handler), waits for it, and goes on;
// the rank exits 0 only when the helper's exit code came back unchanged.
#include <mpi.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  if (argc > 1 && std::strcmp(argv[1], "fork") == 0) {
    int v = 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const pid_t child = fork();
    if (child == 0)
      std::exit(3);  // exit(), not _exit(): the hook's atexit handler runs in the child
    int status = 0;
    waitpid(child, &status, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return WIFEXITED(status) && WEXITSTATUS(status) == 3 ? 0 : 1;
  }
  if (argc > 1 && std::strcmp(argv[1], "connect") == 0) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char port[MPI_MAX_PORT_NAME] = {0};
    MPI_Comm other;
    int x = 5;
    if (rank == 0) {
      MPI_Open_port(MPI_INFO_NULL, port);
      MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &other);
      MPI_Close_port(port);
      MPI_Send(&x, 1, MPI_INT, 0, 2, other);
    } else {
      MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &other);
      MPI_Recv(&x, 1, MPI_INT, 0, 2, other, MPI_STATUS_IGNORE);
    }
    MPI_Comm_disconnect(&other);
    MPI_Finalize();
    return 0;
  }
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
