// Grouping the training ranks by their rolled traces, and inferring the group rule.
#include "trace_fit_group.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <dtl/dtl.hpp>

#include <array>
#include <map>
#include <set>
#include <span>
#include <string>

namespace gridcast::models::trace::detail {

namespace {

/// Matches `t[pos...]` against a template read as a regular expression: a loop is its body repeated any
/// number of times (0 included), greedily, an iteration that does not match in full being undone. `t` is
/// the rank's calls with each polling construct as one element, its poll's token (compact_calls). Appends each loop instance's iteration count to
/// `decisions` (pre-order of execution). Returns false on a mismatch (pos is then meaningless).
bool match_template(std::span<const RolledNode> nodes, const std::vector<std::uint32_t>& t, std::size_t& pos,
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

/// match_template without its greedy shortcut: the template as a regular expression matched against all of
/// `t` with backtracking, each loop taking as many iterations as lets the rest match (the most first, as
/// the greedy reading does). Greedy matching fails where a loop body can match with an inner loop at no
/// iteration: a V-cycle's smoothing `(L4 c)x2 c` read at a size with one level takes a third "iteration"
/// of `(L4 c)` that is only the `c` after it. Appends the decisions, as match_template does. Gives up (false)
/// after a budget of steps proportional to `t`.
bool match_template_backtracking(std::span<const RolledNode> root, const std::vector<std::uint32_t>& t,
                                 std::vector<std::uint64_t>& decisions)
{
  struct Frame {
    std::span<const RolledNode> nodes;
    std::size_t idx;
    std::size_t slot;   // the loop's entry in `decisions`
    std::uint64_t k;    // iterations done
    std::size_t start;  // where the current iteration began in `t`
  };
  struct Choice {
    std::vector<Frame> frames;
    std::size_t pos;
    std::size_t decisions_size;
    bool exit;  // true: leave the loop on top after its k iterations; false: skip the loop at top's idx
  };
  std::vector<Frame> frames{{root, 0, 0, 0, 0}};
  std::vector<Choice> choices;
  std::size_t pos = 0;
  auto backtrack = [&]() {
    if (choices.empty())
      return false;
    Choice c = std::move(choices.back());
    choices.pop_back();
    frames = std::move(c.frames);
    pos    = c.pos;
    decisions.resize(c.decisions_size);
    if (c.exit) {
      decisions[frames.back().slot] = frames.back().k;
      frames.pop_back();
    } else {
      decisions.push_back(0);
    }
    ++frames.back().idx;
    return true;
  };
  for (std::uint64_t budget = 16 * static_cast<std::uint64_t>(t.size()) + 100000; budget > 0; --budget) {
    Frame& f = frames.back();
    if (f.idx == f.nodes.size()) {
      if (frames.size() == 1) {
        if (pos == t.size())
          return true;
      } else if (pos > f.start) {  // an iteration that matched calls: another one, else leave the loop
        ++f.k;
        choices.push_back({frames, pos, decisions.size(), true});
        frames.back().idx   = 0;
        frames.back().start = pos;
        continue;
      }
      if (not backtrack())
        return false;
      continue;
    }
    const RolledNode& n = f.nodes[f.idx];
    if (n.kind != RolledNode::Kind::Loop) {
      if (pos < t.size() && t[pos] == n.token) {
        ++pos;
        ++f.idx;
      } else if (not backtrack()) {
        return false;
      }
      continue;
    }
    choices.push_back({frames, pos, decisions.size(), false});
    const std::size_t slot = decisions.size();
    decisions.push_back(0);
    frames.push_back({n.body, 0, slot, 0, pos});
  }
  return false;
}

/// The iteration count of every loop instance of a rolled trace, in the order match_template writes them.
void fold_decisions(std::span<const RolledNode> nodes, std::vector<std::uint64_t>& decisions)
{
  for (const RolledNode& n : nodes)
    if (n.kind == RolledNode::Kind::Loop) {
      decisions.push_back(n.count);
      for (std::uint64_t i = 0; i < n.count; ++i)
        fold_decisions(n.body, decisions);
    }
}

/// The calls (polling constructs as one element each, as compact_calls gives them) that rolled nodes
/// expand to.
void expand_calls(std::span<const RolledNode> nodes, std::vector<std::uint32_t>& out)
{
  for (const RolledNode& n : nodes)
    if (n.kind == RolledNode::Kind::Loop)
      for (std::uint64_t i = 0; i < n.count; ++i)
        expand_calls(n.body, out);
    else
      out.push_back(n.token);
}

/// The decisions of a rank that matches a template it is not the same shape as (a loop that ran once at
/// this size, a read loop whose count follows the input), with its own loop counts wherever it can. The
/// top-level nodes of both are aligned by their count-free shapes (Myers, via dtl). A node aligned with
/// one of the same shape keeps the counts the rank's own folding found; each stretch between aligned
/// nodes is matched (greedily, else with backtracking where `backtracking`) against the calls the rank's
/// nodes there expand to. A stretch that does not match gives up the alignment before it (a node dtl
/// paired with the wrong one of two equal candidates) and is matched again with the stretch before it,
/// until none is left before it; then the one after it goes. False when nothing matches, or past a
/// budget of calls matched proportional to the rank's.
/// Why the greedy reading of the whole rank is not enough: a run that folding split across a loop's
/// boundary, `(A)x240 ((A)x6 M (A)x2)x235` (CP2K's eight Allreduce calls a step, folded from the middle
/// of the run), reads greedily as `(A)x8 M` in the first iteration and `M (A)x8` in the others. The two
/// inner counts then come out 6 and 2 at the founder's size and 8/235 and 8 at another, and their fit
/// diverges: twice CP2K's Allreduce calls at 4x the largest training size.
bool match_aligned(const std::vector<RolledNode>& tmpl, const std::vector<RolledNode>& own,
                   std::vector<std::uint64_t>& decisions, bool backtracking)
{
  std::map<std::vector<std::int64_t>, std::int64_t> ids;
  auto keys = [&](const std::vector<RolledNode>& nodes) {
    std::vector<std::int64_t> k;
    k.reserve(nodes.size());
    for (const RolledNode& n : nodes)
      k.push_back(ids.emplace(shape_of(std::span<const RolledNode>(&n, 1)), static_cast<std::int64_t>(ids.size()))
                      .first->second);
    return k;
  };
  const std::vector<std::int64_t> a = keys(tmpl), b = keys(own);
  dtl::Diff<std::int64_t, std::vector<std::int64_t>> diff(a, b);
  diff.compose();
  struct Anchor {
    std::size_t t, o;             // aligned (template node, rank node); the last is past both ends
    std::size_t decisions = 0;    // decisions.size() where the stretch after the previous anchor starts
  };
  std::vector<Anchor> anchors;
  for (const auto& [key, info] : diff.getSes().getSequence())
    if (info.type == dtl::SES_COMMON)
      anchors.push_back({static_cast<std::size_t>(info.beforeIdx - 1), static_cast<std::size_t>(info.afterIdx - 1)});
  anchors.push_back({tmpl.size(), own.size()});
  const std::span<const RolledNode> t(tmpl), o(own);
  std::uint64_t budget = 16 * expanded_size(own) + 100000;
  std::vector<std::uint32_t> calls;
  std::vector<std::uint64_t> part;
  decisions.clear();
  for (std::size_t k = 0; k < anchors.size();) {
    const std::size_t ti = k == 0 ? 0 : anchors[k - 1].t + 1, oi = k == 0 ? 0 : anchors[k - 1].o + 1;
    anchors[k].decisions = decisions.size();
    const Anchor& end = anchors[k];
    if (end.t > ti || end.o > oi) {
      calls.clear();
      expand_calls(o.subspan(oi, end.o - oi), calls);
      if (calls.size() > budget)
        return false;
      budget -= calls.size();
      std::size_t pos = 0;
      part.clear();
      const auto stretch = t.subspan(ti, end.t - ti);
      bool ok = match_template(stretch, calls, pos, part) && pos == calls.size();
      if (not ok && backtracking) {
        part.clear();
        ok = match_template_backtracking(stretch, calls, part);
      }
      if (not ok) {
        if (k + 1 == anchors.size() && k == 0)
          return false;
        // Give up the anchor before the stretch (else the one after it) and match the wider stretch.
        const std::size_t drop = k > 0 ? k - 1 : k;
        decisions.resize(anchors[drop].decisions);
        anchors.erase(anchors.begin() + static_cast<std::ptrdiff_t>(drop));
        k = drop;
        continue;
      }
      decisions.insert(decisions.end(), part.begin(), part.end());
    }
    if (end.t < tmpl.size())
      fold_decisions(o.subspan(end.o, 1), decisions);
    ++k;
  }
  return true;
}

/// The decisions of a rank whose own fold has loops of varying counts (RolledNode::counts_vary), which
/// fold_decisions cannot read: its calls matched against `tmpl`, greedily, else with backtracking.
bool match_whole(const std::vector<RolledNode>& tmpl, const std::vector<std::uint32_t>& tokens,
                 std::vector<std::uint64_t>& decisions)
{
  std::size_t pos = 0;
  decisions.clear();
  if (match_template(tmpl, tokens, pos, decisions) && pos == tokens.size())
    return true;
  decisions.clear();
  return match_template_backtracking(tmpl, tokens, decisions);
}

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

/// Renumbers every rolled trace into model ids (once: `renumber`) and gives each rank the index of its
/// distinct shape.
std::vector<std::vector<std::int64_t>> number_shapes(ProfileReader& reader, bool renumber)
{
  std::map<std::vector<std::int64_t>, std::size_t> shape_ids;
  std::vector<std::vector<std::int64_t>> shapes;
  for (LoadedProfile& p : reader.profiles())
    for (RankTrace& r : p.ranks) {
      if (renumber)
        reader.tokens().renumber(r.rolled);
      auto shape = shape_of(r.rolled);
      auto [it, inserted] = shape_ids.emplace(shape, shapes.size());
      if (inserted)
        shapes.push_back(std::move(shape));
      r.shape = it->second;
    }
  return shapes;
}

/// The order in which ranks meet the groups: the most common shape first (a rank that does something
/// extra does not found the template of its peers), then the largest run first (its loops ran often
/// enough to fold), then profile and rank.
std::vector<RankRef> founding_order(ProfileReader& reader, std::size_t shape_count)
{
  std::vector<RankRef> order;
  const auto& profiles = reader.profiles();
  for (std::size_t p = 0; p < profiles.size(); ++p)
    for (int r = 0; r < static_cast<int>(profiles[p].ranks.size()); ++r)
      order.emplace_back(p, r);
  std::vector<std::size_t> shape_freq(shape_count, 0);
  std::vector<std::uint64_t> profile_calls(profiles.size(), 0);
  for (const auto& [p, r] : order) {
    ++shape_freq[reader.rank_trace({p, r}).shape];
    profile_calls[p] += reader.rank_trace({p, r}).calls;
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    const RankTrace& ta = reader.rank_trace(a);
    const RankTrace& tb = reader.rank_trace(b);
    if (shape_freq[ta.shape] != shape_freq[tb.shape])
      return shape_freq[ta.shape] > shape_freq[tb.shape];
    return profile_calls[a.first] > profile_calls[b.first];
  });
  return order;
}

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
             "where its three axes have more than one rank: docs/reference/trace-model.md), and " +
             (sweeps_found == 0 ? std::string("none was found here")
                                : std::to_string(sweeps_found) + " were found and cut out, which was not enough");
  }
  return {};
}

}  // namespace

