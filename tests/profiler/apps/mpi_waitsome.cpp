// A 2-rank MPI program that completes its messages with a loop of MPI_Waitsome, whose number of calls
// depends on when the messages arrive: rank 0 computes a little between its sends, so rank 1's loop
// finds them one or a few at a time, and the count differs from run to run. Arguments: the size n (steps
// of n * 16 KiB messages and n units of compute) and the number of steps (default 6).
// tests/profiler/test_profile_families.cpp profiles it twice at each of three sizes, fits the profiles and
// predicts a larger size; bench/accuracy/real_size.py (app `waitsome`) runs it long enough to be timed.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

volatile double g_sink = 0;

void compute(long units)
{
  double x = 1.0;
  for (long i = 0; i < units * 200000; ++i)
    x = x * 1.0000001 + 1e-9;
  g_sink = x;
}

}  // namespace

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long n = argc > 1 ? std::atol(argv[1]) : 2;
  const long steps = argc > 2 ? std::atol(argv[2]) : 6;
  if (size != 2 || n < 1 || steps < 1) {
    std::fprintf(stderr, "mpi_waitsome: run with 2 ranks, a size >= 1 and a number of steps >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  constexpr int kMessages = 8;
  const int count = static_cast<int>(n) * 4096;
  const int other = 1 - rank;
  std::vector<std::vector<int>> in(kMessages, std::vector<int>(static_cast<std::size_t>(count))),
      out(kMessages, std::vector<int>(static_cast<std::size_t>(count), rank));
  std::vector<MPI_Request> reqs(2 * kMessages);
  std::vector<int> indices(2 * kMessages);
  for (long step = 0; step < steps; ++step) {
    for (int i = 0; i < kMessages; ++i)
      MPI_Irecv(in[i].data(), count, MPI_INT, other, i, MPI_COMM_WORLD, &reqs[i]);
    for (int i = 0; i < kMessages; ++i) {
      if (rank == 0)
        compute(1);  // the messages leave one by one: the other rank's loop finds them as they come
      MPI_Isend(out[i].data(), count, MPI_INT, other, i, MPI_COMM_WORLD, &reqs[kMessages + i]);
    }
    int done = 0;
    while (done < 2 * kMessages) {
      int outcount = 0;
      MPI_Waitsome(2 * kMessages, reqs.data(), &outcount, indices.data(), MPI_STATUSES_IGNORE);
      done += outcount;
    }
    compute(4 * n);
  }
  MPI_Finalize();
  return 0;
}
