// MPI wrappers of the collectives (blocking, nonblocking, neighbourhood) and of the communicator, group and
// topology calls, dynamic processes included: every MPI_X calls PMPI_X and records one raw record
// (raw_format.hpp). What each records is in collective_bodies.hpp, shared with the Fortran entry points
// (hook_fortran_collectives.cpp). The point-to-point family is in hook_mpi.cpp.
#include "collective_bodies.hpp"

#include <mpi.h>

using namespace gridcast::hook;

extern "C" {

// ------------------------------------------------------------------ collectives
// Each collective and its nonblocking form share one description (the k... lambdas above).

int MPI_Barrier(MPI_Comm comm)
{
  return hooked(Fn::MPI_Barrier, PMPI_Barrier, kBarrier, comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ibarrier, PMPI_Ibarrier, kBarrier, comm, req);
}

int MPI_Bcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
  return hooked(Fn::MPI_Bcast, PMPI_Bcast, kBcast, buf, count, dt, root, comm);
}

int MPI_Ibcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ibcast, PMPI_Ibcast, kBcast, buf, count, dt, root, comm, req);
}

int MPI_Reduce(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
  return hooked(Fn::MPI_Reduce, PMPI_Reduce, kReduce, sb, rb, count, dt, op, root, comm);
}

int MPI_Ireduce(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ireduce, PMPI_Ireduce, kReduce, sb, rb, count, dt, op, root, comm, req);
}

int MPI_Allreduce(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
  return hooked(Fn::MPI_Allreduce, PMPI_Allreduce, kReduceAll, sb, rb, count, dt, op, comm);
}

int MPI_Iallreduce(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Iallreduce, PMPI_Iallreduce, kReduceAll, sb, rb, count, dt, op, comm, req);
}

int MPI_Scan(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
  return hooked(Fn::MPI_Scan, PMPI_Scan, kReduceAll, sb, rb, count, dt, op, comm);
}

int MPI_Iscan(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Iscan, PMPI_Iscan, kReduceAll, sb, rb, count, dt, op, comm, req);
}

int MPI_Exscan(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
  return hooked(Fn::MPI_Exscan, PMPI_Exscan, kReduceAll, sb, rb, count, dt, op, comm);
}

int MPI_Iexscan(const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Iexscan, PMPI_Iexscan, kReduceAll, sb, rb, count, dt, op, comm, req);
}

int MPI_Alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Alltoall, PMPI_Alltoall, kBlocks, sb, sc, st, rb, rc_, rt, comm);
}

int MPI_Ialltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ialltoall, PMPI_Ialltoall, kBlocks, sb, sc, st, rb, rc_, rt, comm, req);
}

int MPI_Allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Allgather, PMPI_Allgather, kBlocks, sb, sc, st, rb, rc_, rt, comm);
}

int MPI_Iallgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Iallgather, PMPI_Iallgather, kBlocks, sb, sc, st, rb, rc_, rt, comm, req);
}

int MPI_Alltoallv(const void* sb, const int scounts[], const int sdispls[], MPI_Datatype st, void* rb, const int rcounts[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Alltoallv, PMPI_Alltoallv, kAlltoallv, sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm);
}

int MPI_Ialltoallv(const void* sb, const int scounts[], const int sdispls[], MPI_Datatype st, void* rb, const int rcounts[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ialltoallv, PMPI_Ialltoallv, kAlltoallv, sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm, req);
}

int MPI_Gather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm)
{
  return hooked(Fn::MPI_Gather, PMPI_Gather, kGather, sb, sc, st, rb, rc_, rt, root, comm);
}

int MPI_Igather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Igather, PMPI_Igather, kGather, sb, sc, st, rb, rc_, rt, root, comm, req);
}

int MPI_Gatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rcounts[], const int displs[], MPI_Datatype rt, int root, MPI_Comm comm)
{
  return hooked(Fn::MPI_Gatherv, PMPI_Gatherv, kGatherv, sb, sc, st, rb, rcounts, displs, rt, root, comm);
}

