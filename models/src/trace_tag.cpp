// Tag expressions: a message tag as a constant or an affine function of the enclosing loops' indices
// (TagExpr), and their fit from a position's observations (TagFitter).
#include "gridcast/models/trace_rules.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gridcast::models::trace {

std::optional<std::int32_t> TagExpr::eval(const std::uint64_t* loop, const std::uint64_t* counts, int depth) const
{
  std::int64_t v = a;
  if (kind == Kind::Affine) {
    for (const Term& t : terms) {
      if (t.level < 0 || t.level >= depth)
        return std::nullopt;
      const auto at = static_cast<std::size_t>(depth - 1 - t.level);
      if (t.from_end && loop[at] >= counts[at])
        return std::nullopt;
      const std::uint64_t x = t.from_end ? counts[at] - 1 - loop[at] : loop[at];
      v += t.b * static_cast<std::int64_t>(x);
    }
  } else if (kind != Kind::Fixed) {
    if (level < 0 || level >= depth)
      return std::nullopt;
    const std::uint64_t i = loop[depth - 1 - level];
    v = kind == Kind::LoopFirst && i == 0 ? first : a + b * static_cast<std::int64_t>(i);
  }
  if (v < 0 || v > std::numeric_limits<std::int32_t>::max())
    return std::nullopt;
  return static_cast<std::int32_t>(v);
}

std::string TagExpr::text() const
{
  if (kind == Kind::Fixed)
    return std::to_string(a);
  if (kind == Kind::LoopFirst)
    return "i" + std::to_string(level) + " == 0 ? " + std::to_string(first) + " : " +
           TagExpr{Kind::Loop, a, b, level, 0, {}}.text();
  if (kind == Kind::Affine) {
    std::string out = std::to_string(a);
    for (const Term& t : terms) {
      const std::string l = std::to_string(t.level);
      out += (t.b < 0 ? " - " : " + ") + std::to_string(t.b < 0 ? -t.b : t.b) + "*" +
             (t.from_end ? "(n" + l + " - 1 - i" + l + ")" : "i" + l);
    }
    return out;
  }
  return std::to_string(a) + (b < 0 ? " - " : " + ") + std::to_string(b < 0 ? -b : b) + "*i" + std::to_string(level);
}

namespace {

/// One more point (i, v) for the integer line a + b*i anchored at (i0, v0): the first point at another
/// index fixes a and b (state 0 -> 1), a point off the line, or a slope that is not an integer, rules it
/// out (state 2). A point at the anchor's index must repeat its value.
void extend_line(int& state, std::int64_t& a, std::int64_t& b, std::int64_t i0, std::int64_t v0, std::int64_t i,
                 std::int64_t v)
{
  if (state == 2)
    return;
  if (state == 1) {
    if (a + b * i != v)
      state = 2;
    return;
  }
  if (i == i0) {
    if (v != v0)
      state = 2;
    return;
  }
  const std::int64_t diff = v - v0;
  if (diff % (i - i0) != 0) {
    state = 2;
    return;
  }
  b     = diff / (i - i0);
  a     = v0 - b * i0;
  state = 1;
}

}  // namespace

void TagFitter::add(const std::vector<std::uint64_t>& loop, const std::vector<std::uint64_t>& counts, std::int32_t tag)
{
  if (affine_possible_) {
    if ((seen_ && loop.size() != l0_.size()) || counts.size() != loop.size() || loop.size() > kAffineDepth) {
      affine_possible_ = false;
      obs_.clear();
    } else {
      // Most calls repeat an observation: looked up in a reused vector, copied only when new.
      scratch_.clear();
      for (std::uint64_t i : loop)
        scratch_.push_back(static_cast<std::int64_t>(i));
      for (std::uint64_t n : counts)
        scratch_.push_back(static_cast<std::int64_t>(n));
      scratch_.push_back(tag);
      if (obs_.find(scratch_) == obs_.end())
        obs_.insert(scratch_);
      if (obs_.size() > kAffineObservations) {
        affine_possible_ = false;
        obs_.clear();
      }
    }
  }
  if (not seen_) {
    seen_ = true;
    v0_   = tag;
    l0_   = loop;
    state_.assign(loop.size(), 0);
    a_.assign(loop.size(), 0);
    b_.assign(loop.size(), 0);
    state2_.assign(loop.size(), 0);
    first_.assign(loop.size(), std::nullopt);
    anchor2_.assign(loop.size(), std::nullopt);
    a2_.assign(loop.size(), 0);
    b2_.assign(loop.size(), 0);
    add_first(loop, tag);
    return;
  }
  add_first(loop, tag);
  if (tag != v0_)
    fixed_ = false;
  const std::size_t depth = std::min(loop.size(), l0_.size());
  for (std::size_t lvl = 0; lvl < state_.size(); ++lvl) {
    if (state_[lvl] == 2)
      continue;
    if (lvl >= depth) {
      state_[lvl] = 2;
      continue;
    }
    const auto i  = static_cast<std::int64_t>(loop[loop.size() - 1 - lvl]);
    const auto i0 = static_cast<std::int64_t>(l0_[l0_.size() - 1 - lvl]);
    extend_line(state_[lvl], a_[lvl], b_[lvl], i0, v0_, i, tag);
  }
}

