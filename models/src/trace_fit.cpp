// Fitting the representative trace model to profile directories: tokenize, fold, group, infer the rule,
// then fit every template position's counts, sizes, peers and compute amounts across profiles.
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"
#include "gridcast/foundation/stats.hpp"
#include "gridcast/models/latency_model.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"
#include "trace_axis.hpp"
#include "trace_numbered.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace gridcast::models::trace {

bool CallToken::operator<(const CallToken& o) const
{
  return std::tie(function, op, tag, recv_tag, comm, color, key, new_comm, nonblocking) <
         std::tie(o.function, o.op, o.tag, o.recv_tag, o.comm, o.color, o.key, o.new_comm, o.nonblocking);
}

namespace {

/// The parameters of one recorded call that the model fits per position.
struct CallParams {
  std::int32_t peer = kNoRank;
  std::int32_t src  = kNoRank;
  std::int32_t root = 0;
  std::uint64_t bytes = 0;
  std::uint64_t recv_bytes = 0;
  double flops = 0;
  double seconds = -1;
  std::int64_t request_back = 0;
  std::vector<std::int64_t> requests_back;
  std::vector<std::uint64_t> counts, recv_counts;
  std::int32_t tag = 0;
  std::int32_t key = 0;  ///< comm_split: the split key
  std::uint64_t line = 0;
};

/// A rank's rolled trace. The calls themselves are not kept: the fit reads every rank twice, once to
/// fold it and once to collect the parameters of each template position, so memory stays proportional
/// to the rolled traces, not to the number of calls.
struct RankTrace {
  std::vector<RolledNode> rolled;
  std::size_t shape = 0;     ///< index into the distinct shapes
  std::uint64_t calls = 0;
  int group = -1;
  bool exact = false;        ///< its calls match the group's template (else: within the Myers threshold)
  std::vector<std::uint64_t> decisions;  ///< exact members: the iteration count of each loop instance, in order
};

/// Matches `t[pos...]` against a template read as a regular expression: a loop is its body repeated any
/// number of times (0 included), greedily, an iteration that does not match in full being undone. `t` is
/// the rank's calls with each polling construct as one element, its poll's token (compact_calls). Appends each loop instance's iteration count to
/// `decisions` (pre-order of execution). Returns false on a mismatch (pos is then meaningless).
bool match_template(const std::vector<RolledNode>& nodes, const std::vector<std::uint32_t>& t, std::size_t& pos,
                    std::vector<std::uint64_t>& decisions)
{
  for (const RolledNode& n : nodes) {
    switch (n.kind) {
      case RolledNode::Kind::Call:
      case RolledNode::Kind::Poll:  // polling tokens only ever stand for a whole construct in `t`
        if (pos >= t.size() || t[pos] != n.token)
          return false;
        ++pos;
        break;
      case RolledNode::Kind::Loop: {
        std::size_t slot = decisions.size();
        decisions.push_back(0);
        std::uint64_t k = 0;
        while (true) {
          std::size_t save = pos, dsave = decisions.size();
          if (match_template(n.body, t, pos, decisions) && pos > save) {
            ++k;
          } else {
            pos = save;
            decisions.resize(dsave);
            break;
          }
        }
        decisions[slot] = k;
        break;
      }
    }
  }
  return true;
}

/// The iteration count of every loop instance of a rolled trace, in the order match_template writes them.
void fold_decisions(const std::vector<RolledNode>& nodes, std::vector<std::uint64_t>& decisions)
{
  for (const RolledNode& n : nodes)
    if (n.kind == RolledNode::Kind::Loop) {
      decisions.push_back(n.count);
      for (std::uint64_t i = 0; i < n.count; ++i)
        fold_decisions(n.body, decisions);
    }
}

struct LoadedProfile {
  std::filesystem::path path;
  std::string label;  ///< the path as given
  RunInfo info;
  std::set<std::string> functions;
  std::vector<RankTrace> ranks;
};

bool creates_request(Op op) { return op == Op::Isend || op == Op::Irecv || op == Op::Issend; }
/// A nonblocking collective or MPI_Comm_idup: a collective record with a request.
bool nonblocking_collective(const CallRecord& rec) { return rec.request != kNoRequest && is_collective(rec.op); }
/// Whether a call creates a request: requests are numbered by these calls, in order (request_back).
bool creates_request(const CallRecord& rec) { return creates_request(rec.op) || nonblocking_collective(rec); }
bool is_polling(const CallToken& t)
{
  if (t.op == Op::Test)
    return true;
  std::string f = t.function;
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return f.find("probe") != std::string::npos;
}
/// A compute burst the profiler recorded between hooked calls (not a hooked library function).
bool is_burst(const CallToken& t) { return t.op == Op::Compute && t.function == "compute"; }

/// A rank's calls with each polling construct as one element (the token of its poll), as folding sees them.
std::vector<std::uint32_t> compact_calls(const std::vector<std::uint32_t>& tokens, const std::vector<std::uint32_t>& roles)
{
  std::vector<std::uint32_t> out;
  out.reserve(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (roles[i] == kRoleNormal)
      out.push_back(tokens[i]);
    else if (roles[i] != kRoleAbsorbed)
      out.push_back(roles[i]);
  return out;
}
bool is_rooted(Op op)
{
  return op == Op::Bcast || op == Op::Reduce || op == Op::Gather || op == Op::Gatherv || op == Op::Scatter ||
         op == Op::Scatterv;
}

std::string ranks_text(const std::vector<int>& ranks)
{
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (not s.empty())
      s += ", ";
    s += std::to_string(ranks[i]);
    if (j > i)
      s += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

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
  std::vector<FitPoint> points() const
  {
    std::vector<FitPoint> out;
    for (const auto& [key, e] : sums)
      out.push_back({key.first, key.second, e.first / static_cast<double>(e.second)});
    return out;
  }

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
/// machine the longest calls are (docs/latency-model.md, "A median per call, and what moved the HPL
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
  void add_to_last(double nw, double np, std::size_t profile, int rank, double v)
  {
    sums[{nw, np}][profile].first += v;
    auto point = calls.find({nw, np});
    if (point == calls.end())
      return;
    auto one = point->second.find({profile, rank});
    if (one != point->second.end() && not one->second.empty())
      one->second.back() += v;
  }
  bool empty() const { return sums.empty(); }
  /// At each point, the mean of the per-call medians where they apply (above), else the median of the
  /// profiles' means (the mean of the middle two for an even count).
  std::vector<FitPoint> points() const
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

private:
  /// The mean over the calls of their median over the profiles, when the profiles at the point are
  /// kInstanceProfiles or more and all made the same calls (same ranks, as many observations each).
  std::optional<double> per_call_median(const Point& key,
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

  LastEntry<std::tuple<double, double, std::size_t>, std::pair<double, std::uint64_t>> last_;
  LastEntry<std::tuple<double, double, std::size_t, int>, std::vector<double>> last_calls_;
};

/// Rank expressions still consistent with every observation so far, and the first few observations
/// for error messages.
struct RankSeries {
  bool seen = false;
  std::vector<RankExpr> alive;
  std::vector<RankObservation> samples;
  void add(int rank, int np, const std::vector<std::uint64_t>& loop, int value)
  {
    if (not seen) {
      alive = rank_expr_candidates({rank, np, loop, value});
      seen  = true;
    }
    if (samples.size() < 3)
      samples.push_back({rank, np, loop, value});
    if (not alive.empty()) {
      // filter_rank_exprs(), keeping what survived until now when nothing survives this observation: the
      // error message names what explained every earlier one.
      std::size_t kept = 0;
      for (std::size_t c = 0; c < alive.size(); ++c) {
        auto v = alive[c].eval(rank, np, loop.data(), static_cast<int>(loop.size()));
        if (v && *v == value) {
          if (kept != c)
            alive[kept] = alive[c];
          ++kept;
        }
      }
      if (kept == 0) {  // the observation no candidate survives: the one an error message must show
        samples.push_back({rank, np, loop, value});
        last_alive = std::move(alive);
        alive.clear();
      } else {
        alive.resize(kept);
      }
    }
  }
  /// The candidates that explained every observation before the first one none explains.
  std::vector<RankExpr> last_alive;
  /// The survivors without duplicates (same_target), simplest first.
  std::vector<RankExpr> result() const
  {
    std::vector<RankExpr> found;
    for (const RankExpr& e : alive)
      if (std::none_of(found.begin(), found.end(), [&](const RankExpr& f) { return same_target(f, e); }))
        found.push_back(e);
    return found;
  }
};

/// Everything observed at one template position, over every exact member of the group.
struct SlotObs {
  RolledNode::Kind kind = RolledNode::Kind::Call;
  std::uint32_t token = 0;
  std::vector<int> children;  ///< Loop: slot ids of the body

  Series count;
  Series tag_values;  ///< varying tags: for a tag constant within each run (tag_formula)
  /// Poll: the work of the compute each construct absorbed (per profile: see ProfileSeries), and whether
  /// any of it was a library call.
  ProfileSeries absorbed;
  bool any_library = false;
  std::map<std::pair<int, int>, std::map<double, std::uint64_t>> count_by_np_rank_nw;
  RankSeries peer, src, root, key;
  TagFitter tag;
  Series bytes, recv_bytes, flops, seconds, counts, recv_counts;
  /// Compute sites: their measured work per profile (the median of the runs at a point, as `absorbed`;
  /// `flops` holds the declared work of reductions).
  ProfileSeries compute_flops;
  Series counts_self, recv_counts_self;  ///< v-collectives: the entry of the rank itself
  bool any_bytes = false, any_recv_bytes = false, any_flops = false, any_seconds = false, any_counts = false,
       any_recv_counts = false, counts_self_differs = false, recv_counts_self_differs = false;
  std::set<std::int64_t> request_back;
  std::set<std::vector<std::int64_t>> requests_back;
  /// Integer quantities that took several values in one profile: (field, profile) -> (min, max).
  /// (field, profile) -> value range. Fields are string literals: a view orders like the string, no copy.
  std::map<std::pair<std::string_view, std::size_t>, std::pair<double, double>> spread;
  std::string where;  ///< first member's profile and rank, for messages

  // Latency model (compute calls): the call's context and its work per (profile, progress buckets).
  int loop_ordinal = -1;  ///< Loop: pre-order number among the group's loops
  CallContext context;    ///< Compute: group, inter- and intra-loop index (the buckets vary per call)
  std::map<std::tuple<std::size_t, int, int>, std::pair<double, std::uint64_t>> cells;  ///< -> (sum, calls)
  /// A bounded, deterministic sample of single calls (profile, buckets, work) for the variability histogram.
  std::vector<std::tuple<std::size_t, int, int, double>> reservoir;
  std::uint64_t reservoir_seen = 0;
  std::optional<Formula> fitted_flops;  ///< the site mean formula, once fitted
};

constexpr std::size_t kReservoir = 1024;  ///< single calls kept per call site for the histogram

/// The token ids of one stream's calls, remembered by the call's integer fields and the stream's own
/// function id. Building a CallToken (a copy of the function's name) and searching the fitter's map of
/// tokens (string comparisons) for each of millions of calls was most of `gridcast fit`'s time; a
/// stream has a handful of distinct tokens, so after the first call of each the answer is a hash
/// lookup. `varying(fn)` says whether the function's tags are fitted per position (then the tag is
/// not part of the token, nor of the key).
class StreamTokenCache {
public:
  /// The id for `rec`, from `compute()` the first time this key is seen.
  template <class Varying, class Compute>
  std::uint32_t get(const CallRecord& rec, Varying varying, Compute compute)
  {
    if (rec.function >= varying_.size())
      varying_.resize(rec.function + 1, -1);
    std::int8_t& v = varying_[rec.function];
    if (v < 0)
      v = varying(rec.function) ? 1 : 0;
    const Key k{rec.function, rec.op,  v != 0 ? 0 : rec.tag, rec.recv_tag, rec.comm,
                rec.color,    rec.key, rec.new_comm,          nonblocking_collective(rec)};
    // A direct-mapped front (no bucket chains) answers almost every call; the map keeps every key.
    Slot& slot = front_[KeyHash{}(k) % front_.size()];
    if (slot.used && slot.key == k)
      return slot.id;
    auto it = ids_.find(k);
    const std::uint32_t id = it != ids_.end() ? it->second : ids_.emplace(k, compute()).first->second;
    slot = {k, id, true};
    return id;
  }

private:
  struct Key {
    std::uint32_t function;
    Op op;
    std::int32_t tag, recv_tag, comm, color, key, new_comm;
    bool nonblocking;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const
    {
      auto u = [](std::int32_t x) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)); };
      std::uint64_t h = (std::uint64_t{k.function} << 9 | std::uint64_t{k.nonblocking} << 8 | static_cast<std::uint64_t>(k.op)) ^
                        u(k.tag) << 32;
      h ^= (u(k.recv_tag) ^ u(k.comm) << 16 ^ u(k.color) << 24 ^ u(k.key) << 40 ^ u(k.new_comm) << 48) * 0x9e3779b97f4a7c15ULL;
      h *= 0xff51afd7ed558ccdULL;
      return static_cast<std::size_t>(h ^ (h >> 32));
    }
  };
  struct Slot {
    Key key{};
    std::uint32_t id = 0;
    bool used = false;
  };
  std::vector<std::int8_t> varying_;  ///< by the stream's function id: -1 not looked up yet
  std::unordered_map<Key, std::uint32_t, KeyHash> ids_;
  std::array<Slot, 64> front_{};
};

