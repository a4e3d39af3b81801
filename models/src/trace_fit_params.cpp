// Fitting each template position's parameters from the observations of a group's exact members.
#include "trace_fit_params.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

namespace gridcast::models::trace::detail {

namespace {

std::string expr_key(const RankExpr& e)
{
  return std::string(e.kind_name()) + "/" + std::to_string(e.a) + "/" + std::to_string(e.level) + "/" +
         std::to_string(e.dims) + "/" + std::to_string(e.dim) + "/" + std::to_string(e.block) + "/" +
         (e.reversed ? "r" : "f") + (e.all_axes ? "a" : "s") + (e.there_and_back ? "t" : "");
}

std::string support_key(std::uint32_t token, const char* field) { return std::to_string(token) + "/" + field; }

/// The index of `token` in model.tokens, appended when new (after the sorted tokens of the recorded
/// calls: deterministic, as the nodes that use it are).
std::uint32_t token_of(TraceModel& model, const CallToken& token)
{
  auto it = std::find(model.tokens.begin(), model.tokens.end(), token);
  if (it != model.tokens.end())
    return static_cast<std::uint32_t>(it - model.tokens.begin());
  model.tokens.push_back(token);
  return static_cast<std::uint32_t>(model.tokens.size() - 1);
}

/// A tag the same in every call of each run, changing with (Nw, Np): its formula, if one reproduces
/// every training point exactly.
std::optional<Formula> fit_tag_formula(const SlotObs& s)
{
  for (const auto& [key, range] : s.spread)
    if (key.first == "tag" && range.first != range.second)
      return std::nullopt;
  std::vector<FitPoint> pts = s.tag_values.points();
  auto exact = [&](const Formula& f) {
    return std::all_of(pts.begin(), pts.end(),
                       [&](const FitPoint& p) { return std::llround(f.eval(p.nw, p.np)) == std::llround(p.value); });
  };
  Formula f = fit_formula(pts, true);
  if (exact(f))
    return f;
  // Leave-one-out cannot choose a two-term formula on two points: a tag is exact or wrong, so the
  // simplest "a + b * feature" through the points that reproduces all of them.
  for (std::size_t feat = 1; feat < first_grid_feature() && pts.size() >= 2; ++feat) {
    const double x0 = feature_value(feat, pts[0].nw, pts[0].np);
    for (std::size_t k = 1; k < pts.size(); ++k) {
      const double x1 = feature_value(feat, pts[k].nw, pts[k].np);
      if (x1 == x0)
        continue;
      const double b = (pts[k].value - pts[0].value) / (x1 - x0);
      Formula g;
      g.integer = true;
      g.points  = static_cast<int>(pts.size());
      g.terms   = {{0, pts[0].value - b * x0}, {feat, b}};
      if (exact(g))
        return g;
      break;
    }
  }
  return std::nullopt;
}

/// True when a node of `body` (or of its loops) creates or completes a request.
bool uses_requests(const std::vector<TemplateNode>& body, const TraceModel& model)
{
  for (const TemplateNode& n : body) {
    if (n.kind == RolledNode::Kind::Loop) {
      if (uses_requests(n.body, model))
        return true;
      continue;
    }
    const Op op = model.tokens[n.token].op;
    if (creates_request(op) || model.tokens[n.token].nonblocking || op == Op::Wait || op == Op::Waitall || op == Op::Waitany || op == Op::Test)
      return true;
  }
  return false;
}

/// A polling construct that absorbs work overlaps that work with the receive it waits for: the rank
/// receives the message between two chunks of its update, as soon as it comes, and finishes the update
/// after. Synthesis emits the absorbed work as one burst before the construct's poll, so with the
/// receive after it the emulated rank received only once all of its update was done, and a sender
/// whose large send waits for the receive (rendezvous) waited as long: two ranks that overlap their
/// updates in the run ran one after the other (HPL at np 2, trained at N 512-1024: the training point
/// N 1024 itself predicted +51 %, each rank waiting 0.055 s for 0.01 s in the run, with the work
/// right within 2 %). So the receive that follows such a construct (only compute between them) is
/// posted before it: an irecv of the same parameters before the construct, and a wait where the
/// receive was (tokens of op irecv and wait, named as the receive's function). Then N 1024 predicts
/// -3 %. Requests are numbered by creation, and a wait names its request by how many were created since
/// (request_back): the new irecv would shift the waits that span it, so a group that creates or
/// completes requests elsewhere keeps the receive as it is.
void overlap_absorbed_receives(std::vector<TemplateNode>& group_body, TraceModel& model)
{
  if (uses_requests(group_body, model))
    return;
  auto rewrite = [&](auto& self, std::vector<TemplateNode>& body) -> void {
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (body[i].kind == RolledNode::Kind::Loop) {
        self(self, body[i].body);
        continue;
      }
      if (body[i].kind != RolledNode::Kind::Poll || not body[i].absorbed_flops)
        continue;
      std::size_t j = i + 1;
      while (j < body.size() && body[j].kind == RolledNode::Kind::Call && model.tokens[body[j].token].op == Op::Compute)
        ++j;
      if (j == body.size() || body[j].kind != RolledNode::Kind::Call || model.tokens[body[j].token].op != Op::Recv)
        continue;
      TemplateNode post = body[j];
      CallToken irecv   = model.tokens[post.token];
      irecv.op          = Op::Irecv;
      post.token        = token_of(model, irecv);
      post.seconds.reset();  // the receive's recorded time was waiting: the wait's, and the simulation's
      TemplateNode wait;
      wait.kind         = RolledNode::Kind::Call;
      wait.token        = token_of(model, CallToken{model.tokens[body[j].token].function, Op::Wait});
      wait.request_back = 1;  // the irecv: nothing between them creates a request
      body[j]           = std::move(wait);
      body.insert(body.begin() + static_cast<std::ptrdiff_t>(i), std::move(post));
      ++i;  // past the construct
    }
  };
  rewrite(rewrite, group_body);
}

/// What explained every observation before the first one none explains ("; every earlier observation
/// is ..."): a walk over the grid's axes that restarts with another block is two code sites with the
/// same calls folded into one loop.
std::string earlier_explanation(const RankSeries& series)
{
  const auto& la = series.last_alive;
  auto walk = std::find_if(la.begin(), la.end(), [](const RankExpr& x) { return x.kind == RankExpr::Kind::GridLoop; });
  const bool only_walks =
      std::all_of(la.begin(), la.end(), [](const RankExpr& x) { return x.kind == RankExpr::Kind::GridLoop; });
  if (walk != la.end() && only_walks)
    return "; every earlier observation is " + walk->text() +
           ": a loop whose peer walks the grid's axes and then walks them again another way (two code "
           "sites with the same calls, e.g. one exchange per axis then one per swap, folded into one "
           "loop) has no expression: the model cannot split the loop where the walk restarts";
  if (not la.empty())
    return "; every earlier observation is " + la.front().text();
  return {};
}

/// The error when no rank expression explains a field: the first observations, the one none explains,
/// and what explained every earlier one.
[[noreturn]] void no_rank_expr(const RankSeries& series, const char* field, const std::string& function,
                               const std::string& where)
{
  const std::vector<RankObservation>& obs = series.samples;
  std::string sample;
  for (std::size_t i = 0; i < obs.size(); ++i) {
    sample += (i ? ", " : "") + std::string("rank ") + std::to_string(obs[i].rank) + " of " + std::to_string(obs[i].np);
    for (std::size_t l = 0; l < obs[i].loop.size(); ++l)
      sample += (l ? "," : " at loop index ") + std::to_string(obs[i].loop[l]);
    sample += " -> " + std::to_string(obs[i].value);
  }
  throw InputError({}, std::string("no rank expression explains the ") + field + " of " + function +
                           " (first seen at " + where + "): " + sample +
                           " (the last one is the first no candidate explains; candidates: any, fixed, Np - k, offset mod Np, xor, xor 2^i, cycle over the "
                           "loop index, 1-3-D grid neighbour, grid neighbour whose axis follows the loop index)" +
                           earlier_explanation(series));
}

/// A code that addresses its grid neighbours does so on every axis: where an earlier call of the same
/// function in the same loop body took a grid neighbour and training cannot tell a grid neighbour of
/// this one from something else (an axis of extent 2 in every training grid, whose neighbour is also
/// `r xor 1`), the grid neighbours (face or diagonal) of the same grid stay and the rest go. On a larger
/// grid the axis has two distinct neighbours, and only the grid expression follows the code there.
void prefer_sibling_grid(std::vector<RankExpr>& free, const std::vector<std::pair<std::string, RankExpr>>* used,
                         const std::string& key)
{
  if (used == nullptr)
    return;
  // Diagonal neighbours (GridOffset) are grid neighbours too: a 27-point halo's corner on an axis of
  // extent 2 in every training grid is also its corner the other way along that axis.
  auto on_grid = [](const RankExpr& x) { return x.kind == RankExpr::Kind::Grid || x.kind == RankExpr::Kind::GridOffset; };
  for (const auto& [k, e] : *used) {
    if (k != key || not on_grid(e))
      continue;
    auto same_grid = [&](const RankExpr& x) { return on_grid(x) && x.dims == e.dims; };
    if (std::any_of(free.begin(), free.end(), same_grid) && not std::all_of(free.begin(), free.end(), same_grid))
      std::erase_if(free, [&](const RankExpr& x) { return not same_grid(x); });
    return;
  }
}

/// A code that exchanges along every axis runs the same code on each: where training cannot tell a grid
/// neighbour's direction (an axis of extent 2 in every training grid, whose two neighbours are one rank),
/// the j-th call of this function along this axis takes the direction of the j-th call along another axis
/// (the first such axis, in the order the earlier calls took them). A halo of sendrecvs, `(+1, from -1)`
/// then `(-1, from +1)` along x and y, is the same along z; chosen apart, the peer and the source along z
/// came out `(-1, from -1)` and `(+1, from +1)`, a pairwise swap that holds at extent 2 only and leaves
/// every receive unmatched on a larger grid.
void prefer_axis_analogy(std::vector<RankExpr>& free, const std::vector<std::pair<std::string, RankExpr>>* used,
                         const std::string& key)
{
  if (used == nullptr)
    return;
  auto grid = [](const RankExpr& x) { return x.kind == RankExpr::Kind::Grid; };
  auto plus  = std::find_if(free.begin(), free.end(), [&](const RankExpr& x) { return grid(x) && x.a == 1; });
  auto minus = std::find_if(free.begin(), free.end(), [&](const RankExpr& x) { return grid(x) && x.a == -1; });
  if (plus == free.end() || minus == free.end() || plus->dims != minus->dims || plus->dim != minus->dim)
    return;
  const int dims = plus->dims, dim = plus->dim;
  std::vector<int> order;                 // axes in the order the earlier calls first took them
  std::map<int, std::vector<int>> dirs;   // axis -> directions of the earlier calls along it
  for (const auto& [k, e] : *used)
    if (k == key && grid(e) && e.dims == dims) {
      if (dirs.find(e.dim) == dirs.end())
        order.push_back(e.dim);
      dirs[e.dim].push_back(e.a);
    }
  const std::size_t j = dirs[dim].size();
  for (int d : order)
    if (d != dim && dirs[d].size() > j) {
      const int want = dirs[d][j];
      std::erase_if(free, [&](const RankExpr& x) { return grid(x) && x.dims == dims && x.dim == dim && x.a != want; });
      return;
    }
}

/// Whether two template bodies make the same calls (kinds, tokens, loops), whatever their parameters.
bool same_shape(const std::vector<TemplateNode>& a, const std::vector<TemplateNode>& b)
{
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].token != b[i].token || not same_shape(a[i].body, b[i].body))
      return false;
  return true;
}