int MPI_Igatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rcounts[], const int displs[], MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Igatherv, PMPI_Igatherv, kGatherv, sb, sc, st, rb, rcounts, displs, rt, root, comm, req);
}

int MPI_Allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rcounts[], const int displs[], MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Allgatherv, PMPI_Allgatherv, kAllgatherv, sb, sc, st, rb, rcounts, displs, rt, comm);
}

int MPI_Iallgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rcounts[], const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Iallgatherv, PMPI_Iallgatherv, kAllgatherv, sb, sc, st, rb, rcounts, displs, rt, comm, req);
}

int MPI_Scatter(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm)
{
  return hooked(Fn::MPI_Scatter, PMPI_Scatter, kScatter, sb, sc, st, rb, rc_, rt, root, comm);
}

int MPI_Iscatter(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Iscatter, PMPI_Iscatter, kScatter, sb, sc, st, rb, rc_, rt, root, comm, req);
}

int MPI_Scatterv(const void* sb, const int scounts[], const int displs[], MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm)
{
  return hooked(Fn::MPI_Scatterv, PMPI_Scatterv, kScatterv, sb, scounts, displs, st, rb, rc_, rt, root, comm);
}

int MPI_Iscatterv(const void* sb, const int scounts[], const int displs[], MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Iscatterv, PMPI_Iscatterv, kScatterv, sb, scounts, displs, st, rb, rc_, rt, root, comm, req);
}

int MPI_Reduce_scatter(const void* sb, void* rb, const int rcounts[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
  return hooked(Fn::MPI_Reduce_scatter, PMPI_Reduce_scatter, kReduceScatter, sb, rb, rcounts, dt, op, comm);
}

int MPI_Ireduce_scatter(const void* sb, void* rb, const int rcounts[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ireduce_scatter, PMPI_Ireduce_scatter, kReduceScatter, sb, rb, rcounts, dt, op, comm, req);
}

int MPI_Reduce_scatter_block(const void* sb, void* rb, int rcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
  return hooked(Fn::MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, kReduceScatterBlock, sb, rb, rcount, dt, op, comm);
}

int MPI_Ireduce_scatter_block(const void* sb, void* rb, int rcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block, kReduceScatterBlock, sb, rb, rcount, dt, op, comm, req);
}

// ------------------------------------------------------------------ communicators and groups

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm)
{
  return comm_split_body(PMPI_Comm_split, comm, color, key, newcomm);
}
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Comm_split_type, PMPI_Comm_split_type, kCreation, comm, split_type, key, info, newcomm);
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Comm_dup, PMPI_Comm_dup, kCreation, comm, newcomm);
}
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Comm_create, PMPI_Comm_create, kCreation, comm, group, newcomm);
}
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm)
{
  Call c(Fn::MPI_Comm_create_group);
  int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
  if (c) {
    // Only the group's members call it: a creation among them, not a split of `comm`.
    fill_creation(c.r, comm, *newcomm);
    c.r.tag = tag;
    finish_members(c, *newcomm == MPI_COMM_NULL ? std::vector<std::int32_t>{} : comm_world_ranks(*newcomm, false));
  }
  return rc;
}
int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm* newcomm)
{
  return cart_create_body(PMPI_Cart_create, comm, ndims, dims, periods, reorder, newcomm);
}
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Cart_sub, PMPI_Cart_sub, kCreation, comm, remain_dims, newcomm);
}

