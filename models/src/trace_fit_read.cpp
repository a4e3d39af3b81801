// Reading the training profiles for the trace fit: the first readings (tags, split keys, polling rounds),
// then each rank into tokens, folded.
#include "trace_fit_read.hpp"

#include "gridcast/foundation/errors.hpp"
#include "trace_fit_completion.hpp"
#include "trace_fit_group.hpp"
#include "trace_numbered.hpp"
#include "trace_fit_series.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>

namespace gridcast::models::trace::detail {

namespace {

/// A message size as a fold refinement value (FitOptions::sizes_nest_loops): the size itself below 2^31,
/// else its high and low halves mixed (two sizes that collide are only told apart less).
std::int32_t size_class_of(std::uint64_t bytes)
{
  if (bytes < (std::uint64_t{1} << 31))
    return static_cast<std::int32_t>(bytes);
  return static_cast<std::int32_t>(((bytes >> 32) ^ bytes) & 0x7fffffffu);
}

}  // namespace

ProfileReader::ProfileReader(const std::vector<std::filesystem::path>& paths, const FitOptions& opt, bool axis_sweeps)
    : opt_(opt)
{
  if (paths.size() < 2)
    throw InputError({paths.empty() ? std::string() : paths[0].string(), 0, {}, -1},
                     "a single profile: nothing to fit. Give profiles of the same application at two or more "
                     "(Nw, Np) points");
  // Numbered loops first: every later reading sees each of them as one placeholder call.
  numbered_ = scan_numbered(paths, opt_.numbered_min_iterations, opt_.numbered_max_gap);
  // Axis sweeps next, read through the numbered loops' cuts: every later reading sees each as one call.
  if (axis_sweeps) {
    axis_ = scan_axis_sweeps(paths, numbered_);
    for (const AxisKind& k : axis_.kinds)
      for (const auto& block : k.blocks)
        if (block)
          for (const AxisElem& e : *block)
            tokens_.intern(axis_.keys[e.key]);
  }
  for (const auto& p : paths)
    scan_tags(p);
  intern_cut_outs();
  for (const auto& p : paths)
    scan_keys(p);
  // With tags that follow Np only (so that every model of the plain reading stays as it is: a V-cycle's
  // sendrecv tagged by level keeps a token per receive tag there), a sendrecv whose tag is fitted per
  // position receives with that tag where every one of its calls did.
  std::set<std::string> recv_tag_follows;
  if (opt_.tags_follow_np)
    std::set_difference(varying_tag_functions_.begin(), varying_tag_functions_.end(), recv_tag_differs_.begin(),
                        recv_tag_differs_.end(), std::inserter(recv_tag_follows, recv_tag_follows.end()));
  tokens_.set_varying(varying_tag_functions_, varying_key_functions_, varying_color_functions_, recv_tag_follows);
  for (const auto& p : paths)
    scan_polls(p);
  leftover_ = leftover_bases(followers_, rounds_);
  for (const auto& p : paths)
    load(p);
  // Deterministic whatever the order on the command line: by (Np, Nw, path).
  std::sort(profiles_.begin(), profiles_.end(), [](const LoadedProfile& a, const LoadedProfile& b) {
    return std::tie(a.info.np, a.info.nw, a.label) < std::tie(b.info.np, b.info.nw, b.label);
  });
  check_same_application();
  // Points recorded kInstanceProfiles times or more keep their measured work call by call (the
  // per-call median of ProfileSeries); the others only sums, so memory does not grow with the calls.
  std::map<std::pair<double, int>, std::size_t> at_point;
  for (const LoadedProfile& p : profiles_)
    ++at_point[{p.info.nw, p.info.np}];
  for (const LoadedProfile& p : profiles_)
    repeated_.push_back(at_point[{p.info.nw, p.info.np}] >= ProfileSeries::kInstanceProfiles);
}

/// The calls of the numbered loops and binomial trees: tokens before any rank is read.
void ProfileReader::intern_cut_outs()
{
  for (const NumberedProfile& p : numbered_.profiles)
    for (const auto& rank : p.calls)
      for (const auto& run : rank)
        for (const NumberedCallObs& c : run)
          tokens_.intern(numbered_token(c.function, c.op));
  for (const NumberedProfile& p : numbered_.profiles)
    for (const auto& seq : p.trees)
      for (const TreeObs& t : seq) {
        if (not t.send_fn.empty())
          tokens_.intern(tree_token(t.send_fn, Op::Send, t.tag));
        if (not t.recv_fn.empty())
          tokens_.intern(tree_token(t.recv_fn, Op::Recv, t.tag));
      }
}

/// First reading: functions whose calls use many distinct tags in one rank (message numbering) get
/// their tags fitted per position rather than split into tokens.
void ProfileReader::scan_tags(const std::filesystem::path& path)
{
  if (not is_profile_dir(path))
    throw InputError({path.string(), 0, {}, -1},
                     "not a profile directory (no run.json); import SMPI traces with `gridcast import tit` first");
  ProfileDir dir(path);
  for (int r = 0; r < dir.rank_count(); ++r) {
    std::map<std::uint32_t, std::set<std::int32_t>> tags;  // by the stream's function id
    std::map<std::int64_t, std::pair<std::uint64_t, std::uint32_t>> open_nbc;  // request -> (line, function)
    CallStreamPtr s = open_rank(dir, r);
    CallRecord rec;
    while (s->next(rec)) {
      // The first reading of every rank: a trace that reaches processes outside its world cannot be
      // fitted into a model of that world.
      if (rec.op == Op::DynamicProcess)
        throw InputError({s->source(), rec.line, {}, r}, dynamic_process_refusal(s->functions().name(rec.function)));
      // A nonblocking collective (or MPI_Comm_idup) must be completed by a wait, test or waitall of the
      // rank: synthesis at another size would otherwise leave the collective running past MPI_Finalize,
      // which the replay refuses. Checked here, by name, rather than met as a replay error later.
      if (nonblocking_collective(rec))
        open_nbc.try_emplace(rec.request, rec.line, rec.function);
      if (rec.request != kNoRequest && not creates_request(rec))
        open_nbc.erase(rec.request);
      for (std::int64_t q : rec.requests)
        open_nbc.erase(q);
      auto& t = tags[rec.function];
      if (t.size() <= opt_.varying_tags)
        t.insert(rec.tag);
      if (rec.op == Op::Sendrecv && rec.recv_tag != rec.tag)
        recv_tag_differs_.insert(s->functions().name(rec.function));
    }
    if (not open_nbc.empty()) {
      const auto& [req, at] = *open_nbc.begin();
      throw InputError({s->source(), at.first, {}, r},
                       s->functions().name(at.second) + " creates request " + std::to_string(req) +
                           " that no wait, test or waitall of the rank completes: a nonblocking collective "
                           "still running at the end of the trace cannot be fitted (nor replayed)");
    }
    for (const auto& [fn, t] : tags) {
      const std::string& name = s->functions().name(fn);
      if (t.size() > opt_.varying_tags)
        varying_tag_functions_.insert(name);
      // A tag set that changes with Nw (HPL numbers its messages by panel, and the number of panels
      // grows with N) cannot be part of what the call is: the same rank at another size would run
      // other calls. Compared between profiles of one Np, rank by rank.
      auto& seen = tag_sets_[{name, dir.info().np, r}];
      seen.insert(t);
      if (seen.size() > 1)
        varying_tag_functions_.insert(name);
      if (opt_.tags_follow_np) {
        auto& across = tag_sets_[{name, 0, r}];  // Np 0: the rank's tag sets at every Np
        across.insert(t);
        if (across.size() > 1)
          varying_tag_functions_.insert(name);
      }
    }
  }
}

/// First reading, second part: communicator creations whose split key (or color) differs between the
/// ranks of one profile (a key that is each rank's place, as MPI_Cart_create records it; a color that is
/// the rank's row or its sub-grid's first rank). Kept in the token, such a key would give every rank a
/// template of its own, and at np 2 make rank 1 an approximate member synthesized as rank 0 (peers
/// included); fitted as a rank expression, the ranks share the template.
void ProfileReader::scan_keys(const std::filesystem::path& path)
{
  ProfileDir dir(path);
  std::map<std::uint32_t, std::set<std::int32_t>> keys, colors;  // by the function's name id below
  std::map<std::string, std::uint32_t> ids;
  for (int r = 0; r < dir.rank_count(); ++r) {
    CallStreamPtr s = open_rank(dir, r);
    CallRecord rec;
    while (s->next(rec))
      if (rec.op == Op::CommSplit) {
        const std::string& name = s->functions().name(rec.function);
        auto [it, fresh] = ids.emplace(name, static_cast<std::uint32_t>(ids.size()));
        auto& k = keys[it->second];
        if (k.size() < 2)
          k.insert(rec.key);
        auto& c = colors[it->second];
        if (c.size() < 2 && rec.color >= 0)
          c.insert(rec.color);
      }
  }
  for (const auto& [name, id] : ids) {
    if (keys[id].size() > 1)
      varying_key_functions_.insert(name);
    if (colors[id].size() > 1)
      varying_color_functions_.insert(name);
  }
}

/// First reading, third part: the rounds of every polling construct and what follows each construct,
/// so that a construct's lead and its optional leftover round are recognized the same way in every rank
/// (a rank whose constructs never had two rounds learns them from the others).
void ProfileReader::scan_polls(const std::filesystem::path& path)
{
  ProfileDir dir(path);
  std::vector<std::uint32_t> tokens;
  std::vector<PollFollower> found;
  for (int r = 0; r < dir.rank_count(); ++r) {
    CallStreamPtr s = open_rank(dir, r);
    tokens.clear();
    CallRecord rec;
    while (s->next(rec))
      tokens.push_back(tokens_.intern(tokens_.make_token(s->functions().name(rec.function), rec)));
    std::vector<bool> mask(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i)
      mask[i] = tokens_.poll_tokens()[tokens[i]];
    FoldOptions fo = opt_.fold;
    fo.burst_token = tokens_.burst_tokens();
    fo.work_token  = tokens_.work_tokens();
    found.clear();
    poll_followers(tokens, mask, poll_roles(tokens, mask, fo), fo, found, rounds_);
    for (PollFollower& f : found)
      ++followers_[std::move(f)];
  }
}

void ProfileReader::load(const std::filesystem::path& path)
{
  ProfileDir dir(path);
  LoadedProfile p;
  p.path  = path;
  p.label = path.string();
  p.info  = dir.info();
  if (not p.info.complete)
    throw InputError({(path / "run.json").string(), 0, "complete", -1},
                     "the recorded run did not complete: its traces cannot be fitted");
  std::vector<std::uint32_t> tokens;
  std::vector<std::int32_t> refine;  // FoldOptions::refine: the tags fitted per position
  for (int r = 0; r < dir.rank_count(); ++r) {
    CallStreamPtr s = open_rank(dir, r);
    StreamTokenCache cache;
    tokens.clear();
    refine.clear();
    CallRecord rec;
    const auto varying = tokens_.varying_in(*s);
    while (s->next(rec)) {
      tokens.push_back(cache.get(rec, varying, [&] {
        CallToken t = tokens_.make_token(s->functions().name(rec.function), rec);
        p.functions.insert(t.function);
        return tokens_.intern(t);
      }));
      if (opt_.tags_follow_np)
        refine.push_back(not varying(rec.function) ? 0
                         : opt_.sizes_nest_loops  ? size_class_of(rec.bytes)
                                                  : rec.tag);
    }
    RankTrace rt;
    FoldOptions fo   = opt_.fold;
    fo.refine        = refine;
    fo.burst_token   = tokens_.burst_tokens();
    fo.work_token    = tokens_.work_tokens();
    fo.round_bodies  = rounds_;
    fo.leftover_base = leftover_;
    const std::vector<bool>& poll = tokens_.poll_tokens();
    rt.rolled = fold_tokens(tokens, [&](std::uint32_t t) { return poll[t]; }, fo);
    rt.calls  = tokens.size();
    p.ranks.push_back(std::move(rt));
  }
  profiles_.push_back(std::move(p));
}

void ProfileReader::check_same_application() const
{
  const LoadedProfile& ref = profiles_.front();
  for (const LoadedProfile& p : profiles_) {
    std::vector<std::string> missing, extra;
    std::set_difference(ref.functions.begin(), ref.functions.end(), p.functions.begin(), p.functions.end(),
                        std::back_inserter(missing));
    std::set_difference(p.functions.begin(), p.functions.end(), ref.functions.begin(), ref.functions.end(),
                        std::back_inserter(extra));
    if (missing.empty() && extra.empty())
      continue;
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& f : v)
        s += (s.empty() ? "" : ", ") + f;
      return s.empty() ? std::string("none") : s;
    };
    // Where the tables follow the size (every profile of one Nw calls the same functions), the code takes
    // another path at some sizes (a call every K steps where the runs of the small sizes make fewer than
    // K): the fit keeps the sizes that agree (fit_trace_model), as for any branch on Nw.
    if (functions_follow_nw())
      throw NwBranchError({p.label, 0, {}, -1},
                          "its function table does not match " + ref.label + " (missing: " + list(missing) +
                              "; not in " + ref.label + ": " + list(extra) +
                              "), and every profile of one Nw calls the same functions: the application calls "
                              "some functions at some sizes only (every K steps where the runs of some sizes "
                              "make fewer than K, a branch on the size)");
    // Either another application, or one that takes a path at some training points only (a call every K
    // steps where a run has fewer than K, a branch on the size or the rank count): the template of one
    // code path cannot hold both, and the function tables cannot say which it is.
    throw InputError({p.label, 0, {}, -1},
                     "its function table does not match " + ref.label + " (missing: " + list(missing) +
                         "; not in " + ref.label + ": " + list(extra) +
                         "): these are profiles of different applications, or the application calls a function "
                         "at some training points only (every K steps where a run makes fewer than K, a branch "
                         "on the size or the rank count); the trace model fits runs that take one path: train "
                         "on points that all make these calls");
  }
}