/// Something done every K iterations of a loop whose count follows the size: `(B x K, A) x M` then
/// `B x T`, a loop whose body starts with K iterations of B (K constant), followed by a loop of B. The
/// training counts M and T fitted apart fit the points but not the code (2*Nw steps, a reduction every
/// 10th: M = 1, 2, 3 and T = 6, 4, 2 at Nw 8, 12, 16 read as M = Nw/4 - 1 give 7 blocks at Nw 32 where
/// the code makes 6). Where T < K at every point and T changes, the total K*M + T is fitted instead, and
/// the two counts are its parts: floor(total / K) and total mod K (Formula::period). Only where the
/// total's formula is exact at every point.
void fold_every_k(std::vector<TemplateNode>& body, const std::vector<const SlotObs*>& slots)
{
  for (std::size_t i = 0; i + 1 < body.size(); ++i) {
    TemplateNode& blocks = body[i];
    TemplateNode& rest   = body[i + 1];
    if (blocks.kind != RolledNode::Kind::Loop || rest.kind != RolledNode::Kind::Loop || blocks.body.empty() ||
        slots[i] == nullptr || slots[i + 1] == nullptr)
      continue;
    const TemplateNode& inner = blocks.body.front();
    if (inner.kind != RolledNode::Kind::Loop || inner.count.terms.size() != 1 || inner.count.period > 0 ||
        feature_name(inner.count.terms[0].feature) != "1" || not same_shape(inner.body, rest.body))
      continue;
    const double k = inner.count.terms[0].coef;
    if (k < 2 || k != std::round(k))
      continue;
    std::map<std::pair<double, double>, std::pair<double, double>> at;  // (nw, np) -> (M, T)
    for (const FitPoint& p : slots[i]->count.points())
      at[{p.nw, p.np}].first = p.value;
    for (const FitPoint& p : slots[i + 1]->count.points())
      at[{p.nw, p.np}].second = p.value;
    std::vector<FitPoint> total;
    std::set<double> tails;
    bool fits = at.size() >= 3;
    for (const auto& [point, mt] : at) {
      const auto [m, t] = mt;
      fits = fits && m == std::round(m) && t == std::round(t) && t >= 0 && t < k;
      tails.insert(t);
      total.push_back({point.first, point.second, k * m + t});
    }
    if (not fits || tails.size() < 2)
      continue;
    Formula n = fit_formula(total, true);
    if (not n.cv_error || *n.cv_error > 1e-9)
      continue;
    n.period       = static_cast<int>(k);
    blocks.count   = n;
    n.remainder    = true;
    rest.count     = n;
    auto not_count = [](const Approximation& a) { return a.field == "count"; };
    std::erase_if(blocks.approximated, not_count);
    std::erase_if(rest.approximated, not_count);
  }
}

