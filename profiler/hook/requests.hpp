// The request table of the hook: each nonblocking request gets a small id in the trace, so that the wait
// or test that completes it names the call that started it. Persistent requests keep what each start of
// them performs.
#pragma once

#include "core.hpp"

#include <mpi.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#pragma GCC visibility push(hidden)
namespace gridcast::hook {

/// Bumped whenever the table changes: a thread's cached lookups are valid while it stays the same.
extern std::atomic<std::uint64_t> g_request_generation;

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
extern thread_local constinit CachedRequest t_request_cache[kRequestCache];

inline std::size_t cache_slot(MPI_Request r)
{
  return (reinterpret_cast<std::uintptr_t>(r) >> 4) & (kRequestCache - 1);
}

/// Where the application keeps a request: the address its creating call wrote the handle to, and the
/// address a wait or test reads it from (an MPI_Request in C, an INTEGER in Fortran). A hint only: code
/// may copy handles around.
using Where = const void*;

/// Gives the request `r` just created (its handle written to `where`) a new id and returns it. A request
/// is known by its creation, not by its handle value alone: Open MPI hands out one shared handle for every
/// small MPI_Isend that completes inside the call, so one handle value may stand for several live requests
/// (each keeps its own id, see lookup_request).
std::int64_t new_request(MPI_Request r, Where where);

/// What lookup_request() returns for a handle that stands for several live requests: request_id() then
/// resolves it by place and age (shared_request_id).
constexpr std::int64_t kSharedHandle = -2;

/// request_id() past its per-thread cache: looks `r` up in the table and refreshes `slot` (a handle
/// shared by several live requests is never cached: kSharedHandle).
std::int64_t lookup_request(MPI_Request r, CachedRequest& slot);

/// The id of one of the live requests behind the shared handle `r`: the one created at `where`, else the
/// oldest one not in `taken` (the ids an array's other elements already got); with `where_only`, -1 when
/// none was created at `where`.
std::int64_t shared_request_id(MPI_Request r, Where where, const std::int64_t* taken = nullptr, std::size_t ntaken = 0,
                               bool where_only = false);

/// The id of `r` read from `where`; -1 for MPI_REQUEST_NULL, an unknown or an inactive persistent request.
inline std::int64_t request_id(MPI_Request r, Where where)
{
  if (r == MPI_REQUEST_NULL)
    return -1;
  std::uint64_t generation = g_request_generation.load(std::memory_order_acquire);
  CachedRequest& slot = t_request_cache[cache_slot(r)];
  std::int64_t id = slot.handle == r && slot.generation == generation ? slot.id : lookup_request(r, slot);
  return id == kSharedHandle ? shared_request_id(r, where) : id;
}

/// The request `id` behind `r` was freed by MPI (completed, cancelled and completed, or MPI_Request_free):
/// only that one is forgotten (a shared handle still stands for the others).
void forget_request(MPI_Request r, std::int64_t id);

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

/// Whether any persistent request exists: the wait/test wrappers skip all of this when none does.
extern std::atomic<bool> g_any_persistent;
inline bool any_persistent() { return g_any_persistent.load(std::memory_order_relaxed); }

/// MPI_Start of the persistent request `r`: its handle gets a fresh id, in place of the previous start's.
std::int64_t start_persistent(MPI_Request r);

/// Keeps what the persistent request `r` (just made by MPI_Send_init...) performs at each start; it is
/// inactive until started.
void add_persistent(MPI_Request r, const PersistentOp& op);

/// What the persistent request `r` performs; false when `r` is not one.
bool find_persistent(MPI_Request r, PersistentOp& op);

/// MPI_Request_free of `r`: a persistent request is gone.
void forget_persistent(MPI_Request r);

/// completed_persistent() once there are persistent requests.
void deactivate_persistent(MPI_Request r);

/// A completed persistent request stays allocated but inactive: a later wait on it returns at once.
inline void completed_persistent(MPI_Request r)
{
  if (not any_persistent() || r == MPI_REQUEST_NULL)
    return;
  deactivate_persistent(r);
}

inline /// Identity of a request array, for folding identical failed polls. Independent rotations xor-ed, not a
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
/// forget_completed() drops the completed ones -- and not at all for a folded poll. `where` is the
/// application's array (C's MPI_Request[] or Fortran's INTEGER array: `stride` bytes apart).
struct RequestIds {
  // Few stores: a poll's wrapper makes this before the PMPI call (see core.hpp, poll_timed).
  [[gnu::always_inline]] explicit RequestIds(int n, const MPI_Request* reqs, Where where = nullptr,
                                             std::size_t stride = sizeof(MPI_Request))
      : count(n < 0 ? 0 : static_cast<std::size_t>(n)), where_(where == nullptr ? reqs : where), stride_(stride)
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
  Where where(std::size_t i) const { return static_cast<const char*>(where_) + i * stride_; }
  /// Looks the ids up, once. An array may hold one shared handle several times (see new_request): each
  /// element gets a different one of its requests.
  void resolve()
  {
    if (resolved_)
      return;
    resolved_ = true;
    bool shared = false;
    for (std::size_t i = 0; i < count; ++i) {
      MPI_Request r = handles[i];
      if (r == MPI_REQUEST_NULL) {
        ids[i] = -1;
        continue;
      }
      std::uint64_t generation = g_request_generation.load(std::memory_order_acquire);
      CachedRequest& slot = t_request_cache[cache_slot(r)];
      ids[i] = slot.handle == r && slot.generation == generation ? slot.id : lookup_request(r, slot);
      shared |= ids[i] == kSharedHandle;
    }
    if (shared)
      resolve_shared();
  }
  /// Identity of the request array, for folding identical failed polls.
  std::uint64_t key(Fn fn) const { return requests_key(fn, count, handles); }
  /// Forgets the requests MPI freed (completed, not persistent).
  void forget_completed(const MPI_Request* after)
  {
    for (std::size_t i = 0; i < count; ++i)
      if (handles[i] != MPI_REQUEST_NULL && after[i] == MPI_REQUEST_NULL) {
        resolve();
        forget_request(handles[i], ids[i]);
      }
  }
  /// Request `i` completed: a persistent one (still allocated) becomes inactive.
  void completed(const MPI_Request* after, std::size_t i) const
  {
    if (any_persistent() && i < count && after[i] != MPI_REQUEST_NULL)
      completed_persistent(handles[i]);
  }
  void all_completed(const MPI_Request* after) const
  {
    if (any_persistent())
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

private:
  /// The elements whose handle is shared, in two passes: those found where they were created first, then
  /// the oldest requests left.
  void resolve_shared();
  Where where_;
  std::size_t stride_;
  bool resolved_ = false;
};

}  // namespace gridcast::hook
#pragma GCC visibility pop