bool ProfileReader::functions_follow_nw() const
{
  // Only where every size was run at several rank counts: with one profile per size, two applications
  // look the same.
  std::map<double, std::pair<const std::set<std::string>*, int>> of_nw;  // functions, profiles
  for (const LoadedProfile& p : profiles_) {
    auto [it, fresh] = of_nw.emplace(p.info.nw, std::make_pair(&p.functions, 0));
    if (not fresh && *it->second.first != p.functions)
      return false;
    ++it->second.second;
  }
  for (const auto& [nw, seen] : of_nw)
    if (seen.second < 2)
      return false;
  return of_nw.size() > 1;
}

void ProfileReader::assign_model_ids(TraceModel& model) { tokens_.assign_model_ids(model, opt_.fold, rounds_, leftover_); }

namespace {

/// FitOptions::computes_between_calls: the calls as the profiling hook records them, with one compute call
/// in every gap between two other calls. A run of consecutive compute calls of one function (the
/// computes an SMPI trace records one per smpi_execute_flops) is one call of their summed work, with the
/// first call's line; two other calls with nothing between them (what an SMPI trace records where the
/// code computed nothing) get a compute call of no work between them ("compute", the name SMPI traces
/// give their computes), as the hook writes the gap it measured, however short.
class HookFormComputes final : public CallStream {
public:
  explicit HookFormComputes(CallStreamPtr inner) : inner_(std::move(inner)) {}
  bool next(CallRecord& out) override
  {
    if (not held_ && not inner_->next(next_))
      return false;
    if (last_was_call_ && next_.op != Op::Compute && next_.op != Op::Init) {
      held_          = true;
      last_was_call_ = false;
      out            = CallRecord{};
      out.op         = Op::Compute;
      out.flops      = 0;
      out.seconds    = next_.seconds >= 0 ? 0.0 : -1.0;
      out.function   = functions_.table.intern("compute");
      out.line       = next_.line;
      return true;
    }
    held_ = false;
    out   = std::move(next_);
    const std::uint32_t inner_function = out.function;  // next_'s ids are the inner stream's
    out.function   = functions_.map(inner_->functions(), inner_function);
    last_was_call_ = out.op != Op::Compute;
    if (not mergeable(out))
      return true;
    while (inner_->next(next_)) {
      if (not mergeable(next_) || next_.function != inner_function) {
        held_ = true;
        break;
      }
      out.flops += next_.flops;
      out.seconds = out.seconds >= 0 && next_.seconds >= 0 ? out.seconds + next_.seconds : -1.0;
    }
    return true;
  }
  const FunctionTable& functions() const override { return functions_.table; }
  const std::string& source() const override { return inner_->source(); }

private:
  /// Library calls priced from their arguments and GPU work keep their calls.
  static bool mergeable(const CallRecord& r)
  {
    return r.op == Op::Compute && not r.library.recorded && r.device_seconds < 0;
  }
  CallStreamPtr inner_;
  detail::FunctionIds functions_;
  CallRecord next_;
  bool held_          = false;  ///< next_ is a call read ahead, not yet returned
  bool last_was_call_ = false;  ///< the last call returned is not a compute
};

/// The half of an MPI_Sendrecv (or MPI_Sendrecv_replace) whose other side is MPI_PROC_NULL, which a
/// profiler records as the send or receive that happened (the ends of a non-periodic halo exchange), read
/// as the sendrecv it is, its missing side kNoRank: the same call as the other ranks' sendrecv (the tags
/// and sizes of the missing side taken from the side that happened, as a halo exchange passes them), so
/// the edge ranks share their template, and the partner's rank expression learns where the grid ends
/// (RankSeries::add_off_edge). Synthesis gives such a call its half back where the expression has no
/// value (to_proc_null).
class SendrecvHalves final : public CallStream {
public:
  explicit SendrecvHalves(CallStreamPtr inner) : inner_(std::move(inner)) {}
  bool next(CallRecord& out) override
  {
    if (not inner_->next(out))
      return false;
    if ((out.op != Op::Send && out.op != Op::Recv) || out.request != kNoRequest || not is_sendrecv(out.function))
      return true;
    if (out.op == Op::Send) {
      out.src        = kNoRank;
      out.recv_tag   = out.tag;
      out.recv_bytes = out.bytes;
    } else {
      out.src        = out.peer;
      out.peer       = kNoRank;
      out.recv_tag   = out.tag;
      out.recv_bytes = out.bytes;
    }
    out.op = Op::Sendrecv;
    return true;
  }
  const FunctionTable& functions() const override { return inner_->functions(); }
  const std::string& source() const override { return inner_->source(); }

private:
  bool is_sendrecv(std::uint32_t function)
  {
    if (function >= known_.size())
      known_.resize(function + 1, -1);
    if (known_[function] < 0) {
      const std::string& name = inner_->functions().name(function);
      known_[function] = name == "MPI_Sendrecv" || name == "MPI_Sendrecv_replace" ? 1 : 0;
    }
    return known_[function] == 1;
  }
  CallStreamPtr inner_;
  std::vector<std::int8_t> known_;  ///< by function id: -1 not looked up yet
};

}  // namespace