/// The dimension count of the code's process grid, as its point-to-point calls name it: where some
/// position's peer or source is explained only by neighbours in the MPI_Dims_create(Np, d) grid (face or
/// diagonal) and every such position names the same d, that d (PlausibleRange::grid_dims); else 0.
int code_grid_dims(const std::vector<GroupData>& data)
{
  std::set<int> named;
  for (const GroupData& g : data)
    for (const SlotObs& s : g.slots)
      for (const RankSeries* series : {&s.peer, &s.src}) {
        if (not series->seen)
          continue;
        std::set<int> dims;
        bool only_grid = true;
        for (const RankExpr& e : series->result()) {
          only_grid = only_grid && (e.kind == RankExpr::Kind::Grid || e.kind == RankExpr::Kind::GridOffset);
          dims.insert(e.dims);
        }
        if (only_grid && dims.size() == 1)
          named.insert(*dims.begin());
      }
  return named.size() == 1 && (*named.begin() == 2 || *named.begin() == 3) ? *named.begin() : 0;
}

}  // namespace

/// Measured time or work is noisy: the simplest formula within 25 % (+1 point) of the best leave-one-out
/// error, with at least two points more than terms (three terms on four noisy points, or a cubic that
/// fits noise best, run away outside the training range).
Formula fit_measured(const std::vector<FitPoint>& pts)
{
  return fit_formula(pts, false, std::clamp(static_cast<int>(pts.size()) - 2, 1, 3), Parsimony{0.25, 0.01});
}

TemplateFitter::TemplateFitter(TraceModel& model, const std::vector<GroupData>& data)
    : model_(model), tokens_(model.tokens)
{
  count_support(data);
  plausible_.grid_dims = code_grid_dims(data);
  for (const GroupData& g : data)
    for (const SlotObs& s : g.slots) {
      if (s.kind != RolledNode::Kind::Call)
        continue;
      if (s.any_bytes)
        siblings_[{s.token, "bytes"}].push_back(&s);
      if (s.any_recv_bytes)
        siblings_[{s.token, "recv_bytes"}].push_back(&s);
      if (s.any_flops && tokens_[s.token].op == Op::Compute && not s.measured_work)
        siblings_[{s.token, "flops"}].push_back(&s);
    }
  for (const TrainingPoint& p : model.training) {
    plausible_.nw_hi = std::max(plausible_.nw_hi, kPlausibleNw * p.nw);
    plausible_.np_hi = std::max(plausible_.np_hi, kPlausibleNp * p.np);
  }
}

