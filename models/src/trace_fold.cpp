// Loop folding of call sequences (rolled traces) and the Myers difference between rolled traces.
#include "gridcast/models/trace_model.hpp"

#include <dtl/dtl.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace gridcast::models::trace {

namespace {

/// Folding works on symbols: a symbol is a call token, a polling construct of a token, or a loop of a
/// body of symbols with a count. Interning makes "same loop" an integer comparison.
struct Symbol {
  RolledNode::Kind kind;
  std::uint32_t token = 0;
  std::uint64_t count = 0;
  std::vector<std::uint32_t> body;
  bool counts_vary = false;  ///< a loop folded by body whose instances had different counts
};

class SymbolTable {
public:
  /// `by_body`: loops are interned by body alone (FoldOptions::counts_follow_data).
  explicit SymbolTable(bool by_body = false) : by_body_(by_body) {}
  std::uint32_t leaf(RolledNode::Kind kind, std::uint32_t token)
  {
    auto key = std::make_pair(kind == RolledNode::Kind::Poll, token);
    auto it  = leaves_.find(key);
    if (it != leaves_.end())
      return it->second;
    syms_.push_back({kind, token, 1, {}});
    return leaves_[key] = static_cast<std::uint32_t>(syms_.size() - 1);
  }
  /// A call told apart from the other calls of its token by `refine` (FoldOptions::refine: its tag), for
  /// a first fold; plain(s) is the call without it.
  std::uint32_t refined(std::uint32_t token, std::int32_t refine)
  {
    auto key = std::make_pair(token, refine);
    auto it  = refined_.find(key);
    if (it != refined_.end())
      return it->second;
    const std::uint32_t plain_leaf = leaf(RolledNode::Kind::Call, token);
    syms_.push_back({RolledNode::Kind::Call, token, 1, {}});
    const auto id = static_cast<std::uint32_t>(syms_.size() - 1);
    plain_[id]    = plain_leaf;
    return refined_[key] = id;
  }
  /// A leaf made plain: a refined call's plain leaf, any other leaf itself.
  std::uint32_t plain(std::uint32_t leaf) const
  {
    auto it = plain_.find(leaf);
    return it != plain_.end() ? it->second : leaf;
  }
  const Symbol& symbol(std::uint32_t s) const { return syms_[s]; }
  std::uint32_t loop(std::vector<std::uint32_t> body, std::uint64_t count)
  {
    auto key = std::make_pair(body, by_body_ ? 0 : count);
    auto it  = loops_.find(key);
    if (it != loops_.end()) {
      Symbol& sym     = syms_[it->second];
      sym.counts_vary = sym.counts_vary || sym.count != count;
      return it->second;
    }
    syms_.push_back({RolledNode::Kind::Loop, 0, count, std::move(body)});
    return loops_[key] = static_cast<std::uint32_t>(syms_.size() - 1);
  }
  RolledNode node(std::uint32_t s) const
  {
    const Symbol& sym = syms_[s];
    RolledNode n;
    n.kind  = sym.kind;
    n.token = sym.token;
    n.count       = sym.count;
    n.counts_vary = sym.counts_vary;
    for (std::uint32_t b : sym.body)
      n.body.push_back(node(b));
    return n;
  }

private:
  bool by_body_ = false;
  std::vector<Symbol> syms_;
  std::map<std::pair<bool, std::uint32_t>, std::uint32_t> leaves_;
  std::map<std::pair<std::vector<std::uint32_t>, std::uint64_t>, std::uint32_t> loops_;
  std::map<std::pair<std::uint32_t, std::int32_t>, std::uint32_t> refined_;
  std::map<std::uint32_t, std::uint32_t> plain_;  // refined call -> its plain leaf
};

/// One pass at period p: replaces every maximal run (2 repeats or more) of a p-symbol block, leftmost
/// first, by a loop symbol. Returns true if anything was folded.
bool fold_period(std::vector<std::uint32_t>& seq, std::size_t p, SymbolTable& table)
{
  const std::size_t n = seq.size();
  if (2 * p > n)
    return false;
  std::vector<std::uint32_t> out;
  out.reserve(n);
  bool changed = false;
  std::size_t i = 0;
  while (i < n) {
    std::size_t reps = 1;
    if (i + 2 * p <= n && seq[i] == seq[i + p]) {
      while (i + (reps + 1) * p <= n &&
             std::equal(seq.begin() + static_cast<std::ptrdiff_t>(i),
                        seq.begin() + static_cast<std::ptrdiff_t>(i + p),
                        seq.begin() + static_cast<std::ptrdiff_t>(i + reps * p)))
        ++reps;
    }
    if (reps >= 2) {
      std::vector<std::uint32_t> body(seq.begin() + static_cast<std::ptrdiff_t>(i),
                                      seq.begin() + static_cast<std::ptrdiff_t>(i + p));
      out.push_back(table.loop(std::move(body), reps));
      i += reps * p;
      changed = true;
    } else {
      out.push_back(seq[i++]);
    }
  }
  if (changed)
    seq.swap(out);
  return changed;
}

}  // namespace

