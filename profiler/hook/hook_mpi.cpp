// MPI wrappers: every MPI_X calls PMPI_X and records one raw record (raw_format.hpp). Peers are
// translated to world ranks, communicators and requests to small per-rank ids.
#include "core.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cstdio>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

using namespace gridcast::hook;

namespace {

// ------------------------------------------------------------------ communicators

/// One communicator seen by this rank: its id in the trace and the world rank of each of its ranks.
struct CommEntry {
  std::atomic<MPI_Comm> handle;
  std::int32_t id = 0;
  std::vector<std::int32_t> world;   ///< comm rank (remote rank for an inter-communicator) -> world rank
};

constexpr int kMaxComms = 8192;
CommEntry* g_comms[kMaxComms] = {};
std::atomic<int> g_ncomms{0};
std::atomic<std::int32_t> g_next_comm_id{0};
std::mutex g_comm_mutex;

/// World rank of each rank of `group`, in order.
std::vector<std::int32_t> group_world_ranks(MPI_Group group)
{
  MPI_Group world_group;
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int size = 0;
  PMPI_Group_size(group, &size);
  std::vector<int> ranks(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i)
    ranks[static_cast<std::size_t>(i)] = i;
  std::vector<std::int32_t> world(static_cast<std::size_t>(size));
  PMPI_Group_translate_ranks(group, size, ranks.data(), world_group, world.data());
  PMPI_Group_free(&world_group);
  return world;
}

/// The world ranks of `comm`'s local group (inter = false) or remote group (inter-communicators only).
std::vector<std::int32_t> comm_world_ranks(MPI_Comm comm, bool remote)
{
  MPI_Group group;
  if (remote)
    PMPI_Comm_remote_group(comm, &group);
  else
    PMPI_Comm_group(comm, &group);
  auto world = group_world_ranks(group);
  PMPI_Group_free(&group);
  return world;
}

/// Registers `comm` under a new id (replacing an older entry with the same handle, which MPI may reuse).
/// `world`: its ranks' world ranks when known already (MPI_Comm_idup: the handle may not be usable before
/// the request completes); otherwise asked from MPI -- for an inter-communicator, of its remote group,
/// the ranks its point-to-point calls name.
CommEntry* register_comm(MPI_Comm comm, const std::vector<std::int32_t>* world = nullptr)
{
  std::lock_guard<std::mutex> lock(g_comm_mutex);
  int n = g_ncomms.load();
  for (int i = 0; i < n; ++i)
    if (g_comms[i]->handle.load() == comm)
      g_comms[i]->handle.store(MPI_COMM_NULL);
  if (n >= kMaxComms)
    return nullptr;
  auto* e = new CommEntry;
  e->handle.store(comm);
  e->id = g_next_comm_id.fetch_add(1);
  if (world != nullptr) {
    e->world = *world;
  } else {
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    e->world = comm_world_ranks(comm, inter != 0);
  }
  g_comms[n] = e;
  g_ncomms.store(n + 1, std::memory_order_release);
  return e;
}

thread_local CommEntry* t_last_comm = nullptr;

CommEntry* comm_entry(MPI_Comm comm)
{
  if (t_last_comm != nullptr && t_last_comm->handle.load(std::memory_order_relaxed) == comm)
    return t_last_comm;
  int n = g_ncomms.load(std::memory_order_acquire);
  for (int i = n - 1; i >= 0; --i)
    if (g_comms[i]->handle.load(std::memory_order_relaxed) == comm)
      return t_last_comm = g_comms[i];
  if (comm == MPI_COMM_NULL)
    return nullptr;
  return t_last_comm = register_comm(comm);  // created before we could see it (MPI_COMM_SELF...)
}

std::int32_t comm_id(MPI_Comm comm)
{
  CommEntry* e = comm_entry(comm);
  return e != nullptr ? e->id : -1;
}

/// World rank of `rank` in `comm`; -1 any source, -3 MPI_PROC_NULL, -2 unknown.
std::int32_t world_of(MPI_Comm comm, int rank)
{
  if (rank == MPI_ANY_SOURCE)
    return -1;
  if (rank == MPI_PROC_NULL)
    return -3;
  CommEntry* e = comm_entry(comm);
  if (e == nullptr || rank < 0 || static_cast<std::size_t>(rank) >= e->world.size())
    return -2;
  return e->world[static_cast<std::size_t>(rank)];
}

int comm_rank(MPI_Comm comm)
{
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}
int comm_size(MPI_Comm comm)
{
  int n = 0, inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter)
    PMPI_Comm_remote_size(comm, &n);
  else
    PMPI_Comm_size(comm, &n);
  return n;
}

