// gridcast: predict the run time of MPI applications at scales nobody can run today.
#include "commands.hpp"

#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <string_view>
#include <string>
#include <vector>

namespace gridcast::cli {

namespace {

constexpr Command kCommands[] = {
    {"replay", "replay a recorded trace (profile directory or SMPI TIT trace) on a SimGrid platform", run_replay},
    {"convert", "convert a profile directory between the JSON-lines and binary encodings", run_convert},
    {"import", "turn a foreign trace (SMPI time-independent trace) into a profile directory", run_import},
    {"algorithms", "list the collective algorithms and the default selection rules", run_algorithms, nullptr, true},
    {"fit", "fit a trace-scaling model (model.json) to profiles at several (Nw, Np) points", run_fit},
    {"synth", "synthesize every rank's calls at a new (Nw, Np) from a model", run_synth},
    {"predict", "predict a run at a new (Nw, Np) from a model: synthesize and emulate in one pass", run_predict},
    {"phases", "group a run's main-loop iterations into phases, as predict --sample stratifies them", run_phases},
    {"platform", "generate a SimGrid platform from a JSON spec (+ calibration): docs/guides/platforms.md", run_platform},
    {"calibrate", "measure this machine (compute, MPI, GPU) into calibration.json", run_calibrate},
    {"profile", "run an MPI application with the profiling hook and write its profile directory", run_profile},
    {"gpu-cache", "run a kernel memory trace through a GPU's caches: hit rates, DRAM traffic, kernel time", run_gpu_cache},
    {"study", "sweep predictions over settings and platforms: local pool or Slurm array, results.csv, report.html", run_study},
    {"diff", "explain the difference between two runs (their prediction.json and analysis.json)", run_diff},
    {"version", "print the gridcast and SimGrid versions", run_version, "--version", true},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

std::string usage()
{
  std::size_t width = 0;
  for (const Command& c : commands())
    width = std::max(width, std::string_view(c.name).size());
  std::string text = "usage: gridcast <command> [options]\n\ncommands:\n";
  for (const Command& c : commands()) {
    text += "  ";
    text += c.name;
    text.append(width + 2 - std::string_view(c.name).size(), ' ');
    text += c.help;
    text += '\n';
  }
  text += "\n`gridcast <command> --help` (or `gridcast help <command>`) explains every option of a command.\n"
          "Exit codes: 0 success, 1 bad input or a run that cannot finish, 2 internal error.\n";
  return text;
}

/// A replay reads every rank's trace file at once (one open file per rank), and the usual soft limit of
/// 1,024 open files stops a trace of about a thousand ranks: take the hard limit, which the user's session
/// allows without privileges.
void raise_open_file_limit()
{
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);  // best effort: a failure leaves the limit, and the error names it
  }
}

}  // namespace gridcast::cli

int main(int argc, char** argv)
{
  gridcast::cli::raise_open_file_limit();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "help")  // `gridcast help CMD` is `gridcast CMD --help`
    args = {args[1], "--help"};
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << gridcast::cli::usage();
    return args.empty() ? 1 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    for (const gridcast::cli::Command& c : gridcast::cli::commands()) {
      if (command != c.name && (c.alias == nullptr || command != c.alias))
        continue;
      if (args.empty() && not c.runs_without_arguments) {
        // A command that needs its inputs, given none: its whole help (to stderr), not one missing option.
        std::streambuf* out = std::cout.rdbuf(std::cerr.rdbuf());
        c.run({"--help"});
        std::cout.rdbuf(out);
        return 1;
      }
      return c.run(args);
    }
    std::cerr << "gridcast: unknown command '" << command << "'\n" << gridcast::cli::usage();
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