namespace {

constexpr std::size_t kMaxAfter   = 64;  ///< library calls after a construct's next call that are read
constexpr std::size_t kCompared   = 48;  ///< of which are compared (after a leftover round of up to 16)

std::vector<std::uint32_t> compared(std::vector<std::uint32_t> v)
{
  if (v.size() > kCompared)
    v.resize(kCompared);
  return v;
}

/// After a construct that ends at `last`: the index of the next call that is not a burst (X; n if none,
/// or if it is compute or a poll) and the positions of the library calls after X up to the next call that
/// is not compute (at most kMaxAfter).
template <class Burst, class Work>
std::size_t follower(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask, std::size_t last,
                     Burst burst, Work work, std::vector<std::size_t>& lib)
{
  const std::size_t n = tokens.size();
  lib.clear();
  std::size_t x = last + 1;
  while (x < n && burst(x))
    ++x;
  if (x >= n || work(x) || poll_mask[x])
    return n;
  for (std::size_t k = x + 1; k < n && work(k) && lib.size() < kMaxAfter; ++k)
    if (not burst(k))
      lib.push_back(k);
  return x;
}

}  // namespace

std::vector<std::uint32_t> poll_roles(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask,
                                      const FoldOptions& opt)
{
  const std::size_t n = tokens.size();
  std::vector<std::uint32_t> roles(n, kRoleNormal);
  auto burst = [&](std::size_t k) { return tokens[k] < opt.burst_token.size() && opt.burst_token[tokens[k]]; };
  auto work  = [&](std::size_t k) {
    return not poll_mask[k] &&
           (burst(k) || (tokens[k] < opt.work_token.size() && opt.work_token[tokens[k]]));
  };
  // The end of the round that starts at j (compute calls up to the next call that is not compute) and
  // the library calls in it.
  auto round_end = [&](std::size_t j, std::vector<std::uint32_t>* body) {
    std::size_t k = j;
    for (; k < n && work(k); ++k)
      if (not burst(k) && body != nullptr)
        body->push_back(tokens[k]);
    return k;
  };
  // First pass: the rounds (library calls between two polls of one token) this rank makes, by poll token.
  std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>> rounds;
  for (std::size_t i = 0; i < n; ++i) {
    if (not poll_mask[i])
      continue;
    std::vector<std::uint32_t> body;
    std::size_t k = round_end(i + 1, &body);
    if (k < n && poll_mask[k] && tokens[k] == tokens[i] && not body.empty() && body.size() <= opt.max_round_calls)
      rounds[tokens[i]].insert(body);
  }
  for (const auto& [p, bodies] : opt.round_bodies)
    rounds[p].insert(bodies.begin(), bodies.end());
  // Second pass: the constructs, leftmost first.
  for (std::size_t i = 0; i < n;) {
    if (not poll_mask[i]) {
      ++i;
      continue;
    }
    const std::uint32_t p = tokens[i];
    std::size_t head      = i;
    // The lead: the compute just before the first poll, when its library calls are one of the rounds.
    auto it = rounds.find(p);
    if (it != rounds.end()) {
      std::vector<std::size_t> lib;  // library calls before i, nearest first
      for (std::size_t k = i; k > 0 && work(k - 1) && roles[k - 1] == kRoleNormal && lib.size() < opt.max_round_calls;
           --k)
        if (not burst(k - 1))
          lib.push_back(k - 1);
      std::size_t best = 0;
      for (const auto& body : it->second) {
        if (body.size() > lib.size() || body.size() <= best)
          continue;
        bool same = true;
        for (std::size_t b = 0; b < body.size() && same; ++b)
          same = tokens[lib[body.size() - 1 - b]] == body[b];
        if (same)
          best = body.size();
      }
      if (best > 0)
        head = lib[best - 1];
    }
    roles[head] = p;
    for (std::size_t k = head + 1; k <= i; ++k)
      roles[k] = kRoleAbsorbed;
    // The rounds: compute calls (any number of bursts, at most max_round_calls others) then a poll of p.
    std::size_t last = i;
    while (true) {
      std::vector<std::uint32_t> body;
      std::size_t k = round_end(last + 1, &body);
      if (k < n && poll_mask[k] && tokens[k] == p && body.size() <= opt.max_round_calls) {
        for (std::size_t a = last + 1; a <= k; ++a)
          roles[a] = kRoleAbsorbed;
        last = k;
      } else {
        break;
      }
    }
    // The leftover round after the next call (the receive), when what follows is the base without it.
    auto base = opt.leftover_base.end();
    std::vector<std::size_t> lib;
    std::size_t x = follower(tokens, poll_mask, last, burst, work, lib);
    if (x < n)
      base = opt.leftover_base.find({p, tokens[x]});
    if (base != opt.leftover_base.end() && it != rounds.end()) {
      std::size_t best = 0;
      std::vector<std::uint32_t> after;
      for (std::size_t l : lib)
        after.push_back(tokens[l]);
      for (const auto& body : it->second) {
        if (body.size() > after.size() || body.size() <= best ||
            not std::equal(body.begin(), body.end(), after.begin()))
          continue;
        if (base->second.count(compared(
                std::vector<std::uint32_t>(after.begin() + static_cast<std::ptrdiff_t>(body.size()), after.end()))) > 0)
          best = body.size();
      }
      // The round's calls and the burst after each (what a construct without leftover has after X is
      // then the same: X, a burst, the base).
      for (std::size_t b = 0; b < best; ++b) {
        roles[lib[b]] = kRoleAbsorbed;
        if (lib[b] + 1 < n && burst(lib[b] + 1))
          roles[lib[b] + 1] = kRoleAbsorbed;
      }
    }
    i = last + 1;
  }
  return roles;
}

