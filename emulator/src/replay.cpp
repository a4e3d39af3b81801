#include "gridcast/emulator/replay.hpp"

#include "gridcast/emulator/calibration_factors.hpp"

#include "gridcast/emulator/gpu.hpp"
#include "gridcast/emulator/p2p.hpp"
#include "gridcast/emulator/timeline.hpp"
#include "gridcast/foundation/errors.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <xbt/config.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace gridcast::emulator {

using models::CallRecord;
using models::Op;

DeadlockError::DeadlockError(std::vector<BlockedRank> blocked)
    : std::runtime_error(std::to_string(blocked.size()) + " rank(s) blocked forever"), blocked_(std::move(blocked))
{
}

namespace {

std::optional<CollectiveKind> collective_kind_of(Op op)
{
  switch (op) {
    case Op::Barrier: return CollectiveKind::Barrier;
    case Op::Bcast: return CollectiveKind::Bcast;
    case Op::Reduce: return CollectiveKind::Reduce;
    case Op::Allreduce: return CollectiveKind::Allreduce;
    case Op::Alltoall: return CollectiveKind::Alltoall;
    case Op::Alltoallv: return CollectiveKind::Alltoallv;
    case Op::Gather: return CollectiveKind::Gather;
    case Op::Gatherv: return CollectiveKind::Gatherv;
    case Op::Allgather: return CollectiveKind::Allgather;
    case Op::Allgatherv: return CollectiveKind::Allgatherv;
    case Op::Scatter: return CollectiveKind::Scatter;
    case Op::Scatterv: return CollectiveKind::Scatterv;
    case Op::ReduceScatter: return CollectiveKind::ReduceScatter;
    case Op::Scan: return CollectiveKind::Scan;
    case Op::Exscan: return CollectiveKind::Exscan;
    default: return std::nullopt;
  }
}

/// The global side of steady-state fast-forward (docs/emulator.md): the ranks report, at each head of the
/// steady loop, whether their window of periods is stable; the first rank to reach head K decides, once
/// and for everybody, whether iterations K.. are skipped: yes when every rank was stable at head K-1 and
/// no message crossed between iterations of the window. Each later rank reaching head K reads the same
/// answer, so every rank skips the same iterations. One fast-forward per run.
struct SteadyState {
  SteadyState(const FastForwardOptions& o, std::uint64_t iterations, int ranks)
      : options(o), loop_iterations(iterations), np(ranks)
  {
  }

  /// Rank reports: at head i, stable there or not.
  void reached(std::uint64_t i, bool stable)
  {
    ++reached_at[i];
    if (stable)
      ++ready_at[i];
  }

  /// Why the run was not fast-forwarded, the structural reasons first.
  std::string reason() const
  {
    if (crossing)
      return "messages go from one iteration to another";
    if (pending_rank >= 0)
      return "requests are still pending at the head of the loop (rank " + std::to_string(pending_rank) +
             ", iteration " + std::to_string(pending_iteration) + "): its iterations are not self-contained";
    return why_not;
  }

  /// Asked at head K by each rank: skip from here?
  bool skip_here(std::uint64_t k, const MessageBoard& board)
  {
    if (skip_from)
      return k == *skip_from;
    if (given_up || (decided_any && k <= last_decided))
      return false;
    decided_any  = true;
    last_decided = k;
    ready_at.erase(ready_at.begin(), ready_at.lower_bound(k - std::min<std::uint64_t>(k, 1)));
    reached_at.erase(reached_at.begin(), reached_at.lower_bound(k - std::min<std::uint64_t>(k, 1)));
    const std::uint64_t window = static_cast<std::uint64_t>(options.window);
    if (k + static_cast<std::uint64_t>(options.tail) + 1 > loop_iterations) {
      given_up = true;  // nothing left to skip
      return false;
    }
    if (k == 0)
      return false;
    auto there = reached_at.find(k - 1);
    if (there == reached_at.end() || there->second < np) {
      why_not = "the ranks drift more than one iteration apart (nothing in the loop keeps them together)";
      return false;
    }
    auto it = ready_at.find(k - 1);
    if (it == ready_at.end() || it->second < np) {
      why_not = "the time per iteration did not stay within the tolerance over the window on every rank";
      return false;
    }
    if (board.latest_crossing() >= static_cast<std::int64_t>(k - 1 - window)) {
      crossing = true;
      return false;
    }
    skip_from = k;
    skipped   = loop_iterations - k - static_cast<std::uint64_t>(options.tail);
    return true;
  }

  FastForwardOptions options;
  std::uint64_t loop_iterations;
  int np;
  std::map<std::uint64_t, int> ready_at;    ///< head index -> ranks stable there
  std::map<std::uint64_t, int> reached_at;  ///< head index -> ranks that reported it
  bool crossing = false;                    ///< a message crossed between iterations of a window
  std::optional<std::uint64_t> skip_from;
  std::uint64_t skipped = 0;
  bool decided_any = false;
  bool given_up = false;
  std::uint64_t last_decided = 0;
  std::string why_not = "the loop ended before the window filled";
  int pending_rank = -1;  ///< the last rank seen with requests pending at a head (past the warm-up), and where
  std::uint64_t pending_iteration = 0;
  // Totals of the skip, all ranks.
  double period_min_s = 0, period_max_s = 0, period_sum_s = 0, skipped_s = 0;
  int ranks_skipped = 0;
  std::uint64_t extrapolated_calls = 0, extrapolated_messages = 0;
};

/// The node of each rank (its host) and that host's last-level cache (gridcast:llc-bytes, written by
/// `gridcast platform`; 0 where absent), for the cold-copy rule of collectives (docs/collectives.md).
std::unique_ptr<NodeMap> node_map(const std::vector<sg4::Host*>& hosts, const std::string& platform_file)
{
  std::map<const sg4::Host*, int> node_of_host;
  std::vector<int> node_of_rank;
  std::vector<std::uint64_t> cache_bytes;
  for (const sg4::Host* h : hosts) {
    auto [it, created] = node_of_host.try_emplace(h, static_cast<int>(node_of_host.size()));
    node_of_rank.push_back(it->second);
    std::uint64_t cache = 0;
    if (const char* v = h->get_property("gridcast:llc-bytes")) {
      char* end = nullptr;
      errno = 0;
      const double b = std::strtod(v, &end);
      if (end == v || *end != '\0' || errno != 0 || not(b >= 1) || b > 1e18)
        throw InputError({platform_file, 0, "gridcast:llc-bytes", -1},
                         "host " + h->get_name() + ": expected a positive byte count, got \"" + v + "\"");
      cache = static_cast<std::uint64_t>(b);
    }
    cache_bytes.push_back(cache);
  }
  return std::make_unique<NodeMap>(std::move(node_of_rank), std::move(cache_bytes));
}

/// State shared by all rank actors of one run.
struct World {
  World(std::vector<sg4::Host*> hosts, const ReplayOptions& opts, TimelineWriter* tl)
      : board(hosts, MessageBoard::Options{opts.eager_threshold_bytes, opts.envelope_bytes}), options(opts), timeline(tl)
  {
    Communicator world;
    world.id = 0;
    world.world_ranks.resize(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i)
      world.world_ranks[i] = static_cast<int>(i);
    world.p2p_context = 0;
    world.coll_context = 1;
    comms.push_back(std::move(world));
  }

  /// Members deposited for one pending MPI_Comm_split/dup, keyed by (parent comm id, sequence).
  struct SplitEntry {
    int color;
    int key;
    int parent_rank;
    int world_rank;
  };
  struct PendingSplit {
    std::vector<SplitEntry> entries;
    std::map<int, int> comm_of_color;  ///< color -> global comm id, created by the first member to ask
  };

