#include "gridcast/models/trace_synth.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"
#include "gridcast/models/tit.hpp"

#include "trace_axis.hpp"
#include "trace_synth_quality.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

namespace gridcast::models::trace {

namespace {

bool creates_request(Op op) { return op == Op::Isend || op == Op::Irecv || op == Op::Issend; }


/// One call position of a template, evaluated at the target (what is the same for every rank).
struct Leaf {
  CallRecord proto;
  std::optional<std::uint64_t> counts_self, recv_counts_self;  ///< the rank's own v-collective entry
  const TemplateNode* node = nullptr;
  bool creates = false;
  // Compute calls: the latency model's ratio for this site, tabulated by progress buckets when the model is
  // compiled for the target (the forest is walked once per site and bucket, not once per call).
  const FunctionLatency* latency = nullptr;
  CallContext context;
  int depth = 0;  ///< enclosing loops
  std::vector<float> ratio_table;
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

/// The value of the fitted count or size `f` at the target. One that comes out negative or not finite
/// (a formula extrapolated where it was never plausible) is 0, and a loop count between two integers
/// is rounded: each is listed in `q` as approximated at the target, with the formula's training error.
std::uint64_t eval_count(const Formula& f, const SynthTarget& t, const std::string& where, const char* field,
                         ModelQuality& q)
{
  double raw = 0;
  for (const Term& term : f.terms)
    raw += term.coef * feature_value(term.feature, t.nw, t.np);
  const double v = f.eval(t.nw, t.np);
  std::ostringstream o;
  if (not std::isfinite(v) || v < 0) {
    o << f.text() << " gives " << raw << " at the target: 0 instead";
    q.approximated.push_back({where, field, o.str(), f.cv_error.value_or(0.0)});
    return 0;
  }
  if (std::string_view(field) == "count" && std::abs(raw - v) > ModelQuality::kExactError * std::max(1.0, std::abs(raw))) {
    o << f.text() << " gives " << raw << " iterations at the target: rounded to " << v;
    q.approximated.push_back({where, field, o.str(), f.cv_error.value_or(0.0)});
  }
  return static_cast<std::uint64_t>(v);
}

/// Counts a template position in `q` as it is compiled: exact when nothing was added to
/// q.approximated while it lived.
class PositionNote {
public:
  explicit PositionNote(ModelQuality& q) : q_(q), before_(q.approximated.size()) { ++q_.positions; }
  ~PositionNote() { done(); }
  /// Ends the position early (a loop, before its body's positions are compiled).
  void done()
  {
    if (not done_ && q_.approximated.size() == before_)
      ++q_.exact;
    done_ = true;
  }
  PositionNote(const PositionNote&)            = delete;
  PositionNote& operator=(const PositionNote&) = delete;

private:
  ModelQuality& q_;
  std::size_t before_;
  bool done_ = false;
};

/// What the fit approximated at `n` (model.json "approximated"), and its counts and sizes whose formula
/// does not reproduce the training points (measured work and times are noisy by nature: not listed).
void note_fit_approximations(const TemplateNode& n, const std::string& where, ModelQuality& q)
{
  for (const Approximation& a : n.approximated)
    q.approximated.push_back({where, a.field, a.method, a.train_error});
  auto inexact = [&](const std::optional<Formula>& f, const char* field) {
    if (f && f->cv_error && *f->cv_error > ModelQuality::kExactError &&
        std::none_of(n.approximated.begin(), n.approximated.end(), [&](const Approximation& a) { return a.field == field; }))
      q.approximated.push_back({where, field, "formula " + f->text() + " does not reproduce every training point",
                                *f->cv_error});
  };
  if (n.kind == RolledNode::Kind::Loop)
    inexact(n.count, "count");
  inexact(n.bytes, "bytes");
  inexact(n.recv_bytes, "recv_bytes");
  inexact(n.counts, "counts");
  inexact(n.recv_counts, "recv_counts");
}

}  // namespace

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

struct SynthSource::Program {
  int loop_counter = 0;  ///< pre-order numbering of loops while compiling (as the fit numbers them)
  std::vector<int> enclosing;  ///< while compiling: pre-order numbers of the enclosing loops
  std::vector<std::uint64_t> enclosing_counts;  ///< while compiling: their iteration counts at the target
  std::vector<Instr> code;
  std::vector<Leaf> leaves;
  std::vector<NumberedProg> numbered;
  std::vector<TreesProg> trees;
  std::vector<SweepProg> sweeps;
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

namespace {

/// Iterations i of a loop of `n` whose progress bucket is b, for every b.
std::vector<std::uint64_t> bucket_counts(std::uint64_t n)
{
  std::vector<std::uint64_t> out(kProgressBuckets);
  // ceil(b n / B) without overflow: n = q B + r.
  const std::uint64_t q = n / kProgressBuckets, r = n % kProgressBuckets;
  auto ceil_part = [&](std::uint64_t b) { return b * q + (b * r + kProgressBuckets - 1) / kProgressBuckets; };
  for (std::uint64_t b = 0; b < kProgressBuckets; ++b)
    out[b] = ceil_part(b + 1) - ceil_part(b);
  return out;
}

/// The forest's ratio for every bucket the site's calls fall in at the target, divided by their mean
/// over the site's calls: the ratio redistributes the site's work over its iterations, the mean (the
/// regression on (Nw, Np)) says how much there is. A forest cannot extrapolate (the first iterations of
/// a loop that runs longer than in training get the largest ratio seen, not a larger one); normalizing
/// keeps the regression's total, which can.
void tabulate_ratios(Leaf& leaf, const std::vector<std::uint64_t>& counts)
{
  const int depth = leaf.depth;
  const std::size_t ni = depth >= 1 ? kProgressBuckets : 1, no = depth >= 2 ? kProgressBuckets : 1;
  leaf.ratio_table.assign(ni * no, -1.0f);
  std::vector<std::uint64_t> wi = depth >= 1 ? bucket_counts(counts.back()) : std::vector<std::uint64_t>{1};
  std::vector<std::uint64_t> wo = depth >= 2 ? bucket_counts(counts.front()) : std::vector<std::uint64_t>{1};
  std::vector<double> raw(ni * no, 0.0);
  long double sum = 0, weight = 0;
  for (std::size_t o = 0; o < no; ++o)
    for (std::size_t i = 0; i < ni; ++i) {
      long double w = static_cast<long double>(wo[o]) * static_cast<long double>(wi[i]);
      if (w == 0)
        continue;
      CallContext c  = leaf.context;
      c.inner_bucket = static_cast<int>(i);
      c.outer_bucket = depth >= 2 ? static_cast<int>(o) : static_cast<int>(i);  // one loop: also the outermost
      raw[o * ni + i] = std::max(0.0, leaf.latency->ratio->eval(c.features()));
      sum += w * raw[o * ni + i];
      weight += w;
    }
  const double mean = weight > 0 ? static_cast<double>(sum / weight) : 0.0;
  for (std::size_t k = 0; k < raw.size(); ++k)
    leaf.ratio_table[k] = static_cast<float>(mean > 0 ? raw[k] / mean : raw[k]);
}

/// A numbered loop at the target: the variant of every virtual rank is looked up once (a class that
/// training never saw is an InputError now, not in the middle of a run).
NumberedProg compile_numbered(const NumberedLoop& l, const TraceModel& m, const SynthTarget& t,
                              SynthSource::Program& p, const std::string& here)
{
  NumberedProg np;
  np.loop  = &l;
  np.count = eval_count(l.count, t, here, "count", *p.quality);
  const double first = std::round(l.first_tag.eval(t.nw, t.np));
  const double last  = first + static_cast<double>(l.tag_step) * static_cast<double>(np.count);
  if (not(first >= 0 && last <= static_cast<double>(std::numeric_limits<std::int32_t>::max())))
    throw InputError({}, "tags of the numbered loop at " + here + " (" + l.first_tag.text() + " + " +
                             std::to_string(l.tag_step) + "*k) leave 0..2^31-1 at Nw " + std::to_string(t.nw) +
                             ", Np " + std::to_string(t.np) + ": the target is outside what the model can express");
  np.first_tag = static_cast<std::int64_t>(first);
  // The virtual ranks: those of iteration 0 of every rank (each role is a bijection onto 0..vnp-1 or, on
  // one grid axis, onto 0..dims[dim]-1).
  const int vnp = l.rule.role.virtual_rank(0, t.np, 0).np;
  std::uint64_t per_k = 0;
  for (int v = 0; v < vnp; ++v) {
    std::string cls = l.rule.classifier.classify(v, vnp);
    auto it = std::lower_bound(l.rule.classes.begin(), l.rule.classes.end(), cls,
                               [](const auto& c, const std::string& x) { return c.first < x; });
    if (it == l.rule.classes.end() || it->first != cls)
      throw InputError({}, "virtual rank " + std::to_string(v) + " of " + std::to_string(vnp) + " in the numbered loop at " +
                               here + " is of class '" + cls + "' under '" + l.rule.text() +
                               "', which no training profile had: the target is outside what the model can express");
    np.variant_of_virtual.push_back(it->second);
    per_k += l.variants.at(static_cast<std::size_t>(it->second)).size();
  }
  np.calls_per_rank = per_k * np.count / static_cast<std::uint64_t>(std::max(vnp, 1));
  for (const auto& variant : l.variants) {
    std::vector<CallRecord> protos;
    for (const NumberedCall& c : variant) {
      const CallToken& tok = m.tokens.at(c.token);
      CallRecord r;
      r.op       = tok.op;
      r.function = p.functions.intern(tok.function);
      r.comm     = tok.comm;
      if (c.bytes_mode)
        r.bytes = eval_count(*c.bytes_mode, t, here, "bytes", *p.quality);
      protos.push_back(r);
    }
    np.protos.push_back(std::move(protos));
  }
  return np;
}

// Long (~170 lines) on purpose: one case per kind of template node (loop, polling construct, call with
// its tree, axis-sweep or numbered-loop placeholder), each emitting instructions into the same program
// with the same enclosing-loop bookkeeping; read top to bottom, the cases are the map of the model.
void compile(const std::vector<TemplateNode>& nodes, const TraceModel& m, const SynthTarget& t,
             SynthSource::Program& p, int depth, const std::string& where)
{
  p.max_depth = std::max(p.max_depth, depth);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const TemplateNode& n = nodes[i];
    std::string here      = where + "[" + std::to_string(i) + "]";
    PositionNote position(*p.quality);
    note_fit_approximations(n, here, *p.quality);
    if (n.kind == RolledNode::Kind::Loop) {
      auto begin = static_cast<std::uint32_t>(p.code.size());
      p.code.push_back({Instr::LoopBegin, 0, eval_count(n.count, t, here, "count", *p.quality), 0});
      if (p.enclosing.empty()) {
        p.top_loops.push_back(begin);
        p.top_loop_names.push_back(here + " (" + n.count.text() + " = " + std::to_string(p.code[begin].count) +
                                   " iterations)");
      }
      position.done();
      p.enclosing.push_back(p.loop_counter++);
      p.enclosing_counts.push_back(p.code[begin].count);
      compile(n.body, m, t, p, depth + 1, here + ".body");
      p.enclosing.pop_back();
      p.enclosing_counts.pop_back();
      auto end = static_cast<std::uint32_t>(p.code.size());
      p.code.push_back({Instr::LoopEnd, 0, 0, begin});
      p.code[begin].jump = end;
      continue;
    }
    if (const TreeSequence* ts = m.tree_of(n.token); ts != nullptr) {
      if (ts->powers_of_two && (t.np & (t.np - 1)) != 0)
        throw InputError({}, "the binomial trees at " + here + " were seen at powers of two only (the code's "
                                 "reduction may treat the other ranks apart): Np " + std::to_string(t.np) +
                                 " is outside what the model can express");
      TreesProg tp;
      tp.seq = ts;
      for (const TreeOp& op : ts->ops) {
        CallRecord snd, rcv;
        snd.op = Op::Send;
        rcv.op = Op::Recv;
        snd.function = p.functions.intern(m.tokens.at(op.send_token).function);
        rcv.function = p.functions.intern(m.tokens.at(op.recv_token).function);
        snd.tag = rcv.tag = op.tag;
        snd.bytes = rcv.bytes = eval_count(op.bytes, t, here, "bytes", *p.quality);
        tp.send.push_back(snd);
        tp.recv.push_back(rcv);
        const auto root = static_cast<std::int64_t>(std::llround(op.root.eval(t.nw, t.np)));
        tp.root.push_back(static_cast<int>(((root % t.np) + t.np) % t.np));
      }
      p.code.push_back({Instr::Trees, static_cast<std::uint32_t>(p.trees.size()), 0, 0});
      p.trees.push_back(std::move(tp));
      continue;
    }
    if (const AxisSweep* as = m.axis_sweep_of(n.token); as != nullptr) {
      SweepProg sp;
      sp.sweep = as;
      sp.dims  = dims_create(t.np, as->dims);
      for (std::size_t a = 0; a < sp.dims.size(); ++a) {
        const int cls = AxisSweep::extent_class(sp.dims[a]);
        const auto& block = as->blocks[static_cast<std::size_t>(cls)];
        if (not block)
          throw InputError({}, "the axis sweep at " + here + " never saw an axis of " +
                                   (cls == 0 ? std::string("1 rank") : cls == 1 ? std::string("2 ranks")
                                                                                  : std::string("more than 2 ranks")) +
                                   " in training, and axis " + std::to_string(a) + " of Np " + std::to_string(t.np) +
                                   "'s grid has " + std::to_string(sp.dims[a]) +
                                   ": the target is outside what the model can express");
        sp.calls.push_back(&*block);
        std::vector<CallRecord> protos;
        std::vector<bool> creates;
        for (const AxisCall& c : *block) {
          const CallToken& tok = m.tokens.at(c.token);
          CallRecord r;
          r.op       = tok.op;
          r.function = p.functions.intern(tok.function);
          r.tag      = tok.tag;
          r.recv_tag = tok.recv_tag;
          r.comm     = tok.comm;
          if (c.bytes)
            r.bytes = eval_count(*c.bytes, t, here, "bytes", *p.quality);
          if (c.recv_bytes)
            r.recv_bytes = eval_count(*c.recv_bytes, t, here, "recv_bytes", *p.quality);
          r.requests.resize(c.requests_back.size());
          protos.push_back(r);
          creates.push_back(creates_request(tok.op) || tok.nonblocking);
        }
        sp.calls_per_rank += block->size();
        sp.protos.push_back(std::move(protos));
        sp.creates.push_back(std::move(creates));
      }
      p.code.push_back({Instr::Sweep, static_cast<std::uint32_t>(p.sweeps.size()), 0, 0});
      p.sweeps.push_back(std::move(sp));
      continue;
    }
    if (const NumberedLoop* nl = m.numbered_of(n.token); nl != nullptr) {
      p.code.push_back({Instr::Numbered, static_cast<std::uint32_t>(p.numbered.size()), 0, 0});
      p.numbered.push_back(compile_numbered(*nl, m, t, p, here));
      continue;
    }
    const CallToken& tok = m.tokens.at(n.token);
    if (n.kind == RolledNode::Kind::Poll && n.absorbed_flops) {
      // A polling construct that absorbed work: the work as one compute burst, then one poll (the one
      // that finds the message). The number of rounds it was cut into is the timing's; what the timing
      // depends on is the work and when the message comes, which the burst and the receive after the
      // poll reproduce: the rank is busy for the work, then waits for the message if it is not there yet.
      static const TemplateNode kNoParams;
      Leaf work;
      work.node        = &kNoParams;
      work.proto.op    = Op::Compute;
      work.proto.function = p.functions.intern("compute");
      work.proto.flops = std::max(0.0, n.absorbed_flops->eval(t.nw, t.np));
      p.code.push_back({Instr::Call, static_cast<std::uint32_t>(p.leaves.size()), 0, 0});
      p.leaves.push_back(std::move(work));
    }
    Leaf leaf;
    leaf.node         = &n;
    CallRecord& r     = leaf.proto;
    r.op              = tok.op;
    r.function        = p.functions.intern(tok.function);
    r.tag             = tok.tag == kVaryingTag ? 0 : tok.tag;
    r.recv_tag        = tok.recv_tag;
    r.comm            = tok.comm;
    r.color           = tok.color;
    r.key             = tok.key;
    r.new_comm        = tok.new_comm;
    if (n.tag_formula) {
      const double v = std::round(n.tag_formula->eval(t.nw, t.np));
      if (not(v >= 0 && v <= static_cast<double>(std::numeric_limits<std::int32_t>::max())))
        throw InputError({}, "tag at " + here + " = " + n.tag_formula->text() + " gives " + std::to_string(v) +
                                 " at Nw " + std::to_string(t.nw) + ", Np " + std::to_string(t.np) +
                                 ": the target is outside what the model can express");
      r.tag = static_cast<std::int32_t>(v);
    }
    if (n.bytes)
      r.bytes = eval_count(*n.bytes, t, here, "bytes", *p.quality);
    if (n.recv_bytes)
      r.recv_bytes = eval_count(*n.recv_bytes, t, here, "recv_bytes", *p.quality);
    if (n.flops)
      r.flops = std::max(0.0, n.flops->eval(t.nw, t.np));
    if (n.library)  // priced from the arguments: the rate curve at the site's working set
      r.flops = m.library_flops(*n.library, t.nw, t.np);
    if (tok.op == Op::Compute) {
      leaf.latency            = m.latency_of(tok.function);
      leaf.context.group      = p.group;
      leaf.context.inter_loop = p.enclosing.empty() ? 0 : p.enclosing.back() + 1;
      leaf.context.intra_loop = static_cast<int>(i);
      leaf.depth              = static_cast<int>(p.enclosing.size());
      if (leaf.latency != nullptr && leaf.latency->ratio)
        tabulate_ratios(leaf, p.enclosing_counts);
    }
    if (n.seconds)
      r.seconds = std::max(0.0, n.seconds->eval(t.nw, t.np));
    if (n.counts)
      r.counts.assign(static_cast<std::size_t>(t.np), eval_count(*n.counts, t, here, "counts", *p.quality));
    if (n.recv_counts)
      r.recv_counts.assign(static_cast<std::size_t>(t.np), eval_count(*n.recv_counts, t, here, "recv_counts", *p.quality));
    if (n.counts_self)
      leaf.counts_self = eval_count(*n.counts_self, t, here, "counts_self", *p.quality);
    if (n.recv_counts_self)
      leaf.recv_counts_self = eval_count(*n.recv_counts_self, t, here, "recv_counts_self", *p.quality);
    leaf.creates       = creates_request(tok.op) || tok.nonblocking;
    leaf.request_back  = n.request_back;
    leaf.requests_back = n.requests_back;
    leaf.all_pending   = n.all_pending;
    p.tracks_pending   = p.tracks_pending || n.all_pending;
    r.requests.resize(n.requests_back.size());
    auto id = static_cast<std::uint32_t>(p.leaves.size());
    p.leaves.push_back(std::move(leaf));
    if (n.kind == RolledNode::Kind::Poll)
      p.code.push_back({Instr::Poll, id,
                        n.absorbed_flops ? 1 : std::max<std::uint64_t>(1, eval_count(n.count, t, here, "poll count", *p.quality)),
                        0});
    else
      p.code.push_back({Instr::Call, id, 0, 0});
  }
}

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

/// Picks the program's steady loop: the top-level loop that emits the most calls (iterations times
/// calls per iteration; the first of equals).
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

/// The calls whose MPI_PROC_NULL peer the stream can express by dropping the call or one half of it.
bool is_blocking_p2p(Op op) { return op == Op::Send || op == Op::Ssend || op == Op::Recv || op == Op::Sendrecv; }

class SynthStream final : public CallStream {
public:
  SynthStream(std::shared_ptr<const SynthSource::Program> prog, int rank, int np, std::string source,
              const SynthOptions& options, const std::vector<SynthSource::P2pDrop>* drops = nullptr)
      : prog_(std::move(prog)), rank_(rank), np_(np), source_(std::move(source)), functions_(prog_->functions),
        variability_(options.variability), rng_(splitmix64(options.seed ^ splitmix64(static_cast<std::uint64_t>(rank) + 1)))
  {
    drops_ = drops;
    loop_index_.reserve(static_cast<std::size_t>(prog_->max_depth));
    loop_count_.reserve(static_cast<std::size_t>(prog_->max_depth));
    // Rank expressions that do not use a loop index are evaluated once per rank.
    const std::size_t n = prog_->leaves.size();
    peer_.assign(n, kNoRank);
    src_.assign(n, kNoRank);
    root_.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const TemplateNode& node = *prog_->leaves[i].node;
      const Op op = prog_->leaves[i].proto.op;
      const bool blocking_p2p = is_blocking_p2p(op);
      if (node.peer && not node.peer->uses_loop())
        peer_[i] = blocking_p2p ? eval_p2p_rank(*node.peer, "peer", i) : eval_rank(*node.peer, "peer", i);
      if (node.src && not node.src->uses_loop())
        src_[i] = blocking_p2p ? eval_p2p_rank(*node.src, "src", i) : eval_rank(*node.src, "src", i);
      if (node.root && not node.root->uses_loop())
        root_[i] = eval_rank(*node.root, "root", i);
    }
  }

