// Fitting the function latency model's second step and its errors from the trace fit's compute sites.
#include "latency_fit.hpp"

#include "gridcast/foundation/rng.hpp"

#include <algorithm>
#include <cmath>

namespace gridcast::models::trace::detail {

void ComputeCalls::add(std::size_t profile, int inner, int outer, double work)
{
  auto& cell = cells[{profile, inner, outer}];
  cell.first += work;
  ++cell.second;
  // Reservoir sampling (Algorithm R) with a generator seeded by what the call is: deterministic.
  ++reservoir_seen;
  if (reservoir.size() < kReservoir) {
    reservoir.emplace_back(profile, inner, outer, work);
  } else {
    std::uint64_t j = splitmix64(reservoir_seen ^ (static_cast<std::uint64_t>(profile) << 40)) % reservoir_seen;
    if (j < kReservoir)
      reservoir[j] = {profile, inner, outer, work};
  }
}

namespace {

/// Errors with 6 significant digits, and rounding noise (below 1e-12) as 0: model.json must not depend
/// on the last bits of a floating-point sum.
double round_sig(double v)
{
  if (std::abs(v) < 1e-12)
    return 0.0;
  if (not std::isfinite(v))
    return v;
  double scale = std::pow(10.0, 5 - std::floor(std::log10(std::abs(v))));
  return std::round(v * scale) / scale;
}

/// What one function's sites give its ratio forest and its errors: one sample per (site, profile,
/// buckets) cell, with the site mean's prediction there (on the training data and left out), and the
/// multipliers of the sampled single calls around their cell's mean.
struct FunctionCalls {
  struct Obs {
    double mean_pred, mean_loo, observed;
    bool has_loo;
  };
  std::vector<RatioSample> samples;
  std::vector<Obs> obs;  // parallel to samples
  std::vector<double> multipliers;
  std::uint64_t calls = 0;

  void add_site(const LatencySite& site, const std::vector<std::pair<double, double>>& points)
  {
    const ComputeCalls& s = *site.calls;
    std::map<std::pair<double, double>, double> site_mean;
    for (const FitPoint& p : site.means)
      site_mean[{p.nw, p.np}] = p.value;
    std::map<std::pair<double, double>, std::optional<double>> loo;
    if (site.mean_formula) {
      std::vector<std::optional<double>> l = loo_predictions(*site.mean_formula, site.means);
      for (std::size_t i = 0; i < site.means.size(); ++i)
        loo[{site.means[i].nw, site.means[i].np}] = l[i];
    }
    std::map<std::tuple<std::size_t, int, int>, double> cell_mean;
    for (const auto& [key, sum_calls] : s.cells) {
      const auto& [profile, inner, outer] = key;
      const std::pair<double, double> point = points[profile];
      const double mean = sum_calls.first / static_cast<double>(sum_calls.second);
      cell_mean[key] = mean;
      calls += sum_calls.second;
      const double smean = site_mean[point];
      if (not(smean > 0) || not(mean > 0))
        continue;
      RatioSample rs;
      rs.context              = s.context;
      rs.context.inner_bucket = inner;
      rs.context.outer_bucket = outer;
      rs.ratio                = mean / smean;
      rs.calls                = sum_calls.second;
      samples.push_back(rs);
      const double pred = site.mean_formula ? site.mean_formula->eval(point.first, point.second) : 0.0;
      const std::optional<double> l = loo[point];
      obs.push_back({pred, l.value_or(pred), mean, l.has_value()});
    }
    for (const auto& [profile, inner, outer, work] : s.reservoir) {
      double m = cell_mean[{profile, inner, outer}];
      if (m > 0)
        multipliers.push_back(work / m);
    }
  }
};

/// The ratio forest of one function and its errors (work-weighted relative errors of the ratio, on the
/// training samples and out of bag); `ratio_pred` and `ratio_oob` get each sample's two predictions.
void fit_ratio(FunctionLatency& fl, const FunctionCalls& fc, const ForestOptions& forest,
               std::vector<double>& ratio_pred, std::vector<double>& ratio_oob)
{
  const std::vector<RatioSample>& samples = fc.samples;
  fl.ratio         = train_ratio_forest(samples, forest, ratio_oob);
  fl.ratio_samples = std::min(samples.size(), forest.max_samples);
  double tr = 0, ob = 0, w = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    ratio_pred[i] = fl.ratio->eval(samples[i].context.features());
    const auto c  = static_cast<double>(samples[i].calls) * fc.obs[i].observed;  // work-weighted
    tr += c * std::abs(ratio_pred[i] - samples[i].ratio) / samples[i].ratio;
    ob += c * std::abs(ratio_oob[i] - samples[i].ratio) / samples[i].ratio;
    w += c;
  }
  fl.ratio_train_error = round_sig(tr / w);
  fl.ratio_oob_error   = round_sig(ob / w);
}

FunctionLatency fit_function(const std::string& function, const std::vector<const LatencySite*>& sites,
                             const std::vector<std::pair<double, double>>& points, const ForestOptions& forest,
                             int variability_bins)
{
  FunctionLatency fl;
  fl.function = function;
  fl.sites    = static_cast<int>(sites.size());
  FunctionCalls fc;
  for (const LatencySite* site : sites)
    fc.add_site(*site, points);
  fl.calls = fc.calls;
  const std::vector<RatioSample>& samples = fc.samples;
  if (samples.empty())  // calls without work (zero flops, no duration)
    return fl;
  const bool constant = std::all_of(samples.begin(), samples.end(),
                                    [](const RatioSample& r) { return std::abs(r.ratio - 1.0) <= 1e-9; });
  std::vector<double> ratio_pred(samples.size(), 1.0), ratio_oob(samples.size(), 1.0);
  if (not constant)
    fit_ratio(fl, fc, forest, ratio_pred, ratio_oob);
  // Weighted by work: a call of a microsecond mispredicted by 100 % matters less than a long one
  // by 10 %; this is the relative error of the function's time, summed over its calls.
  double tr = 0, cv = 0, w = 0;
  bool all_loo = true;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto c = static_cast<double>(samples[i].calls);
    tr += c * std::abs(fc.obs[i].mean_pred * ratio_pred[i] - fc.obs[i].observed);
    cv += c * std::abs(fc.obs[i].mean_loo * ratio_oob[i] - fc.obs[i].observed);
    w += c * fc.obs[i].observed;
    all_loo = all_loo && fc.obs[i].has_loo;
  }
  fl.train_error = round_sig(tr / w);
  if (all_loo)
    fl.cv_error = round_sig(cv / w);
  fl.variability = Histogram::from_values(std::move(fc.multipliers), variability_bins);
  // Noise below a part per million is rounding in the recording, not variability.
  if (not fl.variability.empty() && fl.variability.edges.back() - fl.variability.edges.front() < 1e-6)
    fl.variability = Histogram{};
  return fl;
}

}  // namespace

std::vector<FunctionLatency> fit_latency(const std::vector<LatencySite>& sites,
                                         const std::vector<std::pair<double, double>>& points,
                                         const ForestOptions& forest, int variability_bins)
{
  std::map<std::string, std::vector<const LatencySite*>> by_function;
  for (const LatencySite& s : sites)
    if (not s.calls->cells.empty())
      by_function[*s.function].push_back(&s);
  std::vector<FunctionLatency> out;
  for (const auto& [function, of_function] : by_function)
    out.push_back(fit_function(function, of_function, points, forest, variability_bins));
  return out;
}

}  // namespace gridcast::models::trace::detail