/// Fills a communicator-creation record: the new communicator as a split of `parent` -- color = world
/// rank of the new communicator's rank 0 (the same on every member), key = rank in it; -1 = no new one.
void fill_creation(RawRecord& r, MPI_Comm parent, MPI_Comm created, int color = -4, int key = -4,
                   const std::vector<std::int32_t>* world = nullptr)
{
  r.comm = comm_id(parent);
  if (created == MPI_COMM_NULL) {
    r.color = -1;
    r.new_comm = g_next_comm_id.fetch_add(1);  // a fresh id: the null result must not alias a real one
    return;
  }
  CommEntry* e = register_comm(created, world);
  r.new_comm = e != nullptr ? e->id : -1;
  r.color = color != -4 ? color : (e != nullptr && not e->world.empty() ? e->world[0] : 0);
  r.key = key != -4 ? key : comm_rank(created);
  r.root = world != nullptr ? r.key : comm_rank(created);  // given world ranks: the handle is not usable yet
}

// ------------------------------------------------------------------ requests

std::mutex g_request_mutex;
std::unordered_map<MPI_Request, std::int64_t> g_requests;
std::int64_t g_next_request = 0;
/// Bumped whenever the table changes: a thread's cached lookups are valid while it stays the same.
std::atomic<std::uint64_t> g_request_generation{1};

/// Polling loops test the same few requests millions of times (HPCC's MPI_Testany): a small per-thread
/// cache spares them the lock and the hash lookup.
struct CachedRequest {
  // nullptr, not MPI_REQUEST_NULL (the address of an Open MPI global): a constant initializer keeps
  // the thread_local free of a per-access initialization guard. Generation 0 never matches anyway.
  MPI_Request handle = nullptr;
  std::int64_t id = -1;
  std::uint64_t generation = 0;
};
constexpr std::size_t kRequestCache = 64;
thread_local CachedRequest t_request_cache[kRequestCache];

std::size_t cache_slot(MPI_Request r)
{
  return (reinterpret_cast<std::uintptr_t>(r) >> 4) & (kRequestCache - 1);
}

std::int64_t new_request(MPI_Request r)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  std::int64_t id = g_next_request++;
  g_requests[r] = id;
  g_request_generation.fetch_add(1, std::memory_order_release);
  return id;
}

std::int64_t request_id(MPI_Request r)
{
  if (r == MPI_REQUEST_NULL)
    return -1;
  std::uint64_t generation = g_request_generation.load(std::memory_order_acquire);
  CachedRequest& slot = t_request_cache[cache_slot(r)];
  if (slot.handle == r && slot.generation == generation)
    return slot.id;
  std::int64_t id = -1;
  {
    std::lock_guard<std::mutex> lock(g_request_mutex);
    auto it = g_requests.find(r);
    if (it != g_requests.end())
      id = it->second;
    generation = g_request_generation.load(std::memory_order_relaxed);
  }
  slot = {r, id, generation};
  return id;
}

void forget_request(MPI_Request r)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  g_requests.erase(r);
  g_request_generation.fetch_add(1, std::memory_order_release);
}

/// A persistent request (MPI_Send_init...): what each MPI_Start of it performs. A start gives the handle a
/// fresh request id (new_request), so that the isend/irecv record it writes and the waits and tests that
/// complete it name the same id; a completion makes the handle inactive (id -1) until the next start.
struct PersistentOp {
  StartKind kind = StartKind::Unknown;
  std::int32_t peer = -2;  ///< world rank (-1 any source, -3 MPI_PROC_NULL)
  std::int32_t tag = 0;
  std::uint64_t bytes = 0;
  std::int32_t comm = 0;
  bool device = false;
};
std::unordered_map<MPI_Request, PersistentOp> g_persistent;  // guarded by g_request_mutex
/// Whether any persistent request exists: the wait/test wrappers skip all of this when none does.
std::atomic<bool> g_any_persistent{false};

/// A completed persistent request stays allocated but inactive: a later wait on it returns at once.
void completed_persistent(MPI_Request r)
{
  if (not g_any_persistent.load(std::memory_order_relaxed) || r == MPI_REQUEST_NULL)
    return;
  std::lock_guard<std::mutex> lock(g_request_mutex);
  if (g_persistent.count(r) == 0)
    return;
  g_requests[r] = -1;
  g_request_generation.fetch_add(1, std::memory_order_release);
}

/// Identity of a request array, for folding identical failed polls. Independent rotations xor-ed, not a
/// chained hash: it is computed before the PMPI call, whose barrier waits for it (see core.hpp).
std::uint64_t requests_key(Fn fn, std::size_t count, const MPI_Request* handles)
{
  std::uint64_t h = (static_cast<std::uint64_t>(fn) << 48) ^ count;
  for (std::size_t i = 0; i < count; ++i)
    h ^= std::rotl(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(handles[i])), static_cast<int>((7 * i + 1) & 63));
  return h;
}