/// Where the training rank counts have process grids of different shapes (axes of extent 1, 2, > 2 of
/// MPI_Dims_create(Np, 3) or (Np, 2)), what the model lacks to follow them: a code that makes no call
/// along an axis of extent 1 and a second exchange round along one of more than 2 (LAMMPS' CommBrick)
/// runs per-axis blocks chosen by each axis' extent, which no rank class names. Empty otherwise.
std::string grid_shape_note(const std::vector<GroupAssignment>& assignments, std::size_t sweeps_found)
{
  std::set<int> nps;
  for (const GroupAssignment& a : assignments)
    nps.insert(a.np);
  for (int d : {3, 2}) {
    std::set<std::array<int, 3>> classes;
    std::string shapes;
    for (int np : nps) {
      std::array<int, 3> c{};  // axes of extent 1, 2, > 2
      std::string shape;
      for (int e : dims_create(np, d)) {
        ++c[static_cast<std::size_t>(std::min(e, 3) - 1)];
        shape += (shape.empty() ? "" : "x") + std::to_string(e);
      }
      classes.insert(c);
      shapes += (shapes.empty() ? "" : ", ") + std::string("np ") + std::to_string(np) + " = " + shape;
    }
    if (classes.size() > 1)
      return ". The training rank counts have MPI_Dims_create(Np, " + std::to_string(d) +
             ") grids of different shapes (" + shapes +
             "): if the code's calls per axis depend on the axis' extent (none along an axis of extent 1, a "
             "second round along one of more than 2), the model expresses it only in part: loop counts may read "
             "the grid's shape (axes3>1(Np), axes3>2(Np)) and peers may walk the axes (grid_loop), but a "
             "block of calls chosen per axis by its extent has no form in the model, except as an axis sweep "
             "(point-to-point calls to the face neighbours of the periodic MPI_Dims_create(Np, 3) grid, learned "
             "where its three axes have more than one rank: docs/trace-model.md), and " +
             (sweeps_found == 0 ? std::string("none was found here")
                                : std::to_string(sweeps_found) + " were found and cut out, which was not enough");
  }
  return {};
}

/// Whether the training rank counts have MPI_Dims_create(Np, 3) grids of different shapes (axes of
/// extent 1, 2, > 2).
bool grid_shapes_differ(const std::vector<std::filesystem::path>& paths)
{
  std::set<std::array<int, 3>> classes;
  for (const auto& p : paths) {
    std::array<int, 3> c{};
    int k = 0;
    for (int e : dims_create(ProfileDir(p).info().np, 3))
      c[static_cast<std::size_t>(k++)] = AxisSweep::extent_class(e);
    classes.insert(c);
  }
  return classes.size() > 1;
}

class Fitter {
public:
  /// `axis_sweeps`: look for axis sweeps (AxisSweep) and cut them out of every rank's calls.
  Fitter(const std::vector<std::filesystem::path>& paths, const FitOptions& opt, bool axis_sweeps = false) : opt_(opt)
  {
    if (paths.size() < 2)
      throw InputError({paths.empty() ? std::string() : paths[0].string(), 0, {}, -1},
                       "a single profile: nothing to fit. Give profiles of the same application at two or more "
                       "(Nw, Np) points");
    // Numbered loops first: every later reading sees each of them as one placeholder call.
    numbered_ = detail::scan_numbered(paths, opt_.numbered_min_iterations, opt_.numbered_max_gap);
    // Axis sweeps next, read through the numbered loops' cuts: every later reading sees each as one call.
    if (axis_sweeps) {
      axis_ = detail::scan_axis_sweeps(paths, numbered_);
      for (const detail::AxisKind& k : axis_.kinds)
        for (const auto& block : k.blocks)
          if (block)
            for (const detail::AxisElem& e : *block)
              intern(axis_.keys[e.key]);
    }
    for (const auto& p : paths)
      scan_tags(p);
    for (const detail::NumberedProfile& p : numbered_.profiles)
      for (const auto& rank : p.calls)
        for (const auto& run : rank)
          for (const detail::NumberedCallObs& c : run)
            intern(numbered_token(c.function, c.op));
    for (const detail::NumberedProfile& p : numbered_.profiles)
      for (const auto& seq : p.trees)
        for (const detail::TreeObs& t : seq) {
          if (not t.send_fn.empty())
            intern(tree_token(t.send_fn, Op::Send, t.tag));
          if (not t.recv_fn.empty())
            intern(tree_token(t.recv_fn, Op::Recv, t.tag));
        }
    for (const auto& p : paths)
      scan_keys(p);
    for (const auto& p : paths)
      scan_polls(p);
    leftover_ = leftover_bases(followers_, rounds_);
    for (const auto& p : paths)
      load(p);
    // Deterministic whatever the order on the command line: by (Np, Nw, path).
    std::sort(profiles_.begin(), profiles_.end(), [](const LoadedProfile& a, const LoadedProfile& b) {
      return std::tie(a.info.np, a.info.nw, a.label) < std::tie(b.info.np, b.info.nw, b.label);
    });
    check_same_application();
    // Points recorded kInstanceProfiles times or more keep their measured work call by call (the
    // per-call median of ProfileSeries); the others only sums, so memory does not grow with the calls.
    std::map<std::pair<double, int>, std::size_t> at_point;
    for (const LoadedProfile& p : profiles_)
      ++at_point[{p.info.nw, p.info.np}];
    for (const LoadedProfile& p : profiles_)
      repeated_.push_back(at_point[{p.info.nw, p.info.np}] >= ProfileSeries::kInstanceProfiles);
  }

  /// Whether the fit found axis sweeps (only looked for when asked).
  bool has_axis_sweeps() const { return not axis_.empty(); }

  /// Whether this profile's point was recorded often enough for a per-call median.
  bool repeated(std::size_t profile) const { return repeated_[profile]; }

