// MPI wrappers of the collectives (blocking, nonblocking, neighbourhood) and of the communicator, group and
// topology calls, dynamic processes included: every MPI_X calls PMPI_X and records one raw record
// (raw_format.hpp). The point-to-point family is in hook_mpi.cpp.
#include "core.hpp"
#include "comms.hpp"
#include "fortran.hpp"
#include "mpi_record.hpp"
#include "requests.hpp"

#include <mpi.h>

#include <algorithm>
#include <tuple>
#include <vector>

using namespace gridcast::hook;

namespace {

/// counts[i] * size(dt) for i < n, into `out`.
void scaled_counts(const int* counts, int n, MPI_Datatype dt, std::vector<std::int64_t>& out)
{
  out.resize(static_cast<std::size_t>(n));
  int size = 0;
  if (dt != MPI_DATATYPE_NULL)
    PMPI_Type_size(dt, &size);
  for (int i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(counts[i]) * size;
}

/// Records a nonblocking collective's request (blocking ones leave `request` null).
void nonblocking(Call& c, MPI_Request* request)
{
  if (request != nullptr) {
    c.r.flags |= kFlagNonblocking;
    c.r.request = new_request(*request, request);
  }
}

// Shared bodies of the blocking and nonblocking collectives (request == nullptr: blocking).
void rec_bcast(Call& c, void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request* req)
{
  c.r.bytes = type_bytes(count, dt);
  c.r.root = root;
  c.r.comm = comm_id(comm);
  mark_device(c.r, buf);
  nonblocking(c, req);
  c.finish();
}

void rec_sized(Call& c, const void* sendbuf, const void* recvbuf, int count, MPI_Datatype dt, MPI_Comm comm,
               MPI_Request* req, int root = 0)
{
  c.r.bytes = type_bytes(count, dt);
  c.r.comm = comm_id(comm);
  c.r.root = root;
  mark_device(c.r, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf);
  nonblocking(c, req);
  c.finish();
}

void rec_alltoall(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm, MPI_Request* req)
{
  c.r.bytes = sendbuf == MPI_IN_PLACE ? type_bytes(rcount, rtype) : type_bytes(scount, stype);
  c.r.recv_bytes = type_bytes(rcount, rtype);
  c.r.comm = comm_id(comm);
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish();
}

void rec_alltoallv(Call& c, const void* sendbuf, const int* scounts, MPI_Datatype stype, const int* rcounts,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req)
{
  int n = comm_size(comm);
  std::vector<std::int64_t> s, r;
  scaled_counts(rcounts, n, rtype, r);
  if (sendbuf == MPI_IN_PLACE)
    s = r;
  else
    scaled_counts(scounts, n, stype, s);
  c.r.comm = comm_id(comm);
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish(ExtraKind::CountsBoth, s.data(), s.size(), r.data(), r.size());
}

void rec_gather(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype, int root,
                MPI_Comm comm, MPI_Request* req)
{
  bool at_root = comm_rank(comm) == root;  // receive arguments are only meaningful at the root
  c.r.bytes = (at_root && sendbuf == MPI_IN_PLACE) ? type_bytes(rcount, rtype) : type_bytes(scount, stype);
  c.r.recv_bytes = at_root ? type_bytes(rcount, rtype) : 0;
  c.r.root = root;
  c.r.comm = comm_id(comm);
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish();
}

void rec_gatherv(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, const int* rcounts,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req)
{
  int me = comm_rank(comm);
  bool at_root = me == root;
  std::vector<std::int64_t> r;
  if (at_root)
    scaled_counts(rcounts, comm_size(comm), rtype, r);
  c.r.bytes = (at_root && sendbuf == MPI_IN_PLACE) ? static_cast<std::uint64_t>(r[static_cast<std::size_t>(me)])
                                                   : type_bytes(scount, stype);
  c.r.root = root;
  c.r.comm = comm_id(comm);
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish(ExtraKind::RecvCounts, r.data(), r.size());
}

void rec_allgatherv(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, const int* rcounts,
                    MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req)
{
  std::vector<std::int64_t> r;
  scaled_counts(rcounts, comm_size(comm), rtype, r);
  c.r.bytes = sendbuf == MPI_IN_PLACE ? static_cast<std::uint64_t>(r[static_cast<std::size_t>(comm_rank(comm))])
                                      : type_bytes(scount, stype);
  c.r.comm = comm_id(comm);
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish(ExtraKind::RecvCounts, r.data(), r.size());
}

void rec_scatter(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req)
{
  bool at_root = comm_rank(comm) == root;  // send arguments are only meaningful at the root
  c.r.recv_bytes = (at_root && recvbuf == MPI_IN_PLACE) ? type_bytes(scount, stype) : type_bytes(rcount, rtype);
  c.r.bytes = at_root ? type_bytes(scount, stype) : c.r.recv_bytes;
  c.r.root = root;
  c.r.comm = comm_id(comm);
  mark_device(c.r, at_root ? sendbuf : recvbuf);
  nonblocking(c, req);
  c.finish();
}

void rec_scatterv(Call& c, const void* sendbuf, const int* scounts, MPI_Datatype stype, void* recvbuf, int rcount,
                  MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req)
{
  int me = comm_rank(comm);
  bool at_root = me == root;
  std::vector<std::int64_t> s;
  if (at_root)
    scaled_counts(scounts, comm_size(comm), stype, s);
  c.r.recv_bytes = (at_root && recvbuf == MPI_IN_PLACE) ? static_cast<std::uint64_t>(s[static_cast<std::size_t>(me)])
                                                        : type_bytes(rcount, rtype);
  c.r.root = root;
  c.r.comm = comm_id(comm);
  mark_device(c.r, at_root ? sendbuf : recvbuf);
  nonblocking(c, req);
  c.finish(ExtraKind::Counts, s.data(), s.size());
}

void rec_reduce_scatter(Call& c, const void* sendbuf, const int* rcounts, int block_count, MPI_Datatype dt,
                        MPI_Comm comm, MPI_Request* req)
{
  int n = comm_size(comm);
  std::vector<std::int64_t> r;
  if (rcounts != nullptr) {
    scaled_counts(rcounts, n, dt, r);
  } else {
    r.assign(static_cast<std::size_t>(n), static_cast<std::int64_t>(type_bytes(block_count, dt)));
  }
  c.r.comm = comm_id(comm);
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish(ExtraKind::RecvCounts, r.data(), r.size());
}

/// Ends a creation record made among its members only (ExtraKind::Members): the new communicator's world
/// ranks, in rank order; a replay creates it from them without a collective over the parent.
void finish_members(Call& c, const std::vector<std::int32_t>& members)
{
  std::vector<std::int64_t> v(members.begin(), members.end());
  c.finish(ExtraKind::Members, v.data(), v.size());
}

/// The request argument of a nonblocking form (nullptr for the blocking one).
MPI_Request* request_of() { return nullptr; }
MPI_Request* request_of(MPI_Request* r) { return r; }

// How each collective is described; `req` is empty for the blocking form, the request for the nonblocking one.
constexpr auto kBarrier = [](Call& c, int, MPI_Comm comm, auto... req) {
  c.r.comm = comm_id(comm);
  nonblocking(c, request_of(req...));
  c.finish();
};
constexpr auto kBcast = [](Call& c, int, void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                           auto... req) { rec_bcast(c, buf, count, dt, root, comm, request_of(req...)); };
constexpr auto kReduce = [](Call& c, int, const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op, int root,
                            MPI_Comm comm, auto... req) {
  rec_sized(c, sb, rb, count, dt, comm, request_of(req...), root);
};
/// Allreduce, Scan, Exscan.
constexpr auto kReduceAll = [](Call& c, int, const void* sb, void* rb, int count, MPI_Datatype dt, MPI_Op,
                               MPI_Comm comm, auto... req) { rec_sized(c, sb, rb, count, dt, comm, request_of(req...)); };
/// Alltoall, Allgather: one block per rank.
constexpr auto kBlocks = [](Call& c, int, const void* sb, int sc, MPI_Datatype st, void*, int rc, MPI_Datatype rt,
                            MPI_Comm comm, auto... req) { rec_alltoall(c, sb, sc, st, rc, rt, comm, request_of(req...)); };
constexpr auto kAlltoallv = [](Call& c, int, const void* sb, const int* scounts, const int*, MPI_Datatype st, void*,
                               const int* rcounts, const int*, MPI_Datatype rt, MPI_Comm comm, auto... req) {
  rec_alltoallv(c, sb, scounts, st, rcounts, rt, comm, request_of(req...));
};
constexpr auto kGather = [](Call& c, int, const void* sb, int sc, MPI_Datatype st, void*, int rc, MPI_Datatype rt,
                            int root, MPI_Comm comm, auto... req) {
  rec_gather(c, sb, sc, st, rc, rt, root, comm, request_of(req...));
};
constexpr auto kGatherv = [](Call& c, int, const void* sb, int sc, MPI_Datatype st, void*, const int* rcounts,
                             const int*, MPI_Datatype rt, int root, MPI_Comm comm, auto... req) {
  rec_gatherv(c, sb, sc, st, rcounts, rt, root, comm, request_of(req...));
};
constexpr auto kAllgatherv = [](Call& c, int, const void* sb, int sc, MPI_Datatype st, void*, const int* rcounts,
                                const int*, MPI_Datatype rt, MPI_Comm comm, auto... req) {
  rec_allgatherv(c, sb, sc, st, rcounts, rt, comm, request_of(req...));
};
constexpr auto kScatter = [](Call& c, int, const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                             int root, MPI_Comm comm, auto... req) {
  rec_scatter(c, sb, sc, st, rb, rc, rt, root, comm, request_of(req...));
};
constexpr auto kScatterv = [](Call& c, int, const void* sb, const int* scounts, const int*, MPI_Datatype st, void* rb,
                              int rc, MPI_Datatype rt, int root, MPI_Comm comm, auto... req) {
  rec_scatterv(c, sb, scounts, st, rb, rc, rt, root, comm, request_of(req...));
};
constexpr auto kReduceScatter = [](Call& c, int, const void* sb, void*, const int* rcounts, MPI_Datatype dt, MPI_Op,
                                   MPI_Comm comm, auto... req) {
  rec_reduce_scatter(c, sb, rcounts, 0, dt, comm, request_of(req...));
};
constexpr auto kReduceScatterBlock = [](Call& c, int, const void* sb, void*, int rcount, MPI_Datatype dt, MPI_Op,
                                        MPI_Comm comm, auto... req) {
  rec_reduce_scatter(c, sb, nullptr, rcount, dt, comm, request_of(req...));
};

/// A creation every member of `comm` takes part in, recorded as a split of it (fill_creation); the new
/// communicator is the last argument.
constexpr auto kCreation = [](Call& c, int, MPI_Comm comm, auto... rest) {
  MPI_Comm* created = std::get<sizeof...(rest) - 1>(std::tie(rest...));
  fill_creation(c.r, comm, *created);
  c.finish();
};

/// A local call (no communication): records the function and its communicator.
template <typename F>
int local_call(Fn fn, MPI_Comm comm, F&& body)
{
  Call c(fn);
  // The id is looked up before the call: MPI_Comm_free invalidates the handle.
  std::int32_t id = c && comm != MPI_COMM_NULL ? comm_id(comm) : -1;
  int rc = body();
  if (c) {
    c.r.comm = id;
    c.finish();
  }
  return rc;
}

// MPI_Alltoallw: per-peer bytes, each with its own datatype; recorded as an alltoallv.
void per_peer_bytes(const int* counts, const MPI_Datatype* types, int n, std::vector<std::int64_t>& out)
{
  out.resize(static_cast<std::size_t>(n < 0 ? 0 : n));
  for (int i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(type_bytes(counts[i], types[i]));
}

constexpr auto kAlltoallw = [](Call& c, int, const void* sb, const int* scounts, const int*,
                               const MPI_Datatype* stypes, void*, const int* rcounts, const int*,
                               const MPI_Datatype* rtypes, MPI_Comm comm, auto... req) {
  int n = comm_size(comm);
  std::vector<std::int64_t> s, r;
  per_peer_bytes(rcounts, rtypes, n, r);
  if (sb == MPI_IN_PLACE)
    s = r;
  else
    per_peer_bytes(scounts, stypes, n, s);
  c.r.comm = comm_id(comm);
  mark_device(c.r, sb);
  if constexpr (sizeof...(req) == 1)
    nonblocking(c, req...);
  c.finish(ExtraKind::CountsBoth, s.data(), s.size(), r.data(), r.size());
};

/// The in- and out-neighbours of a process topology, in the order the neighbourhood collectives use
/// (MPI 4.0, 8.6): Cartesian -- per dimension, the -1 then the +1 neighbour (MPI_PROC_NULL at a
/// non-periodic border); graph -- MPI_Graph_neighbors; distributed graph -- MPI_Dist_graph_neighbors.
void topology_neighbors(MPI_Comm comm, std::vector<int>& sources, std::vector<int>& dests)
{
  sources.clear();
  dests.clear();
  int kind = MPI_UNDEFINED;
  PMPI_Topo_test(comm, &kind);
  if (kind == MPI_CART) {
    int ndims = 0;
    PMPI_Cartdim_get(comm, &ndims);
    for (int d = 0; d < ndims; ++d) {
      int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
      PMPI_Cart_shift(comm, d, 1, &lo, &hi);
      sources.push_back(lo);
      sources.push_back(hi);
    }
    dests = sources;
  } else if (kind == MPI_GRAPH) {
    int n = 0, me = comm_rank(comm);
    PMPI_Graph_neighbors_count(comm, me, &n);
    sources.resize(static_cast<std::size_t>(n));
    if (n > 0)
      PMPI_Graph_neighbors(comm, me, n, sources.data());
    dests = sources;
  } else if (kind == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
    sources.resize(static_cast<std::size_t>(in));
    dests.resize(static_cast<std::size_t>(out));
    std::vector<int> wi(static_cast<std::size_t>(in) + 1), wo(static_cast<std::size_t>(out) + 1);
    PMPI_Dist_graph_neighbors(comm, in, sources.data(), wi.data(), out, dests.data(), wo.data());
  }
}

/// A neighbourhood collective: the neighbours as world ranks, the bytes to each out-neighbour
/// (`send(i)`) and from each in-neighbour (`recv(i)`). The converter expands it into the point-to-point
/// exchanges it performs (docs/guides/profiling.md).
template <typename SendBytes, typename RecvBytes>
void rec_neighbors(Call& c, MPI_Comm comm, const void* sendbuf, SendBytes&& send, RecvBytes&& recv, MPI_Request* req)
{
  std::vector<int> sources, dests;
  topology_neighbors(comm, sources, dests);
  std::vector<std::int64_t> ranks, bytes;
  ranks.reserve(sources.size() + dests.size());
  bytes.reserve(sources.size() + dests.size());
  for (int s : sources)
    ranks.push_back(world_of(comm, s));
  for (int d : dests)
    ranks.push_back(world_of(comm, d));
  for (std::size_t i = 0; i < dests.size(); ++i)
    bytes.push_back(static_cast<std::int64_t>(send(static_cast<int>(i))));
  for (std::size_t i = 0; i < sources.size(); ++i)
    bytes.push_back(static_cast<std::int64_t>(recv(static_cast<int>(i))));
  c.r.comm = comm_id(comm);
  c.r.root = static_cast<std::int32_t>(sources.size());
  c.r.key = static_cast<std::int32_t>(dests.size());
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish(ExtraKind::Neighbors, ranks.data(), ranks.size(), bytes.data(), bytes.size());
}

// Allgather and alltoall send the same block to every out-neighbour and receive one from every in-neighbour.
constexpr auto kNeighborBlocks = [](Call& c, int, const void* sb, int sc, MPI_Datatype st, void*, int rc,
                                    MPI_Datatype rt, MPI_Comm comm, auto... req) {
  std::uint64_t s = type_bytes(sc, st), r = type_bytes(rc, rt);
  rec_neighbors(c, comm, sb, [&](int) { return s; }, [&](int) { return r; }, request_of(req...));
};
constexpr auto kNeighborAllgatherv = [](Call& c, int, const void* sb, int sc, MPI_Datatype st, void*,
                                        const int* rcounts, const int*, MPI_Datatype rt, MPI_Comm comm, auto... req) {
  std::uint64_t s = type_bytes(sc, st);
  rec_neighbors(c, comm, sb, [&](int) { return s; }, [&](int i) { return type_bytes(rcounts[i], rt); },
                request_of(req...));
};
constexpr auto kNeighborAlltoallv = [](Call& c, int, const void* sb, const int* scounts, const int*,
                                       MPI_Datatype st, void*, const int* rcounts, const int*, MPI_Datatype rt,
                                       MPI_Comm comm, auto... req) {
  rec_neighbors(c, comm, sb, [&](int i) { return type_bytes(scounts[i], st); },
                [&](int i) { return type_bytes(rcounts[i], rt); }, request_of(req...));
};
constexpr auto kNeighborAlltoallw = [](Call& c, int, const void* sb, const int* scounts, const MPI_Aint*,
                                       const MPI_Datatype* stypes, void*, const int* rcounts, const MPI_Aint*,
                                       const MPI_Datatype* rtypes, MPI_Comm comm, auto... req) {
  rec_neighbors(c, comm, sb, [&](int i) { return type_bytes(scounts[i], stypes[i]); },
                [&](int i) { return type_bytes(rcounts[i], rtypes[i]); }, request_of(req...));
};

/// MPI_Comm_split and MPI_Cart_create, given the PMPI entry (C or Fortran).
template <typename Pmpi>
int comm_split_body(Pmpi pmpi, MPI_Comm comm, int color, int key, MPI_Comm* newcomm)
{
  Call c(Fn::MPI_Comm_split);
  int rc = pmpi(comm, color, key, newcomm);
  if (c) {
    fill_creation(c.r, comm, *newcomm, color == MPI_UNDEFINED ? -1 : color, key);
    c.finish();
  }
  return rc;
}

template <typename Pmpi>
int cart_create_body(Pmpi pmpi, MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                     MPI_Comm* newcomm)
{
  Call c(Fn::MPI_Cart_create);
  int rc = pmpi(comm, ndims, dims, periods, reorder, newcomm);
  if (c) {
    fill_creation(c.r, comm, *newcomm);
    std::vector<std::int64_t> d(dims, dims + (ndims < 0 ? 0 : ndims));
    c.finish(ExtraKind::Counts, d.data(), d.size());
  }
  return rc;
}

}  // namespace

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

int MPI_Comm_spawn_multiple(int count, char* commands[], char** argv[], const int maxprocs[], const MPI_Info infos[],
                            int root, MPI_Comm comm, MPI_Comm* intercomm, int errcodes[])
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

// ------------------------------------------------------------------ Fortran bindings (fortran.hpp)
// The C wrappers' descriptions (the k... lambdas and bodies above) with the Fortran PMPI entry performing
// the call. A nonblocking one's C request is read from the Fortran handle once the call returned.

using F = MPI_Fint;

namespace {

/// hooked() with the Fortran entry `call` in place of the C PMPI function.
template <typename Rec, typename Call_, typename... A>
void fortran_hooked(Fn fn, Rec rec, F* ierr, Call_ call, A... c_args)
{
  hooked(fn, fortran(ierr, call, kNothing), rec, c_args...);
}

/// The same for a nonblocking call, whose C request (the last C argument) comes from `req`.
template <typename Rec, typename Call_, typename... A>
void fortran_nonblocking(Fn fn, Rec rec, F* ierr, F* req, Call_ call, A... c_args)
{
  MPI_Request c_req = MPI_REQUEST_NULL;
  hooked(fn, fortran(ierr, call, [&](auto&&...) { c_req = PMPI_Request_f2c(*req); }), rec, c_args..., &c_req);
}

MPI_Comm comm_f(const F* c) { return PMPI_Comm_f2c(*c); }
MPI_Datatype type_f(const F* t) { return PMPI_Type_f2c(*t); }
MPI_Op op_f(const F* o) { return PMPI_Op_f2c(*o); }

}  // namespace

GRIDCAST_FORTRAN_NAMES(barrier, MPI_BARRIER, (F* comm, F* ierr))
void mpi_barrier_(F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(barrier, (F*, F*));
  fortran_hooked(Fn::MPI_Barrier, kBarrier, ierr, [&] { pmpi(comm, ierr); }, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(ibarrier, MPI_IBARRIER, (F* comm, F* req, F* ierr))
void mpi_ibarrier_(F* comm, F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(ibarrier, (F*, F*, F*));
  fortran_nonblocking(Fn::MPI_Ibarrier, kBarrier, ierr, req, [&] { pmpi(comm, req, ierr); }, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(bcast, MPI_BCAST, (void* buf, F* count, F* dt, F* root, F* comm, F* ierr))
void mpi_bcast_(void* buf, F* count, F* dt, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(bcast, (void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Bcast, kBcast, ierr, [&] { pmpi(buf, count, dt, root, comm, ierr); }, fortran_buffer(buf), *count,
                 type_f(dt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(ibcast, MPI_IBCAST, (void* buf, F* count, F* dt, F* root, F* comm, F* req, F* ierr))
void mpi_ibcast_(void* buf, F* count, F* dt, F* root, F* comm, F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(ibcast, (void*, F*, F*, F*, F*, F*, F*));
  fortran_nonblocking(Fn::MPI_Ibcast, kBcast, ierr, req, [&] { pmpi(buf, count, dt, root, comm, req, ierr); },
                      fortran_buffer(buf), *count, type_f(dt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(reduce, MPI_REDUCE, (void* sb, void* rb, F* count, F* dt, F* op, F* root, F* comm, F* ierr))
void mpi_reduce_(void* sb, void* rb, F* count, F* dt, F* op, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(reduce, (void*, void*, F*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Reduce, kReduce, ierr, [&] { pmpi(sb, rb, count, dt, op, root, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *count, type_f(dt), op_f(op), *root,
                 comm_f(comm));
}

#define GRIDCAST_REDUCE_ALL(lower, UPPER, FN)                                                                       \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* ierr))              \
  void mpi_##lower##_(void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* ierr)                                 \
  {                                                                                                                 \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, void*, F*, F*, F*, F*, F*));                                               \
    fortran_hooked(Fn::FN, kReduceAll, ierr, [&] { pmpi(sb, rb, count, dt, op, comm, ierr); },                      \
                   static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *count, type_f(dt), op_f(op), \
                   comm_f(comm));                                                                                   \
  }
GRIDCAST_REDUCE_ALL(allreduce, MPI_ALLREDUCE, MPI_Allreduce)
GRIDCAST_REDUCE_ALL(scan, MPI_SCAN, MPI_Scan)
GRIDCAST_REDUCE_ALL(exscan, MPI_EXSCAN, MPI_Exscan)

GRIDCAST_FORTRAN_NAMES(iallreduce, MPI_IALLREDUCE,
                       (void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* req, F* ierr))
void mpi_iallreduce_(void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(iallreduce, (void*, void*, F*, F*, F*, F*, F*, F*));
  fortran_nonblocking(Fn::MPI_Iallreduce, kReduceAll, ierr, req, [&] { pmpi(sb, rb, count, dt, op, comm, req, ierr); },
                      static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *count, type_f(dt), op_f(op),
                      comm_f(comm));
}

#define GRIDCAST_BLOCKS(lower, UPPER, FN)                                                                           \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* comm, F* ierr))          \
  void mpi_##lower##_(void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* comm, F* ierr)                             \
  {                                                                                                                 \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, F*, F*, void*, F*, F*, F*, F*));                                           \
    fortran_hooked(Fn::FN, kBlocks, ierr, [&] { pmpi(sb, sc, st, rb, rc, rt, comm, ierr); },                        \
                   static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb), *rc, type_f(rt), \
                   comm_f(comm));                                                                                   \
  }
GRIDCAST_BLOCKS(alltoall, MPI_ALLTOALL, MPI_Alltoall)
GRIDCAST_BLOCKS(allgather, MPI_ALLGATHER, MPI_Allgather)

#define GRIDCAST_ROOTED(lower, UPPER, FN, REC)                                                                      \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr)) \
  void mpi_##lower##_(void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr)                    \
  {                                                                                                                 \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, F*, F*, void*, F*, F*, F*, F*, F*));                                       \
    fortran_hooked(Fn::FN, REC, ierr, [&] { pmpi(sb, sc, st, rb, rc, rt, root, comm, ierr); },                      \
                   static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb), *rc, type_f(rt), \
                   *root, comm_f(comm));                                                                            \
  }
GRIDCAST_ROOTED(gather, MPI_GATHER, MPI_Gather, kGather)
GRIDCAST_ROOTED(scatter, MPI_SCATTER, MPI_Scatter, kScatter)

GRIDCAST_FORTRAN_NAMES(alltoallv, MPI_ALLTOALLV,
                       (void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr))
void mpi_alltoallv_(void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(alltoallv, (void*, F*, F*, F*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Alltoallv, kAlltoallv, ierr, [&] { pmpi(sb, sc, sd, st, rb, rc, rd, rt, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), static_cast<const int*>(sc), static_cast<const int*>(sd),
                 type_f(st), fortran_buffer(rb), static_cast<const int*>(rc), static_cast<const int*>(rd), type_f(rt),
                 comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(gatherv, MPI_GATHERV,
                       (void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* root, F* comm, F* ierr))
void mpi_gatherv_(void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(gatherv, (void*, F*, F*, void*, F*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Gatherv, kGatherv, ierr, [&] { pmpi(sb, sc, st, rb, rc, rd, rt, root, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb),
                 static_cast<const int*>(rc), static_cast<const int*>(rd), type_f(rt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(allgatherv, MPI_ALLGATHERV,
                       (void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr))
void mpi_allgatherv_(void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(allgatherv, (void*, F*, F*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Allgatherv, kAllgatherv, ierr, [&] { pmpi(sb, sc, st, rb, rc, rd, rt, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb),
                 static_cast<const int*>(rc), static_cast<const int*>(rd), type_f(rt), comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(scatterv, MPI_SCATTERV,
                       (void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr))
void mpi_scatterv_(void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(scatterv, (void*, F*, F*, F*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Scatterv, kScatterv, ierr, [&] { pmpi(sb, sc, sd, st, rb, rc, rt, root, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), static_cast<const int*>(sc), static_cast<const int*>(sd),
                 type_f(st), fortran_buffer(rb), *rc, type_f(rt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(reduce_scatter, MPI_REDUCE_SCATTER,
                       (void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr))
void mpi_reduce_scatter_(void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(reduce_scatter, (void*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Reduce_scatter, kReduceScatter, ierr, [&] { pmpi(sb, rb, rc, dt, op, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), static_cast<const int*>(rc), type_f(dt),
                 op_f(op), comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
                       (void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr))
void mpi_reduce_scatter_block_(void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(reduce_scatter_block, (void*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Reduce_scatter_block, kReduceScatterBlock, ierr, [&] { pmpi(sb, rb, rc, dt, op, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *rc, type_f(dt), op_f(op), comm_f(comm));
}

// ------------------------------------------------------------------ Fortran: communicators

GRIDCAST_FORTRAN_NAMES(comm_split, MPI_COMM_SPLIT, (F* comm, F* color, F* key, F* newcomm, F* ierr))
void mpi_comm_split_(F* comm, F* color, F* key, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_split, (F*, F*, F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  comm_split_body(fortran(ierr, [&] { pmpi(comm, color, key, newcomm, ierr); },
                          [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
                  comm_f(comm), *color, *key, &c_new);
}

GRIDCAST_FORTRAN_NAMES(comm_dup, MPI_COMM_DUP, (F* comm, F* newcomm, F* ierr))
void mpi_comm_dup_(F* comm, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_dup, (F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  hooked(Fn::MPI_Comm_dup,
         fortran(ierr, [&] { pmpi(comm, newcomm, ierr); }, [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
         kCreation, comm_f(comm), &c_new);
}

GRIDCAST_FORTRAN_NAMES(comm_create, MPI_COMM_CREATE, (F* comm, F* group, F* newcomm, F* ierr))
void mpi_comm_create_(F* comm, F* group, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_create, (F*, F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  hooked(Fn::MPI_Comm_create,
         fortran(ierr, [&] { pmpi(comm, group, newcomm, ierr); }, [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
         kCreation, comm_f(comm), PMPI_Group_f2c(*group), &c_new);
}

GRIDCAST_FORTRAN_NAMES(cart_create, MPI_CART_CREATE,
                       (F* comm, F* ndims, F* dims, F* periods, F* reorder, F* newcomm, F* ierr))
void mpi_cart_create_(F* comm, F* ndims, F* dims, F* periods, F* reorder, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(cart_create, (F*, F*, F*, F*, F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  // periods and reorder are LOGICALs, which the record does not read
  cart_create_body(fortran(ierr, [&] { pmpi(comm, ndims, dims, periods, reorder, newcomm, ierr); },
                           [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
                   comm_f(comm), *ndims, static_cast<const int*>(dims), static_cast<const int*>(nullptr), 0, &c_new);
}

GRIDCAST_FORTRAN_NAMES(comm_free, MPI_COMM_FREE, (F* comm, F* ierr))
void mpi_comm_free_(F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_free, (F*, F*));
  local_call(Fn::MPI_Comm_free, comm_f(comm), [&] {
    pmpi(comm, ierr);
    return *ierr;
  });
}

GRIDCAST_FORTRAN_NAMES(comm_rank, MPI_COMM_RANK, (F* comm, F* rank, F* ierr))
void mpi_comm_rank_(F* comm, F* rank, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_rank, (F*, F*, F*));
  local_call(Fn::MPI_Comm_rank, comm_f(comm), [&] {
    pmpi(comm, rank, ierr);
    return *ierr;
  });
}

GRIDCAST_FORTRAN_NAMES(comm_size, MPI_COMM_SIZE, (F* comm, F* size, F* ierr))
void mpi_comm_size_(F* comm, F* size, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_size, (F*, F*, F*));
  local_call(Fn::MPI_Comm_size, comm_f(comm), [&] {
    pmpi(comm, size, ierr);
    return *ierr;
  });
}