  MessageBoard board;
  const ReplayOptions& options;
  TimelineWriter* timeline;
  CollectiveRegistry registry;
  std::deque<Communicator> comms;  // deque: references stay valid as communicators are added
  std::map<std::pair<int, std::uint64_t>, PendingSplit> splits;
  /// Communicators created among their members only (a comm_split with `counts`), keyed by (members,
  /// sequence of creations of that member list at each member): global comm id.
  std::map<std::pair<std::vector<int>, std::uint64_t>, int> member_comms;
  std::map<std::string, std::map<std::string, std::uint64_t>> collective_choices;
  std::unique_ptr<GpuSystem> gpus;  ///< GPU hosts and costs (docs/gpu.md)
  std::unique_ptr<NodeMap> nodes;   ///< ranks sharing a host, and its gridcast:llc-bytes (cold copies)
  std::unique_ptr<SteadyState> steady;  ///< set when the run may fast-forward
  /// Matching contexts of nonblocking collectives in flight, keyed by (comm id, sequence number of the
  /// nonblocking collective on that comm): each gets its own, so that two of them, or one and a blocking
  /// collective, never take each other's messages. Negative, apart from every communicator's contexts.
  struct NbcContext {
    int context = 0;
    int members_left = 0;  ///< erased when every member has taken it
  };
  std::map<std::pair<int, std::uint64_t>, NbcContext> nbc_contexts;
  int next_nbc_context = -1;
  /// The first exception thrown inside an actor, rethrown after the simulation stops.
  std::exception_ptr failure;
  /// Stops the run after an exception in one actor: every other actor is killed.
  void abort_run(std::exception_ptr e)
  {
    if (not failure)
      failure = std::move(e);
    board.abort();
    for (auto const& a : sg4::Engine::get_instance()->get_all_actors())
      if (a != sg4::Actor::self())
        a->kill();
  }
};

/// First NCCL communicator handle: the profiler numbers NCCL communicators from here (docs/formats.md).
constexpr std::int32_t kFirstNcclComm = 65536;

/// How an MPI_Test-family record completes the requests it names.
enum class TestKind { All, Any, Some };
TestKind test_kind(std::string_view fn)
{
  if (fn.find("Testall") != std::string_view::npos || fn.find("testall") != std::string_view::npos)
    return TestKind::All;
  if (fn.find("Testany") != std::string_view::npos || fn.find("testany") != std::string_view::npos)
    return TestKind::Any;
  return TestKind::Some;
}
bool contains(std::string_view text, std::string_view a, std::string_view b)
{
  return text.find(a) != std::string_view::npos || text.find(b) != std::string_view::npos;
}

/// One MPI rank: pulls calls from its stream and performs them.
class RankRunner {
public:
  RankRunner(World& world, int rank, models::CallStreamPtr stream, double recorded_speed)
      : world_(world), rank_(rank), stream_(std::move(stream)), recorded_speed_(recorded_speed),
        gpu_(*world.gpus, rank)
  {
    comms_[models::kWorldComm] = &world_.comms.front();
  }

  void run()
  {
    CallRecord call;
    for (;;) {
      if (world_.steady) {
        // Fast-forward: only streams of a synthesized run say where the steady loop's iterations start.
        if (auto head = stream_->loop_head(); head && at_head(*head))
          continue;  // skipped: the stream is at the head after the skipped span now
      }
      if (not stream_->next(call))
        break;
      current_ = {true, call.function, call.line, call.peer, call.tag};
      double begin = sg4::Engine::get_clock();
      perform(call);
      double elapsed = sg4::Engine::get_clock() - begin;
      ++stats_.calls;
      if (call.function >= function_seconds_.size()) {
        function_seconds_.resize(call.function + 1, 0.0);
        function_calls_.resize(call.function + 1, 0);
      }
      function_seconds_[call.function] += elapsed;
      function_calls_[call.function] += 1;
      if (world_.timeline != nullptr)
        world_.timeline->call(rank_, stream_->functions().name(call.function), begin, elapsed);
    }
    current_.valid = false;
    finished_ = true;
    stats_.finish_s = sg4::Engine::get_clock();
  }

  /// The stream is at the head of steady-loop iteration i (docs/emulator.md): the rank notes the time
  /// and what it has done so far, reports whether its window of periods is stable, and skips when the
  /// run decided to skip from here. Returns whether it skipped.
  bool at_head(std::uint64_t i)
  {
    SteadyState& st = *world_.steady;
    world_.board.set_iteration(rank_, static_cast<std::int64_t>(i));
    if (st.skip_from && i > *st.skip_from)
      return false;  // after the skip: emulated as usual
    const std::size_t window = static_cast<std::size_t>(st.options.window);
    HeadSnapshot snap;
    snap.iteration = i;
    snap.time_s    = sg4::Engine::get_clock();
    // A request still pending here would be completed in a later iteration: the loop is not self-contained.
    snap.quiet            = requests_.empty() && freed_.empty();
    if (not snap.quiet && i >= static_cast<std::uint64_t>(st.options.warmup)) {
      st.pending_rank      = rank_;
      st.pending_iteration = i;
    }
    snap.compute_s        = stats_.compute_s;
    snap.comm_s           = stats_.comm_s;
    snap.wait_s           = stats_.wait_s;
    snap.compute_call_s   = compute_call_s_;
    snap.compute_flops    = compute_flops_;
    snap.function_seconds = function_seconds_;
    snap.sent             = world_.board.sent_by(rank_);
    snap.choices          = choices_;
    if (not heads_.empty() && heads_.back().iteration + 1 != i)
      heads_.clear();
    heads_.push_back(std::move(snap));
    while (heads_.size() > window + 2)
      heads_.pop_front();
    st.reached(i, stable_window());

    if (not st.skip_here(i, world_.board))
      return false;
    fast_forward(i);
    return true;
  }

  bool finished() const { return finished_; }
  const RankStats& stats() const { return stats_; }
  RankStats& stats() { return stats_; }

  /// Adds this rank's per-function totals to `out`, by name.
  void merge_functions(std::map<std::string, FunctionStats>& out) const
  {
    for (std::size_t id = 0; id < function_calls_.size(); ++id) {
      if (function_calls_[id] == 0)
        continue;
      FunctionStats& f = out[stream_->functions().name(static_cast<std::uint32_t>(id))];
      f.calls += function_calls_[id];
      f.seconds += function_seconds_[id];
      if (id < extra_calls_.size())
        f.extrapolated_calls += extra_calls_[id];
      if (id < extra_seconds_.size())
        f.extrapolated_seconds += extra_seconds_[id];
    }
  }

  /// Where this rank is stuck (only meaningful when not finished).
  BlockedRank blocked_report() const
  {
    BlockedRank b;
    b.rank = rank_;
    b.file = stream_->source();
    if (not current_.valid) {
      b.function = "(start)";
      return b;
    }
    b.function = stream_->functions().name(current_.function);
    b.line = current_.line;
    b.peer = current_.peer;
    b.tag = current_.tag;
    b.detail = waiting_on_ ? describe(*waiting_on_) : blocked_detail_;
    return b;
  }

private:
  /// What the rank had done at one head of the steady loop.
  struct HeadSnapshot {
    std::uint64_t iteration = 0;
    double time_s = 0;
    bool quiet = false;  ///< no request pending
    double compute_s = 0, comm_s = 0, wait_s = 0;
    double compute_call_s = 0, compute_flops = 0;
    std::vector<double> function_seconds;
    MessageBoard::SenderTally sent;
    std::map<std::pair<std::string, std::string>, std::uint64_t> choices;
  };

  /// The last `window` periods (the newest head and the `window` before it) are past the warm-up, free of
  /// pending requests at every head, and each within the tolerance of their mean.
  bool stable_window() const
  {
    const SteadyState& st = *world_.steady;
    const std::size_t window = static_cast<std::size_t>(st.options.window);
    if (heads_.size() < window + 1)
      return false;
    const std::size_t first = heads_.size() - window - 1;
    if (heads_[first].iteration < static_cast<std::uint64_t>(st.options.warmup))
      return false;
    for (std::size_t k = first; k < heads_.size(); ++k)
      if (not heads_[k].quiet)
        return false;
    const double mean = (heads_.back().time_s - heads_[first].time_s) / static_cast<double>(window);
    if (not(mean > 0))
      return false;
    for (std::size_t k = first; k + 1 < heads_.size(); ++k)
      if (std::abs(heads_[k + 1].time_s - heads_[k].time_s - mean) > st.options.tolerance * mean)
        return false;
    return true;
  }

