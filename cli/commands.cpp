#include "commands.hpp"
#include "options.hpp"

#include "gridcast/emulator/collectives.hpp"
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
#include <sstream>

namespace po = boost::program_options;

namespace gridcast::cli {

bool parse(const std::string& command, const std::string& synopsis, const std::vector<std::string>& args,
           po::options_description& options, const po::positional_options_description& positional,
           po::variables_map& vm, const std::string& description)
{
  options.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
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
  return target.timeline ? std::filesystem::path(target.out) / "timeline.json" : std::filesystem::path();
}

void add_target_inputs(emulator::RunDescription& run, const RunTarget& target)
{
  run.inputs.push_back({"platform", target.platform, emulator::digest_file(target.platform)});
  if (not target.hostfile.empty())
    run.inputs.push_back({"hostfile", target.hostfile, emulator::digest_file(target.hostfile)});
}

namespace {

/// A trace given on the command line: a profile directory, or an SMPI TIT index / single file.
struct OpenedTrace {
  std::unique_ptr<models::TraceSource> source;
  std::vector<std::filesystem::path> files;  ///< every file it reads, for the input digest
  double recorded_speed_flops = 0;
  std::optional<models::RunInfo> info;
};

OpenedTrace open_trace(const std::filesystem::path& path)
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
  t.files.push_back(path);
  if (not models::tit_is_single_file(path)) {
    // An index: every per-rank file it names is an input too.
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos)
        continue;
      auto last = line.find_last_not_of(" \t\r");
      std::filesystem::path p = line.substr(first, last - first + 1);
      t.files.push_back(p.is_absolute() ? p : path.parent_path() / p);
    }
  }
  t.source = std::make_unique<models::TitTrace>(path);
  return t;
}

models::TraceEncoding encoding_from(const std::string& name, const std::string& command)
{
  if (name == "jsonl" || name == "json")
    return models::TraceEncoding::JsonLines;
  if (name == "binary" || name == "gct")
    return models::TraceEncoding::Binary;
  throw UsageError{"--to/--encoding must be jsonl or binary, not '" + name + "'", command};
}

}  // namespace

int run_replay(const std::vector<std::string>& args)
{
  std::string trace, platform, hostfile, out;
  int ranks_per_host = 0;
  int ranks_per_node = 0;
  std::string gpu_mpi = "hostcopy";
  std::uint64_t seed = 0;
  std::vector<std::string> cfg;
  po::options_description options("replay options");
  options.add_options()
    ("trace", po::value(&trace)->required(), "profile directory, or SMPI time-independent trace (index file or single file)")
    ("platform,p", po::value(&platform)->required(), "SimGrid platform XML")
    ("hostfile", po::value(&hostfile), "rank i runs on line i of this file (smpirun syntax, name[:slots]), cyclically")
    ("ranks-per-host", po::value(&ranks_per_host), "place K consecutive ranks per host, hosts in natural name order (default 1)")
    ("ranks-per-node", po::value(&ranks_per_node),
     "the same as --ranks-per-host on generated platforms (one CPU host per node); each rank drives the GPU at its "
     "index on the node (docs/gpu.md)")
    ("gpu-mpi", po::value(&gpu_mpi)->default_value("hostcopy"),
     "MPI calls on device buffers (memory: device): hostcopy stages them through host memory (a copy each way, "
     "seed 001 Table I costs), gpudirect lets the NIC read and write GPU memory (rendezvous only, pinning cost)")
    ("out,o", po::value(&out), "write prediction.json and timeline.json into this directory")
    ("no-timeline", "do not write timeline.json")
    ("seed", po::value(&seed)->default_value(0), "seed of every random choice (reported in the outputs)")
    ("cfg", po::value(&cfg)->composing(),
     "name:value setting, repeatable. gridcast/eager-threshold:BYTES, gridcast/test-cost:SECONDS, "
     "gridcast/iprobe-cost:SECONDS, gridcast/coll/<op>:<algorithm>, gridcast/coll-selector:mpich|smpi|openmpi-4.1, gridcast/coll-local-copy:auto|on|off, gridcast/gpu/<cost>:SECONDS, gridcast/gpu/nccl-algorithm:ring|tree and gridcast/gpu/pin-policy:cache|call "
     "(docs/gpu.md; `gridcast algorithms` lists every gridcast key); any other name goes to SimGrid (e.g. "
     "network/model:SMPI, tracing:yes)");
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map vm;
  if (not parse("replay", "replay TRACE --platform P.xml [--hostfile F | --ranks-per-host K | --ranks-per-node K] "
                          "[--gpu-mpi hostcopy|gpudirect] [--out DIR] [--seed S] [--cfg name:value ...]",
                args, options, positional, vm))
    return 0;
  if (ranks_per_node > 0 && ranks_per_host > 0 && ranks_per_node != ranks_per_host)
    throw UsageError{"--ranks-per-node and --ranks-per-host name the same thing: give one", "replay"};
  if (ranks_per_node > 0)
    ranks_per_host = ranks_per_node;
  if (not hostfile.empty() && ranks_per_host > 0)
    throw UsageError{"--hostfile and --ranks-per-host exclude each other", "replay"};

  const RunTarget target{platform, hostfile, ranks_per_host, seed, out, vm.count("no-timeline") == 0};
  emulator::ReplayOptions opts = replay_options(target);
  opts.gpu.mpi = emulator::parse_gpu_mpi_mode(gpu_mpi, "--gpu-mpi");
  for (const std::string& c : cfg)
    emulator::apply_cfg(opts, c);

  OpenedTrace t = open_trace(trace);
  opts.recorded_host_speed_flops = t.recorded_speed_flops;

  const std::filesystem::path timeline_path = prepare_output(target);

  emulator::ReplayResult result = emulator::replay(*t.source, opts, timeline_path);
  emulator::print_summary(std::cout, result);

  if (not out.empty()) {
    emulator::RunDescription run;
    run.command = "replay";
    run.options = &opts;
    run.inputs.push_back({"trace", trace, emulator::digest_files(t.files)});
    add_target_inputs(run, target);
    emulator::write_prediction(std::filesystem::path(out) / "prediction.json", result, run);
    std::cout << "wrote " << (std::filesystem::path(out) / "prediction.json").string();
    if (not timeline_path.empty())
      std::cout << " and " << timeline_path.string();
    std::cout << '\n';
  }
  return 0;
}