void poll_followers(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask,
                    const std::vector<std::uint32_t>& roles, const FoldOptions& opt, std::vector<PollFollower>& out,
                    std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>>& rounds)
{
  const std::size_t n = tokens.size();
  auto burst = [&](std::size_t k) { return tokens[k] < opt.burst_token.size() && opt.burst_token[tokens[k]]; };
  auto work  = [&](std::size_t k) {
    return not poll_mask[k] && (burst(k) || (tokens[k] < opt.work_token.size() && opt.work_token[tokens[k]]));
  };
  std::vector<std::size_t> lib;
  for (std::size_t i = 0; i < n; ++i) {
    if (not poll_mask[i])
      continue;
    // A round: library calls between two polls of one token (as poll_roles counts them).
    std::vector<std::uint32_t> body;
    std::size_t k = i + 1;
    for (; k < n && work(k); ++k)
      if (not burst(k))
        body.push_back(tokens[k]);
    if (k < n && poll_mask[k] && tokens[k] == tokens[i] && not body.empty() && body.size() <= opt.max_round_calls)
      rounds[tokens[i]].insert(body);
    // The last poll of a construct: the next call that is not absorbed is not part of it.
    std::size_t j = i + 1;
    while (j < n && roles[j] == kRoleAbsorbed)
      ++j;
    if (j > i + 1 && std::any_of(tokens.begin() + static_cast<std::ptrdiff_t>(i + 1),
                                 tokens.begin() + static_cast<std::ptrdiff_t>(j),
                                 [&](std::uint32_t t) { return t == tokens[i]; }))
      continue;  // a later poll of the same construct follows
    std::size_t x = follower(tokens, poll_mask, i, burst, work, lib);
    if (x >= n)
      continue;
    PollFollower f{tokens[i], tokens[x], {}};
    for (std::size_t l : lib)
      f.after.push_back(tokens[l]);
    out.push_back(std::move(f));
  }
}

