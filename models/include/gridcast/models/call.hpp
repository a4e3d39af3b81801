// The call record: one function call of one rank, as recorded, imported or synthesized.
//
// A record is deliberately flat (no per-kind subclasses) so that streams can reuse one record object
// for every call and the emulator's hot loop never allocates for point-to-point or compute calls.
// Only v-collectives and waitall carry vectors.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gridcast::models {

/// What a call does, as far as the emulator is concerned. The name the application called
/// (MPI_Send, dgemm_, cudaMemcpyAsync...) lives in the function table; several functions may share one Op.
enum class Op : std::uint8_t {
  Init,
  Finalize,
  Compute,  ///< a burst of computation: `seconds` measured, or `flops` of work
  Sleep,    ///< idle time that does not scale with the host speed (`seconds`)
  Send,     ///< blocking standard send (eager below the threshold, rendezvous above)
  Ssend,    ///< blocking synchronous send: always waits for the matching receive
  Isend,
  Issend,
  Recv,
  Irecv,
  Sendrecv,  ///< send to `peer` (`bytes`, `tag`) and receive from `src` (`recv_bytes`, `recv_tag`)
  Wait,      ///< `request`
  Waitall,   ///< `requests`
  Waitany,   ///< `requests`
  Test,      ///< `request`; completes it only if it finished already
  Barrier,
  Bcast,          ///< `bytes` from `root`
  Reduce,         ///< `bytes` to `root`, then `flops` of reduction work
  Allreduce,      ///< `bytes`, `flops`
  Alltoall,       ///< `bytes` sent to each peer, `recv_bytes` from each
  Alltoallv,      ///< `counts` (bytes sent to each rank of comm), `recv_counts`
  Gather,         ///< `bytes` sent by each, `recv_bytes` received per rank at `root`
  Gatherv,        ///< `bytes` sent by each, `recv_counts` at root
  Allgather,      ///< `bytes` sent, `recv_bytes` per rank
  Allgatherv,     ///< `bytes` sent, `recv_counts`
  Scatter,        ///< `bytes` per rank from `root`, `recv_bytes`
  Scatterv,       ///< `counts` at root, `recv_bytes`
  ReduceScatter,  ///< `recv_counts`, `flops`
  Scan,           ///< `bytes`, `flops`
  Exscan,         ///< `bytes`, `flops`
  CommSize,       ///< no simulated effect; kept so traces round-trip
  CommSplit,      ///< `comm` split by `color`, ordered by `key`, result handle in `new_comm`
  CommDup,        ///< `comm` duplicated into `new_comm`
  // Reserved for GPU work (filled by the GPU issue): kernel launches, copies, synchronisation.
  GpuKernel,
  GpuMemcpy,
  GpuSync,
  GpuMalloc,
  GpuFree,
  // Added by the profiler, at the end so that earlier binary type numbers stay valid.
  Probe,  ///< MPI_Probe/Iprobe: `peer`, `tag`, `comm` asked; `src`, `recv_tag`, `recv_bytes` found (src -2: none)
  /// MPI_Comm_spawn(_multiple), MPI_Comm_connect/accept/join: an inter-communicator `new_comm` with
  /// `color` processes outside the profile's world (-1: none at this rank), `root` in `comm`. Recorded so
  /// that the replay and the fit refuse the trace by name: the processes it reaches are not in the profile.
  DynamicProcess,
};

inline constexpr int kOpCount = static_cast<int>(Op::DynamicProcess) + 1;

/// Stable lower-case name used in the JSON-lines format and in outputs.
std::string_view op_name(Op op);
/// Inverse of op_name(); nullopt for an unknown name.
std::optional<Op> op_from_name(std::string_view name);

/// Why a DynamicProcess record (of `function`, e.g. MPI_Comm_spawn) stops the replay and the fit, for an
/// InputError naming its file, line and rank.
std::string dynamic_process_refusal(std::string_view function);

/// True for calls that are point-to-point MPI operations or their completion.
bool is_point_to_point(Op op);
/// True for collective operations (including communicator creation, which synchronises its members).
bool is_collective(Op op);

inline constexpr std::int32_t kAnySource = -1;
inline constexpr std::int32_t kAnyTag = -1;
inline constexpr std::int32_t kNoRank = -2;
inline constexpr std::int32_t kWorldComm = 0;
inline constexpr std::int64_t kNoRequest = -1;

