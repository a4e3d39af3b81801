// Synthesis: the steady loop the emulator may fast-forward, and how many calls a target makes.
#include "trace_synth_program.hpp"

#include "gridcast/foundation/errors.hpp"

#include <limits>

namespace gridcast::models::trace {

namespace synth {

namespace {

/// Calls one iteration of the loop starting at code[begin] emits, and why the emulator could not skip
/// its iterations, if it could not (empty: it can).
std::pair<long double, std::string> loop_body(const SynthSource::Program& p, std::uint32_t begin, int np)
{
  std::string why_not;
  const long double calls = calls_in(p, begin + 1, p.code[begin].jump, np, [&](const Instr& in, long double mult) {
    const Op op = p.leaves[in.leaf].proto.op;
    // Skipped calls are not performed: what they would leave behind for later iterations (a new
    // communicator, device work in flight, the end of MPI) must not be in the loop.
    if (why_not.empty() && mult > 0 &&
        (op == Op::CommSplit || op == Op::CommDup || op == Op::Init || op == Op::Finalize ||
         (op >= Op::GpuKernel && op <= Op::GpuFree)))
      why_not = "its body has " + std::string(op_name(op)) + " calls";
  });
  return {calls, why_not};
}

}  // namespace

void choose_steady_loop(SynthSource::Program& p, int np)
{
  long double best = 0;
  for (std::size_t k = 0; k < p.top_loops.size(); ++k) {
    const std::uint32_t begin = p.top_loops[k];
    auto [calls, why_not] = loop_body(p, begin, np);
    const long double total = calls * static_cast<long double>(p.code[begin].count);
    if (total <= best)
      continue;
    best = total;
    if (why_not.empty()) {
      p.steady_begin = begin;
      p.steady_name  = p.top_loop_names[k];
      p.steady_why_not.clear();
    } else {
      p.steady_begin   = SynthSource::Program::kNoLoop;
      p.steady_why_not = "the loop with the most calls, " + p.top_loop_names[k] + ", cannot be skipped: " + why_not;
    }
  }
  if (best == 0)
    p.steady_why_not = "the model has no loop at the top level of its template";
  p.top_loops.clear();
  p.top_loop_names.clear();
}

}  // namespace synth

using synth::Instr;
using synth::Leaf;
using synth::calls_in;

std::uint64_t SynthSource::total_calls() const
{
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> per_program;
  for (const auto& p : programs_) {
    const long double total = calls_in(*p, 0, static_cast<std::uint32_t>(p->code.size()), target_.np,
                                       [](const Instr&, long double) {});
    // Saturated: counts of 2^64 and more (an extrapolation gone wild) are only ever compared with a limit.
    per_program.push_back(total < 0x1p64L ? static_cast<std::uint64_t>(total) : kSaturated);
  }
  std::uint64_t sum = 0;
  for (int g : group_of_rank_) {
    const std::uint64_t calls = per_program[static_cast<std::size_t>(g)];
    sum                       = calls > kSaturated - sum ? kSaturated : sum + calls;
  }
  return sum;
}

TraceSource::SteadyLoop SynthSource::steady_loop() const
{
  // Every rank's program must have one, with the same number of iterations: the emulator skips the same
  // iterations on every rank, so that what one rank sends in them another would have received in them.
  SteadyLoop out;
  std::vector<std::string> names;
  std::vector<bool> used(programs_.size(), false);
  for (int g : group_of_rank_)
    used[static_cast<std::size_t>(g)] = true;
  for (std::size_t g = 0; g < programs_.size(); ++g) {
    if (not used[g])
      continue;
    const Program& p = *programs_[g];
    if (p.steady_begin == Program::kNoLoop)
      return {0, {}, "group " + std::to_string(g) + ": " + p.steady_why_not, false};
    const std::uint64_t n = p.code[p.steady_begin].count;
    if (out.name.empty()) {
      out.iterations = n;
      out.name       = p.steady_name;
    } else if (n != out.iterations) {
      return {0, {}, "the groups' loops differ in length (" + out.name + ", " + p.steady_name + ")", false};
    }
    names.push_back(p.steady_name);
    if (options_.variability)
      for (std::uint32_t pc = p.steady_begin + 1; pc < p.code[p.steady_begin].jump; ++pc) {
        const Instr& in = p.code[pc];
        const Leaf* leaf = in.kind == Instr::Call || in.kind == Instr::Poll ? &p.leaves[in.leaf] : nullptr;
        if (leaf != nullptr && leaf->latency != nullptr && not leaf->latency->variability.empty())
          out.random_work = true;
      }
  }
  // "groups[g].template[i] (...)": said once when every group's loop is at the same place.
  auto without_group = [](const std::string& s) { return s.substr(s.find('.') + 1); };
  bool same = true;
  for (const std::string& n : names)
    same = same && without_group(n) == without_group(names.front());
  if (names.size() > 1) {
    out.name.clear();
    if (same)
      out.name = without_group(names.front()) + " of every group";
    else
      for (const std::string& n : names)
        out.name += (out.name.empty() ? "" : ", ") + n;
  }
  return out;
}

}  // namespace gridcast::models::trace