std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::vector<std::uint32_t>>>
leftover_bases(const std::map<PollFollower, std::uint64_t>& followers,
               const std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>>& rounds)
{
  using Key = std::pair<std::uint32_t, std::uint32_t>;
  std::map<Key, std::set<std::vector<std::uint32_t>>> as_is, stripped;
  for (const auto& [f, count] : followers) {
    as_is[{f.poll, f.next}].insert(compared(f.after));
    auto it = rounds.find(f.poll);
    if (it == rounds.end())
      continue;
    for (const auto& body : it->second)
      if (body.size() <= f.after.size() && std::equal(body.begin(), body.end(), f.after.begin()))
        stripped[{f.poll, f.next}].insert(
            compared(std::vector<std::uint32_t>(f.after.begin() + static_cast<std::ptrdiff_t>(body.size()), f.after.end())));
  }
  std::map<Key, std::set<std::vector<std::uint32_t>>> out;
  for (const auto& [key, s] : stripped) {
    const auto& a = as_is[key];
    for (const auto& v : s)
      if (a.count(v) > 0)
        out[key].insert(v);
  }
  return out;
}

namespace {

/// One step of folding by coverage: finds the run of 2 repeats or more of a block of at most `max_period`
/// symbols that covers the most symbols (ties: the shorter block, then the leftmost), and folds every
/// run of that block with as many repeats, left to right, into a loop symbol (other runs of the block wait
/// for a later step: a run of 2 that straddles two iterations of a longer loop, a V-cycle's smoothing
/// blocks read across its way up, must not be folded before that loop). Returns false when no block
/// repeats. O(n x max_period): for each period p, same[i] counts the positions from i on where the
/// sequence equals itself p further, so a run of k blocks starts at i where same[i] >= (k - 1) p.
bool fold_best_coverage(std::vector<std::uint32_t>& seq, std::size_t max_period, SymbolTable& table)
{
  const std::size_t n = seq.size();
  std::size_t best_cover = 0, best_p = 0, best_i = 0;
  std::vector<std::size_t> same(n + 1, 0);
  for (std::size_t p = 1; p <= max_period && 2 * p <= n; ++p) {
    same[n - p] = 0;
    for (std::size_t i = n - p; i-- > 0;)
      same[i] = seq[i] == seq[i + p] ? same[i + 1] + 1 : 0;
    for (std::size_t i = 0; i + 2 * p <= n; ++i) {
      const std::size_t reps  = 1 + same[i] / p;
      const std::size_t cover = reps * p;
      if (reps >= 2 && cover > best_cover) {
        best_cover = cover;
        best_p     = p;
        best_i     = i;
      }
    }
  }
  if (best_cover == 0)
    return false;
  const std::vector<std::uint32_t> body(seq.begin() + static_cast<std::ptrdiff_t>(best_i),
                                        seq.begin() + static_cast<std::ptrdiff_t>(best_i + best_p));
  // The body's own repeats (the smoothing sweeps inside a level) fold the same way, inside the loop.
  std::vector<std::uint32_t> folded_body = body;
  while (fold_best_coverage(folded_body, max_period, table)) {
  }
  auto block_at = [&](std::size_t i) {
    return i + best_p <= n && std::equal(body.begin(), body.end(), seq.begin() + static_cast<std::ptrdiff_t>(i));
  };
  std::vector<std::uint32_t> out;
  out.reserve(n);
  std::size_t i = 0;
  while (i < n) {
    std::size_t reps = 0;
    while (block_at(i + reps * best_p))
      ++reps;
    if (reps == best_cover / best_p) {
      out.push_back(table.loop(folded_body, reps));
      i += reps * best_p;
    } else {
      out.push_back(seq[i++]);
    }
  }
  seq = std::move(out);
  return true;
}

/// Folds `seq` (shortest period first, or by coverage) until nothing changes.
void fold_all(std::vector<std::uint32_t>& seq, const FoldOptions& opt, SymbolTable& table)
{
  if (opt.by_coverage && seq.size() <= FoldOptions::kCoverageMaxElements) {
    while (fold_best_coverage(seq, opt.max_period, table)) {
    }
    return;
  }
  // Shortest period first; after any fold start again from period 1, since folding can create new
  // short repeats (an outer loop whose iterations now read as one symbol each).
  std::size_t p = 1;
  while (p <= opt.max_period && 2 * p <= seq.size()) {
    if (fold_period(seq, p, table))
      p = 1;
    else
      ++p;
  }
}

/// The calls of `s` made plain, every loop unrolled, appended to `out`; false (and `out` partial) past
/// `limit` elements.
bool expand_plain(std::uint32_t s, const SymbolTable& table, std::vector<std::uint32_t>& out, std::size_t limit)
{
  const Symbol& sym = table.symbol(s);
  if (sym.kind != RolledNode::Kind::Loop) {
    out.push_back(table.plain(s));
    return out.size() <= limit;
  }
  if (sym.counts_vary)  // its instances' counts are not kept: it cannot be unrolled
    return false;
  for (std::uint64_t k = 0; k < sym.count; ++k)
    for (std::uint32_t b : sym.body)
      if (not expand_plain(b, table, out, limit))
        return false;
  return true;
}

constexpr std::size_t kRefoldMaxElements = 100000;  ///< longest body unrolled to be folded again, plain

std::uint32_t refold_plain(std::uint32_t s, const FoldOptions& opt, SymbolTable& table);

/// A sequence of a fold of refined calls made plain and folded again. Where refinement told apart calls
/// of one token among the sequence's own elements (`S0 C S1 C S2 C C`, a step of rounds tagged by their
/// number), the sequence is unrolled, plain, and folded afresh: its loops folded by refinement (the `C C`)
/// must not stand in the way of the plain loop (`(S C)x3 C`). Elsewhere each element is made plain in
/// turn, inside out, and the sequence folded again.
std::vector<std::uint32_t> refold_sequence(const std::vector<std::uint32_t>& elems, const FoldOptions& opt,
                                           SymbolTable& table)
{
  std::map<std::uint32_t, std::uint32_t> plain_of;  // a plain leaf -> the first refined leaf seen for it
  bool told_apart = false;
  for (std::uint32_t e : elems)
    if (table.symbol(e).kind != RolledNode::Kind::Loop)
      told_apart = told_apart || plain_of.try_emplace(table.plain(e), e).first->second != e;
  std::vector<std::uint32_t> out;
  bool unrolled = false;
  if (told_apart) {
    unrolled = true;
    for (std::uint32_t e : elems)
      if (not(unrolled = expand_plain(e, table, out, kRefoldMaxElements)))
        break;
  }
  if (not unrolled) {
    out.clear();
    for (std::uint32_t e : elems)
      out.push_back(refold_plain(e, opt, table));
  }
  fold_all(out, opt, table);
  return out;
}

/// A symbol of a fold of refined calls made plain: a loop keeps its count, its body refolded
/// (refold_sequence): `(S0 C S1 C S2 C)x2` becomes `((S C)x3)x2`.
std::uint32_t refold_plain(std::uint32_t s, const FoldOptions& opt, SymbolTable& table)
{
  const Symbol& sym = table.symbol(s);
  if (sym.kind != RolledNode::Kind::Loop)
    return table.plain(s);
  const std::uint64_t count             = sym.count;
  const std::vector<std::uint32_t> body = sym.body;  // copied: folding grows the table
  return table.loop(refold_sequence(body, opt, table), count);
}

}  // namespace

