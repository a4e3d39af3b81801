// The command line that `replay` and `predict` share: where the ranks run, what the run writes and what it
// analyses. Each command registers these options in its own order, beside its own (its --help is its own).
#pragma once

#include "gpu_model.hpp"
#include "sampling.hpp"

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gridcast::cli {

struct RunArgs {
  std::string platform, hostfile, out;
  int ranks_per_host = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> cfg;
  std::string analysis;
  std::vector<std::string> what_if_exprs;
  std::string tables_spec;
  std::string timeline_ranks_spec, timeline_format_name;
  GpuModelArgs gpu_model;
  SamplingArgs sampling_args;
};

/// --no-timeline, --timeline-ranks, --timeline-format and --tables, in that order.
void add_output_options(boost::program_options::options_description& options, RunArgs& args);

}  // namespace gridcast::cli
