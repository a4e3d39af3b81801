// The trace fit's aggregated observations: the value of a Series or ProfileSeries at each training point,
// and the filtering of a RankSeries' candidate expressions.
#include "trace_fit_series.hpp"

#include "gridcast/foundation/stats.hpp"
#include "gridcast/models/call.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace gridcast::models::trace::detail {

std::vector<FitPoint> Series::points() const
{
  std::vector<FitPoint> out;
  for (const auto& [key, e] : sums)
    out.push_back({key.first, key.second, e.first / static_cast<double>(e.second)});
  return out;
}

void ProfileSeries::add_to_last(double nw, double np, std::size_t profile, int rank, double v)
{
  sums[{nw, np}][profile].first += v;
  auto point = calls.find({nw, np});
  if (point == calls.end())
    return;
  auto one = point->second.find({profile, rank});
  if (one != point->second.end() && not one->second.empty())
    one->second.back() += v;
}

std::vector<FitPoint> ProfileSeries::points() const
{
  std::vector<FitPoint> out;
  for (const auto& [key, by_profile] : sums) {
    if (auto v = per_call_median(key, by_profile)) {
      out.push_back({key.first, key.second, *v});
      continue;
    }
    std::vector<double> means;
    for (const auto& [profile, e] : by_profile)
      if (e.second > 0)
        means.push_back(e.first / static_cast<double>(e.second));
    if (means.empty())
      continue;
    out.push_back({key.first, key.second, median(means)});
  }
  return out;
}

std::optional<double>
ProfileSeries::per_call_median(const Point& key,
                               const std::map<std::size_t, std::pair<double, std::uint64_t>>& by_profile) const
{
  auto point = calls.find(key);
  if (point == calls.end() || by_profile.size() < kInstanceProfiles)
    return std::nullopt;
  // profile -> rank -> observations; every profile of the point must have been kept one by one.
  std::map<std::size_t, std::map<int, const std::vector<double>*>> by_run;
  for (const auto& [pr, v] : point->second)
    by_run[pr.first][pr.second] = &v;
  if (by_run.size() != by_profile.size())
    return std::nullopt;
  const auto& first = by_run.begin()->second;
  for (const auto& [profile, ranks] : by_run) {
    if (ranks.size() != first.size())
      return std::nullopt;
    for (auto a = ranks.begin(), b = first.begin(); a != ranks.end(); ++a, ++b)
      if (a->first != b->first || a->second->size() != b->second->size())
        return std::nullopt;
  }
  double sum       = 0;
  std::uint64_t n  = 0;
  std::vector<double> across(by_run.size());
  for (const auto& [rank, values] : first)
    for (std::size_t i = 0; i < values->size(); ++i) {
      std::size_t k = 0;
      for (const auto& [profile, ranks] : by_run)
        across[k++] = (*ranks.at(rank))[i];
      sum += median(across);
      ++n;
    }
  if (n == 0)
    return std::nullopt;
  return sum / static_cast<double>(n);
}

namespace {

void bump(std::vector<std::pair<int, std::uint64_t>>& per_np, int np)
{
  for (auto& [n, count] : per_np)
    if (n == np) {
      ++count;
      return;
    }
  per_np.emplace_back(np, 1);
}

std::uint64_t at_np(const std::vector<std::pair<int, std::uint64_t>>& per_np, int np)
{
  for (const auto& [n, count] : per_np)
    if (n == np)
      return count;
  return 0;
}

}  // namespace

namespace {

/// Whether `e` gives `value` at (rank, np, loop); kNoRank: whether it has no value there (off the edge).
bool explains(const RankExpr& e, int rank, int np, const std::vector<std::uint64_t>& loop, int value)
{
  auto v = e.eval(rank, np, loop.data(), static_cast<int>(loop.size()));
  return value == kNoRank ? not v.has_value() : v && *v == value;
}

}  // namespace