void TagFitter::add_first(const std::vector<std::uint64_t>& loop, std::int32_t tag)
{
  for (std::size_t lvl = 0; lvl < state2_.size(); ++lvl) {
    if (state2_[lvl] == 2)
      continue;
    if (lvl >= loop.size() || loop.size() != l0_.size()) {
      state2_[lvl] = 2;
      continue;
    }
    const auto i = static_cast<std::int64_t>(loop[loop.size() - 1 - lvl]);
    if (i == 0) {
      if (first_[lvl] && *first_[lvl] != tag)
        state2_[lvl] = 2;
      first_[lvl] = tag;
      continue;
    }
    if (not anchor2_[lvl]) {
      anchor2_[lvl] = std::make_pair(i, static_cast<std::int64_t>(tag));
      continue;
    }
    const auto [i0, v0] = *anchor2_[lvl];
    extend_line(state2_[lvl], a2_[lvl], b2_[lvl], i0, v0, i, tag);
  }
}

std::optional<TagExpr> TagFitter::result() const
{
  if (not seen_)
    return std::nullopt;
  if (fixed_)
    return TagExpr{TagExpr::Kind::Fixed, v0_, 0, 0, 0, {}};
  for (std::size_t lvl = 0; lvl < state_.size(); ++lvl)
    if (state_[lvl] == 1)
      return TagExpr{TagExpr::Kind::Loop, a_[lvl], b_[lvl], static_cast<int>(lvl), 0, {}};
  // A first iteration apart: only where both the first and the other iterations were seen.
  for (std::size_t lvl = 0; lvl < state2_.size(); ++lvl)
    if (state2_[lvl] != 2 && first_[lvl] && anchor2_[lvl]) {
      TagExpr e{TagExpr::Kind::LoopFirst, a2_[lvl], b2_[lvl], static_cast<int>(lvl), *first_[lvl], {}};
      if (state2_[lvl] == 0) {  // one other index seen: the tag of the other iterations is constant
        e.a = anchor2_[lvl]->second;
        e.b = 0;
      }
      return e;
    }
  return std::nullopt;
}

std::optional<TagExpr> TagFitter::affine() const
{
  if (not affine_possible_ || obs_.size() < 2)
    return std::nullopt;
  const std::size_t depth = l0_.size();
  // The value of a candidate term for an observation: index i at `level` (0 = innermost), or n - 1 - i.
  auto value = [&](const std::vector<std::int64_t>& o, std::size_t level, bool from_end) {
    const std::size_t at = depth - 1 - level;
    return from_end ? o[depth + at] - 1 - o[at] : o[at];
  };
  // Candidate terms: one per level and direction whose value changes between observations (a term that
  // does not is the constant's).
  std::vector<TagExpr::Term> cand;
  for (std::size_t lvl = 0; lvl < depth; ++lvl)
    for (bool from_end : {false, true}) {
      std::set<std::int64_t> values;
      for (const auto& o : obs_)
        values.insert(value(o, lvl, from_end));
      if (values.size() > 1)
        cand.push_back({static_cast<int>(lvl), 0, from_end});
    }
  // Every set of candidates with at most one term per level, fewest terms first, then those with fewer
  // terms counted from the end, then in the order of the candidates (inner levels first): the first whose
  // least-squares fit, rounded to integers, reproduces every observation exactly.
  std::vector<std::vector<TagExpr::Term>> sets;
  const std::size_t nc = cand.size();
  for (std::uint64_t mask = 1; mask < (std::uint64_t{1} << nc); ++mask) {
    std::vector<TagExpr::Term> set;
    std::set<int> levels;
    bool ok = true;
    for (std::size_t c = 0; c < nc && ok; ++c)
      if (mask & (std::uint64_t{1} << c)) {
        ok = levels.insert(cand[c].level).second;
        set.push_back(cand[c]);
      }
    if (ok)
      sets.push_back(std::move(set));
  }
  auto from_end_count = [](const std::vector<TagExpr::Term>& s) {
    return std::count_if(s.begin(), s.end(), [](const TagExpr::Term& t) { return t.from_end; });
  };
  std::stable_sort(sets.begin(), sets.end(), [&](const auto& x, const auto& y) {
    return std::make_pair(x.size(), from_end_count(x)) < std::make_pair(y.size(), from_end_count(y));
  });
  const auto rows = static_cast<Eigen::Index>(obs_.size());
  for (std::vector<TagExpr::Term>& set : sets) {
    Eigen::MatrixXd x(rows, static_cast<Eigen::Index>(set.size()) + 1);
    Eigen::VectorXd y(rows);
    Eigen::Index r = 0;
    for (const auto& o : obs_) {
      x(r, 0) = 1.0;
      for (std::size_t t = 0; t < set.size(); ++t)
        x(r, static_cast<Eigen::Index>(t) + 1) =
            static_cast<double>(value(o, static_cast<std::size_t>(set[t].level), set[t].from_end));
      y(r) = static_cast<double>(o.back());
      ++r;
    }
    const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(x);
    if (qr.rank() < x.cols())
      continue;  // terms that move together: a smaller set says the same
    const Eigen::VectorXd coef = qr.solve(y);
    TagExpr e;
    e.kind = TagExpr::Kind::Affine;
    e.a    = std::llround(coef(0));
    bool zero = false;
    for (std::size_t t = 0; t < set.size(); ++t) {
      set[t].b = std::llround(coef(static_cast<Eigen::Index>(t) + 1));
      zero     = zero || set[t].b == 0;
    }
    if (zero)
      continue;
    e.terms = set;
    const bool exact = std::all_of(obs_.begin(), obs_.end(), [&](const std::vector<std::int64_t>& o) {
      std::int64_t v = e.a;
      for (const TagExpr::Term& t : e.terms)
        v += t.b * value(o, static_cast<std::size_t>(t.level), t.from_end);
      return v == o.back();
    });
    if (exact)
      return e;
  }
  return std::nullopt;
}

}  // namespace gridcast::models::trace
