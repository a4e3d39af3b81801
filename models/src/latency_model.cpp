#include "gridcast/models/latency_model.hpp"

#include "gridcast/foundation/errors.hpp"

#include <dlib/random_forest.h>

#include <algorithm>
#include <cmath>

namespace gridcast::models::trace {

std::array<double, CallContext::kFeatures> CallContext::features() const
{
  // Progress as the bucket's centre in [0, 1): comparable between loops of different lengths.
  return {static_cast<double>(group), static_cast<double>(inter_loop), static_cast<double>(intra_loop),
          (inner_bucket + 0.5) / kProgressBuckets, (outer_bucket + 0.5) / kProgressBuckets};
}

int progress_bucket(std::uint64_t iteration, std::uint64_t count)
{
  if (count == 0)
    return 0;
  auto b = static_cast<int>((static_cast<long double>(iteration) * kProgressBuckets) / count);
  return std::clamp(b, 0, kProgressBuckets - 1);
}

double RatioForest::eval(const std::array<double, CallContext::kFeatures>& x) const
{
  if (trees.empty())
    return 1.0;
  double acc = 0;
  for (const Tree& t : trees) {
    std::uint32_t idx = 0;
    const auto n = static_cast<std::uint32_t>(t.nodes.size());
    while (idx < n) {
      const Node& node = t.nodes[idx];
      idx = x[node.feature] < node.threshold ? node.left : node.right;
    }
    acc += t.leaves.at(idx - n);
  }
  return acc / static_cast<double>(trees.size());
}

RatioForest train_ratio_forest(const std::vector<RatioSample>& all, const ForestOptions& options,
                               std::vector<double>& oob)
{
  if (all.empty())
    throw InternalError("train_ratio_forest: no samples");
  using sample_type = dlib::matrix<double, 0, 1>;
  // Thinning by a fixed stride keeps the samples spread over the sites and the iterations.
  std::vector<std::size_t> used;
  const std::size_t stride = (all.size() + options.max_samples - 1) / options.max_samples;
  for (std::size_t i = 0; i < all.size(); i += std::max<std::size_t>(stride, 1))
    used.push_back(i);
  std::vector<sample_type> x;
  std::vector<double> y;
  for (std::size_t i : used) {
    auto f = all[i].context.features();
    sample_type s(static_cast<long>(f.size()));
    for (std::size_t k = 0; k < f.size(); ++k)
      s(static_cast<long>(k)) = f[k];
    x.push_back(s);
    y.push_back(all[i].ratio);
  }
  dlib::random_forest_regression_trainer<dlib::dense_feature_extractor> trainer;
  trainer.set_num_trees(static_cast<std::size_t>(options.trees));
  trainer.set_min_samples_per_leaf(options.min_samples_per_leaf);
  // Every feature at every split: with five features of which some are constant for a function (one
  // loop, one group), dlib's default third (two features) often draws only constant ones and stops a
  // branch early. The bootstrap samples still make the trees differ.
  trainer.set_feature_subsampling_fraction(1.0);
  trainer.set_seed("gridcast");  // each tree's generator is seeded from this and its index: deterministic
  std::vector<double> used_oob;
  auto fn = trainer.train(x, y, used_oob);

  RatioForest forest;
  const auto& nodes  = fn.get_internal_tree_nodes();
  const auto& leaves = fn.get_tree_leaves();
  for (std::size_t t = 0; t < nodes.size(); ++t) {
    RatioForest::Tree tree;
    for (const auto& n : nodes[t])
      tree.nodes.push_back({n.split_feature, n.split_threshold, n.left, n.right});
    tree.leaves = leaves[t];
    forest.trees.push_back(std::move(tree));
  }
  oob.assign(all.size(), 0.0);
  std::vector<bool> have(all.size(), false);
  for (std::size_t k = 0; k < used.size(); ++k) {
    oob[used[k]]  = used_oob[k];
    have[used[k]] = std::isfinite(used_oob[k]);
  }
  for (std::size_t i = 0; i < all.size(); ++i)
    if (not have[i])
      oob[i] = forest.eval(all[i].context.features());
  return forest;
}

double Histogram::sample(double u_bin, double u_in) const
{
  if (empty())
    return 1.0;
  const std::size_t bins = edges.size() - 1;
  auto b = std::min(bins - 1, static_cast<std::size_t>(u_bin * static_cast<double>(bins)));
  return edges[b] + u_in * (edges[b + 1] - edges[b]);
}

Histogram Histogram::from_values(std::vector<double> values, int bins)
{
  Histogram h;
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return not std::isfinite(v) || v < 0; }),
               values.end());
  if (values.size() < 2 || bins < 1)
    return h;
  std::sort(values.begin(), values.end());
  if (values.front() == values.back())
    return h;  // no spread: nothing to sample
  const auto b = static_cast<std::size_t>(std::min<std::size_t>(static_cast<std::size_t>(bins), values.size() - 1));
  for (std::size_t k = 0; k <= b; ++k) {
    // Quantile k/b by linear interpolation between order statistics.
    double pos = static_cast<double>(k) * static_cast<double>(values.size() - 1) / static_cast<double>(b);
    auto lo    = static_cast<std::size_t>(std::floor(pos));
    std::size_t hi = std::min(lo + 1, values.size() - 1);
    h.edges.push_back(values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]));
  }
  // The mean is what the first two steps predict: the multiplier must average 1.
  double mean = 0;
  for (std::size_t k = 0; k < b; ++k)
    mean += (h.edges[k] + h.edges[k + 1]) / 2.0 / static_cast<double>(b);
  if (not(mean > 0))
    return Histogram{};
  for (double& e : h.edges)
    e /= mean;
  return h;
}

}  // namespace gridcast::models::trace
