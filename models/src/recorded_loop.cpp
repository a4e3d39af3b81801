#include "gridcast/models/recorded_loop.hpp"

#include "gridcast/models/trace_model.hpp"

#include <map>
#include <utility>

namespace gridcast::models {

namespace {

/// A compute burst between two calls: how long it is varies, and whether one is recorded at all can
/// (a zero-length gap), so it is no part of what repeats.
bool is_burst(const CallRecord& r, const FunctionTable& functions)
{
  return r.op == Op::Compute && functions.name(r.function) == "compute";
}

/// Passes the rank's records on and says, before the first call of iteration k (and at the loop's end,
/// k = iterations), that it is there.
class LoopMarkingStream : public ForwardingStream {
public:
  LoopMarkingStream(CallStreamPtr inner, RecordedLoop loop) : ForwardingStream(std::move(inner)), loop_(loop) {}
  bool next(CallRecord& out) override
  {
    if (not inner_->next(out))
      return false;
    if (not is_burst(out, inner_->functions()))
      ++calls_;
    return true;
  }
  std::optional<std::uint64_t> loop_head() override
  {
    if (loop_.iterations == 0 || next_head_ > loop_.iterations)
      return std::nullopt;
    if (calls_ != loop_.first_call + next_head_ * loop_.body_calls)
      return std::nullopt;
    return next_head_++;
  }

private:
  RecordedLoop loop_;
  std::uint64_t calls_     = 0;  ///< calls returned so far, bursts left out
  std::uint64_t next_head_ = 0;
};

}  // namespace

RecordedLoop find_recorded_loop(const std::vector<std::uint32_t>& tokens)
{
  using trace::expanded_size;
  using trace::fold_tokens;
  using trace::RolledNode;
  const std::vector<RolledNode> nodes = fold_tokens(tokens, [](std::uint32_t) { return false; });
  RecordedLoop best;
  std::uint64_t at = 0, best_covered = 0;
  for (const RolledNode& node : nodes) {
    const std::uint64_t size = node.kind == RolledNode::Kind::Loop ? node.count * expanded_size(node.body) : 1;
    if (node.kind == RolledNode::Kind::Loop && node.count >= 2 && size > best_covered) {
      best         = {at, expanded_size(node.body), node.count};
      best_covered = size;
    }
    at += size;
  }
  return best;
}

CallStreamPtr LoopMarkedSource::open(int rank) const
{
  std::vector<std::uint32_t> tokens;
  {
    CallStreamPtr first = inner_.open(rank);
    std::map<std::pair<Op, std::uint32_t>, std::uint32_t> ids;  // (op, function) -> token
    CallRecord r;
    while (first->next(r))
      if (not is_burst(r, first->functions()))
        tokens.push_back(ids.try_emplace({r.op, r.function}, static_cast<std::uint32_t>(ids.size())).first->second);
  }
  if (loops_.size() < static_cast<std::size_t>(rank_count()))
    loops_.resize(static_cast<std::size_t>(rank_count()));
  const RecordedLoop loop = find_recorded_loop(tokens);
  loops_[static_cast<std::size_t>(rank)] = loop;
  return std::make_unique<LoopMarkingStream>(inner_.open(rank), loop);
}

}  // namespace gridcast::models