namespace detail {

std::vector<RolledNode> fold_impl(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask,
                                  const FoldOptions& opt)
{
  SymbolTable table(opt.counts_follow_data);
  std::vector<std::uint32_t> seq;
  seq.reserve(tokens.size());
  const std::vector<std::uint32_t> roles = poll_roles(tokens, poll_mask, opt);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (roles[i] == kRoleAbsorbed)
      continue;
    if (roles[i] != kRoleNormal)  // a polling construct, whatever its number of polls and rounds
      seq.push_back(table.leaf(RolledNode::Kind::Poll, roles[i]));
    else if (not opt.refine.empty())
      seq.push_back(table.refined(tokens[i], opt.refine[i]));
    else
      seq.push_back(table.leaf(RolledNode::Kind::Call, tokens[i]));
  }
  fold_all(seq, opt, table);
  if (not opt.refine.empty()) {
    // Folded first with the calls told apart (the loop whose body is a step of rounds, each round's tag
    // its own), then every body made plain and folded again (the rounds: one loop of a call whose tag
    // is then fitted per position).
    seq = refold_sequence(seq, opt, table);
  }
  std::vector<RolledNode> out;
  out.reserve(seq.size());
  for (std::uint32_t s : seq)
    out.push_back(table.node(s));
  return out;
}

}  // namespace detail

