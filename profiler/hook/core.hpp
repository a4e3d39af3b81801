// The hook's runtime: clock, per-thread record buffers, raw files, flushing at every kind of end,
// communicator and request tables. Used by the MPI, library and GPU wrappers (hook_*.cpp).
//
// Rules of this library: no allocation or lock on the path of a point-to-point call beyond a
// thread-local buffer append; never call a hooked function from inside the hook in a way that records
// it (depth guard); never throw.
#pragma once

#include "gridcast/profiler/raw_format.hpp"

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

// GRIDCAST_HOOK_SMPI=1: the hook compiled with smpicxx and linked into a program that SMPI runs
// (scripts/smpi-hook.sh). Every rank is then an actor of one process, each with its own copy of the
// program's globals (SMPI's privatization); the clock is SMPI's simulated one (smpi_helpers.h turns
// clock_gettime into smpi_clock_gettime), so the TSC is never read; and SMPI's MPI differs from the
// standard's in a few prototypes (MPI_Comm_spawn_multiple's are not const).
#ifndef GRIDCAST_HOOK_SMPI
#define GRIDCAST_HOOK_SMPI 0
#endif
#if GRIDCAST_HOOK_SMPI
#define GRIDCAST_SPAWN_CONST
#else
#define GRIDCAST_SPAWN_CONST const
#endif

// Nothing of the hook's own is for the application to see: hidden symbols are also called directly,
// not through the PLT (the wrappers themselves are extern "C" and declared by mpi.h, outside this).
#pragma GCC visibility push(hidden)
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
extern std::atomic<bool> g_recording;
inline bool recording() { return g_recording.load(std::memory_order_relaxed); }
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

/// Per-thread nesting depth of hooked calls: only the outermost call of a nest is recorded.
extern thread_local constinit int t_depth;
inline int& depth() { return t_depth; }

/// Polling loops (HPL's MPI_Iprobe, MPI_Testany in HPCC) call the same failing poll millions of times.
/// A failed poll identical to the thread's previous record (same function, same arguments -- `key` --
/// nothing recorded in between) is folded into it: its count (`repeat`) and time are added, every call
/// is kept, only the per-call split of the time is averaged. Returns true if folded.
///
/// Reading the clock twice costs more than a failed poll itself (~25 ns against ~15 in Open MPI's
/// MPI_Testany: HPCC's RandomAccess polls 17 million times in 3 s, +20% of wall time when every call is
/// timed). So the first kPollTimedFolds folded calls of a run are timed, then one in kPollSampleEvery:
/// poll_timed() says, before the call, whether this one is. An untimed folded call only counts; a timed
/// one adds its time for itself and the untimed calls since the previous timed one (`busy_ticks` is an
/// estimate, exact for runs of up to kPollTimedFolds + 1 calls) and moves the end of the run's span to
/// its end (the untimed calls after the last timed one end up in the following computation: a few
/// calls' time at most).
///
/// Everything before the PMPI call is kept to loads: Open MPI's test functions begin with a full
/// memory barrier (`lock or` in ompi_request_default_test_any), which waits until every store before it
/// is written to the cache, so each store of the wrapper costs about a cycle there (~45 stores made a
/// hooked MPI_Testany 13 ns slower than a bare one).
constexpr std::int64_t kPollTimedFolds = 32;
constexpr std::int64_t kPollSampleEvery = 32;

/// The last record of this thread when it is a failed poll (see fold_poll).
struct PollState {
  bool valid = false;
  std::uint16_t fn = 0;
  std::uint64_t key = 0;
  std::size_t index = 0;        ///< the poll's record in the buffer
  std::uint64_t appended = 0;   ///< ThreadBuf::appended right after it
  std::uint64_t flushes = 0;    ///< ThreadBuf::flushes right after it
  std::int64_t untimed = 0;     ///< calls folded since the last timed one
  std::int64_t skip = 0;        ///< the next calls of this poll to leave untimed (0: time the next one)
  RawRecord* record = nullptr;  ///< the poll's record in the buffer (valid while skip > 0)
};
extern thread_local constinit PollState t_poll;
/// The failed poll recorded right before t_poll (nothing in between): two polls that alternate (HPCC's
/// RandomAccess loops on MPI_Testany then MPI_Test) fold as a cycle into these two records.
extern thread_local constinit PollState t_poll_before;

