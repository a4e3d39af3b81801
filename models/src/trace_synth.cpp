#include "gridcast/models/trace_synth.hpp"

#include "trace_synth_program.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"
#include "gridcast/models/tit.hpp"

#include "trace_axis.hpp"
#include "trace_synth_quality.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iomanip>
#include <limits>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

namespace gridcast::models::trace {

using namespace synth;

namespace {

/// Whether the fit approximated the rank field `what` ("peer", "src", "root", "split key") of `node`.
bool approximated(const TemplateNode& node, std::string_view what)
{
  const std::string_view field = what == "src" ? std::string_view("source") : what;
  return std::any_of(node.approximated.begin(), node.approximated.end(),
                     [&](const Approximation& a) { return a.field == field; });
}

/// A blocking call with an MPI_PROC_NULL peer (kNoRank) as MPI runs it: a sendrecv without its
/// destination is its receive, without its source its send; false when nothing is left.
bool to_proc_null(CallRecord& c)
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

/// The variability of compute work (--variability on): a factor drawn from a call site's fitted
/// distribution, from the stream's own generator (seeded by the seed and the rank).
class WorkScatter {
public:
  WorkScatter(bool on, std::uint64_t seed) : on_(on), rng_(seed) {}
  double factor(const FunctionLatency& f)
  {
    if (not on_ || f.variability.empty())
      return 1.0;
    double a = uniform();
    double b = uniform();
    return f.variability.sample(a, b);
  }

private:
  double uniform() { return static_cast<double>((rng_ = splitmix64(rng_)) >> 11) * 0x1.0p-53; }
  bool on_;
  std::uint64_t rng_;
};

/// The forest's ratio for a compute call of `leaf` at the loop position (`index` of `count` per enclosing loop,
/// outermost first): the table holds what the forest said for each progress bucket.
double forest_ratio(const Leaf& leaf, const std::vector<std::uint64_t>& index, const std::vector<std::uint64_t>& count)
{
  if (leaf.ratio_table.empty())
    return 1.0;
  int inner = leaf.depth >= 1 ? progress_bucket(index.back(), count.back()) : 0;
  int outer = leaf.depth >= 2 ? progress_bucket(index.front(), count.front()) : 0;
  auto slot = static_cast<std::size_t>(outer) * (leaf.depth >= 1 ? kProgressBuckets : 1) + static_cast<std::size_t>(inner);
  return leaf.ratio_table[slot];  // every bucket a call can fall in was tabulated at compile time
}

/// A rank's values at the leaves with a BlockShare (TemplateNode::bytes_block...): its own block of the
/// target's grid, evaluated once per rank.
class RankBlocks {
public:
  RankBlocks(int rank, int np, double nw, std::string source) : rank_(rank), np_(np), nw_(nw), source_(std::move(source)) {}
  void add(const TemplateNode& node, std::size_t id, std::size_t leaves)
  {
    if (not node.bytes_block && not node.recv_bytes_block && not node.flops_block)
      return;
    values_.resize(leaves);
    values_[id] = {value(node.bytes_block, "bytes_block", id), value(node.recv_bytes_block, "recv_bytes_block", id),
                   value(node.flops_block, "flops_block", id)};
  }
  void apply(const TemplateNode& node, std::size_t id, CallRecord& out) const
  {
    if (values_.empty())
      return;
    if (node.bytes_block)
      out.bytes = static_cast<std::uint64_t>(values_[id][0]);
    if (node.recv_bytes_block)
      out.recv_bytes = static_cast<std::uint64_t>(values_[id][1]);
    if (node.flops_block)
      out.flops = values_[id][2];
  }

private:
  double value(const std::optional<BlockShare>& b, const char* key, std::size_t id)
  {
    if (not b)
      return 0;
    auto& [grid, coords] = grids_[static_cast<std::size_t>(b->dims - 1)];
    if (grid.empty()) {
      grid   = dims_create(np_, b->dims);
      coords = grid_coords(rank_, grid);
    }
    const double v = b->eval(nw_, grid, coords);
    if (not(v >= 0 && v < 1.8e19))
      throw InputError({source_, 0, key, rank_}, b->text() + " gives " + std::to_string(v) + " at leaf " +
                                                     std::to_string(id) + ": the target is outside what the model can express");
    return v;
  }
  int rank_, np_;
  double nw_;
  std::string source_;
  std::vector<std::array<double, 3>> values_;  ///< by leaf: bytes, recv_bytes, flops (empty: no leaf has a share)
  std::array<std::pair<std::vector<int>, std::vector<int>>, 3> grids_;  ///< by dims - 1: (grid, coords)
};

/// Where a synthesized call is: the enclosing loops' indices (outermost first), for the errors the stream,
/// the rank and the function.
struct LoopPlace {
  const std::vector<std::uint64_t>& loop_index;
  const std::string& source;
  int rank;
  const std::string& function;

