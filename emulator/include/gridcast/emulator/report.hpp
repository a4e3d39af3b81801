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

/// Where prediction.json's per-rank and per-link tables go. A run of many ranks makes them tens of megabytes
/// (about 140 bytes a rank, twice that for the links): beside it as ranks.csv and links.csv, with summaries
/// in prediction.json (docs/reference/outputs.md, "Tables of many ranks").
enum class Tables { Auto, Json, Csv };
/// Tables::Auto writes the CSV files above this many ranks.
inline constexpr std::size_t kRanksInJson = 16384;
/// The slowest ranks and busiest links a summary lists in full.
inline constexpr std::size_t kSummaryRows = 16;

struct RunDescription {
  std::string command;  ///< "replay"
  std::vector<InputDigest> inputs;
  const ReplayOptions* options = nullptr;
  /// Predictions from a trace model: what it expresses exactly and how far it extrapolates
  /// (prediction.json "model_quality"); nullptr for replays of recorded traces.
  const models::trace::ModelQuality* model_quality = nullptr;
  Tables tables = Tables::Auto;
};

/// Whether `tables` puts a run of `ranks` ranks' tables into ranks.csv and links.csv.
inline bool tables_in_csv(Tables tables, std::size_t ranks)
{
  return tables == Tables::Csv || (tables == Tables::Auto && ranks > kRanksInJson);
}

/// --tables of replay and predict: auto, json or csv; anything else is an InputError naming `option`.
Tables parse_tables(const std::string& text, const std::string& option);

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