TraceGroup TemplateFitter::fit_group(GroupData& data, std::size_t g)
{
  slots_ = &data.slots;
  group_ = g;
  TraceGroup group = std::move(data.group);
  UsedExprs used;
  std::vector<const SlotObs*> body_slots;
  for (int id : data.top) {
    append_node(group.body, id, used);
    body_slots.resize(group.body.size(), nullptr);
    body_slots.back() = &(*slots_)[static_cast<std::size_t>(id)];
  }
  fold_every_k(group.body, body_slots);
  overlap_absorbed_receives(group.body, model_);
  slots_ = nullptr;
  return group;
}

/// For each (token, field), how many positions of all groups each expression explains. A group seen
/// at one Np only cannot tell a grid neighbour from a rank offset; the same call in groups seen at
/// several Np can, and the call is the same code in every group.
void TemplateFitter::count_support(const std::vector<GroupData>& data)
{
  support_.clear();
  for (const GroupData& d : data)
    for (const SlotObs& s : d.slots) {
      auto add = [&](const RankSeries& series, const char* field) {
        if (series.seen)
          for (const RankExpr& e : series.result())
            ++support_[support_key(s.token, field)][expr_key(e)];
      };
      add(s.peer, "peer");
      add(s.src, "source");
      add(s.root, "root");
      add(s.key, "split key");
      add(s.color, "split color");
    }
}

/// Appends the node of slot `id` to `body`, preceded by the start-up time of MPI_Init where it was
/// measured. The emulator times MPI calls by simulating them, and MPI_Init has nothing to simulate, so
/// its recorded duration (process start-up, shared-memory set-up: a quarter of a second at np 2 on the
/// reference VM, a fifth of a 1-second LAMMPS run) was in every measured run and missing from every
/// prediction. The fit keeps it as a `sleep` of the same function just before the call (idle time:
/// it does not scale with the host's flop rate), regressed on (Nw, Np) like measured compute (the
/// simplest formula near the best: it is noisy), and the call itself keeps no `seconds`. Declared
/// traces (SMPI imports) record no duration for it and get no sleep.
void TemplateFitter::append_node(std::vector<TemplateNode>& body, int id, UsedExprs& used)
{
  TemplateNode t = make_node(id, used);
  const SlotObs& s = (*slots_)[static_cast<std::size_t>(id)];
  if (t.kind == RolledNode::Kind::Call && model_.tokens[t.token].op == Op::Init && s.any_seconds) {
    std::vector<FitPoint> pts = s.seconds.points();
    const bool measured = std::any_of(pts.begin(), pts.end(), [](const FitPoint& p) { return p.value > 0; });
    if (measured) {
      TemplateNode sleep;
      sleep.kind    = RolledNode::Kind::Call;
      sleep.token   = token_of(model_, CallToken{model_.tokens[t.token].function, Op::Sleep});
      sleep.seconds = fit_measured(pts);
      body.push_back(std::move(sleep));
      t.seconds.reset();
    }
  }
  body.push_back(std::move(t));
}

TemplateNode TemplateFitter::make_node(int id, UsedExprs& used)
{
  SlotObs& s = (*slots_)[static_cast<std::size_t>(id)];
  // The rank that founded the template walks every position of it at least once.
  if (s.where.empty() || (s.kind != RolledNode::Kind::Call && s.count.empty()) ||
      (s.kind != RolledNode::Kind::Loop && s.request_back.empty()))
    throw InternalError("trace model: a template position of group " + std::to_string(group_) +
                        " was never observed");
  TemplateNode t;
  t.kind  = s.kind;
  t.token = s.token;
  if (s.kind == RolledNode::Kind::Loop) {
    fit_loop(s, t);
    return t;
  }
  if (s.kind == RolledNode::Kind::Poll) {
    t.count = fit_formula(s.count.points(), true);  // polling lengths vary by nature: their mean, no warning
    // Work done while polling: its total per construct (not per round: the number of rounds is the
    // timing's). Its library calls priced from their arguments where all of them can be, the rest (or
    // all of it) regressed like measured compute (simplest formula near the best, few terms).
    if (s.any_library) {
      t.absorbed_library = fit_absorbed_library(s);
      t.absorbed_flops   = fit_measured((t.absorbed_library.empty() ? s.absorbed : s.absorbed_unpriced).points());
    }
  }
  fit_call_ranks(s, t, used);
  fit_amounts(s, t);
  if (s.requests_back.size() > 1 && tokens_[s.token].op == Op::Waitall && not s.some_not_all_pending &&
      s.request_back.size() <= 1) {
    t.all_pending = true;
    return t;
  }
  if (s.request_back.size() > 1 || s.requests_back.size() > 1)
    throw InputError({}, "the requests completed by " + tokens_[s.token].function + " (first seen at " + s.where +
                             ") are not the same relative to the requests created before it in every iteration");
  t.request_back  = *s.request_back.begin();
  t.requests_back = *s.requests_back.begin();
  return t;
}