  /// Skips iterations k .. k+skipped-1 of the steady loop. The skipped calls are pulled from the stream
  /// and counted without being performed (so the calls after the span are exactly those of a full
  /// emulation, random draws included, and their work is known). The rank then sleeps for the span: the
  /// work of the skipped compute calls at the window's seconds per flop, plus the rest of the window's
  /// mean period (communication, waiting) for each skipped iteration. With identical iterations that is
  /// the window's mean period times the iterations skipped; with iterations whose work differs (a
  /// latency-model ratio that changes along the loop, --variability on) the compute part is exact.
  void fast_forward(std::uint64_t k)
  {
    SteadyState& st = *world_.steady;
    const std::uint64_t window = static_cast<std::uint64_t>(st.options.window);
    const HeadSnapshot* a = nullptr;
    const HeadSnapshot* b = nullptr;
    for (const HeadSnapshot& h : heads_) {
      if (h.iteration == k - 1 - window)
        a = &h;
      if (h.iteration == k - 1)
        b = &h;
    }
    if (a == nullptr || b == nullptr)
      throw InternalError("fast-forward: rank " + std::to_string(rank_) + " has no window before iteration " +
                          std::to_string(k));

    // The skipped calls: counted, and the work of the compute ones summed per function.
    const std::uint64_t resume = k + st.skipped;
    CallRecord call;
    std::uint64_t drained = 0;
    std::vector<double> skipped_flops;  // by function id; < 0: no compute call of it skipped
    for (;;) {
      if (auto head = stream_->loop_head(); head && *head == resume)
        break;
      if (not stream_->next(call))
        throw InternalError("fast-forward: rank " + std::to_string(rank_) + "'s stream ended inside the skipped span");
      if (call.function >= function_calls_.size()) {
        function_seconds_.resize(call.function + 1, 0.0);
        function_calls_.resize(call.function + 1, 0);
      }
      if (call.function >= extra_calls_.size())
        extra_calls_.resize(call.function + 1, 0);
      ++function_calls_[call.function];
      ++extra_calls_[call.function];
      ++drained;
      if (call.op == Op::Compute) {
        if (call.function >= skipped_flops.size())
          skipped_flops.resize(call.function + 1, -1.0);
        skipped_flops[call.function] = std::max(0.0, skipped_flops[call.function]) + flops_of(call);
      }
    }
    stats_.calls += drained;

    const double f             = static_cast<double>(st.skipped) / static_cast<double>(window);
    const double period        = (b->time_s - a->time_s) / static_cast<double>(window);
    const double window_call_s = b->compute_call_s - a->compute_call_s;
    const double window_flops  = b->compute_flops - a->compute_flops;
    // Seconds per flop as the window ran them (a host shared by several ranks runs them slower).
    const bool by_work = window_flops > 0 && window_call_s > 0;
    const double s_per_flop = by_work ? window_call_s / window_flops : 0.0;
    double skipped_compute_s = 0;
    for (double fl : skipped_flops)
      skipped_compute_s += std::max(0.0, fl) * s_per_flop;
    if (not by_work)
      skipped_compute_s = f * window_call_s;
    const double span = std::max(0.0, f * ((b->time_s - a->time_s) - window_call_s) + skipped_compute_s);
    const double begin = sg4::Engine::get_clock();
    if (span > 0)
      sg4::this_actor::sleep_for(span);

    stats_.compute_s += f * ((b->compute_s - a->compute_s) - window_call_s) + skipped_compute_s;
    stats_.comm_s += f * (b->comm_s - a->comm_s);
    stats_.wait_s += f * (b->wait_s - a->wait_s);
    if (function_seconds_.size() < b->function_seconds.size()) {
      function_seconds_.resize(b->function_seconds.size(), 0.0);
      function_calls_.resize(b->function_seconds.size(), 0);
    }
    extra_seconds_.resize(function_seconds_.size(), 0.0);
    for (std::size_t id = 0; id < function_seconds_.size(); ++id) {
      double add = 0;
      if (by_work && id < skipped_flops.size() && skipped_flops[id] >= 0) {
        add = skipped_flops[id] * s_per_flop;  // a compute function: its own skipped work
      } else if (id < b->function_seconds.size()) {
        double before = id < a->function_seconds.size() ? a->function_seconds[id] : 0.0;
        add = f * (b->function_seconds[id] - before);
      }
      function_seconds_[id] += add;
      extra_seconds_[id] += add;
    }
    std::map<std::uint64_t, double> routes;
    for (const auto& [key, bytes] : b->sent.route_bytes) {
      auto old = a->sent.route_bytes.find(key);
      double d = bytes - (old == a->sent.route_bytes.end() ? 0.0 : old->second);
      if (d > 0)
        routes[key] = f * d;
    }
    // Counts per iteration are whole numbers; f times a window's count is one up to rounding.
    auto scaled = [f](std::uint64_t window_count) {
      return static_cast<std::uint64_t>(std::llround(f * static_cast<double>(window_count)));
    };
    const std::uint64_t messages = scaled(b->sent.messages - a->sent.messages);
    world_.board.add_skipped(messages, routes);
    for (const auto& [key, count] : b->choices) {
      auto old = a->choices.find(key);
      std::uint64_t d = count - (old == a->choices.end() ? 0 : old->second);
      if (d > 0)
        world_.collective_choices[key.first][key.second] += scaled(d);
    }
    if (world_.timeline != nullptr)
      world_.timeline->call(rank_, "(fast-forward)", begin, sg4::Engine::get_clock() - begin);
    heads_.clear();

    st.period_min_s = st.ranks_skipped == 0 ? period : std::min(st.period_min_s, period);
    st.period_max_s = st.ranks_skipped == 0 ? period : std::max(st.period_max_s, period);
    st.period_sum_s += period;
    st.skipped_s += span;
    ++st.ranks_skipped;
    st.extrapolated_calls += drained;
    st.extrapolated_messages += messages;
  }

  [[noreturn]] void fail(const std::string& reason) const
  {
    throw InputError({stream_->source(), current_.valid ? current_.line : 0, {}, rank_}, reason);
  }

  void perform(const CallRecord& c)
  {
    if (c.op < Op::GpuKernel || c.op > Op::GpuFree)
      gpu_.note_recorded_s(c.seconds);  // the recorded time line, for kernels without device time
    switch (c.op) {
      case Op::Init:
        return;
      case Op::Finalize:
        return settle_leftovers();
      case Op::CommSize:
        // Local calls have no simulated effect, except MPI_Cancel and MPI_Request_free (they name a request).
        if (c.request != models::kNoRequest)
          return cancel_or_free(c);
        return;
      case Op::Probe:
        return probe(c);
      case Op::Compute:
        return compute(c);
      case Op::Sleep: {
        double begin = sg4::Engine::get_clock();
        if (c.seconds > 0)
          sg4::this_actor::sleep_for(c.seconds);
        stats_.compute_s += sg4::Engine::get_clock() - begin;
        return;
      }
      case Op::Send:
      case Op::Ssend: {
        auto r = post_send(c, c.op == Op::Ssend ? SendMode::Synchronous : SendMode::Standard);
        return complete(r, c);
      }
      case Op::Isend:
      case Op::Issend:
        remember(c, post_send(c, c.op == Op::Issend ? SendMode::Synchronous : SendMode::Standard));
        return;
      case Op::Recv:
        complete(post_recv(c, c.peer, c.tag, c.bytes), c);
        if (staged(c))
          staging([&] { gpu_.after_device_recv(c.bytes); });
        return;
      case Op::Irecv:
        remember(c, post_recv(c, c.peer, c.tag, c.bytes));
        if (staged(c))
          gpu_.note_device_irecv(c.request, c.bytes);
        return;
      case Op::Sendrecv: {
        const Communicator& comm = communicator(c.comm);
        int dst = world_rank(comm, c.peer);
        int src = c.src == models::kAnySource ? kAnySource : world_rank(comm, c.src, "src");
        auto [endpoint, mode] = device_send_setup(c, dst, c.bytes, SendMode::Standard);
        if (c.memory == models::Memory::Device && not nccl(c))  // GPUDirect pins the receive buffer too
          staging([&] { gpu_.before_device_recv(PinKey{1, src, c.recv_tag, c.comm, c.recv_bytes}, gpu_fail()); });
        RequestPtr s = world_.board.post_send(rank_, dst, c.bytes, c.tag, comm.p2p_context, mode, endpoint);
        RequestPtr r = world_.board.post_recv(rank_, src, c.recv_bytes, c.recv_tag == models::kAnyTag ? kAnyTag : c.recv_tag,
                                              comm.p2p_context, endpoint);
        complete(s, c);
        complete(r, c);
        if (staged(c))
          staging([&] { gpu_.after_device_recv(c.recv_bytes); });
        return;
      }
      case Op::Wait:
        return wait_handle(c.request, c);
      case Op::Waitall:
        for (std::int64_t h : c.requests)
          wait_handle(h, c);
        return;
      case Op::Waitany:
        return wait_any(c);
      case Op::Test:
        return c.request == models::kNoRequest && not c.requests.empty() ? test_many(c) : test_handle(c);
      case Op::CommSplit:
      case Op::CommDup:
        return split(c);
      case Op::DynamicProcess:
        fail(models::dynamic_process_refusal(stream_->functions().name(c.function)));
      case Op::GpuKernel:
      case Op::GpuMemcpy:
      case Op::GpuSync:
      case Op::GpuMalloc:
      case Op::GpuFree: {
        double begin = sg4::Engine::get_clock();
        gpu_.perform(c, stream_->functions().name(c.function), gpu_fail());
        stats_.compute_s += sg4::Engine::get_clock() - begin;  // GPU work the rank waits for counts as compute
        return;
      }
      default:
        break;
    }
    if (auto kind = collective_kind_of(c.op))
      return collective(*kind, c);
    throw InternalError("unhandled op " + std::string(models::op_name(c.op)));
  }

  void compute(const CallRecord& c)
  {
    double flops = c.flops;
    if (flops <= 0 && c.seconds > 0) {
      if (recorded_speed_ <= 0)
        fail("compute call gives seconds but the trace names no recording host speed");
      flops = c.seconds * recorded_speed_;
    }
    double begin = sg4::Engine::get_clock();
    if (flops > 0)
      sg4::this_actor::execute(flops);
    const double spent = sg4::Engine::get_clock() - begin;
    stats_.compute_s += spent;
    compute_call_s_ += spent;
    compute_flops_ += std::max(0.0, flops);
  }

  /// Work of a compute record in flops, as compute() performs it.
  double flops_of(const CallRecord& c) const
  {
    if (c.flops > 0)
      return c.flops;
    return c.seconds > 0 && recorded_speed_ > 0 ? c.seconds * recorded_speed_ : 0.0;
  }