  TraceModel run()
  {
    TraceModel model;
    model.group_threshold = opt_.group_threshold;
    // Tokens in sorted order so that model.json does not depend on which profile came first.
    std::vector<std::uint32_t> remap(token_list_.size());
    {
      std::vector<std::uint32_t> order(token_list_.size());
      for (std::uint32_t i = 0; i < order.size(); ++i)
        order[i] = i;
      std::sort(order.begin(), order.end(), [&](auto a, auto b) { return token_list_[a] < token_list_[b]; });
      for (std::uint32_t i = 0; i < order.size(); ++i) {
        remap[order[i]] = i;
        model.tokens.push_back(token_list_[order[i]]);
      }
    }
    remap_ = remap;
    burst_model_.assign(remap.size(), false);
    model_fold_ = opt_.fold;
    model_fold_.burst_token.assign(remap.size(), false);
    model_fold_.work_token.assign(remap.size(), false);
    poll_model_.assign(remap.size(), false);
    for (std::size_t i = 0; i < remap.size(); ++i) {
      burst_model_[remap[i]]             = burst_token_[i];
      model_fold_.burst_token[remap[i]] = burst_token_[i];
      model_fold_.work_token[remap[i]]  = work_token_[i];
      poll_model_[remap[i]]              = poll_token_[i];
    }
    for (const auto& [poll, bodies] : rounds_)
      for (const auto& body : bodies) {
        std::vector<std::uint32_t> b;
        for (std::uint32_t t : body)
          b.push_back(remap[t]);
        model_fold_.round_bodies[remap[poll]].insert(std::move(b));
      }
    for (const auto& [key, bases] : leftover_)
      for (const auto& after : bases) {
        std::vector<std::uint32_t> a;
        for (std::uint32_t t : after)
          a.push_back(remap[t]);
        model_fold_.leftover_base[{remap[key.first], remap[key.second]}].insert(std::move(a));
      }

    // Fold every rank and collect the distinct shapes.
    std::map<std::vector<std::int64_t>, std::size_t> shape_ids;
    std::vector<std::vector<std::int64_t>> shapes;
    for (LoadedProfile& p : profiles_) {
      model.training.push_back({p.label, p.info.nw, p.info.np});
      for (RankTrace& r : p.ranks) {
        renumber(r.rolled);
        auto shape = shape_of(r.rolled);
        auto [it, inserted] = shape_ids.emplace(shape, shapes.size());
        if (inserted)
          shapes.push_back(std::move(shape));
        r.shape = it->second;
      }
    }
    // Trace groups. Templates come from the most common shapes and the largest runs first: their loops
    // surely ran often enough to fold, and a rank of a smaller run whose loop ran once (or not at all)
    // still matches them. A rank
    // joins the first group whose template its calls match (an exact member: it is used to fit the
    // template), else the first whose template's shape is within the Myers threshold of its own (an
    // approximate member), else it founds a group.
    std::vector<std::pair<std::size_t, int>> order;
    for (std::size_t p = 0; p < profiles_.size(); ++p)
      for (int r = 0; r < static_cast<int>(profiles_[p].ranks.size()); ++r)
        order.emplace_back(p, r);
    // Most common shape first (a rank that does something extra does not found the template of its
    // peers), then the largest run first (its loops ran often enough to fold), then profile and rank.
    std::vector<std::size_t> shape_freq(shapes.size(), 0);
    std::vector<std::uint64_t> profile_calls(profiles_.size(), 0);
    for (const auto& [p, r] : order) {
      ++shape_freq[rank_trace({p, r}).shape];
      profile_calls[p] += rank_trace({p, r}).calls;
    }
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      const RankTrace& ta = rank_trace(a);
      const RankTrace& tb = rank_trace(b);
      if (shape_freq[ta.shape] != shape_freq[tb.shape])
        return shape_freq[ta.shape] > shape_freq[tb.shape];
      return profile_calls[a.first] > profile_calls[b.first];
    });
    std::vector<std::pair<std::size_t, int>> reps;
    std::vector<std::uint32_t> tokens;
    for (const auto& pr : order) {
      RankTrace& rt = rank_trace(pr);
      read_tokens(pr, tokens);
      tokens = compact_calls(tokens, roles_of(tokens));
      for (std::size_t g = 0; g < reps.size() && rt.group < 0; ++g) {
        std::size_t pos = 0;
        rt.decisions.clear();
        if (rank_trace(reps[g]).shape == rt.shape) {
          // The same rolled structure as the template, node for node: the rank's own loop counts are its
          // decisions (greedy matching can fail here, a loop taking iterations that belong to what follows).
          fold_decisions(rt.rolled, rt.decisions);
          rt.group = static_cast<int>(g);
          rt.exact = true;
          break;
        }
        if (match_template(rank_trace(reps[g]).rolled, tokens, pos, rt.decisions) &&
            pos == tokens.size()) {
          rt.group = static_cast<int>(g);
          rt.exact = true;
        }
      }
      for (std::size_t g = 0; g < reps.size() && rt.group < 0; ++g)
        if (shape_difference(shapes[rank_trace(reps[g]).shape], shapes[rt.shape]) <= opt_.group_threshold)
          rt.group = static_cast<int>(g);
      if (rt.group < 0) {
        rt.group = static_cast<int>(reps.size());
        reps.push_back(pr);
        // The founder's loop counts are those folding found: greedy matching can fail on its own
        // rolled trace (a loop whose body can also match what follows it takes too many iterations:
        // ((A)x2 B)x2 (A)x3 B), so its decisions are read off the rolled trace instead.
        rt.decisions.clear();
        fold_decisions(rt.rolled, rt.decisions);
        rt.exact = true;
      }
      if (not rt.exact)
        rt.decisions.clear();
    }

    if (numbered_.loops() > 0) {
      auto token_of = [&](const std::string& fn, Op op) { return remap_[token_ids_.at(numbered_token(fn, op))]; };
      auto placeholder_of = [&](std::size_t j) {
        CallRecord rec;
        rec.op = Op::Sleep;
        return remap_[token_ids_.at(make_token(detail::numbered_placeholder_name(j), rec))];
      };
      model.numbered = detail::fit_numbered(numbered_, token_of, placeholder_of, model.warnings);
    }
    if (numbered_.tree_sequences > 0) {
      auto token_of = [&](const std::string& fn, Op op, std::int32_t tag) {
        return remap_[token_ids_.at(tree_token(fn, op, tag))];
      };
      auto placeholder_of = [&](std::size_t q) {
        CallRecord rec;
        rec.op = Op::Sleep;
        return remap_[token_ids_.at(make_token(detail::tree_placeholder_name(q), rec))];
      };
      model.trees = detail::fit_trees(numbered_, token_of, placeholder_of);
    }

    if (not axis_.empty()) {
      auto token_of = [&](const CallToken& t) { return remap_[token_ids_.at(t)]; };
      auto placeholder_of = [&](std::size_t k) {
        CallRecord rec;
        rec.op = Op::Sleep;
        return remap_[token_ids_.at(make_token(detail::axis_sweep_placeholder_name(k), rec))];
      };
      model.axis_sweeps = detail::fit_axis_sweeps(axis_, token_of, placeholder_of);
    }

    std::vector<GroupAssignment> assignments;
    for (const LoadedProfile& p : profiles_) {
      GroupAssignment a{p.label, p.info.np, {}};
      for (const RankTrace& r : p.ranks)
        a.group_of_rank.push_back(r.group);
      assignments.push_back(std::move(a));
    }
    try {
      model.rule = infer_group_rule(assignments);
    } catch (const InputError& e) {
      // Which branch to blame: when the profiles of each Np put every rank in the same group, nothing
      // depends on Nw, and the conflict is between rank counts (LAMMPS: an axis of the process grid of
      // extent 1 or 2 skips calls that a longer one makes).
      bool nw_stable = true;
      for (const GroupAssignment& a : assignments)
        for (const GroupAssignment& b : assignments)
          nw_stable = nw_stable and (a.np != b.np or a.group_of_rank == b.group_of_rank);
      throw InputError(e.context(),
                       e.reason() + ". Ranks of one class must run the same template at every training point; " +
                           (nw_stable ? "the profiles of each Np agree rank by rank, so the branch depends on Np "
                                        "beyond the rank classes (a code path taken only at some rank counts, e.g. "
                                        "on some shapes of the process grid) and cannot be expressed: train on rank "
                                        "counts that take the same paths" + grid_shape_note(assignments, axis_.kinds.size())
                                      : "a branch that depends on Nw (a code path taken only at some sizes) cannot "
                                        "be expressed: train on sizes that take the same paths"));
    }

    std::vector<GroupData> data;
    for (std::size_t g = 0; g < reps.size(); ++g)
      data.push_back(collect_group(model, rank_trace(reps[g]).rolled, g));
    count_support(data);
    for (std::size_t g = 0; g < data.size(); ++g) {
      slots_ = std::move(data[g].slots);
      std::vector<std::pair<std::string, RankExpr>> used;
      for (int id : data[g].top)
        append_node(data[g].group.body, id, model, g, used);
      overlap_absorbed_receives(data[g].group.body, model);
      data[g].slots = std::move(slots_);
      model.groups.push_back(std::move(data[g].group));
    }
    fit_latency(model, data);
    return model;
  }