/// The requests of a wait/test-family call, on the stack for the common small case: the handles are
/// copied before the call (MPI nulls completed ones), their ids looked up after it (resolve()), before
/// forget_completed() drops the completed ones -- and not at all for a folded poll.
struct RequestIds {
  // Few stores: a poll's wrapper makes this before the PMPI call (see core.hpp, poll_timed).
  [[gnu::always_inline]] explicit RequestIds(int n, const MPI_Request* reqs) : count(n < 0 ? 0 : static_cast<std::size_t>(n))
  {
    if (count > kStack) {
      heap = std::make_unique<std::int64_t[]>(count);
      hheap = std::make_unique<MPI_Request[]>(count);
    }
    ids = count <= kStack ? stack : heap.get();
    handles = count <= kStack ? hstack : hheap.get();
    for (std::size_t i = 0; i < count; ++i)
      handles[i] = reqs[i];
  }
  void resolve()
  {
    for (std::size_t i = 0; i < count; ++i)
      ids[i] = request_id(handles[i]);
  }
  /// Identity of the request array, for folding identical failed polls.
  std::uint64_t key(Fn fn) const { return requests_key(fn, count, handles); }
  /// Forgets the requests MPI freed (completed, not persistent).
  void forget_completed(const MPI_Request* after)
  {
    for (std::size_t i = 0; i < count; ++i)
      if (handles[i] != MPI_REQUEST_NULL && after[i] == MPI_REQUEST_NULL)
        forget_request(handles[i]);
  }
  /// Request `i` completed: a persistent one (still allocated) becomes inactive.
  void completed(const MPI_Request* after, std::size_t i) const
  {
    if (g_any_persistent.load(std::memory_order_relaxed) && i < count && after[i] != MPI_REQUEST_NULL)
      completed_persistent(handles[i]);
  }
  void all_completed(const MPI_Request* after) const
  {
    if (g_any_persistent.load(std::memory_order_relaxed))
      for (std::size_t i = 0; i < count; ++i)
        completed(after, i);
  }
  static constexpr std::size_t kStack = 32;
  std::size_t count;
  std::int64_t stack[kStack];
  MPI_Request hstack[kStack];
  std::unique_ptr<std::int64_t[]> heap;
  std::unique_ptr<MPI_Request[]> hheap;
  std::int64_t* ids;
  MPI_Request* handles;
};

// ------------------------------------------------------------------ sizes

std::uint64_t type_bytes(int count, MPI_Datatype dt)
{
  if (count <= 0 || dt == MPI_DATATYPE_NULL)
    return 0;
  int size = 0;
  PMPI_Type_size(dt, &size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size < 0 ? 0 : size);
}

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

void mark_device(RawRecord& r, const void* buffer)
{
  if (buffer != MPI_IN_PLACE && buffer != nullptr && is_device_memory(buffer))
    r.flags |= kFlagDeviceMemory;
}

void fill_p2p(RawRecord& r, const void* buf, int count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm)
{
  r.peer = world_of(comm, peer);
  r.tag = tag;
  r.bytes = type_bytes(count, dt);
  r.comm = comm_id(comm);
  mark_device(r, buf);
}

int send_like(Fn fn, int (*pmpi)(const void*, int, MPI_Datatype, int, int, MPI_Comm), const void* buf, int count,
              MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  Call c(fn);
  int rc = pmpi(buf, count, dt, dest, tag, comm);
  if (c) {
    fill_p2p(c.r, buf, count, dt, dest, tag, comm);
    c.finish();
  }
  return rc;
}

int isend_like(Fn fn, int (*pmpi)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*), const void* buf,
               int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* request)
{
  Call c(fn);
  int rc = pmpi(buf, count, dt, dest, tag, comm, request);
  if (c) {
    fill_p2p(c.r, buf, count, dt, dest, tag, comm);
    c.r.request = new_request(*request);
    c.finish();
  }
  return rc;
}

/// Records a nonblocking collective's request (blocking ones leave `request` null).
void nonblocking(Call& c, MPI_Request* request)
{
  if (request != nullptr) {
    c.r.flags |= kFlagNonblocking;
    c.r.request = new_request(*request);
  }
}

