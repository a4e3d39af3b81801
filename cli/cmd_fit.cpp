// `gridcast fit`: fits the representative trace model (models/trace_model.hpp) to profile directories.
#include "commands.hpp"
#include "options.hpp"
#include "sampling.hpp"

#include "gridcast/models/trace_model.hpp"

#include <boost/program_options.hpp>

#include <iomanip>
#include <map>
#include <set>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;

namespace gridcast::cli {

namespace {

/// How the compute sites of one library function were priced (print_library_pricing).
struct LibrarySites {
  int priced = 0;
  double min_scale = 0, max_scale = 0;
  std::string kernel;
  std::map<std::string, int> regressed;  ///< why -> sites
};

/// The polling constructs that absorbed library work, and how many of them price it from the arguments.
struct AbsorbingConstructs {
  int total = 0, priced = 0;
  std::set<std::string> kernels;
};

void collect_library_sites(const models::trace::TraceModel& model, const std::vector<models::trace::TemplateNode>& nodes,
                           std::map<std::string, LibrarySites>& out, AbsorbingConstructs& absorbing)
{
  for (const models::trace::TemplateNode& n : nodes) {
    collect_library_sites(model, n.body, out, absorbing);
    if (n.absorbed_flops) {
      ++absorbing.total;
      absorbing.priced += n.absorbed_library.empty() ? 0 : 1;
      for (const models::trace::LibraryPricing& l : n.absorbed_library)
        absorbing.kernels.insert(l.kernel);
    }
    if (n.kind == models::trace::RolledNode::Kind::Loop || (not n.library && n.regressed_because.empty()))
      continue;
    LibrarySites& f = out[model.tokens.at(n.token).function];
    if (n.library) {
      f.min_scale = f.priced == 0 ? n.library->scale : std::min(f.min_scale, n.library->scale);
      f.max_scale = f.priced == 0 ? n.library->scale : std::max(f.max_scale, n.library->scale);
      f.kernel    = n.library->kernel;
      ++f.priced;
    } else {
      ++f.regressed[n.regressed_because];
    }
  }
}

/// One line per library function with compute sites: how many were priced from their arguments (on
/// which curve, the range of their scales: measured / curve over the training calls) and how many were
/// regressed on (Nw, Np), and why. model.json says it per site (a position's `library`).
void print_library_pricing(const models::trace::TraceModel& model)
{
  std::map<std::string, LibrarySites> functions;
  AbsorbingConstructs absorbing;
  for (const models::trace::TraceGroup& g : model.groups)
    collect_library_sites(model, g.body, functions, absorbing);
  for (const auto& [fn, f] : functions) {
    std::cout << "  priced " << fn << ": " << f.priced << " site(s) from their arguments";
    if (f.priced > 0) {
      std::ostringstream scale;
      scale << std::setprecision(3) << f.min_scale;
      if (f.max_scale > f.min_scale)
        scale << " to " << f.max_scale;
      std::cout << " (" << f.kernel << " rate curve, scale " << scale.str() << ")";
    }
    for (const auto& [why, sites] : f.regressed)
      std::cout << ", " << sites << " regressed on (Nw, Np): " << why;
    std::cout << '\n';
  }
  // The library work polling constructs absorbed (model.json `absorbed_library`): priced where every
  // absorbed library call carried its arguments, else regressed with the rest of the construct's work.
  if (absorbing.total > 0) {
    std::cout << "  priced absorbed work: " << absorbing.priced << " of " << absorbing.total
              << " polling construct(s) from their arguments";
    const char* sep = " (";
    for (const std::string& k : absorbing.kernels) {
      std::cout << sep << k;
      sep = ", ";
    }
    std::cout << (absorbing.kernels.empty() ? "" : ")") << '\n';
  }
}

}  // namespace

int run_fit(const std::vector<std::string>& args)
{
  std::vector<std::string> profiles;
  std::string out;
  double threshold = 0.03;
  po::options_description options("fit options");
  options.add_options()
    ("profile", po::value(&profiles)->composing(),
     "profile directories of one application at two or more (Nw, Np) points (run.json's nw and np); SMPI "
     "traces go through `gridcast import tit` first")
    ("out,o", po::value(&out), "model.json to write (required)")
    ("group-threshold", po::value(&threshold)->default_value(0.03, "0.03"),
     "ranks whose rolled traces differ by at most this fraction (Myers edit distance / length) share a trace group");
  po::positional_options_description positional;
  positional.add("profile", -1);
  po::variables_map vm;
  if (not parse("fit",
                "fit PROFILE... -o model.json [--group-threshold F]",
                args, options, positional, vm,
                "Folds every rank's calls into loops, groups ranks with similar rolled traces, infers the\n"
                "rank-to-group rule, and fits loop counts, sizes, peers and compute amounts as functions of\n"
                "(Nw, Np); then the latency model of every compute function (mean work per call site regressed on\n"
                "(Nw, Np), times a ratio from the call's context by a random forest). See docs/reference/trace-model.md\n"
                "and docs/reference/latency-model.md."))
    return 0;
  if (out.empty())
    throw UsageError{"--out/-o model.json is required", "fit"};
  if (profiles.empty())
    throw UsageError{"no profile directories given", "fit"};
  if (not(threshold >= 0 && threshold < 1))
    throw UsageError{"--group-threshold must be in [0, 1)", "fit"};
  models::trace::FitOptions opt;
  opt.group_threshold = threshold;
  std::vector<std::filesystem::path> paths(profiles.begin(), profiles.end());
  models::trace::TraceModel model = models::trace::fit_trace_model(paths, opt);
  models::trace::write_model(out, model);
  std::cout << "fitted " << model.groups.size() << " trace group(s) on " << model.training.size()
            << " profiles, rule '" << model.rule.classifier.name() << "'; wrote " << out << '\n';
  // One line per group: which ranks run it and how much structure it has.
  struct Stats {
    int positions = 0, loops = 0, nw_loops = 0, polls = 0;
  };
  auto count = [](auto& self, const std::vector<models::trace::TemplateNode>& nodes, Stats& s) -> void {
    for (const auto& n : nodes) {
      ++s.positions;
      if (n.kind == models::trace::RolledNode::Kind::Loop) {
        ++s.loops;
        s.nw_loops += n.nw_dependent ? 1 : 0;
        self(self, n.body, s);
      } else if (n.kind == models::trace::RolledNode::Kind::Poll) {
        ++s.polls;
      }
    }
  };
  for (std::size_t g = 0; g < model.groups.size(); ++g) {
    Stats s;
    count(count, model.groups[g].body, s);
    std::string classes;
    for (const auto& [cls, group] : model.rule.classes)
      if (group == static_cast<int>(g))
        classes += (classes.empty() ? "" : " | ") + cls;
    std::cout << "  group " << g << " (" << classes << "): " << s.positions << " positions, " << s.loops
              << " loop(s) (" << s.nw_loops << " depending on Nw), " << s.polls << " polling construct(s)\n";
  }
  // Axis sweeps (only where the plain fit failed): the calls per axis of each extent class.
  for (std::size_t k = 0; k < model.axis_sweeps.size(); ++k) {
    const auto& a = model.axis_sweeps[k];
    auto calls    = [&](std::size_t c) {
      return a.blocks[c] ? std::to_string(a.blocks[c]->size()) : std::string("?");
    };
    std::cout << "  axis sweep " << k << " (" << model.tokens.at(a.placeholder).function
              << "): calls per axis of 1 / 2 / more ranks: " << calls(0) << " / " << calls(1) << " / " << calls(2)
              << '\n';
  }
  // The latency model: one line per function with compute calls.
  auto percent = [](double v) {
    std::ostringstream o;
    o << std::setprecision(3) << 100 * v << " %";
    return o.str();
  };
  for (const auto& f : model.latency) {
    std::cout << "  latency " << f.function << ": " << f.calls << " call(s) at " << f.sites << " site(s), "
              << (f.ratio ? "ratio forest of " + std::to_string(f.ratio->trees.size()) + " trees"
                          : std::string("ratio 1 (every call at its site's mean)"))
              << ", training error " << percent(f.train_error) << ", CV error "
              << (f.cv_error ? percent(*f.cv_error) : std::string("n/a"))
              << (f.variability.empty() ? "" : ", variability histogram") << '\n';
  }
  // Library call sites: which path priced each (only for profiles calibrated with library rate curves;
  // without them every library site is regressed, as before).
  if (not model.library_rates.empty())
    print_library_pricing(model);
  print_input_phases(std::cout, model, "  ");
  for (const std::string& w : model.warnings)
    std::cerr << "gridcast fit: warning: " << w << '\n';
  return 0;
}

}  // namespace gridcast::cli
