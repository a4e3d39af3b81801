// Command-line parsing shared by every `gridcast` subcommand.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace gridcast::cli {

/// Parses `args` for `command` into `vm`, adding --help to `options`. With --help it prints
/// "usage: gridcast <synopsis>", the `description` paragraph when given, and the options, then returns
/// false (the caller exits 0). A bad command line is a UsageError naming `command` (exit 1).
bool parse(const std::string& command, const std::string& synopsis, const std::vector<std::string>& args,
           boost::program_options::options_description& options,
           const boost::program_options::positional_options_description& positional,
           boost::program_options::variables_map& vm, const std::string& description = {});

}  // namespace gridcast::cli
