// --sample, --confidence and --margin of `predict` (docs/reference/sampling.md): the units of the
// synthesized run, their phases and the plan handed to the emulator, and the console line of the estimate;
// the input-sensitivity test a model keeps, as `fit` and `phases` print it.
#pragma once

#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/sampling.hpp"
#include "gridcast/models/stream.hpp"

#include <boost/program_options.hpp>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace gridcast::cli {

struct SamplingArgs {
  std::string sample;  ///< empty: off; auto or a number of units
  double confidence = 0.95;
  double margin = 0.02;
  std::uint64_t seed = 0;  ///< --sample-seed; defaulted: --seed
};

void add_sampling_options(boost::program_options::options_description& options, SamplingArgs& args);

/// The checked request, or nothing without --sample. UsageError naming the option: --sample 0 or not a
/// number, a confidence outside (0, 1), a margin <= 0, --confidence or --margin without --sample, --margin
/// with a fixed size (it applies to auto only).
std::optional<models::sampling::Request> sampling_request(const SamplingArgs& args,
                                                          const boost::program_options::variables_map& vm,
                                                          std::uint64_t seed, const std::string& command);

/// Forms the phases of the run's units (collect_units, collect_recorded_units); returns the plan to
/// emulate, or null when the run cannot be sampled (every unit is then emulated, and the report says why).
/// `report` gets everything but the estimate.
std::shared_ptr<const models::sampling::Plan> plan_sampling(const models::sampling::Units& units,
                                                            const models::sampling::Request& request,
                                                            emulator::SamplingReport& report);

/// Completes the emulator's report with what plan_sampling knew (phases' features, silhouette, loop).
void merge_sampling_report(emulator::SamplingReport& into, const emulator::SamplingReport& plan_report);

/// The console line: the estimate with its interval, the units emulated, the phases; or why every unit was
/// emulated.
void print_sampling(std::ostream& out, const emulator::ReplayResult& result);

/// The fit's input-sensitivity test kept in a model (TraceModel::input_phases): one line for the test and one
/// per phase, each prefixed by `indent`; or why it did not run (`input_phases_note`, known only to the fit).
void print_input_phases(std::ostream& out, const models::trace::TraceModel& model, const std::string& indent);

}  // namespace gridcast::cli
