#include "sampling.hpp"
#include "commands.hpp"

#include "gridcast/foundation/errors.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
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
     "(docs/reference/sampling.md); predict's fast-forward is then off")
    ("confidence", po::value(&args.confidence)->default_value(args.confidence),
     "--sample: the confidence level of the interval, in (0, 1)")
    ("margin", po::value(&args.margin)->default_value(args.margin),
     "--sample auto: the interval's half-width the sample size aims at, relative to the estimate (> 0); where "
     "the first pass misses it, a second pass sized from the emulated spread runs")
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
  if (vm.count("analysis") > 0)
    throw UsageError{"--analysis needs every iteration emulated, --sample emulates some: give one", command};
  if (vm.count("what-if") > 0)
    throw UsageError{"--what-if analyses every iteration, --sample emulates some: give one", command};
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
    report.phases.back().transient = formed == models::sampling::Plan::kTransientStratum;
    report.phases.back().rare = formed == models::sampling::Plan::kRareStratum;
    if (formed >= 0)
      report.phases.back().distinct = phases.distinct[static_cast<std::size_t>(formed)];
  }
  report.note = plan->note;
  std::uint64_t emulated = 0;
  for (std::uint8_t role : plan->role)
    emulated += role != models::sampling::Plan::Skipped ? 1 : 0;
  if (emulated == units.count) {
    report.why_not = std::string("the sample takes every ") +
                     (units.kind == models::sampling::UnitKind::Windows ? "window" : "iteration") + " (" +
                     std::to_string(units.count) + " units)";
    return nullptr;
  }
  return plan;
}

namespace {

/// The first pass's verdict, sent from the child to the parent through a pipe: one line per stratum
/// ("mean std sampled", the doubles in hexadecimal, exact), then the relative half-width.
std::string observed_text(const emulator::SamplingReport& r)
{
  std::ostringstream o;
  o << std::hexfloat;
  for (const emulator::SamplingReport::Phase& p : r.phases)
    if (not p.transient && not p.rare)
      o << p.mean_s << ' ' << p.std_s << ' ' << p.sampled << '\n';
  o << "half " << (r.estimate_s > 0 ? r.half_width_s / r.estimate_s : 0.0) << '\n';
  return o.str();
}

models::sampling::Request::Observed observed_of(const std::string& text)
{
  models::sampling::Request::Observed o;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    if (line.rfind("half ", 0) == 0) {
      std::string word, value;
      l >> word >> value;
      o.half_width_relative = std::strtod(value.c_str(), nullptr);
      return o;
    }
    std::string mean, sd;
    std::uint64_t n = 0;
    if (not(l >> mean >> sd >> n))
      throw InternalError("sampling: unreadable first-pass line '" + line + "'");
    o.mean_s.push_back(std::strtod(mean.c_str(), nullptr));
    o.std_s.push_back(std::strtod(sd.c_str(), nullptr));
    o.sampled.push_back(n);
  }
  throw InternalError("sampling: the first pass's report has no half-width");
}

}  // namespace