  const Communicator& communicator(std::int32_t handle)
  {
    auto it = comms_.find(handle);
    if (it == comms_.end() && handle > models::kWorldComm && handle < kFirstNcclComm)
      it = comms_.emplace(handle, &self_communicator()).first;
    if (it == comms_.end() || it->second == nullptr)
      fail("communicator handle " + std::to_string(handle) + (it == comms_.end() ? " was never created by this rank"
                                                                                 : " is MPI_COMM_NULL at this rank"));
    if (not idup_pending_.empty()) {
      auto pending = idup_pending_.find(handle);
      if (pending != idup_pending_.end()) {
        if (requests_.count(pending->second) > 0)
          fail("communicator handle " + std::to_string(handle) + " from MPI_Comm_idup is used before its request " +
               std::to_string(pending->second) + " completed");
        idup_pending_.erase(pending);  // completed by a wait or test: usable from now on
      }
    }
    current_comm_handle_ = handle;
    return *it->second;
  }

  /// A communicator handle used without a creation record is a predefined communicator the profiler
  /// registered at its first use: MPI_COMM_SELF (the only predefined one besides MPI_COMM_WORLD). Each rank
  /// gets its own, with contexts of its own; a peer outside it is an error naming the record.
  const Communicator& self_communicator()
  {
    if (self_ == nullptr) {
      Communicator self;
      self.id = static_cast<int>(world_.comms.size());
      self.p2p_context = 2 * self.id;
      self.coll_context = 2 * self.id + 1;
      self.world_ranks = {rank_};
      world_.comms.push_back(std::move(self));
      self_ = &world_.comms.back();
    }
    return *self_;
  }

  /// Checks a peer of a point-to-point record: a world rank (docs/formats.md), member of `comm`.
  int world_rank(const Communicator& comm, int peer, const char* field = "peer")
  {
    if (current_comm_handle_ >= kFirstNcclComm) {
      // ncclSend/ncclRecv name a rank of the NCCL communicator (docs/formats.md), the one exception.
      if (peer < 0 || peer >= comm.size())
        fail(std::string(field) + " " + std::to_string(peer) + " is outside NCCL communicator " +
             std::to_string(current_comm_handle_) + " (" + std::to_string(comm.size()) + " ranks)");
      return comm.world_ranks[static_cast<std::size_t>(peer)];
    }
    int np = world_.board.rank_count();
    if (peer < 0 || peer >= np)
      fail(std::string(field) + " " + std::to_string(peer) + " is not a world rank (the run has " + std::to_string(np) +
           " ranks)");
    if (comm.id != 0 && comm.rank_of(peer) < 0)
      fail(std::string(field) + " " + std::to_string(peer) + " is not a member of communicator " +
           std::to_string(current_comm_handle_) + " (" + std::to_string(comm.size()) +
           " ranks); peers are world ranks");
    return peer;
  }

  RequestPtr post_send(const CallRecord& c, SendMode mode)
  {
    const Communicator& comm = communicator(c.comm);
    int dst = world_rank(comm, c.peer);
    if (c.tag < 0)
      fail("a send needs a tag >= 0, got " + std::to_string(c.tag));
    auto [endpoint, effective_mode] = device_send_setup(c, dst, c.bytes, mode);
    RequestPtr r = world_.board.post_send(rank_, dst, c.bytes, c.tag, comm.p2p_context, effective_mode, endpoint);
    if (world_.timeline != nullptr)
      world_.timeline->flow_start(rank_, r->message, sg4::Engine::get_clock());
    return r;
  }

  RequestPtr post_recv(const CallRecord& c, int peer, int tag, std::uint64_t bytes)
  {
    const Communicator& comm = communicator(c.comm);
    int src = peer == models::kAnySource ? kAnySource : world_rank(comm, peer);
    sg4::Host* endpoint = nullptr;
    if (c.memory == models::Memory::Device) {
      if (nccl(c)) {
        endpoint = gpu_.system().device_of(rank_) != nullptr ? gpu_.system().device_of(rank_)->host : nullptr;
        if (endpoint == nullptr)
          fail("an NCCL receive needs a GPU, and rank " + std::to_string(rank_) + "'s node has none");
      } else {
        staging([&] { gpu_.before_device_recv(PinKey{1, src, tag, c.comm, bytes}, gpu_fail()); });
        endpoint = gpu_.mpi_endpoint(gpu_fail());
      }
    }
    return world_.board.post_recv(rank_, src, bytes, tag == models::kAnyTag ? kAnyTag : tag, comm.p2p_context, endpoint);
  }

  // --- GPU buffers (docs/gpu.md) ---

  GpuFail gpu_fail() const
  {
    return [this](const std::string& reason) { fail(reason); };
  }

  /// NCCL calls: named ncclXxx, or on an NCCL communicator (the profiler numbers them from 65536).
  bool nccl(const CallRecord& c) const
  {
    return c.comm >= kFirstNcclComm || stream_->functions().name(c.function).rfind("nccl", 0) == 0;
  }

  /// True when a device buffer of this MPI call is staged through host memory (HostCopy, not NCCL).
  bool staged(const CallRecord& c) const
  {
    return c.memory == models::Memory::Device && not nccl(c) && gpu_.mpi_mode() == GpuMpiMode::HostCopy;
  }

  /// Runs a staging or pinning step, counted as communication time.
  template <class F>
  void staging(F&& step)
  {
    double begin = sg4::Engine::get_clock();
    step();
    stats_.comm_s += sg4::Engine::get_clock() - begin;
  }

  /// For a send from a device buffer: stages or pins, and says where the bytes leave from and the mode
  /// (GPUDirect is rendezvous only, as Open MPI does; NCCL moves GPU to GPU).
  std::pair<sg4::Host*, SendMode> device_send_setup(const CallRecord& c, int dst, std::uint64_t bytes, SendMode mode)
  {
    if (c.memory != models::Memory::Device)
      return {nullptr, mode};
    if (nccl(c)) {
      GpuDevice* d = gpu_.system().device_of(rank_);
      if (d == nullptr)
        fail("an NCCL send needs a GPU, and rank " + std::to_string(rank_) + "'s node has none");
      return {d->host, mode};
    }
    staging([&] { gpu_.before_device_send(bytes, PinKey{0, dst, c.tag, c.comm, bytes}, gpu_fail()); });
    sg4::Host* endpoint = gpu_.mpi_endpoint(gpu_fail());
    return {endpoint, endpoint != nullptr ? SendMode::Synchronous : mode};
  }

  void remember(const CallRecord& c, RequestPtr r)
  {
    if (c.request == models::kNoRequest)
      fail("a nonblocking call needs a request handle");
    auto [it, inserted] = requests_.try_emplace(c.request, std::move(r));
    if (not inserted)
      fail("request handle " + std::to_string(c.request) + " is still pending from an earlier call");
  }

  /// Blocks until `r` completes, splitting the time into partner wait and transfer.
  void complete(const RequestPtr& r, const CallRecord& /*call*/)
  {
    double begin = sg4::Engine::get_clock();
    waiting_on_ = r;  // described only if the run deadlocks: building the text for every wait costs
    double partner = world_.board.wait(r);
    waiting_on_ = nullptr;
    double elapsed = sg4::Engine::get_clock() - begin;
    stats_.wait_s += partner;
    stats_.comm_s += elapsed - partner;
    if (r->kind == Request::Kind::Recv && not r->cancelled && world_.timeline != nullptr)
      world_.timeline->flow_end(rank_, r->message, sg4::Engine::get_clock());
  }

  static std::string describe(const Request& r)
  {
    if (r.kind == Request::Kind::Local)
      return "nonblocking collective still running";
    std::string s = r.kind == Request::Kind::Send ? "send to rank " : "receive from rank ";
    s += r.peer == kAnySource ? std::string("any") : std::to_string(r.peer);
    s += " tag " + (r.tag == kAnyTag ? std::string("any") : std::to_string(r.tag));
    s += ", " + std::to_string(r.bytes) + " bytes";
    s += r.matched ? ", matched" : ", never matched";
    return s;
  }

  void wait_handle(std::int64_t handle, const CallRecord& c)
  {
    auto it = requests_.find(handle);
    if (it == requests_.end()) {
      // A request completed by a successful test, or freed, is MPI_REQUEST_NULL: waiting on it is a no-op.
      if (inactive_.count(handle) > 0)
        return;
      // A waitall naming one handle twice (profiles of Open MPI do, when two requests shared a handle):
      // the second is null by then. Checked only here, off the common path.
      if (c.op == Op::Waitall && std::count(c.requests.begin(), c.requests.end(), handle) > 1)
        return;
      fail("wait on request handle " + std::to_string(handle) +
           " that no isend/irecv/nonblocking collective created");
    }
    RequestPtr r = std::move(it->second);
    requests_.erase(it);
    complete(r, c);
    staging([&] { gpu_.request_completed(handle); });
  }

