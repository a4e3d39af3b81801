// The trace fit's grouping: every rank's rolled trace matched against the templates of the groups found
// so far (exact members, approximate members within the Myers threshold, or the founder of a new group),
// and the rule that says which ranks run which group at any (Nw, Np). Internal to the models library.
#pragma once

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/trace_rules.hpp"
#include "trace_fit_read.hpp"

#include <cstddef>
#include <vector>

namespace gridcast::models::trace::detail {

/// Renumbers every rank's rolled trace into model ids (ProfileReader::assign_model_ids first), then puts
/// every rank into a group: RankTrace::group, exact and decisions are set. Returns each group's founder,
/// whose rolled trace is the group's template.
/// `backtracking`: a rank whose calls the greedy reading of a template does not match is matched again
/// with backtracking (match_template_backtracking); the fit's retry with folding by coverage uses it.
/// `same_class`: a second assignment (FitOptions::split_by_class) in which a rank joins only a group founded
/// by a rank of its class under this classifier; every rank's group is assigned afresh.
std::vector<RankRef> assign_groups(ProfileReader& reader, double threshold, bool backtracking = false,
                                   const RankClassifier* same_class = nullptr);

/// The rule that gives each rank its group at any (Nw, Np), inferred from the groups of the training
/// ranks. An InputError says which branch of the code cannot be expressed; `sweeps_found` is the number
/// of axis sweeps cut out (the note on grids of different shapes names it).
/// No rank-to-group rule fits because the profiles of one Np put the same rank in different groups: a
/// code path that depends on Nw. fit_trace_model then fits the sizes that agree (NwBranchError::what is
/// the full message).
class NwBranchError : public gridcast::InputError {
public:
  using gridcast::InputError::InputError;
};

GroupRule infer_rule(const std::vector<LoadedProfile>& profiles, std::size_t sweeps_found);


/// "0-3, 5": ranks in ascending order as ranges.
std::string ranks_text(const std::vector<int>& ranks);

}  // namespace gridcast::models::trace::detail