void fill_probe(RawRecord& r, int source, int tag, MPI_Comm comm, const MPI_Status* status, bool found)
{
  r.peer = world_of(comm, source);
  r.tag = tag;
  r.comm = comm_id(comm);
  if (found) {
    r.flags |= kFlagOutcome;
    r.src = world_of(comm, status->MPI_SOURCE);
    r.recv_tag = status->MPI_TAG;
    int n = 0;
    PMPI_Get_count(status, MPI_BYTE, &n);
    r.recv_bytes = n < 0 ? 0 : static_cast<std::uint64_t>(n);
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

/// An inter-communicator's members for the trace: both groups, the one holding the lower world rank
/// first, so that both sides write the same list.
std::vector<std::int32_t> intercomm_members(MPI_Comm inter)
{
  auto local = comm_world_ranks(inter, false), remote = comm_world_ranks(inter, true);
  auto low = [](const std::vector<std::int32_t>& g) { return g.empty() ? INT32_MAX : *std::min_element(g.begin(), g.end()); };
  if (low(remote) < low(local))
    std::swap(local, remote);
  local.insert(local.end(), remote.begin(), remote.end());
  return local;
}

/// One hooked call: calls the PMPI function, then, if this call is recorded, `rec(call, args...)`. The
/// wrappers below are one line each on top of it; what differs is only how a call is described.
template <typename Pmpi, typename Rec, typename... A>
int hooked(Fn fn, Pmpi pmpi, Rec&& rec, A... args)
{
  Call c(fn);
  int rc = pmpi(args...);
  if (c)
    rec(c, rc, args...);
  return rc;
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

/// MPI_ERRORS_ARE_FATAL ends the process inside MPI, past atexit: this handler, installed on
/// MPI_COMM_WORLD in its place (communicators created from it inherit it), keeps the records first and
/// then aborts exactly as the default would. An application that sets its own handler replaces it.
void fatal_error_handler(MPI_Comm* comm, int* code, ...)
{
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  PMPI_Error_string(*code, text, &len);
  std::fprintf(stderr, "gridcast-hook: MPI error (%s): records kept, aborting as MPI_ERRORS_ARE_FATAL would\n", text);
  on_abort(*code);
  PMPI_Abort(*comm, *code);
}

void after_init()
{
  register_comm(MPI_COMM_WORLD);  // id 0
  MPI_Errhandler current;
  PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &current);
  if (current == MPI_ERRORS_ARE_FATAL) {
    MPI_Errhandler mine;
    PMPI_Comm_create_errhandler(fatal_error_handler, &mine);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, mine);
  }
}

/// A process that MPI_Comm_spawn started inherits LD_PRELOAD and the hook's settings, but it is not a rank
/// of the profiled world: its own world rank 0 would overwrite the parent's rank 0 files. It records
/// nothing (the parent's dynamic_process record says that it existed).
bool spawned_child()
{
  MPI_Comm parent = MPI_COMM_NULL;
  PMPI_Comm_get_parent(&parent);
  return parent != MPI_COMM_NULL;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ init and finalize

int MPI_Init(int* argc, char*** argv)
{
  std::int64_t t0 = now_ticks();
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS && config().enabled && not spawned_child()) {
    after_init();
    int rank = 0, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    on_init(rank, size, t0);
    RawRecord r;
    r.fn = static_cast<std::uint16_t>(Fn::MPI_Init);
    r.start_ticks = t0;
    r.duration_ticks = now_ticks() - t0;
    append(r);
  }
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided)
{
  std::int64_t t0 = now_ticks();
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && config().enabled && not spawned_child()) {
    after_init();
    int rank = 0, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    on_init(rank, size, t0);
    RawRecord r;
    r.fn = static_cast<std::uint16_t>(Fn::MPI_Init_thread);
    r.start_ticks = t0;
    r.duration_ticks = now_ticks() - t0;
    r.tag = required;
    r.root = *provided;
    append(r);
  }
  return rc;
}

int MPI_Finalize(void)
{
  if (recording()) {
    // The trace ends where MPI_Finalize begins: record it, then flush before MPI tears down.
    RawRecord r;
    r.fn = static_cast<std::uint16_t>(Fn::MPI_Finalize);
    r.start_ticks = now_ticks();
    append(r);
    on_finalize(r.start_ticks);
  }
  return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
  if (recording()) {
    RawRecord r;
    r.fn = static_cast<std::uint16_t>(Fn::MPI_Abort);
    r.start_ticks = now_ticks();
    r.comm = comm_id(comm);
    r.tag = errorcode;
    append(r);
  }
  on_abort(errorcode);
  return PMPI_Abort(comm, errorcode);
}

// ------------------------------------------------------------------ point to point

int MPI_Send(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Send, PMPI_Send, buf, count, dt, dest, tag, comm);
}
int MPI_Bsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Bsend, PMPI_Bsend, buf, count, dt, dest, tag, comm);
}
int MPI_Rsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Rsend, PMPI_Rsend, buf, count, dt, dest, tag, comm);
}
int MPI_Ssend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Ssend, PMPI_Ssend, buf, count, dt, dest, tag, comm);
}
int MPI_Isend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Isend, PMPI_Isend, buf, count, dt, dest, tag, comm, req);
}
int MPI_Ibsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Ibsend, PMPI_Ibsend, buf, count, dt, dest, tag, comm, req);
}
int MPI_Irsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Irsend, PMPI_Irsend, buf, count, dt, dest, tag, comm, req);
}
int MPI_Issend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Issend, PMPI_Issend, buf, count, dt, dest, tag, comm, req);
}

int MPI_Recv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Recv);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
  if (c) {
    fill_p2p(c.r, buf, count, dt, source, tag, comm);
    if (source != MPI_PROC_NULL)
      c.r.src = world_of(comm, st->MPI_SOURCE);  // who actually sent it (differs with MPI_ANY_SOURCE)
    c.finish();
  }
  return rc;
}

int MPI_Irecv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request* req)
{
  Call c(Fn::MPI_Irecv);
  int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
  if (c) {
    fill_p2p(c.r, buf, count, dt, source, tag, comm);
    c.r.request = new_request(*req);
    c.finish();
  }
  return rc;
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Sendrecv);
  int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, status);
  if (c) {
    fill_p2p(c.r, sendbuf, sendcount, sendtype, dest, sendtag, comm);
    c.r.src = world_of(comm, source);
    c.r.recv_tag = recvtag;
    c.r.recv_bytes = type_bytes(recvcount, recvtype);
    c.finish();
  }
  return rc;
}

