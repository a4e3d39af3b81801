// Fitting the function latency model (latency_model.hpp) from what the trace fit observed of every
// compute call site: the site's mean work per training point and its formula (the first step, fitted
// with the template), then per function the ratio forest, the errors of the two steps together and the
// variability histogram. Internal to the models library.
#pragma once

#include "gridcast/models/latency_model.hpp"
#include "gridcast/models/trace_formula.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace gridcast::models::trace::detail {

/// The calls of one compute call site as the latency model needs them: the site's context, its work
/// per (profile, inner progress bucket, outer progress bucket), and a bounded sample of single calls.
struct ComputeCalls {
  static constexpr std::size_t kReservoir = 1024;  ///< single calls kept per call site for the histogram
  CallContext context;  ///< group, inter- and intra-loop index (the buckets vary per call)
  std::map<std::tuple<std::size_t, int, int>, std::pair<double, std::uint64_t>> cells;  ///< -> (sum, calls)
  /// A bounded, deterministic sample of single calls (profile, buckets, work) for the variability histogram.
  std::vector<std::tuple<std::size_t, int, int, double>> reservoir;
  std::uint64_t reservoir_seen = 0;
  /// One call of `work` flops of profile `profile` in the given progress buckets.
  void add(std::size_t profile, int inner, int outer, double work);
};

/// One compute call site of the fitted template.
struct LatencySite {
  const std::string* function = nullptr;
  const ComputeCalls* calls   = nullptr;
  std::vector<FitPoint> means;             ///< the site's mean work at each training point
  std::optional<Formula> mean_formula;     ///< fitted on `means`, where the template has one
};

/// The latency model of every function with compute call sites in `sites` (in the order of the sites, by
/// function name). `points[p]`: the (Nw, Np) of training profile p.
std::vector<FunctionLatency> fit_latency(const std::vector<LatencySite>& sites,
                                         const std::vector<std::pair<double, double>>& points,
                                         const ForestOptions& forest, int variability_bins);

}  // namespace gridcast::models::trace::detail