void TemplateFitter::fit_loop(SlotObs& s, TemplateNode& t)
{
  t.count = fit_quantity(s.count, true, s, "count", t);
  // A count that follows the process grid's shape (2 swaps per axis of extent > 1: 4 at 2x2x1, 6 at
  // 2x2x2 and 4x2x2) has no simple formula in Np: the regression interpolates it with three terms
  // that run away outside training. The grid-shape form wins where it is exact and shorter.
  if (auto g = fit_grid_formula(s.count.points());
      g && (not t.count.cv_error || *t.count.cv_error > 1e-9 || g->terms.size() < t.count.terms.size())) {
    t.count = *g;  // exact at every point: whatever stood in for the regression is gone with it
    std::erase_if(t.approximated, [](const Approximation& a) { return a.field == "count"; });
  }
  note_data_dependent_count(s, t);
  for (const auto& [np_rank, by_nw] : s.count_by_np_rank_nw) {
    std::set<std::uint64_t> distinct;
    for (const auto& [nw, c] : by_nw)
      distinct.insert(c);
    if (distinct.size() > 1)
      t.nw_dependent = true;
  }
  UsedExprs body_used;
  std::vector<const SlotObs*> body_slots;
  for (int c : s.children) {
    append_node(t.body, c, body_used);
    body_slots.resize(t.body.size(), nullptr);
    body_slots.back() = &(*slots_)[static_cast<std::size_t>(c)];
  }
  fold_every_k(t.body, body_slots);
}

/// Peers, sources, roots, split keys and tags: rank expressions and tag expressions.
void TemplateFitter::fit_call_ranks(SlotObs& s, TemplateNode& t, UsedExprs& used)
{
  const CallToken& tok = tokens_[s.token];
  approximated_.clear();
  t.peer = fit_ranks(s.peer, "peer", s, &used);
  t.src  = fit_ranks(s.src, "source", s, &used);
  t.root = fit_ranks(s.root, "root", s);
  if (tok.op == Op::CommSplit && tok.key == kVaryingKey)
    t.key = fit_ranks(s.key, "split key", s);
  if (tok.op == Op::CommSplit && tok.color == kVaryingColor)
    t.color = fit_ranks(s.color, "split color", s);
  t.approximated.insert(t.approximated.end(), approximated_.begin(), approximated_.end());
  if (tok.tag == kVaryingTag) {
    t.tag = s.tag.result();
    if (not t.tag)
      t.tag_formula = fit_tag_formula(s);
    if (not t.tag && not t.tag_formula)
      t.tag = s.tag.affine();
    if (not t.tag && not t.tag_formula)
      throw InputError({}, "no tag expression (a constant, or affine in the loop indices) explains the tags of " +
                               tok.function + " (first seen at " + s.where + ")");
  }
}

