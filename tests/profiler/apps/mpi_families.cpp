// A 2-rank MPI program using the calls `gridcast profile` records beyond the everyday ones: persistent
// requests (MPI_Send_init/Recv_init, MPI_Start/Startall), matched probes (MPI_Mprobe/Improbe,
// MPI_Mrecv/Imrecv), MPI_Alltoallw, the neighbourhood collectives, and the communicator creations beyond
// MPI_Comm_split (MPI_Comm_idup, MPI_Comm_create_group, inter-communicators, graph topologies). The tests
// profile it and then replay the profile (tests/profiler/test_profile_families.cpp), so every call must
// become records a replay completes.
#include <mpi.h>

#include <cstdio>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    std::fprintf(stderr, "mpi_families: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int other = 1 - rank;
  std::vector<int> a(64, rank), b(64, 0);

  // Persistent point to point: 100 ints from 0 to 1, three times; then a persistent exchange of 8 ints
  // both ways, twice, started with MPI_Startall. A wait on the inactive request returns at once.
  MPI_Request one;
  if (rank == 0)
    MPI_Send_init(a.data(), 25, MPI_INT, 1, 5, MPI_COMM_WORLD, &one);
  else
    MPI_Recv_init(b.data(), 25, MPI_INT, 0, 5, MPI_COMM_WORLD, &one);
  for (int i = 0; i < 3; ++i) {
    MPI_Start(&one);
    MPI_Wait(&one, MPI_STATUS_IGNORE);
  }
  MPI_Wait(&one, MPI_STATUS_IGNORE);  // inactive: no communication
  MPI_Request_free(&one);
  MPI_Request pair[2];
  MPI_Ssend_init(a.data(), 8, MPI_INT, other, 6, MPI_COMM_WORLD, &pair[0]);
  MPI_Recv_init(b.data(), 8, MPI_INT, other, 6, MPI_COMM_WORLD, &pair[1]);
  for (int i = 0; i < 2; ++i) {
    MPI_Startall(2, pair);
    MPI_Waitall(2, pair, MPI_STATUSES_IGNORE);
  }
  MPI_Request_free(&pair[0]);
  MPI_Request_free(&pair[1]);

  // Matched probes: 10 ints with tag 9 (MPI_Mprobe + MPI_Mrecv), then 12 ints with tag 10 found by
  // polling MPI_Improbe and received with MPI_Imrecv.
  if (rank == 0) {
    MPI_Send(a.data(), 10, MPI_INT, 1, 9, MPI_COMM_WORLD);
    MPI_Send(a.data(), 12, MPI_INT, 1, 10, MPI_COMM_WORLD);
  } else {
    MPI_Message m;
    MPI_Status st;
    MPI_Mprobe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &m, &st);
    MPI_Mrecv(b.data(), 10, MPI_INT, &m, MPI_STATUS_IGNORE);
    int found = 0;
    while (not found)
      MPI_Improbe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &found, &m, &st);
    MPI_Request r;
    MPI_Imrecv(b.data(), 12, MPI_INT, &m, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }

  // MPI_Alltoallw: to rank i, (i + 1) ints; from rank i, (rank + 1) doubles' worth of ints.
  int scounts[2] = {1, 2}, rcounts[2] = {rank + 1, rank + 1}, displs[2] = {0, 16};
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  MPI_Alltoallw(a.data(), scounts, displs, types, b.data(), rcounts, displs, types, MPI_COMM_WORLD);

  // Neighbourhood collectives on a 1-D non-periodic Cartesian grid of 2: each rank has one neighbour
  // (the other side is MPI_PROC_NULL).
  MPI_Comm line;
  int dims[1] = {2}, periods[1] = {0};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line);
  MPI_Neighbor_alltoall(a.data(), 3, MPI_INT, b.data(), 3, MPI_INT, line);
  int nrc[2] = {4, 4}, nd[2] = {0, 8};
  MPI_Neighbor_allgatherv(a.data(), 4, MPI_INT, b.data(), nrc, nd, MPI_INT, line);
  int vs[2] = {5, 5}, vd[2] = {0, 8};
  MPI_Request nb;
  MPI_Ineighbor_alltoallv(a.data(), vs, vd, MPI_INT, b.data(), vs, vd, MPI_INT, line, &nb);
  MPI_Wait(&nb, MPI_STATUS_IGNORE);
  MPI_Aint wd[2] = {0, 32};
  MPI_Neighbor_alltoallw(a.data(), vs, wd, types, b.data(), vs, wd, types, line);
  MPI_Comm_free(&line);

  // Communicators the rest of the creation calls make, each used once. MPI_Comm_idup, then an allreduce
  // on the duplicate.
  MPI_Comm dup;
  MPI_Request dup_req;
  MPI_Comm_idup(MPI_COMM_WORLD, &dup, &dup_req);
  MPI_Wait(&dup_req, MPI_STATUS_IGNORE);
  int x = rank, sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, dup);
  // MPI_Comm_create_group, called by world rank 1 alone: a barrier among its one member.
  MPI_Group world_group, only_one;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int one_rank[1] = {1};
  MPI_Group_incl(world_group, 1, one_rank, &only_one);
  if (rank == 1) {
    MPI_Comm alone;
    MPI_Comm_create_group(MPI_COMM_WORLD, only_one, 3, &alone);
    MPI_Barrier(alone);
    MPI_Comm_free(&alone);
  }
  // An inter-communicator between two one-process halves: a message across it (to remote rank 0),
  // then the merged intra-communicator with the high half second, and an allreduce on it.
  MPI_Comm half, inter, merged;
  MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, other, 77, &inter);
  if (rank == 0)
    MPI_Send(a.data(), 6, MPI_INT, 0, 13, inter);
  else
    MPI_Recv(b.data(), 6, MPI_INT, 0, 13, inter, MPI_STATUS_IGNORE);
  MPI_Intercomm_merge(inter, rank, &merged);
  MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, merged);
  // Graph topologies: a neighbourhood collective on each.
  MPI_Comm dist, graph;
  int nbr[1] = {other};
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, nbr, MPI_UNWEIGHTED, 1, nbr, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                 &dist);
  MPI_Neighbor_allgather(a.data(), 2, MPI_INT, b.data(), 2, MPI_INT, dist);
  int index[2] = {1, 2}, edges[2] = {1, 0};
  MPI_Graph_create(MPI_COMM_WORLD, 2, index, edges, 0, &graph);
  MPI_Neighbor_alltoall(a.data(), 7, MPI_INT, b.data(), 7, MPI_INT, graph);
  for (MPI_Comm* comm : {&dup, &half, &inter, &merged, &dist, &graph})
    MPI_Comm_free(comm);
  MPI_Group_free(&only_one);
  MPI_Group_free(&world_group);

  // Two polls that alternate until a message comes (20 ms later): MPI_Iprobe for a tag never sent, then
  // MPI_Test of the receive. The hook folds them as a cycle; the profile has every call, in order.
  if (rank == 1) {
    usleep(20000);
    MPI_Send(a.data(), 1, MPI_INT, 0, 60, MPI_COMM_WORLD);
  } else {
    MPI_Request rq;
    MPI_Irecv(b.data(), 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &rq);
    int done = 0, found = 0;
    long polls = 0;
    while (not done) {
      MPI_Iprobe(1, 61, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE);
      MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
      ++polls;
    }
    // The hook times only a sample of the calls of a long poll run, but must count every one.
    std::printf("mpi_families: rank 0 polled %ld times\n", polls);
    std::fflush(stdout);
  }

  MPI_Finalize();
  return 0;
}