int MPI_Comm_free(MPI_Comm* comm)
{
  MPI_Comm before = *comm;
  return local_call(Fn::MPI_Comm_free, before, [&] { return PMPI_Comm_free(comm); });
}
int MPI_Comm_rank(MPI_Comm comm, int* rank)
{
  return local_call(Fn::MPI_Comm_rank, comm, [&] { return PMPI_Comm_rank(comm, rank); });
}
int MPI_Comm_size(MPI_Comm comm, int* size)
{
  return local_call(Fn::MPI_Comm_size, comm, [&] { return PMPI_Comm_size(comm, size); });
}
int MPI_Comm_group(MPI_Comm comm, MPI_Group* group)
{
  return local_call(Fn::MPI_Comm_group, comm, [&] { return PMPI_Comm_group(comm, group); });
}
int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup)
{
  return local_call(Fn::MPI_Group_incl, MPI_COMM_NULL, [&] { return PMPI_Group_incl(group, n, ranks, newgroup); });
}
int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup)
{
  return local_call(Fn::MPI_Group_excl, MPI_COMM_NULL, [&] { return PMPI_Group_excl(group, n, ranks, newgroup); });
}
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup)
{
  return local_call(Fn::MPI_Group_range_incl, MPI_COMM_NULL,
                    [&] { return PMPI_Group_range_incl(group, n, ranges, newgroup); });
}
int MPI_Group_translate_ranks(MPI_Group g1, int n, const int r1[], MPI_Group g2, int r2[])
{
  return local_call(Fn::MPI_Group_translate_ranks, MPI_COMM_NULL,
                    [&] { return PMPI_Group_translate_ranks(g1, n, r1, g2, r2); });
}
int MPI_Group_free(MPI_Group* group)
{
  return local_call(Fn::MPI_Group_free, MPI_COMM_NULL, [&] { return PMPI_Group_free(group); });
}
int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
  return local_call(Fn::MPI_Cart_coords, comm, [&] { return PMPI_Cart_coords(comm, rank, maxdims, coords); });
}
int MPI_Cart_rank(MPI_Comm comm, const int coords[], int* rank)
{
  return local_call(Fn::MPI_Cart_rank, comm, [&] { return PMPI_Cart_rank(comm, coords, rank); });
}
int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int* source, int* dest)
{
  return local_call(Fn::MPI_Cart_shift, comm, [&] { return PMPI_Cart_shift(comm, direction, disp, source, dest); });
}
int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
  return local_call(Fn::MPI_Cart_get, comm, [&] { return PMPI_Cart_get(comm, maxdims, dims, periods, coords); });
}
int MPI_Cartdim_get(MPI_Comm comm, int* ndims)
{
  return local_call(Fn::MPI_Cartdim_get, comm, [&] { return PMPI_Cartdim_get(comm, ndims); });
}
int MPI_Dims_create(int nnodes, int ndims, int dims[])
{
  return local_call(Fn::MPI_Dims_create, MPI_COMM_NULL, [&] { return PMPI_Dims_create(nnodes, ndims, dims); });
}

int MPI_Alltoallw(const void* sb, const int sc[], const int sd[], const MPI_Datatype st[], void* rb, const int rc_[],
                  const int rd[], const MPI_Datatype rt[], MPI_Comm comm)
{
  return hooked(Fn::MPI_Alltoallw, PMPI_Alltoallw, kAlltoallw, sb, sc, sd, st, rb, rc_, rd, rt, comm);
}
int MPI_Ialltoallw(const void* sb, const int sc[], const int sd[], const MPI_Datatype st[], void* rb, const int rc_[],
                   const int rd[], const MPI_Datatype rt[], MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ialltoallw, PMPI_Ialltoallw, kAlltoallw, sb, sc, sd, st, rb, rc_, rd, rt, comm, req);
}