namespace {

/// The offsets of a table's iterations that training could not tell (an axis of extent 2 in every grid:
/// -1 and +1 allowed), taken by analogy where one holds: the iterations are grouped by the axes they move
/// along (a group per set of axes, in table order), and a group with unsure signs takes, iteration by
/// iteration, the signs of a group of as many iterations moving along as many axes that training could
/// tell (its axes mapped in order), where those agree with every sign it could tell. A D3Q19 table lists
/// its xz and yz edges in the pattern of its xy edges (opposite pairs, or lexicographic), whichever it is.
/// nullopt for an iteration no analogy covers (or with an axis whose zero training could not tell).
std::vector<std::optional<std::array<int, 3>>> table_by_analogy(const std::vector<std::array<std::uint8_t, 3>>& masks,
                                                                int dims)
{
  const std::size_t n = masks.size();
  std::vector<std::optional<std::array<int, 3>>> out(n);
  std::vector<int> moves(n, -1);  // per iteration: the bit set of the axes it moves along (-1: unknown)
  std::vector<bool> sure(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    int bits = 0;
    for (int k = 0; k < dims; ++k) {
      const std::uint8_t m = masks[i][static_cast<std::size_t>(k)];
      if (m == 1 || m == 4 || m == 5)  // -1, +1, or either: moves
        bits |= 1 << k;
      else if (m != 2)  // 0 and some move allowed: unknown
        bits = -1 << 8;
      sure[i] = sure[i] && m != 5;
    }
    moves[i] = bits < 0 ? -1 : bits;
  }
  std::map<int, std::vector<std::size_t>> groups;  // axes -> iterations, in table order
  std::vector<int> order;                          // the groups in order of first appearance
  for (std::size_t i = 0; i < n; ++i) {
    if (moves[i] < 0)
      continue;
    if (groups.find(moves[i]) == groups.end())
      order.push_back(moves[i]);
    groups[moves[i]].push_back(i);
  }
  auto axes_of = [&](int bits) {
    std::vector<int> a;
    for (int k = 0; k < dims; ++k)
      if (bits >> k & 1)
        a.push_back(k);
    return a;
  };
  auto sign = [](std::uint8_t m) { return m == 1 ? -1 : m == 4 ? 1 : 0; };
  for (int g : order) {
    const std::vector<std::size_t>& members = groups[g];
    if (std::all_of(members.begin(), members.end(), [&](std::size_t i) { return sure[i]; }))
      continue;
    const std::vector<int> axes = axes_of(g);
    for (int r : order) {
      const std::vector<std::size_t>& ref = groups[r];
      const std::vector<int> raxes        = axes_of(r);
      if (r == g || ref.size() != members.size() || raxes.size() != axes.size() ||
          not std::all_of(ref.begin(), ref.end(), [&](std::size_t i) { return sure[i]; }))
        continue;
      bool agrees = true;  // with every sign of the group training could tell
      for (std::size_t j = 0; j < members.size() && agrees; ++j)
        for (std::size_t p = 0; p < axes.size() && agrees; ++p) {
          const int own = sign(masks[members[j]][static_cast<std::size_t>(axes[p])]);
          agrees = own == 0 || own == sign(masks[ref[j]][static_cast<std::size_t>(raxes[p])]);
        }
      if (not agrees)
        continue;
      for (std::size_t j = 0; j < members.size(); ++j) {
        std::array<int, 3> o{0, 0, 0};
        for (std::size_t p = 0; p < axes.size(); ++p)
          o[static_cast<std::size_t>(axes[p])] = sign(masks[ref[j]][static_cast<std::size_t>(raxes[p])]);
        out[members[j]] = o;
      }
      break;
    }
  }
  return out;
}

}  // namespace

void GridTableTracker::add(int rank, int np, const std::vector<std::uint64_t>& loop, int value)
{
  const int depth = static_cast<int>(loop.size());
  if (not started_) {
    started_ = true;
    for (int dims : {2, 3})
      for (bool periodic : {true, false})
        for (int level = 0; level < std::min(depth, 4); ++level) {
          Config c;
          c.dims     = dims;
          c.periodic = periodic;
          c.level    = level;
          configs_.push_back(std::move(c));
        }
  }
  std::vector<int> d, cr, cv;
  for (Config& c : configs_) {
    if (not c.alive)
      continue;
    const std::uint64_t i = c.level < depth ? loop[static_cast<std::size_t>(depth - 1 - c.level)] : RankExpr::kMaxTable;
    if (value == kNoRank || value < 0 || value >= np || i >= RankExpr::kMaxTable) {
      c.alive = false;
      continue;
    }
    if (d.size() != static_cast<std::size_t>(c.dims)) {
      d  = dims_create(np, c.dims);
      cr = grid_coords(rank, d);
      cv = grid_coords(value, d);
    }
    if (c.masks.size() <= i)
      c.masks.resize(i + 1, {0, 0, 0});
    std::array<std::uint8_t, 3>& m = c.masks[i];
    const bool first = m[0] == 0;  // an iteration not observed yet (every axis allows some offset once seen)
    for (std::size_t k = 0; k < d.size(); ++k) {
      std::uint8_t allowed = 0;
      for (int o = -1; o <= 1; ++o) {
        int v = cr[k] + o;
        if (c.periodic)
          v = (v % d[k] + d[k]) % d[k];
        if (v == cv[k])
          allowed |= static_cast<std::uint8_t>(1u << (o + 1));
      }
      m[k] = first ? allowed : static_cast<std::uint8_t>(m[k] & allowed);
      if (m[k] == 0)
        c.alive = false;
    }
  }
}

