// A 2-rank MPI program whose requests share handle values: Open MPI hands every small MPI_Isend that
// completes inside the call the same handle, and reuses a freed request's memory for the next one. Rank 0
// makes requests every way an application does (sent at once, kept in a temporary and copied, persistent,
// freed by the application, a receive's handle reused) and completes them with each wait and test call;
// rank 1 only receives. tests/profiler/test_profile_requests.cpp checks that each request created keeps
// its own id in the records of rank 0.
#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {

constexpr int kFew = 8;

void receive(int n, int tag)
{
  int v = 0;
  for (int i = 0; i < n; ++i)
    MPI_Recv(&v, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

}  // namespace

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    std::fprintf(stderr, "mpi_requests: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int v = 7;
  MPI_Request reqs[kFew];
  if (rank == 0) {
    // 1. Eight sends that complete at once, then one MPI_Waitall.
    for (int i = 0; i < kFew; ++i)
      MPI_Isend(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &reqs[i]);
    MPI_Waitall(kFew, reqs, MPI_STATUSES_IGNORE);
    // 2. Eight more, waited one by one in reverse order.
    for (int i = 0; i < kFew; ++i)
      MPI_Isend(&v, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, &reqs[i]);
    for (int i = kFew - 1; i >= 0; --i)
      MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    // 3. Four made in a temporary and copied into the array, completed by MPI_Testall.
    for (int i = 0; i < 4; ++i) {
      MPI_Request tmp;
      MPI_Isend(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &tmp);
      reqs[i] = tmp;
    }
    int flag = 0;
    while (not flag)
      MPI_Testall(4, reqs, &flag, MPI_STATUSES_IGNORE);
    // 4. One freed by the application, then one waited.
    MPI_Request freed;
    MPI_Isend(&v, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &freed);
    MPI_Request_free(&freed);
    MPI_Isend(&v, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &reqs[0]);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    // 5. A persistent send started twice, between two sends that complete at once.
    MPI_Request persistent;
    MPI_Send_init(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &persistent);
    for (int i = 0; i < 2; ++i) {
      MPI_Isend(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &reqs[0]);
      MPI_Start(&persistent);
      MPI_Isend(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &reqs[1]);
      reqs[2] = persistent;
      MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&persistent);
    // 6. Receives, each request's memory freed and likely reused by the next.
    std::vector<int> big(4096);
    for (int i = 0; i < 2; ++i) {
      MPI_Irecv(big.data(), 4096, MPI_INT, 1, 6, MPI_COMM_WORLD, &reqs[0]);
      MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    }
    // 7. Three sends completed by MPI_Waitany, then three by MPI_Waitsome, then three by MPI_Testany.
    for (int i = 0; i < 3; ++i)
      MPI_Isend(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &reqs[i]);
    for (int i = 0; i < 3; ++i) {
      int index = 0;
      MPI_Waitany(3, reqs, &index, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < 3; ++i)
      MPI_Isend(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &reqs[i]);
    int done = 0;
    while (done < 3) {
      int outcount = 0, indices[3];
      MPI_Waitsome(3, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
      done += outcount;
    }
    for (int i = 0; i < 3; ++i)
      MPI_Isend(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &reqs[i]);
    for (done = 0; done < 3;) {
      int index = 0;
      flag = 0;
      MPI_Testany(3, reqs, &index, &flag, MPI_STATUS_IGNORE);
      done += flag && index != MPI_UNDEFINED;
    }
  } else {
    receive(kFew, 1);
    receive(kFew, 2);
    receive(4, 3);
    receive(2, 4);
    receive(6, 5);
    std::vector<int> big(4096, 1);
    for (int i = 0; i < 2; ++i)
      MPI_Send(big.data(), 4096, MPI_INT, 0, 6, MPI_COMM_WORLD);
    receive(9, 7);
  }
  MPI_Finalize();
  return 0;
}
