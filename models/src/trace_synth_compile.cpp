// Synthesis, first step: the model's templates compiled into a flat program for the target (counts and
// sizes evaluated, compute sites' ratio tables tabulated, what the target approximates noted).
#include "trace_synth_program.hpp"

#include "gridcast/foundation/errors.hpp"
#include "trace_axis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace gridcast::models::trace::synth {

namespace {

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

/// A binomial-tree sequence (trace_trees): its sends and receives evaluated at the target.
void compile_trees(const TreeSequence* ts, const TraceModel& m, const SynthTarget& t, SynthSource::Program& p,
                   const std::string& here)
{
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
}

/// An axis sweep: the calls of each axis of the target's grid, by the axis's extent class.
void compile_sweep(const AxisSweep* as, const TraceModel& m, const SynthTarget& t, SynthSource::Program& p,
                   const std::string& here)
{
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
}

/// One call (or polling construct) of the template: its record evaluated at the target, and its instruction.
void compile_leaf(const TemplateNode& n, std::size_t i, const TraceModel& m, const SynthTarget& t,
                  SynthSource::Program& p, const std::string& here)
{
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
    work.proto.flops = m.absorbed_work(n, t.nw, t.np);
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
  leaf.recv_tag_is_tag = tok.recv_tag == kVaryingTag;
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
  if (leaf.recv_tag_is_tag)
    r.recv_tag = r.tag;
  if (n.bytes)
    r.bytes = eval_count(*n.bytes, t, here, "bytes", *p.quality);
  if (n.recv_bytes)
    r.recv_bytes = eval_count(*n.recv_bytes, t, here, "recv_bytes", *p.quality);
  if (n.bytes_by_index) {
    leaf.bytes_index_level = n.bytes_by_index->level;
    for (const Formula& f : n.bytes_by_index->values)
      leaf.bytes_at_index.push_back(eval_count(f, t, here, "bytes_by_index", *p.quality));
  }
  if (n.recv_bytes_by_index) {
    leaf.recv_bytes_index_level = n.recv_bytes_by_index->level;
    for (const Formula& f : n.recv_bytes_by_index->values)
      leaf.recv_bytes_at_index.push_back(eval_count(f, t, here, "recv_bytes_by_index", *p.quality));
  }
  if (n.flops)
    r.flops = std::max(0.0, n.flops->eval(t.nw, t.np));
  if (n.root_work)
    leaf.root_work = std::make_pair(std::max(0.0, n.root_work->root.eval(t.nw, t.np)),
                                    std::max(0.0, n.root_work->other.eval(t.nw, t.np)));
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
  // One entry per rank of the collective's communicator: the world's, or the size fitted for another.
  const std::size_t entries = n.comm_size ? std::max<std::uint64_t>(1, eval_count(*n.comm_size, t, here, "comm_size", *p.quality))
                                          : static_cast<std::size_t>(t.np);
  if (n.counts)
    r.counts.assign(entries, eval_count(*n.counts, t, here, "counts", *p.quality));
  if (n.recv_counts)
    r.recv_counts.assign(entries, eval_count(*n.recv_counts, t, here, "recv_counts", *p.quality));
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

}  // namespace

// One case per kind of template node (loop, polling construct, call with its tree, axis-sweep or numbered-loop
// placeholder), each emitting instructions into the same program with the same enclosing-loop bookkeeping.
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
      compile_trees(ts, m, t, p, here);
      continue;
    }
    if (const AxisSweep* as = m.axis_sweep_of(n.token); as != nullptr) {
      compile_sweep(as, m, t, p, here);
      continue;
    }
    if (const NumberedLoop* nl = m.numbered_of(n.token); nl != nullptr) {
      p.code.push_back({Instr::Numbered, static_cast<std::uint32_t>(p.numbered.size()), 0, 0});
      p.numbered.push_back(compile_numbered(*nl, m, t, p, here));
      continue;
    }
    compile_leaf(n, i, m, t, p, here);
  }
}

}  // namespace gridcast::models::trace::synth