private:
  /// First reading: functions whose calls use many distinct tags in one rank (message numbering) get
  /// their tags fitted per position rather than split into tokens.
  void scan_tags(const std::filesystem::path& path)
  {
    if (not is_profile_dir(path))
      throw InputError({path.string(), 0, {}, -1},
                       "not a profile directory (no run.json); import SMPI traces with `gridcast import tit` first");
    ProfileDir dir(path);
    for (int r = 0; r < dir.rank_count(); ++r) {
      std::map<std::uint32_t, std::set<std::int32_t>> tags;  // by the stream's function id
      std::map<std::int64_t, std::pair<std::uint64_t, std::uint32_t>> open_nbc;  // request -> (line, function)
      CallStreamPtr s = open_rank(dir, r);
      CallRecord rec;
      while (s->next(rec)) {
        // The first reading of every rank: a trace that reaches processes outside its world cannot be
        // fitted into a model of that world.
        if (rec.op == Op::DynamicProcess)
          throw InputError({s->source(), rec.line, {}, r}, dynamic_process_refusal(s->functions().name(rec.function)));
        // A nonblocking collective (or MPI_Comm_idup) must be completed by a wait, test or waitall of the
        // rank: synthesis at another size would otherwise leave the collective running past MPI_Finalize,
        // which the replay refuses. Checked here, by name, rather than met as a replay error later.
        if (nonblocking_collective(rec))
          open_nbc.try_emplace(rec.request, rec.line, rec.function);
        if (rec.request != kNoRequest && not creates_request(rec))
          open_nbc.erase(rec.request);
        for (std::int64_t q : rec.requests)
          open_nbc.erase(q);
        auto& t = tags[rec.function];
        if (t.size() <= opt_.varying_tags)
          t.insert(rec.tag);
      }
      if (not open_nbc.empty()) {
        const auto& [req, at] = *open_nbc.begin();
        throw InputError({s->source(), at.first, {}, r},
                         s->functions().name(at.second) + " creates request " + std::to_string(req) +
                             " that no wait, test or waitall of the rank completes: a nonblocking collective "
                             "still running at the end of the trace cannot be fitted (nor replayed)");
      }
      for (const auto& [fn, t] : tags) {
        const std::string& name = s->functions().name(fn);
        if (t.size() > opt_.varying_tags)
          varying_tag_functions_.insert(name);
        // A tag set that changes with Nw (HPL numbers its messages by panel, and the number of panels
        // grows with N) cannot be part of what the call is: the same rank at another size would run
        // other calls. Compared between profiles of one Np, rank by rank.
        auto& seen = tag_sets_[{name, dir.info().np, r}];
        seen.insert(t);
        if (seen.size() > 1)
          varying_tag_functions_.insert(name);
      }
    }
  }

  /// First reading, second part: communicator creations whose split key differs between the ranks of one
  /// profile (a key that is each rank's place, as MPI_Cart_create records it). Kept in the token, such a
  /// key would give every rank a template of its own, and at np 2 make rank 1 an approximate member
  /// synthesized as rank 0 (peers included); fitted as a rank expression, the ranks share the template.
  void scan_keys(const std::filesystem::path& path)
  {
    ProfileDir dir(path);
    std::map<std::uint32_t, std::set<std::int32_t>> keys;  // by the function's name id below
    std::map<std::string, std::uint32_t> ids;
    for (int r = 0; r < dir.rank_count(); ++r) {
      CallStreamPtr s = open_rank(dir, r);
      CallRecord rec;
      while (s->next(rec))
        if (rec.op == Op::CommSplit) {
          const std::string& name = s->functions().name(rec.function);
          auto [it, fresh] = ids.emplace(name, static_cast<std::uint32_t>(ids.size()));
          auto& k = keys[it->second];
          if (k.size() < 2)
            k.insert(rec.key);
        }
    }
    for (const auto& [name, id] : ids)
      if (keys[id].size() > 1)
        varying_key_functions_.insert(name);
  }

  /// First reading, third part: the rounds of every polling construct and what follows each construct,
  /// so that a construct's lead and its optional leftover round are recognized the same way in every rank
  /// (a rank whose constructs never had two rounds learns them from the others).
  void scan_polls(const std::filesystem::path& path)
  {
    ProfileDir dir(path);
    std::vector<std::uint32_t> tokens;
    std::vector<PollFollower> found;
    for (int r = 0; r < dir.rank_count(); ++r) {
      CallStreamPtr s = open_rank(dir, r);
      tokens.clear();
      CallRecord rec;
      while (s->next(rec))
        tokens.push_back(intern(make_token(s->functions().name(rec.function), rec)));
      std::vector<bool> mask(tokens.size());
      for (std::size_t i = 0; i < tokens.size(); ++i)
        mask[i] = poll_token_[tokens[i]];
      FoldOptions fo  = opt_.fold;
      fo.burst_token  = burst_token_;
      fo.work_token   = work_token_;
      found.clear();
      poll_followers(tokens, mask, poll_roles(tokens, mask, fo), fo, found, rounds_);
      for (PollFollower& f : found)
        ++followers_[std::move(f)];
    }
  }

  /// A rank's calls, each numbered loop as its placeholder.
  CallStreamPtr open_rank(const ProfileDir& dir, int rank) const
  {
    CallStreamPtr s = detail::filter_numbered(dir.open(rank), numbered_.cuts(dir.path(), rank));
    return detail::filter_numbered(std::move(s), axis_.cuts(dir.path(), rank));
  }

  /// The token of a call inside a numbered loop: its tag is the loop's (first tag + step x k).
  static CallToken numbered_token(const std::string& function, Op op)
  {
    CallToken t;
    t.function = function;
    t.op       = op;
    t.tag      = kVaryingTag;
    return t;
  }

  /// The token of a send or receive of a binomial tree.
  static CallToken tree_token(const std::string& function, Op op, std::int32_t tag)
  {
    CallToken t;
    t.function = function;
    t.op       = op;
    t.tag      = tag;
    return t;
  }

  CallToken make_token(const std::string& function, const CallRecord& rec) const
  {
    CallToken t{function, rec.op, rec.tag, rec.recv_tag, rec.comm, rec.color, rec.key, rec.new_comm, nonblocking_collective(rec)};
    // What a probe or test found (the tag of the message it matched) is its result, not what it is: the
    // successful poll of a construct is the same call as the failed ones before it.
    if (rec.op == Op::Test || rec.op == Op::Probe)
      t.recv_tag = 0;
    if (varying_tag_functions_.count(function) > 0)
      t.tag = kVaryingTag;
    if (rec.op == Op::CommSplit && varying_key_functions_.count(function) > 0)
      t.key = kVaryingKey;
    return t;
  }

  /// For StreamTokenCache: whether the function `fn` of stream `s` has its tags fitted per position.
  auto varying_in(const CallStream& s) const
  {
    return [this, &s](std::uint32_t fn) { return varying_tag_functions_.count(s.functions().name(fn)) > 0; };
  }

  void load(const std::filesystem::path& path)
  {
    ProfileDir dir(path);
    LoadedProfile p;
    p.path  = path;
    p.label = path.string();
    p.info  = dir.info();
    if (not p.info.complete)
      throw InputError({(path / "run.json").string(), 0, "complete", -1},
                       "the recorded run did not complete: its traces cannot be fitted");
    std::vector<std::uint32_t> tokens;
    for (int r = 0; r < dir.rank_count(); ++r) {
      CallStreamPtr s = open_rank(dir, r);
      StreamTokenCache cache;
      tokens.clear();
      CallRecord rec;
      while (s->next(rec)) {
        tokens.push_back(cache.get(rec, varying_in(*s), [&] {
          CallToken t = make_token(s->functions().name(rec.function), rec);
          p.functions.insert(t.function);
          return intern(t);
        }));
      }
      RankTrace rt;
      FoldOptions fo  = opt_.fold;
      fo.burst_token  = burst_token_;
      fo.work_token   = work_token_;
      fo.round_bodies = rounds_;
      fo.leftover_base = leftover_;
      rt.rolled = fold_tokens(tokens, [&](std::uint32_t t) { return poll_token_[t]; }, fo);
      rt.calls  = tokens.size();
      p.ranks.push_back(std::move(rt));
    }
    profiles_.push_back(std::move(p));
  }

  RankTrace& rank_trace(const std::pair<std::size_t, int>& pr)
  {
    return profiles_[pr.first].ranks[static_cast<std::size_t>(pr.second)];
  }

  /// A rank's calls as model token ids (a second reading of its file).
  void read_tokens(const std::pair<std::size_t, int>& pr, std::vector<std::uint32_t>& out) const
  {
    out.clear();
    ProfileDir dir(profiles_[pr.first].path);
    CallStreamPtr s = open_rank(dir, pr.second);
    StreamTokenCache cache;
    CallRecord rec;
    while (s->next(rec))
      out.push_back(cache.get(rec, varying_in(*s), [&] { return model_token(*s, rec, dir.rank_path(pr.second), pr.second); }));
  }

  /// The model's id of `rec`'s token; an InputError if the fit never saw it (the file changed).
  std::uint32_t model_token(const CallStream& s, const CallRecord& rec, const std::filesystem::path& file, int rank) const
  {
    auto it = token_ids_.find(make_token(s.functions().name(rec.function), rec));
    if (it == token_ids_.end())
      throw InputError({file.string(), rec.line, {}, rank}, "the trace changed while it was being fitted");
    return remap_[it->second];
  }

  /// The polling-construct roles of a rank's calls (model ids), as folding gave them.
  std::vector<std::uint32_t> roles_of(const std::vector<std::uint32_t>& tokens) const
  {
    std::vector<bool> mask(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i)
      mask[i] = poll_model_[tokens[i]];
    return poll_roles(tokens, mask, model_fold_);
  }

  /// Provisional token ids (first seen) -> the model's sorted ids, in a rolled trace.
  void renumber(std::vector<RolledNode>& nodes) const
  {
    for (RolledNode& n : nodes) {
      n.token = remap_[n.token];
      renumber(n.body);
    }
  }

  std::uint32_t intern(const CallToken& t)
  {
    auto [it, inserted] = token_ids_.emplace(t, static_cast<std::uint32_t>(token_list_.size()));
    if (inserted) {
      token_list_.push_back(t);
      poll_token_.push_back(is_polling(t));
      burst_token_.push_back(is_burst(t));
      work_token_.push_back(t.op == Op::Compute);
    }
    return it->second;
  }

  void check_same_application() const
  {
    const LoadedProfile& ref = profiles_.front();
    for (const LoadedProfile& p : profiles_) {
      std::vector<std::string> missing, extra;
      std::set_difference(ref.functions.begin(), ref.functions.end(), p.functions.begin(), p.functions.end(),
                          std::back_inserter(missing));
      std::set_difference(p.functions.begin(), p.functions.end(), ref.functions.begin(), ref.functions.end(),
                          std::back_inserter(extra));
      if (missing.empty() && extra.empty())
        continue;
      auto list = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& f : v)
          s += (s.empty() ? "" : ", ") + f;
        return s.empty() ? std::string("none") : s;
      };
      throw InputError({p.label, 0, {}, -1},
                       "its function table does not match " + ref.label + " (missing: " + list(missing) +
                           "; not in " + ref.label + ": " + list(extra) +
                           "): profiles of different applications cannot be fitted together");
    }
  }

  // ---- per-group fitting -------------------------------------------------------------------------------

  std::vector<int> build_slots(const std::vector<RolledNode>& nodes)
  {
    std::vector<int> ids;
    for (const RolledNode& n : nodes) {
      int id = static_cast<int>(slots_.size());
      slots_.emplace_back();
      slots_[static_cast<std::size_t>(id)].kind  = n.kind;
      slots_[static_cast<std::size_t>(id)].token = n.token;
      if (n.kind == RolledNode::Kind::Loop) {
        slots_[static_cast<std::size_t>(id)].loop_ordinal = loop_counter_++;
        std::vector<int> children = build_slots(n.body);
        slots_[static_cast<std::size_t>(id)].children = std::move(children);
      }
      ids.push_back(id);
    }
    return ids;
  }

  /// The second reading of a rank: its calls one at a time, as model tokens and parameters. Requests
  /// are tracked while pending only (a wait forgets its request), so memory does not grow either.
  class CallCursor {
  public:
    CallCursor(const Fitter& f, const LoadedProfile& p, int rank)
        : fitter_(f), dir_(p.path), stream_(f.open_rank(dir_, rank)), rank_(rank)
    {
      advance();
    }
    bool at_end() const { return end_; }
    std::uint32_t token() const { return token_; }
    std::size_t index() const { return index_; }  ///< of the current call, from 0
    const CallRecord& record() const { return rec_; }
    /// The current call's parameters; moves on to the next call.
    CallParams take()
    {
      CallParams c;
      c.peer        = rec_.peer;
      c.src         = rec_.src;
      c.root        = rec_.root;
      c.bytes       = rec_.bytes;
      c.recv_bytes  = rec_.recv_bytes;
      c.flops       = rec_.flops;
      c.seconds     = rec_.seconds;
      c.line        = rec_.line;
      c.counts      = rec_.counts;
      c.recv_counts = rec_.recv_counts;
      c.tag         = rec_.tag;
      c.key         = rec_.key;
      auto back = [&](std::int64_t req, bool forget) {
        auto it = ordinal_.find(req);
        if (it == ordinal_.end())
          throw InputError({dir_.rank_path(rank_).string(), rec_.line, "request", rank_},
                           "request " + std::to_string(req) +
                               " completed but not pending (never created by isend/irecv or a nonblocking "
                               "collective, or already waited for)");
        std::int64_t b = created_ - it->second;
        if (forget)
          ordinal_.erase(it);
        return b;
      };
      if (creates_request(rec_))
        ordinal_[rec_.request] = created_++;
      else if (rec_.request != kNoRequest)
        c.request_back = back(rec_.request, rec_.op == Op::Wait);
      for (std::int64_t q : rec_.requests)
        c.requests_back.push_back(back(q, rec_.op == Op::Waitall));
      advance();
      return c;
    }

  private:
    void advance()
    {
      if (started_)
        ++index_;
      started_ = true;
      read(rec_, token_, end_);
    }
    void read(CallRecord& rec, std::uint32_t& token, bool& end)
    {
      end = not stream_->next(rec);
      if (end)
        return;
      token = cache_.get(rec, fitter_.varying_in(*stream_),
                         [&] { return fitter_.model_token(*stream_, rec, dir_.rank_path(rank_), rank_); });
    }
    StreamTokenCache cache_;

    const Fitter& fitter_;
    ProfileDir dir_;
    CallStreamPtr stream_;
    int rank_;
    CallRecord rec_;
    bool end_ = false;
    std::uint32_t token_ = 0;
    std::size_t index_ = 0;
    bool started_      = false;
    std::map<std::int64_t, std::int64_t> ordinal_;
    std::int64_t created_ = 0;
  };

  struct WalkState {
    std::size_t profile;
    int rank;
    int np;
    double nw;
    CallCursor* cursor;
    const std::vector<std::uint64_t>* decisions;
    const std::vector<std::uint32_t>* roles;  ///< of every call (poll_roles)
    std::size_t next_decision = 0;
    std::vector<std::uint64_t> loop;
    std::size_t group = 0;
    std::vector<std::pair<int, std::uint64_t>> loops;  ///< enclosing loops: (pre-order number, count)
    SlotObs* last_poll = nullptr;  ///< the polling construct walked last (a leftover round adds to its work)
  };

  [[noreturn]] void changed(const WalkState& w) const
  {
    throw InputError({profiles_[w.profile].label, 0, {}, w.rank},
                     "the rank's calls differ between two readings (was the profile modified while fitting?)");
  }

  void note_spread(SlotObs& s, const char* field, std::size_t profile, double v)
  {
    auto [it, inserted] = s.spread.try_emplace({field, profile}, v, v);
    if (not inserted) {
      it->second.first  = std::min(it->second.first, v);
      it->second.second = std::max(it->second.second, v);
    }
  }

  /// A compute call: its work in flops (measured seconds through the recording host's speed), for the
  /// site mean and, with its context, for the ratio and the variability of the latency model.
  void observe_compute(SlotObs& s, WalkState& w, const CallParams& c, std::size_t position)
  {
    const double speed = profiles_[w.profile].info.host.speed_flops;
    double work = c.flops > 0 ? c.flops : (c.seconds > 0 ? c.seconds * speed : 0.0);
    s.compute_flops.add(w.nw, static_cast<double>(w.np), w.profile, w.rank, repeated(w.profile), work);
    s.any_flops = s.any_flops || work != 0;
    s.context.group      = static_cast<int>(w.group);
    s.context.inter_loop = w.loops.empty() ? 0 : w.loops.back().first + 1;
    s.context.intra_loop = static_cast<int>(position);
    int inner = w.loops.empty() ? 0 : progress_bucket(w.loop.back(), w.loops.back().second);
    int outer = w.loops.empty() ? 0 : progress_bucket(w.loop.front(), w.loops.front().second);
    auto& cell = s.cells[{w.profile, inner, outer}];
    cell.first += work;
    ++cell.second;
    // Reservoir sampling (Algorithm R) with a generator seeded by what the call is: deterministic.
    ++s.reservoir_seen;
    if (s.reservoir.size() < kReservoir) {
      s.reservoir.emplace_back(w.profile, inner, outer, work);
    } else {
      std::uint64_t j = splitmix64(s.reservoir_seen ^ (static_cast<std::uint64_t>(w.profile) << 40)) % s.reservoir_seen;
      if (j < kReservoir)
        s.reservoir[j] = {w.profile, inner, outer, work};
    }
  }

  void observe_call(SlotObs& s, WalkState& w, const CallParams& c, std::size_t position)
  {
    const CallToken& tok = tokens_[s.token];
    const auto np = static_cast<double>(w.np);
    if (tok.op == Op::Compute) {
      observe_compute(s, w, c, position);
      s.request_back.insert(c.request_back);
      s.requests_back.insert(c.requests_back);
      return;
    }
    if (c.peer != kNoRank)
      s.peer.add(w.rank, w.np, w.loop, c.peer);
    if (c.src != kNoRank)
      s.src.add(w.rank, w.np, w.loop, c.src);
    if (is_rooted(tok.op))
      s.root.add(w.rank, w.np, w.loop, c.root);
    if (tok.tag == kVaryingTag) {
      s.tag.add(w.loop, c.tag);
      s.tag_values.add(w.nw, np, static_cast<double>(c.tag));
      note_spread(s, "tag", w.profile, static_cast<double>(c.tag));
    }
    if (tok.op == Op::CommSplit && tok.key == kVaryingKey)
      s.key.add(w.rank, w.np, w.loop, c.key);
    s.bytes.add(w.nw, np, static_cast<double>(c.bytes));
    s.any_bytes = s.any_bytes || c.bytes != 0;
    note_spread(s, "bytes", w.profile, static_cast<double>(c.bytes));
    // A polling construct's probes found nothing (0) until the last found the message: the mean over its
    // polls depends on how many rounds the timing gave it, and a regression of that mean ran away outside
    // the training range (HPL at 2x: a negative size). The size found is what the probes say.
    if (s.kind != RolledNode::Kind::Poll || c.recv_bytes != 0) {
      s.recv_bytes.add(w.nw, np, static_cast<double>(c.recv_bytes));
      s.any_recv_bytes = s.any_recv_bytes || c.recv_bytes != 0;
      note_spread(s, "recv_bytes", w.profile, static_cast<double>(c.recv_bytes));
    }
    s.flops.add(w.nw, np, c.flops);
    s.any_flops = s.any_flops || c.flops != 0;
    if (c.seconds >= 0) {
      s.seconds.add(w.nw, np, c.seconds);
      s.any_seconds = true;
    }
    // v-collectives: one count for every other rank, and one for the rank itself (often 0 or a local
    // copy of another size).
    auto per_peer = [&](const std::vector<std::uint64_t>& v, const char* field, Series& others, Series& self,
                        bool& any, bool& self_differs) {
      if (v.empty())
        return;
      any = true;
      if (static_cast<int>(v.size()) != w.np)
        throw InputError({profiles_[w.profile].label, c.line, field, w.rank},
                         std::string(op_name(tok.op)) + ": " + std::to_string(v.size()) + " counts for " +
                             std::to_string(w.np) + " ranks");
      const auto me    = static_cast<std::size_t>(w.rank);
      const std::uint64_t other = v[me == 0 && v.size() > 1 ? 1 : 0];
      for (std::size_t j = 0; j < v.size(); ++j)
        if (j != me && v[j] != other)
          throw InputError({profiles_[w.profile].label, c.line, field, w.rank},
                           std::string(op_name(tok.op)) +
                               ": counts that differ between the other ranks are not modelled (one count for "
                               "every other rank, and one for the rank itself)");
      if (v.size() > 1)
        others.add(w.nw, np, static_cast<double>(other));
      self.add(w.nw, np, static_cast<double>(v[me]));
      if (v.size() > 1 && v[me] != other)
        self_differs = true;
    };
    per_peer(c.counts, "counts", s.counts, s.counts_self, s.any_counts, s.counts_self_differs);
    per_peer(c.recv_counts, "recv_counts", s.recv_counts, s.recv_counts_self, s.any_recv_counts,
             s.recv_counts_self_differs);
    s.request_back.insert(c.request_back);
    s.requests_back.insert(c.requests_back);
  }

  void walk(const std::vector<RolledNode>& nodes, const std::vector<int>& ids, WalkState& w)
  {
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const RolledNode& n = nodes[k];
      SlotObs& s          = slots_[static_cast<std::size_t>(ids[k])];
      if (s.where.empty())
        s.where = profiles_[w.profile].label + " rank " + std::to_string(w.rank);
      switch (n.kind) {
        case RolledNode::Kind::Call:
          if (w.cursor->at_end() || w.cursor->token() != n.token)
            changed(w);
          observe_call(s, w, w.cursor->take(), k);
          // A leftover round after the receive that ended a construct: its work is the construct's.
          while (not w.cursor->at_end() && (*w.roles)[w.cursor->index()] == kRoleAbsorbed) {
            if (w.last_poll == nullptr)
              changed(w);
            const double speed = profiles_[w.profile].info.host.speed_flops;
            w.last_poll->any_library = w.last_poll->any_library || not burst_model_[w.cursor->token()];
            CallParams c        = w.cursor->take();
            w.last_poll->absorbed.add_to_last(w.nw, static_cast<double>(w.np), w.profile, w.rank,
                                              c.flops > 0 ? c.flops : (c.seconds > 0 ? c.seconds * speed : 0.0));
          }
          break;
        case RolledNode::Kind::Poll: {
          // The construct's calls: its polls (observed as calls: sources, tags) and the compute it absorbed,
          // whose total work is kept. Bursts alone between polls are the polling loop's own time (synthesis
          // emits the polls; the emulator's test cost stands for it); library calls are work done while
          // waiting, which the construct must conserve whatever the number of rounds it was cut into.
          if (w.cursor->at_end() || (*w.roles)[w.cursor->index()] != n.token)
            changed(w);
          std::uint64_t len = 0;
          double work       = 0;
          const double speed = profiles_[w.profile].info.host.speed_flops;
          do {
            if (w.cursor->token() == n.token) {
              observe_call(s, w, w.cursor->take(), k);
              ++len;
            } else {
              s.any_library = s.any_library || not burst_model_[w.cursor->token()];
              CallParams c  = w.cursor->take();
              work += c.flops > 0 ? c.flops : (c.seconds > 0 ? c.seconds * speed : 0.0);
            }
          } while (not w.cursor->at_end() && (*w.roles)[w.cursor->index()] == kRoleAbsorbed);
          if (len == 0)
            changed(w);
          s.count.add(w.nw, static_cast<double>(w.np), static_cast<double>(len));
          s.absorbed.add(w.nw, static_cast<double>(w.np), w.profile, w.rank, repeated(w.profile), work);
          w.last_poll = &s;
          break;
        }
        case RolledNode::Kind::Loop: {
          if (w.next_decision >= w.decisions->size())
            changed(w);
          const std::uint64_t count = (*w.decisions)[w.next_decision++];
          s.count.add(w.nw, static_cast<double>(w.np), static_cast<double>(count));
          note_spread(s, "count", w.profile, static_cast<double>(count));
          s.count_by_np_rank_nw[{w.np, w.rank}][w.nw] = count;
          w.loop.push_back(0);
          w.loops.emplace_back(s.loop_ordinal, count);
          for (std::uint64_t i = 0; i < count; ++i) {
            w.loop.back() = i;
            walk(n.body, s.children, w);
          }
          w.loop.pop_back();
          w.loops.pop_back();
          break;
        }
      }
    }
  }

  Formula fit_quantity(const Series& series, bool integer, SlotObs& s, const char* field, TraceModel& model,
                       std::size_t group)
  {
    for (const auto& [key, range] : s.spread)
      if (key.first == field && range.first != range.second) {
        std::ostringstream o;
        o << "group " << group << ", " << op_name(tokens_[s.token].op) << " " << field << ": values from "
          << range.first << " to " << range.second << " in " << profiles_[key.second].label << " (first seen at "
          << s.where << "); fitted on their mean";
        model.warnings.push_back(o.str());
        break;
      }
    return fit_formula(series.points(), integer);
  }

  /// Where training cannot tell several expressions apart (a grid axis of extent 2 has the same lower and
  /// upper neighbour), the first one that no earlier call of the same function in the same loop body
  /// uses wins: a halo exchange addresses each neighbour once.
  std::optional<RankExpr> fit_ranks(const RankSeries& series, const char* field, const SlotObs& s,
                                    std::vector<std::pair<std::string, RankExpr>>* used = nullptr)
  {
    if (not series.seen)
      return std::nullopt;
    const std::vector<RankObservation>& obs = series.samples;
    std::vector<RankExpr> all = series.result();
    // A neighbour whose axis follows the loop index only where nothing with a fixed meaning explains the
    // observations (a loop that ran once in training says nothing about its axis walk).
    if (std::any_of(all.begin(), all.end(), [](const RankExpr& x) { return x.kind != RankExpr::Kind::GridLoop; }))
      std::erase_if(all, [](const RankExpr& x) { return x.kind == RankExpr::Kind::GridLoop; });
    std::optional<RankExpr> e;
    if (not all.empty()) {
      // Candidates an earlier sibling took are dropped (unless nothing else is left), then the one
      // most positions of the same call explain wins, the simplest on a tie.
      const std::string key = tokens_[s.token].function + "/" + field;
      std::vector<RankExpr> free;
      for (const RankExpr& cand : all)
        if (used == nullptr || std::none_of(used->begin(), used->end(), [&](const auto& u) {
              return u.first == key && same_target(u.second, cand);
            }))
          free.push_back(cand);
      if (free.empty())
        free = all;
      const auto& votes = support_[support_key(s.token, field)];
      int best          = -1;
      for (const RankExpr& cand : free) {
        auto it = votes.find(expr_key(cand));
        int v   = it == votes.end() ? 0 : it->second;
        if (v > best) {
          best = v;
          e    = cand;
        }
      }
      if (used != nullptr)
        used->emplace_back(key, *e);
    }
    if (not e) {
      std::string sample;
      for (std::size_t i = 0; i < obs.size(); ++i) {
        sample += (i ? ", " : "") + std::string("rank ") + std::to_string(obs[i].rank) + " of " +
                  std::to_string(obs[i].np);
        for (std::size_t l = 0; l < obs[i].loop.size(); ++l)
          sample += (l ? "," : " at loop index ") + std::to_string(obs[i].loop[l]);
        sample += " -> " + std::to_string(obs[i].value);
      }
      // What explained everything up to the failing observation: a walk over the grid's axes that
      // restarts with another block is two code sites with the same calls folded into one loop.
      std::string before;
      const auto& la = series.last_alive;
      auto walk = std::find_if(la.begin(), la.end(), [](const RankExpr& x) { return x.kind == RankExpr::Kind::GridLoop; });
      const bool only_walks =
          std::all_of(la.begin(), la.end(), [](const RankExpr& x) { return x.kind == RankExpr::Kind::GridLoop; });
      if (walk != la.end() && only_walks)
        before = "; every earlier observation is " + walk->text() +
                 ": a loop whose peer walks the grid's axes and then walks them again another way (two code "
                 "sites with the same calls, e.g. one exchange per axis then one per swap, folded into one "
                 "loop) has no expression: the model cannot split the loop where the walk restarts";
      else if (not la.empty())
        before = "; every earlier observation is " + la.front().text();
      throw InputError({}, std::string("no rank expression explains the ") + field + " of " +
                               tokens_[s.token].function + " (first seen at " + s.where + "): " + sample +
                               " (the last one is the first no candidate explains; candidates: any, fixed, Np - k, offset mod Np, xor, xor 2^i, cycle over the "
                               "loop index, 1-3-D grid neighbour, grid neighbour whose axis follows the loop index)" +
                               before);
    }
    return e;
  }

  /// A tag the same in every call of each run, changing with (Nw, Np): its formula, if one reproduces
  /// every training point exactly.
  std::optional<Formula> fit_tag_formula(const SlotObs& s) const
  {
    for (const auto& [key, range] : s.spread)
      if (key.first == "tag" && range.first != range.second)
        return std::nullopt;
    std::vector<FitPoint> pts = s.tag_values.points();
    auto exact = [&](const Formula& f) {
      return std::all_of(pts.begin(), pts.end(),
                         [&](const FitPoint& p) { return std::llround(f.eval(p.nw, p.np)) == std::llround(p.value); });
    };
    Formula f = fit_formula(pts, true);
    if (exact(f))
      return f;
    // Leave-one-out cannot choose a two-term formula on two points: a tag is exact or wrong, so the
    // simplest "a + b * feature" through the points that reproduces all of them.
    for (std::size_t feat = 1; feat < first_grid_feature() && pts.size() >= 2; ++feat) {
      const double x0 = feature_value(feat, pts[0].nw, pts[0].np);
      for (std::size_t k = 1; k < pts.size(); ++k) {
        const double x1 = feature_value(feat, pts[k].nw, pts[k].np);
        if (x1 == x0)
          continue;
        const double b = (pts[k].value - pts[0].value) / (x1 - x0);
        Formula g;
        g.integer = true;
        g.points  = static_cast<int>(pts.size());
        g.terms   = {{0, pts[0].value - b * x0}, {feat, b}};
        if (exact(g))
          return g;
        break;
      }
    }
    return std::nullopt;
  }

  /// Appends the node of slot `id` to `body`, preceded by the start-up time of MPI_Init where it was
  /// measured. The emulator times MPI calls by simulating them, and MPI_Init has nothing to simulate, so
  /// its recorded duration (process start-up, shared-memory set-up: a quarter of a second at np 2 on the
  /// reference VM, a fifth of a 1-second LAMMPS run) was in every measured run and missing from every
  /// prediction. The fit keeps it as a `sleep` of the same function just before the call (idle time:
  /// it does not scale with the host's flop rate), regressed on (Nw, Np) like measured compute (the
  /// simplest formula near the best: it is noisy), and the call itself keeps no `seconds`. Declared
  /// traces (SMPI imports) record no duration for it and get no sleep.
  void append_node(std::vector<TemplateNode>& body, int id, TraceModel& model, std::size_t group,
                   std::vector<std::pair<std::string, RankExpr>>& used)
  {
    TemplateNode t = make_node(id, model, group, used);
    const SlotObs& s = slots_[static_cast<std::size_t>(id)];
    if (t.kind == RolledNode::Kind::Call && model.tokens[t.token].op == Op::Init && s.any_seconds) {
      std::vector<FitPoint> pts = s.seconds.points();
      const bool measured = std::any_of(pts.begin(), pts.end(), [](const FitPoint& p) { return p.value > 0; });
      if (measured) {
        TemplateNode sleep;
        sleep.kind    = RolledNode::Kind::Call;
        sleep.token   = token_of(model, CallToken{model.tokens[t.token].function, Op::Sleep});
        sleep.seconds = fit_formula(pts, false, std::clamp(static_cast<int>(pts.size()) - 2, 1, 3), Parsimony{0.25, 0.01});
        body.push_back(std::move(sleep));
        t.seconds.reset();
      }
    }
    body.push_back(std::move(t));
  }

  /// True when a node of `body` (or of its loops) creates or completes a request.
  static bool uses_requests(const std::vector<TemplateNode>& body, const TraceModel& model)
  {
    for (const TemplateNode& n : body) {
      if (n.kind == RolledNode::Kind::Loop) {
        if (uses_requests(n.body, model))
          return true;
        continue;
      }
      const Op op = model.tokens[n.token].op;
      if (creates_request(op) || model.tokens[n.token].nonblocking || op == Op::Wait || op == Op::Waitall || op == Op::Waitany || op == Op::Test)
        return true;
    }
    return false;
  }

  /// A polling construct that absorbs work overlaps that work with the receive it waits for: the rank
  /// receives the message between two chunks of its update, as soon as it comes, and finishes the update
  /// after. Synthesis emits the absorbed work as one burst before the construct's poll, so with the
  /// receive after it the emulated rank received only once all of its update was done, and a sender
  /// whose large send waits for the receive (rendezvous) waited as long: two ranks that overlap their
  /// updates in the run ran one after the other (HPL at np 2, trained at N 512-1024: the training point
  /// N 1024 itself predicted +51 %, each rank waiting 0.055 s for 0.01 s in the run, with the work
  /// right within 2 %). So the receive that follows such a construct (only compute between them) is
  /// posted before it: an irecv of the same parameters before the construct, and a wait where the
  /// receive was (tokens of op irecv and wait, named as the receive's function). Then N 1024 predicts
  /// -3 %. Requests are numbered by creation, and a wait names its request by how many were created since
  /// (request_back): the new irecv would shift the waits that span it, so a group that creates or
  /// completes requests elsewhere keeps the receive as it is.
  void overlap_absorbed_receives(std::vector<TemplateNode>& group_body, TraceModel& model)
  {
    if (uses_requests(group_body, model))
      return;
    auto rewrite = [&](auto& self, std::vector<TemplateNode>& body) -> void {
      for (std::size_t i = 0; i < body.size(); ++i) {
        if (body[i].kind == RolledNode::Kind::Loop) {
          self(self, body[i].body);
          continue;
        }
        if (body[i].kind != RolledNode::Kind::Poll || not body[i].absorbed_flops)
          continue;
        std::size_t j = i + 1;
        while (j < body.size() && body[j].kind == RolledNode::Kind::Call && model.tokens[body[j].token].op == Op::Compute)
          ++j;
        if (j == body.size() || body[j].kind != RolledNode::Kind::Call || model.tokens[body[j].token].op != Op::Recv)
          continue;
        TemplateNode post = body[j];
        CallToken irecv   = model.tokens[post.token];
        irecv.op          = Op::Irecv;
        post.token        = token_of(model, irecv);
        post.seconds.reset();  // the receive's recorded time was waiting: the wait's, and the simulation's
        TemplateNode wait;
        wait.kind         = RolledNode::Kind::Call;
        wait.token        = token_of(model, CallToken{model.tokens[body[j].token].function, Op::Wait});
        wait.request_back = 1;  // the irecv: nothing between them creates a request
        body[j]           = std::move(wait);
        body.insert(body.begin() + static_cast<std::ptrdiff_t>(i), std::move(post));
        ++i;  // past the construct
      }
    };
    rewrite(rewrite, group_body);
  }

  /// The index of `token` in model.tokens, appended when new (after the sorted tokens of the recorded
  /// calls: deterministic, as the nodes that use it are).
  static std::uint32_t token_of(TraceModel& model, const CallToken& token)
  {
    auto it = std::find(model.tokens.begin(), model.tokens.end(), token);
    if (it != model.tokens.end())
      return static_cast<std::uint32_t>(it - model.tokens.begin());
    model.tokens.push_back(token);
    return static_cast<std::uint32_t>(model.tokens.size() - 1);
  }

  TemplateNode make_node(int id, TraceModel& model, std::size_t group,
                         std::vector<std::pair<std::string, RankExpr>>& used)
  {
    SlotObs& s = slots_[static_cast<std::size_t>(id)];
    // The rank that founded the template walks every position of it at least once.
    if (s.where.empty() || (s.kind != RolledNode::Kind::Call && s.count.empty()) ||
        (s.kind != RolledNode::Kind::Loop && s.request_back.empty()))
      throw InternalError("trace model: a template position of group " + std::to_string(group) +
                          " was never observed");
    TemplateNode t;
    t.kind  = s.kind;
    t.token = s.token;
    if (s.kind == RolledNode::Kind::Loop) {
      t.count = fit_quantity(s.count, true, s, "count", model, group);
      // A count that follows the process grid's shape (2 swaps per axis of extent > 1: 4 at 2x2x1, 6 at
      // 2x2x2 and 4x2x2) has no simple formula in Np: the regression interpolates it with three terms
      // that run away outside training. The grid-shape form wins where it is exact and shorter.
      if (auto g = fit_grid_formula(s.count.points());
          g && (not t.count.cv_error || *t.count.cv_error > 1e-9 || g->terms.size() < t.count.terms.size()))
        t.count = *g;
      for (const auto& [np_rank, by_nw] : s.count_by_np_rank_nw) {
        std::set<std::uint64_t> distinct;
        for (const auto& [nw, c] : by_nw)
          distinct.insert(c);
        if (distinct.size() > 1)
          t.nw_dependent = true;
      }
      std::vector<std::pair<std::string, RankExpr>> body_used;
      for (int c : s.children)
        append_node(t.body, c, model, group, body_used);
      return t;
    }
    if (s.kind == RolledNode::Kind::Poll) {
      t.count = fit_formula(s.count.points(), true);  // polling lengths vary by nature: their mean, no warning
      // Work done while polling: its total per construct (not per round: the number of rounds is the
      // timing's), regressed like measured compute (simplest formula near the best, few terms).
      if (s.any_library) {
        std::vector<FitPoint> pts = s.absorbed.points();
        t.absorbed_flops = fit_formula(pts, false, std::clamp(static_cast<int>(pts.size()) - 2, 1, 3), Parsimony{0.25, 0.01});
      }
    }
    t.peer = fit_ranks(s.peer, "peer", s, &used);
    t.src  = fit_ranks(s.src, "source", s, &used);
    t.root = fit_ranks(s.root, "root", s);
    if (tokens_[s.token].op == Op::CommSplit && tokens_[s.token].key == kVaryingKey)
      t.key = fit_ranks(s.key, "split key", s);
    if (tokens_[s.token].tag == kVaryingTag) {
      t.tag = s.tag.result();
      if (not t.tag)
        t.tag_formula = fit_tag_formula(s);
      if (not t.tag && not t.tag_formula)
        throw InputError({}, "no tag expression (a constant, or affine in a loop index) explains the tags of " +
                                 tokens_[s.token].function + " (first seen at " + s.where + ")");
    }
    if (s.any_bytes)
      t.bytes = fit_quantity(s.bytes, true, s, "bytes", model, group);
    if (s.any_recv_bytes)
      t.recv_bytes = fit_quantity(s.recv_bytes, true, s, "recv_bytes", model, group);
    // Compute: the site's mean work at each training point, regressed on (Nw, Np) (the first step of the
    // latency model; the ratio is fitted per function once every group is done). Reduction flops alike.
    if (s.any_flops) {
      // Measured work is noisy: the simplest formula within 25 % (+1 point) of the best leave-one-out
      // error, with at least two points more than terms (three terms on four noisy points, or a cubic
      // that fits noise best, run away outside the training range). Declared flops are exact anyway.
      const bool compute   = tokens_[s.token].op == Op::Compute;
      std::vector<FitPoint> pts = compute ? s.compute_flops.points() : s.flops.points();
      const int max_terms  = compute ? std::clamp(static_cast<int>(pts.size()) - 2, 1, 3) : 3;
      t.flops = fit_formula(pts, false, max_terms, compute ? Parsimony{0.25, 0.01} : Parsimony{});
      s.fitted_flops = t.flops;
    }
    if (s.any_seconds)
      t.seconds = fit_formula(s.seconds.points(), false);
    // A communicator of one rank has no "other" entry: then the counts are the rank's own.
    if (s.any_counts)
      t.counts = fit_quantity(s.counts.empty() ? s.counts_self : s.counts, true, s, "counts", model, group);
    if (s.counts_self_differs)
      t.counts_self = fit_formula(s.counts_self.points(), true);
    if (s.any_recv_counts)
      t.recv_counts =
          fit_quantity(s.recv_counts.empty() ? s.recv_counts_self : s.recv_counts, true, s, "recv_counts", model, group);
    if (s.recv_counts_self_differs)
      t.recv_counts_self = fit_formula(s.recv_counts_self.points(), true);
    if (s.request_back.size() > 1 || s.requests_back.size() > 1)
      throw InputError({}, "the requests completed by " + tokens_[s.token].function + " (first seen at " + s.where +
                               ") are not the same relative to the requests created before it in every iteration");
    t.request_back  = *s.request_back.begin();
    t.requests_back = *s.requests_back.begin();
    return t;
  }

  /// A group's observations, before anything is fitted.
  struct GroupData {
    TraceGroup group;
    std::vector<SlotObs> slots;
    std::vector<int> top;
  };

  /// The latency model's second step, per function: the ratio of each call's work to its site's mean,
  /// from the call's context, by a random forest over every site of the function; the errors of the two
  /// steps together; the histogram of the calls around their predicted work.
  void fit_latency(TraceModel& model, const std::vector<GroupData>& data)
  {
    struct Site {
      const SlotObs* slot;
    };
    std::map<std::string, std::vector<Site>> by_function;
    for (const GroupData& d : data)
      for (const SlotObs& s : d.slots)
        if (s.kind == RolledNode::Kind::Call && model.tokens[s.token].op == Op::Compute && not s.cells.empty())
          by_function[model.tokens[s.token].function].push_back({&s});
    // Errors with 6 significant digits, and rounding noise (below 1e-12) as 0: model.json must not depend
    // on the last bits of a floating-point sum.
    auto round_sig = [](double v) {
      if (std::abs(v) < 1e-12)
        return 0.0;
      if (not std::isfinite(v))
        return v;
      double scale = std::pow(10.0, 5 - std::floor(std::log10(std::abs(v))));
      return std::round(v * scale) / scale;
    };
    for (const auto& [function, sites] : by_function) {
      FunctionLatency fl;
      fl.function = function;
      fl.sites    = static_cast<int>(sites.size());
      std::vector<RatioSample> samples;
      struct Obs {
        double mean_pred, mean_loo, observed;
        bool has_loo;
      };
      std::vector<Obs> obs;  // parallel to samples
      std::vector<double> multipliers;
      for (const Site& site : sites) {
        const SlotObs& s = *site.slot;
        std::map<std::pair<double, double>, double> site_mean;
        std::vector<FitPoint> pts = s.compute_flops.points();
        for (const FitPoint& p : pts)
          site_mean[{p.nw, p.np}] = p.value;
        std::map<std::pair<double, double>, std::optional<double>> loo;
        if (s.fitted_flops) {
          std::vector<std::optional<double>> l = loo_predictions(*s.fitted_flops, pts);
          for (std::size_t i = 0; i < pts.size(); ++i)
            loo[{pts[i].nw, pts[i].np}] = l[i];
        }
        std::map<std::tuple<std::size_t, int, int>, double> cell_mean;
        for (const auto& [key, sum_calls] : s.cells) {
          const auto& [profile, inner, outer] = key;
          const RunInfo& info = profiles_[profile].info;
          const std::pair<double, double> point{info.nw, static_cast<double>(info.np)};
          const double mean = sum_calls.first / static_cast<double>(sum_calls.second);
          cell_mean[key] = mean;
          fl.calls += sum_calls.second;
          const double smean = site_mean[point];
          if (not(smean > 0) || not(mean > 0))
            continue;
          RatioSample rs;
          rs.context              = s.context;
          rs.context.inner_bucket = inner;
          rs.context.outer_bucket = outer;
          rs.ratio                = mean / smean;
          rs.calls                = sum_calls.second;
          samples.push_back(rs);
          const double pred = s.fitted_flops ? s.fitted_flops->eval(point.first, point.second) : 0.0;
          const std::optional<double> l = loo[point];
          obs.push_back({pred, l.value_or(pred), mean, l.has_value()});
        }
        for (const auto& [profile, inner, outer, work] : s.reservoir) {
          double m = cell_mean[{profile, inner, outer}];
          if (m > 0)
            multipliers.push_back(work / m);
        }
      }
      if (samples.empty()) {  // calls without work (zero flops, no duration)
        model.latency.push_back(std::move(fl));
        continue;
      }
      const bool constant = std::all_of(samples.begin(), samples.end(),
                                        [](const RatioSample& r) { return std::abs(r.ratio - 1.0) <= 1e-9; });
      std::vector<double> ratio_pred(samples.size(), 1.0), ratio_oob(samples.size(), 1.0);
      if (not constant) {
        fl.ratio         = train_ratio_forest(samples, opt_.forest, ratio_oob);
        fl.ratio_samples = std::min(samples.size(), opt_.forest.max_samples);
        double tr = 0, ob = 0, w = 0;
        for (std::size_t i = 0; i < samples.size(); ++i) {
          ratio_pred[i] = fl.ratio->eval(samples[i].context.features());
          const auto c  = static_cast<double>(samples[i].calls) * obs[i].observed;  // work-weighted
          tr += c * std::abs(ratio_pred[i] - samples[i].ratio) / samples[i].ratio;
          ob += c * std::abs(ratio_oob[i] - samples[i].ratio) / samples[i].ratio;
          w += c;
        }
        fl.ratio_train_error = round_sig(tr / w);
        fl.ratio_oob_error   = round_sig(ob / w);
      }
      // Weighted by work: a call of a microsecond mispredicted by 100 % matters less than a long one
      // by 10 %; this is the relative error of the function's time, summed over its calls.
      double tr = 0, cv = 0, w = 0;
      bool all_loo = true;
      for (std::size_t i = 0; i < samples.size(); ++i) {
        const auto c = static_cast<double>(samples[i].calls);
        tr += c * std::abs(obs[i].mean_pred * ratio_pred[i] - obs[i].observed);
        cv += c * std::abs(obs[i].mean_loo * ratio_oob[i] - obs[i].observed);
        w += c * obs[i].observed;
        all_loo = all_loo && obs[i].has_loo;
      }
      fl.train_error = round_sig(tr / w);
      if (all_loo)
        fl.cv_error = round_sig(cv / w);
      fl.variability = Histogram::from_values(std::move(multipliers), opt_.variability_bins);
      // Noise below a part per million is rounding in the recording, not variability.
      if (not fl.variability.empty() && fl.variability.edges.back() - fl.variability.edges.front() < 1e-6)
        fl.variability = Histogram{};
      model.latency.push_back(std::move(fl));
    }
  }


  static std::string expr_key(const RankExpr& e)
  {
    return std::string(e.kind_name()) + "/" + std::to_string(e.a) + "/" + std::to_string(e.level) + "/" +
           std::to_string(e.dims) + "/" + std::to_string(e.dim) + "/" + std::to_string(e.block) + "/" +
           (e.reversed ? "r" : "f") + (e.all_axes ? "a" : "s") + (e.there_and_back ? "t" : "");
  }
  static std::string support_key(std::uint32_t token, const char* field)
  {
    return std::to_string(token) + "/" + field;
  }

  /// For each (token, field), how many positions of all groups each expression explains. A group seen
  /// at one Np only cannot tell a grid neighbour from a rank offset; the same call in groups seen at
  /// several Np can, and the call is the same code in every group.
  void count_support(const std::vector<GroupData>& data)
  {
    support_.clear();
    for (const GroupData& d : data)
      for (const SlotObs& s : d.slots) {
        auto add = [&](const RankSeries& series, const char* field) {
          if (series.seen)
            for (const RankExpr& e : series.result())
              ++support_[support_key(s.token, field)][expr_key(e)];
        };
        add(s.peer, "peer");
        add(s.src, "source");
        add(s.root, "root");
        add(s.key, "split key");
      }
  }

  GroupData collect_group(TraceModel& model, const std::vector<RolledNode>& templ, std::size_t g)
  {
    tokens_ = model.tokens;
    slots_.clear();
    loop_counter_ = 0;
    TraceGroup group;
    std::vector<int> top = build_slots(templ);
    for (std::size_t p = 0; p < profiles_.size(); ++p) {
      std::vector<int> exact;
      for (int r = 0; r < static_cast<int>(profiles_[p].ranks.size()); ++r) {
        const RankTrace& rt = profiles_[p].ranks[static_cast<std::size_t>(r)];
        if (rt.group != static_cast<int>(g))
          continue;
        if (not rt.exact) {
          ++group.approximate_members;
          continue;
        }
        exact.push_back(r);
        std::vector<std::uint32_t> tokens;
        read_tokens({p, r}, tokens);
        const std::vector<std::uint32_t> roles = roles_of(tokens);
        CallCursor cursor(*this, profiles_[p], r);
        WalkState w{p, r, profiles_[p].info.np, profiles_[p].info.nw, &cursor, &rt.decisions, &roles, 0, {}, g, {}};
        walk(templ, top, w);
        if (not cursor.at_end())
          changed(w);
      }
      if (not exact.empty())
        group.members.push_back(profiles_[p].label + ": ranks " + ranks_text(exact));
    }
    return GroupData{std::move(group), std::move(slots_), std::move(top)};
  }

  FitOptions opt_;
  detail::NumberedScan numbered_;
  detail::AxisScan axis_;
  std::vector<LoadedProfile> profiles_;
  std::vector<bool> repeated_;  // by profile: its (Nw, Np) has kInstanceProfiles profiles or more
  std::map<CallToken, std::uint32_t> token_ids_;
  std::vector<CallToken> token_list_;
  std::vector<bool> poll_token_;     // by provisional id
  std::vector<bool> burst_token_;    // by provisional id: compute bursts a polling construct absorbs
  std::vector<bool> burst_model_;    // the same by model id
  std::vector<bool> work_token_;     // by provisional id: compute calls (bursts and library functions)
  std::vector<bool> poll_model_;     // polling tokens by model id
  FoldOptions model_fold_;           // the fold options with model ids
  std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>> rounds_;  // provisional ids
  std::map<PollFollower, std::uint64_t> followers_;                         // provisional ids
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::vector<std::uint32_t>>> leftover_;
  std::vector<std::uint32_t> remap_;  // provisional id -> model id
  std::vector<CallToken> tokens_;  // the model's (sorted) tokens while fitting groups
  std::vector<SlotObs> slots_;
  int loop_counter_ = 0;
  std::set<std::string> varying_tag_functions_;
  std::map<std::tuple<std::string, int, int>, std::set<std::set<std::int32_t>>> tag_sets_;  // (fn, np, rank)
  std::set<std::string> varying_key_functions_;
  std::map<std::string, std::map<std::string, int>> support_;
};

}  // namespace

