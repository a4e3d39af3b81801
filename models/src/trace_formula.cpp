#include "gridcast/models/trace_formula.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/trace_rules.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace gridcast::models::trace {

namespace {

/// Axes of dims_create(np, d) with more than `above` ranks.
double grid_axes(double np, int d, int above)
{
  if (np < 1 || np > 1e9)
    return 0;
  int n = 0;
  for (int e : dims_create(static_cast<int>(std::lround(np)), d))
    n += e > above ? 1 : 0;
  return n;
}

/// Extent of axis `axis` of dims_create(np, d) (non-increasing, as MPI_Dims_create orders them).
double grid_extent(double np, int d, int axis)
{
  if (np < 1 || np > 1e9)
    return 1;
  return dims_create(static_cast<int>(std::lround(np)), d)[static_cast<std::size_t>(axis)];
}

struct FeatureDef {
  std::string name;
  double (*fn)(double nw, double np);
};

// Simplest first. Powers of Nw/Np cover strong scaling (a 3-D block of Nw/Np points has faces in
// (Nw/Np)^(2/3)), products cover task farms (Nw tasks per worker), log2 covers trees.
const std::vector<FeatureDef>& features()
{
  static const std::vector<FeatureDef> defs = {
      {"1", [](double, double) { return 1.0; }},
      {"Nw", [](double nw, double) { return nw; }},
      {"Np", [](double, double np) { return np; }},
      {"Nw/Np", [](double nw, double np) { return nw / np; }},
      {"Nw*Np", [](double nw, double np) { return nw * np; }},
      {"log2(Np)", [](double, double np) { return std::log2(np); }},
      {"1/Np", [](double, double np) { return 1.0 / np; }},
      {"Nw^2", [](double nw, double) { return nw * nw; }},
      {"Nw^3", [](double nw, double) { return nw * nw * nw; }},
      {"Nw^(1/2)", [](double nw, double) { return std::sqrt(nw); }},
      {"Nw^(2/3)", [](double nw, double) { return std::cbrt(nw * nw); }},
      {"Np^2", [](double, double np) { return np * np; }},
      {"Nw^2/Np", [](double nw, double np) { return nw * nw / np; }},
      {"(Nw/Np)^(1/2)", [](double nw, double np) { return std::sqrt(nw / np); }},
      {"(Nw/Np)^(1/3)", [](double nw, double np) { return std::cbrt(nw / np); }},
      {"(Nw/Np)^(2/3)", [](double nw, double np) { return std::cbrt((nw / np) * (nw / np)); }},
      {"Nw/Np^2", [](double nw, double np) { return nw / (np * np); }},
      {"Nw*log2(Np)", [](double nw, double np) { return nw * std::log2(np); }},
      {"Nw/(Np-1)", [](double nw, double np) { return np > 1 ? nw / (np - 1) : 0.0; }},
      // Physically motivated forms of compute work (appended: the order above breaks ties): dense linear
      // algebra on an Nw x Nw matrix spread over Np ranks (LU: Nw^3/Np flops per rank), its panels
      // (Nw^2), a 2-D decomposition's panels (Nw^2/Np^(1/2)), sorting-like work (Nw log Nw).
      {"Nw^3/Np", [](double nw, double np) { return nw * nw * nw / np; }},
      {"Nw^3/Np^2", [](double nw, double np) { return nw * nw * nw / (np * np); }},
      {"Nw^2/Np^(1/2)", [](double nw, double np) { return nw * nw / std::sqrt(np); }},
      {"Nw*log2(Nw)", [](double nw, double) { return nw > 0 ? nw * std::log2(nw) : 0.0; }},
      {"Nw/Np*log2(Nw/Np)", [](double nw, double np) { return nw > np ? nw / np * std::log2(nw / np) : 0.0; }},
      // The shape of the MPI_Dims_create(Np, d) process grid (appended, and outside fit_formula's search:
      // only fit_grid_formula uses them): how many axes have more than 1 rank (a code that makes no
      // call along an axis of extent 1) or more than 2 (one that makes a second exchange round where
      // the lower and upper neighbours differ). Piecewise constant in Np: no power of Np follows them.
      {"axes3>1(Np)", [](double, double np) { return grid_axes(np, 3, 1); }},
      {"axes3>2(Np)", [](double, double np) { return grid_axes(np, 3, 2); }},
      {"axes2>1(Np)", [](double, double np) { return grid_axes(np, 2, 1); }},
      {"axes2>2(Np)", [](double, double np) { return grid_axes(np, 2, 2); }},
      // Sizes and counts that follow the MPI_Dims_create(Np, d) grid (appended; searched for counts and
      // sizes only, by fit_plausible_formula): a global Nw split over an axis (Nw/d_k: the rows of a 2-D
      // block, a halo line), a face of a 3-D block (Nw^2 over the two other axes' extents), and the
      // extents themselves (a loop over a grid row's ranks). Non-powers of two included: 96 is 6x4x4.
      {"Nw/dims2[0](Np)", [](double nw, double np) { return nw / grid_extent(np, 2, 0); }},
      {"Nw/dims2[1](Np)", [](double nw, double np) { return nw / grid_extent(np, 2, 1); }},
      {"Nw/dims3[0](Np)", [](double nw, double np) { return nw / grid_extent(np, 3, 0); }},
      {"Nw/dims3[1](Np)", [](double nw, double np) { return nw / grid_extent(np, 3, 1); }},
      {"Nw/dims3[2](Np)", [](double nw, double np) { return nw / grid_extent(np, 3, 2); }},
      {"Nw^2/(dims3[1]*dims3[2])(Np)",
       [](double nw, double np) { return nw * nw / (grid_extent(np, 3, 1) * grid_extent(np, 3, 2)); }},
      {"Nw^2/(dims3[0]*dims3[2])(Np)",
       [](double nw, double np) { return nw * nw / (grid_extent(np, 3, 0) * grid_extent(np, 3, 2)); }},
      {"Nw^2/(dims3[0]*dims3[1])(Np)",
       [](double nw, double np) { return nw * nw / (grid_extent(np, 3, 0) * grid_extent(np, 3, 1)); }},
      {"dims2[0](Np)", [](double, double np) { return grid_extent(np, 2, 0); }},
      {"dims2[1](Np)", [](double, double np) { return grid_extent(np, 2, 1); }},
      {"dims3[0](Np)", [](double, double np) { return grid_extent(np, 3, 0); }},
      {"dims3[1](Np)", [](double, double np) { return grid_extent(np, 3, 1); }},
      {"dims3[2](Np)", [](double, double np) { return grid_extent(np, 3, 2); }},
      // Products over the axes of a 2-D grid's block (b0 = Nw/dims2[0], b1 = Nw/dims2[1]) that Nw^2/Np
      // = b0*b1 does not cover: a panel one block wide along the longer axis (b0^2: SUMMA's broadcast
      // panels, max(P, Q) steps wide), and the work of a block times such a width (b0^2*b1).
      {"Nw^2/dims2[0]^2(Np)", [](double nw, double np) { return nw * nw / std::pow(grid_extent(np, 2, 0), 2); }},
      {"Nw^2/dims2[1]^2(Np)", [](double nw, double np) { return nw * nw / std::pow(grid_extent(np, 2, 1), 2); }},
      {"Nw^3/(dims2[0]^2*dims2[1])(Np)",
       [](double nw, double np) { return nw * nw * nw / (std::pow(grid_extent(np, 2, 0), 2) * grid_extent(np, 2, 1)); }},
      {"Nw^3/(dims2[0]*dims2[1]^2)(Np)",
       [](double nw, double np) { return nw * nw * nw / (grid_extent(np, 2, 0) * std::pow(grid_extent(np, 2, 1), 2)); }},
      // Transform work on a block of a 1-D, 2-D or 3-D grid of side Nw split over Np ranks: the points
      // times log2 of a transform's length (an FFT of length Nw or Nw^2 costs 5 n log2 n flop).
      {"Nw/Np*log2(Nw)", [](double nw, double np) { return nw > 1 ? nw / np * std::log2(nw) : 0.0; }},
      {"Nw^2/Np*log2(Nw)", [](double nw, double np) { return nw > 1 ? nw * nw / np * std::log2(nw) : 0.0; }},
      {"Nw^3/Np*log2(Nw)", [](double nw, double np) { return nw > 1 ? nw * nw * nw / np * std::log2(nw) : 0.0; }},
      // The depth of a hierarchy over the size (appended; searched for loop counts only, by
      // fit_plausible_formula, not for sizes or work): the levels of a multigrid V-cycle that
      // halves its grid down to a fixed coarsest size, the stages of a radix-2 transform or tree of length Nw.
      {"log2(Nw)", [](double nw, double) { return nw > 0 ? std::log2(nw) : 0.0; }},
  };
  return defs;
}

}  // namespace