  bool next(CallRecord& out) override
  {
    const std::vector<Instr>& code = prog_->code;
    for (;;) {
      settle();
      if (pc_ >= code.size())
        return false;
      const Instr& in = code[pc_];
      switch (in.kind) {
        case Instr::Numbered:
        case Instr::Trees:
        case Instr::Sweep: {
          // A construct that emits no call (no iterations, no trees) leaves head_ set: the steady loop's
          // iteration then starts with whatever call follows it.
          const bool emitted = in.kind == Instr::Numbered ? emit_numbered(prog_->numbered[in.leaf], out)
                               : in.kind == Instr::Trees  ? emit_tree(prog_->trees[in.leaf], out)
                                                          : emit_sweep(prog_->sweeps[in.leaf], out);
          if (emitted) {
            head_.reset();
            return true;
          }
          ++pc_;
          continue;
        }
        case Instr::Poll:
          head_.reset();
          emit(in.leaf, out);
          if (poll_left_ == 0)
            poll_left_ = in.count;
          if (--poll_left_ == 0)
            ++pc_;
          return true;
        default:  // Instr::Call (settle() stops at nothing else)
          head_.reset();
          ++pc_;
          if (emit(in.leaf, out))
            return true;
          continue;  // a blocking exchange with MPI_PROC_NULL only: no call
      }
    }
  }

