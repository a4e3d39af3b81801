// A SimGrid platform file as replay and predict load it. gridcast's own checks (TinyXML2) run in this
// process; a platform they accept is then loaded by SimGrid in a child process (SimGrid's engine is one per
// process), with the ranks placed and their routes checked as replay does. SimGrid aborting or crashing on a
// platform the checks accepted is a finding: the checks must refuse it first with an InputError.
#include "fuzz_support.hpp"

#include "gridcast/emulator/calibration_factors.hpp"
#include "gridcast/platform/placement.hpp"
#include "precheck.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>

using namespace gridcast;

namespace {

/// Loads the platform as replay does; the child's exit status says how it went.
[[noreturn]] void load_in_child(const fuzz::fs::path& xml)
{
  int code = 0;
  try {
    std::string name = "fuzz", log = "--log=root.thres:critical";
    char* argv[] = {name.data(), log.data(), nullptr};
    int argc     = 2;
    platform::sg4::Engine engine(&argc, argv);
    platform::load_platform(engine, xml);
    (void)emulator::read_platform_calibration(engine, xml);
    const auto hosts = platform::compute_hosts(engine);
    const int np     = static_cast<int>(std::min<std::size_t>(hosts.size(), 4));
    if (np > 0)
      platform::check_rank_routes(xml, platform::place_ranks(engine, np, {}));
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: not an InputError: %s\n", e.what());
    code = 3;
  }
  std::fflush(stderr);
  ::_exit(code);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto xml = fuzz::input_file(data, size, "platform.xml");
  try {
    platform::precheck_platform_xml(xml);
  } catch (const InputError&) {
    return 0;
  }
  const pid_t child = ::fork();
  if (child == 0)
    load_in_child(xml);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0)) {
    std::fprintf(stderr, "finding: SimGrid's load of a platform gridcast's checks accepted %s %d\n",
                 WIFSIGNALED(status) ? "died of signal" : "exited with", WIFSIGNALED(status) ? WTERMSIG(status)
                                                                                     : WEXITSTATUS(status));
    std::abort();
  }
  return 0;
}
