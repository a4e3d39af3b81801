// gridcast: predict the run time of MPI applications at scales nobody can run today.
#include "commands.hpp"

#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/version.hpp"

#include <simgrid/version.h>

#include <iostream>
#include <string>
#include <vector>

namespace {

const char* const kUsage = R"(usage: gridcast <command> [options]

commands:
  replay      replay a recorded trace (profile directory or SMPI TIT trace) on a SimGrid platform
  convert     convert a profile directory between the JSON-lines and binary encodings
  import      turn a foreign trace (SMPI time-independent trace) into a profile directory
  algorithms  list the collective algorithms and the default selection rules
  fit         fit a trace-scaling model (model.json) to profiles at several (Nw, Np) points
  synth       synthesize every rank's calls at a new (Nw, Np) from a model
  predict     predict a run at a new (Nw, Np) from a model: synthesize and emulate in one pass
  platform    generate a SimGrid platform from a JSON spec (+ calibration): docs/platforms.md
  calibrate   measure this machine (compute, MPI, GPU) into calibration.json
  profile     run an MPI application with the profiling hook and write its profile directory
  version     print the gridcast and SimGrid versions

`gridcast <command> --help` explains every option of a command.
Exit codes: 0 success, 1 bad input or a run that cannot finish, 2 internal error.
)";

}  // namespace

int main(int argc, char** argv)
{
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 1 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "replay")
      return gridcast::cli::run_replay(args);
    if (command == "convert")
      return gridcast::cli::run_convert(args);
    if (command == "import")
      return gridcast::cli::run_import(args);
    if (command == "algorithms")
      return gridcast::cli::run_algorithms(args);
    if (command == "fit")
      return gridcast::cli::run_fit(args);
    if (command == "synth")
      return gridcast::cli::run_synth(args);
    if (command == "predict")
      return gridcast::cli::run_predict(args);
    if (command == "calibrate")
      return gridcast::cli::run_calibrate(args);
    if (command == "platform")
      return gridcast::cli::run_platform(args);
    if (command == "profile")
      return gridcast::cli::run_profile(args);
    if (command == "version" || command == "--version") {
      if (args.size() > 0 && (args[0] == "--help" || args[0] == "-h")) {
        std::cout << "usage: gridcast version\n  prints the gridcast version and the SimGrid version it was built with\n";
        return 0;
      }
      if (not args.empty())
        throw gridcast::cli::UsageError{"takes no argument (got '" + args[0] + "')", "version"};
      std::cout << "gridcast " << gridcast::kVersion << " (SimGrid " << SIMGRID_VERSION_MAJOR << '.'
                << SIMGRID_VERSION_MINOR << '.' << SIMGRID_VERSION_PATCH << ")\n";
      return 0;
    }
    std::cerr << "gridcast: unknown command '" << command << "'\n" << kUsage;
    return 1;
  } catch (const gridcast::cli::UsageError& e) {
    std::cerr << "gridcast " << e.command << ": " << e.message << "\n(see `gridcast " << e.command << " --help`)\n";
    return 1;
  } catch (const gridcast::InputError& e) {
    std::cerr << "gridcast: error: " << e.what() << '\n';
    return 1;
  } catch (const gridcast::emulator::DeadlockError& e) {
    std::cerr << "gridcast: error: the run cannot finish: " << e.blocked().size() << " rank(s) blocked forever\n";
    for (const auto& b : e.blocked()) {
      std::cerr << "  rank " << b.rank << ": in " << b.function;
      if (b.line > 0)
        std::cerr << " (" << b.file << ":" << b.line << ")";
      if (b.peer >= 0)
        std::cerr << ", peer " << b.peer << ", tag " << b.tag;
      if (not b.detail.empty())
        std::cerr << ": " << b.detail;
      std::cerr << '\n';
    }
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gridcast: internal error: " << e.what() << '\n';
    return 2;
  }
}
