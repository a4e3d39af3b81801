// The trace fit's per-position parameter fits: each template position of a group, from what the walk
// observed there (SlotObs), becomes a TemplateNode: loop counts, sizes, peers, roots, tags, requests and
// compute amounts as formulas of (Nw, Np) or rank expressions. Internal to the models library.
#pragma once

#include "trace_fit_walk.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::models::trace::detail {

/// Measured time or work is noisy: the simplest formula within 25 % (+1 point) of the best leave-one-out
/// error, with at least two points more than terms.
Formula fit_measured(const std::vector<FitPoint>& pts);

/// Fits the templates of every group into `model` (its tokens and training points set; new tokens the
/// templates need are appended to model.tokens, warnings to model.warnings).
class TemplateFitter {
public:
  /// `data`: every group's observations (count_support reads all of them: the same call is the same
  /// code in every group).
  TemplateFitter(TraceModel& model, const std::vector<GroupData>& data);
  /// The template of group `g` from its observations; the slots' fitted_flops are set (latency model).
  TraceGroup fit_group(GroupData& data, std::size_t g);

private:
  using UsedExprs = std::vector<std::pair<std::string, RankExpr>>;
  void append_node(std::vector<TemplateNode>& body, int id, UsedExprs& used);
  TemplateNode make_node(int id, UsedExprs& used);
  void fit_loop(SlotObs& s, TemplateNode& t);
  void fit_call_ranks(SlotObs& s, TemplateNode& t, UsedExprs& used);
  void fit_amounts(SlotObs& s, TemplateNode& t);
  void fit_library(const SlotObs& s, TemplateNode& t);
  std::vector<LibraryPricing> fit_absorbed_library(const SlotObs& s) const;
  Formula fit_quantity(const Series& series, bool integer, SlotObs& s, const char* field, TemplateNode& t,
                       bool per_rank = false);
  void warn_mean_of_spread(const SlotObs& s, const char* field);
  void note_data_dependent_count(const SlotObs& s, TemplateNode& t);
  Formula fit_compute(const SlotObs& s) const;
  std::optional<RoleScale> fit_role_scale(const SlotObs& s) const;
  std::optional<TemplateNode::RootWork> fit_root_work(const SlotObs& s) const;
  std::optional<RankExpr> fit_ranks(const RankSeries& series, const char* field, const SlotObs& s,
                                    UsedExprs* used = nullptr);
  void count_support(const std::vector<GroupData>& data);
  std::optional<Formula> sibling_formula(const SlotObs& s, const char* field, const std::vector<FitPoint>& points,
                                         bool integer) const;

  TraceModel& model_;
  const std::vector<CallToken> tokens_;  ///< the model's tokens of the recorded calls (before any is appended)
  std::vector<SlotObs>* slots_ = nullptr;  ///< of the group being fitted
  std::size_t group_ = 0;
  /// Counts and sizes must stay plausible up to these multiples of the largest training Nw and Np (the
  /// targets predictions are asked for: 2x the size, 4-8x the ranks).
  static constexpr double kPlausibleNw = 4;
  static constexpr double kPlausibleNp = 8;
  PlausibleRange plausible_;
  /// What fit_ranks approximated for the position being fitted.
  std::vector<Approximation> approximated_;
  /// (token, field) -> expression -> positions of all groups it explains.
  std::map<std::string, std::map<std::string, int>> support_;
  /// (token, field) -> every group's positions of that call with that quantity ("bytes", "recv_bytes",
  /// "flops" of a compute site), in group and slot order: sibling_formula's candidates.
  std::map<std::pair<std::uint32_t, std::string>, std::vector<const SlotObs*>> siblings_;
};

}  // namespace gridcast::models::trace::detail