CallStreamPtr ProfileReader::open_rank(const ProfileDir& dir, int rank) const
{
  CallStreamPtr s = filter_numbered(fold_completion_loops(std::make_unique<SendrecvHalves>(dir.open(rank))),
                                    numbered_.cuts(dir.path(), rank));
  s = filter_numbered(std::move(s), axis_.cuts(dir.path(), rank));
  if (opt_.computes_between_calls)
    return std::make_unique<HookFormComputes>(std::move(s));
  return s;
}

void ProfileReader::read_tokens(const RankRef& pr, std::vector<std::uint32_t>& out) const
{
  out.clear();
  ProfileDir dir(profiles_[pr.first].path);
  CallStreamPtr s = open_rank(dir, pr.second);
  StreamTokenCache cache;
  CallRecord rec;
  while (s->next(rec))
    out.push_back(cache.get(rec, tokens_.varying_in(*s),
                            [&] { return tokens_.model_token(*s, rec, dir.rank_path(pr.second), pr.second); }));
}

void ProfileReader::fit_cut_outs(TraceModel& model) const
{
  if (numbered_.loops() > 0) {
    auto token_of       = [&](const std::string& fn, Op op) { return tokens_.model_id(numbered_token(fn, op)); };
    auto placeholder_of = [&](std::size_t j) { return tokens_.placeholder_id(numbered_placeholder_name(j)); };
    model.numbered      = fit_numbered(numbered_, token_of, placeholder_of, model.warnings);
  }
  if (numbered_.tree_sequences > 0) {
    auto token_of = [&](const std::string& fn, Op op, std::int32_t tag) { return tokens_.model_id(tree_token(fn, op, tag)); };
    auto placeholder_of = [&](std::size_t q) { return tokens_.placeholder_id(tree_placeholder_name(q)); };
    model.trees         = fit_trees(numbered_, token_of, placeholder_of);
  }
  if (not axis_.empty()) {
    auto token_of       = [&](const CallToken& t) { return tokens_.model_id(t); };
    auto placeholder_of = [&](std::size_t k) { return tokens_.placeholder_id(axis_sweep_placeholder_name(k)); };
    model.axis_sweeps   = fit_axis_sweeps(axis_, token_of, placeholder_of);
  }
}

}  // namespace gridcast::models::trace::detail
