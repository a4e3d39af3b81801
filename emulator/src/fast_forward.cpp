#include "fast_forward.hpp"

#include "rank_core.hpp"

#include "gridcast/foundation/errors.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <cmath>

namespace gridcast::emulator {

using models::CallRecord;
using models::Op;

std::string SteadyState::reason() const
{
  if (crossing)
    return "messages go from one iteration to another";
  if (pending_rank >= 0)
    return "requests are still pending at the head of the loop (rank " + std::to_string(pending_rank) +
           ", iteration " + std::to_string(pending_iteration) + "): its iterations are not self-contained";
  return why_not;
}

bool SteadyState::skip_here(std::uint64_t k, const MessageBoard& board)
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

std::optional<FastForwardReport> plan_fast_forward(const models::TraceSource& trace, const FastForwardOptions& ff,
                                                   int np, std::unique_ptr<SteadyState>& steady)
{
  if (ff.mode == FastForwardOptions::Mode::Unavailable)
    return std::nullopt;
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
    steady = std::make_unique<SteadyState>(rep.options, loop.iterations, np);
  }
  return rep;
}

void complete_fast_forward_report(FastForwardReport& report, const SteadyState& st, int np, bool deadlocked)
{
  if (st.skip_from && st.ranks_skipped == np) {
    report.applied               = true;
    report.skip_from             = *st.skip_from;
    report.skipped               = st.skipped;
    report.period_min_s          = st.period_min_s;
    report.period_max_s          = st.period_max_s;
    report.period_mean_s         = st.period_sum_s / static_cast<double>(np);
    report.skipped_s             = st.skipped_s;
    report.extrapolated_calls    = st.extrapolated_calls;
    report.extrapolated_messages = st.extrapolated_messages;
  } else if (st.skip_from && not deadlocked) {
    throw InternalError("fast-forward: " + std::to_string(st.ranks_skipped) + " of " + std::to_string(np) +
                        " ranks skipped");
  } else {
    report.why_not = st.reason();
  }
}

bool RankFastForward::at_head(std::uint64_t i, bool quiet, const ChoiceCounts& choices)
{
  World& world = core_.world;
  SteadyState& st = *world.steady;
  world.board.set_iteration(core_.rank, static_cast<std::int64_t>(i));
  if (st.skip_from && i > *st.skip_from)
    return false;  // after the skip: emulated as usual
  const std::size_t window = static_cast<std::size_t>(st.options.window);
  HeadSnapshot snap;
  snap.iteration = i;
  snap.time_s    = sg4::Engine::get_clock();
  // A request still pending here would be completed in a later iteration: the loop is not self-contained.
  snap.quiet            = quiet;
  if (not snap.quiet && i >= static_cast<std::uint64_t>(st.options.warmup)) {
    st.pending_rank      = core_.rank;
    st.pending_iteration = i;
  }
  snap.compute_s        = core_.stats.compute_s;
  snap.comm_s           = core_.stats.comm_s;
  snap.wait_s           = core_.stats.wait_s;
  snap.compute_call_s   = compute_call_s_;
  snap.compute_flops    = compute_flops_;
  snap.function_seconds = core_.functions.seconds;
  snap.sent             = world.board.sent_by(core_.rank);
  snap.choices          = choices;
  if (not heads_.empty() && heads_.back().iteration + 1 != i)
    heads_.clear();
  heads_.push_back(std::move(snap));
  while (heads_.size() > window + 2)
    heads_.pop_front();
  st.reached(i, stable_window());

  if (not st.skip_here(i, world.board))
    return false;
  skip(i);
  return true;
}