namespace {

/// The features fit_plausible_formula searches: fit_formula's, then the grid-extent ones; for a count of
/// iterations also log2(Nw) (the levels of a hierarchy over the size). Sizes and work do not get it: with
/// three terms on noisy means (LAMMPS' atom-dependent messages) it fits noise as well as anything.
const std::vector<std::size_t>& size_features(bool count)
{
  auto make = [](bool with_depth) {
    std::vector<std::size_t> v;
    for (std::size_t f = 0; f < features().size(); ++f) {
      const std::string& name = features()[f].name;
      if (name.rfind("axes", 0) != 0 && (with_depth || name != "log2(Nw)"))
        v.push_back(f);
    }
    return v;
  };
  static const std::vector<std::size_t> counts = make(true);
  static const std::vector<std::size_t> sizes  = make(false);
  return count ? counts : sizes;
}

}  // namespace

std::size_t first_grid_feature()
{
  static const std::size_t first = [] {
    for (std::size_t i = 0; i < features().size(); ++i)
      if (features()[i].name.rfind("axes", 0) == 0)
        return i;
    return features().size();
  }();
  return first;
}

namespace {

/// Least squares on columns scaled to unit max, so that Nw^3 next to 1 stays well conditioned.
Eigen::VectorXd solve(const Eigen::MatrixXd& a, const Eigen::VectorXd& b)
{
  Eigen::VectorXd scale(a.cols());
  Eigen::MatrixXd s = a;
  for (Eigen::Index c = 0; c < a.cols(); ++c) {
    double m = a.col(c).cwiseAbs().maxCoeff();
    scale(c) = m > 0 ? m : 1.0;
    s.col(c) /= scale(c);
  }
  Eigen::VectorXd x = s.colPivHouseholderQr().solve(b);
  return x.cwiseQuotient(scale);
}

/// Snaps coefficients within a relative 1e-9 of a simple rational (k/1, k/2 ... k/1024) onto it, so that
/// exact relations read as such ("8*Nw^2", not "7.9999999999997*Nw^2").
double snap(double v)
{
  if (v == 0 || not std::isfinite(v))
    return v;
  for (double den : {1.0, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 1024.0}) {
    double k = std::round(v * den);
    if (k != 0 && std::abs(k / den - v) <= 1e-9 * std::abs(v))
      return k / den;
  }
  return v;
}

double rel_error(double predicted, double observed)
{
  return std::abs(predicted - observed) / std::max(std::abs(observed), 1.0);
}

}  // namespace