/// Whether a poll of (fn, key) reads the clock: unless it repeats a run that is past its first
/// kPollTimedFolds calls and between samples. Loads only (see above); fold_poll() checks the rest.
inline bool poll_timed(std::uint16_t fn, std::uint64_t key)
{
  const PollState& p = t_poll;
  if (p.fn == fn && p.key == key)
    return p.skip <= 0;
  const PollState& q = t_poll_before;
  if (q.fn == fn && q.key == key)
    return q.skip <= 0;
  return true;
}
/// Whether a poll of (fn, key) is a recorded call between the samples of a run (poll_timed() false): the
/// wrappers then take a path that only calls PMPI and counts the call in fold_poll() -- no Call object,
/// no copies, one store before the PMPI call (the depth).
inline bool untimed_poll(std::uint16_t fn, std::uint64_t key)
{
  return recording() && t_depth == 0 && not poll_timed(fn, key);
}
/// fold_poll() for an untimed_poll() call that failed, inline: only counts. skip > 0 means that nothing
/// was appended (nor flushed: a flush happens only on an append or at the end) since the run's last call.
inline bool fold_untimed(std::uint16_t fn, std::uint64_t key)
{
  PollState& p = t_poll;
  PollState* s = nullptr;
  if (p.fn == fn && p.key == key)
    s = &p;
  else if (PollState& q = t_poll_before; q.fn == fn && q.key == key && q.record != nullptr && p.record != nullptr &&
                                         q.record->repeat == p.record->repeat)
    s = &q;  // a cycle A B A B: A has been repeated as often as B
  if (s == nullptr || s->skip <= 0)
    return false;
  ++s->record->repeat;
  ++s->untimed;
  --s->skip;
  return true;
}
/// Any other record ends the runs: their next calls are timed.
inline void stop_poll_sampling()
{
  t_poll.skip = 0;
  t_poll_before.skip = 0;
}
/// Folds a failed poll (see above). `start`/`end` are read only when `timed`.
bool fold_poll(std::uint16_t fn, std::uint64_t key, bool timed, std::int64_t start, std::int64_t end);
/// An untimed poll that is not folded (it succeeded) still needs a start: its end minus the run's mean
/// call time, not before the run's end.
std::int64_t untimed_poll_start(std::uint16_t fn, std::uint64_t key, std::int64_t end);
/// Marks the record just appended as a failed poll that the next identical one may fold into.
void remember_poll(std::uint16_t fn, std::uint64_t key);

/// Mixes `v` into a running 64-bit hash (argument identity of polls).
inline std::uint64_t mix(std::uint64_t h, std::uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}


/// Is function `fn` (a library function) selected by the function list? MPI is always recorded.
bool selected(Fn fn);

/// Called by the MPI_Init wrappers after PMPI_Init succeeded / by MPI_Finalize before PMPI_Finalize.
/// `mpi_library`: MPI_Get_library_version's text (its first line is kept, for the collective selector).
void on_init(int world_rank, int world_size, std::int64_t init_start_ticks, const char* mpi_library);
void on_finalize(std::int64_t end_ticks);
/// MPI_Abort: flush everything and mark the run aborted.
void on_abort(int code);

/// Application functions (-finstrument-functions): returns the id to record for `address`, or 0 when
/// the function is not selected.
std::uint16_t app_function_id(void* address);

/// A launched kernel (cudaLaunchKernel's handle): the id of its name, defined in this thread's file
/// (a Def record) before the launch is recorded; 0 when no name is known or nothing is recorded.
std::uint16_t kernel_function_id(const void* handle);

