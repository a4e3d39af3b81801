// Walking every exact member of a group along the group's template: the observations of each position.
#include "trace_fit_walk.hpp"

#include "gridcast/foundation/errors.hpp"
#include "trace_fit_group.hpp"

#include <algorithm>
#include <map>

namespace gridcast::models::trace::detail {

/// The parameters of one recorded call that the model fits per position.
struct CallParams {
  std::int32_t peer = kNoRank;
  std::int32_t src  = kNoRank;
  std::int32_t root = 0;
  std::uint64_t bytes = 0;
  std::uint64_t recv_bytes = 0;
  double flops = 0;
  double seconds = -1;
  std::int64_t request_back = 0;
  std::vector<std::int64_t> requests_back;
  /// Waitall: its requests are every request still pending (whatever their distances).
  bool all_pending = false;
  std::vector<std::uint64_t> counts, recv_counts;
  std::int32_t tag = 0;
  std::int32_t key = 0;  ///< comm_split: the split key
  std::int32_t color = 0;  ///< comm_split: the color
  std::uint64_t line = 0;
  LibraryArgs library;  ///< compute calls of a library function: their recorded arguments
  /// The call's work in flops: declared, or measured seconds through the recording host's speed.
  double work(double speed_flops) const { return flops > 0 ? flops : (seconds > 0 ? seconds * speed_flops : 0.0); }
};

namespace {

bool is_rooted(Op op)
{
  return op == Op::Bcast || op == Op::Reduce || op == Op::Gather || op == Op::Gatherv || op == Op::Scatter ||
         op == Op::Scatterv;
}

/// The second reading of a rank: its calls one at a time, as model tokens and parameters. Requests
/// are tracked while pending only (a wait forgets its request), so memory does not grow either.
class CallCursor {
public:
  CallCursor(const ProfileReader& reader, const LoadedProfile& p, int rank)
      : reader_(reader), dir_(p.path), stream_(reader.open_rank(dir_, rank)), rank_(rank)
  {
    advance();
  }
  bool at_end() const { return end_; }
  std::uint32_t token() const { return token_; }
  std::size_t index() const { return index_; }  ///< of the current call, from 0
  /// The current call's parameters; moves on to the next call.
  CallParams take()
  {
    CallParams c;
    c.peer        = rec_.peer;
    c.src         = rec_.src;
    c.root        = rec_.root;
    c.bytes       = rec_.bytes;
    c.recv_bytes  = rec_.recv_bytes;
    c.flops       = rec_.flops;
    c.seconds     = rec_.seconds;
    c.line        = rec_.line;
    c.counts      = rec_.counts;
    c.recv_counts = rec_.recv_counts;
    c.tag         = rec_.tag;
    c.key         = rec_.key;
    c.color       = rec_.color;
    c.library     = rec_.library;
    if (creates_request(rec_))
      ordinal_[rec_.request] = created_++;
    else if (rec_.request != kNoRequest)
      c.request_back = back(rec_.request, rec_.op == Op::Wait);
    if (rec_.op == Op::Waitall)
      c.all_pending = completes_all_pending(rec_.requests);
    for (std::int64_t q : rec_.requests)
      c.requests_back.push_back(back(q, rec_.op == Op::Waitall));
    advance();
    return c;
  }

private:
  /// True when `requests` are exactly the pending requests (each once).
  bool completes_all_pending(const std::vector<std::int64_t>& requests) const
  {
    if (requests.size() != ordinal_.size())
      return false;
    std::vector<std::int64_t> sorted = requests;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      return false;
    return std::all_of(sorted.begin(), sorted.end(), [&](std::int64_t q) { return ordinal_.contains(q); });
  }
  /// How many requests were created since `req`; `forget`: the call completes it.
  std::int64_t back(std::int64_t req, bool forget)
  {
    auto it = ordinal_.find(req);
    if (it == ordinal_.end())
      throw InputError({dir_.rank_path(rank_).string(), rec_.line, "request", rank_},
                       "request " + std::to_string(req) +
                           " completed but not pending (never created by isend/irecv or a nonblocking "
                           "collective, or already waited for)");
    std::int64_t b = created_ - it->second;
    if (forget)
      ordinal_.erase(it);
    return b;
  }
  void advance()
  {
    if (started_)
      ++index_;
    started_ = true;
    end_     = not stream_->next(rec_);
    if (end_)
      return;
    const TokenTable& tokens = reader_.tokens();
    token_ = cache_.get(rec_, tokens.varying_in(*stream_),
                        [&] { return tokens.model_token(*stream_, rec_, dir_.rank_path(rank_), rank_); });
  }
  StreamTokenCache cache_;