std::string number_text(double v)
{
  std::array<char, 64> buf{};
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), res.ptr);
}

std::size_t feature_count() { return features().size(); }
const std::string& feature_name(std::size_t f) { return features().at(f).name; }
std::optional<std::size_t> feature_from_name(std::string_view name)
{
  for (std::size_t i = 0; i < features().size(); ++i)
    if (features()[i].name == name)
      return i;
  return std::nullopt;
}
double feature_value(std::size_t f, double nw, double np) { return features().at(f).fn(nw, np); }

double Formula::eval(double nw, double np) const
{
  double v = 0;
  for (const Term& t : terms)
    v += t.coef * feature_value(t.feature, nw, np);
  if (period > 0) {
    const double total = std::max(0.0, std::round(v));
    const double whole = std::floor(total / period);
    return remainder ? total - whole * period : whole;
  }
  return integer ? std::round(v) : v;
}

std::string Formula::text() const
{
  if (terms.empty())
    return "0";
  std::string s;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    double c = terms[i].coef;
    const std::string& f = feature_name(terms[i].feature);
    if (i > 0)
      s += c < 0 ? " - " : " + ";
    else if (c < 0)
      s += "-";
    double a = std::abs(c);
    if (f == "1")
      s += number_text(a);
    else if (a == 1.0)
      s += f;
    else
      s += number_text(a) + "*" + f;
  }
  if (period > 0)
    return remainder ? "(" + s + ") mod " + std::to_string(period) : "floor((" + s + ") / " + std::to_string(period) + ")";
  return s;
}

namespace {

/// One point per distinct (Nw, Np), the mean of its repeated observations, in (Nw, Np) order (an ordered
/// map: deterministic).
std::vector<FitPoint> average_repeats(const std::vector<FitPoint>& raw)
{
  std::map<std::pair<double, double>, std::pair<double, int>> acc;
  for (const FitPoint& p : raw) {
    auto& [sum, n] = acc[{p.nw, p.np}];
    sum += p.value;
    ++n;
  }
  std::vector<FitPoint> pts;
  for (const auto& [key, v] : acc)
    pts.push_back({key.first, key.second, v.first / v.second});
  return pts;
}

/// For a feature that is a power below 1 of Nw or of Nw/Np, the linear feature of the same quantity
/// (Nw, Nw/Np): the affine form "1 + that" is what the parsimony rule prefers to it (fit_formula).
std::optional<std::size_t> linear_partner(std::size_t feature)
{
  const std::string& name = feature_name(feature);
  if (name == "Nw^(1/2)" || name == "Nw^(2/3)")
    return feature_from_name("Nw");
  if (name == "(Nw/Np)^(1/2)" || name == "(Nw/Np)^(1/3)" || name == "(Nw/Np)^(2/3)")
    return feature_from_name("Nw/Np");
  return std::nullopt;
}

}  // namespace