int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype dt, int dest, int sendtag, int source, int recvtag,
                         MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Sendrecv_replace);
  int rc = PMPI_Sendrecv_replace(buf, count, dt, dest, sendtag, source, recvtag, comm, status);
  if (c) {
    fill_p2p(c.r, buf, count, dt, dest, sendtag, comm);
    c.r.src = world_of(comm, source);
    c.r.recv_tag = recvtag;
    c.r.recv_bytes = c.r.bytes;
    c.finish();
  }
  return rc;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Probe);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = PMPI_Probe(source, tag, comm, st);
  if (c) {
    fill_probe(c.r, source, tag, comm, st, rc == MPI_SUCCESS);
    c.finish();
  }
  return rc;
}

/// Argument identity of a probe, for folding identical failed ones.
PollKey probe_key(Fn fn, int source, int tag, MPI_Comm comm)
{
  return {mix(mix(mix(static_cast<std::uint64_t>(fn), reinterpret_cast<std::uintptr_t>(comm)), static_cast<std::uint32_t>(source)),
              static_cast<std::uint32_t>(tag))};
}

[[gnu::noinline]] static int iprobe_timed(PollKey key, int source, int tag, MPI_Comm comm, int* flag, MPI_Status* st)
{
  Call c(Fn::MPI_Iprobe, key);
  int rc = PMPI_Iprobe(source, tag, comm, flag, st);
  if (c) {
    bool found = rc == MPI_SUCCESS && *flag;
    if (c.fold_if_repeated(not found))
      return rc;
    fill_probe(c.r, source, tag, comm, st, found);
    c.finish_poll(not found);
  }
  return rc;
}

[[gnu::noinline]] static int iprobe_untimed_end(PollKey key, int source, int tag, MPI_Comm comm, MPI_Status* st, bool found,
                                                int rc)
{
  Call c(Fn::MPI_Iprobe, key, Call::AfterUntimed{});
  if (not c.fold_if_repeated(not found)) {
    fill_probe(c.r, source, tag, comm, st, found);
    c.finish_poll(not found);
  }
  return rc;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status)
{
  const PollKey key = probe_key(Fn::MPI_Iprobe, source, tag, comm);
  MPI_Status local;  // the source and size of a found message are recorded
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  if (not untimed_poll(static_cast<std::uint16_t>(Fn::MPI_Iprobe), key.key))
    return iprobe_timed(key, source, tag, comm, flag, st);
  ++depth();
  int rc = PMPI_Iprobe(source, tag, comm, flag, st);
  bool found = rc == MPI_SUCCESS && *flag;
  if (not found && fold_untimed(static_cast<std::uint16_t>(Fn::MPI_Iprobe), key.key)) {
    --depth();
    return rc;
  }
  return iprobe_untimed_end(key, source, tag, comm, st, found, rc);
}

// ------------------------------------------------------------------ wait and test

int MPI_Wait(MPI_Request* request, MPI_Status* status)
{
  Call c(Fn::MPI_Wait);
  MPI_Request before = *request;
  std::int64_t id = c ? request_id(before) : -1;
  int rc = PMPI_Wait(request, status);
  if (before != MPI_REQUEST_NULL && *request == MPI_REQUEST_NULL)
    forget_request(before);
  else
    completed_persistent(before);
  if (c) {
    c.r.request = id;
    c.finish();
  }
  return rc;
}

/// MPI_Test after the PMPI call.
static int test_after(Call& c, MPI_Request before, MPI_Request* request, int* flag, int rc)
{
  if (c && c.fold_if_repeated(not *flag))
    return rc;  // nothing completed: nothing to forget
  // The id is looked up after the call but before forget_request() drops a completed request.
  std::int64_t id = c ? request_id(before) : -1;
  if (before != MPI_REQUEST_NULL && *request == MPI_REQUEST_NULL)
    forget_request(before);
  else if (*flag)
    completed_persistent(before);
  if (c) {
    c.r.request = id;
    if (*flag)
      c.r.flags |= kFlagOutcome;
    c.finish_poll(not *flag);
  }
  return rc;
}

[[gnu::noinline]] static int test_untimed_end(PollKey key, MPI_Request before, MPI_Request* request, int* flag, int rc)
{
  Call c(Fn::MPI_Test, key, Call::AfterUntimed{});
  return test_after(c, before, request, flag, rc);
}

[[gnu::noinline]] static int test_timed(PollKey key, MPI_Request* request, int* flag, MPI_Status* status)
{
  MPI_Request before = *request;
  Call c(Fn::MPI_Test, key);
  int rc = PMPI_Test(request, flag, status);
  return test_after(c, before, request, flag, rc);
}

