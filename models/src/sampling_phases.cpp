// Phase formation (docs/reference/sampling.md, "Phases"; seed 003, section III-B): top-K features by
// univariate regression, k-means from dlib, k chosen by the silhouette coefficient.
#include "gridcast/models/sampling.hpp"

#include <dlib/clustering.h>
#include <dlib/svm/kernel.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>

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

namespace gridcast::models::sampling {

namespace {

double relative_change(double train, double ref, double scale)
{
  return scale > 0 ? std::abs(train - ref) / scale : (ref != train ? std::numeric_limits<double>::infinity() : 0.0);
}

/// The features `names` of every unit of `u`, each standardized over the units of `u` (0 for a feature `u`
/// lacks or that does not vary in it).
std::vector<std::vector<double>> standardized_within(const Units& u, const std::vector<std::string>& names)
{
  std::vector<std::vector<double>> z(u.count, std::vector<double>(names.size(), 0.0));
  for (std::size_t c = 0; c < names.size(); ++c) {
    const auto it = std::find(u.feature_names.begin(), u.feature_names.end(), names[c]);
    if (it == u.feature_names.end() || u.count == 0)
      continue;
    const std::size_t j = static_cast<std::size_t>(it - u.feature_names.begin());
    const Column s = column_stats(u.features, j);
    if (not(s.std > 0))
      continue;
    for (std::size_t i = 0; i < u.count; ++i)
      z[i][c] = (u.features[i][j] - s.mean) / s.std;
  }
  return z;
}

/// Mean and standard deviation (n - 1) of `v`.
std::pair<double, double> mean_std(const std::vector<double>& v)
{
  if (v.empty())
    return {0, 0};
  const double m = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double s = 0;
  for (double x : v)
    s += (x - m) * (x - m);
  return {m, v.size() > 1 ? std::sqrt(s / static_cast<double>(v.size() - 1)) : 0.0};
}

}  // namespace

std::vector<PhaseSensitivity> input_sensitivity(const Units& train, const Phases& phases,
                                                const std::vector<Units>& references, double threshold)
{
  const std::size_t k = static_cast<std::size_t>(phases.k);
  std::vector<PhaseSensitivity> out(k);
  // The training input's call-count features: their columns, scales and per-phase centres.
  std::vector<std::string> calls;
  std::vector<std::size_t> col;
  for (std::size_t j = 0; j < train.feature_names.size(); ++j)
    if (train.feature_names[j].rfind("calls ", 0) == 0) {
      calls.push_back(train.feature_names[j]);
      col.push_back(j);
    }
  std::vector<double> scale(col.size(), 1.0);
  for (std::size_t c = 0; c < col.size(); ++c) {
    const Column s = column_stats(train.features, col[c]);
    scale[c] = s.std > 0 ? s.std : std::max(1.0, std::abs(s.mean));
  }
  std::vector<std::vector<double>> centre(k, std::vector<double>(col.size(), 0.0));
  std::vector<std::vector<double>> train_cost(k);
  for (std::size_t i = 0; i < train.count; ++i) {
    const std::size_t h = static_cast<std::size_t>(phases.of_unit[i]);
    for (std::size_t c = 0; c < col.size(); ++c)
      centre[h][c] += train.features[i][col[c]];
    train_cost[h].push_back(train.proxy_s[i]);
  }
  for (std::size_t h = 0; h < k; ++h) {
    for (double& x : centre[h])
      x /= static_cast<double>(train_cost[h].size());
    std::tie(out[h].train_mean, out[h].train_std) = mean_std(train_cost[h]);
  }
  // Per phase, the mean work per unit of each function in training.
  auto work_means = [](const Units& u, const std::vector<std::size_t>& members) {
    std::map<std::string, double> m;
    for (std::size_t j = 0; j < u.feature_names.size(); ++j) {
      if (u.feature_names[j].rfind("work ", 0) != 0 || members.empty())
        continue;
      double sum = 0;
      for (std::size_t i : members)
        sum += u.features[i][j];
      m[u.feature_names[j].substr(5)] = sum / static_cast<double>(members.size());
    }
    return m;
  };
  // The tie-break (below): the other features, standardized within the training input, and their centres.
  std::vector<std::string> others;
  std::vector<std::vector<double>> other_centre(k);
  {
    std::vector<std::size_t> ocol;
    for (std::size_t j = 0; j < train.feature_names.size(); ++j)
      if (train.feature_names[j].rfind("calls ", 0) != 0) {
        others.push_back(train.feature_names[j]);
        ocol.push_back(j);
      }
    const std::vector<std::vector<double>> z = standardized_within(train, others);
    for (std::size_t h = 0; h < k; ++h)
      other_centre[h].assign(others.size(), 0.0);
    for (std::size_t i = 0; i < train.count; ++i)
      for (std::size_t c = 0; c < others.size(); ++c)
        other_centre[static_cast<std::size_t>(phases.of_unit[i])][c] += z[i][c];
    for (std::size_t h = 0; h < k; ++h)
      for (double& x : other_centre[h])
        x /= static_cast<double>(train_cost[h].size());
  }
  std::vector<std::vector<std::size_t>> train_members(k);
  for (std::size_t i = 0; i < train.count; ++i)
    train_members[static_cast<std::size_t>(phases.of_unit[i])].push_back(i);
  std::vector<std::set<std::string>> sensitive_functions(k);

  for (const Units& ref : references) {
    std::vector<std::size_t> ref_col(col.size(), SIZE_MAX);
    for (std::size_t c = 0; c < col.size(); ++c)
      for (std::size_t j = 0; j < ref.feature_names.size(); ++j)
        if (ref.feature_names[j] == calls[c])
          ref_col[c] = j;
    const std::vector<std::vector<double>> ref_z = standardized_within(ref, others);
    std::vector<std::vector<std::size_t>> members(k);
    for (std::size_t i = 0; i < ref.count; ++i) {
      // Nearest centre by call counts; among centres equally near (phases that make the same calls and
      // differ in bytes or work, as LAMMPS' first step and the steps after it), nearest by the other
      // features standardized within each input: the unit that sends more than its input's others joins the
      // phase that sends more than training's others, whatever the sizes.
      std::size_t best = 0;
      double best_d = std::numeric_limits<double>::infinity(), best_tie = best_d;
      for (std::size_t h = 0; h < k; ++h) {
        double d = 0, tie = 0;
        for (std::size_t c = 0; c < col.size(); ++c) {
          const double x = ref_col[c] == SIZE_MAX ? 0.0 : ref.features[i][ref_col[c]];
          d += std::pow((x - centre[h][c]) / scale[c], 2);
        }
        for (std::size_t c = 0; c < others.size(); ++c)
          tie += std::pow(ref_z[i][c] - other_centre[h][c], 2);
        const bool nearer = d < best_d * (1 - 1e-9) - 1e-12;
        const bool as_near = not nearer && d <= best_d * (1 + 1e-9) + 1e-12;
        if (nearer || (as_near && tie < best_tie)) {
          best_d = std::min(d, best_d);
          best_tie = tie;
          best = h;
        }
      }
      members[best].push_back(i);
    }
    for (std::size_t h = 0; h < k; ++h) {
      PhaseSensitivity& p = out[h];
      std::vector<double> cost;
      for (std::size_t i : members[h])
        cost.push_back(ref.proxy_s[i]);
      const auto [m, sd] = mean_std(cost);
      p.units.push_back(members[h].size());
      p.mean.push_back(m);
      p.std.push_back(sd);
      if (members[h].empty())
        continue;  // the input never enters this phase: nothing to compare
      ++p.compared;
      // Eq. 6.
      if (relative_change(p.train_mean, m, p.train_mean) > threshold ||
          relative_change(p.train_std, sd, p.train_std > 0 ? p.train_std : p.train_mean) > threshold)
        p.sensitive = true;
      const auto train_work = work_means(train, train_members[h]);
      const auto ref_work = work_means(ref, members[h]);
      for (const auto& [name, w] : train_work) {
        auto it = ref_work.find(name);
        if (relative_change(w, it == ref_work.end() ? 0.0 : it->second, w) > threshold)
          sensitive_functions[h].insert(name);
      }
    }
  }
  for (std::size_t h = 0; h < k; ++h)
    out[h].sensitive_functions.assign(sensitive_functions[h].begin(), sensitive_functions[h].end());
  return out;
}

}  // namespace gridcast::models::sampling