  std::optional<std::uint64_t> loop_head() override
  {
    settle();
    return head_;
  }
  const FunctionTable& functions() const override { return functions_; }
  const std::string& source() const override { return source_; }

private:
  /// Runs the loop-control instructions up to the next call (or the end), noting when that call starts
  /// an iteration of the steady loop. Emits nothing, so loop_head() may look ahead of next().
  void settle()
  {
    const std::vector<Instr>& code = prog_->code;
    while (pc_ < code.size()) {
      const Instr& in = code[pc_];
      switch (in.kind) {
        case Instr::LoopBegin:
          if (in.count == 0) {
            pc_ = in.jump + 1;
            continue;
          }
          loop_index_.push_back(0);
          loop_count_.push_back(in.count);
          if (pc_ == prog_->steady_begin)
            head_ = 0;
          ++pc_;
          continue;
        case Instr::LoopEnd:
          if (++loop_index_.back() < loop_count_.back()) {
            pc_ = in.jump + 1;
            if (in.jump == prog_->steady_begin)
              head_ = loop_index_.back();
          } else {
            loop_index_.pop_back();
            loop_count_.pop_back();
            ++pc_;
          }
          continue;
        case Instr::Poll:
        case Instr::Call:
        case Instr::Numbered:
        case Instr::Trees:
        case Instr::Sweep:
          return;
      }
    }
  }

