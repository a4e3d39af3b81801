// `gridcast replay`: emulate a recorded trace (a profile directory or an SMPI TIT trace) on a platform.
#include "commands.hpp"
#include "gpu_model.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "sampling.hpp"
#include "what_if.hpp"

#include "gridcast/foundation/digest.hpp"
#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/emulator/report.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/tit.hpp"

#include <boost/program_options.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace po = boost::program_options;

namespace gridcast::cli {

namespace {

/// A trace given on the command line: a profile directory, or an SMPI TIT index / single file.
struct OpenedTrace {
  std::unique_ptr<models::TraceSource> source;
  std::vector<std::filesystem::path> files;  ///< every file it reads, for the input digest
  std::string path_base;  ///< what a TIT index's relative paths were resolved against (empty: n/a)
  bool tit = false;
  double recorded_speed_flops = 0;
  std::optional<models::RunInfo> info;
};

OpenedTrace open_trace(const std::filesystem::path& path, const models::TitReadOptions& read_options)
{
  OpenedTrace t;
  if (models::is_profile_dir(path)) {
    auto dir = std::make_unique<models::ProfileDir>(path);
    t.files.push_back(path / "run.json");
    for (int r = 0; r < dir->rank_count(); ++r)
      t.files.push_back(dir->rank_path(r));
    t.recorded_speed_flops = dir->info().host.speed_flops;
    t.info = dir->info();
    t.source = std::move(dir);
    return t;
  }
  if (not std::filesystem::exists(path))
    throw InputError({path.string(), 0, {}, -1}, "no such trace (expected a profile directory or a TIT trace)");
  if (std::filesystem::is_directory(path))
    throw InputError({path.string(), 0, {}, -1}, "directory without run.json: not a profile directory");
  auto tit    = std::make_unique<models::TitTrace>(path, std::filesystem::path{}, read_options);
  t.files     = tit->input_files();  // the index and every file it names
  t.path_base = std::string(models::tit_path_base_name(tit->path_base()));
  t.tit       = true;
  t.source    = std::move(tit);
  return t;
}

}  // namespace

/// A recorded rank's stream that reports how far it has read its file to the progress display.
class ProgressStream final : public models::ForwardingStream {
public:
  ProgressStream(models::CallStreamPtr inner, Progress& progress) : ForwardingStream(std::move(inner)), progress_(progress)
  {
    progress_.add_total_bytes(inner_->bytes_total());
  }
  bool next(models::CallRecord& out) override
  {
    if (not inner_->next(out)) {
      report();
      return false;
    }
    if ((++calls_ & 255) == 0)  // the reader's position every 256 calls: the share moves smoothly enough
      report();
    progress_.tick();
    return true;
  }

private:
  void report()
  {
    const std::uint64_t now = inner_->bytes_read();
    progress_.add_read_bytes(now - reported_);
    reported_ = now;
  }
  Progress& progress_;
  std::uint64_t calls_ = 0, reported_ = 0;
};

class ProgressSource final : public models::TraceSource {
public:
  ProgressSource(const models::TraceSource& inner, Progress& progress) : inner_(inner), progress_(progress) {}
  int rank_count() const override { return inner_.rank_count(); }
  SteadyLoop steady_loop() const override { return inner_.steady_loop(); }
  models::CallStreamPtr open(int rank) const override
  {
    return std::make_unique<ProgressStream>(inner_.open(rank), progress_);
  }

private:
  const models::TraceSource& inner_;
  Progress& progress_;
};

int run_replay(const std::vector<std::string>& args)
{
  std::string trace, platform, hostfile, out;
  int ranks_per_host = 0;
  int ranks_per_node = 0;
  std::string gpu_mpi = "hostcopy";
  std::uint64_t seed = 0;
  std::vector<std::string> cfg;
  std::string analysis;
  std::vector<std::string> what_if_exprs;
  std::string tables_spec;
  std::string timeline_ranks_spec, timeline_format_name;
  GpuModelArgs gpu_model;
  SamplingArgs sampling_args;
  po::options_description options("replay options");
  options.add_options()
    ("trace", po::value(&trace)->required(), "profile directory, or SMPI time-independent trace (index file or single file)")
    ("platform,p", po::value(&platform)->required(), "SimGrid platform XML")
    ("hostfile", po::value(&hostfile), "rank i runs on line i of this file (smpirun syntax, name[:slots]), cyclically")
    ("ranks-per-host", po::value(&ranks_per_host), "place K consecutive ranks per host, hosts in natural name order (default 1)")
    ("ranks-per-node", po::value(&ranks_per_node),
     "the same as --ranks-per-host on generated platforms (one CPU host per node); each rank drives the GPU at its "
     "index on the node (docs/guides/gpu.md)")
    ("gpu-mpi", po::value(&gpu_mpi)->default_value("hostcopy"),
     "MPI calls on device buffers (memory: device): hostcopy stages them through host memory (a copy each way, "
     "Khetawat et al., Table I costs), gpudirect lets the NIC read and write GPU memory (rendezvous only, pinning cost)")
    ("out,o", po::value(&out), "write prediction.json and timeline.json into this directory")
    ("no-timeline", "do not write timeline.json")
    ("timeline-ranks", po::value(&timeline_ranks_spec)->default_value("auto"), kTimelineRanksHelp)
    ("timeline-format", po::value(&timeline_format_name)->default_value("json"), kTimelineFormatHelp)
    ("tables", po::value(&tables_spec)->default_value("auto"), kTablesHelp)
    ("analysis", po::value(&analysis),
     "comma-separated analyses of the run: waits (wait states per rank, function and kind: late sender, late "
     "receiver, wait at N x N, wait at barrier, late broadcast, early reduce, early scan), critical-path (the "
     "chain of calls and waits that decides the end, per rank and function; includes waits): a summary, and "
     "analysis.json with --out (docs/guides/wait-states.md)")
    ("what-if", po::value(&what_if_exprs)->composing(), kWhatIfHelp)
    ("seed", po::value(&seed)->default_value(0), "seed of every random choice (reported in the outputs)")
    ("cfg", po::value(&cfg)->composing(),
     "name:value setting, repeatable. gridcast/eager-threshold:BYTES, gridcast/test-cost:SECONDS, "
     "gridcast/iprobe-cost:SECONDS, gridcast/coll/<op>:<algorithm>, gridcast/coll-selector:auto|mpich|smpi|openmpi-4.1, gridcast/coll-local-copy:auto|on|off, gridcast/gpu/<cost>:SECONDS, gridcast/gpu/nccl-algorithm:ring|tree and gridcast/gpu/pin-policy:cache|call "
     "(docs/guides/gpu.md; `gridcast algorithms` lists every gridcast key); smpi/... settings of smpirun are "
     "honoured with SMPI's meaning (smpi/simulate-computation, smpi/comp-adjustment-file, smpi/test, ...) or "
     "refused, never ignored (docs/reference/cfg.md); any other name goes to SimGrid (e.g. network/model:SMPI, "
     "tracing:yes). Collectives: the default selector (auto) takes the recorded run's: SMPI's for an SMPI "
     "trace (as smpirun -replay), Open MPI 4.1's for a profile recorded with Open MPI, MPICH's otherwise");
  add_gpu_model_options(options, gpu_model);
  add_sampling_options(options, sampling_args);
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map vm;
  if (not parse("replay", "replay TRACE --platform P.xml [--hostfile F | --ranks-per-host K | --ranks-per-node K] "
                          "[--gpu-mpi hostcopy|gpudirect] [--out DIR] [--seed S] [--cfg name:value ...]\n"
                          "       [--sample auto|N [--confidence C] [--margin M] [--sample-seed S]]",
                args, options, positional, vm))
    return 0;
  const std::optional<models::sampling::Request> sample_request = sampling_request(sampling_args, vm, seed, "replay");
  if (sample_request) {
    if (vm.count("analysis") > 0)
      throw UsageError{"--analysis needs every iteration emulated, --sample emulates some: give one", "replay"};
    if (not what_if_exprs.empty())
      throw UsageError{"--what-if analyses every iteration, --sample emulates some: give one", "replay"};
  }
  if (ranks_per_node > 0 && ranks_per_host > 0 && ranks_per_node != ranks_per_host)
    throw UsageError{"--ranks-per-node and --ranks-per-host name the same thing: give one", "replay"};
  if (ranks_per_node > 0)
    ranks_per_host = ranks_per_node;
  if (not hostfile.empty() && ranks_per_host > 0)
    throw UsageError{"--hostfile and --ranks-per-host exclude each other", "replay"};

  refuse_idle_timeline_options(not vm["timeline-format"].defaulted(), not vm["timeline-ranks"].defaulted(),
                               vm.count("no-timeline") > 0, not out.empty(), "replay");
  WhatIf what_if = parse_what_if(what_if_exprs, "replay");
  std::optional<WhatIfRun> what_if_run;
  if (not what_if.empty()) {
    what_if_run.emplace(out);
    analysis = with_critical_path(analysis);
    out = what_if_run->out_dir().string();
  }
  const RunTarget target{platform,
                         hostfile,
                         ranks_per_host,
                         seed,
                         out,
                         vm.count("no-timeline") == 0 && not(what_if_run && what_if_run->temporary()),
                         timeline_format(timeline_format_name, "replay")};
  emulator::ReplayOptions opts = replay_options(target);
  opts.note = [](const std::string& n) { std::cerr << "gridcast replay: note: " << n << '\n'; };
  opts.gpu.mpi = emulator::parse_gpu_mpi_mode(gpu_mpi, "--gpu-mpi");
  for (const std::string& c : cfg)
    emulator::apply_cfg(opts, c);
  if (vm.count("analysis") > 0 || what_if_run)
    apply_analysis(analysis, opts, "replay");
  opts.what_if = what_if.expressions;
  opts.link_scales = what_if.links;
  apply_gpu_model(gpu_model, opts, "replay");

  OpenedTrace t = open_trace(trace, opts.smpi.tit_read);
  emulator::check_cfg_for_input(opts, t.tit);
  emulator::SelectorEvidence evidence;
  evidence.smpi_trace = t.tit;
  if (t.info)
    evidence.mpi_library = models::recorded_mpi_library(*t.info);
  emulator::resolve_coll_selector(opts, evidence);
  opts.recorded_host_speed_flops = t.recorded_speed_flops;
  const emulator::Tables tables = emulator::parse_tables(tables_spec, "--tables");
  opts.timeline_ranks = timeline_ranks(timeline_ranks_spec, t.source->rank_count(), "replay",
                                       target.timeline && not target.out.empty());

  const std::filesystem::path timeline_path = prepare_output(target);

  Progress progress("replay", 0);
  ProgressSource progress_source(*t.source, progress);
  std::unique_ptr<models::TraceSource> changed;
  if (what_if_run)
    changed = what_if_source(progress_source, what_if);
  // --sample: the recorded main loop's iterations are the units (docs/reference/sampling.md), read before the
  // emulation from the trace itself, so that the progress counts the emulation's reading only.
  emulator::SamplingReport sampling_report;
  std::unique_ptr<models::TraceSource> sampled;
  models::sampling::Units units;
  if (sample_request) {
    units = models::sampling::choose_units(*t.source, t.recorded_speed_flops, true);
    opts.sampling_plan = plan_sampling(units, *sample_request, sampling_report);
    if (opts.sampling_plan)
      sampled = models::sampling::unit_source(progress_source, units);
    else
      std::cerr << "gridcast replay: note: --sample: every iteration emulated: " << sampling_report.why_not << '\n';
  }
  const models::TraceSource& source = changed ? *changed : sampled ? *sampled : progress_source;
  SampledEmulation run = emulate_sampled(units, sample_request, opts, sampling_report,
                                         [&] { return emulator::replay(source, opts, timeline_path); });
  if (run.exit_code)
    return *run.exit_code;  // auto's first pass ran in a child process, which finished the command
  emulator::ReplayResult& result = run.result;
  if (what_if_run) {  // the changes matched what the run has: now the run without them
    check_what_if_matched(what_if);
    what_if_run->run_baseline("replay", args, analysis);
  }
  emulator::print_summary(std::cout, result);
  print_coll_selector(std::cout, opts, result);
  print_gpu_model(std::cout, opts, result);
  print_run_warnings(std::cerr, "replay", result);
  print_sampling(std::cout, result);

  if (not out.empty()) {
    emulator::RunDescription run;
    run.command = "replay";
    run.options = &opts;
    run.tables  = tables;
    run.inputs.push_back({"trace", trace, digest_files(t.files)});
    // Said only where the working directory was used: gridcast's own indexes are read beside themselves.
    if (t.path_base == models::tit_path_base_name(models::TitPathBase::WorkingDirectory))
      run.inputs.back().paths_relative_to = t.path_base;
    add_target_inputs(run, target);
    add_gpu_model_inputs(run, gpu_model);
    emulator::write_prediction(std::filesystem::path(out) / "prediction.json", result, run);
    if (not(what_if_run && what_if_run->temporary())) {
      std::cout << "wrote " << (std::filesystem::path(out) / "prediction.json").string();
      if (emulator::tables_in_csv(tables, result.ranks.size()))
        std::cout << ", " << (std::filesystem::path(out) / "ranks.csv").string() << ", "
                  << (std::filesystem::path(out) / "links.csv").string();
      if (not timeline_path.empty())
        std::cout << " and " << timeline_path.string();
      std::cout << '\n';
    }
  }
  emulator::RunDescription analysis_run;
  analysis_run.command = "replay";
  report_analysis(result, analysis_run, out, not(what_if_run && what_if_run->temporary()));
  if (what_if_run)
    what_if_run->report(what_if);
  return 0;
}

}  // namespace gridcast::cli