/// The last `window` periods (the newest head and the `window` before it) are past the warm-up, free of
/// pending requests at every head, and each within the tolerance of their mean.
bool RankFastForward::stable_window() const
{
  const SteadyState& st = *core_.world.steady;
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

double RankFastForward::flops_of(const CallRecord& c) const
{
  if (c.flops > 0)
    return c.flops;
  return c.seconds > 0 && recorded_speed_ > 0 ? c.seconds * recorded_speed_ : 0.0;
}

/// Skips iterations k .. k+skipped-1 of the steady loop. The skipped calls are pulled from the stream
/// and counted without being performed (so the calls after the span are exactly those of a full
/// emulation, random draws included, and their work is known). The rank then sleeps for the span: the
/// work of the skipped compute calls at the window's seconds per flop, plus the rest of the window's
/// mean period (communication, waiting) for each skipped iteration. With identical iterations that is
/// the window's mean period times the iterations skipped; with iterations whose work differs (a
/// latency-model ratio that changes along the loop, --variability on) the compute part is exact.
void RankFastForward::skip(std::uint64_t k)
{
  World& world = core_.world;
  const int rank = core_.rank;
  RankStats& stats = core_.stats;
  FunctionTotals& fns = core_.functions;
  SteadyState& st = *world.steady;
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
    throw InternalError("fast-forward: rank " + std::to_string(rank) + " has no window before iteration " +
                        std::to_string(k));

  // The skipped calls: counted, and the work of the compute ones summed per function.
  const std::uint64_t resume = k + st.skipped;
  CallRecord call;
  std::uint64_t drained = 0;
  std::vector<double> skipped_flops;  // by function id; < 0: no compute call of it skipped
  for (;;) {
    if (auto head = core_.stream->loop_head(); head && *head == resume)
      break;
    if (not core_.stream->next(call))
      throw InternalError("fast-forward: rank " + std::to_string(rank) + "'s stream ended inside the skipped span");
    fns.record_skipped(call.function);
    ++drained;
    if (call.op == Op::Compute) {
      if (call.function >= skipped_flops.size())
        skipped_flops.resize(call.function + 1, -1.0);
      skipped_flops[call.function] = std::max(0.0, skipped_flops[call.function]) + flops_of(call);
    }
  }
  stats.calls += drained;

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

  stats.compute_s += f * ((b->compute_s - a->compute_s) - window_call_s) + skipped_compute_s;
  stats.comm_s += f * (b->comm_s - a->comm_s);
  stats.wait_s += f * (b->wait_s - a->wait_s);
  if (fns.seconds.size() < b->function_seconds.size()) {
    fns.seconds.resize(b->function_seconds.size(), 0.0);
    fns.calls.resize(b->function_seconds.size(), 0);
  }
  fns.extra_seconds.resize(fns.seconds.size(), 0.0);
  for (std::size_t id = 0; id < fns.seconds.size(); ++id) {
    double add = 0;
    if (by_work && id < skipped_flops.size() && skipped_flops[id] >= 0) {
      add = skipped_flops[id] * s_per_flop;  // a compute function: its own skipped work
    } else if (id < b->function_seconds.size()) {
      double before = id < a->function_seconds.size() ? a->function_seconds[id] : 0.0;
      add = f * (b->function_seconds[id] - before);
    }
    fns.seconds[id] += add;
    fns.extra_seconds[id] += add;
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
  world.board.add_skipped(messages, routes);
  for (const auto& [key, count] : b->choices) {
    auto old = a->choices.find(key);
    std::uint64_t d = count - (old == a->choices.end() ? 0 : old->second);
    if (d > 0)
      world.collective_choices[key.first][key.second] += scaled(d);
  }
  if (world.timeline != nullptr)
    world.timeline->call(rank, "(fast-forward)", begin, sg4::Engine::get_clock() - begin);
  heads_.clear();

  st.period_min_s = st.ranks_skipped == 0 ? period : std::min(st.period_min_s, period);
  st.period_max_s = st.ranks_skipped == 0 ? period : std::max(st.period_max_s, period);
  st.period_sum_s += period;
  st.skipped_s += span;
  ++st.ranks_skipped;
  st.extrapolated_calls += drained;
  st.extrapolated_messages += messages;
}

}  // namespace gridcast::emulator