namespace {

/// The size of a message to a grid neighbour: the block's face normal to the neighbour's axis where that
/// reproduces the training points (fit_face_formula), else `fitted`. Where both reproduce them, training
/// grids whose axis kept one extent could not tell them apart, and only the face follows the code.
Formula face_or(Formula fitted, const Series& series, const std::optional<RankExpr>& partner)
{
  if (not partner || partner->kind != RankExpr::Kind::Grid)
    return fitted;
  if (auto face = fit_face_formula(series.points(), partner->dims, partner->dim))
    return *face;
  return fitted;
}

/// Whether `f` gives every point's value: within 0.5 for an integer, else to SMPI's 6 digits.
bool reproduces(const Formula& f, const std::vector<FitPoint>& points, bool integer)
{
  return std::all_of(points.begin(), points.end(), [&](const FitPoint& p) {
    const double v = f.eval(p.nw, p.np);
    return integer ? std::abs(v - p.value) < 0.5 : std::abs(v - p.value) <= 1e-5 * std::max(std::abs(p.value), 1.0);
  });
}

/// Whether some profile's `field` values at this position differed (between ranks or iterations).
bool values_spread(const SlotObs& s, std::string_view field)
{
  return std::any_of(s.spread.begin(), s.spread.end(), [&](const auto& e) {
    return e.first.first == field && e.second.first != e.second.second;
  });
}

/// The loop depth of a position's size samples, where its values differed within a profile (what sizes
/// that follow a loop index need) and every sample was taken at that depth; nullopt otherwise.
std::optional<std::size_t> sample_depth(const SlotObs& s, const std::vector<SlotObs::IterSample>& samples,
                                        std::string_view field)
{
  if (not values_spread(s, field) || samples.empty())
    return std::nullopt;
  const std::size_t depth = samples.front().loop.size();
  if (std::any_of(samples.begin(), samples.end(), [&](const auto& x) { return x.loop.size() != depth; }))
    return std::nullopt;
  return depth;
}

/// A size that several values in one profile, each the value at iteration 0 of one enclosing loop times
/// ratio^k (k that loop's index, the other loops' indices changing nothing): that loop and ratio, and the
/// formula of the value at k = 0, where one loop and one ratio among 1/2, 2, 1/4, 4 reproduce every
/// sample (rounded) and a plausible formula reproduces the values at k = 0 exactly. nullopt otherwise
/// (the mean per position stands in, as before): sizes that differ between ranks, or change otherwise.
std::optional<std::pair<Formula, IterationScale>> fit_geometric(const SlotObs& s,
                                                                const std::vector<SlotObs::IterSample>& samples,
                                                                std::string_view field, PlausibleRange range)
{
  const std::optional<std::size_t> known = sample_depth(s, samples, field);
  if (not known)
    return std::nullopt;
  const std::size_t depth = *known;
  for (std::size_t level = 0; level < depth; ++level) {
    const std::size_t at = depth - 1 - level;  // in IterSample::loop, outermost first
    for (double ratio : {0.5, 2.0, 0.25, 4.0}) {
      // The value at k = 0 of each profile, from its first sample; every other sample must follow.
      std::map<std::size_t, double> base;
      bool ok = true, moved = false;
      for (const auto& x : samples) {
        const double scale = std::pow(ratio, static_cast<double>(x.loop[at]));
        auto [it, first] = base.try_emplace(x.profile, x.value / scale);
        ok = ok && std::abs(std::round(it->second * scale) - x.value) < 0.5 && it->second >= 1;
        moved = moved || x.loop[at] > 0;
        if (not ok)
          break;
      }
      if (not ok || not moved)
        continue;
      std::vector<FitPoint> points;
      for (const auto& [profile, b] : base) {
        const auto& x = *std::find_if(samples.begin(), samples.end(), [&](const auto& y) { return y.profile == profile; });
        points.push_back({x.nw, x.np, std::round(b)});
      }
      PlausibleFit fit = fit_plausible_formula(points, true, range);
      const bool exact = std::all_of(points.begin(), points.end(), [&](const FitPoint& p) {
        return std::abs(fit.formula.eval(p.nw, p.np) - p.value) < 0.5;
      });
      if (fit.best && exact)
        return std::make_pair(fit.formula, IterationScale{static_cast<int>(level), ratio});
    }
  }
  return std::nullopt;
}

/// A size that takes one value per index of one enclosing loop (the same value at that index in every
/// sample of a profile, whatever the other loops' indices), the same K indices 0..K-1 (2 <= K <= 64) in
/// every profile: the formula of each index's values, where a plausible formula reproduces each exactly
/// and each profile's mean of them is the mean over all its calls (the samples are a profile's first
/// calls: a table that other ranks walk with other sizes would show there). A table of grid directions
/// walked by one call site, whose faces and edges carry different sizes. nullopt otherwise.
std::optional<IndexedSize> fit_indexed(const SlotObs& s, const std::vector<SlotObs::IterSample>& samples,
                                       const Series& series, std::string_view field, PlausibleRange range)
{
  const std::optional<std::size_t> known = sample_depth(s, samples, field);
  if (not known)
    return std::nullopt;
  const std::size_t depth = *known;
  std::map<std::pair<double, double>, double> means;  // (nw, np) -> the mean over every call
  for (const FitPoint& p : series.points())
    means[{p.nw, p.np}] = p.value;
  for (std::size_t level = 0; level < depth; ++level) {
    const std::size_t at = depth - 1 - level;  // in IterSample::loop, outermost first
    std::map<std::size_t, std::map<std::uint64_t, double>> table;  // profile -> index -> value
    bool ok = true;
    for (const auto& x : samples) {
      auto [it, first] = table[x.profile].try_emplace(x.loop[at], x.value);
      ok = ok && (first || it->second == x.value);
    }
    const std::size_t k = table.begin()->second.size();
    for (const auto& [profile, values] : table)
      ok = ok && values.size() == k && values.rbegin()->first + 1 == k;
    if (not ok || k < 2 || k > 64)
      continue;
    IndexedSize out;
    out.level = static_cast<int>(level);
    for (std::uint64_t i = 0; i < k && ok; ++i) {
      std::vector<FitPoint> points;
      for (const auto& [profile, values] : table) {
        const auto& x = *std::find_if(samples.begin(), samples.end(), [&](const auto& y) { return y.profile == profile; });
        points.push_back({x.nw, x.np, values.at(i)});
      }
      PlausibleFit fit = fit_plausible_formula(points, true, range);
      ok = fit.best && std::all_of(points.begin(), points.end(), [&](const FitPoint& p) {
             return std::abs(fit.formula.eval(p.nw, p.np) - p.value) < 0.5;
           });
      out.values.push_back(fit.formula);
    }
    for (const auto& [profile, values] : table) {
      const auto& x = *std::find_if(samples.begin(), samples.end(), [&](const auto& y) { return y.profile == profile; });
      double sum = 0;
      for (const auto& [i, v] : values)
        sum += v;
      auto m = means.find({x.nw, x.np});
      ok = ok && m != means.end() && std::abs(sum / static_cast<double>(k) - m->second) <= 1e-9 * std::max(1.0, m->second);
    }
    if (ok)
      return out;
  }
  return std::nullopt;
}

}  // namespace

namespace {

/// How many distinct rank counts `points` were taken at.
std::size_t distinct_np(const std::vector<FitPoint>& points)
{
  std::set<double> nps;
  for (const FitPoint& p : points)
    nps.insert(p.np);
  return nps.size();
}

}  // namespace

/// The same call's quantity as fitted at a position of some group seen at more rank counts, where it
/// reproduces every one of this position's points; nullopt where none does. A rank class seen at one rank
/// count (the interior of a 4x4 grid, trained at 4, 8 and 16 ranks) has its sizes and work as formulas of
/// Nw alone (`576*Nw`, `4320*Nw^2`), which carry its 16-rank blocks to every target; the same call of the
/// edge ranks, seen at 8 and 16, reads the grid (`2304*Nw/dims2[1](Np)`, `69120*Nw^2/Np`) and gives the
/// interior's values at 16 as well. Likewise a class seen at rank counts whose grids keep one extent
/// (4x2 and 4x4: `dims2[0]` = 4 both) takes the form a class seen at 2x2 too could tell. The call is
/// the same code in every group: the sibling seen at the most rank counts wins, the first on a tie.
std::optional<Formula> TemplateFitter::sibling_formula(const SlotObs& s, const char* field,
                                                       const std::vector<FitPoint>& points, bool integer) const
{
  auto it = siblings_.find({s.token, field});
  if (it == siblings_.end())
    return std::nullopt;
  const bool work  = std::string_view(field) == "flops";
  std::size_t best = distinct_np(points);
  std::optional<Formula> out;
  for (const SlotObs* sib : it->second) {
    if (sib == &s)
      continue;
    const Series* series = std::string_view(field) == "bytes" ? &sib->bytes : &sib->recv_bytes;
    const std::vector<FitPoint> own = work ? sib->compute_flops.points() : series->points();
    const std::size_t nps = distinct_np(own);
    if (nps <= best)
      continue;
    const Formula f = work ? fit_compute(*sib) : fit_plausible_formula(own, integer, plausible_).formula;
    if (reproduces(f, own, integer) && reproduces(f, points, integer)) {
      best = nps;
      out  = f;
    }
  }
  return out;
}

