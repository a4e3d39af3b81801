// The hook's runtime: clock, per-thread record buffers, raw files, flushing at every kind of end,
// communicator and request tables. Used by the MPI, library and GPU wrappers (hook_*.cpp).
//
// Rules of this library: no allocation or lock on the path of a point-to-point call beyond a
// thread-local buffer append; never call a hooked function from inside the hook in a way that records
// it (depth guard); never throw.
#pragma once

#include "raw_format.hpp"

#include <cstdint>
#include <ctime>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace gridcast::hook {

inline std::int64_t clock_ns()
{
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/// True when timestamps are TSC ticks (x86-64 with an invariant TSC): reading it costs a few ns where
/// clock_gettime costs 20-40, and the hook reads the clock twice per call. Set once at load.
extern bool g_tsc_clock;

/// Timestamps of the records: TSC ticks, or CLOCK_MONOTONIC ns where there is no invariant TSC. The meta
/// file gives ticks_per_s; the converter turns ticks into seconds.
inline std::int64_t now_ticks()
{
#if defined(__x86_64__)
  if (g_tsc_clock)
    return static_cast<std::int64_t>(__rdtsc());
#endif
  return clock_ns();
}

/// True between MPI_Init and MPI_Finalize (and in discover mode for library calls as well).
bool recording();
/// Configuration read from the environment at load time.
struct Config {
  bool enabled = false;         ///< GRIDCAST_HOOK_DIR is set
  bool discover = false;        ///< GRIDCAST_HOOK_DISCOVER=1: every instrumented function is recorded
  bool blas = true;             ///< record BLAS/LAPACK (on unless a function list leaves them all out)
};
const Config& config();

/// Appends records to the calling thread's buffer (flushed to its raw file when full).
void append(const RawRecord& r);
void append_values(ExtraKind kind, const std::int64_t* values, std::size_t n, RawRecord& call);
/// Appends a call record followed by the given values as continuation records.
void append_with_values(RawRecord& call, ExtraKind kind, const std::int64_t* a, std::size_t na,
                        const std::int64_t* b = nullptr, std::size_t nb = 0);

/// Polling loops (HPL's MPI_Iprobe, MPI_Testany in HPCC) call the same failing poll millions of times.
/// A failed poll identical to the thread's previous record (same function, same arguments -- `key` --
/// nothing recorded in between) is folded into it: its count (`repeat`) and time are added, every call
/// is kept, only the per-call split of the time is averaged. Returns true if folded.
bool fold_poll(std::uint16_t fn, std::uint64_t key, std::int64_t start, std::int64_t end);
/// Marks the record just appended as a failed poll that the next identical one may fold into.
void remember_poll(std::uint16_t fn, std::uint64_t key);

/// Mixes `v` into a running 64-bit hash (argument identity of polls).
inline std::uint64_t mix(std::uint64_t h, std::uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

/// Per-thread nesting depth of hooked calls: only the outermost call of a nest is recorded.
int& depth();

/// Is function `fn` (a library function) selected by the function list? MPI is always recorded.
bool selected(Fn fn);

/// Called by the MPI_Init wrappers after PMPI_Init succeeded / by MPI_Finalize before PMPI_Finalize.
void on_init(int world_rank, int world_size, std::int64_t init_start_ticks);
void on_finalize(std::int64_t end_ticks);
/// MPI_Abort: flush everything and mark the run aborted.
void on_abort(int code);

/// Application functions (-finstrument-functions): returns the id to record for `address`, or 0 when
/// the function is not selected.
std::uint16_t app_function_id(void* address);

/// RAII guard for one hooked call: takes the start time if this call is recorded (outermost, in the
/// recording window), records on finish().
class Call {
public:
  explicit Call(Fn fn) : active_(recording() && depth()++ == 0)
  {
    if (not active_) {
      if (recording())
        nested_ = true;  // depth was incremented: undo it in the destructor
      return;
    }
    r.fn = static_cast<std::uint16_t>(fn);
    r.start_ticks = now_ticks();
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  ~Call()
  {
    if (active_ || nested_)
      --depth();
  }
  explicit operator bool() const { return active_; }
  /// Stamps the duration and appends the record (and `values` as continuation records).
  void finish(ExtraKind kind = ExtraKind::None, const std::int64_t* a = nullptr, std::size_t na = 0,
              const std::int64_t* b = nullptr, std::size_t nb = 0)
  {
    if (not active_)
      return;
    r.duration_ticks = now_ticks() - r.start_ticks;
    append_with_values(r, kind, a, na, b, nb);
  }
  /// For a poll (MPI_Test*, MPI_Iprobe): stamps the end and folds a failed call into the previous
  /// record when it repeats it. True if folded: the record is complete, finish_poll() does nothing.
  /// Called before the arguments are looked up, so that a folded poll costs no lookup at all.
  bool fold_if_repeated(bool failed, std::uint64_t key)
  {
    if (not active_)
      return false;
    end_ = now_ticks();
    folded_ = failed && fold_poll(r.fn, key, r.start_ticks, end_);
    return folded_;
  }
  /// finish() for a poll: a failed one may be folded into the previous record.
  void finish_poll(bool failed, std::uint64_t key, ExtraKind kind = ExtraKind::None, const std::int64_t* a = nullptr,
                   std::size_t na = 0, const std::int64_t* b = nullptr, std::size_t nb = 0)
  {
    if (not active_ || folded_)
      return;
    std::int64_t end = end_;
    if (end == 0) {
      end = now_ticks();
      if (failed && fold_poll(r.fn, key, r.start_ticks, end))
        return;
    }
    r.duration_ticks = end - r.start_ticks;
    if (failed)
      r.busy_ticks = r.duration_ticks;
    append_with_values(r, kind, a, na, b, nb);
    if (failed)
      remember_poll(r.fn, key);
  }
  RawRecord r;

private:
  bool active_;
  bool nested_ = false;
  bool folded_ = false;
  std::int64_t end_ = 0;  ///< set by fold_if_repeated()
};

/// Whether `buffer` is GPU memory (cudaPointerGetAttributes, when a CUDA runtime is loaded).
bool is_device_memory(const void* buffer);

/// Resolves the next definition of a symbol (dlsym RTLD_NEXT), once; reports an unresolved one once.
void* next_symbol(const char* name);

}  // namespace gridcast::hook
