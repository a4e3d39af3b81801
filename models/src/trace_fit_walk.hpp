// The trace fit's second reading of every exact member of a group: its calls walked along the group's
// template, position by position (a SlotObs per template position), collecting what each position's
// parameters were at every training point. Nothing is fitted here (trace_fit_params.cpp does).
// Internal to the models library.
#pragma once

#include "gridcast/models/library_cost.hpp"
#include "gridcast/models/trace_block.hpp"
#include "gridcast/models/trace_rules.hpp"
#include "latency_fit.hpp"
#include "trace_fit_read.hpp"
#include "trace_fit_series.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gridcast::models::trace::detail {

struct CallParams;

/// A quantity's value per rank of each profile, for a position whose values differ between ranks as
/// their blocks do (BlockShare). A rank's calls that took several values (a size that changes with the
/// iteration) leave it without one: then no rank of the profile gives a point.
struct RankValues {
  struct Profile {
    double nw = 0;
    int np = 0;
    std::vector<std::pair<double, double>> range;  ///< by rank: (lo, hi); NaN: no call
  };
  std::map<std::size_t, Profile> profiles;
  void note(std::size_t profile, double nw, int np, int rank, double v)
  {
    Profile& p = profiles[profile];
    if (p.range.empty()) {
      p.nw = nw;
      p.np = np;
      p.range.assign(static_cast<std::size_t>(np), {std::nan(""), std::nan("")});
    }
    auto& [lo, hi] = p.range[static_cast<std::size_t>(rank)];
    if (std::isnan(lo)) {
      lo = hi = v;
    } else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  /// Whether two ranks of one profile, or two calls of one rank, had different values.
  bool differ() const
  {
    for (const auto& [profile, p] : profiles) {
      double first = std::nan("");
      for (const auto& [lo, hi] : p.range) {
        if (std::isnan(lo))
          continue;
        if (std::isnan(first))
          first = lo;
        if (lo != first || hi != first)
          return true;
      }
    }
    return false;
  }
  /// One point per rank with calls, or none where some rank's calls differed.
  std::vector<RankFitPoint> points() const
  {
    std::vector<RankFitPoint> out;
    for (const auto& [profile, p] : profiles)
      for (std::size_t r = 0; r < p.range.size(); ++r) {
        const auto& [lo, hi] = p.range[r];
        if (std::isnan(lo))
          continue;
        if (lo != hi)
          return {};
        out.push_back({p.nw, p.np, static_cast<int>(r), lo});
      }
    return out;
  }
};

/// Everything observed at one template position, over every exact member of the group.
struct SlotObs {
  RolledNode::Kind kind = RolledNode::Kind::Call;
  std::uint32_t token = 0;
  std::vector<int> children;  ///< Loop: slot ids of the body
  bool counts_vary = false;   ///< Loop: folded by body, its instances' counts differed (FoldOptions::counts_follow_data)

  Series count;
  Series tag_values;  ///< varying tags: for a tag constant within each run (tag_formula)
  /// Poll: the work of the compute each construct absorbed (per profile: see ProfileSeries), and whether
  /// any of it was a library call.
  ProfileSeries absorbed;
  bool any_library = false;
  /// Poll: the absorbed work that is not priced from arguments (the bursts between the polls), kept as
  /// `absorbed` is; what the absorbed library calls' arguments say is `absorbed_library` (below).
  ProfileSeries absorbed_unpriced;
  std::map<std::pair<int, int>, std::map<double, std::uint64_t>> count_by_np_rank_nw;
  RankSeries peer, src, root, key, color;
  SlotObs()
  {
    key.coordinates   = true;
    color.coordinates = true;
  }
  TagFitter tag;
  Series bytes, recv_bytes, flops, seconds, counts, recv_counts;
  /// The same per rank, for a BlockShare (compute sites: their work).
  RankValues rank_bytes, rank_recv_bytes, rank_work;
  /// Compute sites: their measured work per profile (the median of the runs at a point, as `absorbed`;
  /// `flops` holds the declared work of reductions).
  ProfileSeries compute_flops;
  /// Compute sites: work and calls per profile and role of the rank (0 first, 1 last, 2 the others), at
  /// 3 * profile + role, for the role factors (RoleScale). A vector: every compute call adds to it.
  std::vector<std::pair<double, std::uint64_t>> role_work;
  /// Compute sites after a rooted collective: per profile, the work and calls of the ranks that were the
  /// last rooted collective's root ([0]) and of the others ([1]), for RootWork.
  struct RootRole {
    double nw = 0, np = 0;
    std::array<double, 2> work{};
    std::array<std::uint64_t, 2> calls{};
    int first_root = -1;     ///< the root of the first such call
    bool rotates   = false;  ///< another call followed another root
  };
  std::map<std::size_t, RootRole> root_role;
  /// Compute sites: some call's work was timed on a real machine (seconds, not flops, outside SMPI's
  /// simulated time): noisy, fitted so (fit_compute).
  bool measured_work = false;
  Series counts_self, recv_counts_self;  ///< v-collectives: the entry of the rank itself
  /// v-collectives on a communicator other than the world: its size (the length of the counts).
  Series comm_size;
  bool any_bytes = false, any_recv_bytes = false, any_flops = false, any_seconds = false, any_counts = false,
       any_recv_counts = false, counts_self_differs = false, recv_counts_self_differs = false;
  /// v-collectives whose per-peer counts differ between the other ranks: the largest relative
  /// difference of one from their mean (0: one count for every other rank).
  double counts_uneven = 0, recv_counts_uneven = 0;
  std::set<std::int64_t> request_back;
  std::set<std::vector<std::int64_t>> requests_back;
  /// A waitall that did not complete every pending request at least once (false: it always did).
  bool some_not_all_pending = false;
  /// Integer quantities that took several values in one profile: (field, profile) -> (min, max).
  /// (field, profile) -> value range. Fields are string literals: a view orders like the string, no copy.
  std::map<std::pair<std::string_view, std::size_t>, std::pair<double, double>> spread;
  std::string where;  ///< first member's profile and rank, for messages
  /// Sizes inside loops, a few per profile (kIterSamples) with the indices of every enclosing loop: what
  /// tells a size that changes geometrically with one loop's index (a V-cycle's messages, halved per
  /// level) from one that differs between ranks. Only the first kIterSamples of each profile are kept:
  /// memory does not grow with the calls.
  struct IterSample {
    std::size_t profile = 0;
    double nw = 0, np = 0;
    std::vector<std::uint64_t> loop;  ///< outermost first, as WalkState::loop
    double value = 0;
  };
  static constexpr std::size_t kIterSamples = 64;
  std::vector<IterSample> bytes_iter, recv_bytes_iter;

