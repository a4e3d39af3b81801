// What the trace fit observes of a quantity across the training profiles, aggregated so that memory does
// not grow with the calls: per (Nw, Np) point (Series), per point and profile with the per-call median of
// repeated runs (ProfileSeries), and the rank expressions still consistent with a rank-valued field
// (RankSeries). Internal to the models library; the fit's walk (trace_fit_walk.cpp) fills them.
#pragma once

#include "gridcast/models/trace_formula.hpp"
#include "gridcast/models/trace_rules.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace gridcast::models::trace::detail {

/// The map entry of the last key looked up: a profile is walked call after call, so the next call is
/// nearly always at the same point, found without a search. Copies and moves forget it (it points into
/// the owner's map; map nodes do not move while the map lives).
template <class Key, class Value>
class LastEntry {
public:
  LastEntry() = default;
  LastEntry(const LastEntry&) {}
  LastEntry(LastEntry&& o) noexcept { o.entry_ = nullptr; }
  LastEntry& operator=(const LastEntry&)
  {
    entry_ = nullptr;
    return *this;
  }
  LastEntry& operator=(LastEntry&& o) noexcept
  {
    entry_   = nullptr;
    o.entry_ = nullptr;
    return *this;
  }
  /// The entry of `key`: the remembered one, or `find()`'s (then remembered).
  template <class Find>
  Value& get(const Key& key, Find&& find)
  {
    if (entry_ == nullptr || key_ != key) {
      entry_ = &find();
      key_   = key;
    }
    return *entry_;
  }

private:
  Key key_{};
  Value* entry_ = nullptr;
};

/// Observations of a quantity, aggregated per (Nw, Np) point: memory does not grow with the calls.
struct Series {
  std::map<std::pair<double, double>, std::pair<double, std::uint64_t>> sums;  ///< (nw, np) -> (sum, count)
  void add(double nw, double np, double v)
  {
    auto& e = last_.get({nw, np}, [&]() -> auto& { return sums[{nw, np}]; });
    e.first += v;
    ++e.second;
  }
  bool empty() const { return sums.empty(); }
  /// Adds to the last observation at this point (a construct's work that comes after it, in pieces).
  void add_to_last(double nw, double np, double v) { sums[{nw, np}].first += v; }
  /// The mean at each point (what fit_formula would average to anyway).
  std::vector<FitPoint> points() const;

private:
  LastEntry<std::pair<double, double>, std::pair<double, std::uint64_t>> last_;
};

/// Observations of a quantity per (Nw, Np) point and per profile, for a quantity that a disturbed run
/// inflates (a compute site's measured work, a polling construct's absorbed work). A polling construct's
/// absorbed work is measured time (seconds times the host's speed), and at HPL's training sizes a
/// construct lasts tens of microseconds, so one preemption of the rank (a time slice, ~4 ms) multiplies a
/// profile's mean by up to 80 (hpcc, N 128: 2.7e5, 2.1e7 and 4.4e5 flops per construct in three runs).
///
/// At a point with fewer than kInstanceProfiles profiles: each profile's mean, then the median over the
/// profiles (a mean over the profiles keeps a share of an outlier, a median of three drops it; with one
/// profile it is that profile's mean). At a point with kInstanceProfiles or more (repeated runs), the
/// observations are also kept one by one per (profile, rank), and when every profile has the same ranks
/// with as many observations each (the same calls: a deterministic program), the point's value is the
/// mean over the observations of their **median over the profiles**, the same call of the same rank
/// compared across runs. A random preemption stretches one call of one run: the per-call median drops
/// every such call wherever it falls, where a median of the profiles' means fails as soon as each run has
/// one somewhere (at different steps). What it cannot drop is a call stretched in most runs: on a loaded
/// machine the longest calls are (docs/reference/latency-model.md, "A median per call, and what moved the HPL
/// prediction").
struct ProfileSeries {
  /// Repeated runs from which the per-call median is taken (a median of two is a mean).
  static constexpr std::size_t kInstanceProfiles = 3;
  using Point = std::pair<double, double>;
  /// (nw, np) -> profile -> (sum, observations)
  std::map<Point, std::map<std::size_t, std::pair<double, std::uint64_t>>> sums;
  /// (nw, np) -> (profile, rank) -> each observation, where the caller asked for them (`one_by_one`).
  std::map<Point, std::map<std::pair<std::size_t, int>, std::vector<double>>> calls;
  void add(double nw, double np, std::size_t profile, int rank, bool one_by_one, double v)
  {
    auto& e = last_.get({nw, np, profile}, [&]() -> auto& { return sums[{nw, np}][profile]; });
    e.first += v;
    ++e.second;
    if (one_by_one)
      last_calls_.get({nw, np, profile, rank}, [&]() -> auto& { return calls[{nw, np}][{profile, rank}]; })
          .push_back(v);
  }
  /// Adds to the last observation of this profile at this point (work that comes after it, in pieces).
  void add_to_last(double nw, double np, std::size_t profile, int rank, double v);
  bool empty() const { return sums.empty(); }
  /// At each point, the mean of the per-call medians where they apply (above), else the median of the
  /// profiles' means (the mean of the middle two for an even count).
  std::vector<FitPoint> points() const;

private:
  /// The mean over the calls of their median over the profiles, when the profiles at the point are
  /// kInstanceProfiles or more and all made the same calls (same ranks, as many observations each).
  std::optional<double> per_call_median(const Point& key,
                                        const std::map<std::size_t, std::pair<double, std::uint64_t>>& by_profile) const;