  const ProfileReader& reader_;
  ProfileDir dir_;
  CallStreamPtr stream_;
  int rank_;
  CallRecord rec_;
  bool end_ = false;
  std::uint32_t token_ = 0;
  std::size_t index_ = 0;
  bool started_      = false;
  std::map<std::int64_t, std::int64_t> ordinal_;
  std::int64_t created_ = 0;
};

/// Keeps the first SlotObs::kIterSamples sizes of each profile observed inside loops, with their loop indices.
template <class WalkStateT>
void sample_iteration(std::vector<SlotObs::IterSample>& samples, const WalkStateT& w, double v)
{
  if (w.loop.empty())
    return;
  std::size_t in_profile = 0;
  for (auto it = samples.rbegin(); it != samples.rend() && it->profile == w.profile; ++it)
    ++in_profile;
  if (in_profile >= SlotObs::kIterSamples)
    return;
  samples.push_back({w.profile, w.nw, static_cast<double>(w.np), w.loop, v});
}

void note_spread(SlotObs& s, const char* field, std::size_t profile, double v)
{
  auto [it, inserted] = s.spread.try_emplace({field, profile}, v, v);
  if (not inserted) {
    it->second.first  = std::min(it->second.first, v);
    it->second.second = std::max(it->second.second, v);
  }
}

}  // namespace

struct GroupCollector::WalkState {
  std::size_t profile;
  int rank;
  int np;
  double nw;
  CallCursor* cursor;
  const std::vector<std::uint64_t>* decisions;
  const std::vector<std::uint32_t>* roles;  ///< of every call (poll_roles)
  std::size_t next_decision = 0;
  std::vector<std::uint64_t> loop;
  std::size_t group = 0;
  std::vector<std::pair<int, std::uint64_t>> loops;  ///< enclosing loops: (pre-order number, count)
  SlotObs* last_poll = nullptr;  ///< the polling construct walked last (a leftover round adds to its work)
  double speed_flops = 0;        ///< the recording host's
  int last_root = -1;            ///< the root of the last rooted collective the rank made (-1: none yet)
  /// The profile's times are SMPI's simulated ones (recorded by the hook under SMPI): its timed compute is
  /// the work the program declared, exact.
  bool simulated_time = false;
  std::vector<std::uint64_t> counts;  ///< the enclosing loops' counts in this instance, as `loop`
};

GroupData GroupCollector::collect(const std::vector<RolledNode>& templ, std::size_t g)
{
  slots_.clear();
  loop_counter_ = 0;
  TraceGroup group;
  std::vector<int> top = build_slots(templ);
  const std::vector<LoadedProfile>& profiles = reader_.profiles();
  for (std::size_t p = 0; p < profiles.size(); ++p) {
    std::vector<int> exact;
    for (int r = 0; r < static_cast<int>(profiles[p].ranks.size()); ++r) {
      const RankTrace& rt = profiles[p].ranks[static_cast<std::size_t>(r)];
      if (rt.group != static_cast<int>(g))
        continue;
      if (not rt.exact) {
        ++group.approximate_members;
        continue;
      }
      exact.push_back(r);
      std::vector<std::uint32_t> tokens;
      reader_.read_tokens({p, r}, tokens);
      const std::vector<std::uint32_t> roles = reader_.tokens().roles_of(tokens);
      CallCursor cursor(reader_, profiles[p], r);
      WalkState w{p, r, profiles[p].info.np, profiles[p].info.nw, &cursor, &rt.decisions, &roles, 0, {}, g, {},
                  nullptr, profiles[p].info.host.speed_flops, -1, false, {}};
      w.simulated_time = profiles[p].info.mpi_library.rfind("SMPI", 0) == 0;
      walk(templ, top, w);
      if (not cursor.at_end())
        changed(w);
    }
    if (not exact.empty())
      group.members.push_back(profiles[p].label + ": ranks " + ranks_text(exact));
  }
  return GroupData{std::move(group), std::move(slots_), std::move(top)};
}

std::vector<int> GroupCollector::build_slots(const std::vector<RolledNode>& nodes)
{
  std::vector<int> ids;
  for (const RolledNode& n : nodes) {
    int id = static_cast<int>(slots_.size());
    slots_.emplace_back();
    slots_[static_cast<std::size_t>(id)].kind  = n.kind;
    slots_[static_cast<std::size_t>(id)].token = n.token;
    slots_[static_cast<std::size_t>(id)].counts_vary = n.counts_vary;
    if (n.kind == RolledNode::Kind::Loop) {
      slots_[static_cast<std::size_t>(id)].loop_ordinal = loop_counter_++;
      std::vector<int> children = build_slots(n.body);
      slots_[static_cast<std::size_t>(id)].children = std::move(children);
    }
    ids.push_back(id);
  }
  return ids;
}

void GroupCollector::changed(const WalkState& w) const
{
  throw InputError({reader_.profiles()[w.profile].label, 0, {}, w.rank},
                   "the rank's calls differ between two readings (was the profile modified while fitting?)");
}

void GroupCollector::walk(const std::vector<RolledNode>& nodes, const std::vector<int>& ids, WalkState& w)
{
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const RolledNode& n = nodes[k];
    SlotObs& s          = slots_[static_cast<std::size_t>(ids[k])];
    if (s.where.empty())
      s.where = reader_.profiles()[w.profile].label + " rank " + std::to_string(w.rank);
    switch (n.kind) {
      case RolledNode::Kind::Call:
        walk_call(n, s, k, w);
        break;
      case RolledNode::Kind::Poll:
        walk_poll(n, s, k, w);
        break;
      case RolledNode::Kind::Loop:
        walk_loop(n, s, w);
        break;
    }
  }
}