namespace {

/// The least-squares coefficients of the columns `set` of `all` (column c is feature ids[c]) through y,
/// snapped (zero coefficients dropped).
std::vector<Term> fitted_terms(const Eigen::MatrixXd& all, const Eigen::VectorXd& y, const std::vector<int>& set,
                               const std::vector<std::size_t>& ids)
{
  Eigen::MatrixXd a(all.rows(), static_cast<Eigen::Index>(set.size()));
  for (std::size_t c = 0; c < set.size(); ++c)
    a.col(static_cast<Eigen::Index>(c)) = all.col(set[c]);
  Eigen::VectorXd x = solve(a, y);
  std::vector<Term> terms;
  for (std::size_t c = 0; c < set.size(); ++c) {
    double coef = snap(x(static_cast<Eigen::Index>(c)));
    if (coef != 0)
      terms.push_back({ids[static_cast<std::size_t>(set[c])], coef});
  }
  return terms;
}

/// Calls `seen(err, subset)` for every subset of at most `max_terms` of the first `all.cols()` features
/// that the points determine, with its leave-one-out error: by size, then in lexicographic feature
/// order (simplest first); size k needs k + 1 points to be checked. `seen` returns true to stop after
/// the current size (an exact model at one size: a larger one cannot be simpler), when `stop_allowed`.
template <class Seen>
void each_subset_error(const Eigen::MatrixXd& all, const Eigen::VectorXd& y, int max_terms, bool stop_allowed, Seen&& seen)
{
  const int n  = static_cast<int>(all.rows());
  const int nf = static_cast<int>(all.cols());
  for (int k = 1; k <= max_terms && k + 1 <= n && k <= nf; ++k) {
    std::vector<int> idx(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i)
      idx[static_cast<std::size_t>(i)] = i;
    bool stop = false;
    while (true) {
      Eigen::MatrixXd a(n, k);
      for (int c = 0; c < k; ++c)
        a.col(c) = all.col(idx[static_cast<std::size_t>(c)]);
      double err = 0;
      bool degenerate = false;
      for (int leave = 0; leave < n && not degenerate; ++leave) {
        Eigen::MatrixXd at(n - 1, k);
        Eigen::VectorXd yt(n - 1);
        for (int i = 0, j = 0; i < n; ++i)
          if (i != leave) {
            at.row(j) = a.row(i);
            yt(j++)   = y(i);
          }
        // A subset that the remaining points cannot determine (rank deficient) says nothing.
        Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(at);
        if (qr.rank() < k) {
          degenerate = true;
          break;
        }
        Eigen::VectorXd x = solve(at, yt);
        // Unrounded even for integer quantities: rounding would make many wrong models look exact on
        // small training sets (0.4*Np rounds to 2 and 3 at Np 4 and 8, as log2(Np) does).
        double pred = a.row(leave).dot(x);
        err += rel_error(pred, y(leave)) / n;
      }
      if (not degenerate && seen(err, idx))
        stop = true;
      // Next subset.
      int i = k - 1;
      while (i >= 0 && idx[static_cast<std::size_t>(i)] == nf - k + i)
        --i;
      if (i < 0)
        break;
      ++idx[static_cast<std::size_t>(i)];
      for (int j = i + 1; j < k; ++j)
        idx[static_cast<std::size_t>(j)] = idx[static_cast<std::size_t>(j - 1)] + 1;
    }
    if (stop && stop_allowed)
      break;
  }
}

}  // namespace

Formula fit_formula(const std::vector<FitPoint>& raw, bool integer, int max_terms)
{
  return fit_formula(raw, integer, max_terms, Parsimony{});
}

namespace {

/// The feature values of `ids` (columns) at `pts` (rows).
Eigen::MatrixXd feature_matrix(const std::vector<FitPoint>& pts, const std::vector<std::size_t>& ids)
{
  Eigen::MatrixXd all(static_cast<Eigen::Index>(pts.size()), static_cast<Eigen::Index>(ids.size()));
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (std::size_t c = 0; c < ids.size(); ++c)
      all(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) = feature_value(ids[c], pts[i].nw, pts[i].np);
  return all;
}

/// The features fit_formula searches: every one before the grid-shape features.
const std::vector<std::size_t>& plain_features()
{
  static const std::vector<std::size_t> ids = [] {
    std::vector<std::size_t> v;
    for (std::size_t f = 0; f < first_grid_feature(); ++f)
      v.push_back(f);
    return v;
  }();
  return ids;
}

/// fit_formula over the features `ids`.
Formula select_formula(const std::vector<FitPoint>& raw, bool integer, int max_terms, Parsimony parsimony,
                       const std::vector<std::size_t>& ids);

}  // namespace

Formula fit_formula(const std::vector<FitPoint>& raw, bool integer, int max_terms, Parsimony parsimony)
{
  return select_formula(raw, integer, max_terms, parsimony, plain_features());
}

namespace {

Formula select_formula(const std::vector<FitPoint>& raw, bool integer, int max_terms, Parsimony parsimony,
                       const std::vector<std::size_t>& ids)
{
  if (raw.empty())
    throw InternalError("fit_formula: no points");
  std::vector<FitPoint> pts = average_repeats(raw);
  const int n = static_cast<int>(pts.size());

  Formula best;
  best.integer = integer;
  best.points  = n;
  // A constant needs no search and is the only thing one point supports.
  bool constant = std::all_of(pts.begin(), pts.end(), [&](const FitPoint& p) { return p.value == pts[0].value; });
  if (constant || n == 1) {
    double mean = 0;
    for (const FitPoint& p : pts)
      mean += p.value / n;
    best.terms = {{0, snap(mean)}};
    if (constant && n >= 2) {
      best.cv_error = 0.0;  // every left-out point is the constant itself
    } else if (n >= 2) {
      double err = 0;  // leave-one-out of a mean
      for (int i = 0; i < n; ++i)
        err += rel_error((mean * n - pts[i].value) / (n - 1), pts[i].value) / n;
      best.cv_error = err;
    }
    return best;
  }

  const Eigen::MatrixXd all = feature_matrix(pts, ids);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i)
    y(i) = pts[i].value;