  void wait_any(const CallRecord& c)
  {
    // Complete the first request that is done already; otherwise the first to match, then its transfer.
    // (A transfer that finishes while another request is still unmatched is not noticed earlier: the
    // simplification is documented in docs/emulator.md.)
    for (std::int64_t h : c.requests) {
      auto it = requests_.find(h);
      if (it != requests_.end() && try_complete(it))
        return;
    }
    for (std::int64_t h : c.requests) {
      auto it = requests_.find(h);
      if (it != requests_.end() && it->second->matched)
        return wait_handle(h, c);
    }
    for (std::int64_t h : c.requests)
      if (requests_.count(h) > 0)
        return wait_handle(h, c);
  }

  /// Tests one pending request without blocking; on success it becomes MPI_REQUEST_NULL.
  bool try_complete(std::unordered_map<std::int64_t, RequestPtr>::iterator it)
  {
    if (not world_.board.test(it->second))
      return false;
    if (it->second->kind == Request::Kind::Recv && not it->second->cancelled && world_.timeline != nullptr)
      world_.timeline->flow_end(rank_, it->second->message, sg4::Engine::get_clock());
    const std::int64_t handle = it->first;
    inactive_.insert(handle);
    requests_.erase(it);
    staging([&] { gpu_.request_completed(handle); });
    return true;
  }

  /// A handle named by a test must exist (pending, or MPI_REQUEST_NULL already).
  std::unordered_map<std::int64_t, RequestPtr>::iterator tested(std::int64_t handle)
  {
    auto it = requests_.find(handle);
    if (it == requests_.end() && inactive_.count(handle) == 0)
      fail("test on request handle " + std::to_string(handle) +
           " that no isend/irecv/nonblocking collective created");
    return it;
  }

  void test_handle(const CallRecord& c)
  {
    auto it = tested(c.request);
    bool done = it == requests_.end() || try_complete(it);
    poll_cost(c.seconds, done, failed_tests_, world_.options.test_cost_s);
  }

  /// MPI_Testall (all or none), MPI_Testany (the first complete one), MPI_Testsome (every complete one)
  /// over `requests`; the function name says which, Testsome's rule otherwise.
  void test_many(const CallRecord& c)
  {
    TestKind kind = test_kind(stream_->functions().name(c.function));
    bool done = false;
    if (kind == TestKind::All) {
      bool all = true;
      for (std::int64_t h : c.requests) {
        auto it = tested(h);
        all = all && (it == requests_.end() || world_.board.test(it->second));
      }
      if (all)
        for (std::int64_t h : c.requests)
          if (auto it = requests_.find(h); it != requests_.end())
            try_complete(it);
      done = all;
    } else {
      for (std::int64_t h : c.requests) {
        auto it = tested(h);
        if (it != requests_.end() && try_complete(it)) {
          done = true;
          if (kind == TestKind::Any)
            break;
        }
      }
    }
    poll_cost(c.seconds, done, failed_tests_, world_.options.test_cost_s);
  }

  /// The simulated cost of one poll (MPI_Test*, MPI_Iprobe). A profiled poll recorded its own duration:
  /// it costs that (the time between polls is in the compute records around it). A poll of unknown
  /// duration (SMPI traces) costs like SMPI's: `unit` seconds times the consecutive failures so far when it
  /// fails, nothing when it succeeds, so that polling loops advance the clock instead of spinning.
  void poll_cost(double recorded_s, bool success, int& consecutive_failures, double unit)
  {
    double cost = 0;
    if (recorded_s >= 0) {
      cost = recorded_s;
    } else if (success) {
      consecutive_failures = 0;
    } else {
      ++consecutive_failures;
      cost = unit * consecutive_failures;
    }
    if (cost <= 0)
      return;
    double begin = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(cost);
    stats_.comm_s += sg4::Engine::get_clock() - begin;
  }

  /// MPI_Probe blocks until a matching message has been sent to this rank; MPI_Iprobe only looks.
  void probe(const CallRecord& c)
  {
    if (c.peer == models::kNoRank)  // MPI_PROC_NULL: returns at once
      return;
    const Communicator& comm = communicator(c.comm);
    int src = c.peer == models::kAnySource ? kAnySource : world_rank(comm, c.peer);
    int tag = c.tag == models::kAnyTag ? kAnyTag : c.tag;
    std::string_view fn = stream_->functions().name(c.function);
    if (contains(fn, "Iprobe", "iprobe") || contains(fn, "Improbe", "improbe")) {  // MPI_Improbe polls too
      bool found = world_.board.iprobe(rank_, src, tag, comm.p2p_context);
      return poll_cost(c.seconds, found, failed_iprobes_, world_.options.iprobe_cost_s);
    }
    double begin = sg4::Engine::get_clock();
    blocked_detail_ = "probe for a message from rank " + (src == kAnySource ? std::string("any") : std::to_string(src)) +
                      " tag " + (tag == kAnyTag ? std::string("any") : std::to_string(tag)) + ", never sent";
    world_.board.probe(rank_, src, tag, comm.p2p_context);
    blocked_detail_.clear();
    stats_.wait_s += sg4::Engine::get_clock() - begin;
  }

  /// MPI_Cancel: an operation not matched yet is cancelled (a later wait returns at once); a matched one
  /// completes normally. MPI_Request_free: the handle becomes MPI_REQUEST_NULL, the operation goes on.
  void cancel_or_free(const CallRecord& c)
  {
    std::string_view fn = stream_->functions().name(c.function);
    bool cancel = contains(fn, "Cancel", "cancel");
    auto it = requests_.find(c.request);
    if (it == requests_.end()) {
      if (inactive_.count(c.request) > 0 && cancel)
        return;  // cancelling a request already complete has no effect
      fail(std::string(cancel ? "MPI_Cancel" : std::string(fn)) + " of request handle " + std::to_string(c.request) +
           " that no isend/irecv/nonblocking collective created" + (inactive_.count(c.request) > 0 ? " (it is null)" : ""));
    }
    if (cancel) {
      world_.board.cancel(it->second);
      return;
    }
    freed_.push_back(std::move(it->second));
    requests_.erase(it);
    inactive_.insert(c.request);
  }

  /// At MPI_Finalize (the end of the trace) MPI requires every request complete. The recording completed
  /// them all, but a test that succeeded there may have run before the transfer ended in the simulation,
  /// and freed requests were never waited for: the rank waits for all of them here, in handle order.
  void settle_leftovers()
  {
    std::vector<std::int64_t> handles;
    for (const auto& [h, r] : requests_)
      handles.push_back(h);
    std::sort(handles.begin(), handles.end());
    for (std::int64_t h : handles) {
      RequestPtr r = std::move(requests_[h]);
      requests_.erase(h);
      complete(r, CallRecord{});
    }
    for (RequestPtr& r : freed_)
      complete(r, CallRecord{});
    freed_.clear();
  }

  CollectiveAlgorithm const* choose(CollectiveKind kind, const CollectiveArgs& args, const Communicator& comm,
                                    const CallRecord& c, std::string& name)
  {
    auto forced = world_.options.forced_algorithms.find(kind);
    if (c.memory == models::Memory::Device && nccl(c))
      name = nccl_algorithm(kind, gpu_.system().nccl_algorithm());
    if (not name.empty())
      ;  // NCCL's own algorithm
    else if (forced != world_.options.forced_algorithms.end())
      name = forced->second;
    else if (c.request != models::kNoRequest)  // a nonblocking collective
      name = world_.registry.select_nonblocking(kind, args, comm.size(), world_.options.coll_selector);
    else
      name = world_.registry.select(kind, args, comm.size(), world_.options.coll_selector);
    const CollectiveAlgorithm* algo = world_.registry.find(kind, name);
    if (algo == nullptr)
      throw InternalError("no collective algorithm " + name + " for " + std::string(collective_name(kind)));
    if (comm.rank_of(rank_) == 0) {
      world_.collective_choices[std::string(collective_name(kind))][name] += 1;
      if (world_.steady)
        ++choices_[{std::string(collective_name(kind)), name}];  // this rank's share, for fast-forward
    }
    return algo;
  }