void GroupCollector::walk_call(const RolledNode& n, SlotObs& s, std::size_t k, WalkState& w)
{
  if (w.cursor->at_end() || w.cursor->token() != n.token)
    changed(w);
  observe_call(s, w, w.cursor->take(), k);
  // A leftover round after the receive that ended a construct: its work is the construct's.
  while (not w.cursor->at_end() && (*w.roles)[w.cursor->index()] == kRoleAbsorbed) {
    if (w.last_poll == nullptr)
      changed(w);
    const std::uint32_t token = w.cursor->token();
    w.last_poll->any_library  = w.last_poll->any_library || not reader_.tokens().burst_model(token);
    CallParams c              = w.cursor->take();
    const double work         = c.work(w.speed_flops);
    const double np           = static_cast<double>(w.np);
    w.last_poll->absorbed.add_to_last(w.nw, np, w.profile, w.rank, work);
    w.last_poll->absorbed_unpriced.add_to_last(w.nw, np, w.profile, w.rank, absorb(*w.last_poll, w, token, c, work));
  }
}

/// One compute call a construct absorbed, for pricing the construct's library work from arguments: a
/// library call whose arguments give its cost on a kernel with a rate curve is added to its kernel's sums
/// (0 returned); anything else (a burst, a call without arguments) is returned, the work regressed. A
/// library call that cannot be priced makes the whole construct a regressed one (`missing`).
double GroupCollector::absorb(SlotObs& s, const WalkState& w, std::uint32_t token, const CallParams& c, double work)
{
  if (reader_.tokens().burst_model(token))
    return work;
  SlotObs::AbsorbedLibrary& lib = s.absorbed_library;
  if (not lib.missing.empty())
    return work;
  const std::string& function = tokens_[token].function;
  const std::string kernel{library_kernel(function)};
  if (kernel.empty()) {
    lib.missing = "it absorbs " + function + ", whose cost no arguments give";
    return work;
  }
  const std::optional<LibraryCost> cost = library_cost(function, c.library);
  lib.missing = unpriceable(kernel, cost, w);
  if (not lib.missing.empty())
    return work;
  add_library_call(lib.kernels[kernel][{w.nw, static_cast<double>(w.np)}], w, *cost, kernel, work);
  return 0.0;
}

