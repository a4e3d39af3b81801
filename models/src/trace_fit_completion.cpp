// Completion loops as one construct (trace_fit_completion.hpp).
#include "trace_fit_completion.hpp"

#include "trace_numbered.hpp"

#include <algorithm>
#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

namespace gridcast::models::trace::detail {

namespace {

enum class Role { Other, Blocking, Polling, Burst };

class CompletionFold final : public CallStream {
public:
  explicit CompletionFold(CallStreamPtr inner) : inner_(std::move(inner)) {}

  bool next(CallRecord& out) override
  {
    if (not ready_.empty()) {  // a construct made by the previous call: never read as a call again
      out = std::move(ready_.front());
      ready_.pop_front();
      return true;
    }
    if (not take(out))
      return false;
    if (role(out) != Role::Blocking) {
      strip_done(out);
      return true;
    }
    // The run from this blocking call on: completion calls and the bursts between them (bursts after
    // its last call are not its own).
    std::vector<CallRecord> calls{out}, bursts, trailing;
    CallRecord x;
    while (take(x)) {
      const Role r = role(x);
      if (r == Role::Burst) {
        trailing.push_back(std::move(x));
        continue;
      }
      if (r == Role::Other) {
        trailing.push_back(std::move(x));
        break;
      }
      bursts.insert(bursts.end(), trailing.begin(), trailing.end());
      trailing.clear();
      calls.push_back(std::move(x));
    }
    held_.insert(held_.begin(), trailing.begin(), trailing.end());
    // Always the two records, a loop of one call too: the same calls whatever the timing was.
    ready_.push_back(construct(calls));
    out = own_time(bursts, calls.front().line);
    return true;
  }
  const FunctionTable& functions() const override { return functions_.table; }
  const std::string& source() const override { return inner_->source(); }

private:
  bool take(CallRecord& out)
  {
    if (not held_.empty()) {
      out = std::move(held_.front());
      held_.pop_front();
      return true;
    }
    if (not inner_->next(out))
      return false;
    // The inner stream's function ids as ours: the loop's own time may need "compute", which it may lack.
    out.function = functions_.map(inner_->functions(), out.function);
    return true;
  }

  Role role(const CallRecord& r) const
  {
    const std::string& f = functions_.table.name(r.function);
    if (r.op == Op::Compute && f == "compute")
      return Role::Burst;
    if (f == "MPI_Waitsome" || f == "MPI_Waitany")
      return Role::Blocking;
    if (f == "MPI_Testsome" || f == "MPI_Testany" || f == "MPI_Testall")
      return Role::Polling;
    return Role::Other;
  }

  /// The loop's calls as one waitall of the requests they named, not completed before.
  CallRecord construct(const std::vector<CallRecord>& calls)
  {
    CallRecord w = calls.front();
    w.op = Op::Waitall;
    w.request = kNoRequest;
    w.requests.clear();
    w.seconds = 0;
    auto add = [&](std::int64_t id) {
      if (id >= 0 && done_.count(id) == 0 && std::find(w.requests.begin(), w.requests.end(), id) == w.requests.end())
        w.requests.push_back(id);
    };
    for (const CallRecord& c : calls) {
      w.seconds += std::max(0.0, c.seconds);
      add(c.request);
      for (std::int64_t id : c.requests)
        add(id);
    }
    // In creation order: the order they completed in is the timing's.
    std::sort(w.requests.begin(), w.requests.end());
    done_.insert(w.requests.begin(), w.requests.end());
    if (w.requests.empty())
      w.op = Op::CommSize;  // it completed nothing: a local call
    return w;
  }

  /// The bursts between the loop's calls as one: the loop's own time, its processing between calls (none
  /// for a loop of one call).
  CallRecord own_time(const std::vector<CallRecord>& bursts, std::uint64_t line)
  {
    CallRecord b;
    b.op = Op::Compute;
    b.function = functions_.table.intern("compute");
    b.seconds = 0;
    b.line = line;
    for (const CallRecord& x : bursts) {
      b.seconds += std::max(0.0, x.seconds);
      b.flops += x.flops;
    }
    return b;
  }

  /// A wait or test naming requests a construct completed: those are left out (a wait left with none is
  /// a local call).
  void strip_done(CallRecord& r) const
  {
    if (done_.empty() || (r.op != Op::Wait && r.op != Op::Waitall && r.op != Op::Waitany && r.op != Op::Test))
      return;
    std::erase_if(r.requests, [&](std::int64_t id) { return done_.count(id) > 0; });
    if (r.request >= 0 && done_.count(r.request) > 0)
      r.request = kNoRequest;
    if (r.request < 0 && r.requests.empty())
      r.op = Op::CommSize;
  }

  CallStreamPtr inner_;
  FunctionIds functions_;
  std::deque<CallRecord> held_;   ///< calls read ahead, to read again
  std::deque<CallRecord> ready_;  ///< records made, to return as they are
  std::unordered_set<std::int64_t> done_;
};

}  // namespace

CallStreamPtr fold_completion_loops(CallStreamPtr inner) { return std::make_unique<CompletionFold>(std::move(inner)); }

}  // namespace gridcast::models::trace::detail
