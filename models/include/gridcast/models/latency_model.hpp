// The function latency model (seed paper 000, "3.4 Function Latency Modeling"): the work of every compute
// call (hooked library or application function, compute burst) is predicted in two steps, a mean that
// depends on the scale configuration (Nw, Np) times a ratio (this call / the mean) that depends on where
// the call sits in the program: its contextual parameters <inter-loop index, intra-loop index, iteration>
// and its rank group. The mean is a Formula per call site (trace_formula.hpp, chosen by leave-one-out
// cross-validation); the ratio is a random forest per function (dlib, 100 trees, squared error).
// Work is in flops: durations measured on the recording host are converted through its speed (run.json
// host.speed_flops), so a platform with faster or slower hosts scales them. See docs/reference/latency-model.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::models::trace {

/// Iteration progress is quantized into this many buckets (a loop's iteration i of n falls in bucket
/// floor(i * kProgressBuckets / n)), at fit and at synthesis alike: a forest sees the same values in
/// both, and synthesis can tabulate a call site's ratios instead of walking 100 trees per call.
inline constexpr int kProgressBuckets = 64;

/// The forest's input: the contextual parameters of one compute call.
struct CallContext {
  int group = 0;       ///< trace group of the rank
  int inter_loop = 0;  ///< 1 + pre-order number of the innermost enclosing loop in the group's template; 0: none
  int intra_loop = 0;  ///< position of the call in that loop's body (or in the top-level list)
  int inner_bucket = 0;  ///< progress bucket of the innermost enclosing loop's iteration (0 outside loops)
  int outer_bucket = 0;  ///< progress bucket of the outermost enclosing loop's iteration
  static constexpr std::size_t kFeatures = 5;
  std::array<double, kFeatures> features() const;
};

int progress_bucket(std::uint64_t iteration, std::uint64_t count);

/// A regression forest as plain arrays (dlib's layout: an index >= nodes.size() is a leaf).
struct RatioForest {
  struct Node {
    std::uint32_t feature = 0;
    float threshold = 0;
    std::uint32_t left = 0, right = 0;
  };
  struct Tree {
    std::vector<Node> nodes;
    std::vector<float> leaves;
  };
  std::vector<Tree> trees;
  double eval(const std::array<double, CallContext::kFeatures>& x) const;
};

/// One training sample of a function's ratio: a context at one training point, the mean ratio of the
/// calls seen there, and how many calls that is (the weight of the errors).
struct RatioSample {
  CallContext context;
  double ratio = 1;
  std::uint64_t calls = 1;
};

struct ForestOptions {
  int trees = 100;
  std::size_t min_samples_per_leaf = 1;  ///< a call site seen at few points keeps its own ratio
  std::size_t max_samples = 4096;        ///< more are thinned (deterministically): fit time and model size
};

/// Trains the forest on `samples` (dlib random_forest_regression_trainer, fixed seed: deterministic) and
/// returns it with each sample's out-of-bag prediction (the sample predicted by the trees that did not
/// see it: a cross-validation estimate). Samples beyond max_samples are thinned by a fixed stride; their
/// out-of-bag value is then the forest's prediction.
RatioForest train_ratio_forest(const std::vector<RatioSample>& samples, const ForestOptions& options,
                               std::vector<double>& oob);

/// An irregular (equal-frequency) histogram of the multiplier that scatters calls around their predicted
/// latency (Stanisic et al. 2014, section 7): `edges` are the quantiles 0, 1/B ... 1 of the observed multipliers,
/// normalized so that the distribution's mean is 1. Sampling picks a bin uniformly, then a value
/// uniformly inside it.
struct Histogram {
  std::vector<double> edges;
  bool empty() const { return edges.size() < 2; }
  double sample(double u_bin, double u_in) const;
  static Histogram from_values(std::vector<double> values, int bins);
};

/// The latency model of one function (all its call sites in every group).
struct FunctionLatency {
  std::string function;
  std::uint64_t calls = 0;  ///< compute calls of the function over the training profiles
  int sites = 0;            ///< template positions (call sites) of the function, over all groups
  /// Absent when every call of a site has the site's mean at every training point (ratio 1).
  std::optional<RatioForest> ratio;
  std::size_t ratio_samples = 0;
  std::optional<double> ratio_train_error, ratio_oob_error;  ///< relative error of the ratio, work-weighted
  /// Relative error of the two-step prediction (site mean formula x ratio) against the calls, weighted by
  /// work (sum |predicted - observed| / sum observed over the calls): on the training data, and cross-validated (each point's mean from the formula refitted
  /// without it, each ratio out of bag). Absent where nothing could be left out.
  double train_error = 0;
  std::optional<double> cv_error;
  Histogram variability;
};

}  // namespace gridcast::models::trace
