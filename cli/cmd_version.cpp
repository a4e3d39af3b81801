// `gridcast version`: the gridcast version and the SimGrid version it was built with.
#include "commands.hpp"

#include "gridcast/version.hpp"

// version.h uses the declaration macros of xbt/base.h without including it.
#include <xbt/base.h>

#include <simgrid/version.h>

#include <iostream>

namespace gridcast::cli {

int run_version(const std::vector<std::string>& args)
{
  if (args.size() > 0 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: gridcast version\n  prints the gridcast version and the SimGrid version it was built with\n";
    return 0;
  }
  if (not args.empty())
    throw UsageError{"takes no argument (got '" + args[0] + "')", "version"};
  std::cout << "gridcast " << kVersion << " (SimGrid " << SIMGRID_VERSION_MAJOR << '.' << SIMGRID_VERSION_MINOR << '.'
            << SIMGRID_VERSION_PATCH << ")\n";
  return 0;
}

}  // namespace gridcast::cli
