// `gridcast synth`: writes every rank's synthesized calls at a target (Nw, Np) from a trace model.
#include "commands.hpp"
#include "options.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <boost/program_options.hpp>

#include <iostream>

namespace po = boost::program_options;

namespace gridcast::cli {

int run_synth(const std::vector<std::string>& args)
{
  std::string model_file, out, format = "native", encoding = "binary";
  double nw = -1;
  int np = 0;
  std::uint64_t max_calls = kDefaultMaxCalls;
  po::options_description options("synth options");
  options.add_options()
    ("model", po::value(&model_file)->required(), "model.json written by `gridcast fit`")
    ("nw", po::value(&nw)->required(), "target workload size (the nw of run.json)")
    ("np", po::value(&np)->required(), "target number of ranks")
    ("max-calls", po::value(&max_calls)->default_value(max_calls),
     "refuse a run of more calls than this, all ranks together (a model extrapolated far past its training)")
    ("out,o", po::value(&out)->required(), "directory to write (created)")
    ("force", "replace the trace that --out already holds (its files only; without it, exit 1)")
    ("format", po::value(&format)->default_value("native"),
     "native: a profile directory (run.json + rank files); tit: an SMPI time-independent trace (DIR/trace.txt "
     "index + DIR/trace.txt_files/), replayable by `smpirun -replay`")
    ("encoding", po::value(&encoding)->default_value("binary"), "rank files of --format native: binary or jsonl");
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (not parse("synth",
                "synth model.json --nw X --np Y --out DIR [--force] [--format native|tit] [--encoding binary|jsonl]",
                args, options, positional, vm,
                "Generates every rank's calls at (Nw, Np) from the model, one call at a time (memory does not\n"
                "grow with the number of iterations). See docs/reference/trace-model.md."))
    return 0;
  if (format != "native" && format != "tit")
    throw UsageError{"--format must be native or tit, not '" + format + "'", "synth"};
  const models::TraceEncoding enc = encoding_from(encoding, "synth");
  check_target_np(np, "synth");
  if (nw < 0)
    throw UsageError{"--nw must be >= 0", "synth"};

  auto model = std::make_shared<const models::trace::TraceModel>(models::trace::read_model(model_file));
  for (const std::string& w : model_range_warnings(*model, nw, np))
    std::cerr << "gridcast synth: warning: " << w << '\n';
  models::prepare_trace_output(out, vm.count("force") > 0);
  models::trace::SynthSource source(model, {nw, np});
  models::trace::print_quality(std::cerr, source.quality());
  check_call_count(source.total_calls(), max_calls, model_file, nw, np);
  if (format == "tit")
    models::trace::write_tit(source, out);
  else
    models::write_profile(source, source.run_info(enc), out, enc);
  std::cout << "synthesized " << np << " rank(s) at Nw " << nw << " into " << out << " (" << format << ")\n";
  return 0;
}

}  // namespace gridcast::cli
