// Command-line parsing shared by every `gridcast` subcommand, and the set-up that the emulating subcommands
// (replay, predict) share.
#pragma once

#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/emulator/report.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"

#include <boost/program_options.hpp>

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace gridcast::cli {

/// Parses `args` for `command` into `vm`, adding --help to `options`. With --help it prints
/// "usage: gridcast <synopsis>", the `description` paragraph when given, and the options, then returns
/// false (the caller exits 0). A bad command line is a UsageError naming `command` (exit 1).
bool parse(const std::string& command, const std::string& synopsis, const std::vector<std::string>& args,
           boost::program_options::options_description& options,
           const boost::program_options::positional_options_description& positional,
           boost::program_options::variables_map& vm, const std::string& description = {});

/// Where and how a run is emulated: the command-line options that `replay` and `predict` share.
struct RunTarget {
  std::string platform;  ///< SimGrid platform XML
  std::string hostfile;  ///< empty: placement by ranks_per_host
  int ranks_per_host = 0;  ///< 0: not given (one rank per host)
  std::uint64_t seed = 0;
  std::string out;  ///< output directory; empty: print only
  bool timeline  = true;
  std::string timeline_format = "json";  ///< json (timeline.json) or perfetto (timeline.pftrace)
};

/// The replay options of `target` (before any --cfg setting is applied).
emulator::ReplayOptions replay_options(const RunTarget& target);

/// Creates the output directory of `target` if one is given; returns where the timeline goes (timeline.json,
/// or timeline.pftrace for --timeline-format perfetto; empty when there is no output directory or the
/// timeline is off).
std::filesystem::path prepare_output(const RunTarget& target);

/// The console line saying whose rules chose the collectives' algorithms and why (the selector's
/// auto default follows the input): printed after the summary of a run that had collectives.
void print_coll_selector(std::ostream& out, const emulator::ReplayOptions& options, const emulator::ReplayResult& result);

/// Warnings about the run itself (sends never received), to stderr after the summary.
void print_run_warnings(std::ostream& err, const std::string& command, const emulator::ReplayResult& result);

/// The analyses named by --analysis (comma-separated): `waits` sets ReplayOptions::wait_states,
/// `critical-path` sets critical_path (and wait_states, which it follows). Any other name is a UsageError
/// naming it and `command`.
void apply_analysis(const std::string& spec, emulator::ReplayOptions& options, const std::string& command);

/// After a run with --analysis: the console summary, and analysis.json in `out` when given.
/// `announce`: say where analysis.json was written (not for --what-if's temporary folders).
void report_analysis(const emulator::ReplayResult& result, const emulator::RunDescription& run, const std::string& out,
                     bool announce = true);

/// Adds the platform and the hostfile (when given) with their digests to the inputs of prediction.json.
void add_target_inputs(emulator::RunDescription& run, const RunTarget& target);

/// Where the target (nw, np) lies outside the Nw or Np range of the model's training points, and how far;
/// and where it leans on an input-sensitive phase tested on few sizes (sampling::input_phase_warnings):
/// one warning each, which predict, synth and phases print.
std::vector<std::string> model_range_warnings(const models::trace::TraceModel& model, double nw, int np);

/// The profile encoding named on the command line (--to, --encoding): jsonl (or json), binary (or gct); any
/// other name is a UsageError naming `command`.
models::TraceEncoding encoding_from(const std::string& name, const std::string& command);

/// Above this many ranks timeline.json draws the first kTimelineDetailRanks call by call and the others as
/// one summary slice each, unless --timeline-ranks says otherwise: a full timeline of 4,096 ranks of the
/// bundled stencil is 266 MB, more than a viewer opens.
inline constexpr int kTimelineAllRanks = 1024;
inline constexpr int kTimelineDetailRanks = 16;
/// The help text of --tables (replay and predict).
inline constexpr const char* kTablesHelp =
    "where prediction.json's per-rank and per-link tables go: json (in it), csv (ranks.csv and links.csv "
    "beside it, with summaries in prediction.json: the slowest ranks, the busiest links, min/mean/max), or "
    "auto (csv above 16384 ranks)";

/// The help text of --timeline-format (replay and predict).
inline constexpr const char* kTimelineFormatHelp =
    "json: timeline.json, Chrome's trace events (Perfetto and chrome://tracing open it); perfetto: "
    "timeline.pftrace, Perfetto's protobuf format (ui.perfetto.dev opens it), about half the bytes";
/// --timeline-format `format` checked: json or perfetto, else a UsageError naming `command`.
std::string timeline_format(const std::string& format, const std::string& command);

/// --timeline-format and --timeline-ranks change only a timeline that is written: given (not defaulted) with
/// --no-timeline or without --out, each is a UsageError naming the option and `command`, never ignored.
void refuse_idle_timeline_options(bool format_given, bool ranks_given, bool no_timeline, bool has_out,
                                  const std::string& command);

/// The help text of --timeline-ranks (replay and predict).
inline constexpr const char* kTimelineRanksHelp =
    "ranks timeline.json draws call by call: all, auto (all up to 1024 ranks, ranks 0-15 above), or a list of "
    "ranks and ranges such as 0-15,1024; the others get one summary slice each (calls, compute, communication "
    "and wait seconds)";
/// ReplayOptions::timeline_ranks from --timeline-ranks `spec` for `np` ranks (empty: every rank). A rank
/// outside 0..np-1 or a malformed list is a UsageError naming `command`; `auto` above kTimelineAllRanks
/// prints a note on stderr saying what it left out.
std::vector<bool> timeline_ranks(const std::string& spec, int np, const std::string& command, bool timeline_on);
/// --np of synth and predict: at least 1 and at most models::kMaxRanks (a UsageError naming `command`).
void check_target_np(int np, const std::string& command);

/// 10^11: more calls than this, all ranks together, is taken for a model extrapolated far past its training
/// (10^12 iterations of a loop) rather than a run to emulate (it would take the emulator about a day).
inline constexpr std::uint64_t kDefaultMaxCalls = 100'000'000'000;

/// Refuses a synthesized run of more than `max_calls` calls (InputError naming the model file, the target
/// and --max-calls) before any is emulated or written.
void check_call_count(std::uint64_t total_calls, std::uint64_t max_calls, const std::string& model_file, double nw,
                      int np);

}  // namespace gridcast::cli
