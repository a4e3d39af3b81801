#include "sampling.hpp"

#include "rank_core.hpp"
#include "world.hpp"

#include "gridcast/foundation/errors.hpp"

#include <simgrid/s4u/Engine.hpp>

namespace gridcast::emulator {

using models::sampling::Plan;

SamplingReport estimate_run(const SampledRun& run, double emulated_makespan_s)
{
  const Plan& plan = *run.plan;
  const std::uint64_t units = plan.role.size();
  for (std::uint64_t h = 0; h <= units; ++h)
    if (run.arrival[h] < 0)
      throw InternalError("sampling: no rank reached the head of iteration " + std::to_string(h));
  // A unit's time: from the latest rank's arrival at its head to the latest rank's arrival at the next.
  // Over consecutive units these telescope, and a unit not emulated takes none, so the emulated units'
  // times add up to the loop's emulated span exactly.
  std::vector<double> unit_s(units);
  for (std::uint64_t u = 0; u < units; ++u)
    unit_s[u] = run.arrival[u + 1] - run.arrival[u];
  const models::sampling::Estimate e = models::sampling::estimate_total(plan, unit_s);
  SamplingReport r;
  r.applied             = true;
  r.loop_iterations     = plan.loop_iterations;
  r.units               = units;
  r.confidence          = plan.confidence;
  r.margin              = plan.margin;
  r.automatic           = plan.automatic;
  r.note                = plan.note;
  r.emulated_makespan_s = emulated_makespan_s;
  r.emulated_loop_s     = run.arrival[units] - run.arrival[0];
  r.loop_estimate_s     = e.total;
  r.standard_error_s    = e.standard_error;
  r.half_width_s        = e.half_width;
  r.degrees_of_freedom  = e.degrees_of_freedom;
  const auto stratum_is = [&](std::uint64_t u, int kind) {
    const std::size_t h = static_cast<std::size_t>(plan.phase[u]);
    return h < plan.formed.size() && plan.formed[h] == kind;
  };
  for (std::uint64_t u = 0; u < units; ++u) {
    if (u < plan.transient)
      ++r.transient;
    else if (stratum_is(u, Plan::kRareStratum))
      ++r.rare;
    else if (plan.role[u] == Plan::Sampled)
      ++r.sampled;
    else if (plan.role[u] == Plan::WarmUp)
      ++r.warm_up;
  }
  for (std::size_t h = 0; h < e.phases.size(); ++h) {
    const models::sampling::PhaseEstimate& p = e.phases[h];
    SamplingReport::Phase ph;
    ph.transient = h < plan.formed.size() && plan.formed[h] == Plan::kTransientStratum;
    ph.rare = h < plan.formed.size() && plan.formed[h] == Plan::kRareStratum;
    ph.units   = p.units;
    ph.sampled = p.sampled;
    ph.mean_s  = p.mean;
    ph.std_s   = p.std;
    ph.share   = e.total > 0 ? static_cast<double>(p.units) * p.mean / e.total : 0.0;
    r.phases.push_back(std::move(ph));
  }
  return r;
}

void RankSampling::add_delta(std::array<double, 3>& stats, std::vector<double>& functions) const
{
  const RankStats& s = core_.stats;
  stats[0] += s.compute_s - at_open_.stats[0];
  stats[1] += s.comm_s - at_open_.stats[1];
  stats[2] += s.wait_s - at_open_.stats[2];
  const std::vector<double>& now = core_.functions.seconds;
  if (functions.size() < now.size())
    functions.resize(now.size(), 0.0);
  for (std::size_t id = 0; id < now.size(); ++id)
    functions[id] += now[id] - (id < at_open_.functions.size() ? at_open_.functions[id] : 0.0);
}

void RankSampling::open(std::uint64_t unit)
{
  open_unit_ = unit;
  at_open_.stats = {core_.stats.compute_s, core_.stats.comm_s, core_.stats.wait_s};
  at_open_.functions = core_.functions.seconds;
}

void RankSampling::close()
{
  const Plan& plan = *core_.world.sampled->plan;
  const std::uint64_t u = *open_unit_;
  open_unit_.reset();
  add_delta(emulated_stats_, emulated_functions_);
  if (plan.role[u] != Plan::Sampled)
    return;
  const std::size_t h = static_cast<std::size_t>(plan.phase[u]);
  if (sampled_stats_.size() < static_cast<std::size_t>(plan.phases)) {
    sampled_stats_.resize(static_cast<std::size_t>(plan.phases));
    sampled_functions_.resize(static_cast<std::size_t>(plan.phases));
  }
  add_delta(sampled_stats_[h], sampled_functions_[h]);
}

bool RankSampling::at_head(std::uint64_t i, bool quiet)
{
  if (handled_head_ == i)
    return false;  // drained up to this head already
  SampledRun& run = *core_.world.sampled;
  const Plan& plan = *run.plan;
  const std::uint64_t units = plan.role.size();
  run.arrive(i, sg4::Engine::get_clock());
  if (open_unit_)
    close();
  if (i >= units || plan.emulates(i)) {
    if (i < units)
      open(i);
    return false;
  }
  if (not quiet)
    throw InternalError("sampling: rank " + std::to_string(core_.rank) + " has requests pending at the head of iteration " +
                        std::to_string(i) + ", which the plan skips");
  // Drain the units not emulated: their calls are counted, nothing else; the clock does not move.
  models::CallRecord call;
  for (;;) {
    if (not core_.stream->next(call))
      throw InternalError("sampling: rank " + std::to_string(core_.rank) + "'s stream ended inside the loop");
    core_.functions.record_skipped(call.function);
    ++core_.stats.calls;
    if (auto head = core_.stream->loop_head()) {
      run.arrive(*head, sg4::Engine::get_clock());
      if (*head >= units || plan.emulates(*head)) {
        handled_head_ = *head;
        if (*head < units)
          open(*head);
        // The timeline says where units were left out: the emulated units on either side of it touch.
        if (core_.world.timeline != nullptr)
          core_.world.timeline->slice(core_.rank,
                                      "units " + std::to_string(i) + (*head - 1 > i ? "-" + std::to_string(*head - 1) : "") +
                                          " drained (sampled run: not emulated, estimated)",
                                      "sampling", sg4::Engine::get_clock(), 0);
        return true;
      }
    }
  }
}

void RankSampling::apply_estimate(double shift_s)
{
  const Plan& plan = *core_.world.sampled->plan;
  const std::size_t k = static_cast<std::size_t>(plan.phases);
  sampled_stats_.resize(k);
  sampled_functions_.resize(k);
  // The loop's sum of x over every unit: sum over phases of N_h times the mean of the phase's samples.
  std::array<double, 3> loop{};
  std::vector<double> loop_functions;
  for (std::size_t h = 0; h < k; ++h) {
    const double w = static_cast<double>(plan.phase_units[h]) / static_cast<double>(plan.phase_sampled[h]);
    for (int s = 0; s < 3; ++s)
      loop[s] += w * sampled_stats_[h][s];
    if (loop_functions.size() < sampled_functions_[h].size())
      loop_functions.resize(sampled_functions_[h].size(), 0.0);
    for (std::size_t id = 0; id < sampled_functions_[h].size(); ++id)
      loop_functions[id] += w * sampled_functions_[h][id];
  }
  RankStats& st = core_.stats;
  st.compute_s += loop[0] - emulated_stats_[0];
  st.comm_s += loop[1] - emulated_stats_[1];
  st.wait_s += loop[2] - emulated_stats_[2];
  st.finish_s += shift_s;
  FunctionTotals& fns = core_.functions;
  const std::size_t ids = std::max(loop_functions.size(), emulated_functions_.size());
  if (fns.seconds.size() < ids) {
    fns.seconds.resize(ids, 0.0);
    fns.calls.resize(ids, 0);
  }
  fns.extra_seconds.resize(fns.seconds.size(), 0.0);
  for (std::size_t id = 0; id < ids; ++id) {
    const double add = (id < loop_functions.size() ? loop_functions[id] : 0.0) -
                       (id < emulated_functions_.size() ? emulated_functions_[id] : 0.0);
    fns.seconds[id] += add;
    fns.extra_seconds[id] += add;
  }
}

}  // namespace gridcast::emulator