  /// Whether the fit approximated the rank field `what` ("peer", "src", "root", "split key") of `node`.
  static bool approximated(const TemplateNode& node, std::string_view what)
  {
    const std::string_view field = what == "src" ? std::string_view("source") : what;
    return std::any_of(node.approximated.begin(), node.approximated.end(),
                       [&](const Approximation& a) { return a.field == field; });
  }

  /// True when `e` is a neighbour in a non-periodic grid that this rank does not have (it is at the
  /// edge of that axis): MPI_Cart_shift gives MPI_PROC_NULL there.
  bool off_the_edge(const RankExpr& e) const
  {
    if ((e.kind != RankExpr::Kind::Grid && e.kind != RankExpr::Kind::GridLoop) || e.periodic)
      return false;
    RankExpr wrapped = e;
    wrapped.periodic = true;
    return wrapped.eval(rank_, np_, loop_index_.data(), static_cast<int>(loop_index_.size())).has_value();
  }

  /// The peer or source of a blocking point-to-point call (send, receive, sendrecv), where a neighbour
  /// off the edge of a non-periodic grid is MPI_PROC_NULL (kNoRank): that half of the call does nothing.
  std::int32_t eval_p2p_rank(const RankExpr& e, const char* what, std::size_t leaf) const
  {
    if (not e.eval(rank_, np_, loop_index_.data(), static_cast<int>(loop_index_.size())) && off_the_edge(e))
      return kNoRank;
    return eval_rank(e, what, leaf);
  }