/// Where an MPI buffer or a copy endpoint lives. Filled by the GPU issue.
enum class Memory : std::uint8_t { Host = 0, Device = 1 };

/// The arguments that set a hooked library call's cost (BLAS levels 1-3, LAPACK), as the caller passed
/// them: dimensions, leading dimensions, strides and option letters. What each means per function, and
/// the work and working set they give: library_cost.hpp. `recorded` is false for every other call and
/// for profiles recorded before the hook kept them.
struct LibraryArgs {
  std::int64_t m = 0, n = 0, k = 0;           ///< level 1: n; gemv/ger: m, n; getrs: n, nrhs in k
  std::int64_t ld_a = 0, ld_b = 0, ld_c = 0;  ///< leading dimensions (0: not an argument)
  std::int64_t inc_x = 0, inc_y = 0;          ///< vector strides (0: not an argument)
  /// trans_a, trans_b, side, uplo, diag as upper-case letters ('N', 'T', 'C', 'L', 'R', 'U'); '-' where
  /// the function has no such argument.
  std::array<char, 5> options{'-', '-', '-', '-', '-'};
  bool recorded = false;
  bool operator==(const LibraryArgs&) const = default;
};

/// One call. Sizes in bytes, times in seconds, work in flops. Unused fields keep their defaults,
/// which the writers omit.
struct CallRecord {
  Op op = Op::Compute;
  std::uint32_t function = 0;  ///< index into the trace's FunctionTable

  double seconds = -1.0;  ///< measured duration (< 0: unknown); for compute and sleep, the work itself
  double flops = 0.0;     ///< work in flops (compute, and reduction work of reduce-like collectives)

  std::int32_t peer = kNoRank;  ///< destination (sends) or source (receives), world rank, kAnySource allowed
  std::int32_t tag = 0;         ///< kAnyTag allowed on receives
  std::uint64_t bytes = 0;      ///< bytes sent (or the per-rank size of a collective)

  std::int32_t src = kNoRank;      ///< Sendrecv: source of the receive half
  std::int32_t recv_tag = 0;       ///< Sendrecv: tag of the receive half
  std::uint64_t recv_bytes = 0;    ///< receive size (Sendrecv, collectives with distinct receive size)

  std::int32_t comm = kWorldComm;  ///< communicator handle, local to the rank (0 = MPI_COMM_WORLD)
  std::int32_t root = 0;           ///< root of rooted collectives, rank in `comm`
  std::int64_t request = kNoRequest;  ///< request handle created (isend, irecv) or completed (wait, test)
  std::vector<std::int64_t> requests;  ///< waitall, waitany

  std::vector<std::uint64_t> counts;       ///< v-collectives: bytes sent to each rank of comm
  std::vector<std::uint64_t> recv_counts;  ///< v-collectives: bytes received from each rank of comm

  std::int32_t color = 0;           ///< CommSplit
  std::int32_t key = 0;             ///< CommSplit
  std::int32_t new_comm = kWorldComm;  ///< CommSplit, CommDup: handle of the communicator created

  // GPU fields, reserved for the GPU issue: a stream id, a device index, where the buffer lives.
  std::int32_t stream = -1;
  std::int32_t device = -1;
  Memory memory = Memory::Host;
  /// gpu_kernel: the kernel's duration on the device in seconds (< 0: unknown; then `flops` is its work).
  /// `seconds` stays the host-side launch, as the profiler records it.
  double device_seconds = -1.0;

  LibraryArgs library;  ///< compute calls of a hooked library function: what sets their cost

  std::uint64_t line = 0;  ///< line (JSON lines, TIT) or record number (binary) in the source file, 1-based

  /// Resets every field to its default but keeps vector capacity (streams reuse one record).
  void clear();
};

/// Compares every field but `line`, which says where a record was read, not what it is.
bool operator==(const CallRecord& a, const CallRecord& b);

/// Function names of one trace. Ids are dense and assigned in first-seen order, so that a trace read
/// twice gets the same ids (determinism).
class FunctionTable {
public:
  /// Returns the id of `name`, adding it if new.
  std::uint32_t intern(std::string_view name);
  /// Returns the id of `name` if present.
  std::optional<std::uint32_t> find(std::string_view name) const;
  const std::string& name(std::uint32_t id) const;
  std::size_t size() const { return names_.size(); }
  const std::vector<std::string>& names() const { return names_; }

private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

}  // namespace gridcast::models