void GridTableTracker::counts(const std::vector<std::pair<int, std::uint64_t>>& loops)
{
  const auto depth = static_cast<int>(loops.size());
  for (Config& c : configs_) {
    if (not c.alive)
      continue;
    if (c.level >= depth) {
      c.alive = false;
      continue;
    }
    const std::uint64_t n = loops[static_cast<std::size_t>(depth - 1 - c.level)].second;
    if (c.count == 0)
      c.count = n;
    else if (c.count != n)
      c.alive = false;
  }
}

std::optional<RankExpr> GridTableTracker::table(std::string* unsure) const
{
  for (const Config& c : configs_) {
    if (not c.alive || c.masks.size() < 2 ||
        std::any_of(c.masks.begin(), c.masks.end(), [](const auto& m) { return m[0] == 0; }) || c.count != c.masks.size())
      continue;
    RankExpr e{RankExpr::Kind::GridTable};
    e.dims     = c.dims;
    e.periodic = c.periodic;
    e.level    = c.level;
    const int codes = c.dims == 2 ? 9 : 27;
    std::string guessed;      // the iterations whose offset training could not tell
    std::set<int> guessed_on;  // and the axes where it could not
    bool by_analogy = false, by_order = false;
    const auto analog = table_by_analogy(c.masks, c.dims);
    for (const auto& m : c.masks) {
      const std::size_t at = e.table.size();
      bool unsure_here      = false;
      for (int k = 0; k < c.dims; ++k)
        if ((m[static_cast<std::size_t>(k)] & 5) == 5) {  // both -1 and +1 allowed
          guessed_on.insert(k);
          unsure_here = true;
        }
      if (unsure_here) {
        guessed += (guessed.empty() ? "" : ", ") + std::to_string(at);
        (analog[at] ? by_analogy : by_order) = true;
      }
      if (analog[at]) {  // as the group it follows, repeats included (a walk that addresses a neighbour twice)
        e.table.push_back(static_cast<std::uint8_t>(
            RankExpr::offsets_code(std::vector<int>(analog[at]->begin(), analog[at]->begin() + c.dims))));
        continue;
      }
      // The allowed codes, each axis' offsets in the order 0, -1, +1; the first one no earlier iteration took.
      std::vector<std::pair<int, int>> ranked;  // (preference, code)
      for (int code = 0; code < codes; ++code) {
        int rank_of = 0;
        bool ok     = true;
        for (int k = 0; k < c.dims; ++k) {
          const int o = RankExpr::offset_in(code, k);
          ok          = ok && (m[static_cast<std::size_t>(k)] >> (o + 1) & 1) != 0;
          rank_of     = rank_of * 3 + (o == 0 ? 0 : o < 0 ? 1 : 2);
        }
        if (ok)
          ranked.push_back({rank_of, code});
      }
      std::sort(ranked.begin(), ranked.end());
      auto free = std::find_if(ranked.begin(), ranked.end(), [&](const auto& p) {
        return std::find(e.table.begin(), e.table.end(), static_cast<std::uint8_t>(p.second)) == e.table.end();
      });
      e.table.push_back(static_cast<std::uint8_t>((free != ranked.end() ? *free : ranked.front()).second));
    }
    if (unsure != nullptr && not guessed.empty()) {
      std::string axes;
      for (int k : guessed_on)
        axes += (axes.empty() ? "" : ", ") + std::to_string(k);
      const std::string how =
          by_analogy && not by_order ? "the signs were taken from the iterations that move along as many other axes, in "
                                       "the same order"
          : by_analogy ? "the signs were taken from the iterations that move along as many other axes where such a "
                         "group exists, else -1 first"
                       : "-1 was taken first";
      *unsure = "a table of grid directions that every observation agrees with; at iteration(s) " + guessed +
                " axis " + axes + " of the " + std::to_string(c.dims) +
                "-D grid had extent 2 or less in every training grid, where -1 and +1 are the same rank: " + how +
                ", which a larger grid may not follow (training at rank counts whose MPI_Dims_create "
                "grid has 3 ranks or more along that axis would tell them apart)";
    } else if (unsure != nullptr) {
      unsure->clear();
    }
    return e;
  }
  return std::nullopt;
}