  std::int32_t eval_rank(const RankExpr& e, const char* what, std::size_t leaf) const
  {
    auto v = e.eval(rank_, np_, loop_index_.data(), static_cast<int>(loop_index_.size()));
    const bool valid = v && *v >= -1 && *v < np_ && (*v != -1 || e.kind == RankExpr::Kind::Any);
    if (not valid && approximated(*prog_->leaves[leaf].node, what))
      // An expression that stands in for one that does not exist (model_quality lists it): a value
      // past Np - 1 wraps around, no value (or a missing neighbour) is the rank itself, rather than no
      // prediction.
      return v && *v >= np_ ? *v % np_ : rank_;
    if (not valid)
      throw InputError({source_, 0, what, rank_},
                       std::string(what) + " " + e.text() + " of " + prog_->functions.name(prog_->leaves[leaf].proto.function) +
                           " has no rank at Np " + std::to_string(np_) +
                           ": the target is outside what the model can express");
    return *v;
  }

  /// Sets `out` to the call of leaf `id`; false where the call does nothing (a blocking send, receive or
  /// sendrecv whose every peer is MPI_PROC_NULL: the stream skips it).
  bool emit(std::uint32_t id, CallRecord& out)
  {
    const Leaf& leaf = prog_->leaves[id];
    out              = leaf.proto;
    const TemplateNode& node = *leaf.node;
    const bool blocking_p2p  = is_blocking_p2p(out.op);
    if (node.peer)
      out.peer = node.peer->uses_loop() ? (blocking_p2p ? eval_p2p_rank(*node.peer, "peer", id) : eval_rank(*node.peer, "peer", id))
                                        : peer_[id];
    if (node.src)
      out.src = node.src->uses_loop() ? (blocking_p2p ? eval_p2p_rank(*node.src, "src", id) : eval_rank(*node.src, "src", id))
                                      : src_[id];
    if (blocking_p2p && not to_proc_null(out))
      return false;
    if (node.root)
      out.root = node.root->uses_loop() ? eval_rank(*node.root, "root", id) : root_[id];
    if (node.key)
      out.key = eval_rank(*node.key, "split key", id);
    if (node.tag) {
      auto t = node.tag->eval(loop_index_.data(), static_cast<int>(loop_index_.size()));
      if (not t)
        throw InputError({source_, 0, "tag", rank_}, "tag " + node.tag->text() + " has no valid value here");
      out.tag = *t;
    }
    if (leaf.counts_self && not out.counts.empty())
      out.counts[static_cast<std::size_t>(rank_)] = *leaf.counts_self;
    if (leaf.recv_counts_self && not out.recv_counts.empty())
      out.recv_counts[static_cast<std::size_t>(rank_)] = *leaf.recv_counts_self;
    if (leaf.latency != nullptr)
      out.flops = leaf.proto.flops * ratio(leaf) * (variability_ ? scatter(*leaf.latency) : 1.0);
    if (leaf.creates)
      out.request = created_++;
    else if (leaf.request_back != 0)
      out.request = created_ - leaf.request_back;
    for (std::size_t k = 0; k < leaf.requests_back.size(); ++k)
      out.requests[k] = created_ - leaf.requests_back[k];
    if (prog_->tracks_pending)
      track_pending(leaf, out);
    if (is_blocking_p2p(out.op) && not drop_unmatched(out))
      return false;
    out.line = ++emitted_;
    return true;
  }

