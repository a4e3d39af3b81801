// `gridcast predict`: from a fitted model (trace + latency) to a predicted run at a new (Nw, Np), in one
// streaming pass: every rank's calls are synthesized one at a time straight into the emulator, never
// written to files. See docs/reference/latency-model.md.
#include "commands.hpp"
#include "gpu_model.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "run_args.hpp"
#include "sampling.hpp"
#include "what_if.hpp"

#include "gridcast/foundation/digest.hpp"
#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/emulator/report.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

namespace po = boost::program_options;

namespace gridcast::cli {

namespace {

/// What the model put into the run, per function (all ranks).
struct FunctionTotals {
  std::uint64_t calls = 0;
  double flops = 0;        ///< compute work (latency model) and reduction work
  double bytes = 0;        ///< bytes sent, v-collective counts included
};

/// Per-rank stream wrapper: counts what the model emits (per function, merged when the stream ends) and
/// ticks the progress report.
class CountingStream final : public models::ForwardingStream {
public:
  CountingStream(models::CallStreamPtr inner, std::map<std::string, FunctionTotals>& totals, Progress& progress)
      : ForwardingStream(std::move(inner)), totals_(totals), progress_(progress)
  {
  }
  ~CountingStream() override { flush(); }
  bool next(models::CallRecord& out) override
  {
    if (not inner_->next(out)) {
      flush();
      return false;
    }
    if (out.function >= local_.size())
      local_.resize(out.function + 1);
    FunctionTotals& t = local_[out.function];
    ++t.calls;
    t.flops += out.flops;
    double b = static_cast<double>(out.bytes);
    for (std::uint64_t c : out.counts)
      b += static_cast<double>(c);
    t.bytes += b;
    progress_.tick();
    return true;
  }

private:
  void flush()
  {
    for (std::size_t id = 0; id < local_.size(); ++id) {
      if (local_[id].calls == 0)
        continue;
      FunctionTotals& t = totals_[inner_->functions().name(static_cast<std::uint32_t>(id))];
      t.calls += local_[id].calls;
      t.flops += local_[id].flops;
      t.bytes += local_[id].bytes;
    }
    local_.clear();
  }
  std::map<std::string, FunctionTotals>& totals_;
  Progress& progress_;
  std::vector<FunctionTotals> local_;
};

class CountingSource final : public models::TraceSource {
public:
  CountingSource(const models::trace::SynthSource& inner, std::map<std::string, FunctionTotals>& totals,
                 Progress& progress)
      : inner_(inner), totals_(totals), progress_(progress)
  {
  }
  int rank_count() const override { return inner_.rank_count(); }
  SteadyLoop steady_loop() const override { return inner_.steady_loop(); }
  models::CallStreamPtr open(int rank) const override
  {
    return std::make_unique<CountingStream>(inner_.open(rank), totals_, progress_);
  }

private:
  const models::trace::SynthSource& inner_;
  std::map<std::string, FunctionTotals>& totals_;
  Progress& progress_;
};

std::string number(double v)
{
  std::ostringstream o;
  o << std::setprecision(6) << v;
  return o.str();
}

}  // namespace


/// What the collective selector's default follows: the MPI library the model's training profiles were
/// recorded with ("SMPI" for imported SMPI traces), and a conflict where they disagree.
emulator::SelectorEvidence selector_evidence(const models::trace::TraceModel& model)
{
  emulator::SelectorEvidence e;
  if (model.training.empty())
    return e;
  const models::trace::TrainingPoint& first = model.training.front();
  e.mpi_library = first.mpi_library;
  for (const models::trace::TrainingPoint& p : model.training)
    if (p.mpi_library != e.mpi_library) {
      e.conflict = "the training profiles " + first.profile + " and " + p.profile + " were recorded with different MPI "
                   "libraries ('" + e.mpi_library + "', '" + p.mpi_library + "')";
      break;
    }
  return e;
}

/// The fast-forward line of the console summary, when iterations were skipped.
void print_fast_forward(const emulator::ReplayResult& result)
{
  if (not result.fast_forward || not result.fast_forward->applied)
    return;
  const emulator::FastForwardReport& f = *result.fast_forward;
  std::cout << "fast-forward: iterations " << f.skip_from << "-" << f.skip_from + f.skipped - 1 << " of "
            << f.loop_iterations << " skipped on every rank (" << f.loop_iterations - f.skipped
            << " emulated), mean period " << number(f.period_mean_s) << " s, stable within "
            << number(100 * f.options.tolerance) << "% over " << f.options.window
            << " iterations; --fast-forward off emulates them all\n";
}

/// contribution.json: what the model predicted per function (calls, flops, bytes) beside what the
/// emulation made of it, and which latency model priced it.
void write_contribution(const std::filesystem::path& file, const models::trace::SynthTarget& target,
                        const models::trace::SynthOptions& synth_options, const std::vector<std::string>& warnings,
                        const std::map<std::string, FunctionTotals>& totals, const emulator::ReplayResult& result,
                        const models::trace::TraceModel& model)
{
  using ojson = nlohmann::ordered_json;
  ojson c;
  c["format"]         = "gridcast-model-contribution";
  c["format_version"] = 1;
  c["target"]         = ojson{{"nw", target.nw}, {"np", target.np}};
  c["variability"]    = synth_options.variability;
  c["seed"]           = synth_options.seed;
  c["warnings"]       = warnings;
  ojson fns           = ojson::array();
  for (const auto& [name, t] : totals) {
    auto sim = result.functions.find(name);
    const models::trace::FunctionLatency* lat = model.latency_of(name);
    ojson f;
    f["name"]        = name;
    f["calls"]       = t.calls;
    f["flops"]       = t.flops;
    f["bytes"]       = t.bytes;
    f["simulated_s"] = sim == result.functions.end() ? 0.0 : sim->second.seconds;
    f["latency_model"] = lat == nullptr ? ojson(nullptr)
                                        : ojson{{"forest", lat->ratio.has_value()},
                                                {"train_error", lat->train_error},
                                                {"cv_error", lat->cv_error ? ojson(*lat->cv_error) : ojson(nullptr)}};
    fns.push_back(f);
  }
  c["functions"] = fns;
  write_file_atomically(file, c.dump(2) + "\n", "the model's contribution");
}

namespace {

/// `gridcast predict`'s command line.
struct PredictArgs : RunArgs {
  std::string model_file, variability = "off", fast_forward = "auto";
  emulator::FastForwardOptions ff;
  double nw = -1;
  int np = 0;
  std::uint64_t max_calls = kDefaultMaxCalls;
};

void add_predict_options(po::options_description& options, PredictArgs& a)
{
  options.add_options()
    ("model", po::value(&a.model_file)->required(), "model.json written by `gridcast fit` (trace and latency model)")
    ("nw", po::value(&a.nw)->required(), "target workload size (the nw of run.json at the training points)")
    ("np", po::value(&a.np)->required(), "target number of ranks")
    ("max-calls", po::value(&a.max_calls)->default_value(a.max_calls),
     "refuse a run of more calls than this, all ranks together (a model extrapolated far past its training)")
    ("platform,p", po::value(&a.platform)->required(), "SimGrid platform XML of the target machine")
    ("hostfile", po::value(&a.hostfile), "rank i runs on line i of this file (smpirun syntax, name[:slots]), cyclically")
    ("ranks-per-host", po::value(&a.ranks_per_host),
     "place K consecutive ranks per host, hosts in natural name order (default 1); the platform must have "
     "enough hosts")
    ("out,o", po::value(&a.out), "write prediction.json, timeline.json and contribution.json into this directory");
  add_output_options(options, a);
  options.add_options()
    ("analysis", po::value(&a.analysis),
     "comma-separated analyses of the run, as for replay: waits, critical-path (every iteration is emulated: "
     "fast-forward is off unless asked for, which is refused; docs/guides/wait-states.md)")
    ("what-if", po::value(&a.what_if_exprs)->composing(), kWhatIfHelp)
    ("seed", po::value(&a.seed)->default_value(0),
     "seed of every random choice: with --variability on, the compute calls drawn from each function's "
     "distribution (several seeds give a spread of makespans)")
    ("variability", po::value(&a.variability)->default_value("off"),
     "on: scatter every compute call around its predicted work by its function's empirical distribution "
     "(irregular histogram fitted by `gridcast fit`); off: the predicted work itself")
    ("fast-forward", po::value(&a.fast_forward)->default_value("auto"),
     "auto: once the time per iteration of the model's steady loop (the outermost loop with the most calls) "
     "is stable on every rank, skip the same middle iterations on every rank and advance each rank's clock by "
     "the skipped calls' compute work plus the window's mean communication and waiting per iteration (the "
     "last iterations and what follows are emulated); off: emulate every iteration (the exact answer). "
     "prediction.json says what was skipped, or why nothing was (docs/reference/emulator.md)")
    ("ff-tolerance", po::value(&a.ff.tolerance)->default_value(a.ff.tolerance),
     "fast-forward: the largest relative difference between one period of the window and the window's mean")
    ("ff-window", po::value(&a.ff.window)->default_value(a.ff.window),
     "fast-forward: periods (loop head to loop head, in simulated time) that must agree on every rank; "
     "doubled when the loop's compute is drawn at random (--variability on)")
    ("ff-warmup", po::value(&a.ff.warmup)->default_value(a.ff.warmup),
     "fast-forward: first periods never used in a window")
    ("ff-tail", po::value(&a.ff.tail)->default_value(a.ff.tail),
     "fast-forward: last iterations of the loop always emulated (at least 1)")
    ("ff-min-iterations", po::value(&a.ff.min_iterations)->default_value(a.ff.min_iterations),
     "fast-forward: loops with fewer iterations are emulated in full")
    ("cfg", po::value(&a.cfg)->composing(),
     "name:value setting, repeatable, as for replay: gridcast/eager-threshold:BYTES, gridcast/test-cost:SECONDS, "
     "gridcast/iprobe-cost:SECONDS, gridcast/coll/<op>:<algorithm>, gridcast/coll-selector:auto|mpich|smpi|openmpi-4.1, "
     "gridcast/coll-local-copy:auto|on|off (`gridcast algorithms` lists every gridcast key); any other name goes "
     "to SimGrid");
  add_gpu_model_options(options, a.gpu_model);
  add_sampling_options(options, a.sampling_args);
}

/// The checks of predict's options that the parser cannot make; sets the fast-forward mode.
void check_predict_args(PredictArgs& a)
{
  if (not a.hostfile.empty() && a.ranks_per_host > 0)
    throw UsageError{"--hostfile and --ranks-per-host exclude each other", "predict"};
  check_target_np(a.np, "predict");
  if (not(a.nw >= 0) || not std::isfinite(a.nw))
    throw UsageError{"--nw must be a finite number >= 0", "predict"};
  if (a.variability != "on" && a.variability != "off")
    throw UsageError{"--variability must be on or off, not '" + a.variability + "'", "predict"};
  if (a.fast_forward != "auto" && a.fast_forward != "off")
    throw UsageError{"--fast-forward must be auto or off, not '" + a.fast_forward + "'", "predict"};
  if (not(a.ff.tolerance >= 0) || not std::isfinite(a.ff.tolerance))
    throw UsageError{"--ff-tolerance must be a finite number >= 0", "predict"};
  if (a.ff.window < 1)
    throw UsageError{"--ff-window must be at least 1", "predict"};
  if (a.ff.warmup < 0)
    throw UsageError{"--ff-warmup must be at least 0", "predict"};
  if (a.ff.tail < 1)
    throw UsageError{"--ff-tail must be at least 1", "predict"};
  a.ff.mode = a.fast_forward == "auto" ? emulator::FastForwardOptions::Mode::Auto : emulator::FastForwardOptions::Mode::Off;
}

/// prediction.json, the tables, contribution.json, and the line that names them.
void write_predict_outputs(const PredictArgs& a, const RunTarget& target, const emulator::ReplayOptions& opts,
                           const emulator::Tables tables, const models::trace::SynthSource& synth,
                           const models::trace::SynthOptions& synth_options, const std::vector<std::string>& warnings,
                           const std::map<std::string, FunctionTotals>& totals, const emulator::ReplayResult& result,
                           const models::trace::TraceModel& model, const std::filesystem::path& timeline_path,
                           bool announce)
{
  emulator::RunDescription run;
  run.command = "predict";
  run.options       = &opts;
  run.model_quality = &synth.quality();
  run.tables        = tables;
  run.inputs.push_back({"model", a.model_file, digest_file(a.model_file)});
  add_target_inputs(run, target);
  add_gpu_model_inputs(run, a.gpu_model);
  const std::filesystem::path dir(a.out);
  emulator::write_prediction(dir / "prediction.json", result, run);

  write_contribution(dir / "contribution.json", {a.nw, a.np}, synth_options, warnings, totals, result, model);
  if (announce) {
    std::cout << "wrote " << (dir / "prediction.json").string();
    if (emulator::tables_in_csv(tables, result.ranks.size()))
      std::cout << ", " << (dir / "ranks.csv").string() << ", " << (dir / "links.csv").string();
    if (not timeline_path.empty())
      std::cout << ", " << timeline_path.string();
    std::cout << " and " << (dir / "contribution.json").string() << '\n';
  }
}

}  // namespace

int run_predict(const std::vector<std::string>& args)
{
  PredictArgs a;
  po::options_description options("predict options");
  add_predict_options(options, a);
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (not parse("predict",
                "predict model.json --nw X --np Y --platform P.xml [--hostfile F | --ranks-per-host K]\n"
                "       [--out DIR] [--seed S] [--variability on|off] [--fast-forward auto|off] [--ff-... N]\n"
                "       [--sample auto|N [--confidence C] [--margin M] [--sample-seed S]]\n"
                "       [--cfg name:value ...]",
                args, options, positional, vm,
                "Synthesizes every rank's calls at (Nw, Np) from the model (loop counts, sizes and peers from the\n"
                "trace model, compute work from the latency model) and emulates them on the platform in one\n"
                "streaming pass. Prints the predicted makespan; --out writes prediction.json and timeline.json\n"
                "(as `gridcast replay`) and contribution.json (what the model predicted, per function). Progress\n"
                "goes to stderr on long runs when it is a terminal, and a warning when Nw or Np is outside the fitted range.\n"
                "Long loops are fast-forwarded once stable (--fast-forward, docs/reference/emulator.md); a line says so.\n"
                "--sample emulates a stratified sample of the loop's iterations (where the loop gives too few, of the\n"
                "windows between collectives of every rank) instead and gives the makespan with a confidence\n"
                "interval (docs/reference/sampling.md).\n"
                "See docs/reference/latency-model.md."))
    return 0;
  check_predict_args(a);
  const std::optional<models::sampling::Request> sample_request = sampling_request(a.sampling_args, vm, a.seed, "predict");
  if (sample_request) {
    if (not vm["fast-forward"].defaulted() && a.fast_forward == "auto")
      throw UsageError{"--sample and --fast-forward auto each leave iterations out: give one", "predict"};
    a.ff.mode = emulator::FastForwardOptions::Mode::Off;
  }
  if (vm.count("ranks-per-host") > 0 && a.ranks_per_host < 1)
    throw UsageError{"--ranks-per-host must be at least 1", "predict"};

  auto model = std::make_shared<const models::trace::TraceModel>(models::trace::read_model(a.model_file));
  std::vector<std::string> warnings = model_range_warnings(*model, a.nw, a.np);
  for (const std::string& w : warnings)
    std::cerr << "gridcast predict: warning: " << w << '\n';

  refuse_idle_timeline_options(not vm["timeline-format"].defaulted(), not vm["timeline-ranks"].defaulted(),
                               vm.count("no-timeline") > 0, not a.out.empty(), "predict");
  WhatIf what_if = parse_what_if(a.what_if_exprs, "predict");
  std::optional<WhatIfRun> what_if_run;
  start_what_if(what_if, what_if_run, a.out, a.analysis);
  const bool announce = not(what_if_run && what_if_run->temporary());
  const RunTarget target{a.platform, a.hostfile, a.ranks_per_host, a.seed, a.out, vm.count("no-timeline") == 0 && announce,
                         timeline_format(a.timeline_format_name, "predict")};
  emulator::ReplayOptions opts = replay_options(target);
  opts.timeline_ranks = timeline_ranks(a.timeline_ranks_spec, a.np, "predict", target.timeline && not target.out.empty());
  const emulator::Tables tables = emulator::parse_tables(a.tables_spec, "--tables");
  opts.note = [](const std::string& n) { std::cerr << "gridcast predict: note: " << n << '\n'; };
  opts.what_if = what_if.expressions;
  opts.link_scales = what_if.links;
  for (const std::string& c : a.cfg)
    emulator::apply_cfg(opts, c);
  emulator::check_cfg_for_input(opts, false);
  apply_gpu_model(a.gpu_model, opts, "predict");
  emulator::resolve_coll_selector(opts, selector_evidence(*model));
  opts.recorded_host_speed_flops = 0;  // synthesized compute is in flops: the host's speed converts it
  if (vm.count("analysis") > 0 || what_if_run) {
    apply_analysis(a.analysis, opts, "predict");
    if (opts.wait_states && a.ff.mode == emulator::FastForwardOptions::Mode::Auto) {
      if (not vm["fast-forward"].defaulted())
        throw UsageError{"--analysis needs every iteration emulated, --fast-forward auto skips some: use "
                         "--fast-forward off, or leave it out",
                         "predict"};
      a.ff.mode = emulator::FastForwardOptions::Mode::Off;
      std::cerr << "gridcast predict: note: " << (what_if_run ? "--what-if" : "--analysis")
                << " emulates every iteration (fast-forward off)\n";
    }
  }
  opts.fast_forward              = a.ff;

  models::trace::SynthOptions synth_options;
  synth_options.variability = a.variability == "on";
  synth_options.seed        = a.seed;
  models::trace::SynthSource synth(model, {a.nw, a.np}, synth_options);
  models::trace::print_quality(std::cerr, synth.quality());
  std::map<std::string, FunctionTotals> totals;
  check_call_count(synth.total_calls(), a.max_calls, a.model_file, a.nw, a.np);
  // After the call-count check: reading the units walks every call once.
  emulator::SamplingReport sampling_report;
  models::sampling::Units sampling_units;
  if (sample_request) {
    sampling_units = models::sampling::choose_units(synth, 0, false);
    opts.sampling_plan = plan_sampling(sampling_units, *sample_request, sampling_report);
    if (not opts.sampling_plan)
      std::cerr << "gridcast predict: note: --sample: every iteration emulated: " << sampling_report.why_not << '\n';
  }
  Progress progress("predict", synth.total_calls());
  CountingSource counting(synth, totals, progress);
  std::unique_ptr<models::TraceSource> changed;
  if (what_if_run)
    changed = what_if_source(counting, what_if);
  // Units other than the steady loop's (windows between world collectives) are marked on the way.
  std::unique_ptr<models::TraceSource> marked;
  if (opts.sampling_plan)
    marked = models::sampling::unit_source(counting, sampling_units);
  const models::TraceSource& source = changed ? *changed : marked ? *marked : counting;

  const std::filesystem::path timeline_path = prepare_output(target);

  SampledEmulation run = emulate_sampled(sampling_units, sample_request, opts, sampling_report,
                                         [&] { return emulator::replay(source, opts, timeline_path); });
  if (run.exit_code)
    return *run.exit_code;  // auto's first pass ran in a child process, which finished the command
  emulator::ReplayResult& result = run.result;
  if (what_if_run)
    what_if_run->finish("predict", what_if, args, a.analysis);
  std::cout << "predicted at Nw " << number(a.nw) << ", Np " << a.np << " from " << a.model_file
            << (synth_options.variability ? " (variability on, seed " + std::to_string(a.seed) + ")" : "") << '\n';
  emulator::print_summary(std::cout, result);
  print_coll_selector(std::cout, opts, result);
  print_gpu_model(std::cout, opts, result);
  print_run_warnings(std::cerr, "predict", result);
  print_fast_forward(result);
  print_sampling(std::cout, result);

  if (not a.out.empty())
    write_predict_outputs(a, target, opts, tables, synth, synth_options, warnings, totals, result, *model,
                          timeline_path, announce);
  emulator::RunDescription analysis_run;
  analysis_run.command = "predict";
  report_analysis(result, analysis_run, a.out, announce);
  if (what_if_run)
    what_if_run->report(what_if);
  return 0;
}

}  // namespace gridcast::cli
