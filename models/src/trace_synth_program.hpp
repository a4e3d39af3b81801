// Internal to gridcast::models: the model compiled for a target, as synthesis shares it between the
// compiler (trace_synth_compile.cpp), the steady-loop choice (trace_synth_steady.cpp), the point-to-point
// balance (trace_synth_matching.cpp) and the per-rank streams (trace_synth.cpp).
#pragma once

#include "gridcast/models/trace_synth.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::models::trace {

namespace synth {

inline bool creates_request(Op op) { return op == Op::Isend || op == Op::Irecv || op == Op::Issend; }

/// The calls whose MPI_PROC_NULL peer the stream can express by dropping the call or one half of it.
inline bool is_blocking_p2p(Op op) { return op == Op::Send || op == Op::Ssend || op == Op::Recv || op == Op::Sendrecv; }

/// One call position of a template, evaluated at the target (what is the same for every rank).
struct Leaf {
  CallRecord proto;
  std::optional<std::uint64_t> counts_self, recv_counts_self;  ///< the rank's own v-collective entry
  /// TemplateNode::bytes_by_index (recv_bytes_by_index) at the target: the size at each index of the loop
  /// `*_index_level` names (empty: none).
  std::vector<std::uint64_t> bytes_at_index, recv_bytes_at_index;
  int bytes_index_level = 0, recv_bytes_index_level = 0;
  const TemplateNode* node = nullptr;
  bool creates = false;
  /// A sendrecv whose receive tag is its tag (token recv_tag "varies"): set with the tag, call by call.
  bool recv_tag_is_tag = false;
  // Compute calls: the latency model's ratio for this site, tabulated by progress buckets when the model is
  // compiled for the target (the forest is walked once per site and bucket, not once per call).
  const FunctionLatency* latency = nullptr;
  CallContext context;
  int depth = 0;  ///< enclosing loops
  std::vector<float> ratio_table;
  /// TemplateNode::RootWork at the target: the work per call of the last rooted collective's root, and
  /// of the others.
  std::optional<std::pair<double, double>> root_work;
  std::int64_t request_back = 0;
  std::vector<std::int64_t> requests_back;
  bool all_pending = false;  ///< waitall of every request still pending
};

struct Instr {
  enum Kind : std::uint8_t { Call, Poll, LoopBegin, LoopEnd, Numbered, Trees, Sweep } kind = Call;
  /// Call, Poll; Numbered: index into Program::numbered; Trees: into Program::trees; Sweep: into Program::sweeps
  std::uint32_t leaf = 0;
  std::uint64_t count = 0;   ///< LoopBegin, Poll
  std::uint32_t jump = 0;    ///< LoopBegin: its LoopEnd; LoopEnd: its LoopBegin
};

/// A numbered loop evaluated at the target: its count, its tags, and the variant of each virtual rank.
struct NumberedProg {
  const NumberedLoop* loop = nullptr;
  std::uint64_t count = 0;
  std::int64_t first_tag = 0;
  std::vector<int> variant_of_virtual;  ///< by virtual rank (the class of each is fixed at the target)
  std::vector<std::vector<CallRecord>> protos;  ///< by variant, by call: what does not depend on (rank, k)
  std::uint64_t calls_per_rank = 0;  ///< mean over the virtual ranks of the calls the loop makes
};

/// A binomial tree sequence at the target: each tree's size and the records of its sends and receives.
struct TreesProg {
  const TreeSequence* seq = nullptr;
  std::vector<CallRecord> send, recv;  ///< per tree: function, tag and size filled in
  std::vector<int> root;                ///< per tree, at the target
};

/// An axis sweep at the target: for each axis of the grid, the calls of its extent class, sizes filled in.
struct SweepProg {
  const AxisSweep* sweep = nullptr;
  std::vector<int> dims;                        ///< dims_create(Np, sweep->dims)
  std::vector<const std::vector<AxisCall>*> calls;  ///< per axis
  std::vector<std::vector<CallRecord>> protos;  ///< per axis, per call
  std::vector<std::vector<bool>> creates;       ///< per axis, per call: it creates a request
  std::uint64_t calls_per_rank = 0;
};

}  // namespace synth

