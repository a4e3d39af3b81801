// The communicator table of the hook: each communicator a rank uses gets a small id in the trace, and the
// world rank of each of its ranks is kept so that peers are recorded as world ranks.
#pragma once

#include "core.hpp"

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <vector>

#pragma GCC visibility push(hidden)
namespace gridcast::hook {

/// One communicator seen by this rank: its id in the trace and the world rank of each of its ranks.
struct CommEntry {
  std::atomic<MPI_Comm> handle;
  std::int32_t id = 0;
  std::vector<std::int32_t> world;   ///< comm rank (remote rank for an inter-communicator) -> world rank
};

/// Registers `comm` under a new id (replacing an older entry with the same handle, which MPI may reuse).
/// `world`: its ranks' world ranks when known already (MPI_Comm_idup: the handle may not be usable before
/// the request completes); otherwise asked from MPI -- for an inter-communicator, of its remote group,
/// the ranks its point-to-point calls name.
CommEntry* register_comm(MPI_Comm comm, const std::vector<std::int32_t>* world = nullptr);

/// The entry of `comm`, registered now if it was created before the hook could see it (MPI_COMM_SELF...);
/// nullptr for MPI_COMM_NULL or when the table is full. comm_entry() without its per-thread cache.
CommEntry* find_comm(MPI_Comm comm);

/// The communicator this thread looked up last: consecutive calls on one communicator skip the table.
extern thread_local constinit CommEntry* t_last_comm;

inline CommEntry* comm_entry(MPI_Comm comm)
{
  if (t_last_comm != nullptr && t_last_comm->handle.load(std::memory_order_relaxed) == comm)
    return t_last_comm;
  return find_comm(comm);
}

inline std::int32_t comm_id(MPI_Comm comm)
{
  CommEntry* e = comm_entry(comm);
  return e != nullptr ? e->id : -1;
}

/// World rank of `rank` in `comm`; -1 any source, -3 MPI_PROC_NULL, -2 unknown.
inline std::int32_t world_of(MPI_Comm comm, int rank)
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

int comm_rank(MPI_Comm comm);
/// The size of `comm`; of its remote group for an inter-communicator.
int comm_size(MPI_Comm comm);

/// The world ranks of `comm`'s local group (remote = false) or remote group (inter-communicators only).
std::vector<std::int32_t> comm_world_ranks(MPI_Comm comm, bool remote);

/// A fresh communicator id that names no communicator (a creation whose result is MPI_COMM_NULL): it must
/// not alias a real one.
std::int32_t unused_comm_id();

/// Fills a communicator-creation record: the new communicator as a split of `parent` -- color = world
/// rank of the new communicator's rank 0 (the same on every member), key = rank in it; -1 = no new one.
void fill_creation(RawRecord& r, MPI_Comm parent, MPI_Comm created, int color = -4, int key = -4,
                   const std::vector<std::int32_t>* world = nullptr);

/// An inter-communicator's members for the trace: both groups, the one holding the lower world rank
/// first, so that both sides write the same list.
std::vector<std::int32_t> intercomm_members(MPI_Comm inter);

}  // namespace gridcast::hook
#pragma GCC visibility pop