int MPI_Neighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Neighbor_allgather, PMPI_Neighbor_allgather, kNeighborBlocks, sb, sc, st, rb, rc_, rt, comm);
}
int MPI_Ineighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt,
                            MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ineighbor_allgather, PMPI_Ineighbor_allgather, kNeighborBlocks, sb, sc, st, rb, rc_, rt,
                comm, req);
}
int MPI_Neighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Neighbor_alltoall, PMPI_Neighbor_alltoall, kNeighborBlocks, sb, sc, st, rb, rc_, rt, comm);
}
int MPI_Ineighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc_, MPI_Datatype rt, MPI_Comm comm,
                           MPI_Request* req)
{
  return hooked(Fn::MPI_Ineighbor_alltoall, PMPI_Ineighbor_alltoall, kNeighborBlocks, sb, sc, st, rb, rc_, rt, comm,
                req);
}
int MPI_Neighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rcounts[], const int displs[],
                            MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Neighbor_allgatherv, PMPI_Neighbor_allgatherv, kNeighborAllgatherv, sb, sc, st, rb, rcounts,
                displs, rt, comm);
}
int MPI_Ineighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rcounts[],
                             const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ineighbor_allgatherv, PMPI_Ineighbor_allgatherv, kNeighborAllgatherv, sb, sc, st, rb, rcounts,
                displs, rt, comm, req);
}
int MPI_Neighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb, const int rc_[],
                           const int rd[], MPI_Datatype rt, MPI_Comm comm)
{
  return hooked(Fn::MPI_Neighbor_alltoallv, PMPI_Neighbor_alltoallv, kNeighborAlltoallv, sb, sc, sd, st, rb, rc_, rd,
                rt, comm);
}
int MPI_Ineighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                            const int rc_[], const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ineighbor_alltoallv, PMPI_Ineighbor_alltoallv, kNeighborAlltoallv, sb, sc, sd, st, rb, rc_,
                rd, rt, comm, req);
}
int MPI_Neighbor_alltoallw(const void* sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[], void* rb,
                           const int rc_[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm)
{
  return hooked(Fn::MPI_Neighbor_alltoallw, PMPI_Neighbor_alltoallw, kNeighborAlltoallw, sb, sc, sd, st, rb, rc_, rd,
                rt, comm);
}
int MPI_Ineighbor_alltoallw(const void* sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[], void* rb,
                            const int rc_[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm,
                            MPI_Request* req)
{
  return hooked(Fn::MPI_Ineighbor_alltoallw, PMPI_Ineighbor_alltoallw, kNeighborAlltoallw, sb, sc, sd, st, rb, rc_,
                rd, rt, comm, req);
}

// ------------------------------------------------------------------ the remaining communicator creations

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Comm_dup_with_info, PMPI_Comm_dup_with_info, kCreation, comm, info, newcomm);
}

/// MPI_Comm_idup: the new handle may be used only once the request completes, so its members are the
/// parent's (a duplicate has the same group). Recorded as a nonblocking dup: its request is registered
/// like a nonblocking collective's, so the wait or test that completes it names it and the replay lets
/// the rank go on in between.
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request)
{
  Call c(Fn::MPI_Comm_idup);
  int rc = PMPI_Comm_idup(comm, newcomm, request);
  if (c) {
    CommEntry* parent = comm_entry(comm);
    std::vector<std::int32_t> world = parent != nullptr ? parent->world : std::vector<std::int32_t>{};
    fill_creation(c.r, comm, *newcomm, world.empty() ? 0 : world[0], comm_rank(comm), &world);
    if (rc == MPI_SUCCESS)
      nonblocking(c, request);
    c.finish();
  }
  return rc;
}

int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm bridge, int remote_leader, int tag,
                         MPI_Comm* newcomm)
{
  Call c(Fn::MPI_Intercomm_create);
  int rc = PMPI_Intercomm_create(local_comm, local_leader, bridge, remote_leader, tag, newcomm);
  if (c) {
    fill_creation(c.r, local_comm, *newcomm);
    c.r.tag = tag;
    finish_members(c, *newcomm == MPI_COMM_NULL ? std::vector<std::int32_t>{} : intercomm_members(*newcomm));
  }
  return rc;
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newcomm)
{
  Call c(Fn::MPI_Intercomm_merge);
  int rc = PMPI_Intercomm_merge(intercomm, high, newcomm);
  if (c) {
    fill_creation(c.r, intercomm, *newcomm);
    finish_members(c, *newcomm == MPI_COMM_NULL ? std::vector<std::int32_t>{} : comm_world_ranks(*newcomm, false));
  }
  return rc;
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Graph_create, PMPI_Graph_create, kCreation, comm, nnodes, index, edges, reorder, newcomm);
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int nodes[], const int degrees[], const int targets[],
                          const int weights[], MPI_Info info, int reorder, MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Dist_graph_create, PMPI_Dist_graph_create, kCreation, comm, n, nodes, degrees, targets, weights, info, reorder, newcomm);
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[], const int sourceweights[],
                                   int outdegree, const int destinations[], const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm* newcomm)
{
  return hooked(Fn::MPI_Dist_graph_create_adjacent, PMPI_Dist_graph_create_adjacent, kCreation, comm, indegree, sources, sourceweights, outdegree, destinations, destweights, info, reorder, newcomm);
}