  double best_err = std::numeric_limits<double>::infinity();
  std::vector<int> best_set;
  std::vector<std::pair<double, std::vector<int>>> tried;  // in order of simplicity, for the parsimony rule
  const bool keep_tried = parsimony.relative > 0 || parsimony.absolute > 0;
  each_subset_error(all, y, max_terms, true, [&](double err, const std::vector<int>& idx) {
    if (err < best_err - 1e-12) {
      best_err = err;
      best_set = idx;
    }
    if (keep_tried)
      tried.emplace_back(err, idx);
    return best_err <= 1e-9;  // exact at this size: a larger model cannot be simpler
  });
  const double tolerated = best_err * (1 + parsimony.relative) + parsimony.absolute;
  for (const auto& [err, set] : tried)
    if (err <= tolerated) {
      best_err = err;
      best_set = set;
      break;
    }
  // Affine preference: a single fractional power below 1 (c*Nw^(1/2), c*(Nw/Np)^(2/3)...) is a curve
  // through the origin that bends like "a + b*Nw" over the training range, and its exponent was itself
  // picked from several candidates, so it is not simpler than the affine form: it only has one
  // coefficient fewer. Where both are within the tolerance the data cannot tell them apart, and a fixed
  // cost per call plus work proportional to the data is the physical default of measured work; the
  // power through the origin would extrapolate far below it (-45 % at 4x the largest of four training
  // sizes 4000-32000 for work 1e8 + 1e4*Nw, tests/models/test_latency_model.cpp). The power stays where it is clearly
  // better than the affine form (outside the tolerance).
  if (not tried.empty() && best_set.size() == 1)
    if (auto linear = linear_partner(ids[static_cast<std::size_t>(best_set[0])]))
      for (const auto& [err, set] : tried)
        if (set.size() == 2 && ids[static_cast<std::size_t>(set[0])] == 0 &&
            ids[static_cast<std::size_t>(set[1])] == *linear && err <= tolerated) {
          best_err = err;
          best_set = set;
          break;
        }
  if (best_set.empty()) {
    // Too few points for any checked model beyond a constant: the mean.
    double mean = y.mean();
    best.terms = {{0, snap(mean)}};
    return best;
  }
  best.terms    = fitted_terms(all, y, best_set, ids);
  best.cv_error = best_err;
  return best;
}

}  // namespace

namespace {

/// Where a quantity is looked at for plausibility: every training Nw and Np, and geometric steps from
/// the largest of each up to the range's end (Np rounded to whole ranks).
std::pair<std::vector<double>, std::vector<double>> plausibility_samples(const std::vector<FitPoint>& pts,
                                                                         PlausibleRange range)
{
  std::set<double> nws, nps;
  for (const FitPoint& p : pts) {
    nws.insert(p.nw);
    nps.insert(p.np);
  }
  const double nw_max = *nws.rbegin(), np_max = *nps.rbegin();
  for (double f = 1.25; nw_max * f <= range.nw_hi * 1.0000001; f *= 1.25)
    nws.insert(nw_max * f);
  nws.insert(std::max(nw_max, range.nw_hi));
  for (double f = 1.25; np_max * f <= range.np_hi * 1.0000001; f *= 1.25)
    nps.insert(std::round(np_max * f));
  nps.insert(std::max(np_max, std::round(range.np_hi)));
  return {{nws.begin(), nws.end()}, {nps.begin(), nps.end()}};
}

/// +1 where every training series along one axis (the points at one value of the other) that changes
/// at all never decreases, -1 where none ever increases, 0 where they disagree or none changes.
int training_direction(const std::vector<FitPoint>& pts, bool along_nw)
{
  std::map<double, std::vector<std::pair<double, double>>> series;  // other axis -> (axis, value), sorted
  for (const FitPoint& p : pts)
    series[along_nw ? p.np : p.nw].emplace_back(along_nw ? p.nw : p.np, p.value);
  bool up = false, down = false;
  for (auto& [other, s] : series) {
    std::sort(s.begin(), s.end());
    for (std::size_t i = 1; i < s.size(); ++i) {
      up   = up || s[i].second > s[i - 1].second;
      down = down || s[i].second < s[i - 1].second;
    }
  }
  return up == down ? 0 : up ? 1 : -1;
}

std::string point_text(double nw, double np) { return "Nw " + number_text(nw) + ", Np " + number_text(np); }

}  // namespace

