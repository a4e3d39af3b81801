// How a run of many ranks fits in one process: the ranks' actor stacks, their guard pages, and the stack
// of the thread that runs SimGrid's engine, chosen from the rank count and the process's limits before
// anything is simulated (docs/reference/emulator.md, "Runs of many ranks").
//
// Each actor gets a stack from SimGrid (contexts/stack-size, 8 MiB by default; only the pages it touches
// are resident) with a guard page below it (contexts/guard-size). A guard page splits the stack's mapping
// in two, so every rank costs two of the kernel's memory maps, and Linux allows 65,530 per process by
// default (vm.max_map_count): about 32,000 guarded ranks. Above that the plan drops the guards and gives
// each rank a small stack from the heap (no map of its own); gridcast's ranks use under 8 KiB of theirs
// (measured: 4 KiB overflows, 8 KiB runs the bundled stencil), so 64 KiB keeps an 8x margin.
//
// SimGrid's network solver walks the constraints its flows share recursively, on the engine's stack: on a
// cluster of 65,536 hosts that is deeper than a process's usual 8 MiB. The engine therefore runs on a
// thread whose stack grows with the rank count (a reservation of address space; only what is used is
// resident).
#pragma once

#include "gridcast/emulator/config.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace gridcast::emulator {

/// What the operating system lets this process have (read_process_limits); 0 where there is no limit.
struct ProcessLimits {
  std::uint64_t max_map_count = 65530;     ///< vm.max_map_count
  std::uint64_t maps_in_use = 0;           ///< the process's memory maps now
  std::uint64_t memory_available_bytes = 0;  ///< MemAvailable, or the cgroup's limit if lower; 0: unknown
  std::uint64_t address_space_bytes = 0;   ///< RLIMIT_AS; 0: unlimited
  std::uint64_t threads_max = 0;           ///< RLIMIT_NPROC; 0: unlimited
};

/// The limits of this process now, from /proc and getrlimit.
ProcessLimits read_process_limits();

/// SimGrid's context settings for one run, and the engine thread's stack.
struct ContextPlan {
  std::uint64_t actor_stack_bytes = 8 << 20;  ///< per rank (SimGrid's default unless chosen)
  std::uint64_t guard_bytes = 4096;           ///< per rank; 0: none
  bool chosen = false;  ///< true: gridcast set the two above (passed to SimGrid before the user's --cfg)
  std::uint64_t engine_stack_bytes = 0;       ///< the engine thread's stack
  std::uint64_t maps_needed = 0;              ///< memory maps the ranks' stacks take
  std::uint64_t memory_needed_bytes = 0;      ///< the least resident memory the run takes (an estimate)
  std::string note;  ///< what was chosen and why, for the user; empty when SimGrid's defaults stand
};

/// Resident memory a rank takes at the least: its stack's touched pages, its actor, its stream and its
/// queues (measured on the bundled stencil model: 43 KiB a rank between 1,024 and 4,096 ranks).
constexpr std::uint64_t kMinBytesPerRank = 40 * 1024;

/// The plan for `np` ranks under `limits`, honouring contexts/... settings in `options.simgrid_cfg`.
/// Throws InputError (exit 1) when the run cannot fit: the message names the limit, what the run needs
/// and what to change.
ContextPlan plan_contexts(int np, const ReplayOptions& options, const ProcessLimits& limits);

/// Runs `body` on a new thread with a stack of `stack_bytes` and waits for it; an exception thrown by
/// `body` is rethrown here.
void run_on_thread(std::uint64_t stack_bytes, const std::function<void()>& body);

}  // namespace gridcast::emulator
