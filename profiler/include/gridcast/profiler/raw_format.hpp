// The hook's raw trace format: fixed-size records written by libgridcast-hook.so and read by the profiler
// (gridcast::profiler), which turns them into a native profile directory. Shared by both sides, so it
// depends on nothing but the C++ standard library. Layout and meaning: docs/guides/profiling.md ("Raw format").
#pragma once

#include <cstdint>

namespace gridcast::hook {

// Every function the hook knows by name. The id of a function is its position in this list, so the list
// only ever grows at its end (raw files name their format version, not the list). Columns: the C name,
// the family the converter maps it with.
#define GRIDCAST_HOOK_FUNCTIONS(X)                                                                        \
  X(MPI_Init, init) X(MPI_Init_thread, init) X(MPI_Finalize, finalize) X(MPI_Abort, local)               \
  X(MPI_Send, send) X(MPI_Bsend, send) X(MPI_Rsend, send) X(MPI_Ssend, ssend)                           \
  X(MPI_Isend, isend) X(MPI_Ibsend, isend) X(MPI_Irsend, isend) X(MPI_Issend, issend)                   \
  X(MPI_Recv, recv) X(MPI_Irecv, irecv) X(MPI_Sendrecv, sendrecv) X(MPI_Sendrecv_replace, sendrecv)     \
  X(MPI_Probe, probe) X(MPI_Iprobe, probe)                                                               \
  X(MPI_Wait, wait) X(MPI_Waitall, waitall) X(MPI_Waitany, waitany) X(MPI_Waitsome, waitsome)           \
  X(MPI_Test, test) X(MPI_Testall, testall) X(MPI_Testany, testany) X(MPI_Testsome, testsome)           \
  X(MPI_Barrier, barrier) X(MPI_Bcast, bcast) X(MPI_Reduce, reduce) X(MPI_Allreduce, allreduce)          \
  X(MPI_Alltoall, alltoall) X(MPI_Alltoallv, alltoallv) X(MPI_Gather, gather) X(MPI_Gatherv, gatherv)   \
  X(MPI_Allgather, allgather) X(MPI_Allgatherv, allgatherv) X(MPI_Scatter, scatter)                     \
  X(MPI_Scatterv, scatterv) X(MPI_Reduce_scatter, reducescatter)                                         \
  X(MPI_Reduce_scatter_block, reducescatter) X(MPI_Scan, scan) X(MPI_Exscan, exscan)                    \
  X(MPI_Ibarrier, barrier) X(MPI_Ibcast, bcast) X(MPI_Ireduce, reduce) X(MPI_Iallreduce, allreduce)     \
  X(MPI_Ialltoall, alltoall) X(MPI_Ialltoallv, alltoallv) X(MPI_Igather, gather)                         \
  X(MPI_Igatherv, gatherv) X(MPI_Iallgather, allgather) X(MPI_Iallgatherv, allgatherv)                   \
  X(MPI_Iscatter, scatter) X(MPI_Iscatterv, scatterv) X(MPI_Ireduce_scatter, reducescatter)             \
  X(MPI_Ireduce_scatter_block, reducescatter) X(MPI_Iscan, scan) X(MPI_Iexscan, exscan)                 \
  X(MPI_Comm_split, comm_split) X(MPI_Comm_split_type, comm_split) X(MPI_Comm_dup, comm_dup)            \
  X(MPI_Comm_create, comm_split) X(MPI_Comm_create_group, comm_split) X(MPI_Cart_create, comm_split)    \
  X(MPI_Cart_sub, comm_split) X(MPI_Comm_free, local) X(MPI_Comm_rank, local) X(MPI_Comm_size, local)   \
  X(MPI_Comm_group, local) X(MPI_Group_incl, local) X(MPI_Group_excl, local)                             \
  X(MPI_Group_range_incl, local) X(MPI_Group_translate_ranks, local) X(MPI_Group_free, local)           \
  X(MPI_Cart_coords, local) X(MPI_Cart_rank, local) X(MPI_Cart_shift, local) X(MPI_Cart_get, local)     \
  X(MPI_Cartdim_get, local) X(MPI_Dims_create, local)                                                    \
  X(dgemm_, blas) X(dtrsm_, blas) X(dsyrk_, blas) X(dgemv_, blas) X(dger_, blas) X(dtrsv_, blas)        \
  X(dscal_, blas) X(daxpy_, blas) X(dcopy_, blas) X(ddot_, blas) X(idamax_, blas) X(dswap_, blas)       \
  X(dgetrf_, blas) X(dgetrs_, blas) X(dpotrf_, blas)                                                     \
  X(cblas_dgemm, blas) X(cblas_dtrsm, blas) X(cblas_dsyrk, blas) X(cblas_dgemv, blas)                   \
  X(cblas_dger, blas) X(cblas_dtrsv, blas) X(cblas_dscal, blas) X(cblas_daxpy, blas)                    \
  X(cblas_dcopy, blas) X(cblas_ddot, blas) X(cblas_idamax, blas) X(cblas_dswap, blas)                   \
  X(cudaMalloc, gpu_malloc) X(cudaFree, gpu_free) X(cudaMemcpy, gpu_memcpy) X(cudaMemcpyAsync, gpu_memcpy) \
  X(cudaLaunchKernel, gpu_kernel) X(cudaDeviceSynchronize, gpu_sync) X(cudaStreamSynchronize, gpu_sync) \
  X(cudaSetDevice, local)                                                                                \
  X(ncclAllReduce, allreduce) X(ncclBroadcast, bcast) X(ncclReduce, reduce) X(ncclAllGather, allgather) \
  X(ncclReduceScatter, reducescatter) X(ncclSend, send) X(ncclRecv, recv) X(ncclGroupStart, local)      \
  X(ncclGroupEnd, local) X(ncclCommInitRank, comm_dup)                                                 \
  X(MPI_Cancel, local) X(MPI_Request_free, local)                                                      \
  X(MPI_Send_init, local) X(MPI_Bsend_init, local) X(MPI_Rsend_init, local) X(MPI_Ssend_init, local)    \
  X(MPI_Recv_init, local) X(MPI_Start, start) X(MPI_Startall, start)                                     \
  X(MPI_Mprobe, probe) X(MPI_Improbe, probe) X(MPI_Mrecv, recv) X(MPI_Imrecv, irecv)                    \
  X(MPI_Alltoallw, alltoallv) X(MPI_Ialltoallw, alltoallv)                                               \
  X(MPI_Neighbor_allgather, neighbor) X(MPI_Neighbor_allgatherv, neighbor)                               \
  X(MPI_Neighbor_alltoall, neighbor) X(MPI_Neighbor_alltoallv, neighbor)                                 \
  X(MPI_Neighbor_alltoallw, neighbor) X(MPI_Ineighbor_allgather, neighbor)                               \
  X(MPI_Ineighbor_allgatherv, neighbor) X(MPI_Ineighbor_alltoall, neighbor)                              \
  X(MPI_Ineighbor_alltoallv, neighbor) X(MPI_Ineighbor_alltoallw, neighbor)                              \
  X(MPI_Comm_idup, comm_dup)   X(MPI_Comm_dup_with_info, comm_split) X(MPI_Intercomm_create, comm_split) \
  X(MPI_Intercomm_merge, comm_split) X(MPI_Graph_create, comm_split) X(MPI_Dist_graph_create, comm_split) \
  X(MPI_Dist_graph_create_adjacent, comm_split)                                                        \
  X(cudaEventRecord, gpu_sync) X(cudaStreamWaitEvent, gpu_sync) X(cudaEventSynchronize, gpu_sync)     \
  X(MPI_Comm_spawn, dynamic_process) X(MPI_Comm_spawn_multiple, dynamic_process)                         \
  X(MPI_Comm_connect, dynamic_process) X(MPI_Comm_accept, dynamic_process) X(MPI_Comm_join, dynamic_process)

enum class Fn : std::uint16_t {
#define GRIDCAST_HOOK_ENUM(name, family) name,
  GRIDCAST_HOOK_FUNCTIONS(GRIDCAST_HOOK_ENUM)
#undef GRIDCAST_HOOK_ENUM
  Count
};

inline constexpr const char* kFnNames[] = {
#define GRIDCAST_HOOK_NAME(name, family) #name,
    GRIDCAST_HOOK_FUNCTIONS(GRIDCAST_HOOK_NAME)
#undef GRIDCAST_HOOK_NAME
};
inline constexpr const char* kFnFamilies[] = {
#define GRIDCAST_HOOK_FAMILY(name, family) #family,
    GRIDCAST_HOOK_FUNCTIONS(GRIDCAST_HOOK_FAMILY)
#undef GRIDCAST_HOOK_FAMILY
};
static_assert(sizeof kFnNames / sizeof kFnNames[0] == static_cast<std::size_t>(Fn::Count));

/// Ids at or above this one name functions defined in the file itself (kind Def): application functions
/// seen through -finstrument-functions.
inline constexpr std::uint16_t kFirstDynamicFn = 4096;

enum class Kind : std::uint8_t {
  Call = 1,   ///< one hooked call; `n_extra` continuation records follow
  Extra = 2,  ///< continuation: 13 int64 values (counts, request ids, name bytes)
  Def = 3,    ///< defines dynamic function `fn`: its name follows in `n_extra` continuation records
  Enter = 4,  ///< application function `fn` entered at `start_ticks` (-finstrument-functions)
  Exit = 5,   ///< application function `fn` left at `start_ticks`
};

// Bits of RawRecord::flags.
inline constexpr std::uint8_t kFlagDeviceMemory = 1;  ///< the MPI/NCCL buffer is GPU memory
inline constexpr std::uint8_t kFlagOutcome = 2;       ///< test/iprobe: succeeded; waitany: completed one
inline constexpr std::uint8_t kFlagNonblocking = 4;   ///< a nonblocking collective: `request` is set
/// A folded failed poll that alternated with the next call record (itself a folded failed poll): the calls
/// were A B A B ..., `repeat` + 1 of this one, the next one's `repeat` + 1 of the other.
inline constexpr std::uint8_t kFlagPollCycle = 8;

/// One record, 104 bytes, native byte order (raw files are read on the machine that wrote them).
/// Fields a call does not use are zero except peer/src (kNone).
struct RawRecord {
  std::uint16_t fn = 0;
  Kind kind = Kind::Call;
  std::uint8_t flags = 0;
  std::uint32_t n_extra = 0;     ///< continuation records that follow (Call, Def)
  std::int64_t start_ticks = 0;     ///< CLOCK_MONOTONIC
  std::int64_t duration_ticks = 0;
  std::int32_t peer = -2;        ///< world rank (-1 any source, -2 none); GPU: cudaMemcpyKind
  std::int32_t tag = 0;
  std::uint64_t bytes = 0;
  std::int32_t src = -2;         ///< sendrecv/probe: source (world rank)
  std::int32_t recv_tag = 0;
  std::uint64_t recv_bytes = 0;
  std::int32_t comm = 0;         ///< communicator id (0 = world; NCCL communicators from kNcclCommBase)
  std::int32_t root = 0;         ///< rank in comm; comm creation: rank in the new communicator
  std::int64_t request = -1;     ///< request id created or completed
  std::int32_t color = 0;        ///< comm creation: color (-1: no new communicator); GPU: stream id
  std::int32_t key = 0;          ///< comm creation: key; GPU: device
  std::int32_t new_comm = 0;     ///< communicator id created
  std::int32_t extra_kind = 0;   ///< low byte: what the continuation values are (ExtraKind); above: how many
  std::int64_t repeat = 0;       ///< failed polls: further identical calls folded into this record
  std::int64_t busy_ticks = 0;   ///< failed polls: the calls' own time, summed (duration: first start..last end);
                                 ///< past a run's first 33 calls, estimated from a timed sample (core.hpp)
};
static_assert(sizeof(RawRecord) == 104);

/// Values carried by continuation records after a Call.
enum class ExtraKind : std::int32_t {
  None = 0,
  Requests = 1,
  Counts = 2,
  RecvCounts = 3,
  CountsBoth = 4,
  /// Neighbourhood collectives: the `root` in-neighbours' world ranks, the `key` out-neighbours' world
  /// ranks (-3: MPI_PROC_NULL), the bytes sent to each out-neighbour, the bytes received from each in-neighbour.
  Neighbors = 5,
  /// Communicator creation among some processes only (MPI_Comm_create_group, inter-communicators): the new
  /// communicator's members as world ranks, in rank order.
  Members = 6,
  /// A BLAS/LAPACK call's arguments (kLibArgValues values, in the order of LibArg): what sets its cost.
  LibArgs = 7,
};

/// The values of an ExtraKind::LibArgs continuation, in this order. kLibOptions packs the option letters
/// (trans_a, trans_b, side, uplo, diag), one byte each from the lowest, '-' where the function has none.
enum LibArg : int { kLibM, kLibN, kLibK, kLibLdA, kLibLdB, kLibLdC, kLibIncX, kLibIncY, kLibOptions, kLibArgValues };

/// What a started persistent request performs (RawRecord::key of MPI_Start/MPI_Startall records).
enum class StartKind : std::int32_t { Unknown = -1, Isend = 0, Issend = 1, Irecv = 2 };
inline constexpr int kValuesPerExtra = 13;  // 104 bytes / 8

inline constexpr std::int32_t kNcclCommBase = 65536;

/// File header of every raw file.
struct RawHeader {
  char magic[8] = {'G', 'C', 'R', 'A', 'W', '0', '0', '1'};
  std::int32_t rank = -1;
  std::int32_t thread = 0;       ///< 0 = the thread that called MPI_Init
  std::int64_t pid = 0;
  std::int32_t record_bytes = sizeof(RawRecord);
  std::int32_t reserved = 0;
};
static_assert(sizeof(RawHeader) == 32);

}  // namespace gridcast::hook
