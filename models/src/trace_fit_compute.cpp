// Fitting the compute positions of a template: the work of a compute site (declared or measured), the
// factors of the ranks' roles and of a rotating root, and library calls priced from their arguments.
// Split from trace_fit_params.cpp (the same TemplateFitter).
#include "trace_fit_params.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::models::trace::detail {

namespace {

/// The scale of a priced site or construct: what its training calls measured over what synthesis prices
/// them at (`priced`, all points), at the speed of the least disturbed run. A disturbance only adds time
/// to the same calls, and on a shared machine it can take a whole rank for a whole run (two ranks on the
/// two cores of a VM whose second core runs 1.5-2x slower while the first computes: HPL's dgemm ran at
/// 3.4 GF/s on one rank and 5.8 on the other, which rank changing from run to run), which no per-call
/// median over the runs drops. So each (run, rank)'s measured over its calls' price on the rate curve at
/// their own working sets, the smallest at each point (the least disturbed), the median over the points;
/// times the curve's price of all the calls over synthesis's price of them (what pricing at the fitted
/// mean work and working set misses). Where every run ran at one speed this is measured over priced
/// summed over the points. nullopt where there is no work to price.
std::optional<double> library_scale(const std::map<std::pair<double, double>, SlotObs::LibraryObs::Point>& points,
                                    double priced)
{
  double observed = 0, curve = 0;
  std::vector<double> least;
  for (const auto& [point, p] : points) {
    observed += p.observed;
    curve += p.curve;
    double lo = std::numeric_limits<double>::infinity();
    for (const auto& [run, oc] : p.runs)
      if (oc.first > 0 && oc.second > 0)
        lo = std::min(lo, oc.first / oc.second);
    if (std::isfinite(lo))
      least.push_back(lo);
  }  if (not(priced > 0) || not(observed > 0) || not(curve > 0) || least.empty())
    return std::nullopt;
  return gridcast::median(least) * curve / priced;
}

}  // namespace

/// The work of a compute site. Work may be declared (smpi_execute_flops) and then exact, whether a trace
/// gives it in flops or a profiler timed it in SMPI's simulated time (the hook under SMPI,
/// scripts/smpi-hook.sh), or benchmarked by SMPI and written as flops (noisy): where the best plausible
/// formula over the plain and grid-extent features reproduces the training points to SMPI's 6
/// significant digits (leave-one-out), it is the work (a block of an MPI_Dims_create grid works in
/// proportion to a product of its per-axis extents); otherwise fit_measured, as measured work. Work timed
/// on a real machine (measured_work) goes to fit_measured at once: it never repeats to 6 digits, and the
/// exact search over every feature costs HPL's fit 5x its time.
Formula TemplateFitter::fit_compute(const SlotObs& s) const
{
  constexpr double kDeclaredError = 1e-5;  // SMPI's TIT traces write flops with 6 significant digits
  const std::vector<FitPoint> pts = s.compute_flops.points();
  if (not s.measured_work) {
    PlausibleFit exact = fit_plausible_formula(pts, false, plausible_);
    if (exact.best && exact.formula.cv_error && *exact.formula.cv_error <= kDeclaredError)
      return exact.formula;
  }
  return fit_measured(pts);
}

/// The role factors of a compute site (RoleScale), where the ranks' roles do consistently different work:
/// in every training profile that has two roles or more, some role's mean work per call differs from the
/// mean of all the site's calls by more than kRoleAsymmetry, on the same side each time. Otherwise none,
/// and the site's calls all get its mean: differences between ranks that come and go with the run (a
/// preempted rank, a message that arrived late) are noise for the variability histogram, not a role.
std::optional<RoleScale> TemplateFitter::fit_role_scale(const SlotObs& s) const
{
  constexpr double kRoleAsymmetry = 1.25;
  // profile -> role -> (work, calls), the roles the profile's ranks took at the site
  std::map<std::size_t, std::map<int, std::pair<double, std::uint64_t>>> by_profile;
  for (std::size_t at = 0; at < s.role_work.size(); ++at)
    if (s.role_work[at].second > 0)
      by_profile[at / 3][static_cast<int>(at % 3)] = s.role_work[at];
  std::array<std::vector<double>, 3> factors;  // per role, over the profiles with two roles or more
  std::array<int, 3> above{}, below{}, seen{};
  for (const auto& [profile, roles] : by_profile) {
    if (roles.size() < 2)
      continue;
    double work = 0, calls = 0;
    for (const auto& [role, wc] : roles) {
      work += wc.first;
      calls += static_cast<double>(wc.second);
    }
    const double mean = calls > 0 ? work / calls : 0.0;
    if (not(mean > 0))
      return std::nullopt;
    for (const auto& [role, wc] : roles) {
      const auto r = static_cast<std::size_t>(role);
      const double f = wc.first / static_cast<double>(wc.second) / mean;
      factors[r].push_back(f);
      ++seen[r];
      above[r] += f > kRoleAsymmetry;
      below[r] += f * kRoleAsymmetry < 1;
    }
  }
  bool asymmetric = false;  // a role on the same side, beyond kRoleAsymmetry, in every profile it is in
  for (std::size_t r = 0; r < 3; ++r)
    asymmetric = asymmetric || (seen[r] > 0 && (above[r] == seen[r] || below[r] == seen[r]));
  if (not asymmetric)
    return std::nullopt;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  RoleScale scale;
  if (not factors[0].empty())
    scale.first = median(factors[0]);
  if (not factors[1].empty())
    scale.last = median(factors[1]);
  scale.middle = factors[2].empty() ? scale.last : median(factors[2]);
  return scale;
}