  void collective(CollectiveKind kind, const CallRecord& c)
  {
    const Communicator& comm = communicator(c.comm);
    CollectiveArgs args;
    args.bytes = c.bytes;
    args.recv_bytes = c.recv_bytes;
    args.root = c.root;
    args.flops = c.flops;
    args.counts = c.counts;
    args.recv_counts = c.recv_counts;
    if (args.root < 0 || args.root >= comm.size())
      fail("root " + std::to_string(args.root) + " is outside the communicator (size " + std::to_string(comm.size()) + ")");
    auto check_counts = [&](const std::vector<std::uint64_t>& v, const char* what) {
      if (not v.empty() && static_cast<int>(v.size()) != comm.size())
        fail(std::string(what) + " has " + std::to_string(v.size()) + " entries, the communicator has " +
             std::to_string(comm.size()) + " ranks");
    };
    check_counts(args.counts, "counts");
    check_counts(args.recv_counts, "recv_counts");

    std::string name;
    const bool device = c.memory == models::Memory::Device;
    const CollectiveAlgorithm* algo = choose(kind, args, comm, c, name);
    if (c.request != models::kNoRequest)
      return start_nonblocking(kind, name, *algo, std::move(args), comm, c);
    if (device && nccl(c))
      return enqueue_nccl(*algo, std::move(args), comm, c);

    double begin = sg4::Engine::get_clock();
    double compute_before = stats_.compute_s;
    CollectiveContext ctx(world_.board, comm, rank_, [this](double flops) {
      double b = sg4::Engine::get_clock();
      if (flops > 0)
        sg4::this_actor::execute(flops);
      stats_.compute_s += sg4::Engine::get_clock() - b;
    });
    if (not device) {  // host buffers only: a device buffer's copies are the GPU's
      ctx.set_local_copy_time(&world_.options.local_copy_time);
      ctx.set_node_map(world_.nodes.get());
    }
    blocked_detail_ = "inside " + std::string(collective_name(kind)) + " (" + name + ")";
    // Device buffers: NCCL and GPUDirect move every message of the algorithm between GPU hosts; HostCopy
    // stages this rank's send data to the host before and its result back after (docs/gpu.md).
    auto [d2h_bytes, h2d_bytes] = staged_bytes(kind, args, comm);
    if (device && gpu_.mpi_mode() == GpuMpiMode::GpuDirect) {
      // Pinning of the call's buffers, once per call (or once per buffer with the registration cache).
      PinKey key{2 + static_cast<int>(kind), c.root, 0, c.comm, c.bytes};
      staging([&] { gpu_.before_device_recv(key, gpu_fail()); });
      world_.board.set_endpoint_override(rank_, gpu_.mpi_endpoint(gpu_fail()));
    } else if (staged(c) && d2h_bytes > 0) {
      staging([&] { gpu_.before_device_send(d2h_bytes, PinKey{}, gpu_fail()); });  // HostCopy: no pinning
    }
    (*algo)(ctx, args);
    world_.board.set_endpoint_override(rank_, nullptr);
    if (staged(c) && h2d_bytes > 0)
      staging([&] { gpu_.after_device_recv(h2d_bytes); });
    blocked_detail_.clear();
    double elapsed = sg4::Engine::get_clock() - begin;
    double computed = stats_.compute_s - compute_before;
    stats_.wait_s += ctx.partner_wait_s();
    stats_.comm_s += std::max(0.0, elapsed - computed - ctx.partner_wait_s());
  }

  /// NCCL's algorithms expressed with gridcast's point-to-point ones; empty: the usual selection.
  static std::string nccl_algorithm(CollectiveKind kind, const std::string& family)
  {
    const bool ring = family == "ring";
    switch (kind) {
      case CollectiveKind::Allreduce: return ring ? "ring" : "reduce_bcast";
      case CollectiveKind::Allgather: return ring ? "ring" : "recursive_doubling";
      case CollectiveKind::ReduceScatter: return ring ? "pairwise" : "recursive_halving";
      case CollectiveKind::Bcast: return ring ? "scatter_allgather" : "binomial";
      case CollectiveKind::Reduce: return ring ? "rabenseifner" : "binomial";
      default: return {};
    }
  }

  /// Bytes this rank's HostCopy staging moves: its send data to the host before the collective, its
  /// result back to the device after.
  std::pair<std::uint64_t, std::uint64_t> staged_bytes(CollectiveKind kind, const CollectiveArgs& a,
                                                       const Communicator& comm) const
  {
    const std::uint64_t n = static_cast<std::uint64_t>(comm.size());
    const bool root = comm.rank_of(rank_) == a.root;
    const std::uint64_t recv = a.recv_bytes > 0 ? a.recv_bytes : a.bytes;
    auto sum = [](const std::vector<std::uint64_t>& v) {
      std::uint64_t t = 0;
      for (auto x : v)
        t += x;
      return t;
    };
    const int me = comm.rank_of(rank_);
    switch (kind) {
      case CollectiveKind::Barrier: return {0, 0};
      case CollectiveKind::Bcast: return root ? std::pair{a.bytes, std::uint64_t{0}} : std::pair{std::uint64_t{0}, a.bytes};
      case CollectiveKind::Reduce: return {a.bytes, root ? a.bytes : 0};
      case CollectiveKind::Allgather: return {a.bytes, recv * n};
      case CollectiveKind::Alltoall: return {a.bytes * n, recv * n};
      case CollectiveKind::Gather: return {a.bytes, root ? recv * n : 0};
      case CollectiveKind::Scatter: return {root ? a.bytes * n : 0, recv};
      case CollectiveKind::Alltoallv: return {sum(a.counts), sum(a.recv_counts)};
      case CollectiveKind::Gatherv: return {a.bytes, root ? sum(a.recv_counts) : 0};
      case CollectiveKind::Allgatherv: return {a.bytes, sum(a.recv_counts)};
      case CollectiveKind::Scatterv: return {root ? sum(a.counts) : 0, a.recv_bytes};
      case CollectiveKind::ReduceScatter:
        return {sum(a.recv_counts), me >= 0 && me < static_cast<int>(a.recv_counts.size()) ? a.recv_counts[me] : 0};
      default: return {a.bytes, a.bytes};  // allreduce, scan, exscan
    }
  }

  /// A nonblocking collective (a collective record with `request`): its algorithm runs at once in an actor
  /// of its own on the rank's host, on a matching context of its own, while the rank goes on; the wait or
  /// test naming the request completes when that actor has finished. This is MPI with asynchronous
  /// progress: a library that progresses collectives only inside MPI calls overlaps less.
  /// NCCL enqueues a collective on its stream and returns, like a kernel launch: the stream's actor (on
  /// the rank's GPU host) runs the algorithm GPU to GPU once the stream's earlier work is done, reduction
  /// work included; the rank goes on and meets the result at a synchronisation (docs/gpu.md).
  void enqueue_nccl(const CollectiveAlgorithm& algo, CollectiveArgs args, const Communicator& comm, const CallRecord& c)
  {
    GpuDevice* d = gpu_.system().device_of(rank_);
    if (d == nullptr)
      fail("an NCCL collective needs a GPU, and rank " + std::to_string(rank_) + "'s node has none");
    if (c.seconds > 0)  // the host side of the call as recorded (the enqueue), as for a kernel launch
      staging([&] { sg4::this_actor::sleep_for(c.seconds); });
    auto own = std::make_shared<Communicator>(comm);
    World* world = &world_;
    int rank = rank_;
    sg4::Host* gpu_host = d->host;
    gpu_.enqueue(
        c.stream,
        [world, rank, own, algo, args = std::move(args), gpu_host]() {
          try {
            CollectiveContext ctx(world->board, *own, rank, [](double flops) {
              if (flops > 0)
                sg4::this_actor::execute(flops);
            });
            ctx.set_endpoint(gpu_host);
            algo(ctx, args);
          } catch (const simgrid::ForcefulKillException&) {
            throw;
          } catch (...) {
            world->abort_run(std::current_exception());
          }
        },
        gpu_fail());
  }

  void start_nonblocking(CollectiveKind kind, const std::string& name, const CollectiveAlgorithm& algo,
                         CollectiveArgs args, const Communicator& comm, const CallRecord& c)
  {
    std::uint64_t seq = nbc_seq_[comm.id]++;
    auto [slot, created] = world_.nbc_contexts.try_emplace({comm.id, seq});
    if (created)
      slot->second = {world_.next_nbc_context--, comm.size()};
    auto own = std::make_shared<Communicator>(comm);
    own->coll_context = slot->second.context;
    if (--slot->second.members_left == 0)
      world_.nbc_contexts.erase(slot);

    RequestPtr request = world_.board.post_local(rank_);
    remember(c, request);
    World* world = &world_;
    int rank = rank_;
    const auto* copy_time = c.memory == models::Memory::Device ? nullptr : &world_.options.local_copy_time;
    sg4::Actor::create("rank-" + std::to_string(rank_) + "-i" + std::string(collective_name(kind)), sg4::this_actor::get_host(),
                       [world, rank, own, algo, args = std::move(args), request, copy_time]() {
                         try {
                           CollectiveContext ctx(world->board, *own, rank, [](double flops) {
                             if (flops > 0)
                               sg4::this_actor::execute(flops);
                           });
                           ctx.set_local_copy_time(copy_time);
                           ctx.set_node_map(world->nodes.get());
                           algo(ctx, args);
                           world->board.finish_local(request);
                           world->board.drain();  // this actor's eager sends must outlive it
                         } catch (const simgrid::ForcefulKillException&) {
                           throw;
                         } catch (...) {
                           world->abort_run(std::current_exception());
                         }
                       });
  }