/// The construct's calls: its polls (observed as calls: sources, tags) and the compute it absorbed, whose
/// total work is kept. Bursts alone between polls are the polling loop's own time (synthesis emits the
/// polls; the emulator's test cost stands for it); library calls are work done while waiting, which the
/// construct must conserve whatever the number of rounds it was cut into.
void GroupCollector::walk_poll(const RolledNode& n, SlotObs& s, std::size_t k, WalkState& w)
{
  if (w.cursor->at_end() || (*w.roles)[w.cursor->index()] != n.token)
    changed(w);
  std::uint64_t len = 0;
  double work = 0, unpriced = 0;
  do {
    if (w.cursor->token() == n.token) {
      observe_call(s, w, w.cursor->take(), k);
      ++len;
    } else {
      const std::uint32_t token = w.cursor->token();
      s.any_library  = s.any_library || not reader_.tokens().burst_model(token);
      CallParams c   = w.cursor->take();
      const double x = c.work(w.speed_flops);
      work += x;
      unpriced += absorb(s, w, token, c, x);
    }
  } while (not w.cursor->at_end() && (*w.roles)[w.cursor->index()] == kRoleAbsorbed);
  if (len == 0)
    changed(w);
  const double np = static_cast<double>(w.np);
  s.count.add(w.nw, np, static_cast<double>(len));
  s.absorbed.add(w.nw, np, w.profile, w.rank, reader_.repeated(w.profile), work);
  s.absorbed_unpriced.add(w.nw, np, w.profile, w.rank, reader_.repeated(w.profile), unpriced);
  ++s.absorbed_library.constructs[{w.nw, np}];
  w.last_poll = &s;
}

void GroupCollector::walk_loop(const RolledNode& n, SlotObs& s, WalkState& w)
{
  if (w.next_decision >= w.decisions->size())
    changed(w);
  const std::uint64_t count = (*w.decisions)[w.next_decision++];
  s.count.add(w.nw, static_cast<double>(w.np), static_cast<double>(count));
  note_spread(s, "count", w.profile, static_cast<double>(count));
  s.count_by_np_rank_nw[{w.np, w.rank}][w.nw] = count;
  w.loop.push_back(0);
  w.loops.emplace_back(s.loop_ordinal, count);
  w.counts.push_back(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    w.loop.back() = i;
    walk(n.body, s.children, w);
  }
  w.loop.pop_back();
  w.loops.pop_back();
  w.counts.pop_back();
}

/// A compute call: its work in flops (measured seconds through the recording host's speed), for the
/// site mean and, with its context, for the ratio and the variability of the latency model.
void GroupCollector::observe_compute(SlotObs& s, WalkState& w, const CallParams& c, std::size_t position)
{
  const double work = c.work(w.speed_flops);
  s.compute_flops.add(w.nw, static_cast<double>(w.np), w.profile, w.rank, reader_.repeated(w.profile), work);
  s.rank_work.note(w.profile, w.nw, w.np, w.rank, work);
  const std::size_t role = w.rank == 0 ? 0 : w.rank == w.np - 1 ? 1 : 2, at = 3 * w.profile + role;
  if (s.role_work.size() <= at)
    s.role_work.resize(at + 1);
  auto& rw = s.role_work[at];
  rw.first += work;
  ++rw.second;
  if (w.last_root >= 0) {
    SlotObs::RootRole& rr = s.root_role[w.profile];
    rr.nw                 = w.nw;
    rr.np                 = w.np;
    const std::size_t k   = w.rank == w.last_root ? 0 : 1;
    rr.work[k] += work;
    ++rr.calls[k];
    if (rr.first_root < 0)
      rr.first_root = w.last_root;
    rr.rotates = rr.rotates || rr.first_root != w.last_root;
  }
  s.any_flops = s.any_flops || work != 0;
  s.measured_work = s.measured_work || (c.flops <= 0 && c.seconds > 0 && not w.simulated_time);
  s.compute.context.group      = static_cast<int>(w.group);
  s.compute.context.inter_loop = w.loops.empty() ? 0 : w.loops.back().first + 1;
  s.compute.context.intra_loop = static_cast<int>(position);
  int inner = w.loops.empty() ? 0 : progress_bucket(w.loop.back(), w.loops.back().second);
  int outer = w.loops.empty() ? 0 : progress_bucket(w.loop.front(), w.loops.front().second);
  s.compute.add(w.profile, inner, outer, work);
  observe_library(s, w, c, work);
}