/// Sizes, counts, flops and seconds: formulas of (Nw, Np).
void TemplateFitter::fit_amounts(SlotObs& s, TemplateNode& t)
{
  // A message size: geometric in a loop index, else the face normal to the partner's grid axis, else the
  // plausible formula of (Nw, Np); sizes that differ between ranks as their blocks do get each rank's
  // own (BlockShare), the formula then their mean.
  // A size that differs by the index of the loop that walks a table of directions keeps the mean as its
  // formula and the value at each index (IndexedSize), where no block share explains the spread.
  auto size = [&](const Series& series, const std::vector<SlotObs::IterSample>& samples, const RankValues& ranks,
                  const char* field, const std::optional<RankExpr>& partner, std::optional<Formula>& out,
                  std::optional<IterationScale>& scale, std::optional<BlockShare>& block,
                  std::optional<IndexedSize>& indexed) {
    if (auto g = fit_geometric(s, samples, field, plausible_)) {
      out   = g->first;
      scale = g->second;
      return;
    }
    const bool spread = values_spread(s, field);
    out = face_or(fit_quantity(series, true, s, field, t, spread), series, partner);
    if (not spread)
      if (auto sib = sibling_formula(s, field, series.points(), true))
        out = *sib;
    if (spread || not reproduces(*out, series.points(), true))
      block = fit_block_share(ranks.points(), true);
    // Only beside a table of directions walked by the same loop: what gives a face and an edge their
    // sizes is the direction. (Elsewhere sizes by a loop's index would also change HPL's and LAMMPS'
    // models, whose benches measured the mean: not without measuring them again.)
    if (spread && not block && partner && partner->kind == RankExpr::Kind::GridTable)
      if (auto ix = fit_indexed(s, samples, series, field, plausible_); ix && ix->level == partner->level)
        indexed = std::move(ix);
    if (spread && not block && not indexed)
      warn_mean_of_spread(s, field);
  };
  if (s.any_bytes)
    size(s.bytes, s.bytes_iter, s.rank_bytes, "bytes", t.peer, t.bytes, t.bytes_scale, t.bytes_block, t.bytes_by_index);
  if (s.any_recv_bytes)
    size(s.recv_bytes, s.recv_bytes_iter, s.rank_recv_bytes, "recv_bytes", t.src, t.recv_bytes, t.recv_bytes_scale,
         t.recv_bytes_block, t.recv_bytes_by_index);
  // Compute: the site's mean work at each training point, regressed on (Nw, Np) (the first step of the
  // latency model; the ratio is fitted per function once every group is done). Reduction flops alike.
  if (s.any_flops) {
    const bool compute = tokens_[s.token].op == Op::Compute;
    t.flops            = compute ? fit_compute(s) : fit_formula(s.flops.points(), false, 3, Parsimony{});
    if (compute && not s.measured_work)
      if (auto sib = sibling_formula(s, "flops", s.compute_flops.points(), false))
        t.flops = *sib;
    s.fitted_flops = t.flops;
  }
  if (tokens_[s.token].op == Op::Compute) {
    fit_library(s, t);
    // Declared work that differs between ranks as their blocks do is each rank's own; then a rotating
    // root's work; the rank's role (first, last, others) only averages either.
    if (s.any_flops && not t.library && not s.measured_work && t.flops &&
        (not reproduces(*t.flops, s.compute_flops.points(), false) || s.rank_work.differ()))
      t.flops_block = fit_block_share(s.rank_work.points(), false);
    if (s.any_flops && not t.library && not t.flops_block)
      t.root_work = fit_root_work(s);
    if (s.any_flops && not t.root_work && not t.flops_block)
      t.role_scale = fit_role_scale(s);
  }
  if (s.any_seconds)
    t.seconds = fit_formula(s.seconds.points(), false);
  // A communicator of one rank has no "other" entry: then the counts are the rank's own.
  if (s.any_counts)
    t.counts = fit_quantity(s.counts.empty() ? s.counts_self : s.counts, true, s, "counts", t);
  if (s.counts_uneven > 0)
    t.approximated.push_back({"counts", "per-peer counts that differ between the other ranks: their mean (the rank's total kept)",
                              s.counts_uneven});
  if (s.counts_self_differs)
    t.counts_self = fit_formula(s.counts_self.points(), true);
  // A v-collective on another communicator: its size, a count like any other.
  if (not s.comm_size.empty())
    t.comm_size = fit_quantity(s.comm_size, true, s, "comm_size", t);
  if (s.any_recv_counts)
    t.recv_counts = fit_quantity(s.recv_counts.empty() ? s.recv_counts_self : s.recv_counts, true, s, "recv_counts", t);
  if (s.recv_counts_uneven > 0)
    t.approximated.push_back({"recv_counts",
                              "per-peer counts that differ between the other ranks: their mean (the rank's total kept)",
                              s.recv_counts_uneven});
  if (s.recv_counts_self_differs)
    t.recv_counts_self = fit_formula(s.recv_counts_self.points(), true);
}