std::string implausibility(const Formula& f, const std::vector<FitPoint>& raw, PlausibleRange range)
{
  if (raw.empty())
    return {};
  const std::vector<FitPoint> pts = average_repeats(raw);
  const auto [nws, nps] = plausibility_samples(pts, range);
  const bool nonnegative = std::all_of(pts.begin(), pts.end(), [](const FitPoint& p) { return p.value >= 0; });
  const int dir_nw = training_direction(pts, true), dir_np = training_direction(pts, false);
  auto raw_eval = [&](double nw, double np) {
    double v = 0;
    for (const Term& t : f.terms)
      v += t.coef * feature_value(t.feature, nw, np);
    return v;
  };
  for (double np : nps)
    for (double nw : nws) {
      const double v = raw_eval(nw, np);
      if (not std::isfinite(v))
        return "not finite at " + point_text(nw, np);
      if (nonnegative && v < -1e-9 * std::max(1.0, std::abs(v)))
        return "negative (" + number_text(v) + ") at " + point_text(nw, np);
    }
  // A count that depends on Np alone (a loop over a grid's axes or a tree's levels) is a whole number at
  // the rank counts predictions are asked for, 2x, 4x... the largest training Np (log2(Np) is, 2 - 4/Np
  // is not); a count in Nw may be cut by an integer division the formula rounds.
  auto np_only = [](const Term& t) {
    return feature_value(t.feature, 1, 12) == feature_value(t.feature, 3, 12) &&
           feature_value(t.feature, 1, 96) == feature_value(t.feature, 3, 96);
  };
  const bool whole = range.whole && std::all_of(f.terms.begin(), f.terms.end(), np_only) &&
                     std::all_of(pts.begin(), pts.end(), [](const FitPoint& p) { return p.value == std::round(p.value); });
  double np_train_max = 0;
  for (const FitPoint& p : pts)
    np_train_max = std::max(np_train_max, p.np);
  if (whole)
    for (double np = 2 * *nps.begin(); np <= range.np_hi; np *= 2) {
      if (np <= np_train_max)
        continue;
      const double v = raw_eval(pts.front().nw, np);
      if (std::abs(v - std::round(v)) > 1e-6 * std::max(1.0, std::abs(v)))
        return "not a whole number of iterations (" + number_text(v) + ") at Np " + number_text(np);
    }
  // Monotone like the training series, in steps that are not rounding noise.
  auto against = [&](double before, double after, int dir) {
    const double tol = 1e-9 * std::max({1.0, std::abs(before), std::abs(after)});
    return dir > 0 ? after < before - tol : after > before + tol;
  };
  if (dir_nw != 0)
    for (double np : nps)
      for (std::size_t i = 1; i < nws.size(); ++i)
        if (against(raw_eval(nws[i - 1], np), raw_eval(nws[i], np), dir_nw))
          return std::string(dir_nw > 0 ? "decreasing" : "increasing") + " in Nw between " +
                 point_text(nws[i - 1], np) + " and Nw " + number_text(nws[i]) +
                 ", where every training series is " + (dir_nw > 0 ? "non-decreasing" : "non-increasing");
  // The extents of the MPI_Dims_create grid do not follow Np monotonically (12 ranks are 4x3, 13 are
  // 13x1): a formula of them follows the grid, not a trend in Np.
  const bool follows_grid = std::any_of(f.terms.begin(), f.terms.end(), [](const Term& t) {
    return t.feature >= first_grid_feature() && feature_name(t.feature).find("dims") != std::string::npos;
  });
  if (dir_np != 0 && not follows_grid)
    for (double nw : nws)
      for (std::size_t i = 1; i < nps.size(); ++i)
        if (against(raw_eval(nw, nps[i - 1]), raw_eval(nw, nps[i]), dir_np))
          return std::string(dir_np > 0 ? "decreasing" : "increasing") + " in Np between " +
                 point_text(nw, nps[i - 1]) + " and Np " + number_text(nps[i]) +
                 ", where every training series is " + (dir_np > 0 ? "non-decreasing" : "non-increasing");
  return {};
}

namespace {

PlausibleFit search_plausible_formula(const std::vector<FitPoint>& raw, bool integer, PlausibleRange range, int max_terms,
                                      int avoid_dims = 0);

/// Whether `f` reads the extents of the MPI_Dims_create(Np, d) grid.
bool reads_grid(const Formula& f, int d)
{
  const std::string tag = "dims" + std::to_string(d) + "[";
  return std::any_of(f.terms.begin(), f.terms.end(),
                     [&](const Term& t) { return feature_name(t.feature).find(tag) != std::string::npos; });
}

/// The inputs of a plausible-formula search, for its memo.
struct PlausibleKey {
  std::vector<double> points;  ///< nw, np, value of each point, in order
  bool integer = false;
  double nw_hi = 0, np_hi = 0;
  bool whole = false;
  int max_terms = 0;
  int grid_dims = 0;
  auto operator<=>(const PlausibleKey&) const = default;
};

}  // namespace