/// A library call's arguments, for pricing its site from them: the first call without them (or of a
/// kernel without a rate curve) makes the site a regressed one.
void GroupCollector::observe_library(SlotObs& s, const WalkState& w, const CallParams& c, double work)
{
  SlotObs::LibraryObs& lib = s.library;
  const std::string& function = tokens_[s.token].function;
  const std::string_view kernel = library_kernel(function);
  if (kernel.empty() || not lib.missing.empty())
    return;  // not a library function (an application function, a compute burst), or already regressed
  lib.kernel = kernel;
  const std::optional<LibraryCost> cost = library_cost(function, c.library);
  lib.missing = unpriceable(lib.kernel, cost, w);
  if (lib.missing.empty())
    add_library_call(lib.points[{w.nw, static_cast<double>(w.np)}], w, *cost, lib.kernel, work);
}

/// Why a call of `kernel` whose arguments gave `cost` cannot be priced from them (empty: it can): no
/// arguments recorded, or no rate curve for the kernel. A site's or a construct's first such call makes
/// it a regressed one.
std::string GroupCollector::unpriceable(const std::string& kernel, const std::optional<LibraryCost>& cost,
                                        const WalkState& w) const
{
  if (not cost)
    return "no arguments recorded (" + reader_.profiles()[w.profile].label + ")";
  if (not library_rates_.contains(kernel))
    return "no rate curve for " + kernel + " in the profiles' calibration";
  return {};
}

/// Adds one priced call (its cost from the arguments, its measured work in flops) to a point's sums.
void GroupCollector::add_library_call(SlotObs::LibraryObs::Point& p, const WalkState& w, const LibraryCost& cost,
                                      const std::string& kernel, double work)
{
  const double curve = cost.work / kernel_rate_at(library_rates_.at(kernel), std::max(1.0, cost.working_set_bytes)) *
                       w.speed_flops;
  ++p.calls;
  p.work += cost.work;
  p.work_x_bytes += cost.work * cost.working_set_bytes;
  p.observed += work;
  p.curve += curve;
  auto& run = p.runs[{w.profile, w.rank}];
  run.first += work;
  run.second += curve;
}

