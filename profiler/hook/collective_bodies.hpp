// The recording bodies of the collectives and of the communicator calls, shared by the C wrappers
// (hook_mpi_collectives.cpp) and the Fortran ones (hook_fortran_collectives.cpp): each description (the
// k... lambdas) and body records through the PMPI call it is given, so that a Fortran entry records
// through the very code of its C twin. Internal to the hook.
#pragma once

#include "core.hpp"
#include "comms.hpp"
#include "mpi_record.hpp"
#include "requests.hpp"

#include <mpi.h>

#include <algorithm>
#include <tuple>
#include <vector>

#pragma GCC visibility push(hidden)
namespace gridcast::hook {

/// counts[i] * size(dt) for i < n, into `out`.
inline void scaled_counts(const int* counts, int n, MPI_Datatype dt, std::vector<std::int64_t>& out)
{
  out.resize(static_cast<std::size_t>(n));
  int size = 0;
  if (dt != MPI_DATATYPE_NULL)
    PMPI_Type_size(dt, &size);
  for (int i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(counts[i]) * size;
}

/// Records a nonblocking collective's request (blocking ones leave `request` null).
inline void nonblocking(Call& c, MPI_Request* request)
{
  if (request != nullptr) {
    c.r.flags |= kFlagNonblocking;
    c.r.request = new_request(*request, request);
  }
}

// Shared bodies of the blocking and nonblocking collectives (request == nullptr: blocking).
inline void rec_bcast(Call& c, void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request* req)
{
  c.r.bytes = type_bytes(count, dt);
  c.r.root = root;
  c.r.comm = comm_id(comm);
  mark_device(c.r, buf);
  nonblocking(c, req);
  c.finish();
}

inline void rec_sized(Call& c, const void* sendbuf, const void* recvbuf, int count, MPI_Datatype dt, MPI_Comm comm,
               MPI_Request* req, int root = 0)
{
  c.r.bytes = type_bytes(count, dt);
  c.r.comm = comm_id(comm);
  c.r.root = root;
  mark_device(c.r, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf);
  nonblocking(c, req);
  c.finish();
}

inline void rec_alltoall(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm, MPI_Request* req)
{
  c.r.bytes = sendbuf == MPI_IN_PLACE ? type_bytes(rcount, rtype) : type_bytes(scount, stype);
  c.r.recv_bytes = type_bytes(rcount, rtype);
  c.r.comm = comm_id(comm);
  mark_device(c.r, sendbuf);
  nonblocking(c, req);
  c.finish();
}

inline void rec_alltoallv(Call& c, const void* sendbuf, const int* scounts, MPI_Datatype stype, const int* rcounts,
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

inline void rec_gather(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype, int root,
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

inline void rec_gatherv(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, const int* rcounts,
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

inline void rec_allgatherv(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, const int* rcounts,
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

inline void rec_scatter(Call& c, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
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

inline void rec_scatterv(Call& c, const void* sendbuf, const int* scounts, MPI_Datatype stype, void* recvbuf, int rcount,
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

inline void rec_reduce_scatter(Call& c, const void* sendbuf, const int* rcounts, int block_count, MPI_Datatype dt,
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
inline void finish_members(Call& c, const std::vector<std::int32_t>& members)
{
  std::vector<std::int64_t> v(members.begin(), members.end());
  c.finish(ExtraKind::Members, v.data(), v.size());
}

/// The request argument of a nonblocking form (nullptr for the blocking one).
inline MPI_Request* request_of() { return nullptr; }
inline MPI_Request* request_of(MPI_Request* r) { return r; }

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
inline void per_peer_bytes(const int* counts, const MPI_Datatype* types, int n, std::vector<std::int64_t>& out)
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
inline void topology_neighbors(MPI_Comm comm, std::vector<int>& sources, std::vector<int>& dests)
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

}  // namespace gridcast::hook
#pragma GCC visibility pop
