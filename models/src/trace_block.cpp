// Quantities that differ between ranks as their blocks do (trace_block.hpp): evaluation and the fit.
#include "gridcast/models/trace_block.hpp"

#include "gridcast/models/trace_formula.hpp"
#include "gridcast/models/trace_rules.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <iterator>
#include <set>

namespace gridcast::models::trace {

namespace {

/// The axis' global extent at `nw`, in whole cells.
std::int64_t cells_at(const BlockShare::Axis& a, double nw) { return std::llround(a.cells_per_nw * nw); }

/// Two observations of one quantity are the same value: exactly (to rounding) for a count or size; to
/// 1e-7 relative for work, which the rest of the fit reads to SMPI's 6 digits but which differs between
/// a block and the next by at least 1 / (cells per block).
bool same_value(double a, double b, bool integer)
{
  return std::abs(a - b) <= (integer ? 0.5 : 1e-7 * std::max(std::abs(a), std::abs(b)));
}

/// The ranks of one training point: their coordinates on the candidate grid, their values.
struct PointRanks {
  double nw = 0;
  int np = 0;
  std::vector<int> grid;
  std::vector<std::pair<std::vector<int>, double>> ranks;  ///< (coordinates, value)
};

/// The global extents along axis `j` that the point's lines along it allow: a line (ranks whose other
/// coordinates agree) with two values tells q and the leftover; every such line must agree. `constrained`
/// is set where some line had two values; `divides` where a whole line had one (the extent is a multiple
/// of the axis' ranks). False where the lines contradict a block split (three values, a large block after
/// a small one, lines that disagree).
bool extents_along(const PointRanks& pt, std::size_t j, bool integer, std::set<std::int64_t>& out, bool& constrained,
                   bool& divides)
{
  const int p = pt.grid[j];
  std::map<std::vector<int>, std::map<int, double>> lines;
  for (const auto& [coords, v] : pt.ranks) {
    std::vector<int> key = coords;
    key[j]              = -1;
    auto [it, inserted] = lines[key].try_emplace(coords[j], v);
    if (not inserted && not same_value(it->second, v, integer))
      return false;  // one rank, two values at one point (two runs that disagree)
  }
  std::optional<std::set<std::int64_t>> allowed;
  for (const auto& [key, line] : lines) {
    double lo = line.begin()->second, hi = lo;
    for (const auto& [c, v] : line) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (same_value(lo, hi, integer)) {
      divides = divides || static_cast<int>(line.size()) == p;
      continue;
    }
    if (not(lo > 0))
      return false;
    int last_big = -1, first_small = p;
    for (const auto& [c, v] : line) {
      if (same_value(v, hi, integer))
        last_big = std::max(last_big, c);
      else if (same_value(v, lo, integer))
        first_small = std::min(first_small, c);
      else
        return false;  // a third value: not one block split along this axis
    }
    if (last_big >= first_small)
      return false;
    const double q  = lo / (hi - lo);
    const double qr = std::round(q);
    if (qr < 1 || std::abs(q - qr) > 1e-4 * qr)
      return false;
    std::set<std::int64_t> here;
    for (int k = last_big + 1; k <= std::min(first_small, p - 1); ++k)
      here.insert(static_cast<std::int64_t>(qr) * p + k);
    if (allowed) {
      std::set<std::int64_t> both;
      std::set_intersection(allowed->begin(), allowed->end(), here.begin(), here.end(),
                            std::inserter(both, both.begin()));
      allowed = std::move(both);
    } else {
      allowed = std::move(here);
    }
    if (allowed->empty())
      return false;
  }
  if (allowed) {
    constrained = true;
    out         = std::move(*allowed);
  }
  return true;
}

/// Global extents per Nw tried for an axis whose lines never tell it (a group of corner ranks: one rank per
/// grid line): whole numbers up to 64, then 2^k, 3 x 2^k and 5 x 2^k and powers of ten up to 2^20 cells per Nw.
const std::vector<double>& generic_cells_per_nw()
{
  static const std::vector<double> all = [] {
    std::set<double> s;
    for (int m = 1; m <= 64; ++m)
      s.insert(m);
    for (double p = 1; p <= 1 << 20; p *= 2)
      for (double f : {1.0, 3.0, 5.0})
        if (f * p <= 1 << 20)
          s.insert(f * p);
    for (double p = 10; p <= 1e6; p *= 10)
      s.insert(p);
    return std::vector<double>(s.begin(), s.end());
  }();
  return all;
}

/// The cells per Nw of axis `j` that every point's lines allow, smallest first: read from the lines where
/// some line's blocks differ, else the generic list (filtered by the lines that show a whole number of
/// blocks). nullopt where the lines contradict a block split along the axis.
std::optional<std::vector<double>> cells_per_nw_along(const std::vector<PointRanks>& pts, std::size_t j, bool integer)
{
  std::optional<std::vector<double>> candidates;  // cells per Nw, kept sorted
  std::vector<const PointRanks*> dividing;
  for (const PointRanks& pt : pts) {
    std::set<std::int64_t> extents;
    bool constrained = false, divides = false;
    if (not extents_along(pt, j, integer, extents, constrained, divides))
      return std::nullopt;
    if (divides)
      dividing.push_back(&pt);
    if (not constrained)
      continue;
    std::vector<double> here;
    for (std::int64_t n : extents)
      here.push_back(static_cast<double>(n) / pt.nw);
    if (not candidates) {
      candidates = std::move(here);
      continue;
    }
    std::vector<double> kept;
    for (double m : *candidates)
      if (std::any_of(here.begin(), here.end(), [&](double x) { return std::abs(x - m) <= 1e-9 * m; }))
        kept.push_back(m);
    candidates = std::move(kept);
    if (candidates->empty())
      return std::nullopt;
  }
  std::vector<double> out;
  for (double m : candidates ? *candidates : generic_cells_per_nw()) {
    const bool whole = std::all_of(pts.begin(), pts.end(), [&](const PointRanks& pt) {
      const double n = m * pt.nw;
      return std::abs(n - std::round(n)) <= 1e-6 * std::max(1.0, n) && n >= pt.grid[j];
    });
    const bool fits = std::all_of(dividing.begin(), dividing.end(), [&](const PointRanks* pt) {
      return std::llround(m * pt->nw) % pt->grid[j] == 0;
    });
    if (whole && fits)
      out.push_back(m);
  }
  return out;
}

/// The coefficient that makes `share` (its axes set) reproduce every rank's value, or nullopt. Only a
/// share under which some training block is uneven says more than a formula of (Nw, Np) does.
std::optional<double> exact_coef(BlockShare share, const std::vector<PointRanks>& pts, bool integer)
{
  share.coef    = 1;
  share.integer = false;
  bool uneven   = false;
  for (const PointRanks& pt : pts)
    for (const BlockShare::Axis& a : share.axes)
      uneven = uneven || cells_at(a, pt.nw) % pt.grid[static_cast<std::size_t>(a.axis)] != 0;
  if (not uneven)
    return std::nullopt;
  // The coefficient from the first rank, every rank checked (most candidates fail within a few), then the
  // least-squares one over them all, checked again.
  auto check = [&](double coef) {
    for (const PointRanks& pt : pts)
      for (const auto& [coords, v] : pt.ranks) {
        const double want = coef * share.eval(pt.nw, pt.grid, coords);
        if (integer ? std::abs(std::round(want) - v) >= 0.5 : std::abs(want - v) > 1e-5 * std::max(std::abs(v), 1.0))
          return false;
      }
    return true;
  };
  const auto& [coords0, v0] = pts.front().ranks.front();
  const double f0           = share.eval(pts.front().nw, pts.front().grid, coords0);
  if (not(f0 > 0 && v0 > 0) || not check(v0 / f0))
    return std::nullopt;
  double vf = 0, ff = 0;
  for (const PointRanks& pt : pts)
    for (const auto& [coords, v] : pt.ranks) {
      const double x = share.eval(pt.nw, pt.grid, coords);
      vf += v * x;
      ff += x * x;
    }
  double coef = vf / ff;
  if (std::abs(coef - std::round(coef)) <= 1e-9 * std::abs(coef))
    coef = std::round(coef);  // a whole number of bytes or flops per cell, as codes declare them
  return check(coef) ? std::optional<double>(coef) : std::optional<double>(v0 / f0);
}

}  // namespace

double BlockShare::eval(double nw, const std::vector<int>& grid, const std::vector<int>& coords) const
{
  double v = coef;
  for (const Axis& a : axes) {
    const auto k = static_cast<std::size_t>(a.axis);
    v *= static_cast<double>(block_extent(cells_at(a, nw), grid[k], coords[k]));
  }
  return integer ? std::round(v) : v;
}

std::string BlockShare::text() const
{
  std::string out = number_text(coef);
  for (const Axis& a : axes)
    out += "*block(" + number_text(a.cells_per_nw) + "*Nw, dims" + std::to_string(dims) + "[" +
           std::to_string(a.axis) + "])";
  return out;
}

std::optional<BlockShare> fit_block_share(const std::vector<RankFitPoint>& points, bool integer)
{
  constexpr std::size_t kMaxCombinations = 20000;  // of per-axis extents tried for one set of axes
  std::map<std::pair<double, int>, std::vector<const RankFitPoint*>> by_point;
  for (const RankFitPoint& p : points)
    by_point[{p.nw, p.np}].push_back(&p);
  if (by_point.size() < 2)
    return std::nullopt;
  for (int d = 1; d <= 3; ++d) {
    std::vector<PointRanks> pts;
    for (const auto& [key, obs] : by_point) {
      PointRanks pt{key.first, key.second, dims_create(key.second, d), {}};
      for (const RankFitPoint* o : obs)
        pt.ranks.emplace_back(grid_coords(o->rank, pt.grid), o->value);
      pts.push_back(std::move(pt));
    }
    // Each axis' candidate extents, read once for every subset of the axes it is in.
    std::vector<std::optional<std::vector<double>>> along;
    for (int j = 0; j < d; ++j)
      along.push_back(cells_per_nw_along(pts, static_cast<std::size_t>(j), integer));
    // Subsets of the axes, fewer axes first, then in order of their bit masks.
    std::vector<unsigned> masks;
    for (unsigned mask = 1; mask < (1u << d); ++mask)
      masks.push_back(mask);
    std::stable_sort(masks.begin(), masks.end(),
                     [](unsigned a, unsigned b) { return std::popcount(a) < std::popcount(b); });
    for (unsigned mask : masks) {
      std::vector<int> axes;
      std::vector<std::vector<double>> candidates;
      std::size_t combinations = 1;
      for (int j = 0; j < d; ++j)
        if (mask & (1u << j)) {
          const auto& c = along[static_cast<std::size_t>(j)];
          if (not c || c->empty()) {
            combinations = 0;
            break;
          }
          axes.push_back(j);
          combinations *= c->size();
          candidates.push_back(*c);
        }
      if (combinations == 0)
        continue;
      // Too many to try one by one: the same extent per Nw on every axis (a square or cubic domain).
      if (combinations > kMaxCombinations) {
        for (double m : candidates[0]) {
          BlockShare share{d, {}, 0, integer};
          for (std::size_t k = 0; k < axes.size(); ++k)
            if (std::find(candidates[k].begin(), candidates[k].end(), m) != candidates[k].end())
              share.axes.push_back({axes[k], m});
          if (share.axes.size() == axes.size())
            if (auto coef = exact_coef(share, pts, integer)) {
              share.coef = *coef;
              return share;
            }
        }
        continue;
      }
      std::vector<std::size_t> at(axes.size(), 0);
      for (;;) {
        BlockShare share{d, {}, 0, integer};
        for (std::size_t k = 0; k < axes.size(); ++k)
          share.axes.push_back({axes[k], candidates[k][at[k]]});
        if (auto coef = exact_coef(share, pts, integer)) {
          share.coef = *coef;
          return share;
        }
        std::size_t k = axes.size();  // the next combination, the last axis fastest
        while (k-- > 0 && ++at[k] == candidates[k].size())
          at[k] = 0;
        if (k == static_cast<std::size_t>(-1))
          break;
      }
    }
  }
  return std::nullopt;
}

}  // namespace gridcast::models::trace