std::vector<RolledNode> fold_sequence(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_token,
                                      const FoldOptions& opt)
{
  return fold_tokens(tokens, [&](std::uint32_t t) { return t < poll_token.size() && poll_token[t]; }, opt);
}

namespace {
constexpr std::int64_t kLoopOpen  = -1;
constexpr std::int64_t kLoopClose = -2;
constexpr std::int64_t kPollBase  = -3;  // poll of token t: -3 - t
}  // namespace

std::vector<std::int64_t> shape_of(std::span<const RolledNode> nodes)
{
  std::vector<std::int64_t> out;
  auto walk = [&](auto& self, std::span<const RolledNode> ns) -> void {
    for (const RolledNode& n : ns) {
      switch (n.kind) {
        case RolledNode::Kind::Call: out.push_back(static_cast<std::int64_t>(n.token)); break;
        case RolledNode::Kind::Poll: out.push_back(kPollBase - static_cast<std::int64_t>(n.token)); break;
        case RolledNode::Kind::Loop:
          out.push_back(kLoopOpen);
          self(self, n.body);
          out.push_back(kLoopClose);
          break;
      }
    }
  };
  walk(walk, nodes);
  return out;
}

bool counts_vary(std::span<const RolledNode> nodes)
{
  return std::any_of(nodes.begin(), nodes.end(),
                     [](const RolledNode& n) { return n.counts_vary || counts_vary(n.body); });
}

std::uint64_t expanded_size(const std::vector<RolledNode>& nodes)
{
  std::uint64_t n = 0;
  for (const RolledNode& node : nodes)
    n += node.kind == RolledNode::Kind::Loop ? node.count * expanded_size(node.body) : 1;
  return n;
}

double shape_difference(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b)
{
  if (a.empty() && b.empty())
    return 0;
  if (a == b)
    return 0;
  dtl::Diff<std::int64_t, std::vector<std::int64_t>> diff(a, b);
  diff.onOnlyEditDistance();
  diff.compose();
  return static_cast<double>(diff.getEditDistance()) / static_cast<double>(std::max(a.size(), b.size()));
}

}  // namespace gridcast::models::trace
