// Outputs of a run: prediction.json and the console summary.
#pragma once

#include "gridcast/emulator/replay.hpp"

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace gridcast::emulator {

struct InputDigest {
  std::string role;  ///< "trace", "platform", "hostfile"
  std::string path;
  std::string sha1;
};

/// SHA-1 of a file, or of every file of a profile directory / TIT index in order.
std::string digest_file(const std::filesystem::path& file);
std::string digest_files(const std::vector<std::filesystem::path>& files);

struct RunDescription {
  std::string command;  ///< "replay"
  std::vector<InputDigest> inputs;
  const ReplayOptions* options = nullptr;
};

/// Writes prediction.json (deterministic: fixed key order, fixed number formatting).
void write_prediction(const std::filesystem::path& file, const ReplayResult& result, const RunDescription& run);
/// "makespan: X s" and a short breakdown.
void print_summary(std::ostream& out, const ReplayResult& result);

}  // namespace gridcast::emulator