std::vector<RankRef> assign_groups(ProfileReader& reader, double threshold, bool backtracking,
                                   const RankClassifier* same_class)
{
  // A second assignment (same_class) starts afresh on the rolled traces the first one renumbered.
  if (same_class != nullptr)
    for (LoadedProfile& p : reader.profiles())
      for (RankTrace& r : p.ranks) {
        r.group = -1;
        r.exact = false;
        r.decisions.clear();
      }
  const std::vector<std::vector<std::int64_t>> shapes = number_shapes(reader, same_class == nullptr);
  auto class_of = [&](const RankRef& pr) {
    return same_class->classify(pr.second, reader.profiles()[pr.first].info.np);
  };
  // Templates come from the most common shapes and the largest runs first: their loops surely ran often
  // enough to fold, and a rank of a smaller run whose loop ran once (or not at all) still matches them. A
  // rank joins the first group whose template its calls match (an exact member: it is used to fit the
  // template), else the first whose template's shape is within the Myers threshold of its own (an
  // approximate member), else it founds a group.
  std::vector<RankRef> reps;
  std::vector<std::uint32_t> tokens;
  for (const RankRef& pr : founding_order(reader, shapes.size())) {
    RankTrace& rt = reader.rank_trace(pr);
    reader.read_tokens(pr, tokens);
    tokens            = compact_calls(tokens, reader.tokens().roles_of(tokens));
    const bool varies = counts_vary(rt.rolled);
    for (std::size_t g = 0; g < reps.size() && rt.group < 0; ++g) {
      if (same_class != nullptr && class_of(reps[g]) != class_of(pr))
        continue;
      std::size_t pos = 0;
      rt.decisions.clear();
      if (reader.rank_trace(reps[g]).shape == rt.shape && varies) {
        // The same shape, loops whose counts vary between their instances: the counts are read by matching.
        if (match_whole(reader.rank_trace(reps[g]).rolled, tokens, rt.decisions)) {
          rt.group = static_cast<int>(g);
          rt.exact = true;
        }
        continue;
      }
      if (reader.rank_trace(reps[g]).shape == rt.shape) {
        // The same rolled structure as the template, node for node: the rank's own loop counts are its
        // decisions (greedy matching can fail here, a loop taking iterations that belong to what follows).
        fold_decisions(rt.rolled, rt.decisions);
        rt.group = static_cast<int>(g);
        rt.exact = true;
        break;
      }
      // The whole rank read greedily, else (retry by coverage) with backtracking. Which ranks match is
      // theirs alone: a rank none matches makes the fit try folding by coverage, then axis sweeps. A rank
      // that matches takes its own loop counts where its structure is the template's (match_aligned).
      const std::vector<RolledNode>& tmpl = reader.rank_trace(reps[g]).rolled;
      bool match = match_template(tmpl, tokens, pos, rt.decisions) && pos == tokens.size();
      if (not match && backtracking) {
        rt.decisions.clear();
        match = match_template_backtracking(tmpl, tokens, rt.decisions);
      }
      if (match) {
        if (std::vector<std::uint64_t> own; not varies && match_aligned(tmpl, rt.rolled, own, backtracking))
          rt.decisions = std::move(own);
        rt.group = static_cast<int>(g);
        rt.exact = true;
      }
    }
    for (std::size_t g = 0; g < reps.size() && rt.group < 0; ++g)
      if ((same_class == nullptr || class_of(reps[g]) == class_of(pr)) &&
          shape_difference(shapes[reader.rank_trace(reps[g]).shape], shapes[rt.shape]) <= threshold)
        rt.group = static_cast<int>(g);
    if (rt.group < 0) {
      rt.group = static_cast<int>(reps.size());
      reps.push_back(pr);
      // The founder's loop counts are those folding found: greedy matching can fail on its own
      // rolled trace (a loop whose body can also match what follows it takes too many iterations:
      // ((A)x2 B)x2 (A)x3 B), so its decisions are read off the rolled trace instead.
      rt.decisions.clear();
      if (not varies)
        fold_decisions(rt.rolled, rt.decisions);
      else if (not match_whole(rt.rolled, tokens, rt.decisions))
        throw InputError({reader.profiles()[pr.first].label, 0, {}, pr.second},
                         "the rank's calls do not match its own calls folded by loop body (loops whose iteration "
                         "counts vary between instances)");
      rt.exact = true;
    }
    if (not rt.exact)
      rt.decisions.clear();
  }
  return reps;
}