  void split(const CallRecord& c)
  {
    // Rebinding MPI_COMM_WORLD is impossible; TIT traces record comm_split/comm_dup without their result
    // (SMPI's replayer ignores them), and they land here with new_comm = world.
    if (c.new_comm == models::kWorldComm)
      return;
    if (not c.counts.empty() || (c.op == Op::CommSplit && c.color < 0 && created_among_members(c)))
      return create_among_members(c);
    const Communicator& parent = communicator(c.comm);
    std::uint64_t seq = split_seq_[parent.id]++;
    if (c.op == Op::CommDup && c.request != models::kNoRequest)
      return start_idup(c, parent, seq);
    World::PendingSplit& pending = world_.splits[{parent.id, seq}];
    int color = c.op == Op::CommDup ? 0 : c.color;
    int key = c.op == Op::CommDup ? 0 : c.key;
    pending.entries.push_back({color, key, parent.rank_of(rank_), rank_});

    // Every member exchanges (color, key) like MPICH's allgather inside MPI_Comm_split: 8 bytes each.
    creation_exchange(parent);

    if (static_cast<int>(pending.entries.size()) != parent.size())
      throw InternalError("comm_split: allgather finished before every member deposited its color");
    if (color < 0) {  // MPI_UNDEFINED: this rank gets MPI_COMM_NULL
      comms_[c.new_comm] = nullptr;
      return;
    }
    auto [it, created] = pending.comm_of_color.try_emplace(color, -1);
    if (created) {
      std::vector<World::SplitEntry> members;
      for (const auto& e : pending.entries)
        if (e.color == color)
          members.push_back(e);
      std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
        return a.key != b.key ? a.key < b.key : a.parent_rank < b.parent_rank;
      });
      Communicator comm;
      comm.id = static_cast<int>(world_.comms.size());
      comm.p2p_context = 2 * comm.id;
      comm.coll_context = 2 * comm.id + 1;
      for (const auto& e : members)
        comm.world_ranks.push_back(e.world_rank);
      world_.comms.push_back(std::move(comm));
      it->second = world_.comms.back().id;
    }
    comms_[c.new_comm] = &world_.comms[it->second];
  }

  /// MPI_Comm_idup (a comm_dup record with `request`): a duplicate has the parent's members in the parent's
  /// order, so the communicator is known at once (the first member to arrive builds it; the n-th creation
  /// on a parent is the n-th at every member). Its cost, the members' 8-byte allgather, runs as a
  /// nonblocking collective on the parent: the rank goes on, and the wait or test naming the request
  /// completes when the exchange has. The handle may be used only after that (MPI 4.0, 6.4.2):
  /// communicator() rejects an earlier use.
  void start_idup(const CallRecord& c, const Communicator& parent, std::uint64_t seq)
  {
    World::PendingSplit& pending = world_.splits[{parent.id, seq}];
    auto [it, created] = pending.comm_of_color.try_emplace(0, -1);
    if (created) {
      Communicator comm;
      comm.id = static_cast<int>(world_.comms.size());
      comm.p2p_context = 2 * comm.id;
      comm.coll_context = 2 * comm.id + 1;
      comm.world_ranks = parent.world_ranks;
      world_.comms.push_back(std::move(comm));
      it->second = world_.comms.back().id;
    }
    CollectiveArgs args;
    args.bytes = 8;
    args.recv_bytes = 8;
    std::string name =
        world_.registry.select(CollectiveKind::Allgather, args, parent.size(), world_.options.coll_selector);
    start_nonblocking(CollectiveKind::Allgather, name, *world_.registry.find(CollectiveKind::Allgather, name),
                      std::move(args), parent, c);
    comms_[c.new_comm] = &world_.comms[static_cast<std::size_t>(it->second)];
    idup_pending_[c.new_comm] = c.request;
  }

  /// A creation that the profiler wrote with its members (MPI_Comm_create_group, MPI_Intercomm_create and
  /// _merge): the members' world ranks in `counts`, none when this rank got MPI_COMM_NULL.
  bool created_among_members(const CallRecord& c) const
  {
    std::string_view fn = stream_->functions().name(c.function);
    return fn == "MPI_Comm_create_group" || fn == "MPI_Intercomm_create" || fn == "MPI_Intercomm_merge";
  }

  /// Creates the communicator of `counts` (world ranks in rank order) among its members alone: the n-th
  /// creation of a member list at one member is the n-th at every other. Its cost: the members exchange
  /// 8 bytes each on it (an allgather), as the split of a parent does.
  void create_among_members(const CallRecord& c)
  {
    if (c.counts.empty()) {
      comms_[c.new_comm] = nullptr;  // MPI_COMM_NULL at this rank
      return;
    }
    std::vector<int> members;
    members.reserve(c.counts.size());
    for (std::uint64_t w : c.counts) {
      if (w >= world_.comms.front().world_ranks.size())
        fail("communicator members name world rank " + std::to_string(w) + ", outside the world of " +
             std::to_string(world_.comms.front().world_ranks.size()));
      members.push_back(static_cast<int>(w));
    }
    if (std::find(members.begin(), members.end(), rank_) == members.end())
      fail("a communicator created among its members does not list this rank");
    std::uint64_t seq = member_seq_[members]++;
    auto [it, created] = world_.member_comms.try_emplace({members, seq}, -1);
    if (created) {
      Communicator comm;
      comm.id = static_cast<int>(world_.comms.size());
      comm.p2p_context = 2 * comm.id;
      comm.coll_context = 2 * comm.id + 1;
      comm.world_ranks = members;
      world_.comms.push_back(std::move(comm));
      it->second = world_.comms.back().id;
    }
    const Communicator& comm = world_.comms[static_cast<std::size_t>(it->second)];
    comms_[c.new_comm] = &comm;
    creation_exchange(comm);
  }

  /// The cost of creating a communicator: its members (of the parent, for a split) exchange 8 bytes each
  /// with an allgather, as MPI_Comm_split does for (color, key).
  void creation_exchange(const Communicator& among)
  {
    CollectiveArgs args;
    args.bytes = 8;
    args.recv_bytes = 8;
    CollectiveContext ctx(world_.board, among, rank_, [](double) {});
    std::string name =
        world_.registry.select(CollectiveKind::Allgather, args, among.size(), world_.options.coll_selector);
    double begin = sg4::Engine::get_clock();
    (*world_.registry.find(CollectiveKind::Allgather, name))(ctx, args);
    stats_.wait_s += ctx.partner_wait_s();
    stats_.comm_s += sg4::Engine::get_clock() - begin - ctx.partner_wait_s();
  }

  World& world_;
  int rank_;
  models::CallStreamPtr stream_;
  double recorded_speed_;
  RankGpu gpu_;
  RankStats stats_;
  std::vector<double> function_seconds_;
  std::vector<std::uint64_t> function_calls_;
  // Fast-forward (docs/emulator.md): the last heads of the steady loop, this rank's collective choices
  // (as the communicator's first rank), and what the skip added per function.
  std::deque<HeadSnapshot> heads_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> choices_;
  std::vector<std::uint64_t> extra_calls_;
  std::vector<double> extra_seconds_;
  double compute_call_s_ = 0;  ///< simulated seconds in compute records (not reductions inside collectives)
  double compute_flops_ = 0;   ///< their work
  std::unordered_map<std::int64_t, RequestPtr> requests_;
  std::unordered_map<std::int32_t, const Communicator*> comms_;
  std::map<int, std::uint64_t> split_seq_;
  /// Communicators from MPI_Comm_idup whose request has not completed yet: handle -> request.
  std::unordered_map<std::int32_t, std::int64_t> idup_pending_;
  std::map<std::vector<int>, std::uint64_t> member_seq_;  ///< creations among members, per member list
  /// The call in progress, copied: after a deadlock SimGrid may have unwound the actor's stack.
  struct CurrentCall {
    bool valid = false;
    std::uint32_t function = 0;
    std::uint64_t line = 0;
    int peer = -1;
    int tag = 0;
  } current_;
  std::string blocked_detail_;
  RequestPtr waiting_on_;  ///< the request complete() waits for, if any (its description wins over blocked_detail_)
  const Communicator* self_ = nullptr;  ///< MPI_COMM_SELF, created at its first use
  std::int32_t current_comm_handle_ = 0;  ///< the handle communicator() resolved last, for messages
  /// Handles that are MPI_REQUEST_NULL now: completed by a test, or freed (MPI_Request_free).
  std::unordered_set<std::int64_t> inactive_;
  /// Freed requests whose operation still runs (MPI_Request_free does not stop it); settled at finalize.
  std::vector<RequestPtr> freed_;
  std::map<int, std::uint64_t> nbc_seq_;  ///< per communicator id: nonblocking collectives started
  int failed_tests_ = 0;
  int failed_iprobes_ = 0;
  bool finished_ = false;
};

}  // namespace

