// The subcommands of the `gridcast` program. Each returns the process exit code and throws
// InputError / InternalError for main() to report.
#pragma once

#include <string>
#include <vector>

namespace gridcast::cli {

int run_replay(const std::vector<std::string>& args);
int run_convert(const std::vector<std::string>& args);
int run_import(const std::vector<std::string>& args);
int run_algorithms(const std::vector<std::string>& args);
int run_fit(const std::vector<std::string>& args);    // cmd_fit.cpp
int run_synth(const std::vector<std::string>& args);  // cmd_synth.cpp
int run_predict(const std::vector<std::string>& args);  // cmd_predict.cpp
int run_calibrate(const std::vector<std::string>& args);  // cmd_calibrate.cpp
int run_platform(const std::vector<std::string>& args);  // cmd_platform.cpp
int run_profile(const std::vector<std::string>& args);  // cmd_profile.cpp

/// Thrown for a bad command line; main() prints the message and the usage hint (exit 1).
struct UsageError {
  std::string message;
  std::string command;  ///< subcommand whose --help to suggest
};

}  // namespace gridcast::cli
