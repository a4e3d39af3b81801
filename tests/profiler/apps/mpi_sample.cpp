// A small MPI program for the profiler tests: a known sequence of calls on 2 ranks (or more), so that the
// test can check every record the hook wrote. Built with -finstrument-functions (app_kernel is listed in
// the test's function list). Modes: "normal" (default), "term" (rank 0 raises SIGTERM half-way),
// "abort" (rank 0 calls MPI_Abort half-way), "noexit" (ranks exit without MPI_Finalize), "threads"
// (MPI_THREAD_MULTIPLE: two threads exchange messages concurrently).
#include <mpi.h>

#include <cblas.h>

#include <csignal>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

extern "C" void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                       const int*, const double*, const int*, const double*, double*, const int*);

/// Application work that the test profiles by name (through -finstrument-functions).
extern "C" __attribute__((noinline)) double app_kernel(int n)
{
  volatile double s = 0;
  for (int i = 0; i < n; ++i)
    s = s + 1e-9 * i;
  return s;
}

/// Two threads per rank, each 50 MPI_Sendrecv with the next rank on its own tag (0 and 1).
int threads_main(int argc, char** argv)
{
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "mpi_sample: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto work = [&](int tag) {
    double out = rank, in = 0;
    for (int i = 0; i < 50; ++i)
      MPI_Sendrecv(&out, 1, MPI_DOUBLE, (rank + 1) % size, tag, &in, 1, MPI_DOUBLE, (rank + size - 1) % size, tag,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  MPI_Finalize();
  if (rank == 0)
    std::printf("mpi_sample: threads run finished\n");  // the application's own output, unchanged by the hook
  return 0;
}

int main(int argc, char** argv)
{
  const char* mode = argc > 1 ? argv[1] : "normal";
  if (std::strcmp(mode, "threads") == 0)
    return threads_main(argc, argv);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int peer = (rank + 1) % size, from = (rank + size - 1) % size;

  // 1. blocking ring: 80 bytes, tag 7
  std::vector<double> buf(10, rank), in(10);
  if (rank == 0) {
    MPI_Send(buf.data(), 10, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
    MPI_Recv(in.data(), 10, MPI_DOUBLE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(in.data(), 10, MPI_DOUBLE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf.data(), 10, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
  }
  // 2. nonblocking pair + waitall (request ids 0 and 1)
  MPI_Request reqs[2];
  MPI_Irecv(in.data(), 4, MPI_INT, from, 3, MPI_COMM_WORLD, &reqs[0]);
  MPI_Isend(buf.data(), 4, MPI_INT, peer, 3, MPI_COMM_WORLD, &reqs[1]);
  MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);

  // 3. a split communicator in reverse order: rank r of the new comm is world rank size-1-r
  MPI_Comm rev;
  MPI_Comm_split(MPI_COMM_WORLD, 5, size - rank, &rev);
  int rrank = 0;
  MPI_Comm_rank(rev, &rrank);
  // send to rank 0 of `rev` = world rank size-1 (peer must be translated to its world rank)
  if (rrank != 0)
    MPI_Send(buf.data(), 2, MPI_DOUBLE, 0, 11, rev);
  else
    for (int i = 1; i < size; ++i)
      MPI_Recv(in.data(), 2, MPI_DOUBLE, MPI_ANY_SOURCE, 11, rev, MPI_STATUS_IGNORE);

  // 4. collectives
  double x = rank, y = 0;
  MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  // rank r sends r+i+1 ints to rank i (and receives as many from it): 4*(r+i+1) bytes
  std::vector<int> counts(size), displs(size);
  for (int i = 0; i < size; ++i) {
    counts[i] = rank + i + 1;
    displs[i] = i * 2 * size;
  }
  std::vector<int> sa(4 * size * size, 1), ra(4 * size * size);
  MPI_Alltoallv(sa.data(), counts.data(), displs.data(), MPI_INT, ra.data(), counts.data(), displs.data(), MPI_INT,
                MPI_COMM_WORLD);
  MPI_Request breq;
  MPI_Ibarrier(MPI_COMM_WORLD, &breq);
  MPI_Wait(&breq, MPI_STATUS_IGNORE);

  // 5. topology
  int dims[2] = {0, 0}, periods[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);

  const bool fill = std::strcmp(mode, "fill") == 0, kill = std::strcmp(mode, "kill") == 0;
  if (fill || kill) {
    // 5000 calls: more than one buffer of records (4096), so the raw files grow during the run; under
    // a small disk (fill) they stop growing here, while the application goes on.
    for (int i = 0; i < 5000; ++i)
      MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (kill && rank == size - 1)
      raise(SIGKILL);  // no handler runs: the rank's file ends with its last flush
  }
  if (std::strcmp(mode, "term") == 0 || std::strcmp(mode, "int") == 0) {
    if (rank == 0)
      raise(mode[0] == 't' ? SIGTERM : SIGINT);  // the hook flushes, marks the run, and dies of the signal
    MPI_Barrier(MPI_COMM_WORLD);  // the other ranks wait here until the launcher kills them
  }
  if (std::strcmp(mode, "abort") == 0 && rank == 0)
    MPI_Abort(MPI_COMM_WORLD, 3);

  // 6. BLAS: one cblas_dgemm (which calls dgemm_ inside: one record) and one direct dgemm_
  int n = 64;
  std::vector<double> a(n * n, 1.0), b(n * n, 1.0), c(n * n, 0.0);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  double one = 1.0, zero = 0.0;
  dgemm_("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, c.data(), &n);

  // 7. application function, then a probe that finds the message sent right after a barrier
  app_kernel(200000);
  if (rank == 0) {
    MPI_Send(buf.data(), 3, MPI_DOUBLE, peer, 21, MPI_COMM_WORLD);
  } else if (rank == 1) {
    MPI_Status st;
    int flag = 0;
    while (not flag)
      MPI_Iprobe(MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &flag, &st);
    MPI_Recv(in.data(), 3, MPI_DOUBLE, st.MPI_SOURCE, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&rev);
  MPI_Comm_free(&cart);
  if (std::strcmp(mode, "noexit") == 0)
    std::exit(0);  // no MPI_Finalize: Open MPI complains, the hook's atexit flushes
  MPI_Finalize();
  if (rank == 0)
    std::printf("mpi_sample: %s run finished\n", mode);  // the application's own output, unchanged by the hook
  return 0;
}