AutoSampleOutcome run_auto_sample(
    const models::sampling::Units& units, const models::sampling::Request& request,
    std::shared_ptr<const models::sampling::Plan> first, const emulator::SamplingReport& first_report,
    const std::function<emulator::ReplayResult(std::shared_ptr<const models::sampling::Plan>)>& emulate,
    const std::function<void(const std::string&)>& note)
{
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0)
    throw InternalError(std::string("sampling: pipe: ") + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0)
    throw InternalError(std::string("sampling: fork: ") + std::strerror(errno));
  if (child == 0) {
    ::close(fds[0]);
    emulator::ReplayResult result = emulate(first);
    const emulator::SamplingReport* s = result.sampling ? &*result.sampling : nullptr;
    std::uint64_t sampleable = 0, sampled = 0;
    if (s)
      for (const emulator::SamplingReport::Phase& p : s->phases)
        if (not p.transient && not p.rare) {
          sampleable += p.units;
          sampled += p.sampled;
        }
    bool enough = s == nullptr || not s->applied || s->half_width_s <= request.margin * s->estimate_s ||
                  sampled >= sampleable;
    if (not enough) {
      // A second pass that would sample as many units per phase draws the same ones: not worth running.
      models::sampling::Request second = request;
      second.observed = observed_of(observed_text(*s));
      emulator::SamplingReport ignored;
      const auto next = plan_sampling(units, second, ignored);
      enough = next && next->phase_sampled == first->phase_sampled;
    }
    if (enough) {
      ::close(fds[1]);
      AutoSampleOutcome out;
      out.result = std::move(result);
      out.plan = std::move(first);
      out.report = first_report;
      return out;  // the child goes on with the command
    }
    const std::string text = observed_text(*s);
    std::size_t at = 0;
    while (at < text.size()) {
      const ssize_t w = ::write(fds[1], text.data() + at, text.size() - at);
      if (w <= 0)
        std::_Exit(2);
      at += static_cast<std::size_t>(w);
    }
    ::close(fds[1]);
    std::_Exit(0);  // nothing of this process's state is written: the parent runs the second pass
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    text.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      throw InternalError(std::string("sampling: waitpid: ") + std::strerror(errno));
  if (not WIFEXITED(status))
    throw InternalError("sampling: the first pass ended by signal " + std::to_string(WTERMSIG(status)));
  AutoSampleOutcome out;
  if (text.empty() || WEXITSTATUS(status) != 0) {
    out.exit_code = WEXITSTATUS(status);  // the child finished the command (or failed, and said why)
    return out;
  }
  models::sampling::Request second = request;
  second.observed = observed_of(text);
  out.plan = plan_sampling(units, second, out.report);
  const std::string said =
      "--sample auto: " + (out.plan ? out.plan->note : "the first pass was over the margin and " + out.report.why_not);
  if (note)
    note(said);
  else
    std::cerr << "gridcast: note: " << said << '\n';
  out.result = emulate(out.plan);  // null: every unit
  return out;
}

SampledEmulation emulate_sampled(const models::sampling::Units& units,
                                 const std::optional<models::sampling::Request>& request,
                                 emulator::ReplayOptions& opts, emulator::SamplingReport& report,
                                 const std::function<emulator::ReplayResult()>& emulate)
{
  SampledEmulation out;
  if (request && not request->size && opts.sampling_plan) {
    AutoSampleOutcome pass =
        run_auto_sample(units, *request, opts.sampling_plan, report, [&](std::shared_ptr<const models::sampling::Plan> plan) {
          opts.sampling_plan = std::move(plan);
          return emulate();
        }, opts.note);
    if (pass.exit_code) {
      out.exit_code = pass.exit_code;
      return out;
    }
    out.result = std::move(*pass.result);
    report = std::move(pass.report);
  } else {
    out.result = emulate();
  }
  if (request) {
    if (out.result.sampling)
      merge_sampling_report(*out.result.sampling, report);
    else
      out.result.sampling = report;
  }
  return out;
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
    phases += p.transient || p.rare ? 0 : 1;
  std::string transient;
  if (s.transient > 0 && s.rare > 0)
    transient = " (and the first " + std::to_string(s.transient) + " and " + std::to_string(s.rare) +
                " with rare calls whole)";
  else if (s.transient > 0)
    transient = " (and the first " + std::to_string(s.transient) + " whole)";
  else if (s.rare > 0)
    transient = " (and " + std::to_string(s.rare) + " with rare calls whole)";
  const std::uint64_t emulated = s.sampled + s.warm_up + s.transient + s.rare;
  const double half = s.half_width_s;
  const double m = result.makespan_s;
  out << "sampling: makespan " << general(m) << " s +/- " << general(half) << " s (" << fixed(100 * half / m, 2)
      << " %, " << fixed(100 * s.confidence, 0) << " % interval " << general(m - half) << " - " << general(m + half)
      << " s); " << s.sampled << " of " << s.units
      << (s.loop == models::sampling::kWindowLoopName ? " windows" : " iterations") << " sampled in " << phases
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