struct SynthSource::Program {
  int loop_counter = 0;  ///< pre-order numbering of loops while compiling (as the fit numbers them)
  std::vector<int> enclosing;  ///< while compiling: pre-order numbers of the enclosing loops
  std::vector<std::uint64_t> enclosing_counts;  ///< while compiling: their iteration counts at the target
  std::vector<synth::Instr> code;
  std::vector<synth::Leaf> leaves;
  std::vector<synth::NumberedProg> numbered;
  std::vector<synth::TreesProg> trees;
  std::vector<synth::SweepProg> sweeps;
  FunctionTable functions;
  int group = 0;
  int max_depth = 0;
  /// Some waitall completes every pending request: streams keep the list of pending requests.
  bool tracks_pending = false;
  double nw = 0;  ///< the target's (numbered loop sizes depend on it and on the iteration)
  /// The steady loop (docs/reference/emulator.md, fast-forward): the outermost loop with the most calls, as the
  /// index of its LoopBegin in `code`; kNoLoop when the program has none it may skip.
  static constexpr std::uint32_t kNoLoop = 0xffffffffu;
  std::uint32_t steady_begin = kNoLoop;
  std::string steady_name;     ///< template path and count formula, for reports
  std::string steady_why_not;  ///< when steady_begin is kNoLoop
  std::vector<std::string> top_loop_names;  ///< while compiling: the name of each top-level loop, by LoopBegin
  std::vector<std::uint32_t> top_loops;     ///< while compiling: LoopBegin indices of the top-level loops
  ModelQuality* quality = nullptr;          ///< while compiling: the source's, where positions are noted
};

namespace synth {

/// Compiles the template `nodes` (at loop depth `depth`, template path `where`) into `p` for the target.
void compile(const std::vector<TemplateNode>& nodes, const TraceModel& m, const SynthTarget& t,
             SynthSource::Program& p, int depth, const std::string& where);

/// Picks the program's steady loop: the top-level loop that emits the most calls (iterations times
/// calls per iteration; the first of equals).
void choose_steady_loop(SynthSource::Program& p, int np);

/// Calls one rank's stream emits from code[from, to), a range of whole loops: each call times the
/// iterations of its enclosing loops in the range, a poll its count, a numbered loop the mean over the
/// virtual ranks (each stands for as many ranks: exact summed over every rank), a tree sequence a rank's
/// share of the 2 (Np - 1) calls of each tree. `visit(instr, multiplier)` sees each call and poll.
template <class Visit>
long double calls_in(const SynthSource::Program& p, std::uint32_t from, std::uint32_t to, int np, Visit&& visit)
{
  long double calls = 0, mult = 1;
  std::vector<long double> stack;
  for (std::uint32_t pc = from; pc < to; ++pc) {
    const Instr& in = p.code[pc];
    switch (in.kind) {
      case Instr::LoopBegin:
        stack.push_back(mult);
        mult *= static_cast<long double>(in.count);
        break;
      case Instr::LoopEnd:
        mult = stack.back();
        stack.pop_back();
        break;
      case Instr::Poll:
      case Instr::Call:
        calls += mult * static_cast<long double>(in.kind == Instr::Poll ? in.count : 1);
        visit(in, mult);
        break;
      case Instr::Numbered:
        calls += mult * static_cast<long double>(p.numbered[in.leaf].calls_per_rank);
        break;
      case Instr::Trees:
        calls += mult * static_cast<long double>(p.trees[in.leaf].seq->ops.size()) * 2.0L *
                 static_cast<long double>(np - 1) / static_cast<long double>(np);
        break;
      case Instr::Sweep:
        calls += mult * static_cast<long double>(p.sweeps[in.leaf].calls_per_rank);
        break;
    }
  }
  return calls;
}

}  // namespace synth

}  // namespace gridcast::models::trace