/// A fit searches every subset of up to 3 of some 30 features, with leave-one-out, at each position of
/// each group, and the positions of a code's groups (its corner, edge and interior ranks) mostly repeat
/// the same series: a memo of the searches done (a pure function of its inputs) halves a fit's time
/// where groups are many. Bounded: it starts over past kMemo entries.
PlausibleFit fit_plausible_formula(const std::vector<FitPoint>& raw, bool integer, PlausibleRange range, int max_terms)
{
  constexpr std::size_t kMemo = 1 << 14;
  static std::mutex mutex;
  static std::map<PlausibleKey, PlausibleFit> memo;
  PlausibleKey key{{}, integer, range.nw_hi, range.np_hi, range.whole, max_terms, range.grid_dims};
  key.points.reserve(3 * raw.size());
  for (const FitPoint& p : raw)
    key.points.insert(key.points.end(), {p.nw, p.np, p.value});
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memo.find(key); it != memo.end())
      return it->second;
  }
  PlausibleFit out = search_plausible_formula(raw, integer, range, max_terms);
  if (range.grid_dims == 2 || range.grid_dims == 3) {
    const int other = 5 - range.grid_dims;
    if (reads_grid(out.formula, other)) {
      PlausibleFit own = search_plausible_formula(raw, integer, range, max_terms, other);
      if ((own.best || not out.best) && not own.mean &&
          own.formula.cv_error.value_or(0.0) <= out.formula.cv_error.value_or(0.0) + 1e-12)
        out = std::move(own);
    }
  }
  const std::lock_guard<std::mutex> lock(mutex);
  if (memo.size() >= kMemo)
    memo.clear();
  memo.emplace(std::move(key), out);
  return out;
}

namespace {

PlausibleFit search_plausible_formula(const std::vector<FitPoint>& raw, bool integer, PlausibleRange range, int max_terms,
                                      int avoid_dims)
{
  PlausibleFit out;
  std::vector<std::size_t> ids = size_features(range.whole);
  if (avoid_dims != 0) {
    const std::string tag = "dims" + std::to_string(avoid_dims) + "[";
    std::erase_if(ids, [&](std::size_t f) { return feature_name(f).find(tag) != std::string::npos; });
  }
  out.formula = select_formula(raw, integer, max_terms, Parsimony{}, ids);
  std::string why = implausibility(out.formula, raw, range);
  if (why.empty())
    return out;
  out.best     = false;
  out.rejected = out.formula.text() + ": " + why;
  // Every candidate by its leave-one-out error (the simpler first on a tie): the first plausible wins.
  const std::vector<FitPoint> pts = average_repeats(raw);
  const int n  = static_cast<int>(pts.size());
  const Eigen::MatrixXd all = feature_matrix(pts, ids);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i)
    y(i) = pts[i].value;
  std::vector<std::pair<double, std::vector<int>>> ranked;
  each_subset_error(all, y, max_terms, false, [&](double err, const std::vector<int>& idx) {
    ranked.emplace_back(err, idx);
    return false;
  });
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first - 1e-12; });
  for (const auto& [err, set] : ranked) {
    Formula g;
    g.integer  = integer;
    g.points   = n;
    g.terms    = fitted_terms(all, y, set, ids);
    g.cv_error = err;
    if (g.terms.size() == set.size() && implausibility(g, raw, range).empty()) {
      out.formula = std::move(g);
      return out;
    }
  }
  // Nothing plausible among the candidates: the mean of the training points (never negative for a
  // quantity that never was, and flat where the series move).
  Formula mean;
  mean.integer = integer;
  mean.points  = n;
  mean.terms   = {{0, snap(y.mean())}};
  double err   = 0;
  for (int i = 0; i < n && n >= 2; ++i)
    err += rel_error((y.mean() * n - y(i)) / (n - 1), y(i)) / n;
  mean.cv_error = err;
  out.formula   = std::move(mean);
  out.mean      = true;
  return out;
}