// The untimed path is this function's own (see untimed_poll): the rest lives in functions of their own,
// so that this one saves few registers (stores, before Open MPI's barrier).
int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status)
{
  MPI_Request before = *request;
  const PollKey key{mix(static_cast<std::uint64_t>(Fn::MPI_Test), reinterpret_cast<std::uintptr_t>(before))};
  if (not untimed_poll(static_cast<std::uint16_t>(Fn::MPI_Test), key.key))
    return test_timed(key, request, flag, status);
  ++depth();
  int rc = PMPI_Test(request, flag, status);
  if (not *flag && fold_untimed(static_cast<std::uint16_t>(Fn::MPI_Test), key.key)) {
    --depth();
    return rc;
  }
  return test_untimed_end(key, before, request, flag, rc);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
  Call c(Fn::MPI_Waitall);
  RequestIds ids(count, requests);
  int rc = PMPI_Waitall(count, requests, statuses);
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  ids.all_completed(requests);
  if (c)
    c.finish(ExtraKind::Requests, ids.ids, ids.count);
  return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[])
{
  RequestIds ids(count, requests);
  Call c(Fn::MPI_Testall, PollKey{ids.key(Fn::MPI_Testall)});
  int rc = PMPI_Testall(count, requests, flag, statuses);
  if (c && c.fold_if_repeated(not *flag))
    return rc;  // nothing completed: nothing to forget
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*flag)
    ids.all_completed(requests);
  if (c) {
    if (*flag)
      c.r.flags |= kFlagOutcome;
    c.finish_poll(not *flag, ExtraKind::Requests, ids.ids, ids.count);
  }
  return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status)
{
  Call c(Fn::MPI_Waitany);
  RequestIds ids(count, requests);
  int rc = PMPI_Waitany(count, requests, index, status);
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*index != MPI_UNDEFINED && *index >= 0)
    ids.completed(requests, static_cast<std::size_t>(*index));
  if (c) {
    if (*index != MPI_UNDEFINED && *index >= 0 && static_cast<std::size_t>(*index) < ids.count) {
      c.r.flags |= kFlagOutcome;
      c.r.request = ids.ids[*index];
    }
    c.finish(ExtraKind::Requests, ids.ids, ids.count);
  }
  return rc;
}

/// MPI_Testany after the PMPI call.
static int testany_after(Call& c, RequestIds& ids, MPI_Request requests[], int* index, int* flag, int rc)
{
  const bool done = *flag && *index != MPI_UNDEFINED && *index >= 0 && static_cast<std::size_t>(*index) < ids.count;
  if (c && c.fold_if_repeated(not done))
    return rc;  // nothing completed: nothing to forget
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (done)
    ids.completed(requests, static_cast<std::size_t>(*index));
  if (c) {
    if (done) {
      c.r.flags |= kFlagOutcome;
      c.r.request = ids.ids[*index];
    }
    // flag set with MPI_UNDEFINED (no active request) is a poll that found nothing too
    c.finish_poll(not done, ExtraKind::Requests, ids.ids, ids.count);
  }
  return rc;
}

constexpr int kFewRequests = 4;  ///< Testany's untimed path: at most this many requests

[[gnu::noinline]] static int testany_untimed_end(PollKey key, int count, const MPI_Request* before, MPI_Request requests[],
                                                 int* index, int* flag, int rc)
{
  RequestIds ids(count, before);
  Call c(Fn::MPI_Testany, key, Call::AfterUntimed{});
  return testany_after(c, ids, requests, index, flag, rc);
}

[[gnu::noinline]] static int testany_timed(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status)
{
  RequestIds ids(count, requests);
  Call c(Fn::MPI_Testany, PollKey{ids.key(Fn::MPI_Testany)});
  int rc = PMPI_Testany(count, requests, index, flag, status);
  return testany_after(c, ids, requests, index, flag, rc);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status)
{
  if (count <= 0 || count > kFewRequests || not recording())
    return testany_timed(count, requests, index, flag, status);
  MPI_Request before[kFewRequests];
  for (int i = 0; i < count; ++i)
    before[i] = requests[i];
  const PollKey key{requests_key(Fn::MPI_Testany, static_cast<std::size_t>(count), before)};
  if (not untimed_poll(static_cast<std::uint16_t>(Fn::MPI_Testany), key.key))
    return testany_timed(count, requests, index, flag, status);
  ++depth();
  int rc = PMPI_Testany(count, requests, index, flag, status);
  const bool done = *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < count;
  if (not done && fold_untimed(static_cast<std::uint16_t>(Fn::MPI_Testany), key.key)) {
    --depth();
    return rc;
  }
  return testany_untimed_end(key, count, before, requests, index, flag, rc);
}