GroupRule infer_rule(const std::vector<LoadedProfile>& profiles, std::size_t sweeps_found)
{
  std::vector<GroupAssignment> assignments;
  for (const LoadedProfile& p : profiles) {
    GroupAssignment a{p.label, p.info.np, {}};
    for (const RankTrace& r : p.ranks)
      a.group_of_rank.push_back(r.group);
    assignments.push_back(std::move(a));
  }
  try {
    return infer_group_rule(assignments);
  } catch (const InputError& e) {
    // Which branch to blame: when the profiles of each Np put every rank in the same group, nothing
    // depends on Nw, and the conflict is between rank counts (LAMMPS: an axis of the process grid of
    // extent 1 or 2 skips calls that a longer one makes).
    bool nw_stable = true;
    for (const GroupAssignment& a : assignments)
      for (const GroupAssignment& b : assignments)
        nw_stable = nw_stable and (a.np != b.np or a.group_of_rank == b.group_of_rank);
    if (not nw_stable)
      throw NwBranchError(e.context(), e.reason() +
                                           ". Ranks of one class must run the same template at every training point; "
                                           "a branch that depends on Nw (a code path taken only at some sizes) "
                                           "cannot be expressed: train on sizes that take the same paths");
    throw InputError(e.context(),
                     e.reason() + ". Ranks of one class must run the same template at every training point; "
                                  "the profiles of each Np agree rank by rank, so the branch depends on Np beyond the "
                                  "rank classes (a code path taken only at some rank counts, e.g. on some shapes of "
                                  "the process grid) and cannot be expressed: train on rank counts that take the "
                                  "same paths" +
                         grid_shape_note(assignments, sweeps_found));
  }
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

}  // namespace gridcast::models::trace::detail