/// The first of `subsets` (sets of feature indexes, simplest first) whose least-squares formula reproduces
/// every point exactly, with more distinct feature rows than coefficients (a line through the points, not
/// an interpolation), and every point the others determine predicted exactly without it. A shape seen at
/// one Np only (an axis of extent > 2 at np 16 of 4, 8, 16) cannot be left out: the others do not determine
/// its coefficient, and leave-one-out would refuse every formula that reads it. Integer values only.
std::optional<Formula> first_exact_formula(const std::vector<FitPoint>& raw,
                                           const std::vector<std::vector<std::size_t>>& subsets)
{
  std::vector<FitPoint> pts = average_repeats(raw);
  if (pts.size() < 2)
    return std::nullopt;
  for (const FitPoint& p : pts)
    if (p.value != std::round(p.value))
      return std::nullopt;
  const auto n = static_cast<Eigen::Index>(pts.size());
  for (const std::vector<std::size_t>& set : subsets) {
    const auto k = static_cast<Eigen::Index>(set.size());
    Eigen::MatrixXd a(n, k);
    Eigen::VectorXd y(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      y(i) = pts[static_cast<std::size_t>(i)].value;
      for (Eigen::Index c = 0; c < k; ++c)
        a(i, c) = feature_value(set[static_cast<std::size_t>(c)], pts[static_cast<std::size_t>(i)].nw,
                                pts[static_cast<std::size_t>(i)].np);
    }
    Formula f;
    f.integer = true;
    f.points  = static_cast<int>(pts.size());
    Eigen::VectorXd x = solve(a, y);
    for (Eigen::Index c = 0; c < k; ++c) {
      const double coef = snap(x(c));
      if (coef != 0)
        f.terms.push_back({set[static_cast<std::size_t>(c)], coef});
    }
    if (f.terms.size() != set.size())
      continue;  // a term the data does not need: a smaller subset says the same
    bool exact = std::all_of(pts.begin(), pts.end(),
                             [&](const FitPoint& p) { return std::abs(f.eval(p.nw, p.np) - p.value) < 1e-9; });
    std::set<std::vector<double>> rows;
    for (Eigen::Index i = 0; i < n; ++i) {
      std::vector<double> row;
      for (Eigen::Index c = 0; c < k; ++c)
        row.push_back(a(i, c));
      rows.insert(row);
    }
    if (not exact || rows.size() < set.size() + 1)
      continue;
    auto loo = loo_predictions(f, pts);
    for (std::size_t i = 0; exact && i < pts.size(); ++i)
      exact = not loo[i] || std::abs(*loo[i] - pts[i].value) < 1e-6;
    if (not exact)
      continue;
    f.cv_error = 0.0;
    return f;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Formula> fit_grid_formula(const std::vector<FitPoint>& raw)
{
  const std::size_t g0 = first_grid_feature();
  // The grid-shape features only (the extent features after them are fit_plausible_formula's).
  std::size_t g1 = g0;
  while (g1 < feature_count() && feature_name(g1).rfind("axes", 0) == 0)
    ++g1;
  // Candidate subsets, simplest first: one shape feature, then a constant plus one, then two of them.
  std::vector<std::vector<std::size_t>> subsets;
  for (std::size_t f = g0; f < g1; ++f)
    subsets.push_back({f});
  for (std::size_t f = g0; f < g1; ++f)
    subsets.push_back({0, f});
  for (std::size_t f = g0; f < g1; ++f)
    for (std::size_t h = f + 1; h < g1; ++h)
      if (feature_name(f).substr(0, 5) == feature_name(h).substr(0, 5))  // one grid's two features
        subsets.push_back({f, h});
  return first_exact_formula(raw, subsets);
}

std::optional<Formula> fit_face_formula(const std::vector<FitPoint>& points, int dims, int axis)
{
  static const char* const kFaces2[] = {"Nw/dims2[1](Np)", "Nw/dims2[0](Np)"};
  static const char* const kFaces3[] = {"Nw^2/(dims3[1]*dims3[2])(Np)", "Nw^2/(dims3[0]*dims3[2])(Np)",
                                        "Nw^2/(dims3[0]*dims3[1])(Np)"};
  if (axis < 0 || axis >= dims || (dims != 2 && dims != 3))
    return std::nullopt;
  const auto face = feature_from_name(dims == 2 ? kFaces2[axis] : kFaces3[axis]);
  if (not face)
    throw InternalError(std::string("trace model: no feature for the face normal to axis ") + std::to_string(axis));
  // Only training grids whose other axes change say anything about the face: at one grid (a rank class
  // seen at one Np) c*Nw/d is c'*Nw, and the simpler formula stays.
  std::set<int> divisors;
  for (const FitPoint& p : points) {
    const std::vector<int> d = dims_create(static_cast<int>(std::lround(p.np)), dims);
    int other = 1;
    for (int k = 0; k < dims; ++k)
      if (k != axis)
        other *= d[static_cast<std::size_t>(k)];
    divisors.insert(other);
  }
  if (divisors.size() < 2)
    return std::nullopt;
  return first_exact_formula(points, {{*face}, {0, *face}});
}

std::vector<std::optional<double>> loo_predictions(const Formula& f, const std::vector<FitPoint>& raw)
{
  std::vector<FitPoint> pts = average_repeats(raw);
  const auto n = static_cast<Eigen::Index>(pts.size());
  const auto k = static_cast<Eigen::Index>(f.terms.size());
  std::map<std::pair<double, double>, std::optional<double>> by_point;
  for (Eigen::Index leave = 0; leave < n; ++leave) {
    std::optional<double> pred;
    if (k > 0 && n - 1 >= k) {
      Eigen::MatrixXd a(n - 1, k);
      Eigen::VectorXd y(n - 1);
      for (Eigen::Index i = 0, j = 0; i < n; ++i) {
        if (i == leave)
          continue;
        for (Eigen::Index c = 0; c < k; ++c)
          a(j, c) = feature_value(f.terms[static_cast<std::size_t>(c)].feature, pts[static_cast<std::size_t>(i)].nw,
                                  pts[static_cast<std::size_t>(i)].np);
        y(j++) = pts[static_cast<std::size_t>(i)].value;
      }
      Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
      if (qr.rank() == k) {
        Eigen::VectorXd x = solve(a, y);
        double v = 0;
        for (Eigen::Index c = 0; c < k; ++c)
          v += x(c) * feature_value(f.terms[static_cast<std::size_t>(c)].feature, pts[static_cast<std::size_t>(leave)].nw,
                                    pts[static_cast<std::size_t>(leave)].np);
        pred = v;
      }
    }
    by_point[{pts[static_cast<std::size_t>(leave)].nw, pts[static_cast<std::size_t>(leave)].np}] = pred;
  }
  std::vector<std::optional<double>> out;
  for (const FitPoint& p : raw)
    out.push_back(by_point[{p.nw, p.np}]);
  return out;
}

}  // namespace gridcast::models::trace