/// Waitsome/Testsome: the continuation values are every request id, then the ids that completed;
/// `root` holds how many requests there were.
static void finish_some(Call& c, const RequestIds& ids, int outcount, const int* indices, bool poll)
{
  std::vector<std::int64_t> done;
  if (outcount != MPI_UNDEFINED)
    for (int i = 0; i < outcount; ++i)
      if (indices[i] >= 0 && static_cast<std::size_t>(indices[i]) < ids.count)
        done.push_back(ids.ids[indices[i]]);
  if (not done.empty())
    c.r.flags |= kFlagOutcome;
  c.r.root = static_cast<std::int32_t>(ids.count);
  if (poll)
    c.finish_poll(done.empty(), ExtraKind::Requests, ids.ids, ids.count, done.data(),
                  done.size());
  else
    c.finish(ExtraKind::Requests, ids.ids, ids.count, done.data(), done.size());
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[])
{
  Call c(Fn::MPI_Waitsome);
  RequestIds ids(incount, requests);
  int rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*outcount != MPI_UNDEFINED)
    for (int i = 0; i < *outcount; ++i)
      ids.completed(requests, static_cast<std::size_t>(indices[i]));
  if (c)
    finish_some(c, ids, *outcount, indices, false);
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[])
{
  RequestIds ids(incount, requests);
  Call c(Fn::MPI_Testsome, PollKey{ids.key(Fn::MPI_Testsome)});
  int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
  bool none = *outcount == MPI_UNDEFINED || *outcount == 0;
  if (c && c.fold_if_repeated(none))
    return rc;  // nothing completed: nothing to forget
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*outcount != MPI_UNDEFINED)
    for (int i = 0; i < *outcount; ++i)
      ids.completed(requests, static_cast<std::size_t>(indices[i]));
  if (c)
    finish_some(c, ids, *outcount, indices, true);
  return rc;
}

/// MPI_Cancel and MPI_Request_free complete no communication but matter to a replay (a cancelled
/// receive's wait returns at once): recorded with the request they name.
int MPI_Cancel(MPI_Request* request)
{
  Call c(Fn::MPI_Cancel);
  std::int64_t id = c ? request_id(*request) : -1;
  int rc = PMPI_Cancel(request);
  if (c) {
    c.r.request = id;
    c.finish();
  }
  return rc;
}

int MPI_Request_free(MPI_Request* request)
{
  Call c(Fn::MPI_Request_free);
  MPI_Request before = *request;
  std::int64_t id = c ? request_id(before) : -1;
  int rc = PMPI_Request_free(request);
  if (before != MPI_REQUEST_NULL) {
    forget_request(before);
    if (g_any_persistent.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(g_request_mutex);
      g_persistent.erase(before);
    }
  }
  if (c) {
    c.r.request = id;
    c.finish();
  }
  return rc;
}

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
  Call c(Fn::MPI_Comm_split);
  int rc = PMPI_Comm_split(comm, color, key, newcomm);
  if (c) {
    fill_creation(c.r, comm, *newcomm, color == MPI_UNDEFINED ? -1 : color, key);
    c.finish();
  }
  return rc;
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
  Call c(Fn::MPI_Cart_create);
  int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
  if (c) {
    fill_creation(c.r, comm, *newcomm);
    std::vector<std::int64_t> d(dims, dims + (ndims < 0 ? 0 : ndims));
    c.finish(ExtraKind::Counts, d.data(), d.size());
  }
  return rc;
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

}  // extern "C"

// ------------------------------------------------------------------ the rest of the point-to-point family
// and of the collectives: persistent requests, matched probes, MPI_Alltoallw, neighbourhood collectives.

namespace {

// Persistent requests: the init call is a local record; what it will do is kept with its handle.
template <typename Buf>
void rec_persistent_init(Call& c, int rc, StartKind kind, Buf buf, int count, MPI_Datatype dt, int peer, int tag,
                         MPI_Comm comm, MPI_Request* req)
{
  c.r.comm = comm_id(comm);
  if (rc == MPI_SUCCESS) {
    PersistentOp op;
    op.kind = kind;
    op.peer = world_of(comm, peer);
    op.tag = tag;
    op.bytes = type_bytes(count, dt);
    op.comm = c.r.comm;
    op.device = buf != nullptr && is_device_memory(buf);
    std::lock_guard<std::mutex> lock(g_request_mutex);
    g_persistent[*req] = op;
    g_requests[*req] = -1;  // inactive until started (a handle MPI reuses must not keep an old id)
    g_request_generation.fetch_add(1, std::memory_order_release);
    g_any_persistent.store(true, std::memory_order_relaxed);
  }
  c.finish();
}

template <StartKind kind>
constexpr auto kPersistentInit = [](Call& c, int rc, auto buf, int count, MPI_Datatype dt, int peer, int tag,
                                    MPI_Comm comm, MPI_Request* req) {
  rec_persistent_init(c, rc, kind, buf, count, dt, peer, tag, comm, req);
};

/// Fills the isend/irecv record of one started persistent request, giving its handle a fresh id.
void fill_start(RawRecord& r, MPI_Request handle)
{
  PersistentOp op;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(g_request_mutex);
    if (auto it = g_persistent.find(handle); it != g_persistent.end()) {
      op = it->second;
      known = true;
    }
  }
  r.key = static_cast<std::int32_t>(known ? op.kind : StartKind::Unknown);
  if (not known)
    return;
  r.peer = op.peer;
  r.tag = op.tag;
  r.bytes = op.bytes;
  r.comm = op.comm;
  if (op.device)
    r.flags |= kFlagDeviceMemory;
  r.request = new_request(handle);
}

