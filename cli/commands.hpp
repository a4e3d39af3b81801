// The subcommands of the `gridcast` program, one file each (cmd_<name>.cpp), and the table main() dispatches
// from and prints the usage of. Each returns the process exit code and throws InputError / InternalError
// for main() to report.
#pragma once

#include "gridcast/models/profile.hpp"

#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace gridcast::cli {

int run_replay(const std::vector<std::string>& args);      // cmd_replay.cpp
int run_convert(const std::vector<std::string>& args);     // cmd_convert.cpp
int run_import(const std::vector<std::string>& args);      // cmd_import.cpp
int run_algorithms(const std::vector<std::string>& args);  // cmd_algorithms.cpp
int run_fit(const std::vector<std::string>& args);         // cmd_fit.cpp
int run_synth(const std::vector<std::string>& args);       // cmd_synth.cpp
int run_predict(const std::vector<std::string>& args);     // cmd_predict.cpp
int run_phases(const std::vector<std::string>& args);      // cmd_phases.cpp
int run_calibrate(const std::vector<std::string>& args);   // cmd_calibrate.cpp
int run_platform(const std::vector<std::string>& args);    // cmd_platform.cpp
int run_profile(const std::vector<std::string>& args);     // cmd_profile.cpp
/// `gridcast import hook RAW_DIR`: the hook's raw files of a run gridcast did not launch (the hook linked
/// into a program under SMPI, scripts/smpi-hook.sh) converted into `out`, as `profile` does after its run.
/// Exit status 1 when a rank did not reach MPI_Finalize or its records were cut short.
struct HookImport {
  std::filesystem::path raw_dir, out;
  double nw = 0;
  double host_speed_flops = 0;  ///< the recording host's speed: the hook's compute bursts are in seconds
  std::string host_name;
  models::TraceEncoding encoding{};
  bool force = false;
};
int import_hook_raw(const HookImport& request);              // cmd_profile.cpp
int run_gpu_cache(const std::vector<std::string>& args);   // cmd_gpu_cache.cpp
int run_diff(const std::vector<std::string>& args);        // cmd_diff.cpp
int run_study(const std::vector<std::string>& args);       // cmd_study.cpp
int run_version(const std::vector<std::string>& args);     // cmd_version.cpp

/// One subcommand: its name, the line `gridcast --help` prints for it and the function that runs it.
struct Command {
  const char* name;
  const char* help;  ///< one line, no trailing newline
  int (*run)(const std::vector<std::string>& args);
  const char* alias = nullptr;  ///< another name that runs it (`--version`), not listed
  bool runs_without_arguments = false;  ///< false: given no arguments, it prints its help and exits 1
};

/// Every subcommand, in the order of the usage text.
std::span<const Command> commands();

/// The usage text of `gridcast --help`, generated from commands().
std::string usage();

/// Thrown for a bad command line; main() prints the message and the usage hint (exit 1).
struct UsageError {
  std::string message;
  std::string command;  ///< subcommand whose --help to suggest
};

}  // namespace gridcast::cli