// ------------------------------------------------------------------ dynamic process management

/// Spawn, connect, accept and join make an inter-communicator with processes that may be outside
/// MPI_COMM_WORLD (the spawned children, another job): recorded with the calling communicator, the root,
/// the new inter-communicator and the number of remote processes (`color`, -1 when this rank got none),
/// so that the replay can name the call it cannot reproduce. Such remote processes have no world rank:
/// the inter-communicator is registered with no ranks (a peer on it is recorded as unknown, -2).
/// Connect, accept and join between ranks of this world (`within_world`: every remote process has a
/// world rank) are an inter-communicator creation like MPI_Intercomm_create: the members follow as
/// continuation records, and the converter writes it as a creation among them.
static void finish_dynamic(Call& c, MPI_Comm parent, int root, MPI_Comm created, bool may_be_within_world)
{
  RawRecord& r = c.r;
  r.comm = parent == MPI_COMM_NULL ? -1 : comm_id(parent);
  r.root = root;
  if (created == MPI_COMM_NULL) {
    r.color = -1;
    r.new_comm = unused_comm_id();
    c.finish();
    return;
  }
  int remote = 0;
  PMPI_Comm_remote_size(created, &remote);
  r.color = remote;
  if (may_be_within_world) {
    auto world = comm_world_ranks(created, true);
    if (std::none_of(world.begin(), world.end(), [](std::int32_t w) { return w == MPI_UNDEFINED; })) {
      CommEntry* e = register_comm(created, &world);
      r.new_comm = e != nullptr ? e->id : -1;
      finish_members(c, intercomm_members(created));
      return;
    }
  }
  static const std::vector<std::int32_t> kNone;
  CommEntry* e = register_comm(created, &kNone);
  r.new_comm = e != nullptr ? e->id : -1;
  c.finish();
}

int MPI_Comm_spawn(const char* command, char* argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm,
                   MPI_Comm* intercomm, int errcodes[])
{
  Call c(Fn::MPI_Comm_spawn);
  int rc = PMPI_Comm_spawn(command, argv, maxprocs, info, root, comm, intercomm, errcodes);
  if (c) {
    finish_dynamic(c, comm, root, *intercomm, false);
  }
  return rc;
}

int MPI_Comm_spawn_multiple(int count, char* commands[], char** argv[], GRIDCAST_SPAWN_CONST int maxprocs[],
                            GRIDCAST_SPAWN_CONST MPI_Info infos[], int root, MPI_Comm comm, MPI_Comm* intercomm, int errcodes[])
{
  Call c(Fn::MPI_Comm_spawn_multiple);
  int rc = PMPI_Comm_spawn_multiple(count, commands, argv, maxprocs, infos, root, comm, intercomm, errcodes);
  if (c) {
    finish_dynamic(c, comm, root, *intercomm, false);
  }
  return rc;
}

int MPI_Comm_connect(const char* port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm* newcomm)
{
  Call c(Fn::MPI_Comm_connect);
  int rc = PMPI_Comm_connect(port_name, info, root, comm, newcomm);
  if (c) {
    finish_dynamic(c, comm, root, *newcomm, true);
  }
  return rc;
}

int MPI_Comm_accept(const char* port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm* newcomm)
{
  Call c(Fn::MPI_Comm_accept);
  int rc = PMPI_Comm_accept(port_name, info, root, comm, newcomm);
  if (c) {
    finish_dynamic(c, comm, root, *newcomm, true);
  }
  return rc;
}

/// MPI_Comm_join: no calling communicator (the peer is found through a socket): `comm` is -1, `root` 0.
int MPI_Comm_join(int fd, MPI_Comm* intercomm)
{
  Call c(Fn::MPI_Comm_join);
  int rc = PMPI_Comm_join(fd, intercomm);
  if (c) {
    finish_dynamic(c, MPI_COMM_NULL, 0, *intercomm, true);
  }
  return rc;
}

}  // extern "C"