// Matched probes: the message handle remembers where the probe found its message, for MPI_(I)mrecv.
struct MatchedMessage {
  std::int32_t comm = 0;
  std::int32_t src = -2;  ///< world rank (-3: MPI_PROC_NULL)
  std::int32_t tag = 0;
};
std::mutex g_message_mutex;
std::unordered_map<MPI_Message, MatchedMessage> g_messages;

void remember_message(MPI_Message m, MPI_Comm comm, const MPI_Status* st)
{
  MatchedMessage msg{comm_id(comm), world_of(comm, st->MPI_SOURCE), st->MPI_TAG};
  std::lock_guard<std::mutex> lock(g_message_mutex);
  g_messages[m] = msg;
}

MatchedMessage take_message(MPI_Message m)
{
  std::lock_guard<std::mutex> lock(g_message_mutex);
  MatchedMessage msg;
  if (auto it = g_messages.find(m); it != g_messages.end()) {
    msg = it->second;
    g_messages.erase(it);
  }
  return msg;
}

/// MPI_Mrecv/MPI_Imrecv: a receive from where the probe found the message (MPI_MESSAGE_NO_PROC: a
/// receive from MPI_PROC_NULL, which returns at once).
void rec_matched_recv(Call& c, const MatchedMessage& msg, const void* buf, int count, MPI_Datatype dt)
{
  c.r.peer = msg.src;
  c.r.src = msg.src;
  c.r.tag = msg.tag;
  c.r.comm = msg.comm;
  c.r.bytes = type_bytes(count, dt);
  mark_device(c.r, buf);
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
/// exchanges it performs (docs/profiler.md).
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

}  // namespace

extern "C" {

int MPI_Send_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Send_init, PMPI_Send_init, kPersistentInit<StartKind::Isend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Bsend_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Bsend_init, PMPI_Bsend_init, kPersistentInit<StartKind::Isend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Rsend_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Rsend_init, PMPI_Rsend_init, kPersistentInit<StartKind::Isend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Ssend_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ssend_init, PMPI_Ssend_init, kPersistentInit<StartKind::Issend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Recv_init(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Recv_init, PMPI_Recv_init, kPersistentInit<StartKind::Irecv>, buf, count, dt, source, tag, comm, req);
}

int MPI_Start(MPI_Request* req)
{
  Call c(Fn::MPI_Start);
  MPI_Request handle = *req;
  int rc = PMPI_Start(req);
  if (c) {
    fill_start(c.r, handle);
    c.finish();
  }
  return rc;
}

/// One record per request started, in order, the call's time shared between them: each is the
/// isend/irecv it performs.
int MPI_Startall(int count, MPI_Request requests[])
{
  Call c(Fn::MPI_Startall);
  std::vector<MPI_Request> handles(requests, requests + (count < 0 ? 0 : count));
  int rc = PMPI_Startall(count, requests);
  if (c) {
    std::int64_t end = now_ticks();
    std::int64_t n = static_cast<std::int64_t>(handles.size());
    for (std::int64_t i = 0; i < n; ++i) {
      RawRecord r = c.r;
      std::int64_t from = c.r.start_ticks + (end - c.r.start_ticks) * i / n;
      std::int64_t to = c.r.start_ticks + (end - c.r.start_ticks) * (i + 1) / n;
      r.start_ticks = from;
      r.duration_ticks = to - from;
      fill_start(r, handles[static_cast<std::size_t>(i)]);
      append(r);
    }
  }
  return rc;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status)
{
  Call c(Fn::MPI_Mprobe);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = PMPI_Mprobe(source, tag, comm, message, st);
  if (rc == MPI_SUCCESS && config().enabled)
    remember_message(*message, comm, st);
  if (c) {
    fill_probe(c.r, source, tag, comm, st, rc == MPI_SUCCESS);
    c.finish();
  }
  return rc;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status)
{
  Call c(Fn::MPI_Improbe, probe_key(Fn::MPI_Improbe, source, tag, comm));
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = PMPI_Improbe(source, tag, comm, flag, message, st);
  bool found = rc == MPI_SUCCESS && *flag;
  if (found && config().enabled)
    remember_message(*message, comm, st);
  if (c) {
    if (c.fold_if_repeated(not found))
      return rc;
    fill_probe(c.r, source, tag, comm, st, found);
    c.finish_poll(not found);
  }
  return rc;
}

int MPI_Mrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Status* status)
{
  Call c(Fn::MPI_Mrecv);
  MatchedMessage msg = config().enabled ? take_message(*message) : MatchedMessage{};
  int rc = PMPI_Mrecv(buf, count, dt, message, status);
  if (c) {
    rec_matched_recv(c, msg, buf, count, dt);
    c.finish();
  }
  return rc;
}

int MPI_Imrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Request* request)
{
  Call c(Fn::MPI_Imrecv);
  MatchedMessage msg = config().enabled ? take_message(*message) : MatchedMessage{};
  int rc = PMPI_Imrecv(buf, count, dt, message, request);
  if (c) {
    rec_matched_recv(c, msg, buf, count, dt);
    c.r.request = new_request(*request);
    c.finish();
  }
  return rc;
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
    r.new_comm = g_next_comm_id.fetch_add(1);
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