ReplayResult replay(const models::TraceSource& trace, const ReplayOptions& options,
                    const std::filesystem::path& timeline_path)
{
  std::vector<std::string> args{"gridcast"};
  // SimGrid's own chatter (configuration echoes, the deadlock dump) is replaced by gridcast's reports.
  args.emplace_back("--log=root.thresh:warning");
  args.emplace_back("--log=ker_engine.app:file:/dev/null");
#ifdef GRIDCAST_SANITIZED
  args.emplace_back("--cfg=contexts/factory:thread");  // see CMakeLists.txt
#endif
  // Defaults for MPI on clusters, as smpirun sets them: SMPI's piecewise-calibrated network model
  // (SimGrid's own default, LV08, is fitted to wide-area TCP) and a fine solver precision. The user's
  // settings come after and override them. All go through the command line of the engine, because
  // some (tracing:yes) only take effect when given before the engine initialises.
  args.emplace_back("--cfg=network/model:SMPI");
  args.emplace_back("--cfg=surf/precision:1e-9");
  for (const auto& [name, value] : options.simgrid_cfg)
    args.push_back("--cfg=" + name + ":" + value);
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  std::unique_ptr<sg4::Engine> engine_ptr;
  try {
    engine_ptr = std::make_unique<sg4::Engine>(&argc, argv.data());
  } catch (const std::exception& e) {
    // SimGrid lists every key it knows after the first line; the first line says what is wrong.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw InputError({"--cfg", 0, {}, -1}, "SimGrid rejects a setting: " + what +
                                               " (`gridcast algorithms` lists gridcast's own settings)");
  }
  sg4::Engine& engine = *engine_ptr;
  platform::load_platform(engine, options.platform);

  // A platform generated from a calibration carries its network factors and eager threshold.
  const PlatformCalibration calibration = read_platform_calibration(engine, options.platform);
  install_factor_callbacks(engine, calibration, options.platform);
  ReplayOptions effective = options;
  std::string threshold_source = options.eager_threshold_set ? "cfg" : "default";
  if (calibration.eager_threshold_bytes && not options.eager_threshold_set) {
    effective.eager_threshold_bytes = *calibration.eager_threshold_bytes;
    threshold_source                = "platform";
  }
  // The envelope of every message (docs/emulator.md, "Message envelope"): SMPI sends 16 bytes more than
  // the data and its piecewise factors were fitted with them; a calibration's factors were fitted on whole
  // messages of the real library, whose own envelope they therefore hold already.
  std::string envelope_source = "cfg";
  if (not options.envelope_set) {
    const bool calibrated_factors = not calibration.lat_factor.empty() || not calibration.bw_factor.empty();
    const bool smpi_model         = simgrid::config::get_value<std::string>("network/model") == "SMPI";
    effective.envelope_bytes      = smpi_model && not calibrated_factors ? kSmpiEnvelopeBytes : 0;
    envelope_source               = calibrated_factors ? "platform" : smpi_model ? "smpi-model" : "default";
  }
  // Local copies inside collectives (docs/collectives.md, "Local copies"): at the platform's copy rate.
  if (options.local_copy == LocalCopyMode::On && calibration.memcpy_time.empty())
    throw InputError({options.platform.string(), 0, "gridcast:memcpy-time", -1},
                     "--cfg gridcast/coll-local-copy:on needs the platform property gridcast:memcpy-time "
                     "(platforms generated from a calibration have it)");
  if (options.local_copy != LocalCopyMode::Off)
    effective.local_copy_time = calibration.memcpy_time;

  int np = trace.rank_count();
  if (np < 1)
    throw InputError({}, "the trace has no rank");
  std::vector<sg4::Host*> hosts = platform::place_ranks(engine, np, options.placement);

  std::unique_ptr<TimelineWriter> timeline;
  if (not timeline_path.empty())
    timeline = std::make_unique<TimelineWriter>(timeline_path, hosts);

  World world(hosts, effective, timeline.get());
  world.gpus = std::make_unique<GpuSystem>(engine, hosts, options.gpu, options.platform);
  world.nodes = node_map(hosts, options.platform.string());
  world.board.set_link_accounting(options.link_stats);
  if (not calibration.copy_overhead.empty())
    world.board.set_copy_overhead(calibration.copy_overhead);
  // Mailbox comms between the ranks' actors are faster in SimGrid 3.32 than host-to-host comms (see
  // p2p.hpp); they need every message to leave from and land on its actor's host, so not with GPUs.
  world.board.set_use_mailboxes(not world.gpus->has_devices());
  // Steady-state fast-forward (predict only; docs/emulator.md).
  std::optional<FastForwardReport> ff_report;
  if (options.fast_forward.mode != FastForwardOptions::Mode::Unavailable) {
    const FastForwardOptions& ff = options.fast_forward;
    if (ff.window < 1 || ff.warmup < 0 || ff.tail < 1 || not(ff.tolerance >= 0))
      throw InternalError("fast-forward options out of range");
    FastForwardReport rep;
    rep.options = ff;
    models::TraceSource::SteadyLoop loop = trace.steady_loop();
    rep.loop            = loop.name;
    rep.loop_iterations = loop.iterations;
    if (ff.mode == FastForwardOptions::Mode::Off)
      rep.why_not = "off";
    else if (loop.iterations == 0)
      rep.why_not = loop.why_not;
    else if (loop.iterations < ff.min_iterations)
      rep.why_not = "the loop has " + std::to_string(loop.iterations) + " iterations, fewer than the minimum " +
                    std::to_string(ff.min_iterations);
    else {
      if (loop.random_work)
        rep.options.window *= 2;  // see SteadyLoop::random_work; reported as the window used
      world.steady = std::make_unique<SteadyState>(rep.options, loop.iterations, np);
      world.board.track_iterations();
    }
    ff_report = std::move(rep);
  }
  std::vector<std::unique_ptr<RankRunner>> runners;
  runners.reserve(np);
  for (int r = 0; r < np; ++r)
    runners.push_back(std::make_unique<RankRunner>(world, r, trace.open(r), options.recorded_host_speed_flops));

  // The first exception thrown inside an actor is kept (World::failure) and rethrown after the simulation stops.
  for (int r = 0; r < np; ++r) {
    RankRunner* runner = runners[r].get();
    runner->stats().rank = r;
    runner->stats().host = hosts[r]->get_name();
    sg4::Actor::create("rank-" + std::to_string(r), hosts[r], [runner, &world]() {
      try {
        runner->run();
        // The rank is done (its statistics are final); its eager sends still in flight must not be
        // cancelled with the actor, and a rank blocked here is not reported: it finished its trace.
        world.board.drain();
      } catch (const simgrid::ForcefulKillException&) {
        throw;  // SimGrid unwinding a killed actor
      } catch (...) {
        world.abort_run(std::current_exception());
      }
    });
  }
  engine.run();
  if (world.failure)
    std::rethrow_exception(world.failure);

  ReplayResult result;
  result.makespan_s = sg4::Engine::get_clock();
  result.messages = world.board.messages();
  for (const auto& runner : runners) {
    if (not runner->finished())
      result.blocked.push_back(runner->blocked_report());
    result.ranks.push_back(runner->stats());
    result.events += runner->stats().calls;
    runner->merge_functions(result.functions);
  }
  result.collectives = world.collective_choices;
  result.eager_threshold_bytes  = effective.eager_threshold_bytes;
  result.eager_threshold_source = threshold_source;
  result.envelope_bytes         = effective.envelope_bytes;
  result.envelope_source        = envelope_source;
  result.lat_factor             = platform::format_factor_segments(calibration.lat_factor);
  result.bw_factor              = platform::format_factor_segments(calibration.bw_factor);
  result.calibration            = calibration.calibration;
  result.copy_overhead          = platform::format_overhead_points(calibration.copy_overhead);
  result.local_copy_time        = platform::format_overhead_points(effective.local_copy_time);
  result.gpu_costs              = world.gpus->cost_report();
  if (ff_report && world.steady) {
    const SteadyState& st = *world.steady;
    if (st.skip_from && st.ranks_skipped == np) {
      ff_report->applied               = true;
      ff_report->skip_from             = *st.skip_from;
      ff_report->skipped               = st.skipped;
      ff_report->period_min_s          = st.period_min_s;
      ff_report->period_max_s          = st.period_max_s;
      ff_report->period_mean_s         = st.period_sum_s / static_cast<double>(np);
      ff_report->skipped_s             = st.skipped_s;
      ff_report->extrapolated_calls    = st.extrapolated_calls;
      ff_report->extrapolated_messages = st.extrapolated_messages;
    } else if (st.skip_from && result.blocked.empty()) {
      throw InternalError("fast-forward: " + std::to_string(st.ranks_skipped) + " of " + std::to_string(np) +
                          " ranks skipped");
    } else {
      ff_report->why_not = st.reason();
    }
  }
  result.fast_forward = std::move(ff_report);
  for (const auto& [link, bytes] : world.board.link_bytes()) {
    LinkStats s;
    s.name = link->get_name();
    s.bytes = bytes;
    s.bandwidth_Bps = link->get_bandwidth();
    s.utilisation = result.makespan_s > 0 && s.bandwidth_Bps > 0 ? bytes / (s.bandwidth_Bps * result.makespan_s) : 0;
    result.links.push_back(std::move(s));
  }
  std::sort(result.links.begin(), result.links.end(),
            [](const LinkStats& a, const LinkStats& b) { return platform::natural_less(a.name, b.name); });
  if (timeline)
    timeline->close();
  if (not result.blocked.empty())
    throw DeadlockError(result.blocked);
  return result;
}

}  // namespace gridcast::emulator