  /// Drops the halves of a blocking point-to-point call that SynthSource::balance_point_to_point found
  /// pair with nothing; false when nothing is left of the call.
  bool drop_unmatched(CallRecord& out)
  {
    const std::uint64_t k = p2p_seen_++;
    if (drops_ == nullptr || next_drop_ >= drops_->size() || (*drops_)[next_drop_].ordinal != k)
      return true;
    const std::uint8_t halves = (*drops_)[next_drop_++].halves;
    if (out.op == Op::Sendrecv) {
      if (halves & SynthSource::kDropSend)
        out.peer = kNoRank;
      if (halves & SynthSource::kDropRecv)
        out.src = kNoRank;
      return to_proc_null(out);
    }
    const bool is_send = out.op != Op::Recv;
    return not(halves & (is_send ? SynthSource::kDropSend : SynthSource::kDropRecv));
  }

  /// The requests still pending, for a waitall that completes them all: created ones join, those a
  /// wait or waitall completes leave (a test or waitany may or may not complete its request: it stays).
  void track_pending(const Leaf& leaf, CallRecord& out)
  {
    if (leaf.creates) {
      pending_.push_back(out.request);
    } else if (leaf.all_pending) {
      out.requests = std::move(pending_);
      pending_.clear();
    } else if (out.op == Op::Wait) {
      std::erase(pending_, out.request);
    } else if (out.op == Op::Waitall) {
      std::erase_if(pending_, [&](std::int64_t q) { return std::find(out.requests.begin(), out.requests.end(), q) != out.requests.end(); });
    }
  }

  /// A blocking call with an MPI_PROC_NULL peer (kNoRank) as MPI runs it: a sendrecv without its
  /// destination is its receive, without its source its send; false when nothing is left.
  static bool to_proc_null(CallRecord& c)
  {
    if (c.op != Op::Sendrecv)
      return c.peer != kNoRank;
    if (c.peer == kNoRank && c.src == kNoRank)
      return false;
    if (c.src == kNoRank) {
      c.op = Op::Send;
    } else if (c.peer == kNoRank) {
      c.op       = Op::Recv;
      c.peer     = c.src;
      c.bytes    = c.recv_bytes;
      c.tag      = c.recv_tag;
      c.src      = kNoRank;
      c.recv_bytes = 0;
    }
    return true;
  }

  /// The next call of the numbered loop `nl` (iteration num_k_, call num_q_ of its variant); false, with
  /// the counters reset, once its iterations are over.
  bool emit_numbered(const NumberedProg& nl, CallRecord& out)
  {
    const NumberedLoop& l = *nl.loop;
    while (num_k_ < nl.count) {
      if (num_variant_ < 0) {
        const std::uint64_t kr = l.role_index(num_k_, nl.count);
        num_variant_ = nl.variant_of_virtual[static_cast<std::size_t>(l.rule.role.virtual_rank(rank_, np_, kr).rank)];
      }
      const auto& calls = nl.protos[static_cast<std::size_t>(num_variant_)];
      if (num_q_ < calls.size()) {
        const NumberedCall& c = l.variants[static_cast<std::size_t>(num_variant_)][num_q_];
        out     = calls[num_q_];
        out.tag = static_cast<std::int32_t>(nl.first_tag + l.tag_step * static_cast<std::int64_t>(num_k_));
        if (c.peer) {
          auto v = c.peer->eval(rank_, np_, &num_k_, 1);
          if (not v || *v < 0 || *v >= np_)
            throw InputError({source_, 0, "peer", rank_},
                             "peer " + c.peer->text() + " in iteration " + std::to_string(num_k_) +
                                 " of a numbered loop has no rank at Np " + std::to_string(np_) +
                                 ": the target is outside what the model can express");
          out.peer = *v;
        }
        if (c.bytes) {
          const double b = c.bytes->eval(prog_->nw, np_, num_k_);
          if (not(b >= 0))
            throw InputError({source_, 0, "bytes", rank_},
                             "size " + c.bytes->text() + " in iteration " + std::to_string(num_k_) +
                                 " of a numbered loop is negative at this target: outside what the model can express");
          out.bytes = static_cast<std::uint64_t>(b);
        }
        out.line = ++emitted_;
        ++num_q_;
        return true;
      }
      ++num_k_;
      num_q_       = 0;
      num_variant_ = -1;
    }
    num_k_ = 0;
    return false;
  }

  /// The next call of the tree sequence `tp`; false, with the counters reset, once its trees are over.
  bool emit_tree(const TreesProg& tp, CallRecord& out)
  {
    while (tree_op_ < tp.seq->ops.size()) {
      if (tree_call_ == 0 && tree_calls_.empty()) {
        const TreeOp& op = tp.seq->ops[tree_op_];
        tree_calls_      = tree_calls(op.kind, tp.root[tree_op_], rank_, np_);
      }
      if (tree_call_ < tree_calls_.size()) {
        const auto [send, peer] = tree_calls_[tree_call_++];
        out      = send ? tp.send[tree_op_] : tp.recv[tree_op_];
        out.peer = peer;
        out.line = ++emitted_;
        return true;
      }
      ++tree_op_;
      tree_call_ = 0;
      tree_calls_.clear();
    }
    tree_op_ = 0;
    return false;
  }