const FunctionLatency* TraceModel::latency_of(const std::string& function) const
{
  for (const FunctionLatency& f : latency)
    if (f.function == function)
      return &f;
  return nullptr;
}

const NumberedLoop* TraceModel::numbered_of(std::uint32_t token) const
{
  for (const NumberedLoop& l : numbered)
    if (l.placeholder == token)
      return &l;
  return nullptr;
}

const AxisSweep* TraceModel::axis_sweep_of(std::uint32_t token) const
{
  for (const AxisSweep& a : axis_sweeps)
    if (a.placeholder == token)
      return &a;
  return nullptr;
}

const TreeSequence* TraceModel::tree_of(std::uint32_t token) const
{
  for (const TreeSequence& t : trees)
    if (t.placeholder == token)
      return &t;
  return nullptr;
}

TraceModel fit_trace_model(const std::vector<std::filesystem::path>& profiles, const FitOptions& options)
{
  Fitter f(profiles, options);
  try {
    return f.run();
  } catch (const InputError&) {
    // A code whose calls along an axis depend on the axis' extent (LAMMPS' CommBrick) gives every shape
    // of the process grid other templates, which the plain model cannot express: fitted again with axis
    // sweeps cut out. Only then, so that every model the plain fit expresses stays byte for byte the
    // same; where no sweep is found the plain fit's error stands.
    if (options.axis_sweeps == FitOptions::AxisSweeps::Off || not grid_shapes_differ(profiles))
      throw;
    Fitter again(profiles, options, true);
    if (not again.has_axis_sweeps())
      throw;
    return again.run();
  }
}

}  // namespace gridcast::models::trace