  /// Compute sites of a library function: what its calls' recorded arguments say, per training point.
  struct LibraryObs {
    struct Point {
      std::uint64_t calls = 0;
      double work = 0;           ///< sum of the calls' work (the kernel's unit)
      double work_x_bytes = 0;   ///< sum of work x working set: the work-weighted mean working set
      double observed = 0;       ///< sum of the calls' measured work in flops
      double curve = 0;          ///< sum of the calls' price on the rate curve at their own working set, in flops
      /// (profile, rank) -> (observed, curve) of that rank's calls in that run: the scale's lower envelope.
      std::map<std::pair<std::size_t, int>, std::pair<double, double>> runs;
    };
    std::string kernel;
    std::string missing;  ///< why the site cannot be priced from arguments (first reason seen); empty: it can
    std::map<std::pair<double, double>, Point> points;  ///< by (Nw, Np)
  };
  LibraryObs library;
  /// Poll: the library calls its constructs absorbed, by kernel and training point, and the constructs at
  /// each point (the mean per construct is the work a construct does, whatever the rounds).
  struct AbsorbedLibrary {
    std::map<std::string, std::map<std::pair<double, double>, LibraryObs::Point>> kernels;
    std::map<std::pair<double, double>, std::uint64_t> constructs;
    std::string missing;  ///< why the absorbed work cannot be priced from arguments; empty: it can
  };
  AbsorbedLibrary absorbed_library;
  // Latency model (compute calls): the call's context and its work per (profile, progress buckets).
  int loop_ordinal = -1;  ///< Loop: pre-order number among the group's loops
  ComputeCalls compute;   ///< Compute: its calls, for the latency model's ratio and variability
  std::optional<Formula> fitted_flops;  ///< the site mean formula, once fitted
};

/// A group's observations, before anything is fitted.
struct GroupData {
  TraceGroup group;            ///< members filled in; the body is fitted later
  std::vector<SlotObs> slots;  ///< by slot id
  std::vector<int> top;        ///< slot ids of the template's top-level nodes
};

/// Walks the exact members of each group along the group's template.
class GroupCollector {
public:
  /// `tokens`: the model's tokens (model ids), as the reader's tables give them.
  /// `library_rates`: the kernels that have a rate curve (a library site of another kernel is regressed).
  GroupCollector(const ProfileReader& reader, const std::vector<CallToken>& tokens, const KernelRates& library_rates)
      : reader_(reader), tokens_(tokens), library_rates_(library_rates)
  {
  }
  /// The observations of group `g`, whose template is `templ`.
  GroupData collect(const std::vector<RolledNode>& templ, std::size_t g);

private:
  struct WalkState;
  std::vector<int> build_slots(const std::vector<RolledNode>& nodes);
  void walk(const std::vector<RolledNode>& nodes, const std::vector<int>& ids, WalkState& w);
  void walk_call(const RolledNode& n, SlotObs& s, std::size_t k, WalkState& w);
  void walk_poll(const RolledNode& n, SlotObs& s, std::size_t k, WalkState& w);
  void walk_loop(const RolledNode& n, SlotObs& s, WalkState& w);
  void observe_call(SlotObs& s, WalkState& w, const CallParams& c, std::size_t position);
  void observe_compute(SlotObs& s, WalkState& w, const CallParams& c, std::size_t position);
  void observe_library(SlotObs& s, const WalkState& w, const CallParams& c, double work);
  double absorb(SlotObs& s, const WalkState& w, std::uint32_t token, const CallParams& c, double work);
  std::string unpriceable(const std::string& kernel, const std::optional<LibraryCost>& cost, const WalkState& w) const;
  void add_library_call(SlotObs::LibraryObs::Point& p, const WalkState& w, const LibraryCost& cost,
                        const std::string& kernel, double work);
  [[noreturn]] void changed(const WalkState& w) const;

  const ProfileReader& reader_;
  const std::vector<CallToken>& tokens_;
  const KernelRates& library_rates_;
  std::vector<SlotObs> slots_;
  int loop_counter_ = 0;
};

}  // namespace gridcast::models::trace::detail
