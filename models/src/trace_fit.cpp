// Fitting the representative trace model to profile directories. The steps, each in its own file:
// reading the profiles into tokens and folding every rank (trace_fit_read.cpp, trace_fit_tokens.cpp),
// grouping the ranks and inferring the group rule (trace_fit_group.cpp), walking each group's exact
// members along its template (trace_fit_walk.cpp, trace_fit_series.cpp), fitting every template
// position's counts, sizes, peers and compute amounts (trace_fit_params.cpp), and the latency model of
// the compute functions (latency_fit.cpp).
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/sampling.hpp"
#include "gridcast/models/trace_model.hpp"
#include "latency_fit.hpp"
#include "nw_list.hpp"
#include "trace_fit_group.hpp"
#include "trace_fit_params.hpp"
#include "trace_fit_read.hpp"
#include "trace_fit_walk.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace gridcast::models::trace {

namespace {

/// Whether the training rank counts have MPI_Dims_create(Np, 3) grids of different shapes (axes of
/// extent 1, 2, > 2).
bool grid_shapes_differ(const std::vector<std::filesystem::path>& paths)
{
  std::set<std::array<int, 3>> classes;
  for (const auto& p : paths) {
    std::array<int, 3> c{};
    int k = 0;
    for (int e : dims_create(ProfileDir(p).info().np, 3))
      c[static_cast<std::size_t>(k++)] = AxisSweep::extent_class(e);
    classes.insert(c);
  }
  return classes.size() > 1;
}

/// The fit of one set of profiles, step after step.
class Fitter {
public:
  /// `axis_sweeps`: look for axis sweeps (AxisSweep) and cut them out of every rank's calls.
  Fitter(const std::vector<std::filesystem::path>& paths, const FitOptions& opt, bool axis_sweeps = false)
      : opt_(opt), reader_(paths, opt, axis_sweeps)
  {
  }

  /// Whether the fit found axis sweeps (only looked for when asked).
  bool has_axis_sweeps() const { return not reader_.axis().empty(); }

  TraceModel run()
  {
    TraceModel model;
    model.group_threshold = opt_.group_threshold;
    reader_.assign_model_ids(model);
    std::vector<std::pair<double, double>> points;  // by profile: (Nw, Np)
    for (const detail::LoadedProfile& p : reader_.profiles()) {
      model.training.push_back({p.label, p.info.nw, p.info.np, recorded_mpi_library(p.info)});
      points.emplace_back(p.info.nw, static_cast<double>(p.info.np));
    }
    std::vector<detail::RankRef> reps = detail::assign_groups(reader_, opt_.group_threshold, opt_.fold.by_coverage);
    reader_.fit_cut_outs(model);
    model.rule = detail::infer_rule(reader_.profiles(), reader_.axis().kinds.size());
    if (opt_.split_by_class && model.rule.classes.size() > 1) {
      // Assigned again, each rank only to a group founded by a rank of its class: a group's template is
      // then its own class's calls (positions another class alone ran would never be observed).
      const RankClassifier by = model.rule.classifier;
      reps       = detail::assign_groups(reader_, opt_.group_threshold, opt_.fold.by_coverage, &by);
      model.rule = detail::infer_rule(reader_.profiles(), reader_.axis().kinds.size());
    }

    std::vector<detail::GroupData> data;
    // The first profile recorded with library rate curves gives them (the profiles of one fit come from
    // one machine); its speed turns the seconds of a priced call into flops.
    for (const detail::LoadedProfile& p : reader_.profiles())
      if (not p.info.host.library_rates.empty()) {
        model.library_rates       = p.info.host.library_rates;
        model.library_speed_flops = p.info.host.speed_flops;
        break;
      }
    detail::GroupCollector collector(reader_, model.tokens, model.library_rates);
    for (std::size_t g = 0; g < reps.size(); ++g)
      data.push_back(collector.collect(reader_.rank_trace(reps[g]).rolled, g));
    detail::TemplateFitter fitter(model, data);
    for (std::size_t g = 0; g < data.size(); ++g)
      model.groups.push_back(fitter.fit_group(data[g], g));

    std::vector<detail::LatencySite> sites;
    for (const detail::GroupData& d : data)
      for (const detail::SlotObs& s : d.slots)
        if (s.kind == RolledNode::Kind::Call && model.tokens[s.token].op == Op::Compute)
          sites.push_back({&model.tokens[s.token].function, &s.compute, s.compute_flops.points(), s.fitted_flops});
    for (FunctionLatency& fl : detail::fit_latency(sites, points, opt_.forest, opt_.variability_bins))
      model.latency.push_back(std::move(fl));
    return model;
  }

private:
  FitOptions opt_;
  detail::ProfileReader reader_;
};

}  // namespace

