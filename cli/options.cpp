// Command-line parsing shared by every `gridcast` subcommand, and the set-up the emulating subcommands share.
#include "commands.hpp"
#include "options.hpp"
#include "run_args.hpp"

#include "gridcast/foundation/digest.hpp"
#include "gridcast/emulator/report.hpp"
#include "gridcast/emulator/timeline.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/sampling.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

namespace po = boost::program_options;

namespace gridcast::cli {

bool parse(const std::string& command, const std::string& synopsis, const std::vector<std::string>& args,
           po::options_description& options, const po::positional_options_description& positional,
           po::variables_map& vm, const std::string& description)
{
  options.add_options()("help,h", "show this help");
  try {
    // No abbreviations: `--what` must not stand for --what-if (a --what-if run hands its other arguments
    // to the run without the changes, and would miss an abbreviation of its own option), and a typo
    // should not silently name another option.
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(options).positional(positional).style(style).run(), vm);
    if (vm.count("help") > 0) {
      std::cout << "usage: gridcast " << synopsis << "\n\n";
      if (not description.empty())
        std::cout << description << "\n\n";
      std::cout << options << '\n';
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError{e.what(), command};
  }
  return true;
}

emulator::ReplayOptions replay_options(const RunTarget& target)
{
  emulator::ReplayOptions opts;
  opts.platform                 = target.platform;
  opts.placement.hostfile       = target.hostfile;
  opts.placement.ranks_per_host = target.ranks_per_host > 0 ? target.ranks_per_host : 1;
  opts.seed                     = target.seed;
  opts.out_dir                  = target.out;
  opts.timeline                 = target.timeline;
  return opts;
}

std::filesystem::path prepare_output(const RunTarget& target)
{
  if (target.out.empty())
    return {};
  std::error_code ec;
  std::filesystem::create_directories(target.out, ec);
  if (ec)
    throw InputError({target.out, 0, {}, -1}, "cannot create the output directory: " + ec.message());
  if (not target.timeline)
    return {};
  return std::filesystem::path(target.out) /
         (target.timeline_format == "perfetto" ? std::string("timeline") + emulator::TimelineWriter::kPerfettoExtension
                                               : std::string("timeline.json"));
}

void print_coll_selector(std::ostream& out, const emulator::ReplayOptions& options, const emulator::ReplayResult& result)
{
  if (result.collectives.empty())
    return;
  out << "  collectives: algorithms of the " << emulator::collective_selector_name(options.coll_selector)
      << " selector (" << options.coll_selector_why << ")\n";
}

void print_run_warnings(std::ostream& err, const std::string& command, const emulator::ReplayResult& result)
{
  if (result.unmatched_sends > 0)
    err << "gridcast " << command << ": warning: " << result.unmatched_sends
        << " send(s) never received by the end of the run (first: " << result.first_unmatched_send
        << "); they cost their sender only, as eager sends do\n";
}

void add_target_inputs(emulator::RunDescription& run, const RunTarget& target)
{
  run.inputs.push_back({"platform", target.platform, digest_file(target.platform)});
  if (not target.hostfile.empty())
    run.inputs.push_back({"hostfile", target.hostfile, digest_file(target.hostfile)});
}

models::TraceEncoding encoding_from(const std::string& name, const std::string& command)
{
  if (name == "jsonl" || name == "json")
    return models::TraceEncoding::JsonLines;
  if (name == "binary" || name == "gct")
    return models::TraceEncoding::Binary;
  throw UsageError{"--to/--encoding must be jsonl or binary, not '" + name + "'", command};
}

std::vector<std::string> model_range_warnings(const models::trace::TraceModel& model, double nw, int np)
{
  auto number = [](double v) {
    std::ostringstream o;
    o << std::setprecision(6) << v;
    return o.str();
  };
  std::vector<std::string> out;
  if (model.training.empty())
    return out;
  double nw_lo = model.training[0].nw, nw_hi = nw_lo;
  int np_lo = model.training[0].np, np_hi = np_lo;
  for (const auto& t : model.training) {
    nw_lo = std::min(nw_lo, t.nw);
    nw_hi = std::max(nw_hi, t.nw);
    np_lo = std::min(np_lo, t.np);
    np_hi = std::max(np_hi, t.np);
  }
  auto check = [&](const char* name, double v, double lo, double hi) {
    if (v >= lo && v <= hi)
      return;
    std::string how = v > hi ? number(v / hi) + "x the largest (" + number(hi) + ")"
                             : number(lo / std::max(v, 1e-300)) + "x below the smallest (" + number(lo) + ")";
    out.push_back(std::string(name) + " " + number(v) + " is outside the fitted range " + number(lo) + "-" +
                  number(hi) + ": " + how + "; the model extrapolates");
  };
  check("Nw", nw, nw_lo, nw_hi);
  check("Np", np, np_lo, np_hi);
  for (std::string& w : models::sampling::input_phase_warnings(model, nw))
    out.push_back(std::move(w));
  return out;
}

void apply_analysis(const std::string& spec, emulator::ReplayOptions& options, const std::string& command)
{
  std::size_t from = 0;
  while (from <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', from), spec.size());
    const std::string name  = spec.substr(from, comma - from);
    if (name == "waits")
      options.wait_states = true;
    else if (name == "critical-path")
      options.wait_states = options.critical_path = true;
    else
      throw UsageError{"--analysis: unknown analysis '" + name + "' in '" + spec + "' (known: waits, critical-path)",
                       command};
    from = comma + 1;
  }
}

void report_analysis(const emulator::ReplayResult& result, const emulator::RunDescription& run, const std::string& out,
                     bool announce)
{
  if (not result.wait_states)
    return;
  emulator::print_wait_states(std::cout, *result.wait_states);
  if (result.wait_states->critical_path)
    emulator::print_critical_path(std::cout, *result.wait_states->critical_path, result.makespan_s);
  if (out.empty())
    return;
  const std::filesystem::path file = std::filesystem::path(out) / "analysis.json";
  emulator::write_analysis(file, result, run);
  if (announce)
    std::cout << "wrote " << file.string() << '\n';
}

void add_output_options(boost::program_options::options_description& options, RunArgs& args)
{
  namespace po = boost::program_options;
  options.add_options()
    ("no-timeline", "do not write timeline.json")
    ("timeline-ranks", po::value(&args.timeline_ranks_spec)->default_value("auto"), kTimelineRanksHelp)
    ("timeline-format", po::value(&args.timeline_format_name)->default_value("json"), kTimelineFormatHelp)
    ("tables", po::value(&args.tables_spec)->default_value("auto"), kTablesHelp);
}

std::string timeline_format(const std::string& format, const std::string& command)
{
  if (format != "json" && format != "perfetto")
    throw UsageError{"--timeline-format " + format + ": expected json or perfetto", command};
  return format;
}

void refuse_idle_timeline_options(bool format_given, bool ranks_given, bool no_timeline, bool has_out,
                                  const std::string& command)
{
  if (not format_given && not ranks_given)
    return;
  const std::string option = format_given ? "--timeline-format" : "--timeline-ranks";
  if (no_timeline)
    throw UsageError{option + " changes the timeline, which --no-timeline turns off: give one of them", command};
  if (not has_out)
    throw UsageError{option + " changes the timeline, which is written only with --out DIR", command};
}

std::vector<bool> timeline_ranks(const std::string& spec, int np, const std::string& command, bool timeline_on)
{
  if (spec == "all")
    return {};
  std::vector<bool> detail(static_cast<std::size_t>(std::max(np, 0)), false);
  if (spec == "auto") {
    if (np <= kTimelineAllRanks)
      return {};
    std::fill_n(detail.begin(), kTimelineDetailRanks, true);
    if (timeline_on)
      std::cerr << "gridcast " << command << ": note: timeline.json draws ranks 0-" << kTimelineDetailRanks - 1
                << " of " << np << " call by call and the others as one summary slice each (above "
                << kTimelineAllRanks << " ranks; --timeline-ranks all draws every rank)\n";
    return detail;
  }
  auto bad = [&](const std::string& why) {
    return UsageError{"--timeline-ranks " + spec + ": " + why + " (expected all, auto, or ranks and ranges such as 0-15,1024)",
                      command};
  };
  auto rank_of = [&](const std::string& text) {
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
      throw bad("'" + text + "' is not a rank");
    const int r = std::stoi(text);
    if (r >= np)
      throw bad("rank " + text + " is outside the run's " + std::to_string(np) + " ranks");
    return r;
  };
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t end = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, end - start);
    const std::size_t dash = item.find('-');
    const int first = rank_of(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : rank_of(item.substr(dash + 1));
    if (last < first)
      throw bad("range " + item + " runs backwards");
    std::fill(detail.begin() + first, detail.begin() + last + 1, true);
    start = end + 1;
  }
  return detail;
}

void check_target_np(int np, const std::string& command)
{
  if (np < 1)
    throw UsageError{"--np must be at least 1", command};
  if (np > models::kMaxRanks)
    throw UsageError{"--np must be at most " + std::to_string(models::kMaxRanks) + " (the most ranks gridcast emulates)",
                     command};
}

void check_call_count(std::uint64_t total_calls, std::uint64_t max_calls, const std::string& model_file, double nw,
                      int np)
{
  if (total_calls <= max_calls)
    return;
  std::ostringstream nw_text;
  nw_text << nw;
  const std::string calls = total_calls == std::numeric_limits<std::uint64_t>::max()
                                ? "more than 1.8e19"
                                : std::to_string(total_calls);
  throw InputError({model_file, 0, {}, -1},
                   "at Nw " + nw_text.str() + ", Np " + std::to_string(np) + " the model gives " + calls +
                       " calls (all ranks together), more than the limit of " + std::to_string(max_calls) +
                       ": are Nw and Np right? --max-calls N raises the limit");
}

}  // namespace gridcast::cli
