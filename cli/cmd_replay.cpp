// `gridcast replay`: emulate a recorded trace (a profile directory or an SMPI TIT trace) on a platform.
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

namespace {

/// `gridcast replay`'s command line.
struct ReplayArgs : RunArgs {
  std::string trace;
  int ranks_per_node = 0;
  std::string gpu_mpi = "hostcopy";
};

void add_replay_options(po::options_description& options, ReplayArgs& a)
{
  options.add_options()
    ("trace", po::value(&a.trace)->required(), "profile directory, or SMPI time-independent trace (index file or single file)")
    ("platform,p", po::value(&a.platform)->required(), "SimGrid platform XML")
    ("hostfile", po::value(&a.hostfile), "rank i runs on line i of this file (smpirun syntax, name[:slots]), cyclically")
    ("ranks-per-host", po::value(&a.ranks_per_host), "place K consecutive ranks per host, hosts in natural name order (default 1)")
    ("ranks-per-node", po::value(&a.ranks_per_node),
     "the same as --ranks-per-host on generated platforms (one CPU host per node); each rank drives the GPU at its "
     "index on the node (docs/guides/gpu.md)")
    ("gpu-mpi", po::value(&a.gpu_mpi)->default_value("hostcopy"),
     "MPI calls on device buffers (memory: device): hostcopy stages them through host memory (a copy each way, "
     "Khetawat et al., Table I costs), gpudirect lets the NIC read and write GPU memory (rendezvous only, pinning cost)")
    ("out,o", po::value(&a.out), "write prediction.json and timeline.json into this directory");
  add_output_options(options, a);
  options.add_options()
    ("analysis", po::value(&a.analysis),
     "comma-separated analyses of the run: waits (wait states per rank, function and kind: late sender, late "
     "receiver, wait at N x N, wait at barrier, late broadcast, early reduce, early scan), critical-path (the "
     "chain of calls and waits that decides the end, per rank and function; includes waits): a summary, and "
     "analysis.json with --out (docs/guides/wait-states.md)")
    ("what-if", po::value(&a.what_if_exprs)->composing(), kWhatIfHelp)
    ("seed", po::value(&a.seed)->default_value(0), "seed of every random choice (reported in the outputs)")
    ("cfg", po::value(&a.cfg)->composing(),
     "name:value setting, repeatable. gridcast/eager-threshold:BYTES, gridcast/test-cost:SECONDS, "
     "gridcast/iprobe-cost:SECONDS, gridcast/coll/<op>:<algorithm>, gridcast/coll-selector:auto|mpich|smpi|openmpi-4.1, gridcast/coll-local-copy:auto|on|off, gridcast/gpu/<cost>:SECONDS, gridcast/gpu/nccl-algorithm:ring|tree and gridcast/gpu/pin-policy:cache|call "
     "(docs/guides/gpu.md; `gridcast algorithms` lists every gridcast key); smpi/... settings of smpirun are "
     "honoured with SMPI's meaning (smpi/simulate-computation, smpi/comp-adjustment-file, smpi/test, ...) or "
     "refused, never ignored (docs/reference/cfg.md); any other name goes to SimGrid (e.g. network/model:SMPI, "
     "tracing:yes). Collectives: the default selector (auto) takes the recorded run's: SMPI's for an SMPI "
     "trace (as smpirun -replay), Open MPI 4.1's for a profile recorded with Open MPI, MPICH's otherwise");
  add_gpu_model_options(options, a.gpu_model);
  add_sampling_options(options, a.sampling_args);
}

/// prediction.json, the tables, and the line that names them.
void write_replay_outputs(const ReplayArgs& a, const OpenedTrace& t, const RunTarget& target,
                          const emulator::ReplayOptions& opts, const emulator::Tables tables,
                          const emulator::ReplayResult& result, const std::filesystem::path& timeline_path,
                          bool announce)
{
  emulator::RunDescription run;
  run.command = "replay";
  run.options = &opts;
  run.tables  = tables;
  run.inputs.push_back({"trace", a.trace, digest_files(t.files)});
  // Said only where the working directory was used: gridcast's own indexes are read beside themselves.
  if (t.path_base == models::tit_path_base_name(models::TitPathBase::WorkingDirectory))
    run.inputs.back().paths_relative_to = t.path_base;
  add_target_inputs(run, target);
  add_gpu_model_inputs(run, a.gpu_model);
  emulator::write_prediction(std::filesystem::path(a.out) / "prediction.json", result, run);
  if (announce) {
    std::cout << "wrote " << (std::filesystem::path(a.out) / "prediction.json").string();
    if (emulator::tables_in_csv(tables, result.ranks.size()))
      std::cout << ", " << (std::filesystem::path(a.out) / "ranks.csv").string() << ", "
                << (std::filesystem::path(a.out) / "links.csv").string();
    if (not timeline_path.empty())
      std::cout << " and " << timeline_path.string();
    std::cout << '\n';
  }
}

}  // namespace

