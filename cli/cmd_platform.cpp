// `gridcast platform SPEC.json [--calibration calibration.json] -o platform.xml`: generate a SimGrid
// platform from a spec, load it with SimGrid, check its routes, then write it. docs/guides/platforms.md.
#include "commands.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/calibration/calibration.hpp"
#include "gridcast/platform/generator.hpp"
#include "gridcast/platform/placement.hpp"
#include "gridcast/platform/spec.hpp"

#include <boost/program_options.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <chrono>
#include <cstdio>
#include <unistd.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace gridcast::cli {

namespace {

std::string human_Bps(double bps)
{
  const char* units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"};
  int u               = 0;
  while (bps >= 1000 && u < 5) {
    bps /= 1000;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", bps, units[u]);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int run_platform(const std::vector<std::string>& args)
{
  std::string spec_path, calibration_path, out;
  std::size_t max_elements = platform::kDefaultMaxPlatformElements;
  po::options_description options("platform options");
  options.add_options()
    ("spec", po::value(&spec_path)->required(), "platform spec (JSON, docs/guides/platforms.md)")
    ("calibration,c", po::value(&calibration_path),
     "calibration.json from `gridcast calibrate`: fills the figures the spec leaves out (core speed, loopback, "
     "GPU links) and puts its latency/bandwidth factors and eager threshold into the platform")
    ("out,o", po::value(&out)->required(), "SimGrid XML platform to write (written only once it loads and routes)")
    ("max-elements", po::value(&max_elements)->default_value(max_elements),
     "refuse a platform of more hosts, links, routers and routes than this (a spec's counts multiplied out)")
    ("quiet,q", "print nothing but errors")
    ("help,h", "show this help");
  po::positional_options_description positional;
  positional.add("spec", 1);
  po::variables_map vm;
  const std::string synopsis = "platform SPEC.json [--calibration calibration.json] -o platform.xml [--quiet]";
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
    if (vm.count("help") > 0) {
      std::cout << "usage: gridcast " << synopsis << "\n\n"
                << "Builds a SimGrid 3.32 platform (one CPU host per node, one host per GPU, PCIe/NVLink inside\n"
                << "nodes, NICs and the network between them), loads it with SimGrid, checks its routes and\n"
                << "prints a summary. Spec reference and host naming: docs/guides/platforms.md.\n\n"
                << options << '\n';
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError{e.what(), "platform"};
  }
  const bool quiet = vm.count("quiet") > 0;

  platform::PlatformSpec spec = platform::read_spec(spec_path);
  std::optional<platform::Calibration> calibration;
  if (not calibration_path.empty())
    calibration = platform::read_calibration(calibration_path);
  platform::PlatformModel model = platform::build_platform(spec, calibration ? &*calibration : nullptr,
                                                           fs::path(spec_path).filename().string(), max_elements);
  const std::string xml = platform::render_xml(model);

  // SimGrid checks a staged copy first (in the temporary directory: the target may be a device such as
  // /dev/stdout), so that a platform SimGrid rejects never replaces a good one; the target is then
  // written atomically.
  const fs::path target = out;
  const fs::path staged = fs::temp_directory_path() / ("gridcast-platform-" + std::to_string(getpid()) + ".xml");
  write_file_atomically(staged, xml, "the staged platform");
  struct Cleanup {
    fs::path p;
    ~Cleanup()
    {
      std::error_code ec;
      fs::remove(p, ec);
    }
  } cleanup{staged};

  std::vector<std::string> sg_args{"gridcast", "--log=root.thresh:warning"};
  std::vector<char*> argv;
  for (auto& a : sg_args)
    argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  simgrid::s4u::Engine engine(&argc, argv.data());
  auto t0 = std::chrono::steady_clock::now();
  try {
    platform::load_platform(engine, staged);
  } catch (const InputError& e) {
    throw InternalError(std::string("SimGrid rejects the generated platform: ") + e.what());
  }
  engine.seal_platform();
  const double load_s = seconds_since(t0);
  t0                  = std::chrono::steady_clock::now();
  platform::CheckSummary check = platform::check_routes(engine);
  const double check_s         = seconds_since(t0);

  write_file_atomically(target, xml, "the platform");

  if (not quiet) {
    auto count = [](std::size_t n, const char* one, const char* many) {
      return std::to_string(n) + " " + (n == 1 ? one : many);
    };
    std::printf("platform %s: %s, %s (%d CPU, %d GPU), %s, %s\n", spec.name.c_str(),
                count(static_cast<std::size_t>(model.nodes), "node", "nodes").c_str(),
                count(model.hosts.size(), "host", "hosts").c_str(), model.cpu_hosts, model.gpu_hosts,
                count(model.routers.size(), "router", "routers").c_str(), count(model.links.size(), "link", "links").c_str());
    if (model.topology != "none")
      std::printf("network: %s, %d switches, bisection bandwidth %s\n", model.topology.c_str(), model.switches,
                  human_Bps(model.bisection_Bps).c_str());
    std::printf("routes checked: %zu (%s) in %.3f s; SimGrid loaded it in %.3f s\n", check.routes_checked,
                check.all_pairs ? "all host pairs" : "sample", check_s, load_s);
    if (calibration)
      std::printf("calibration: %s (%s)\n", calibration->host.name.c_str(), calibration->host.date.c_str());
    std::printf("wrote %s\n", out.c_str());
  }
  return 0;
}

}  // namespace gridcast::cli
