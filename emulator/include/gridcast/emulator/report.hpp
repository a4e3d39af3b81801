// Outputs of a run: prediction.json and the console summary.
#pragma once

#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace gridcast::emulator {

struct InputDigest {
  std::string role;  ///< "trace", "platform", "hostfile"
  std::string path;
  std::string sha1;
  /// A TIT index whose relative entries were found in the working directory, not beside it: "working
  /// directory" (written to prediction.json only then).
  std::string paths_relative_to = {};
};

struct RunDescription {
  std::string command;  ///< "replay"
  std::vector<InputDigest> inputs;
  const ReplayOptions* options = nullptr;
  /// Predictions from a trace model: what it expresses exactly and how far it extrapolates
  /// (prediction.json "model_quality"); nullptr for replays of recorded traces.
  const models::trace::ModelQuality* model_quality = nullptr;
};

/// Writes prediction.json (deterministic: fixed key order, fixed number formatting).
void write_prediction(const std::filesystem::path& file, const ReplayResult& result, const RunDescription& run);
/// "makespan: X s" and a short breakdown.
void print_summary(std::ostream& out, const ReplayResult& result);

/// Writes analysis.json (`--analysis`): the run's wait states, every (rank, function, kind) that waited,
/// the longest first. Deterministic, as prediction.json.
void write_analysis(const std::filesystem::path& file, const ReplayResult& result, const RunDescription& run);
/// The wait states in a few lines: the total and its share of the ranks' time, each kind, the top
/// `top` (rank, function, kind).
void print_wait_states(std::ostream& out, const WaitStateReport& waits, std::size_t top = 5);
/// The critical path in a few lines: its length against `makespan_s`, the rank changes, the `top` ranks
/// and functions with their share of it.
void print_critical_path(std::ostream& out, const CriticalPath& path, double makespan_s, std::size_t top = 5);

}  // namespace gridcast::emulator