int run_replay(const std::vector<std::string>& args)
{
  ReplayArgs a;
  po::options_description options("replay options");
  add_replay_options(options, a);
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map vm;
  if (not parse("replay", "replay TRACE --platform P.xml [--hostfile F | --ranks-per-host K | --ranks-per-node K] "
                          "[--gpu-mpi hostcopy|gpudirect] [--out DIR] [--seed S] [--cfg name:value ...]\n"
                          "       [--sample auto|N [--confidence C] [--margin M] [--sample-seed S]]",
                args, options, positional, vm))
    return 0;
  const std::optional<models::sampling::Request> sample_request = sampling_request(a.sampling_args, vm, a.seed, "replay");
  if (a.ranks_per_node > 0 && a.ranks_per_host > 0 && a.ranks_per_node != a.ranks_per_host)
    throw UsageError{"--ranks-per-node and --ranks-per-host name the same thing: give one", "replay"};
  if (a.ranks_per_node > 0)
    a.ranks_per_host = a.ranks_per_node;
  if (not a.hostfile.empty() && a.ranks_per_host > 0)
    throw UsageError{"--hostfile and --ranks-per-host exclude each other", "replay"};

  refuse_idle_timeline_options(not vm["timeline-format"].defaulted(), not vm["timeline-ranks"].defaulted(),
                               vm.count("no-timeline") > 0, not a.out.empty(), "replay");
  WhatIf what_if = parse_what_if(a.what_if_exprs, "replay");
  std::optional<WhatIfRun> what_if_run;
  start_what_if(what_if, what_if_run, a.out, a.analysis);
  const RunTarget target{a.platform,
                         a.hostfile,
                         a.ranks_per_host,
                         a.seed,
                         a.out,
                         vm.count("no-timeline") == 0 && not(what_if_run && what_if_run->temporary()),
                         timeline_format(a.timeline_format_name, "replay")};
  emulator::ReplayOptions opts = replay_options(target);
  opts.note = [](const std::string& n) { std::cerr << "gridcast replay: note: " << n << '\n'; };
  opts.gpu.mpi = emulator::parse_gpu_mpi_mode(a.gpu_mpi, "--gpu-mpi");
  for (const std::string& c : a.cfg)
    emulator::apply_cfg(opts, c);
  if (vm.count("analysis") > 0 || what_if_run)
    apply_analysis(a.analysis, opts, "replay");
  opts.what_if = what_if.expressions;
  opts.link_scales = what_if.links;
  apply_gpu_model(a.gpu_model, opts, "replay");

  OpenedTrace t = open_trace(a.trace, opts.smpi.tit_read);
  emulator::check_cfg_for_input(opts, t.tit);
  emulator::SelectorEvidence evidence;
  evidence.smpi_trace = t.tit;
  if (t.info)
    evidence.mpi_library = models::recorded_mpi_library(*t.info);
  emulator::resolve_coll_selector(opts, evidence);
  opts.recorded_host_speed_flops = t.recorded_speed_flops;
  const emulator::Tables tables = emulator::parse_tables(a.tables_spec, "--tables");
  opts.timeline_ranks = timeline_ranks(a.timeline_ranks_spec, t.source->rank_count(), "replay",
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
  if (what_if_run)
    what_if_run->finish("replay", what_if, args, a.analysis);
  emulator::print_summary(std::cout, result);
  print_coll_selector(std::cout, opts, result);
  print_gpu_model(std::cout, opts, result);
  print_run_warnings(std::cerr, "replay", result);
  print_sampling(std::cout, result);

  if (not a.out.empty())
    write_replay_outputs(a, t, target, opts, tables, result, timeline_path, not(what_if_run && what_if_run->temporary()));
  emulator::RunDescription analysis_run;
  analysis_run.command = "replay";
  report_analysis(result, analysis_run, a.out, not(what_if_run && what_if_run->temporary()));
  if (what_if_run)
    what_if_run->report(what_if);
  return 0;
}

}  // namespace gridcast::cli
