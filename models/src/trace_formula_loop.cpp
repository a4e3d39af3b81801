// Quantities that change with a loop index (LoopFormula): a size or count whose value in iteration k of an
// enclosing loop follows a formula of (Nw, Np) and k. Split from trace_formula.cpp, whose search it uses.
#include "gridcast/models/trace_formula.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::models::trace {

// ---- quantities that change with a loop index ------------------------------------------------------------

double LoopFormula::eval(double nw, double np, std::uint64_t k) const
{
  if (k == 0 && first)
    return integer ? std::round(first->eval(nw, np)) : first->eval(nw, np);
  double v = base.eval(nw, np) + slope.eval(nw, np) * static_cast<double>(k);
  if (cap)
    v = std::min(v, cap->eval(nw, np));
  return integer ? std::round(v) : v;
}

std::string LoopFormula::text() const
{
  std::string t = base.text();
  if (not slope.terms.empty()) {
    std::string sl = slope.text();
    if (slope.terms.size() == 1 && feature_name(slope.terms[0].feature) == "1")
      t += (slope.terms[0].coef < 0 ? " - " + sl.substr(1) : " + " + sl) + "*k";
    else
      t += " + (" + sl + ")*k";
  }
  if (cap)
    t = "min(" + cap->text() + ", " + t + ")";
  if (first)
    t += "; k = 0: " + first->text();
  return t;
}

namespace {

/// One shape of fit_loop_formula: `first_apart` (iteration 0 fitted on its own), `capped` (a plateau).
std::optional<LoopFormula> fit_loop_shape(const std::vector<LoopFitPoint>& points, bool integer, std::string& why,
                                          int max_terms, bool first_apart, bool capped)
{
  auto tolerance = [&](double v) { return integer ? 0.5 : 1e-9 * std::max(std::abs(v), 1.0); };
  // Per (Nw, Np): the points (ordered maps: deterministic).
  std::map<std::pair<double, double>, std::vector<std::pair<double, double>>> by_point;
  for (const LoopFitPoint& p : points)
    by_point[{p.nw, p.np}].emplace_back(static_cast<double>(p.k), p.value);
  std::vector<FitPoint> bases, slopes, caps, firsts;
  std::vector<std::tuple<double, double, double, double>> single;  // (nw, np, k, value)
  for (const auto& [key, all] : by_point) {
    std::vector<std::pair<double, double>> obs;
    for (const auto& [k, v] : all) {
      if (first_apart && k == 0) {
        if (not firsts.empty() && firsts.back().nw == key.first && firsts.back().np == key.second) {
          if (std::abs(firsts.back().value - v) > tolerance(v)) {
            why = "iteration 0 takes several values";
            return std::nullopt;
          }
        } else {
          firsts.push_back({key.first, key.second, v});
        }
        continue;
      }
      obs.push_back({k, v});
    }
    if (obs.empty())
      continue;
    double cap = -std::numeric_limits<double>::infinity();
    if (capped) {
      for (const auto& [k, v] : obs)
        cap = std::max(cap, v);
      caps.push_back({key.first, key.second, cap});
    }
    // The line: through every value, or through those below the plateau.
    double n = 0, sk = 0, sv = 0, skk = 0, skv = 0;
    for (const auto& [k, v] : obs) {
      if (capped && v >= cap - tolerance(cap))
        continue;
      n += 1;
      sk += k;
      sv += v;
      skk += k * k;
      skv += k * v;
    }
    const double det = n * skk - sk * sk;
    if (det <= 0) {  // fewer than two distinct iterations on the line: no slope of its own
      if (n > 0)
        single.emplace_back(key.first, key.second, sk / n, sv / n);
      continue;
    }
    const double b = (n * skv - sk * sv) / det;
    const double a = (sv - b * sk) / n;
    // The worst residual names the iteration apart (a least-squares line leans towards it, so the first
    // point off the line need not be the culprit).
    double worst = 0, worst_k = 0, worst_v = 0, worst_p = 0;
    for (const auto& [k, v] : obs) {
      const double pred = capped ? std::min(cap, a + b * k) : a + b * k;
      const double off  = std::abs(pred - v);
      if (off > tolerance(v) && off > worst) {
        worst   = off;
        worst_k = k;
        worst_v = v;
        worst_p = pred;
      }
    }
    if (worst > 0) {
      why = "at Nw " + number_text(key.first) + ", Np " + number_text(key.second) + " the value in iteration " +
            number_text(worst_k) + " is " + number_text(worst_v) + ", not " + number_text(worst_p) +
            " (not affine in the loop index)";
      return std::nullopt;
    }
    bases.push_back({key.first, key.second, a});
    slopes.push_back({key.first, key.second, b});
  }
  if (slopes.empty()) {
    why = "every training point saw a single iteration: the change per iteration is unknown";
    return std::nullopt;
  }
  LoopFormula f;
  f.integer = integer;
  f.slope   = fit_formula(slopes, false, max_terms);
  for (const auto& [nw, np, k, v] : single)
    bases.push_back({nw, np, v - f.slope.eval(nw, np) * k});
  f.base = fit_formula(bases, false, max_terms);
  if (capped)
    f.cap = fit_formula(caps, false, max_terms);
  if (first_apart && not firsts.empty())
    f.first = fit_formula(firsts, false, max_terms);
  // The formulas across the points must give back every observation.
  for (const LoopFitPoint& p : points)
    if (std::abs(f.eval(p.nw, p.np, p.k) - p.value) > tolerance(p.value)) {
      why = "at Nw " + number_text(p.nw) + ", Np " + number_text(p.np) + " the value in iteration " +
            number_text(static_cast<double>(p.k)) + " is " + number_text(p.value) + ", not " +
            number_text(f.eval(p.nw, p.np, p.k)) + " (" + f.text() + ")";
      return std::nullopt;
    }
  return f;
}

}  // namespace

std::optional<LoopFormula> fit_loop_formula(const std::vector<LoopFitPoint>& points, bool integer, std::string& why,
                                            int max_terms)
{
  std::string first_why;
  for (auto [first_apart, capped] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    std::string w;
    if (auto f = fit_loop_shape(points, integer, w, max_terms, first_apart, capped))
      return f;
    if (first_why.empty())
      first_why = w;
  }
  why = first_why;
  return std::nullopt;
}

}  // namespace gridcast::models::trace
