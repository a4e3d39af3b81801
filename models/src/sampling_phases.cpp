// Phase formation (docs/reference/sampling.md, "Phases"; seed 003, section III-B): top-K features by
// univariate regression, k-means from dlib, k chosen by the silhouette coefficient.
#include "gridcast/models/sampling.hpp"

#include <dlib/clustering.h>
#include <dlib/svm/kernel.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace gridcast::models::sampling {

namespace {

using Sample = dlib::matrix<double, 0, 1>;

/// Above this many units, k-means and the silhouette run on an evenly strided subset (every unit is then
/// given the nearest centre): both cost O(units x k) per pass, the silhouette O(units^2).
constexpr std::size_t kClusterUnits = 2000;
constexpr std::size_t kSilhouetteUnits = 1000;
/// The seed's rule: the smallest k whose score reaches this share of the best.
constexpr double kScoreShare = 0.9;

struct Column {
  double mean = 0, std = 0;
};

Column column_stats(const std::vector<std::vector<double>>& x, std::size_t j)
{
  Column c;
  const double n = static_cast<double>(x.size());
  for (const auto& row : x)
    c.mean += row[j];
  c.mean /= n;
  for (const auto& row : x)
    c.std += (row[j] - c.mean) * (row[j] - c.mean);
  c.std = std::sqrt(c.std / n);
  return c;
}

/// The univariate regression test's F statistic of column `j` against `y` (what scikit-learn's
/// f_regression computes): r^2 / (1 - r^2) * (n - 2).
double f_score(const std::vector<std::vector<double>>& x, std::size_t j, const Column& cx, const std::vector<double>& y,
               double y_mean, double y_std)
{
  if (not(cx.std > 0) || not(y_std > 0))
    return 0;
  double cov = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    cov += (x[i][j] - cx.mean) * (y[i] - y_mean);
  const double n = static_cast<double>(x.size());
  const double r = cov / n / (cx.std * y_std);
  const double r2 = std::min(r * r, 1.0 - 1e-12);
  return r2 / (1 - r2) * (n - 2);
}

std::vector<std::size_t> strided(std::size_t n, std::size_t most)
{
  std::vector<std::size_t> idx;
  if (n <= most) {
    idx.resize(n);
    std::iota(idx.begin(), idx.end(), 0);
    return idx;
  }
  for (std::size_t k = 0; k < most; ++k)
    idx.push_back(k * n / most);
  return idx;
}

std::size_t nearest(const std::vector<Sample>& centers, const Sample& s)
{
  std::size_t best = 0;
  double best_d = dlib::length_squared(s - centers[0]);
  for (std::size_t c = 1; c < centers.size(); ++c) {
    const double d = dlib::length_squared(s - centers[c]);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

/// Mean silhouette coefficient of `labels` over the points `idx`.
double silhouette(const std::vector<Sample>& points, const std::vector<std::size_t>& idx,
                  const std::vector<std::size_t>& labels, std::size_t k)
{
  double total = 0;
  std::vector<double> sum(k);
  std::vector<std::size_t> count(k);
  for (std::size_t a : idx)
    ++count[labels[a]];
  for (std::size_t a : idx) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::size_t b : idx)
      if (a != b)
        sum[labels[b]] += dlib::length(points[a] - points[b]);
    const std::size_t own = labels[a];
    if (count[own] <= 1)
      continue;  // a point alone in its cluster scores 0
    const double in = sum[own] / static_cast<double>(count[own] - 1);
    double out = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < k; ++c)
      if (c != own && count[c] > 0)
        out = std::min(out, sum[c] / static_cast<double>(count[c]));
    if (std::isfinite(out) && std::max(in, out) > 0)
      total += (out - in) / std::max(in, out);
  }
  return idx.empty() ? 0.0 : total / static_cast<double>(idx.size());
}

}  // namespace

