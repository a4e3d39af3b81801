// `gridcast convert`: rewrite a profile directory in the other encoding (JSON lines or binary).
#include "commands.hpp"
#include "options.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"

#include <boost/program_options.hpp>

#include <filesystem>
#include <iostream>

namespace po = boost::program_options;

namespace gridcast::cli {

int run_convert(const std::vector<std::string>& args)
{
  std::string in, to, out;
  po::options_description options("convert options");
  options.add_options()
    ("in", po::value(&in)->required(), "profile directory to read")
    ("to", po::value(&to)->required(), "encoding to write: jsonl or binary")
    ("out,o", po::value(&out)->required(), "profile directory to write (created)")
    ("force", "replace the trace that --out already holds (its files only; without it, exit 1)");
  po::positional_options_description positional;
  positional.add("in", 1);
  po::variables_map vm;
  if (not parse("convert", "convert IN --to jsonl|binary --out OUT [--force]", args, options, positional, vm))
    return 0;
  models::TraceEncoding encoding = encoding_from(to, "convert");
  if (not models::is_profile_dir(in))
    throw InputError({in, 0, {}, -1}, "not a profile directory (no run.json); use `gridcast import` for foreign traces");
  models::ProfileDir dir(in);
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec))
    throw InputError({out, 0, {}, -1}, "the output directory is the input profile; choose another --out");
  models::prepare_trace_output(out, vm.count("force") > 0);
  models::RunInfo info = dir.info();
  info.encoding = encoding;
  models::write_profile(dir, info, out, encoding);
  std::cout << "wrote " << info.np << " rank trace(s) in " << models::encoding_name(encoding) << " to " << out << '\n';
  return 0;
}

}  // namespace gridcast::cli
