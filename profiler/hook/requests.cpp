// The request table of the hook (requests.hpp).
#include "requests.hpp"

#include <mutex>
#include <unordered_map>

namespace gridcast::hook {

std::atomic<std::uint64_t> g_request_generation{1};
thread_local constinit CachedRequest t_request_cache[kRequestCache];
std::atomic<bool> g_any_persistent{false};

namespace {

std::mutex g_request_mutex;
std::unordered_map<MPI_Request, std::int64_t> g_requests;  // guarded by g_request_mutex
std::int64_t g_next_request = 0;                           // guarded by g_request_mutex
std::unordered_map<MPI_Request, PersistentOp> g_persistent;  // guarded by g_request_mutex

}  // namespace

std::int64_t new_request(MPI_Request r)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  std::int64_t id = g_next_request++;
  g_requests[r] = id;
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

void add_persistent(MPI_Request r, const PersistentOp& op)
{
  std::lock_guard<std::mutex> lock(g_request_mutex);
  g_persistent[r] = op;
  g_requests[r] = -1;  // inactive until started (a handle MPI reuses must not keep an old id)
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
  g_requests[r] = -1;
  g_request_generation.fetch_add(1, std::memory_order_release);
}

}  // namespace gridcast::hook
