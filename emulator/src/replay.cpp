#include "gridcast/emulator/replay.hpp"

#include "fast_forward.hpp"
#include "rank_runner.hpp"
#include "world.hpp"

#include "gridcast/emulator/calibration_factors.hpp"
#include "gridcast/emulator/contexts.hpp"
#include "gridcast/emulator/gpu.hpp"
#include "gridcast/emulator/p2p.hpp"
#include "gridcast/emulator/timeline.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/recorded_loop.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <xbt/config.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>

namespace gridcast::emulator {

DeadlockError::DeadlockError(std::vector<BlockedRank> blocked)
    : std::runtime_error(std::to_string(blocked.size()) + " rank(s) blocked forever"), blocked_(std::move(blocked))
{
}

namespace {

/// The node of each rank (its host) and that host's last-level cache (gridcast:llc-bytes, written by
/// `gridcast platform`; 0 where absent), for the cold-copy rule of collectives (docs/reference/collectives.md).
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

/// The command line of the SimGrid engine of a replay.
std::vector<std::string> engine_arguments(const ReplayOptions& options, const ContextPlan& plan)
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
  if (plan.chosen) {  // runs of many ranks (contexts.hpp); the user's own contexts/... come after
    args.push_back("--cfg=contexts/stack-size:" + std::to_string(plan.actor_stack_bytes / 1024));
    args.push_back("--cfg=contexts/guard-size:" + std::to_string(plan.guard_bytes));
  }
  for (const auto& [name, value] : options.simgrid_cfg)
    args.push_back("--cfg=" + name + ":" + value);
  return args;
}

/// The critical path's point-to-point time, by the bottleneck link of each message's route: the links
/// of least nominal bandwidth on it (split among equals). Where messages share a link, the fluid model
/// may make another link the real bottleneck; the nominal one is what a buyer would change.
void attribute_to_links(CriticalPath& path, const std::vector<sg4::Host*>& hosts)
{
  std::map<std::pair<int, int>, std::vector<sg4::Link*>> bottlenecks;  // (sender, receiver) rank pair
  std::map<std::string, double> seconds;
  for (const CriticalPath::Segment& seg : path.segments) {
    if (seg.peer < 0)
      continue;
    const std::pair<int, int> key = seg.from_peer ? std::pair{seg.peer, seg.rank} : std::pair{seg.rank, seg.peer};
    auto [it, created] = bottlenecks.try_emplace(key);
    if (created) {
      std::vector<sg4::Link*> route;
      double latency = 0;
      hosts[static_cast<std::size_t>(key.first)]->route_to(hosts[static_cast<std::size_t>(key.second)], route, &latency);
      double least = std::numeric_limits<double>::infinity();
      for (sg4::Link* l : route)
        least = std::min(least, l->get_bandwidth());
      for (sg4::Link* l : route)
        if (l->get_bandwidth() == least)
          it->second.push_back(l);
    }
    for (sg4::Link* l : it->second)
      seconds[l->get_name()] += (seg.end_s - seg.begin_s) / static_cast<double>(it->second.size());
  }
  path.by_link.assign(seconds.begin(), seconds.end());
  std::stable_sort(path.by_link.begin(), path.by_link.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
}

/// --analysis on timeline.json: each wait as a slice inside the call that waited ("wait: late sender"),
/// and the critical path on a track after the ranks', one slice per piece ("rank 2: compute").
void draw_analysis(TimelineWriter& timeline, const WaitStateReport& report, int np)
{
  for (const WaitMark& m : report.marks)
    timeline.slice(m.rank, std::string("wait: ") + wait_kind_words(m.kind), "wait", m.begin_s, m.end_s - m.begin_s);
  if (not report.critical_path)
    return;
  timeline.track_name(np, "critical path");
  const CriticalPath& path = *report.critical_path;
  for (const auto& seg : path.segments)
    timeline.slice(np, "rank " + std::to_string(seg.rank) + ": " + path.functions[seg.function], "critical_path",
                   seg.begin_s, seg.end_s - seg.begin_s);
}

/// --what-if link:NAME bw*F / lat*F: the link's bandwidth or latency scaled before the run. A name that
/// is not a link but the common stem of a split-duplex pair (a <cluster>'s NAME_UP and NAME_DOWN) scales
/// both directions.
void scale_links(const std::vector<ReplayOptions::LinkScale>& scales)
{
  for (const auto& s : scales) {
    std::vector<sg4::Link*> links;
    if (sg4::Link* l = sg4::Link::by_name_or_null(s.link))
      links.push_back(l);
    else
      for (const char* side : {"_UP", "_DOWN"})
        if (sg4::Link* l = sg4::Link::by_name_or_null(s.link + side))
          links.push_back(l);
    if (links.empty())
      throw InputError({"--what-if", 0, s.expression, -1},
                       "the platform has no link '" + s.link + "' (nor '" + s.link + "_UP'/'_DOWN'): prediction.json's "
                       "links[] lists the links of a run");
    for (sg4::Link* l : links) {
      if (s.bandwidth_factor != 1)
        l->set_bandwidth(l->get_bandwidth() * s.bandwidth_factor);
      if (s.latency_factor != 1)
        l->set_latency(l->get_latency() * s.latency_factor);
    }
  }
}

/// The imbalance per iteration of a recorded trace stands only where every rank's calls fold into a main
/// loop of the same number of iterations: otherwise iteration k of one rank need not be iteration k of
/// another, and the figures are withdrawn with the reason.
void judge_recorded_loops(WaitStateReport& report, const std::vector<models::RecordedLoop>& loops)
{
  report.iterations_loop = "the recorded loop";
  std::string why;
  for (std::size_t r = 0; r < loops.size() && why.empty(); ++r)
    if (loops[r].iterations == 0)
      why = "rank " + std::to_string(r) + "'s calls have no loop of two iterations or more";
    else if (loops[r].iterations != loops[0].iterations)
      why = "the ranks' loops differ: rank 0's has " + std::to_string(loops[0].iterations) + " iterations, rank " +
            std::to_string(r) + "'s " + std::to_string(loops[r].iterations);
  if (loops.empty())
    why = "no rank";
  if (not why.empty()) {
    report.iterations.clear();
    report.iterations_note = why;
  } else {
    report.iterations_loop += " of " + std::to_string(loops[0].body_calls) +
                              (loops[0].body_calls == 1 ? " call" : " calls") + " on rank 0";
  }
}

/// SimGrid's engine with the run's settings; `args` must outlive it (SimGrid keeps pointers into them).
std::unique_ptr<sg4::Engine> start_engine(std::vector<std::string>& args)
{
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  try {
    return std::make_unique<sg4::Engine>(&argc, argv.data());
  } catch (const std::exception& e) {
    // SimGrid lists every key it knows after the first line; the first line says what is wrong.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw InputError({"--cfg", 0, {}, -1}, "SimGrid rejects a setting: " + what +
                                               " (`gridcast algorithms` lists gridcast's own settings)");
  }
}

/// The options as the run takes them, once the platform's calibration is known, and where each came from.
struct EffectiveSettings {
  ReplayOptions options;
  std::string threshold_source;
  std::string envelope_source;
};

EffectiveSettings effective_settings(const ReplayOptions& options, const PlatformCalibration& calibration)
{
  EffectiveSettings e{options, options.eager_threshold_set ? "cfg" : "default", "cfg"};
  ReplayOptions& effective = e.options;
  if (calibration.eager_threshold_bytes && not options.eager_threshold_set) {
    effective.eager_threshold_bytes = *calibration.eager_threshold_bytes;
    e.threshold_source              = "platform";
  }
  // The envelope of every message (docs/reference/emulator.md, "Message envelope"): SMPI sends 16 bytes more than
  // the data and its piecewise factors were fitted with them; a calibration's factors were fitted on whole
  // messages of the real library, whose own envelope they therefore hold already.
  if (not options.envelope_set) {
    const bool calibrated_factors = not calibration.lat_factor.empty() || not calibration.bw_factor.empty();
    const bool smpi_model         = simgrid::config::get_value<std::string>("network/model") == "SMPI";
    effective.envelope_bytes      = smpi_model && not calibrated_factors ? kSmpiEnvelopeBytes : 0;
    e.envelope_source             = calibrated_factors ? "platform" : smpi_model ? "smpi-model" : "default";
  }
  // Local copies inside collectives (docs/reference/collectives.md, "Local copies"): at the platform's copy rate.
  if (options.local_copy == LocalCopyMode::On && calibration.memcpy_time.empty())
    throw InputError({options.platform.string(), 0, "gridcast:memcpy-time", -1},
                     "--cfg gridcast/coll-local-copy:on needs the platform property gridcast:memcpy-time "
                     "(platforms generated from a calibration have it)");
  if (options.local_copy != LocalCopyMode::Off)
    effective.local_copy_time = calibration.memcpy_time;
  return e;
}

/// The run's outcome per rank: the makespan, unmatched sends, each rank's statistics and functions, and in a
/// sampled run the estimates that replace the emulated times (emulator/src/sampling.cpp).
ReplayResult rank_results(World& world, const std::vector<std::unique_ptr<RankRunner>>& runners)
{
  ReplayResult result;
  result.makespan_s = sg4::Engine::get_clock();
  result.messages = world.board.messages();
  const std::vector<RequestPtr> unmatched = world.board.unmatched_sends();
  result.unmatched_sends = unmatched.size();
  if (not unmatched.empty()) {
    const Request& s = *unmatched.front();
    result.first_unmatched_send = "rank " + std::to_string(s.owner) + " to rank " + std::to_string(s.peer) + ", tag " +
                                  std::to_string(s.tag) + ", " + std::to_string(s.bytes) + " B";
  }
  if (world.sampled && std::all_of(runners.begin(), runners.end(), [](const auto& r) { return r->finished(); })) {
    result.sampling = estimate_run(*world.sampled, result.makespan_s);
    const double shift = result.sampling->loop_estimate_s - result.sampling->emulated_loop_s;
    result.makespan_s += shift;
    result.sampling->estimate_s = result.makespan_s;
    for (const auto& runner : runners)
      runner->apply_sampling_estimate(shift);
  }
  for (const auto& runner : runners) {
    if (not runner->finished())
      result.blocked.push_back(runner->blocked_report());
    result.ranks.push_back(runner->stats());
    result.events += runner->stats().calls;
    runner->merge_functions(result.functions);
  }
  result.collectives = world.collective_choices;
  return result;
}

/// Bytes and utilisation of every link a message crossed, in natural name order.
std::vector<LinkStats> link_results(const World& world, double makespan_s)
{
  std::vector<LinkStats> links;
  for (const auto& [link, bytes] : world.board.link_bytes()) {
    LinkStats s;
    s.name = link->get_name();
    s.bytes = bytes;
    s.bandwidth_Bps = link->get_bandwidth();
    s.utilisation = makespan_s > 0 && s.bandwidth_Bps > 0 ? bytes / (s.bandwidth_Bps * makespan_s) : 0;
    links.push_back(std::move(s));
  }
  std::sort(links.begin(), links.end(),
            [](const LinkStats& a, const LinkStats& b) { return platform::natural_less(a.name, b.name); });
  return links;
}

/// What the run took from the options and the platform's calibration, and from where.
void add_settings(ReplayResult& result, const EffectiveSettings& settings, const PlatformCalibration& calibration,
                  const World& world)
{
  const ReplayOptions& effective = settings.options;
  result.eager_threshold_bytes  = effective.eager_threshold_bytes;
  result.eager_threshold_source = settings.threshold_source;
  result.envelope_bytes         = effective.envelope_bytes;
  result.envelope_source        = settings.envelope_source;
  result.lat_factor             = platform::format_factor_segments(calibration.lat_factor);
  result.bw_factor              = platform::format_factor_segments(calibration.bw_factor);
  result.calibration            = calibration.calibration;
  result.copy_overhead          = platform::format_overhead_points(calibration.copy_overhead);
  result.local_copy_time        = platform::format_overhead_points(effective.local_copy_time);
  result.gpu_costs              = world.gpus->cost_report();
  result.gpu_priced_launches    = world.gpus->priced_launches();
  result.gpu_unpriced_kernels   = world.gpus->unpriced_kernels();
}

ReplayResult replay_here(const models::TraceSource& trace, const ReplayOptions& options,
                         const std::filesystem::path& timeline_path, const ContextPlan& plan)
{
  std::vector<std::string> args = engine_arguments(options, plan);  // kept alive with the engine
  std::unique_ptr<sg4::Engine> engine_ptr = start_engine(args);
  sg4::Engine& engine = *engine_ptr;
  platform::load_platform(engine, options.platform);
  scale_links(options.link_scales);

  // A platform generated from a calibration carries its network factors and eager threshold.
  const PlatformCalibration calibration = read_platform_calibration(engine, options.platform);
  install_factor_callbacks(engine, calibration, options.platform);
  const EffectiveSettings settings = effective_settings(options, calibration);
  const ReplayOptions& effective = settings.options;

  int np = trace.rank_count();
  if (np < 1)
    throw InputError({}, "the trace has no rank");
  std::vector<sg4::Host*> hosts = platform::place_ranks(engine, np, options.placement);
  platform::check_rank_routes(options.platform, hosts);

  std::unique_ptr<TimelineWriter> timeline;
  if (not timeline_path.empty()) {
    timeline = std::make_unique<TimelineWriter>(timeline_path, hosts);
    if (not options.timeline_ranks.empty()) {
      std::vector<bool> detail = options.timeline_ranks;
      detail.resize(static_cast<std::size_t>(np), false);
      timeline->set_detail(std::move(detail));
    }
  }

  World world(hosts, effective, timeline.get());
  world.gpus = std::make_unique<GpuSystem>(engine, hosts, options.gpu, options.platform);
  world.nodes = node_map(hosts, options.platform.string());
  world.board.set_link_accounting(options.link_stats);
  if (not calibration.copy_overhead.empty())
    world.board.set_copy_overhead(calibration.copy_overhead);
  // Mailbox comms between the ranks' actors are faster in SimGrid 3.32 than host-to-host comms (see
  // p2p.hpp); they need every message to leave from and land on its actor's host, so not with GPUs.
  world.board.set_use_mailboxes(not world.gpus->has_devices());
  // Steady-state fast-forward (predict only; docs/reference/emulator.md).
  std::optional<FastForwardReport> ff_report = plan_fast_forward(trace, options.fast_forward, np, world.steady);
  if (world.steady)
    world.board.track_iterations();
  if (options.sampling_plan) {
    if (world.steady)
      throw InternalError("a sampled run with fast-forward");
    world.sampled = std::make_unique<SampledRun>(options.sampling_plan);
  }
  if (options.wait_states || options.critical_path) {
    // Waits are classified on emulated calls; skipped iterations would have none (the CLI turns
    // fast-forward off, or refuses it, with --analysis).
    if (world.steady || world.sampled)
      throw InputError({}, "--analysis needs every iteration emulated: use --fast-forward off, without --sample");
    world.waits = std::make_unique<WaitStateRecorder>(np, options.critical_path, timeline != nullptr);
  }
  // The imbalance per iteration needs the iterations' heads: a recorded trace's are found by folding each
  // rank's calls (a synthesized one marks its steady loop's itself).
  std::optional<models::LoopMarkedSource> marked;
  if (world.waits && trace.steady_loop().iterations == 0)
    marked.emplace(trace);
  const models::TraceSource& source = marked ? static_cast<const models::TraceSource&>(*marked) : trace;
  std::vector<std::unique_ptr<RankRunner>> runners;
  runners.reserve(np);
  for (int r = 0; r < np; ++r)
    runners.push_back(std::make_unique<RankRunner>(world, r, source.open(r), options.recorded_host_speed_flops));

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

  ReplayResult result = rank_results(world, runners);
  add_settings(result, settings, calibration, world);
  if (ff_report && world.steady)
    complete_fast_forward_report(*ff_report, *world.steady, np, not result.blocked.empty());
  result.fast_forward = std::move(ff_report);
  if (world.waits) {
    std::vector<double> finish;
    for (const RankStats& r : result.ranks)
      finish.push_back(r.finish_s);
    result.wait_states = world.waits->report(finish);
    if (marked)
      judge_recorded_loops(*result.wait_states, marked->loops());
    if (result.wait_states->critical_path)
      attribute_to_links(*result.wait_states->critical_path, hosts);
  }
  result.links = link_results(world, result.makespan_s);
  if (timeline) {
    if (result.wait_states)
      draw_analysis(*timeline, *result.wait_states, np);
    for (const RankStats& r : result.ranks)
      if (not timeline->detailed(r.rank))
        timeline->summary(r.rank, r.finish_s, r.compute_s, r.comm_s, r.wait_s, r.calls);
    timeline->close();
  }
  if (not result.blocked.empty())
    throw DeadlockError(result.blocked);
  return result;
}

}  // namespace

ReplayResult replay(const models::TraceSource& trace, const ReplayOptions& options,
                    const std::filesystem::path& timeline_path)
{
  check_network_cfg(options);
  // Settled before SimGrid starts: what does not fit stops here, with exit 1 (contexts.hpp).
  const ContextPlan plan = plan_contexts(trace.rank_count(), options, read_process_limits());
  if (not plan.note.empty() && options.note)
    options.note(plan.note);
  std::optional<ReplayResult> result;
  run_on_thread(plan.engine_stack_bytes, [&] { result = replay_here(trace, options, timeline_path, plan); });
  return std::move(*result);
}

}  // namespace gridcast::emulator
