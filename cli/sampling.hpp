// --sample, --confidence and --margin of `predict` (docs/reference/sampling.md): the units of the
// synthesized run, their phases and the plan handed to the emulator, and the console line of the estimate;
// the input-sensitivity test a model keeps, as `fit` and `phases` print it.
#pragma once

#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/sampling.hpp"
#include "gridcast/models/stream.hpp"

#include <boost/program_options.hpp>

#include <functional>
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
/// with a fixed size (it applies to auto only), and --analysis or --what-if beside --sample (they need every
/// iteration emulated).
std::optional<models::sampling::Request> sampling_request(const SamplingArgs& args,
                                                          const boost::program_options::variables_map& vm,
                                                          std::uint64_t seed, const std::string& command);

/// Forms the phases of the run's units (models::sampling::choose_units); returns the plan to
/// emulate, or null when the run cannot be sampled (every unit is then emulated, and the report says why).
/// `report` gets everything but the estimate.
std::shared_ptr<const models::sampling::Plan> plan_sampling(const models::sampling::Units& units,
                                                            const models::sampling::Request& request,
                                                            emulator::SamplingReport& report);

/// `--sample auto` in two passes at most. `emulate` runs the emulation with `plan` (the first pass's);
/// it runs in a child process, since SimGrid runs one engine per process. Where the first pass's interval is
/// within the margin (or it could not sample more), the child goes on with the command: run_auto_sample
/// returns its result there, and in the parent the child's exit code once it has finished (the parent
/// prints and writes nothing). Otherwise the child hands the strata's observed means and spreads to the
/// parent and exits; the parent plans the second pass from them (plan_sample's Request::observed), runs
/// `emulate` with it and returns its result; `note` says so (the command's note, as ReplayOptions::note).
/// stdout and stderr are flushed before the fork.
struct AutoSampleOutcome {
  std::optional<int> exit_code;            ///< the parent, where the child finished the command
  std::optional<emulator::ReplayResult> result;
  std::shared_ptr<const models::sampling::Plan> plan;  ///< the plan `result` ran with
  emulator::SamplingReport report;                     ///< plan_sampling's report of that plan
};
AutoSampleOutcome run_auto_sample(
    const models::sampling::Units& units, const models::sampling::Request& request,
    std::shared_ptr<const models::sampling::Plan> first, const emulator::SamplingReport& first_report,
    const std::function<emulator::ReplayResult(std::shared_ptr<const models::sampling::Plan>)>& emulate,
    const std::function<void(const std::string&)>& note);

/// The emulation of predict and replay: `emulate` once, or, for --sample auto with a plan, auto's passes
/// (run_auto_sample, which sets opts.sampling_plan before each); the result's `sampling` completed with
/// `report` where a sample was asked for. `exit_code` set: this process is the parent of a first pass that
/// finished the command, and returns that code.
struct SampledEmulation {
  std::optional<int> exit_code;
  emulator::ReplayResult result;
};
SampledEmulation emulate_sampled(const models::sampling::Units& units,
                                 const std::optional<models::sampling::Request>& request,
                                 emulator::ReplayOptions& opts, emulator::SamplingReport& report,
                                 const std::function<emulator::ReplayResult()>& emulate);

/// Completes the emulator's report with what plan_sampling knew (phases' features, silhouette, loop).
void merge_sampling_report(emulator::SamplingReport& into, const emulator::SamplingReport& plan_report);

/// The console line: the estimate with its interval, the units emulated, the phases; or why every unit was
/// emulated.
void print_sampling(std::ostream& out, const emulator::ReplayResult& result);

/// The fit's input-sensitivity test kept in a model (TraceModel::input_phases): one line for the test and one
/// per phase, each prefixed by `indent`; or why it did not run (`input_phases_note`, known only to the fit).
void print_input_phases(std::ostream& out, const models::trace::TraceModel& model, const std::string& indent);

}  // namespace gridcast::cli
