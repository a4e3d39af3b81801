// The context plan of runs of many ranks (contexts.hpp): SimGrid's defaults while the guarded stacks fit
// the memory-map limit, small heap stacks without guards once they do not, and exit 1 naming the limit
// and the setting when the user's own settings or the machine cannot hold the run.
#include "gridcast/emulator/contexts.hpp"
#include "gridcast/foundation/errors.hpp"

#include <catch2/catch.hpp>

using gridcast::InputError;
using namespace gridcast::emulator;

namespace {

ProcessLimits linux_defaults()
{
  ProcessLimits l;
  l.max_map_count = 65530;
  l.maps_in_use = 300;
  l.memory_available_bytes = std::uint64_t{24} << 30;
  return l;
}

std::string error_of(int np, const ReplayOptions& options, const ProcessLimits& limits)
{
  try {
    plan_contexts(np, options, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("contexts: SimGrid's stacks and guards stand while their maps fit", "[emulator]")
{
  ReplayOptions options;
  for (int np : {1, 64, 4096, 30000}) {
    const ContextPlan plan = plan_contexts(np, options, linux_defaults());
    INFO(np);
    CHECK_FALSE(plan.chosen);
    CHECK(plan.note.empty());
    CHECK(plan.actor_stack_bytes == 8u << 20);
    CHECK(plan.guard_bytes == 4096);
    CHECK(plan.maps_needed == 2u * static_cast<unsigned>(np));
  }
  // The engine's stack grows with the ranks, from 64 MiB.
  CHECK(plan_contexts(1, options, linux_defaults()).engine_stack_bytes == (64u << 20) + 1024);
  ProcessLimits roomy = linux_defaults();
  roomy.max_map_count = 1u << 20;  // sanitized builds run threads, two maps each whatever the stack
  CHECK(plan_contexts(65536, options, roomy).engine_stack_bytes == (128u << 20));
}

TEST_CASE("contexts: past the memory-map limit the ranks get 64 KiB heap stacks without guards", "[emulator]")
{
  ReplayOptions options;
#ifdef GRIDCAST_SANITIZED
  // Sanitized builds run ranks on threads (see CMakeLists.txt), which always take two maps each.
  CHECK_THAT(error_of(65536, options, linux_defaults()), Catch::Contains("contexts/factory"));
  return;
#endif
  const ContextPlan plan = plan_contexts(65536, options, linux_defaults());
  CHECK(plan.chosen);
  CHECK(plan.actor_stack_bytes == 64u * 1024);
  CHECK(plan.guard_bytes == 0);
  CHECK(plan.maps_needed == 0);
  CHECK_THAT(plan.note, Catch::Contains("vm.max_map_count allows 65530"));
  CHECK_THAT(plan.note, Catch::Contains("sysctl -w vm.max_map_count="));
  // The switch follows the limit, not a rank count: the same run on a machine that allows more keeps them.
  ProcessLimits roomy = linux_defaults();
  roomy.max_map_count = 1u << 20;
  CHECK_FALSE(plan_contexts(65536, options, roomy).chosen);
  // A stack size the user chose is kept (under 128 KiB it takes no map).
  options.simgrid_cfg.emplace_back("contexts/stack-size", "32");
  const ContextPlan kept = plan_contexts(65536, options, linux_defaults());
  CHECK(kept.actor_stack_bytes == 32u * 1024);
  CHECK(kept.guard_bytes == 0);
}

TEST_CASE("contexts: settings that cannot fit are refused naming the key and the limit", "[emulator]")
{
  ReplayOptions guarded;
  guarded.simgrid_cfg.emplace_back("contexts/guard-size", "4096");
  CHECK(error_of(30000, guarded, linux_defaults()).empty());
  const std::string guard = error_of(65536, guarded, linux_defaults());
  CHECK_THAT(guard, Catch::Contains("contexts/guard-size"));
  CHECK_THAT(guard, Catch::Contains("65536 ranks need about 131072 memory maps"));
  CHECK_THAT(guard, Catch::Contains("vm.max_map_count allows 65530 (300 in use)"));

  ReplayOptions big_stacks;
  big_stacks.simgrid_cfg.emplace_back("contexts/guard-size", "0");
  big_stacks.simgrid_cfg.emplace_back("contexts/stack-size", "1024");
  CHECK_THAT(error_of(70000, big_stacks, linux_defaults()), Catch::Contains("contexts/stack-size"));

  ReplayOptions threads;
  threads.simgrid_cfg.emplace_back("contexts/factory", "thread");
  CHECK_THAT(error_of(65536, threads, linux_defaults()), Catch::Contains("contexts/factory"));
}

TEST_CASE("contexts: a run larger than the memory or the address space stops before simulating", "[emulator]")
{
  ReplayOptions options;
  ProcessLimits small = linux_defaults();
  small.memory_available_bytes = std::uint64_t{1} << 30;
  CHECK(error_of(16384, options, small).empty());
  const std::string memory = error_of(30000, options, small);
  CHECK_THAT(memory, Catch::Contains("30000 ranks need at least 1.1"));
  CHECK_THAT(memory, Catch::Contains("GiB of memory (about 40 KiB a rank)"));
  CHECK_THAT(memory, Catch::Contains("1 GiB is available"));

  // ulimit -v: the default 8 MiB stacks shrink to fit; a size the user gave does not, and is named.
  ProcessLimits capped = linux_defaults();
  capped.address_space_bytes = std::uint64_t{16} << 30;
  const ContextPlan fitted = plan_contexts(4096, options, capped);
  CHECK(fitted.chosen);
  CHECK(fitted.actor_stack_bytes == 64u * 1024);
  CHECK_THAT(fitted.note, Catch::Contains("ulimit -v"));
  ReplayOptions user_stack;
  user_stack.simgrid_cfg.emplace_back("contexts/stack-size", "8192");
  CHECK_THAT(error_of(4096, user_stack, capped), Catch::Contains("ulimit -v"));
}

TEST_CASE("contexts: the engine thread returns the body's result and rethrows its error", "[emulator]")
{
  int value = 0;
  run_on_thread(std::uint64_t{256} << 20, [&] { value = 42; });
  CHECK(value == 42);
  CHECK_THROWS_AS(run_on_thread(1 << 20, [] { throw InputError({}, "from the thread"); }), InputError);
}