const FunctionLatency* TraceModel::latency_of(const std::string& function) const
{
  for (const FunctionLatency& f : latency)
    if (f.function == function)
      return &f;
  return nullptr;
}

double TraceModel::library_flops(const LibraryPricing& pricing, double nw, double np) const
{
  auto curve = library_rates.find(pricing.kernel);
  if (curve == library_rates.end())
    throw InputError({}, "a site of " + pricing.kernel + " is priced from its arguments but the model has no rate curve for it");
  const double work = std::max(0.0, pricing.work.eval(nw, np));
  const double bytes = std::max(1.0, pricing.working_set_bytes.eval(nw, np));
  return work / kernel_rate_at(curve->second, bytes) * pricing.scale * library_speed_flops;
}

double TraceModel::absorbed_work(const TemplateNode& poll, double nw, double np) const
{
  if (not poll.absorbed_flops)
    return 0.0;
  double flops = std::max(0.0, poll.absorbed_flops->eval(nw, np));
  for (const LibraryPricing& pricing : poll.absorbed_library)
    flops += library_flops(pricing, nw, np);
  return flops;
}

const NumberedLoop* TraceModel::numbered_of(std::uint32_t token) const
{
  for (const NumberedLoop& l : numbered)
    if (l.placeholder == token)
      return &l;
  return nullptr;
}

const AxisSweep* TraceModel::axis_sweep_of(std::uint32_t token) const
{
  for (const AxisSweep& a : axis_sweeps)
    if (a.placeholder == token)
      return &a;
  return nullptr;
}

const TreeSequence* TraceModel::tree_of(std::uint32_t token) const
{
  for (const TreeSequence& t : trees)
    if (t.placeholder == token)
      return &t;
  return nullptr;
}