  /// The index of the loop `level` levels out from the innermost; an error naming `key` where the call is
  /// inside fewer loops.
  std::uint64_t index_at(int level, const char* key) const
  {
    const auto depth = static_cast<int>(loop_index.size());
    if (level >= depth)
      throw InputError({source, 0, key, rank}, std::string(key) + " of " + function + " names loop level " +
                                                   std::to_string(level) + " but the call is inside " +
                                                   std::to_string(depth) + " loop(s)");
    return loop_index[static_cast<std::size_t>(depth - 1 - level)];
  }
};

/// A size at iteration k of the loop `scale` names: its value at k = 0 times ratio^k, rounded.
std::uint64_t scaled(std::uint64_t base, const IterationScale& scale, const LoopPlace& at, const char* key)
{
  const auto k   = static_cast<double>(at.index_at(scale.level, key));
  const double v = std::round(static_cast<double>(base) * std::pow(scale.ratio, k));
  if (not(v >= 0 && v <= 1e18))
    throw InputError({at.source, 0, key, at.rank}, std::string(key) + " gives " + std::to_string(v) +
                                                       " bytes in iteration " + std::to_string(k) +
                                                       ": the target is outside what the model can express");
  return static_cast<std::uint64_t>(v);
}

/// A size at the current index of the loop `level` names, from its table (IndexedSize at the target);
/// `mean` past the table (a loop that runs more iterations at the target than training saw).
std::uint64_t at_index(const std::vector<std::uint64_t>& table, int level, std::uint64_t mean, const LoopPlace& at,
                       const char* key)
{
  const std::uint64_t k = at.index_at(level, key);
  return k < table.size() ? table[k] : mean;
}

class SynthStream final : public CallStream {
public:
  SynthStream(std::shared_ptr<const SynthSource::Program> prog, int rank, int np, std::string source,
              const SynthOptions& options, const std::vector<SynthSource::P2pDrop>* drops = nullptr)
      : prog_(std::move(prog)), rank_(rank), np_(np), source_(std::move(source)), functions_(prog_->functions),
        blocks_(rank, np, prog_->nw, source_), drops_(drops),
        scatter_(options.variability, splitmix64(options.seed ^ splitmix64(static_cast<std::uint64_t>(rank) + 1)))
  {
    loop_index_.reserve(static_cast<std::size_t>(prog_->max_depth));
    loop_count_.reserve(static_cast<std::size_t>(prog_->max_depth));
    // Rank expressions that do not use a loop index are evaluated once per rank.
    const std::size_t n = prog_->leaves.size();
    peer_.assign(n, kNoRank);
    src_.assign(n, kNoRank);
    root_.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const TemplateNode& node = *prog_->leaves[i].node;
      const bool blocking_p2p  = is_blocking_p2p(prog_->leaves[i].proto.op);
      if (node.peer && not node.peer->uses_loop())
        peer_[i] = blocking_p2p ? eval_p2p_rank(*node.peer, "peer", i) : eval_rank(*node.peer, "peer", i);
      if (node.src && not node.src->uses_loop())
        src_[i] = blocking_p2p ? eval_p2p_rank(*node.src, "src", i) : eval_rank(*node.src, "src", i);
      if (node.root && not node.root->uses_loop())
        root_[i] = eval_rank(*node.root, "root", i);
      blocks_.add(node, i, n);
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
    if (node.tag) {
      auto t = node.tag->eval(loop_index_.data(), loop_count_.data(), static_cast<int>(loop_index_.size()));
      if (not t)
        throw InputError({source_, 0, "tag", rank_}, "tag " + node.tag->text() + " has no valid value here");
      out.tag = *t;
      if (leaf.recv_tag_is_tag)
        out.recv_tag = *t;
    }
    if (blocking_p2p && not to_proc_null(out))
      return false;
    if (node.root)
      last_root_ = out.root = node.root->uses_loop() ? eval_rank(*node.root, "root", id) : root_[id];
    if (node.key)
      out.key = eval_rank(*node.key, "split key", id);
    if (node.color)
      out.color = eval_rank(*node.color, "split color", id);
    auto here = [&] { return LoopPlace{loop_index_, source_, rank_, prog_->functions.name(leaf.proto.function)}; };
    if (node.bytes_scale)
      out.bytes = scaled(out.bytes, *node.bytes_scale, here(), "bytes_scale");
    if (node.recv_bytes_scale)
      out.recv_bytes = scaled(out.recv_bytes, *node.recv_bytes_scale, here(), "recv_bytes_scale");
    if (not leaf.bytes_at_index.empty())
      out.bytes = at_index(leaf.bytes_at_index, leaf.bytes_index_level, out.bytes, here(), "bytes_by_index");
    if (not leaf.recv_bytes_at_index.empty())
      out.recv_bytes = at_index(leaf.recv_bytes_at_index, leaf.recv_bytes_index_level, out.recv_bytes, here(),
                                "recv_bytes_by_index");
    if (leaf.counts_self && not out.counts.empty())
      out.counts[static_cast<std::size_t>(rank_)] = *leaf.counts_self;
    if (leaf.recv_counts_self && not out.recv_counts.empty())
      out.recv_counts[static_cast<std::size_t>(rank_)] = *leaf.recv_counts_self;
    if (leaf.root_work)
      out.flops = rank_ == last_root_ ? leaf.root_work->first : leaf.root_work->second;
    blocks_.apply(node, id, out);  // this rank's own block, where the leaf has a BlockShare
    if (leaf.latency != nullptr)
      out.flops = out.flops * forest_ratio(leaf, loop_index_, loop_count_) * scatter_.factor(*leaf.latency);
    if (node.role_scale)
      out.flops *= node.role_scale->of(rank_, np_);
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

  std::shared_ptr<const SynthSource::Program> prog_;
  int rank_;
  int np_;
  int last_root_ = -1;  ///< the root of the last rooted collective emitted (TemplateNode::RootWork)
  std::string source_;
  FunctionTable functions_;
  std::vector<std::int32_t> peer_, src_, root_;
  RankBlocks blocks_;
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
  WorkScatter scatter_;
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
  std::map<std::string, std::pair<int, int>> unseen;  // class -> (group, ranks)
  for (int r = 0; r < target_.np; ++r) {
    int g = model_->rule.group_of(r, target_.np);
    if (g < 0 || g >= static_cast<int>(programs_.size()))
      throw InputError({}, "the group rule maps rank " + std::to_string(r) + " to group " + std::to_string(g) +
                               ", which the model does not have");
    group_of_rank_[static_cast<std::size_t>(r)] = g;
    if (std::string cls = model_->rule.unseen_class(r, target_.np); not cls.empty()) {
      auto& [group, ranks] = unseen[cls];
      group = g;
      ++ranks;
    }
  }
  // Ranks of a class no training profile had, placed by the grid's ends (GroupRule::group_of): said.
  for (const auto& [cls, gr] : unseen)
    quality_.approximated.push_back(
        {"rule", "group", std::to_string(gr.second) + " rank(s) of class '" + cls + "', which no training profile had, run group " +
                              std::to_string(gr.first) + ", the group of the classes that differ from it only on the axes where it is new",
         0.0});
  // Open every rank once so that a peer without a value is reported now, not in the middle of a run.
  for (int r = 0; r < target_.np; ++r)
    open(r);
  if (not quality_.approximated.empty())
    balance_point_to_point();
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