void RankSeries::add_off_edge(int rank, int np, const std::vector<std::uint64_t>& loop)
{
  if (not seen) {
    edges_before.push_back({rank, np, loop, kNoRank});
    return;
  }
  add(rank, np, loop, kNoRank);
}

void RankSeries::add(int rank, int np, const std::vector<std::uint64_t>& loop, int value)
{
  tables.add(rank, np, loop, value);
  if (not seen) {
    // The first observation of a partner gives the candidates (and is the first sample, which the
    // fallback's candidates come from); the off-edge observations before it then filter them.
    alive = rank_expr_candidates({rank, np, loop, value}, coordinates);
    seen  = true;
    samples.push_back({rank, np, loop, value});
    for (const RankObservation& e : std::exchange(edges_before, {}))
      add(e.rank, e.np, e.loop, kNoRank);
  } else if (samples.size() < 3 && value != kNoRank) {
    samples.push_back({rank, np, loop, value});
  }
  if (not alive.empty()) {
    // filter_rank_exprs(), keeping what survived until now when nothing survives this observation: the
    // error message names what explained every earlier one.
    std::size_t kept = 0;
    for (std::size_t c = 0; c < alive.size(); ++c) {
      if (explains(alive[c], rank, np, loop, value)) {
        if (kept != c)
          alive[kept] = alive[c];
        ++kept;
      }
    }
    if (kept > 0) {
      alive.resize(kept);
      bump(observed, np);
      return;
    }
    // The observation no candidate survives: the one an error message must show.
    samples.push_back({rank, np, loop, value});
    last_alive = std::move(alive);
    alive.clear();
    fallback = last_alive;
    fallback_hits.assign(fallback.size(), observed);
    for (const RankExpr& e : rank_expr_candidates(samples.front(), coordinates))
      if (e.kind != RankExpr::Kind::GridLoop &&
          std::none_of(fallback.begin(), fallback.end(), [&](const RankExpr& f) { return same_target(f, e); })) {
        fallback.push_back(e);
        fallback_hits.emplace_back();
      }
  }
  for (std::size_t c = 0; c < fallback.size(); ++c)
    if (explains(fallback[c], rank, np, loop, value))
      bump(fallback_hits[c], np);
  bump(observed, np);
}

std::optional<std::pair<RankExpr, double>> RankSeries::best_fallback() const
{
  if (fallback.empty() || observed.empty())
    return std::nullopt;
  int np_max = 0;
  std::uint64_t total = 0;
  for (const auto& [n, count] : observed) {
    np_max = std::max(np_max, n);
    total += count;
  }
  std::size_t best = 0;
  std::pair<std::uint64_t, std::uint64_t> best_score{0, 0};
  for (std::size_t c = 0; c < fallback.size(); ++c) {
    std::uint64_t all = 0;
    for (const auto& [n, count] : fallback_hits[c])
      all += count;
    const std::pair<std::uint64_t, std::uint64_t> score{at_np(fallback_hits[c], np_max), all};
    if (c == 0 || score > best_score) {
      best       = c;
      best_score = score;
    }
  }
  const double at_max = static_cast<double>(at_np(observed, np_max));
  return std::pair{fallback[best], at_max > 0 ? 1.0 - static_cast<double>(best_score.first) / at_max : 1.0};
}

std::vector<RankExpr> RankSeries::result() const
{
  std::vector<RankExpr> found;
  for (const RankExpr& e : alive)
    if (std::none_of(found.begin(), found.end(), [&](const RankExpr& f) { return same_target(f, e); }))
      found.push_back(e);
  return found;
}

}  // namespace gridcast::models::trace::detail
