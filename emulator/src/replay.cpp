#include "gridcast/emulator/replay.hpp"

#include "gridcast/emulator/calibration_factors.hpp"

#include "gridcast/emulator/p2p.hpp"
#include "gridcast/emulator/timeline.hpp"
#include "gridcast/models/errors.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <deque>
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

/// State shared by all rank actors of one run.
struct World {
  World(std::vector<sg4::Host*> hosts, const ReplayOptions& opts, TimelineWriter* tl)
      : board(hosts, MessageBoard::Options{opts.eager_threshold_bytes}), options(opts), timeline(tl)
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
  std::map<std::string, std::map<std::string, std::uint64_t>> collective_choices;
};

/// One MPI rank: pulls calls from its stream and performs them.
class RankRunner {
public:
  RankRunner(World& world, int rank, models::CallStreamPtr stream, double recorded_speed)
      : world_(world), rank_(rank), stream_(std::move(stream)), recorded_speed_(recorded_speed)
  {
    comms_[models::kWorldComm] = &world_.comms.front();
  }

  void run()
  {
    CallRecord call;
    while (stream_->next(call)) {
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
    b.detail = blocked_detail_;
    return b;
  }

private:
  [[noreturn]] void fail(const std::string& reason) const
  {
    throw InputError({stream_->source(), current_.valid ? current_.line : 0, {}, rank_}, reason);
  }

  void perform(const CallRecord& c)
  {
    switch (c.op) {
      case Op::Init:
      case Op::Finalize:
      case Op::CommSize:
        return;
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
        return complete(post_recv(c, c.peer, c.tag, c.bytes), c);
      case Op::Irecv:
        remember(c, post_recv(c, c.peer, c.tag, c.bytes));
        return;
      case Op::Sendrecv: {
        const Communicator& comm = communicator(c.comm);
        int dst = world_rank(comm, c.peer);
        int src = c.src == models::kAnySource ? kAnySource : world_rank(comm, c.src);
        RequestPtr s = world_.board.post_send(rank_, dst, c.bytes, c.tag, comm.p2p_context, SendMode::Standard);
        RequestPtr r = world_.board.post_recv(rank_, src, c.recv_bytes, c.recv_tag == models::kAnyTag ? kAnyTag : c.recv_tag,
                                              comm.p2p_context);
        complete(s, c);
        complete(r, c);
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
        return test_handle(c);
      case Op::CommSplit:
      case Op::CommDup:
        return split(c);
      case Op::GpuKernel:
      case Op::GpuMemcpy:
      case Op::GpuSync:
      case Op::GpuMalloc:
      case Op::GpuFree:
        fail("GPU calls (" + std::string(models::op_name(c.op)) +
             ") need the GPU emulation, which this version of gridcast does not have yet");
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
    stats_.compute_s += sg4::Engine::get_clock() - begin;
  }

  const Communicator& communicator(std::int32_t handle)
  {
    auto it = comms_.find(handle);
    if (it == comms_.end() || it->second == nullptr)
      fail("communicator handle " + std::to_string(handle) + " was never created by this rank");
    return *it->second;
  }

  int world_rank(const Communicator& comm, int comm_rank)
  {
    if (comm_rank < 0 || comm_rank >= comm.size())
      fail("peer " + std::to_string(comm_rank) + " is outside the communicator (size " + std::to_string(comm.size()) +
           ")");
    return comm.world_ranks[comm_rank];
  }

  RequestPtr post_send(const CallRecord& c, SendMode mode)
  {
    const Communicator& comm = communicator(c.comm);
    int dst = world_rank(comm, c.peer);
    if (c.tag < 0)
      fail("a send needs a tag >= 0, got " + std::to_string(c.tag));
    RequestPtr r = world_.board.post_send(rank_, dst, c.bytes, c.tag, comm.p2p_context, mode);
    if (world_.timeline != nullptr)
      world_.timeline->flow_start(rank_, r->message, sg4::Engine::get_clock());
    return r;
  }

  RequestPtr post_recv(const CallRecord& c, int peer, int tag, std::uint64_t bytes)
  {
    const Communicator& comm = communicator(c.comm);
    int src = peer == models::kAnySource ? kAnySource : world_rank(comm, peer);
    return world_.board.post_recv(rank_, src, bytes, tag == models::kAnyTag ? kAnyTag : tag, comm.p2p_context);
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
    blocked_detail_ = describe(*r);
    double partner = world_.board.wait(r);
    blocked_detail_.clear();
    double elapsed = sg4::Engine::get_clock() - begin;
    stats_.wait_s += partner;
    stats_.comm_s += elapsed - partner;
    if (r->kind == Request::Kind::Recv && world_.timeline != nullptr)
      world_.timeline->flow_end(rank_, r->message, sg4::Engine::get_clock());
  }

  static std::string describe(const Request& r)
  {
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
      // A request already completed by a successful test is MPI_REQUEST_NULL: waiting on it is a no-op.
      if (tested_.erase(handle) > 0)
        return;
      fail("wait on request handle " + std::to_string(handle) + " that no isend/irecv created");
    }
    RequestPtr r = std::move(it->second);
    requests_.erase(it);
    complete(r, c);
  }

  void wait_any(const CallRecord& c)
  {
    // Complete the first request that is done already; otherwise the first to match, then its transfer.
    // (A transfer that finishes while another request is still unmatched is not noticed earlier: the
    // simplification is documented in docs/emulator.md.)
    for (std::int64_t h : c.requests) {
      auto it = requests_.find(h);
      if (it != requests_.end() && world_.board.test(it->second)) {
        requests_.erase(it);
        return;
      }
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

  void test_handle(const CallRecord& c)
  {
    auto it = requests_.find(c.request);
    if (it == requests_.end()) {
      if (tested_.count(c.request) > 0)
        return;
      fail("test on request handle " + std::to_string(c.request) + " that no isend/irecv created");
    }
    if (world_.board.test(it->second)) {
      if (it->second->kind == Request::Kind::Recv && world_.timeline != nullptr)
        world_.timeline->flow_end(rank_, it->second->message, sg4::Engine::get_clock());
      requests_.erase(it);
      tested_.insert(c.request);
      failed_tests_ = 0;
      return;
    }
    // Like SMPI, a failing test costs simulated time, growing while the rank keeps polling, so that
    // polling loops advance the clock instead of spinning in zero time.
    ++failed_tests_;
    double begin = sg4::Engine::get_clock();
    if (world_.options.test_cost_s > 0)
      sg4::this_actor::sleep_for(world_.options.test_cost_s * failed_tests_);
    stats_.comm_s += sg4::Engine::get_clock() - begin;
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
    auto forced = world_.options.forced_algorithms.find(kind);
    if (forced != world_.options.forced_algorithms.end())
      name = forced->second;
    else
      name = world_.registry.select(kind, args, comm.size());
    const CollectiveAlgorithm* algo = world_.registry.find(kind, name);
    if (algo == nullptr)
      throw InternalError("no collective algorithm " + name + " for " + std::string(collective_name(kind)));
    if (comm.rank_of(rank_) == 0)
      world_.collective_choices[std::string(collective_name(kind))][name] += 1;

    double begin = sg4::Engine::get_clock();
    double compute_before = stats_.compute_s;
    CollectiveContext ctx(world_.board, comm, rank_, [this](double flops) {
      double b = sg4::Engine::get_clock();
      if (flops > 0)
        sg4::this_actor::execute(flops);
      stats_.compute_s += sg4::Engine::get_clock() - b;
    });
    blocked_detail_ = "inside " + std::string(collective_name(kind)) + " (" + name + ")";
    (*algo)(ctx, args);
    blocked_detail_.clear();
    double elapsed = sg4::Engine::get_clock() - begin;
    double computed = stats_.compute_s - compute_before;
    stats_.wait_s += ctx.partner_wait_s();
    stats_.comm_s += std::max(0.0, elapsed - computed - ctx.partner_wait_s());
  }

  void split(const CallRecord& c)
  {
    // Rebinding MPI_COMM_WORLD is impossible; TIT traces record comm_split/comm_dup without their result
    // (SMPI's replayer ignores them), and they land here with new_comm = world.
    if (c.new_comm == models::kWorldComm)
      return;
    const Communicator& parent = communicator(c.comm);
    std::uint64_t seq = split_seq_[parent.id]++;
    World::PendingSplit& pending = world_.splits[{parent.id, seq}];
    int color = c.op == Op::CommDup ? 0 : c.color;
    int key = c.op == Op::CommDup ? 0 : c.key;
    pending.entries.push_back({color, key, parent.rank_of(rank_), rank_});

    // Every member exchanges (color, key) like MPICH's allgather inside MPI_Comm_split: 8 bytes each.
    CollectiveArgs args;
    args.bytes = 8;
    args.recv_bytes = 8;
    CollectiveContext ctx(world_.board, parent, rank_, [](double) {});
    std::string name = world_.registry.select(CollectiveKind::Allgather, args, parent.size());
    double begin = sg4::Engine::get_clock();
    (*world_.registry.find(CollectiveKind::Allgather, name))(ctx, args);
    stats_.wait_s += ctx.partner_wait_s();
    stats_.comm_s += sg4::Engine::get_clock() - begin - ctx.partner_wait_s();

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

  World& world_;
  int rank_;
  models::CallStreamPtr stream_;
  double recorded_speed_;
  RankStats stats_;
  std::vector<double> function_seconds_;
  std::vector<std::uint64_t> function_calls_;
  std::unordered_map<std::int64_t, RequestPtr> requests_;
  std::unordered_set<std::int64_t> tested_;
  std::unordered_map<std::int32_t, const Communicator*> comms_;
  std::map<int, std::uint64_t> split_seq_;
  /// The call in progress, copied: after a deadlock SimGrid may have unwound the actor's stack.
  struct CurrentCall {
    bool valid = false;
    std::uint32_t function = 0;
    std::uint64_t line = 0;
    int peer = -1;
    int tag = 0;
  } current_;
  std::string blocked_detail_;
  int failed_tests_ = 0;
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

  int np = trace.rank_count();
  if (np < 1)
    throw InputError({}, "the trace has no rank");
  std::vector<sg4::Host*> hosts = platform::place_ranks(engine, np, options.placement);

  std::unique_ptr<TimelineWriter> timeline;
  if (not timeline_path.empty())
    timeline = std::make_unique<TimelineWriter>(timeline_path, hosts);

  World world(hosts, effective, timeline.get());
  world.board.set_link_accounting(options.link_stats);
  std::vector<std::unique_ptr<RankRunner>> runners;
  runners.reserve(np);
  for (int r = 0; r < np; ++r)
    runners.push_back(std::make_unique<RankRunner>(world, r, trace.open(r), options.recorded_host_speed_flops));

  // The first exception thrown inside an actor is kept and rethrown after the simulation stops.
  std::exception_ptr failure;
  for (int r = 0; r < np; ++r) {
    RankRunner* runner = runners[r].get();
    runner->stats().rank = r;
    runner->stats().host = hosts[r]->get_name();
    sg4::Actor::create("rank-" + std::to_string(r), hosts[r], [runner, &failure, &world]() {
      try {
        runner->run();
      } catch (const simgrid::ForcefulKillException&) {
        throw;  // SimGrid unwinding a killed actor
      } catch (...) {
        if (not failure)
          failure = std::current_exception();
        world.board.abort();
        for (auto const& a : sg4::Engine::get_instance()->get_all_actors())
          if (a != sg4::Actor::self())
            a->kill();
      }
    });
  }
  engine.run();
  if (failure)
    std::rethrow_exception(failure);

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
  result.lat_factor             = platform::format_factor_segments(calibration.lat_factor);
  result.bw_factor              = platform::format_factor_segments(calibration.bw_factor);
  result.calibration            = calibration.calibration;
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
