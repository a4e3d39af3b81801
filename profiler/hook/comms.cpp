// The communicator table of the hook (comms.hpp).
#include "comms.hpp"

#include <algorithm>
#include <climits>
#include <mutex>

namespace gridcast::hook {

namespace {

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

}  // namespace

thread_local constinit CommEntry* t_last_comm = nullptr;

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

CommEntry* register_comm(MPI_Comm comm, const std::vector<std::int32_t>* world)
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

CommEntry* find_comm(MPI_Comm comm)
{
  int n = g_ncomms.load(std::memory_order_acquire);
  for (int i = n - 1; i >= 0; --i)
    if (g_comms[i]->handle.load(std::memory_order_relaxed) == comm)
      return t_last_comm = g_comms[i];
  if (comm == MPI_COMM_NULL)
    return nullptr;
  return t_last_comm = register_comm(comm);  // created before we could see it (MPI_COMM_SELF...)
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

std::int32_t unused_comm_id() { return g_next_comm_id.fetch_add(1); }

void fill_creation(RawRecord& r, MPI_Comm parent, MPI_Comm created, int color, int key,
                   const std::vector<std::int32_t>* world)
{
  r.comm = comm_id(parent);
  if (created == MPI_COMM_NULL) {
    r.color = -1;
    r.new_comm = unused_comm_id();
    return;
  }
  CommEntry* e = register_comm(created, world);
  r.new_comm = e != nullptr ? e->id : -1;
  r.color = color != -4 ? color : (e != nullptr && not e->world.empty() ? e->world[0] : 0);
  r.key = key != -4 ? key : comm_rank(created);
  r.root = world != nullptr ? r.key : comm_rank(created);  // given world ranks: the handle is not usable yet
}

std::vector<std::int32_t> intercomm_members(MPI_Comm inter)
{
  auto local = comm_world_ranks(inter, false), remote = comm_world_ranks(inter, true);
  auto low = [](const std::vector<std::int32_t>& g) { return g.empty() ? INT32_MAX : *std::min_element(g.begin(), g.end()); };
  if (low(remote) < low(local))
    std::swap(local, remote);
  local.insert(local.end(), remote.begin(), remote.end());
  return local;
}

}  // namespace gridcast::hook
