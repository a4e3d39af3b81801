// `gridcast import`: turn a foreign trace (SMPI time-independent trace) or the hook's raw files of a run
// gridcast did not launch into a profile directory.
#include "commands.hpp"
#include "options.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/p2p_pairing.hpp"
#include "gridcast/models/tit.hpp"

#include <boost/program_options.hpp>

#include <iostream>

namespace po = boost::program_options;

namespace gridcast::cli {

int run_import(const std::vector<std::string>& args)
{
  std::string kind, input, out, encoding_name = "binary", host_name = "unknown";
  double nw = 0;
  double host_speed = 1e9;
  po::options_description options("import options");
  options.add_options()
    ("kind", po::value(&kind)->required(),
     "format of the input: tit (SMPI time-independent trace) or hook (the raw files of libgridcast-hook, e.g. "
     "linked into a program under SMPI by scripts/smpi-hook.sh)")
    ("input", po::value(&input)->required(),
     "the trace: a TIT index file or a single all-ranks TIT file; for hook, the directory of rank-R.meta files")
    ("nw", po::value(&nw)->required(), "workload size (problem size parameter) the traced run used")
    ("out,o", po::value(&out)->required(), "profile directory to write (created)")
    ("force", "replace the trace that --out already holds (its files only; without it, exit 1)")
    ("encoding", po::value(&encoding_name)->default_value("binary"), "jsonl or binary")
    ("host-name", po::value(&host_name)->default_value("unknown"), "name of the host the trace was recorded on")
    ("host-speed", po::value(&host_speed)->default_value(1e9),
     "flop/s of the recording host; TIT traces give work in flops, so this only matters for records in seconds; "
     "required for hook, whose compute bursts are in seconds");
  po::positional_options_description positional;
  positional.add("kind", 1).add("input", 1);
  po::variables_map vm;
  if (not parse("import",
                "import tit INDEX --nw VALUE --out DIR [--force] [--encoding jsonl|binary]\n"
                "       gridcast import hook RAW_DIR --nw VALUE --host-speed FLOPS --out DIR [--force] [--encoding ...]",
                args, options, positional, vm))
    return 0;
  if (kind != "tit" && kind != "hook")
    throw UsageError{"unknown trace kind '" + kind + "' (known: tit, hook)", "import"};
  if (host_speed <= 0)
    throw UsageError{"--host-speed must be positive", "import"};
  models::TraceEncoding encoding = encoding_from(encoding_name, "import");
  if (kind == "hook") {
    // The hook times compute bursts in seconds: the flop/s that turn them into work are the recording
    // host's, which no default can know.
    if (vm["host-speed"].defaulted())
      throw UsageError{"import hook needs --host-speed: the flop/s of the host the raw files were recorded on "
                       "(under SMPI, the speed of its hosts in the platform)", "import"};
    return import_hook_raw({input, out, nw, host_speed, host_name, encoding, vm.count("force") > 0});
  }
  models::prepare_trace_output(out, vm.count("force") > 0);
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
  // A recorded MPI run pairs every receive with a send. SMPI's tracer writes no line for an MPI_Sendrecv
  // one of whose sides is MPI_PROC_NULL (the ends of a non-periodic halo exchange), not even the half that
  // happens: its partners' lines then wait forever in any replay, smpirun -replay's included. Said here,
  // where the trace comes in, rather than as a deadlock at replay.
  const models::PairingReport pairing = models::check_pairing(tit);
  if (not pairing.paired())
    std::cerr << "gridcast import: warning: " << pairing.receives_without_send << " receive(s) without a send and "
              << pairing.sends_without_receive << " send(s) without a receive in " << input
              << (pairing.first_receive.empty() ? std::string() : " (first: " + pairing.first_receive + ")")
              << ": a replay of this trace cannot reach its end. SMPI's tracer writes no line for an MPI_Sendrecv "
                 "whose source or destination is MPI_PROC_NULL (a non-periodic halo exchange), so its partners' "
                 "lines have no counterpart (smpirun -replay stops on such a trace too)\n";
  return 0;
}

}  // namespace gridcast::cli
