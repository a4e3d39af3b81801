#include "gridcast/emulator/contexts.hpp"

#include "gridcast/foundation/errors.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <string>

namespace gridcast::emulator {
namespace {

/// The first unsigned number of a text file (a /proc or /sys value); 0 when unreadable or "max".
std::uint64_t read_number(const char* path)
{
  std::ifstream in(path);
  std::uint64_t value = 0;
  if (not(in >> value))
    return 0;
  return value;
}

/// "kB" fields of /proc/meminfo, in bytes; 0 when absent.
std::uint64_t meminfo_bytes(const std::string& field)
{
  std::ifstream in("/proc/meminfo");
  std::string name;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> name >> kib >> unit)
    if (name == field + ":")
      return kib * 1024;
  return 0;
}

std::uint64_t rlimit_bytes(int resource)
{
  rlimit lim{};
  if (getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
    return 0;
  return static_cast<std::uint64_t>(lim.rlim_cur);
}

std::string bytes_text(std::uint64_t bytes)
{
  const char* unit = "KiB";
  double value = static_cast<double>(bytes) / 1024.0;
  for (const char* next : {"MiB", "GiB", "TiB"}) {
    if (value < 1024.0)
      break;
    value /= 1024.0;
    unit = next;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", value, unit);
  return buf;
}

/// The last value of a --cfg key, parsed as a whole number (config.cpp has checked its form).
std::optional<std::uint64_t> cfg_number(const ReplayOptions& options, const std::string& key)
{
  std::optional<std::uint64_t> value;
  for (const auto& [name, text] : options.simgrid_cfg)
    if (name == key)
      value = static_cast<std::uint64_t>(std::stod(text));
  return value;
}

std::string cfg_text(const ReplayOptions& options, const std::string& key, std::string fallback)
{
  for (const auto& [name, text] : options.simgrid_cfg)
    if (name == key)
      fallback = text;
  return fallback;
}

// glibc serves allocations below its mmap threshold (128 KiB unless tuned) from the heap, without a map
// of their own: a stack that small costs no map.
constexpr std::uint64_t kMmapThresholdBytes = 128 * 1024;
constexpr std::uint64_t kSmallStackBytes = 64 * 1024;
// Maps the rest of the run takes besides the stacks: libraries, the heap, SimGrid's and gridcast's
// large allocations, the engine thread.
constexpr std::uint64_t kReservedMaps = 2048;

std::uint64_t maps_per_rank(bool threads, std::uint64_t stack_bytes, std::uint64_t guard_bytes)
{
  if (threads || guard_bytes > 0)
    return 2;  // the stack's mapping, split by its guard page (a thread always has one)
  return stack_bytes >= kMmapThresholdBytes ? 1 : 0;
}

}  // namespace

ProcessLimits read_process_limits()
{
  ProcessLimits limits;
  if (std::uint64_t n = read_number("/proc/sys/vm/max_map_count"); n > 0)
    limits.max_map_count = n;
  {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      ++limits.maps_in_use;
  }
  limits.memory_available_bytes = meminfo_bytes("MemAvailable");
  // A container's memory limit (cgroup v2, then v1) binds before the machine's.
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const std::uint64_t cg = read_number(path);
    if (cg > 0 && (limits.memory_available_bytes == 0 || cg < limits.memory_available_bytes))
      limits.memory_available_bytes = cg;
  }
  limits.address_space_bytes = rlimit_bytes(RLIMIT_AS);
  limits.threads_max = rlimit_bytes(RLIMIT_NPROC);
  return limits;
}

ContextPlan plan_contexts(int np, const ReplayOptions& options, const ProcessLimits& limits)
{
  ContextPlan plan;
  const auto ranks = static_cast<std::uint64_t>(std::max(np, 1));
#ifdef GRIDCAST_SANITIZED
  const std::string factory = "thread";  // see replay.cpp's engine_arguments
#else
  const std::string factory = cfg_text(options, "contexts/factory", "raw");
#endif
  const bool threads = factory == "thread";
  const std::optional<std::uint64_t> user_stack_kib = cfg_number(options, "contexts/stack-size");
  const std::optional<std::uint64_t> user_guard = cfg_number(options, "contexts/guard-size");
  if (user_stack_kib)
    plan.actor_stack_bytes = *user_stack_kib * 1024;
  if (user_guard)
    plan.guard_bytes = *user_guard;
  // The engine's stack: SimGrid's solver recurses through the constraints of the flows (two links a host
  // on a cluster), a hundred bytes a level; 1 KiB a rank leaves a wide margin.
  plan.engine_stack_bytes = (std::uint64_t{64} << 20) + ranks * 1024;

  const std::uint64_t budget =
      limits.max_map_count > limits.maps_in_use + kReservedMaps ? limits.max_map_count - limits.maps_in_use - kReservedMaps : 0;
  plan.maps_needed = ranks * maps_per_rank(threads, plan.actor_stack_bytes, plan.guard_bytes);
  const std::string maps_words = std::to_string(np) + " ranks need about " + std::to_string(plan.maps_needed) +
                                 " memory maps for their stacks and vm.max_map_count allows " +
                                 std::to_string(limits.max_map_count) + " (" + std::to_string(limits.maps_in_use) +
                                 " in use)";
  const std::string raise = "raise the limit (as root: sysctl -w vm.max_map_count=" +
                            std::to_string(limits.maps_in_use + kReservedMaps + 2 * ranks + 1024) + ")";
  if (plan.maps_needed > budget) {
    // The user's own settings first: they are what to change (sanitized builds force threads themselves).
    if (user_guard && *user_guard > 0)
      throw InputError({"--cfg", 0, "contexts/guard-size", -1},
                       maps_words + ": a guard page splits each stack's map in two; leave contexts/guard-size "
                                    "out (gridcast then drops the guards when they do not fit), set it to 0, or " +
                           raise);
    if (user_stack_kib && *user_stack_kib * 1024 >= kMmapThresholdBytes)
      throw InputError({"--cfg", 0, "contexts/stack-size", -1},
                       maps_words + ": a stack of " + bytes_text(plan.actor_stack_bytes) +
                           " takes a map of its own (from 128 KiB); leave contexts/stack-size out, set it under "
                           "128 (KiB), or " + raise);
    if (threads)
      throw InputError({"--cfg", 0, "contexts/factory", -1},
                       maps_words + ": threads take two each (a stack and its guard page); use the default "
                                    "contexts/factory:raw, which gridcast fits to the limit, or " + raise);
    plan.guard_bytes = 0;
    if (not user_stack_kib)
      plan.actor_stack_bytes = kSmallStackBytes;
    plan.chosen = true;
    plan.maps_needed = ranks * maps_per_rank(threads, plan.actor_stack_bytes, plan.guard_bytes);
    plan.note = std::to_string(np) + " ranks with guarded stacks would need about " + std::to_string(2 * ranks) +
                " memory maps and vm.max_map_count allows " + std::to_string(limits.max_map_count) +
                ": the ranks run on " + bytes_text(plan.actor_stack_bytes) +
                " stacks from the heap without guard pages (gridcast's ranks use under 8 KiB); to keep the "
                "guards, " + raise;
  }

  // Address space (ulimit -v): every stack is reserved whole.
  auto reserved = [&] { return ranks * (plan.actor_stack_bytes + plan.guard_bytes) + plan.engine_stack_bytes; };
  if (limits.address_space_bytes > 0 && reserved() > limits.address_space_bytes / 2 && not user_stack_kib &&
      plan.actor_stack_bytes > kSmallStackBytes) {
    plan.actor_stack_bytes = kSmallStackBytes;
    plan.chosen = true;
    plan.note += std::string(plan.note.empty() ? "" : "; ") + "the ranks run on " + bytes_text(kSmallStackBytes) +
                 " stacks to fit the address-space limit (ulimit -v " +
                 std::to_string(limits.address_space_bytes / 1024) + ")";
  }
  if (limits.address_space_bytes > 0 && reserved() > limits.address_space_bytes / 2)
    throw InputError({"--cfg", 0, user_stack_kib ? "contexts/stack-size" : "", -1},
                     std::to_string(np) + " ranks reserve " + bytes_text(reserved()) +
                         " of address space for their stacks and the engine, more than half of the process's "
                         "limit (ulimit -v: " + bytes_text(limits.address_space_bytes) +
                         "); raise the limit (ulimit -v unlimited)" +
                         (user_stack_kib ? std::string(" or leave contexts/stack-size out") : std::string()));

  if (threads && limits.threads_max > 0 && ranks + 64 > limits.threads_max)
    throw InputError({"--cfg", 0, "contexts/factory", -1},
                     "contexts/factory:thread runs each of the " + std::to_string(np) +
                         " ranks on a thread and the process may have " + std::to_string(limits.threads_max) +
                         " (ulimit -u); use contexts/factory:raw or raise the limit");

  plan.memory_needed_bytes = ranks * kMinBytesPerRank;
  if (limits.memory_available_bytes > 0 && plan.memory_needed_bytes > limits.memory_available_bytes)
    throw InputError({}, std::to_string(np) + " ranks need at least " + bytes_text(plan.memory_needed_bytes) +
                             " of memory (about " + bytes_text(kMinBytesPerRank) + " a rank) and " +
                             bytes_text(limits.memory_available_bytes) +
                             " is available: run fewer ranks, or on a machine (or container) with more memory");
  return plan;
}

void run_on_thread(std::uint64_t stack_bytes, const std::function<void()>& body)
{
  struct Job {
    const std::function<void()>* body;
    std::exception_ptr error;
  } job{&body, nullptr};
  pthread_attr_t attr;
  if (int e = pthread_attr_init(&attr); e != 0)
    throw InternalError(std::string("pthread_attr_init: ") + std::strerror(e));
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t size = (std::max<std::uint64_t>(stack_bytes, 1 << 20) + page - 1) / page * page;
  pthread_attr_setstacksize(&attr, static_cast<std::size_t>(size));
  pthread_t thread{};
  const int e = pthread_create(
      &thread, &attr,
      [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        try {
          (*j->body)();
        } catch (...) {
          j->error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  if (e != 0)
    throw InputError({}, "could not start the simulation thread with a " + bytes_text(size) +
                             " stack: " + std::strerror(e) + " (ulimit -v and ulimit -u limit it)");
  pthread_join(thread, nullptr);
  if (job.error)
    std::rethrow_exception(job.error);
}

}  // namespace gridcast::emulator