/// A loop folded by body whose instances ran different counts within one run (a solver iterating until
/// it converges): its count is the mean per instance at each training point, and the position says so,
/// with the widest range seen in one run. Every instance at the target runs that mean, rounded: the total
/// is kept, the order of long and short instances is not.
void TemplateFitter::note_data_dependent_count(const SlotObs& s, TemplateNode& t)
{
  if (not s.counts_vary)
    return;
  const std::pair<double, double>* widest = nullptr;
  std::size_t profile                     = 0;
  for (const auto& [key, range] : s.spread)
    if (key.first == "count" && range.first != range.second &&
        (widest == nullptr || range.second - range.first > widest->second - widest->first)) {
      widest  = &range;
      profile = key.second;
    }
  if (widest == nullptr)
    return;
  std::ostringstream o;
  o << "follows the data, not only the size: its instances ran " << widest->first << " to " << widest->second
    << " iterations in " << model_.training[profile].profile
    << "; every instance at the target runs the mean per instance, " << t.count.text();
  t.approximated.push_back({"count", o.str(), t.count.cv_error.value_or(0.0)});
}

/// Warns where values differed within a profile at this position and their mean stands in.
void TemplateFitter::warn_mean_of_spread(const SlotObs& s, const char* field)
{
  for (const auto& [key, range] : s.spread)
    if (key.first == field && range.first != range.second) {
      std::ostringstream o;
      // A loop's slot has no token of its own (token 0 is whatever call was interned first).
      o << "group " << group_ << ", " << (s.kind == RolledNode::Kind::Loop ? "loop" : op_name(tokens_[s.token].op))
        << " " << field << ": values from "
        << range.first << " to " << range.second << " in " << model_.training[key.second].profile
        << " (first seen at " << s.where << "); fitted on their mean";
      model_.warnings.push_back(o.str());
      break;
    }
}

/// A count or size: the best formula by leave-one-out among those plausible from the training points up
/// to kPlausibleNw x the largest Nw and kPlausibleNp x the largest Np (never negative, monotone where the
/// training series are); where the best is not, the position records what lost and what stands in.
Formula TemplateFitter::fit_quantity(const Series& series, bool integer, SlotObs& s, const char* field, TemplateNode& t,
                                     bool per_rank)
{
  if (not per_rank)
    warn_mean_of_spread(s, field);
  PlausibleRange range = plausible_;
  range.whole          = std::string_view(field) == "count";
  PlausibleFit fit     = fit_plausible_formula(series.points(), integer, range);
  if (not fit.best)
    t.approximated.push_back(
        {field,
         (fit.mean ? "no candidate formula is plausible, the mean of the training points: "
                   : "the best formula by leave-one-out is implausible, the next plausible one: ") +
             fit.formula.text() + " (rejected " + fit.rejected + ")",
         fit.formula.cv_error.value_or(0.0)});
  return fit.formula;
}

/// Where training cannot tell several expressions apart (a grid axis of extent 2 has the same lower and
/// upper neighbour), the first one that no earlier call of the same function in the same loop body
/// uses wins: a halo exchange addresses each neighbour once.
std::optional<RankExpr> TemplateFitter::fit_ranks(const RankSeries& series, const char* field, const SlotObs& s,
                                                  UsedExprs* used)
{
  if (not series.seen)
    return std::nullopt;
  std::vector<RankExpr> all = series.result();
  // A neighbour whose axis follows the loop index only where nothing with a fixed meaning explains the
  // observations (a loop that ran once in training says nothing about its axis walk).
  if (std::any_of(all.begin(), all.end(), [](const RankExpr& x) { return x.kind != RankExpr::Kind::GridLoop; }))
    std::erase_if(all, [](const RankExpr& x) { return x.kind == RankExpr::Kind::GridLoop; });
  if (all.empty()) {
    // A loop that walks a table of grid directions (the 8 or 26 neighbours of a 9- or 27-point halo
    // through one call site): the table every observation agrees with.
    std::string unsure;
    if (auto table = series.tables.table(&unsure)) {
      if (not unsure.empty())
        approximated_.push_back({field, unsure, 0.0});
      if (used != nullptr)
        used->emplace_back(tokens_[s.token].function + "/" + field, *table);
      return table;
    }
    // No expression explains every observation: the one that explains the most at the largest training
    // Np stands in, and the position says how many it misses there.
    auto fallback = series.best_fallback();
    if (not fallback)
      no_rank_expr(series, field, tokens_[s.token].function, s.where);
    std::ostringstream why;
    why << "no rank expression explains every observation (first unexplained: rank " << series.samples.back().rank
        << " of " << series.samples.back().np << " -> " << series.samples.back().value
        << "); the one that explains the most at the largest training Np: " << fallback->first.text()
        << earlier_explanation(series);
    approximated_.push_back({field, why.str(), fallback->second});
    if (used != nullptr)
      used->emplace_back(tokens_[s.token].function + "/" + field, fallback->first);
    return fallback->first;
  }
  // Candidates an earlier sibling took are dropped (unless nothing else is left), then the one
  // most positions of the same call explain wins, the simplest on a tie.
  const std::string key = tokens_[s.token].function + "/" + field;
  std::vector<RankExpr> free;
  for (const RankExpr& cand : all)
    if (used == nullptr || std::none_of(used->begin(), used->end(), [&](const auto& u) {
          return u.first == key && same_target(u.second, cand);
        }))
      free.push_back(cand);
  if (free.empty())
    free = all;
  prefer_sibling_grid(free, used, key);
  prefer_axis_analogy(free, used, key);
  const auto& votes = support_[support_key(s.token, field)];
  std::optional<RankExpr> e;
  int best = -1;
  for (const RankExpr& cand : free) {
    auto it = votes.find(expr_key(cand));
    int v   = it == votes.end() ? 0 : it->second;
    if (v > best) {
      best = v;
      e    = cand;
    }
  }
  if (used != nullptr)
    used->emplace_back(key, *e);
  return e;
}

}  // namespace gridcast::models::trace::detail
