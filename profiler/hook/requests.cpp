// The request table of the hook (requests.hpp).
#include "requests.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gridcast::hook {

std::atomic<std::uint64_t> g_request_generation{1};
thread_local constinit CachedRequest t_request_cache[kRequestCache];
std::atomic<bool> g_any_persistent{false};

namespace {

/// One live request behind a handle: its id and where its creating call wrote the handle.
struct Live {
  std::int64_t id = -1;
  Where where = nullptr;
};

/// The live requests behind one handle value, oldest first. Nearly always one: several only for a handle
/// MPI shares between requests that completed at once (see new_request). A persistent request has one,
/// with id -1 while it is inactive.
struct Entry {
  Live first;
  std::vector<Live> more;  ///< the younger ones (empty unless the handle is shared)
};

std::mutex g_request_mutex;
std::unordered_map<MPI_Request, Entry> g_requests;           // guarded by g_request_mutex
std::int64_t g_next_request = 0;                             // guarded by g_request_mutex
std::unordered_map<MPI_Request, PersistentOp> g_persistent;  // guarded by g_request_mutex

bool in(std::int64_t id, const std::int64_t* taken, std::size_t ntaken)
{
  return std::find(taken, taken + ntaken, id) != taken + ntaken;
}

}  // namespace

std::int64_t new_request(MPI_Request r, Where where)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  std::int64_t id = g_next_request++;
  auto [it, fresh] = g_requests.try_emplace(r);
  if (fresh || it->second.first.id < 0)
    it->second = Entry{{id, where}, {}};
  else
    it->second.more.push_back({id, where});  // a handle still live: MPI shares it
  g_request_generation.fetch_add(1, std::memory_order_release);
  return id;
}

std::int64_t start_persistent(MPI_Request r)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  std::int64_t id = g_next_request++;
  g_requests[r] = Entry{{id, nullptr}, {}};
  g_request_generation.fetch_add(1, std::memory_order_release);
  return id;
}

std::int64_t lookup_request(MPI_Request r, CachedRequest& slot)
{
  std::int64_t id = -1;
  std::uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(g_request_mutex);
    auto it = g_requests.find(r);
    if (it != g_requests.end())
      id = it->second.more.empty() ? it->second.first.id : kSharedHandle;
    generation = g_request_generation.load(std::memory_order_relaxed);
  }
  slot = {r, id, generation};
  return id;
}

std::int64_t shared_request_id(MPI_Request r, Where where, const std::int64_t* taken, std::size_t ntaken,
                               bool where_only)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  auto it = g_requests.find(r);
  if (it == g_requests.end())
    return -1;
  const Entry& e = it->second;
  auto pick = [&](auto fits) -> std::int64_t {
    if (fits(e.first))
      return e.first.id;
    for (const Live& l : e.more)
      if (fits(l))
        return l.id;
    return -1;
  };
  std::int64_t id = pick([&](const Live& l) { return l.where == where && not in(l.id, taken, ntaken); });
  if (id >= 0 || where_only)
    return id;
  return pick([&](const Live& l) { return not in(l.id, taken, ntaken); });
}

void RequestIds::resolve_shared()
{
  for (bool where_only : {true, false})
    for (std::size_t i = 0; i < count; ++i)
      if (ids[i] == kSharedHandle) {
        std::int64_t id = shared_request_id(handles[i], where(i), ids, count, where_only);
        if (id >= 0 || not where_only)
          ids[i] = id;
      }
}

void forget_request(MPI_Request r, std::int64_t id)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  auto it = g_requests.find(r);
  if (it == g_requests.end())
    return;
  Entry& e = it->second;
  if (e.first.id == id || id < 0) {
    // the oldest (or an unknown one: the handle's oldest request is the best guess)
    if (e.more.empty()) {
      g_requests.erase(it);
    } else {
      e.first = e.more.front();
      e.more.erase(e.more.begin());
    }
  } else {
    std::erase_if(e.more, [&](const Live& l) { return l.id == id; });
  }
  g_request_generation.fetch_add(1, std::memory_order_release);
}

void add_persistent(MPI_Request r, const PersistentOp& op)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  g_persistent[r] = op;
  g_requests[r] = Entry{};  // inactive until started (a handle MPI reuses must not keep an old id)
  g_request_generation.fetch_add(1, std::memory_order_release);
  g_any_persistent.store(true, std::memory_order_relaxed);
}

bool find_persistent(MPI_Request r, PersistentOp& op)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  auto it = g_persistent.find(r);
  if (it == g_persistent.end())
    return false;
  op = it->second;
  return true;
}

void forget_persistent(MPI_Request r)
{
  if (not any_persistent())
    return;
  std::lock_guard<std::mutex> lock(g_request_mutex);
  g_persistent.erase(r);
}

void deactivate_persistent(MPI_Request r)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  if (g_persistent.count(r) == 0)
    return;
  g_requests[r] = Entry{};
  g_request_generation.fetch_add(1, std::memory_order_release);
}

}  // namespace gridcast::hook