void GroupCollector::observe_call(SlotObs& s, WalkState& w, const CallParams& c, std::size_t position)
{
  const CallToken& tok = tokens_[s.token];
  const auto np = static_cast<double>(w.np);
  if (tok.op == Op::Compute) {
    observe_compute(s, w, c, position);
    s.request_back.insert(c.request_back);
    s.requests_back.insert(c.requests_back);
    s.some_not_all_pending = s.some_not_all_pending || not c.all_pending;
    return;
  }
  // A sendrecv's missing side is MPI_PROC_NULL (SendrecvHalves): an observation that the partner
  // expression has no value at this rank.
  if (c.peer != kNoRank)
    s.peer.add(w.rank, w.np, w.loop, c.peer);
  else if (tok.op == Op::Sendrecv)
    s.peer.add_off_edge(w.rank, w.np, w.loop);
  if (c.src != kNoRank)
    s.src.add(w.rank, w.np, w.loop, c.src);
  else if (tok.op == Op::Sendrecv)
    s.src.add_off_edge(w.rank, w.np, w.loop);
  s.peer.tables.counts(w.loops);
  s.src.tables.counts(w.loops);
  if (is_rooted(tok.op)) {
    s.root.add(w.rank, w.np, w.loop, c.root);
    w.last_root = c.root;
  }
  if (tok.tag == kVaryingTag) {
    s.tag.add(w.loop, w.counts, c.tag);
    s.tag_values.add(w.nw, np, static_cast<double>(c.tag));
    note_spread(s, "tag", w.profile, static_cast<double>(c.tag));
  }
  if (tok.op == Op::CommSplit && tok.key == kVaryingKey)
    s.key.add(w.rank, w.np, w.loop, c.key);
  if (tok.op == Op::CommSplit && tok.color == kVaryingColor)
    s.color.add(w.rank, w.np, w.loop, c.color);
  s.bytes.add(w.nw, np, static_cast<double>(c.bytes));
  s.any_bytes = s.any_bytes || c.bytes != 0;
  note_spread(s, "bytes", w.profile, static_cast<double>(c.bytes));
  s.rank_bytes.note(w.profile, w.nw, w.np, w.rank, static_cast<double>(c.bytes));
  sample_iteration(s.bytes_iter, w, static_cast<double>(c.bytes));
  // A polling construct's probes found nothing (0) until the last found the message: the mean over its
  // polls depends on how many rounds the timing gave it, and a regression of that mean ran away outside
  // the training range (HPL at 2x: a negative size). The size found is what the probes say.
  if (s.kind != RolledNode::Kind::Poll || c.recv_bytes != 0) {
    s.recv_bytes.add(w.nw, np, static_cast<double>(c.recv_bytes));
    s.any_recv_bytes = s.any_recv_bytes || c.recv_bytes != 0;
    note_spread(s, "recv_bytes", w.profile, static_cast<double>(c.recv_bytes));
    s.rank_recv_bytes.note(w.profile, w.nw, w.np, w.rank, static_cast<double>(c.recv_bytes));
    sample_iteration(s.recv_bytes_iter, w, static_cast<double>(c.recv_bytes));
  }
  s.flops.add(w.nw, np, c.flops);
  s.any_flops = s.any_flops || c.flops != 0;
  if (c.seconds >= 0) {
    s.seconds.add(w.nw, np, c.seconds);
    s.any_seconds = true;
  }
  // v-collectives: one count for every other rank, and one for the rank itself (often 0 or a local
  // copy of another size).
  auto per_peer = [&](const std::vector<std::uint64_t>& v, const char* field, Series& others, Series& self,
                      bool& any, bool& self_differs, double& uneven) {
    if (v.empty())
      return;
    any = true;
    const std::string& label = reader_.profiles()[w.profile].label;
    if (tok.comm != kWorldComm) {
      // On another communicator (a split's, a duplicate's) the counts are one per rank of it, and the
      // rank's place in it is not recorded: one count stands for every entry (their mean, which keeps the
      // rank's total), and the communicator's size is fitted beside it.
      double sum = 0;
      for (std::uint64_t x : v)
        sum += static_cast<double>(x);
      const double mean = sum / static_cast<double>(v.size());
      for (std::uint64_t x : v)
        uneven = std::max(uneven, std::abs(static_cast<double>(x) - mean) / std::max(mean, 1.0));
      others.add(w.nw, np, mean);
      s.comm_size.add(w.nw, np, static_cast<double>(v.size()));
      note_spread(s, "comm_size", w.profile, static_cast<double>(v.size()));
      return;
    }
    if (static_cast<int>(v.size()) != w.np)
      throw InputError({label, c.line, field, w.rank}, std::string(op_name(tok.op)) + ": " + std::to_string(v.size()) +
                                                           " counts for " + std::to_string(w.np) + " ranks");
    const auto me = static_cast<std::size_t>(w.rank);
    double other  = static_cast<double>(v[me == 0 && v.size() > 1 ? 1 : 0]);
    // Counts that differ between the other ranks (an FFT transpose of a size the ranks do not divide)
    // have no per-peer model: their mean stands in, which keeps the rank's total, and the position
    // records the largest relative difference from it.
    bool differ = false;
    for (std::size_t j = 0; j < v.size(); ++j)
      differ = differ || (j != me && static_cast<double>(v[j]) != other);
    if (differ) {
      double sum = 0;
      for (std::size_t j = 0; j < v.size(); ++j)
        sum += j == me ? 0.0 : static_cast<double>(v[j]);
      other = sum / static_cast<double>(v.size() - 1);
      for (std::size_t j = 0; j < v.size(); ++j)
        if (j != me)
          uneven = std::max(uneven, std::abs(static_cast<double>(v[j]) - other) / std::max(other, 1.0));
    }
    if (v.size() > 1)
      others.add(w.nw, np, other);
    self.add(w.nw, np, static_cast<double>(v[me]));
    if (v.size() > 1 && static_cast<double>(v[me]) != other)
      self_differs = true;
  };
  per_peer(c.counts, "counts", s.counts, s.counts_self, s.any_counts, s.counts_self_differs, s.counts_uneven);
  per_peer(c.recv_counts, "recv_counts", s.recv_counts, s.recv_counts_self, s.any_recv_counts,
           s.recv_counts_self_differs, s.recv_counts_uneven);
  s.request_back.insert(c.request_back);
  s.requests_back.insert(c.requests_back);
  s.some_not_all_pending = s.some_not_all_pending || not c.all_pending;
}

}  // namespace gridcast::models::trace::detail
