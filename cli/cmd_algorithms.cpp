// `gridcast algorithms`: the collective algorithms a replay knows and the gridcast --cfg settings.
#include "commands.hpp"
#include "options.hpp"

#include "gridcast/emulator/collectives.hpp"
#include "gridcast/emulator/config.hpp"

#include <boost/program_options.hpp>

#include <iostream>

namespace po = boost::program_options;

namespace gridcast::cli {

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
