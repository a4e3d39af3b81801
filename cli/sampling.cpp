#include "sampling.hpp"
#include "commands.hpp"

#include "gridcast/foundation/errors.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace gridcast::cli {

namespace po = boost::program_options;

namespace {

std::string fixed(double v, int digits)
{
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

std::string general(double v)
{
  std::ostringstream o;
  o << std::setprecision(6) << v;
  return o.str();
}

}  // namespace

void add_sampling_options(po::options_description& options, SamplingArgs& args)
{
  options.add_options()
    ("sample", po::value(&args.sample),
     "auto or N: emulate a stratified random sample of the main loop's iterations (N in all, or as many as "
     "--margin needs), each after a warm-up iteration, and estimate the makespan with a confidence interval "
     "(docs/reference/sampling.md); fast-forward is then off")
    ("confidence", po::value(&args.confidence)->default_value(args.confidence),
     "--sample: the confidence level of the interval, in (0, 1)")
    ("margin", po::value(&args.margin)->default_value(args.margin),
     "--sample auto: the interval's half-width the sample size aims at, relative to the estimate (> 0)")
    ("sample-seed", po::value(&args.seed),
     "--sample: the seed of the draw of iterations (default: --seed); another draw of the same run gives "
     "another estimate, for the spread of the method itself");
}

std::optional<models::sampling::Request> sampling_request(const SamplingArgs& args, const po::variables_map& vm,
                                                          std::uint64_t seed, const std::string& command)
{
  const bool confidence_given = not vm["confidence"].defaulted();
  const bool margin_given = not vm["margin"].defaulted();
  const bool seed_given = vm.count("sample-seed") > 0;
  if (args.sample.empty() && vm.count("sample") == 0) {
    if (confidence_given || margin_given || seed_given)
      throw UsageError{std::string(confidence_given ? "--confidence" : margin_given ? "--margin" : "--sample-seed") +
                           " applies to a sampled run: give --sample auto or --sample N",
                       command};
    return std::nullopt;
  }
  models::sampling::Request r;
  r.seed = seed_given ? args.seed : seed;
  if (args.sample != "auto") {
    const bool digits = not args.sample.empty() && args.sample.size() <= 18 &&
                        args.sample.find_first_not_of("0123456789") == std::string::npos;
    if (not digits || std::stoull(args.sample) == 0)
      throw UsageError{"--sample " + args.sample + ": expected auto or a number of iterations >= 1", command};
    r.size = std::stoull(args.sample);
    if (margin_given)
      throw UsageError{"--margin applies to --sample auto; --sample " + args.sample + " fixes the size", command};
  }
  if (not(args.confidence > 0 && args.confidence < 1))
    throw UsageError{"--confidence " + general(args.confidence) + ": expected a level in (0, 1), such as 0.95",
                     command};
  if (not(args.margin > 0) || not std::isfinite(args.margin))
    throw UsageError{"--margin " + general(args.margin) + ": expected a relative half-width > 0, such as 0.02",
                     command};
  r.confidence = args.confidence;
  r.margin = args.margin;
  return r;
}

std::shared_ptr<const models::sampling::Plan> plan_sampling(const models::sampling::Units& units,
                                                            const models::sampling::Request& request,
                                                            emulator::SamplingReport& report)
{
  report.loop = units.loop;
  report.loop_iterations = units.loop_iterations;
  report.units = units.count;
  report.confidence = request.confidence;
  report.margin = request.margin;
  report.automatic = not request.size.has_value();
  if (not units.why_not.empty()) {
    report.why_not = units.why_not;
    return nullptr;
  }
  const models::sampling::Phases phases = models::sampling::form_phases(units);
  report.silhouette = phases.silhouette;
  report.features = phases.features;
  auto plan = std::make_shared<const models::sampling::Plan>(models::sampling::plan_sample(units, phases, request));
  for (int formed : plan->formed) {
    report.phases.emplace_back();
    report.phases.back().transient = formed < 0;
    if (formed >= 0)
      report.phases.back().distinct = phases.distinct[static_cast<std::size_t>(formed)];
  }
  report.note = plan->note;
  std::uint64_t emulated = 0;
  for (std::uint8_t role : plan->role)
    emulated += role != models::sampling::Plan::Skipped ? 1 : 0;
  if (emulated == units.count) {
    report.why_not = "the sample takes every iteration (" + std::to_string(units.count) + " units)";
    return nullptr;
  }
  return plan;
}

void merge_sampling_report(emulator::SamplingReport& into, const emulator::SamplingReport& plan_report)
{
  into.loop = plan_report.loop;
  into.silhouette = plan_report.silhouette;
  into.features = plan_report.features;
  for (std::size_t h = 0; h < into.phases.size() && h < plan_report.phases.size(); ++h)
    into.phases[h].distinct = plan_report.phases[h].distinct;
}

void print_sampling(std::ostream& out, const emulator::ReplayResult& result)
{
  if (not result.sampling)
    return;
  const emulator::SamplingReport& s = *result.sampling;
  if (not s.applied) {
    out << "sampling: not applied, every iteration emulated: " << s.why_not << '\n';
    return;
  }
  std::size_t phases = 0;
  for (const emulator::SamplingReport::Phase& p : s.phases)
    phases += p.transient ? 0 : 1;
  const std::string transient = s.transient > 0 ? " (and the first " + std::to_string(s.transient) + " whole)" : "";
  const std::uint64_t emulated = s.sampled + s.warm_up + s.transient;
  const double half = s.half_width_s;
  const double m = result.makespan_s;
  out << "sampling: makespan " << general(m) << " s +/- " << general(half) << " s (" << fixed(100 * half / m, 2)
      << " %, " << fixed(100 * s.confidence, 0) << " % interval " << general(m - half) << " - " << general(m + half)
      << " s); " << s.sampled << " of " << s.units << " iterations sampled in " << phases
      << (phases == 1 ? " phase" : " phases") << transient << ", " << emulated << " emulated ("
      << fixed(100.0 * static_cast<double>(emulated) / static_cast<double>(s.units), 1)
      << " %) with their warm-ups\n";
  if (s.automatic && half > s.margin * m)
    out << "sampling: the interval is wider than --margin " << general(s.margin)
        << " (the units' times vary more than the allocation expected): a larger --sample N narrows it\n";
}

void print_input_phases(std::ostream& out, const models::trace::TraceModel& model, const std::string& indent)
{
  if (not model.input_phases) {
    if (not model.input_phases_note.empty())
      out << indent << "input sensitivity: not tested: " << model.input_phases_note << '\n';
    return;
  }
  const models::trace::InputPhases& ip = *model.input_phases;
  out << indent << "input sensitivity at Np " << ip.np << ": " << ip.phases.size()
      << (ip.phases.size() == 1 ? " phase" : " phases") << " of " << ip.units << " iterations at Nw "
      << general(ip.training_nw) << ", compared with Nw ";
  for (std::size_t i = 0; i < ip.compared_nw.size(); ++i)
    out << (i ? ", " : "") << general(ip.compared_nw[i]);
  out << " (Eq. 6: a phase whose units' mean or spread moved by more than 10 % is input sensitive)\n";
  for (std::size_t h = 0; h < ip.phases.size(); ++h) {
    const models::trace::InputPhase& p = ip.phases[h];
    out << indent << "  phase " << h << ": " << fixed(100 * p.share, 1) << " % of the loop's time, " << p.units
        << (p.units == 1 ? " iteration, " : " iterations, ") << (p.compared_inputs == 0 ? "untested (no iteration of the other sizes in it)"
            : p.sensitive       ? "input sensitive"
                                : "not input sensitive");
    if (not p.sensitive_functions.empty()) {
      out << " (work of ";
      for (std::size_t f = 0; f < p.sensitive_functions.size(); ++f)
        out << (f ? ", " : "") << p.sensitive_functions[f];
      out << " moved)";
    }
    out << '\n';
  }
  if (not model.input_phases_note.empty())
    out << indent << "  (" << model.input_phases_note << ")\n";
}

}  // namespace gridcast::cli