/// The work of a compute site's calls made by the root of the last rooted collective and by the others
/// (TemplateNode::RootWork), where the root does more in every training profile that has both and the
/// profiles with both are at two training points or more, and the root moves (in some profile, the
/// site's calls followed collectives of two roots or more): a step's root that then works alone. With
/// a fixed root, the root's rank is a group of its own or a role of RoleScale, whose ratios extrapolate
/// better than two regressions. Each side's mean work per call at each point, regressed on (Nw, Np).
std::optional<TemplateNode::RootWork> TemplateFitter::fit_root_work(const SlotObs& s) const
{
  constexpr double kRootAsymmetry = 1.25;
  if (std::none_of(s.root_role.begin(), s.root_role.end(), [](const auto& pr) { return pr.second.rotates; }))
    return std::nullopt;  // one root throughout: RoleScale's ratios say it, and extrapolate better
  std::vector<FitPoint> root, other;
  for (const auto& [profile, rr] : s.root_role) {
    if (rr.calls[0] == 0 || rr.calls[1] == 0)
      continue;
    const double r = rr.work[0] / static_cast<double>(rr.calls[0]);
    const double o = rr.work[1] / static_cast<double>(rr.calls[1]);
    if (not(r > kRootAsymmetry * o))
      return std::nullopt;
    root.push_back({rr.nw, rr.np, r});
    other.push_back({rr.nw, rr.np, o});
  }
  if (root.size() < 2)
    return std::nullopt;
  return TemplateNode::RootWork{fit_formula(root, false), fit_formula(other, false)};
}

/// A library site whose every call carried its arguments: its mean work per call and its work-weighted
/// mean working set as formulas of (Nw, Np) (exact quantities: the best leave-one-out subset), and the
/// scale that makes the curve's price of the training calls their measured work.
void TemplateFitter::fit_library(const SlotObs& s, TemplateNode& t)
{
  const SlotObs::LibraryObs& lib = s.library;
  if (lib.kernel.empty())
    return;
  if (not lib.missing.empty() || lib.points.empty()) {
    t.regressed_because = lib.missing.empty() ? "no calls with work" : lib.missing;
    return;
  }
  std::vector<FitPoint> work, bytes;
  for (const auto& [point, p] : lib.points) {
    const auto calls = static_cast<double>(p.calls);
    work.push_back({point.first, point.second, p.work / calls});
    bytes.push_back({point.first, point.second, p.work > 0 ? p.work_x_bytes / p.work : 0.0});
  }
  // Chosen as sizes are: a formula that goes negative or turns against every training series before
  // the target loses to the next plausible one (a negative working set has no price).
  LibraryPricing pricing{lib.kernel, fit_plausible_formula(work, false, plausible_).formula,
                         fit_plausible_formula(bytes, false, plausible_).formula, 1.0};
  // The scale: measured over priced work (each point's calls priced as synthesis will price them, at
  // the fitted mean work and working set), at the least disturbed run's speed (library_scale).
  double priced = 0;
  for (const auto& [point, p] : lib.points)
    priced += static_cast<double>(p.calls) * model_.library_flops(pricing, point.first, point.second);
  const std::optional<double> scale = library_scale(lib.points, priced);
  if (not scale) {
    t.regressed_because = "the arguments give no work";
    return;
  }
  pricing.scale = *scale;
  t.library     = std::move(pricing);
}

/// The library calls a polling construct absorbed, priced as a library site is (fit_library), one entry
/// per kernel: the mean work per construct (0 at a point where none of the kernel's calls was absorbed)
/// and the work-weighted working set as formulas of (Nw, Np), and the scale that makes the curve's price
/// of the training constructs their measured work. Empty (the construct's work is all regressed) where
/// some absorbed library call could not be priced or a kernel's arguments give no work.
std::vector<LibraryPricing> TemplateFitter::fit_absorbed_library(const SlotObs& s) const
{
  const SlotObs::AbsorbedLibrary& lib = s.absorbed_library;
  std::vector<LibraryPricing> out;
  if (not lib.missing.empty())
    return out;
  for (const auto& [kernel, points] : lib.kernels) {
    std::vector<FitPoint> work, bytes;
    for (const auto& [point, constructs] : lib.constructs) {
      const auto it  = points.find(point);
      const double w = it == points.end() ? 0.0 : it->second.work;
      work.push_back({point.first, point.second, w / static_cast<double>(constructs)});
      if (w > 0)
        bytes.push_back({point.first, point.second, it->second.work_x_bytes / w});
    }
    if (bytes.empty())
      return {};
    // The work is exact (the arguments' sum); the working set is a mean over calls that the timing cut
    // into different chunks from run to run, so it gets at most (points - 2) terms, as measured work.
    const int ws_terms = std::clamp(static_cast<int>(bytes.size()) - 2, 1, 3);
    LibraryPricing pricing{kernel, fit_plausible_formula(work, false, plausible_).formula,
                           fit_plausible_formula(bytes, false, plausible_, ws_terms).formula, 1.0};
    double priced = 0;
    for (const auto& [point, constructs] : lib.constructs)
      priced += static_cast<double>(constructs) * model_.library_flops(pricing, point.first, point.second);
    const std::optional<double> scale = library_scale(points, priced);
    if (not scale)
      return {};
    pricing.scale = *scale;
    out.push_back(std::move(pricing));
  }
  return out;
}

}  // namespace gridcast::models::trace::detail