int run_convert(const std::vector<std::string>& args)
{
  std::string in, to, out;
  po::options_description options("convert options");
  options.add_options()
    ("in", po::value(&in)->required(), "profile directory to read")
    ("to", po::value(&to)->required(), "encoding to write: jsonl or binary")
    ("out,o", po::value(&out)->required(), "profile directory to write (created)");
  po::positional_options_description positional;
  positional.add("in", 1);
  po::variables_map vm;
  if (not parse("convert", "convert IN --to jsonl|binary --out OUT", args, options, positional, vm))
    return 0;
  models::TraceEncoding encoding = encoding_from(to, "convert");
  if (not models::is_profile_dir(in))
    throw InputError({in, 0, {}, -1}, "not a profile directory (no run.json); use `gridcast import` for foreign traces");
  models::ProfileDir dir(in);
  models::RunInfo info = dir.info();
  info.encoding = encoding;
  models::write_profile(dir, info, out, encoding);
  std::cout << "wrote " << info.np << " rank trace(s) in " << models::encoding_name(encoding) << " to " << out << '\n';
  return 0;
}

int run_import(const std::vector<std::string>& args)
{
  std::string kind, input, out, encoding_name = "binary", host_name = "unknown";
  double nw = 0;
  double host_speed = 1e9;
  po::options_description options("import options");
  options.add_options()
    ("kind", po::value(&kind)->required(), "format of the input: tit (SMPI time-independent trace)")
    ("input", po::value(&input)->required(), "the trace: a TIT index file or a single all-ranks TIT file")
    ("nw", po::value(&nw)->required(), "workload size (problem size parameter) the traced run used")
    ("out,o", po::value(&out)->required(), "profile directory to write (created)")
    ("encoding", po::value(&encoding_name)->default_value("binary"), "jsonl or binary")
    ("host-name", po::value(&host_name)->default_value("unknown"), "name of the host the trace was recorded on")
    ("host-speed", po::value(&host_speed)->default_value(1e9),
     "flop/s of the recording host; TIT traces give work in flops, so this only matters for records in seconds");
  po::positional_options_description positional;
  positional.add("kind", 1).add("input", 1);
  po::variables_map vm;
  if (not parse("import", "import tit INDEX --nw VALUE --out DIR [--encoding jsonl|binary]", args, options, positional,
                vm))
    return 0;
  if (kind != "tit")
    throw UsageError{"unknown trace kind '" + kind + "' (known: tit)", "import"};
  if (host_speed <= 0)
    throw UsageError{"--host-speed must be positive", "import"};
  models::TraceEncoding encoding = encoding_from(encoding_name, "import");
  models::TitTrace tit(input);
  models::RunInfo info;
  info.np = tit.rank_count();
  info.nw = nw;
  info.command = "smpirun -trace-ti (imported from " + input + ")";
  info.host.name = host_name;
  info.host.speed_flops = host_speed;
  info.encoding = encoding;
  info.origin = "tit-import";
  models::write_profile(tit, info, out, encoding);
  std::cout << "imported " << info.np << " rank(s) from " << input << " into " << out << '\n';
  return 0;
}

int run_algorithms(const std::vector<std::string>& args)
{
  po::options_description options("algorithms options");
  po::positional_options_description positional;
  po::variables_map vm;
  if (not parse("algorithms", "algorithms", args, options, positional, vm))
    return 0;
  emulator::CollectiveRegistry registry;
  std::cout << "collective algorithms (force one with --cfg gridcast/coll/<op>:<algorithm>):\n";
  for (int k = 0; k <= static_cast<int>(emulator::CollectiveKind::Exscan); ++k) {
    auto kind = static_cast<emulator::CollectiveKind>(k);
    std::cout << "  " << emulator::collective_name(kind) << ":";
    for (const auto& n : registry.names(kind))
      std::cout << ' ' << n;
    std::cout << '\n';
  }
  std::cout << "\ngridcast settings:\n";
  for (const auto& [key, help] : emulator::gridcast_cfg_keys())
    std::cout << "  " << key << "\n      " << help << '\n';
  return 0;
}

}  // namespace gridcast::cli
