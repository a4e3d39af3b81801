// Loop folding of call sequences (rolled traces) and the Myers difference between rolled traces.
#include "gridcast/models/trace_model.hpp"

#include <dtl/dtl.hpp>

#include <algorithm>
#include <map>

namespace gridcast::models::trace {

namespace {

/// Folding works on symbols: a symbol is a call token, a polling construct of a token, or a loop of a
/// body of symbols with a count. Interning makes "same loop" an integer comparison.
struct Symbol {
  RolledNode::Kind kind;
  std::uint32_t token = 0;
  std::uint64_t count = 0;
  std::vector<std::uint32_t> body;
};

class SymbolTable {
public:
  std::uint32_t leaf(RolledNode::Kind kind, std::uint32_t token)
  {
    auto key = std::make_pair(kind == RolledNode::Kind::Poll, token);
    auto it  = leaves_.find(key);
    if (it != leaves_.end())
      return it->second;
    syms_.push_back({kind, token, 1, {}});
    return leaves_[key] = static_cast<std::uint32_t>(syms_.size() - 1);
  }
  std::uint32_t loop(std::vector<std::uint32_t> body, std::uint64_t count)
  {
    auto key = std::make_pair(body, count);
    auto it  = loops_.find(key);
    if (it != loops_.end())
      return it->second;
    syms_.push_back({RolledNode::Kind::Loop, 0, count, std::move(body)});
    return loops_[key] = static_cast<std::uint32_t>(syms_.size() - 1);
  }
  RolledNode node(std::uint32_t s) const
  {
    const Symbol& sym = syms_[s];
    RolledNode n;
    n.kind  = sym.kind;
    n.token = sym.token;
    n.count = sym.count;
    for (std::uint32_t b : sym.body)
      n.body.push_back(node(b));
    return n;
  }

private:
  std::vector<Symbol> syms_;
  std::map<std::pair<bool, std::uint32_t>, std::uint32_t> leaves_;
  std::map<std::pair<std::vector<std::uint32_t>, std::uint64_t>, std::uint32_t> loops_;
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

namespace detail {

std::vector<RolledNode> fold_impl(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask,
                                  const FoldOptions& opt)
{
  SymbolTable table;
  std::vector<std::uint32_t> seq;
  seq.reserve(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (poll_mask[i]) {
      // A run of the same polling call is one construct, whatever its length.
      std::uint32_t s = table.leaf(RolledNode::Kind::Poll, tokens[i]);
      auto burst = [&](std::size_t k) { return tokens[k] < opt.burst_token.size() && opt.burst_token[tokens[k]]; };
      while (true) {
        if (i + 1 < tokens.size() && poll_mask[i + 1] && tokens[i + 1] == tokens[i])
          ++i;
        else if (i + 2 < tokens.size() && burst(i + 1) && poll_mask[i + 2] && tokens[i + 2] == tokens[i])
          i += 2;  // a compute burst between two polls of the same call: the polling loop's own time
        else
          break;
      }
      seq.push_back(s);
    } else {
      seq.push_back(table.leaf(RolledNode::Kind::Call, tokens[i]));
    }
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

std::vector<std::int64_t> shape_of(const std::vector<RolledNode>& nodes)
{
  std::vector<std::int64_t> out;
  auto walk = [&](auto& self, const std::vector<RolledNode>& ns) -> void {
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