Phases form_phases(const Units& units, std::size_t top_k, int max_k)
{
  Phases ph;
  const std::size_t n = units.features.size();
  ph.of_unit.assign(n, 0);
  ph.silhouette.push_back(0.0);
  ph.distinct.assign(1, {});
  if (n < 3)
    return ph;
  const std::size_t d = units.feature_names.size();
  std::vector<Column> cols(d);
  for (std::size_t j = 0; j < d; ++j)
    cols[j] = column_stats(units.features, j);

  // Top-K features by the univariate regression test against the units' proxy cost; every varying one
  // when the proxy does not vary.
  double y_mean = std::accumulate(units.proxy_s.begin(), units.proxy_s.end(), 0.0) / static_cast<double>(n);
  double y_var = 0;
  for (double y : units.proxy_s)
    y_var += (y - y_mean) * (y - y_mean);
  const double y_std = std::sqrt(y_var / static_cast<double>(n));
  std::vector<std::pair<double, std::size_t>> ranked;
  for (std::size_t j = 0; j < d; ++j)
    if (cols[j].std > 1e-12 * std::max(1.0, std::abs(cols[j].mean)))
      ranked.emplace_back(-f_score(units.features, j, cols[j], units.proxy_s, y_mean, y_std), j);
  std::stable_sort(ranked.begin(), ranked.end());
  if (ranked.size() > top_k)
    ranked.resize(top_k);
  std::vector<std::size_t> chosen;
  for (const auto& [score, j] : ranked) {
    chosen.push_back(j);
    ph.features.push_back(units.feature_names[j]);
  }
  if (chosen.empty())
    return ph;  // every unit alike: one phase

  std::vector<Sample> points(n, Sample(static_cast<long>(chosen.size())));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < chosen.size(); ++c)
      points[i](static_cast<long>(c)) = (units.features[i][chosen[c]] - cols[chosen[c]].mean) / cols[chosen[c]].std;
  const std::vector<std::size_t> fit_idx = strided(n, kClusterUnits);
  const std::vector<std::size_t> score_idx = strided(n, kSilhouetteUnits);
  std::vector<Sample> fit_points;
  for (std::size_t i : fit_idx)
    fit_points.push_back(points[i]);
  std::set<std::vector<double>> distinct_points;
  for (const Sample& s : fit_points) {
    distinct_points.insert(std::vector<double>(s.begin(), s.end()));
    if (distinct_points.size() > static_cast<std::size_t>(max_k))
      break;
  }
  const int k_most = std::min<int>(max_k, static_cast<int>(distinct_points.size()));

  std::vector<std::vector<std::size_t>> labels_of_k(1, std::vector<std::size_t>(n, 0));
  for (int k = 2; k <= k_most; ++k) {
    std::vector<Sample> centers;
    dlib::pick_initial_centers(k, centers, fit_points, dlib::linear_kernel<Sample>());
    dlib::find_clusters_using_kmeans(fit_points, centers, 100);
    std::vector<std::size_t> labels(n);
    for (std::size_t i = 0; i < n; ++i)
      labels[i] = nearest(centers, points[i]);
    ph.silhouette.push_back(silhouette(points, score_idx, labels, centers.size()));
    labels_of_k.push_back(std::move(labels));
  }
  const double best = *std::max_element(ph.silhouette.begin(), ph.silhouette.end());
  std::size_t pick = 0;
  if (best > 0)
    while (ph.silhouette[pick] < kScoreShare * best)
      ++pick;
  // Phases numbered by first appearance, so that the numbering does not depend on dlib's centre order.
  std::map<std::size_t, int> number;
  for (std::size_t i = 0; i < n; ++i) {
    auto [it, added] = number.try_emplace(labels_of_k[pick][i], static_cast<int>(number.size()));
    ph.of_unit[i] = it->second;
  }
  ph.k = static_cast<int>(number.size());

  // What sets each phase apart: its features furthest above the mean of all units.
  ph.distinct.assign(static_cast<std::size_t>(ph.k), {});
  for (int p = 0; p < ph.k; ++p) {
    std::vector<std::pair<double, std::size_t>> above;
    for (std::size_t j = 0; j < d; ++j) {
      if (not(cols[j].std > 0))
        continue;
      double sum = 0, count = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (ph.of_unit[i] == p) {
          sum += units.features[i][j];
          ++count;
        }
      const double z = (sum / count - cols[j].mean) / cols[j].std;
      if (z > 0.5)
        above.emplace_back(-z, j);
    }
    std::stable_sort(above.begin(), above.end());
    for (std::size_t a = 0; a < above.size() && a < 3; ++a)
      ph.distinct[static_cast<std::size_t>(p)].push_back(units.feature_names[above[a].second]);
  }
  return ph;
}

}  // namespace gridcast::models::sampling