  LastEntry<std::tuple<double, double, std::size_t>, std::pair<double, std::uint64_t>> last_;
  LastEntry<std::tuple<double, double, std::size_t, int>, std::vector<double>> last_calls_;
};

/// Tables of grid offsets (RankExpr::GridTable) consistent with every observation so far: for each grid
/// (2 or 3 axes, periodic or not) and enclosing loop level, per iteration of that loop and per axis, the
/// offsets (-1, 0, +1) that lead from the observing rank to its partner. A code that walks its table of
/// directions (the 8 or 26 neighbours of a 9- or 27-point halo) with one call site is explained by no
/// candidate of its first observation; the table is learned from all of them.
class GridTableTracker {
public:
  /// An observation: `value` the partner (kNoRank, off a non-periodic edge: no table is kept).
  void add(int rank, int np, const std::vector<std::uint64_t>& loop, int value);
  /// The iteration counts of the enclosing loops of the last observation, outermost first: a table is
  /// kept only for a loop that runs as many iterations every time (not one whose count grows with Nw).
  void counts(const std::vector<std::pair<int, std::uint64_t>>& loops);
  /// The first table that every observation agrees with and that every iteration 0..n-1 (n >= 2) of
  /// its loop was observed at, as many at every Np (a walk whose length follows the grid's shape has no
  /// table of one length), the grids of fewer axes, periodic, the innermost loop first. Where
  /// training cannot tell an offset (an axis of extent 2 in every grid: -1 and +1 are the same rank),
  /// 0, then -1, then +1, the first not taken by an earlier iteration (a halo addresses each neighbour
  /// once, and codes list directions from -1 up).
  /// `unsure`, where given, is set to what training could not tell (empty where every offset was sure).
  std::optional<RankExpr> table(std::string* unsure = nullptr) const;

private:
  struct Config {
    int dims = 0;
    bool periodic = false;
    int level = 0;
    bool alive = true;
    std::vector<std::array<std::uint8_t, 3>> masks;  ///< per iteration, per axis: bit o+1 for offset o
    std::uint64_t count = 0;                  ///< the loop's iteration count (0: not seen yet)
  };
  std::vector<Config> configs_;
  bool started_ = false;
};

/// Rank expressions still consistent with every observation so far, and the first few observations
/// for error messages.
struct RankSeries {
  /// Whether grid coordinates and origins are candidates (rank_expr_candidates): for split colors and keys.
  bool coordinates = false;
  bool seen = false;
  std::vector<RankExpr> alive;
  std::vector<RankObservation> samples;
  /// The candidates that explained every observation before the first one none explains.
  std::vector<RankExpr> last_alive;
  /// Once no candidate explains every observation: the candidates still scored (those of last_alive,
  /// then the other candidates of the first observation but the grid walks), and for each, per Np, how
  /// many observations it explains (last_alive's count every observation before the one that ended
  /// them; the others only those after it).
  std::vector<RankExpr> fallback;
  std::vector<std::vector<std::pair<int, std::uint64_t>>> fallback_hits;
  /// Observations per Np, in order of the first at each.
  std::vector<std::pair<int, std::uint64_t>> observed;
  /// Off-edge observations made before the first observed partner.
  std::vector<RankObservation> edges_before;
  /// Tables of grid offsets walked by a loop (RankExpr::GridTable), for where no candidate survives.
  GridTableTracker tables;
  void add(int rank, int np, const std::vector<std::uint64_t>& loop, int value);
  /// An observation where the call had no partner on this side (an MPI_Sendrecv half with
  /// MPI_PROC_NULL, as a profiler records it at a non-periodic grid's edge): the expressions that have no
  /// value there (a grid neighbour off the edge) explain it. Held until a partner is observed, whose
  /// value gives the candidates.
  void add_off_edge(int rank, int np, const std::vector<std::uint64_t>& loop);
  /// The survivors without duplicates (same_target), simplest first.
  std::vector<RankExpr> result() const;
  /// Where nothing survived: the scored candidate that explains the most observations at the largest
  /// Np (then in all, then the simplest), and the share of the observations at that Np it misses.
  std::optional<std::pair<RankExpr, double>> best_fallback() const;
};

}  // namespace gridcast::models::trace::detail
