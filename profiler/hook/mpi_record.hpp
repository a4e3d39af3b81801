// What the MPI wrappers of hook_mpi.cpp and hook_mpi_collectives.cpp share: message sizes, the device-memory
// flag and hooked(), the one-line wrapper of a recorded call.
#pragma once

#include "core.hpp"

#include <mpi.h>

#include <cstdint>

#pragma GCC visibility push(hidden)
namespace gridcast::hook {

inline std::uint64_t type_bytes(int count, MPI_Datatype dt)
{
  if (count <= 0 || dt == MPI_DATATYPE_NULL)
    return 0;
  int size = 0;
  PMPI_Type_size(dt, &size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size < 0 ? 0 : size);
}

inline void mark_device(RawRecord& r, const void* buffer)
{
  if (buffer != MPI_IN_PLACE && buffer != nullptr && is_device_memory(buffer))
    r.flags |= kFlagDeviceMemory;
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

}  // namespace gridcast::hook
#pragma GCC visibility pop