  /// The next call of the axis sweep `sp` (axis sweep_axis_, call sweep_call_ of that axis' block); false,
  /// with the counters reset, once every axis is done.
  bool emit_sweep(const SweepProg& sp, CallRecord& out)
  {
    while (sweep_axis_ < sp.dims.size()) {
      const std::vector<AxisCall>& block = *sp.calls[sweep_axis_];
      if (sweep_call_ < block.size()) {
        const AxisCall& c = block[sweep_call_];
        out               = sp.protos[sweep_axis_][sweep_call_];
        const int axis    = static_cast<int>(sweep_axis_);
        if (c.peer_dir != 0)
          out.peer = sweep_neighbour(sp.dims, axis, c.peer_dir);
        if (c.src_dir != 0)
          out.src = sweep_neighbour(sp.dims, axis, c.src_dir);
        if (sp.creates[sweep_axis_][sweep_call_])
          out.request = created_++;
        else if (c.request_back != 0)
          out.request = created_ - c.request_back;
        for (std::size_t k = 0; k < c.requests_back.size(); ++k)
          out.requests[k] = created_ - c.requests_back[k];
        out.line = ++emitted_;
        ++sweep_call_;
        return true;
      }
      ++sweep_axis_;
      sweep_call_ = 0;
    }
    sweep_axis_ = 0;
    return false;
  }

  /// The neighbour of this rank along `axis` of the periodic grid `dims`, `dir` ranks away.
  int sweep_neighbour(const std::vector<int>& dims, int axis, int dir) const
  {
    return detail::grid_neighbour(rank_, dims, axis, dir);
  }

  /// The forest's ratio at this call's context (the table holds what the forest said for each bucket).
  double ratio(const Leaf& leaf)
  {
    if (leaf.ratio_table.empty())
      return 1.0;
    int inner = leaf.depth >= 1 ? progress_bucket(loop_index_.back(), loop_count_.back()) : 0;
    int outer = leaf.depth >= 2 ? progress_bucket(loop_index_.front(), loop_count_.front()) : 0;
    auto slot = static_cast<std::size_t>(outer) * (leaf.depth >= 1 ? kProgressBuckets : 1) + static_cast<std::size_t>(inner);
    return leaf.ratio_table[slot];  // every bucket a call can fall in was tabulated at compile time
  }

  double uniform() { return static_cast<double>((rng_ = splitmix64(rng_)) >> 11) * 0x1.0p-53; }
  double scatter(const FunctionLatency& f)
  {
    if (f.variability.empty())
      return 1.0;
    double a = uniform();
    double b = uniform();
    return f.variability.sample(a, b);
  }