namespace {

TraceModel fit_one_fold(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  Fitter f(profiles, options);
  try {
    return f.run();
  } catch (const InputError&) {
    // A code whose calls along an axis depend on the axis' extent (LAMMPS' CommBrick) gives every shape
    // of the process grid other templates, which the plain model cannot express: fitted again with axis
    // sweeps cut out. Only then, so that every model the plain fit expresses stays byte for byte the
    // same; where no sweep is found the plain fit's error stands.
    if (options.axis_sweeps == FitOptions::AxisSweeps::Off || not grid_shapes_differ(profiles))
      throw;
    Fitter again(profiles, options, true);
    if (not again.has_axis_sweeps())
      throw;
    return again.run();
  }
}

/// How many of the model's trace groups some training rank count has no rank in: a template that
/// holds at some rank counts only (a code path that depends on Np, or a fold that cut the sequences of
/// different Np differently).
std::size_t np_split_groups(const TraceModel& m)
{
  std::set<int> nps;
  for (const TrainingPoint& t : m.training)
    nps.insert(t.np);
  std::map<int, std::size_t> counts_of_group;  // group -> the rank counts that have it
  for (int np : nps) {
    std::set<int> used;
    for (int r = 0; r < np; ++r)
      used.insert(m.rule.group_of(r, np));
    for (int g : used)
      ++counts_of_group[g];
  }
  std::size_t split = m.groups.size() - counts_of_group.size();
  for (const auto& [g, n] : counts_of_group)
    split += n < nps.size() ? 1 : 0;
  return split;
}

/// A fit and a second reading of the same profiles: `fit(options)`, and where it fails (not on a branch
/// on Nw: fit_code_paths keeps the sizes that agree) or its model has flaws of the first kind
/// (`flaws(model).first`), `fit(again)`, kept, with `note` in its warnings, where it succeeds and has
/// fewer flaws (the two kinds compared in order). Otherwise the first model, or the first error.
using FitFn    = std::function<TraceModel(const FitOptions&)>;
using FlawsFn  = std::function<std::pair<std::size_t, std::size_t>(const TraceModel&)>;
TraceModel fit_with_second_reading(const FitFn& fit, const FitOptions& options, const FitOptions& again,
                                   const FlawsFn& flaws, const char* note)
{
  std::optional<TraceModel> first;
  try {
    first = fit(options);
  } catch (const detail::NwBranchError&) {
    throw;
  } catch (const InputError&) {
    try {
      TraceModel m = fit(again);
      m.warnings.push_back(note);
      return m;
    } catch (const InputError&) {
    }
    throw;
  }
  const auto first_flaws = flaws(*first);
  if (first_flaws.first == 0)
    return std::move(*first);
  try {
    TraceModel m = fit(again);
    if (flaws(m) < first_flaws) {
      m.warnings.push_back(note);
      return m;
    }
  } catch (const InputError&) {
  }
  return std::move(*first);
}

/// A retry layer: where `flag(options)` is set, `fit(options)`; otherwise fit_with_second_reading with the
/// same options and that flag set (every layer of fit_one_size_class has this shape).
TraceModel retry_with_flag(const FitFn& fit, const FitOptions& options, const std::function<bool&(FitOptions&)>& flag,
                           const FlawsFn& flaws, const char* note)
{
  FitOptions again = options;
  if (flag(again))
    return fit(options);
  flag(again) = true;
  return fit_with_second_reading(fit, options, again, flaws, note);
}

/// One fit of a set of profiles that take one code path. Folded shortest period first, a loop whose
/// last iteration ends like its body's tail (`(S C)x2 S (C)x2`, where `(S C)x3 C` is meant: a
/// butterfly of log2(Np) rounds and a step's own compute) is cut where the iteration count changes
/// with Np, so each rank count gets a template of its own and the rule separates them by whatever
/// tells the counts apart (a grid shape), not by the code. Where that happens (some rank count lacks a
/// trace group) or no rule fits, the profiles are folded again by coverage (FoldOptions::by_coverage),
/// and that model is kept when fewer of its groups are missing at some rank count. Only then, so that
/// every model the plain fold expresses stays byte for byte the same.
TraceModel fit_fold_choice(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  return retry_with_flag(
      [&](const FitOptions& o) { return fit_one_fold(profiles, o); }, options,
      [](FitOptions& o) -> bool& { return o.fold.by_coverage; },
      [](const TraceModel& m) { return std::make_pair(np_split_groups(m), std::size_t{0}); },
      "the training rank counts fold into different templates shortest period first; folded by coverage (the "
      "repeat that covers the most calls first), they share them");
}

/// One fit of a set of profiles that take one code path (fit_fold_choice), and where it fails or gives
/// some training rank count trace groups of its own, the fit with the tags of functions whose tag set
/// in a rank changes with Np fitted per position (FitOptions::tags_follow_np), kept when it has fewer
/// such groups. A code that tags each of its log2(Np) rounds with the round's number (a hand-written
/// butterfly) makes other calls at every Np as long as tags are part of what a call is: np 8 sends with
/// tags 0..2, np 16 with 0..3, and no rank-to-group rule separates them but the rank count. Fitted per
/// position the tag is the loop's index, and the rounds one loop of log2(Np) iterations. Only then, so
/// that every model the plain reading expresses stays byte for byte the same.
TraceModel fit_tag_choice(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  return retry_with_flag(
      [&](const FitOptions& o) { return fit_fold_choice(profiles, o); }, options,
      [](FitOptions& o) -> bool& { return o.tags_follow_np; },
      [](const TraceModel& m) { return std::make_pair(np_split_groups(m), std::size_t{0}); },
      "the tags of a rank change with the rank count (a tag per round, as many rounds as the rank count "
      "gives): they are fitted per position, not part of what a call is");
}

/// How many template positions of the model have a rank expression (peer, source, root, split key) that
/// explains only some of their observations.
std::size_t approximated_ranks(const TraceModel& m)
{
  std::size_t n = 0;
  std::function<void(const std::vector<TemplateNode>&)> walk = [&](const std::vector<TemplateNode>& nodes) {
    for (const TemplateNode& t : nodes) {
      n += static_cast<std::size_t>(std::count_if(t.approximated.begin(), t.approximated.end(), [](const Approximation& a) {
        return a.field == "peer" || a.field == "source" || a.field == "root" || a.field == "split key" ||
               a.field == "split color";
      }));
      walk(t.body);
    }
  };
  for (const TraceGroup& g : m.groups)
    walk(g.body);
  return n;
}

/// The fit of a set of profiles that take one code path (fit_fold_choice), and where that leaves rank
/// expressions approximated or fails, the fit of their calls read as the hook records them
/// (FitOptions::computes_between_calls), kept when it leaves fewer rank expressions approximated (then
/// fewer groups missing at some rank count). In an SMPI trace a role's own work next to a collective
/// whose root follows the step (the owner of row k scales it, then broadcasts it from root k mod Np;
/// the root of a reduction logs it) is a compute call that only the role's ranks have in that
/// iteration, so every rank has a template of its own, and the roots, read across unlike templates,
/// are approximated and disagree (a run that cannot finish). Read as the hook would record them, every
/// rank runs one template, the role's work a compute position (whose work stays on a moving root:
/// TemplateNode::RootWork). Only then, so that every model the plain reading expresses stays byte for
/// byte the same.
TraceModel fit_hook_form_choice(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  return retry_with_flag(
      [&](const FitOptions& o) { return fit_tag_choice(profiles, o); }, options,
      [](FitOptions& o) -> bool& { return o.computes_between_calls; },
      [](const TraceModel& m) { return std::make_pair(approximated_ranks(m), np_split_groups(m)); },
      "the calls are read as the profiling hook records them, one compute call between two other calls (of no "
      "work where the trace has none) and consecutive computes of one function as one: read as recorded, the "
      "ranks' templates left rank expressions approximated");
}

/// The fit of a set of profiles that take one code path (fit_hook_form_choice), and where that leaves rank
/// expressions approximated or fails, the fit with every class of the group rule a group of its own
/// (FitOptions::split_by_class), kept when it leaves fewer approximated (then fewer groups missing at some
/// rank count). A code that exchanges only with the neighbours it has, one tag for both directions, runs
/// one template at every corner of its grid with other peers (the low corner sends up, the high one
/// down): in one group no rank expression explains both, and the corners' messages go astray at a larger
/// grid. Only then, so that every model the plain reading expresses stays byte for byte the same.
TraceModel fit_one_size_class(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  return retry_with_flag(
      [&](const FitOptions& o) { return fit_hook_form_choice(profiles, o); }, options,
      [](FitOptions& o) -> bool& { return o.split_by_class; },
      [](const TraceModel& m) { return std::make_pair(approximated_ranks(m), np_split_groups(m)); },
      "ranks of one template addressed their peers in ways no rank expression of the group names: each class of "
      "the rule (a corner, an edge of the grid) has a group of its own");
}

/// The sets of training sizes fit_largest_size_class tries, in order: the k largest (k from all but one
/// down to 2), then the other runs of consecutive sizes, the longest first and, among as long, the
/// largest sizes first, then the largest size alone. `nws` sorted descending, distinct.
std::vector<std::vector<double>> size_subsets(const std::vector<double>& nws)
{
  std::vector<std::vector<double>> out;
  const std::size_t n = nws.size();
  for (std::size_t len = n - 1; len >= 2; --len)
    for (std::size_t first = 0; first + len <= n; ++first)  // first == 0: the len largest
      out.emplace_back(nws.begin() + static_cast<std::ptrdiff_t>(first),
                       nws.begin() + static_cast<std::ptrdiff_t>(first + len));
  // Suffixes of the largest sizes come before the other windows of their length; a run of smaller sizes
  // (still two or more, so the model can scale with Nw) before the largest size alone, which cannot.
  std::stable_partition(out.begin(), out.end(), [&](const std::vector<double>& v) { return v.front() == nws.front(); });
  if (n >= 2)
    out.push_back({nws.front()});
  return out;
}

/// Where some training sizes take other code paths than others (no rank-to-group rule fits every
/// profile, and the profiles of one Np disagree; or the sizes call different functions): the model of
/// the sizes whose profiles agree, the nearest to the targets predictions are asked for (larger than
/// training) first, but two sizes or more before one (a model of one size cannot scale with Nw).
/// model.json says which sizes it left out and why (size_class), and synthesis lists it in model_quality.
TraceModel fit_largest_size_class(const std::vector<std::filesystem::path>& profiles, const FitOptions& options,
                                  const detail::NwBranchError& why)
{
  std::vector<double> nws;
  for (const auto& p : profiles)
    nws.push_back(ProfileDir(p).info().nw);
  std::sort(nws.begin(), nws.end(), std::greater<>());
  nws.erase(std::unique(nws.begin(), nws.end()), nws.end());
  // At least two training points (Nw, Np): a model of one point fits nothing (with repeated runs the
  // largest size alone is several profiles of one point, and its model carried that point's calls to
  // every target: Quantum ESPRESSO at 2x was predicted at the training size's time, -86 %). Where no two
  // points agree, the reason the sizes disagree is the error to report.
  for (const std::vector<double>& sizes : size_subsets(nws)) {
    std::vector<std::filesystem::path> subset;
    std::set<std::pair<double, int>> points;
    for (const auto& p : profiles) {
      const RunInfo info = ProfileDir(p).info();
      if (std::find(sizes.begin(), sizes.end(), info.nw) != sizes.end()) {
        subset.push_back(p);
        points.insert({info.nw, info.np});
      }
    }
    if (points.size() < 2)
      continue;
    try {
      TraceModel m = fit_one_size_class(subset, options);
      std::vector<double> kept = sizes, left;
      for (double nw : nws)
        if (std::find(sizes.begin(), sizes.end(), nw) == sizes.end())
          left.push_back(nw);
      std::sort(kept.begin(), kept.end());
      std::sort(left.begin(), left.end());
      const auto next_above = std::find_if(left.begin(), left.end(), [&](double nw) { return nw > kept.back(); });
      const bool above      = next_above != left.end();
      m.size_class = "fitted on the profiles at Nw " + nw_list(kept) + " only, the " +
                     (above ? "most" : "largest") + " sizes whose ranks take the same code paths; those at Nw " +
                     nw_list(left) + " take others (" + why.reason().substr(0, why.reason().find(". ")) + "): " +
                     (above ? "sizes from Nw " + nw_list({*next_above}) +
                                  " on may take those paths, which the model leaves out"
                            : "sizes far below Nw " + nw_list({kept.front()}) + " may take other paths again");
      return m;
    } catch (const detail::NwBranchError&) {
    }
  }
  throw why;
}

/// How many blocks of the model's templates repeat once loop counts are ignored: a loop whose body is
/// the block right after it, or two equal blocks in a row that hold a loop. Folded by body and count, such
/// a repeat is a loop that ran other counts in different instances (a solver's iterations until it
/// converges, step after step): the template then spells out one run's order of counts, and other runs
/// are read into it wherever they fit.
std::size_t counts_told_apart(const TraceModel& m)
{
  std::map<std::vector<std::int64_t>, std::int64_t> ids;  // shape, counts ignored -> id
  std::size_t found                          = 0;
  std::function<std::int64_t(const TemplateNode&)> id_of;
  std::function<std::vector<std::int64_t>(const std::vector<TemplateNode>&)> scan =
      [&](const std::vector<TemplateNode>& nodes) {
        std::vector<std::int64_t> seq;
        std::vector<bool> loop;
        for (const TemplateNode& n : nodes) {
          seq.push_back(id_of(n));
          loop.push_back(n.kind == RolledNode::Kind::Loop);
        }
        const std::size_t len = seq.size();
        for (std::size_t i = 0; i < len; ++i) {
          if (loop[i]) {  // a loop whose body is the block right after it
            const std::vector<TemplateNode>& body = nodes[i].body;
            std::size_t k = 0;
            while (k < body.size() && i + 1 + k < len && id_of(body[k]) == seq[i + 1 + k])
              ++k;
            if (not body.empty() && k == body.size()) {
              ++found;
              continue;
            }
          }
          for (std::size_t p = 1; p <= 64 && i + 2 * p <= len; ++p)
            if (std::equal(seq.begin() + static_cast<std::ptrdiff_t>(i), seq.begin() + static_cast<std::ptrdiff_t>(i + p),
                           seq.begin() + static_cast<std::ptrdiff_t>(i + p)) &&
                std::any_of(loop.begin() + static_cast<std::ptrdiff_t>(i), loop.begin() + static_cast<std::ptrdiff_t>(i + p),
                            [](bool b) { return b; })) {
              ++found;
              break;
            }
        }
        return seq;
      };
  id_of = [&](const TemplateNode& n) {
    std::vector<std::int64_t> key{static_cast<std::int64_t>(n.kind), static_cast<std::int64_t>(n.token)};
    if (n.kind == RolledNode::Kind::Loop) {
      const std::vector<std::int64_t> body = scan(n.body);
      key.insert(key.end(), body.begin(), body.end());
    }
    return ids.emplace(std::move(key), static_cast<std::int64_t>(ids.size())).first->second;
  };
  for (const TraceGroup& g : m.groups)
    scan(g.body);
  return found;
}

TraceModel fit_code_paths(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  try {
    return fit_one_size_class(profiles, options);
  } catch (const detail::NwBranchError& e) {
    // The sizes may run the same code and only fold differently. Folded shortest period first, a loop
    // whose iteration ends as the next one begins (`c (L c)x2` after `... c`) folds across the boundary,
    // and each size cuts the cycle elsewhere: folded by coverage (FoldOptions::by_coverage) the sizes can
    // agree. Or their loops run other counts in every run: a solver's iterations until it converges cut
    // each size's steps differently, and folded by loop body whatever the count
    // (FoldOptions::counts_follow_data) the sizes share one template. Where both readings fit, the one
    // whose templates repeat fewer blocks once loop counts are ignored (counts_told_apart) is kept: a fold
    // by coverage of steps that ran other counts spells out one run's order of counts, and other sizes are
    // read into it wherever they fit. Only then, so that every model the plain fit expresses stays byte
    // for byte the same.
    std::optional<TraceModel> covered;
    if (not options.fold.by_coverage) {
      FitOptions again       = options;
      again.fold.by_coverage = true;
      try {
        covered = fit_one_size_class(profiles, again);
        covered->warnings.push_back("the training sizes fold into different templates shortest period first; folded "
                                    "by coverage (the repeat that covers the most calls first), they agree");
      } catch (const detail::NwBranchError&) {
      }
    }
    const std::size_t told_apart = covered ? counts_told_apart(*covered) : 0;
    if (covered && told_apart == 0)
      return std::move(*covered);
    if (not options.fold.counts_follow_data) {
      FitOptions again              = options;
      again.fold.counts_follow_data = true;
      try {
        TraceModel m = fit_one_size_class(profiles, again);
        if (not covered || counts_told_apart(m) < told_apart) {
          m.warnings.push_back("the training sizes fold into different templates where loops are told apart by their "
                               "iteration counts; folded by loop body (counts that follow the data, different in each "
                               "instance), they agree");
          return m;
        }
      } catch (const detail::NwBranchError&) {
      }
    }
    if (covered)
      return std::move(*covered);
    // A last reading: the calls whose tags are fitted per position told apart by their size in the first
    // fold (FitOptions::sizes_nest_loops), folded by coverage. A V-cycle's smoothing sweeps, tagged by
    // level and colour, then nest as levels around colours, and its tags are affine in both indices.
    if (not options.sizes_nest_loops) {
      FitOptions again       = options;
      again.tags_follow_np   = true;
      again.sizes_nest_loops = true;
      again.fold.by_coverage = true;
      try {
        TraceModel m = fit_one_size_class(profiles, again);
        m.warnings.push_back("the training sizes fold into different templates in every other reading; with the calls "
                             "whose tags follow the loops told apart by their message size, and their tags fitted per "
                             "position, they agree");
        return m;
      } catch (const InputError&) {
      }
    }
    return fit_largest_size_class(profiles, options, e);
  }
}

}  // namespace

TraceModel fit_trace_model(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  TraceModel m = fit_code_paths(profiles, options);
  sampling::test_input_phases(m);  // on the profiles the model kept (m.training)
  return m;
}

}  // namespace gridcast::models::trace