/// Poll calls name their argument identity (see fold_poll) when they are constructed.
struct PollKey {
  std::uint64_t key;
};

/// RAII guard for one hooked call: takes the start time if this call is recorded (outermost, in the
/// recording window), records on finish().
class Call {
public:
  explicit Call(Fn fn) : active_(recording() && depth()++ == 0)
  {
    std::construct_at(&r);
    if (not active_) {
      if (recording())
        nested_ = true;  // depth was incremented: undo it in the destructor
      return;
    }
    r.fn = static_cast<std::uint16_t>(fn);
    r.start_ticks = now_ticks();
  }
  /// A poll (MPI_Test*, MPI_Iprobe): the clock is read only if poll_timed() says so, and the record is
  /// filled in only after the call, if the call is not folded (see poll_timed: no stores before it).
  /// `r` may be used only after fold_if_repeated() returned false.
  [[gnu::always_inline]] Call(Fn fn, PollKey key) : active_(recording() && depth()++ == 0), poll_(true), key_(key.key)
  {
    if (not active_) {
      if (recording())
        nested_ = true;
      return;
    }
    fn_ = static_cast<std::uint16_t>(fn);
    timed_ = poll_timed(fn_, key_);
    if (timed_)
      start_ = now_ticks();
  }
  /// The rare end of an untimed_poll() path that did not fold (the call succeeded): PMPI was called with
  /// depth() already incremented, which this Call takes over; the start is estimated (finish_poll).
  struct AfterUntimed {};
  Call(Fn fn, PollKey key, AfterUntimed) : active_(true), poll_(true), timed_(false), fn_(static_cast<std::uint16_t>(fn)), key_(key.key) {}
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
  /// For a poll (constructed with its key): folds a failed call into the previous record when it
  /// repeats it. True if folded: the record is complete, finish_poll() does nothing. Called before the
  /// arguments are looked up, so that a folded poll costs no lookup at all.
  bool fold_if_repeated(bool failed)
  {
    if (not poll_ || polled_)
      return folded_;
    polled_ = true;
    if (not active_) {
      std::construct_at(&r);
      return false;
    }
    if (timed_)
      end_ = now_ticks();
    folded_ = failed && fold_poll(fn_, key_, timed_, start_, end_);
    if (not folded_) {
      std::construct_at(&r);
      r.fn = fn_;
      r.start_ticks = start_;
    }
    return folded_;
  }
  /// finish() for a poll: a failed one may be folded into the previous record.
  void finish_poll(bool failed, ExtraKind kind = ExtraKind::None, const std::int64_t* a = nullptr,
                   std::size_t na = 0, const std::int64_t* b = nullptr, std::size_t nb = 0)
  {
    if (not active_ || fold_if_repeated(failed))
      return;
    if (not timed_) {
      end_ = now_ticks();
      r.start_ticks = untimed_poll_start(fn_, key_, end_);
    }
    r.duration_ticks = end_ - r.start_ticks;
    if (failed)
      r.busy_ticks = r.duration_ticks;
    append_with_values(r, kind, a, na, b, nb);
    if (failed)
      remember_poll(r.fn, key_);
  }
  union {
    RawRecord r;  ///< constructed by the constructor, for a poll by fold_if_repeated()
  };

private:
  bool active_;
  bool nested_ = false;
  bool poll_ = false;
  bool timed_ = true;
  bool polled_ = false;  ///< fold_if_repeated() ran
  bool folded_ = false;
  std::uint16_t fn_ = 0;
  std::uint64_t key_ = 0;
  std::int64_t start_ = 0;
  std::int64_t end_ = 0;
};

/// Whether `buffer` is GPU memory (cudaPointerGetAttributes, when a CUDA runtime is loaded).
bool is_device_memory(const void* buffer);

/// Resolves the next definition of a symbol (dlsym RTLD_NEXT), once; reports an unresolved one once.
void* next_symbol(const char* name);

}  // namespace gridcast::hook
#pragma GCC visibility pop