  std::shared_ptr<const SynthSource::Program> prog_;
  int rank_;
  int np_;
  std::string source_;
  FunctionTable functions_;
  std::vector<std::int32_t> peer_, src_, root_;
  std::vector<std::uint64_t> loop_index_, loop_count_;
  std::size_t pc_ = 0;
  std::uint64_t poll_left_ = 0;
  std::uint64_t num_k_ = 0;        ///< numbered loop: the iteration
  std::size_t num_q_ = 0;          ///< numbered loop: the next call of the iteration's variant
  int num_variant_ = -1;           ///< numbered loop: the iteration's variant, -1 before it is looked up
  std::size_t tree_op_ = 0;        ///< tree sequence: the tree
  std::size_t tree_call_ = 0;      ///< tree sequence: the next of its calls
  std::vector<std::pair<bool, int>> tree_calls_;  ///< tree sequence: the rank's calls in the tree
  std::size_t sweep_axis_ = 0;     ///< axis sweep: the axis
  std::size_t sweep_call_ = 0;     ///< axis sweep: the next call of that axis' block
  std::optional<std::uint64_t> head_;  ///< set by settle() when the next call starts a steady-loop iteration
  std::int64_t created_ = 0;
  const std::vector<SynthSource::P2pDrop>* drops_ = nullptr;  ///< this rank's, by ordinal
  std::uint64_t p2p_seen_ = 0;   ///< blocking point-to-point calls emitted so far (before drops)
  std::size_t next_drop_ = 0;    ///< into drops_
  std::vector<std::int64_t> pending_;  ///< with Program::tracks_pending: requests not yet completed
  std::uint64_t emitted_ = 0;
  bool variability_ = false;
  std::uint64_t rng_ = 0;
};

}  // namespace

SynthSource::SynthSource(std::shared_ptr<const TraceModel> model, SynthTarget target, SynthOptions options)
    : model_(std::move(model)), target_(target), options_(options)
{
  if (target_.np < 1)
    throw InputError({}, "the target Np must be at least 1");
  if (target_.nw < 0 || not std::isfinite(target_.nw))
    throw InputError({}, "the target Nw must be a finite number >= 0");
  std::ostringstream o;
  o << "synth(Nw " << target_.nw << ", Np " << target_.np << ")";
  origin_ = o.str();
  for (std::size_t g = 0; g < model_->groups.size(); ++g) {
    auto p   = std::make_shared<Program>();
    p->group   = static_cast<int>(g);
    p->nw      = target_.nw;
    p->quality = &quality_;
    // Every stream of the model sees every function, in token order, so ids agree between ranks.
    for (const CallToken& t : model_->tokens)
      p->functions.intern(t.function);
    compile(model_->groups[g].body, *model_, target_, *p, 0, "groups[" + std::to_string(g) + "].template");
    choose_steady_loop(*p, target_.np);
    p->quality = nullptr;
    programs_.push_back(std::move(p));
  }
  note_extrapolation(*model_, target_, quality_);
  group_of_rank_.resize(static_cast<std::size_t>(target_.np));
  for (int r = 0; r < target_.np; ++r) {
    int g = model_->rule.group_of(r, target_.np);
    if (g < 0 || g >= static_cast<int>(programs_.size()))
      throw InputError({}, "the group rule maps rank " + std::to_string(r) + " to group " + std::to_string(g) +
                               ", which the model does not have");
    group_of_rank_[static_cast<std::size_t>(r)] = g;
  }
  // Open every rank once so that a peer without a value is reported now, not in the middle of a run.
  for (int r = 0; r < target_.np; ++r)
    open(r);
  if (not quality_.approximated.empty())
    balance_point_to_point();
}

void SynthSource::balance_point_to_point()
{
  // Constructs whose calls do not come from template leaves (numbered loops, trees, axis sweeps) are
  // not numbered like them, and a wildcard receive can match any send: then nothing is checked.
  if (not model_->numbered.empty() || not model_->trees.empty() || not model_->axis_sweeps.empty())
    return;
  struct Half {
    int rank;
    std::uint64_t ordinal;  ///< kNonblocking: an isend or irecv, which is not dropped
  };
  constexpr std::uint64_t kNonblocking = ~std::uint64_t{0};
  struct Channel {
    std::vector<Half> sends, recvs;
  };
  std::map<std::tuple<int, int, std::int32_t, std::int32_t>, Channel> channels;  // (from, to, tag, comm)
  for (int r = 0; r < target_.np; ++r) {
    auto stream = open(r);
    CallRecord c;
    std::uint64_t ordinal = 0;
    while (stream->next(c)) {
      const bool blocking = is_blocking_p2p(c.op);
      const std::uint64_t k = blocking ? ordinal++ : kNonblocking;
      if (c.op == Op::Send || c.op == Op::Ssend || c.op == Op::Isend || c.op == Op::Issend || c.op == Op::Sendrecv)
        channels[{r, c.peer, c.tag, c.comm}].sends.push_back({r, k});
      const bool recv = c.op == Op::Recv || c.op == Op::Irecv || c.op == Op::Sendrecv;
      const std::int32_t from = c.op == Op::Sendrecv ? c.src : c.peer;
      const std::int32_t tag  = c.op == Op::Sendrecv ? c.recv_tag : c.tag;
      if (recv && (from == kAnySource || tag == kAnyTag))
        return;
      if (recv)
        channels[{from, r, tag, c.comm}].recvs.push_back({r, k});
    }
  }
  // A receive without its send blocks forever: dropped (a blocking one; a nonblocking one is counted).
  // A send without its receive completes where it is sent eagerly, as in a training run that recorded
  // it so: kept, and counted.
  std::map<int, std::map<std::uint64_t, std::uint8_t>> drop;
  std::uint64_t recvs = 0, dropped = 0, left = 0, lone_sends = 0;
  for (const auto& [key, ch] : channels) {
    recvs += ch.recvs.size();
    lone_sends += ch.sends.size() > ch.recvs.size() ? ch.sends.size() - ch.recvs.size() : 0;
    for (std::size_t i = ch.sends.size(); i < ch.recvs.size(); ++i) {
      const Half& h = ch.recvs[i];
      if (h.ordinal == kNonblocking) {
        ++left;
      } else {
        drop[h.rank][h.ordinal] |= kDropRecv;
        ++dropped;
      }
    }
  }
  if (drop.empty() && left == 0)
    return;
  drops_.resize(static_cast<std::size_t>(target_.np));
  for (const auto& [rank, by_ordinal] : drop)
    for (const auto& [ordinal, halves] : by_ordinal)
      drops_[static_cast<std::size_t>(rank)].push_back({ordinal, halves});
  std::ostringstream o;
  o << dropped << " of " << recvs
    << " receives have no matching send at the target (approximated peers or counts): dropped";
  if (left > 0)
    o << "; " << left << " nonblocking receives left unmatched (the run may not finish)";
  if (lone_sends > 0)
    o << "; " << lone_sends << " sends have no matching receive (kept: they complete where sent eagerly)";
  quality_.approximated.push_back({"point-to-point", "matching", o.str(), 0.0});
}

SynthSource::~SynthSource() = default;

CallStreamPtr SynthSource::open(int rank) const
{
  if (rank < 0 || rank >= target_.np)
    throw InternalError("SynthSource::open: rank out of range");
  return std::make_unique<SynthStream>(programs_[static_cast<std::size_t>(group_of_rank_[static_cast<std::size_t>(rank)])],
                                       rank, target_.np, origin_, options_,
                                       drops_.empty() ? nullptr : &drops_[static_cast<std::size_t>(rank)]);
}

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

RunInfo SynthSource::run_info(TraceEncoding encoding) const
{
  RunInfo info;
  info.np       = target_.np;
  info.nw       = target_.nw;
  info.command  = "gridcast synth";
  info.host.name = "synthesized";
  info.encoding = encoding;
  info.origin   = "synthesized";
  // The synthesized calls are the recorded run's: a replay of them chooses collectives as it did.
  if (not model_->training.empty()) {
    info.mpi_library = model_->training.front().mpi_library;
    for (const TrainingPoint& p : model_->training)
      if (p.mpi_library != info.mpi_library)
        info.mpi_library.clear();  // the profiles disagree: the replay says so through its fallback
  }
  return info;
}

}  // namespace gridcast::models::trace
