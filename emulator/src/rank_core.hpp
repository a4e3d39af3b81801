// What every part of one rank's emulation shares: who the rank is, where it is in its trace, what it
// reports (statistics, per-function totals, what it blocks on), and how it fails naming the record.
// Internal to the emulator.
#pragma once

#include "world.hpp"

#include "gridcast/emulator/replay.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/stream.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gridcast::emulator {

/// Simulated seconds and calls per function id, and the share of them fast-forward extrapolated.
struct FunctionTotals {
  std::vector<double> seconds;
  std::vector<std::uint64_t> calls;
  std::vector<std::uint64_t> extra_calls;
  std::vector<double> extra_seconds;

  /// One call of function `id` that took `elapsed_s` (every performed record: kept inline).
  void record(std::uint32_t id, double elapsed_s)
  {
    if (id >= seconds.size()) {
      seconds.resize(id + 1, 0.0);
      calls.resize(id + 1, 0);
    }
    seconds[id] += elapsed_s;
    calls[id] += 1;
  }

  /// One call of function `id` pulled from the stream but not performed (fast-forward's skip, a unit a
  /// sampled run drains): counted, and counted as extrapolated.
  void record_skipped(std::uint32_t id)
  {
    if (id >= calls.size()) {
      seconds.resize(id + 1, 0.0);
      calls.resize(id + 1, 0);
    }
    if (id >= extra_calls.size())
      extra_calls.resize(id + 1, 0);
    ++calls[id];
    ++extra_calls[id];
  }

  /// Adds these totals to `out`, by name.
  void merge_into(std::map<std::string, FunctionStats>& out, const models::FunctionTable& names) const
  {
    for (std::size_t id = 0; id < calls.size(); ++id) {
      if (calls[id] == 0)
        continue;
      FunctionStats& f = out[names.name(static_cast<std::uint32_t>(id))];
      f.calls += calls[id];
      f.seconds += seconds[id];
      if (id < extra_calls.size())
        f.extrapolated_calls += extra_calls[id];
      if (id < extra_seconds.size())
        f.extrapolated_seconds += extra_seconds[id];
    }
  }
};

/// The call in progress, copied: after a deadlock SimGrid may have unwound the actor's stack.
struct CurrentCall {
  bool valid = false;
  std::uint32_t function = 0;
  std::uint64_t line = 0;
  int peer = -1;
  int tag = 0;
};

/// Whether a function name holds `a` or `b` (its C and Fortran spellings, "Iprobe" and "iprobe").
inline bool contains(std::string_view text, std::string_view a, std::string_view b)
{
  return text.find(a) != std::string_view::npos || text.find(b) != std::string_view::npos;
}

/// Identity, position and reports of one rank, shared by reference by the parts of its RankRunner.
struct RankCore {
  RankCore(World& w, int r, models::CallStreamPtr s) : world(w), rank(r), stream(std::move(s)) {}

  [[noreturn]] void fail(const std::string& reason) const
  {
    throw InputError({stream->source(), current.valid ? current.line : 0, {}, rank}, reason);
  }

  const std::string& function_name(std::uint32_t id) const { return stream->functions().name(id); }

  /// Runs `step` and counts its simulated time as communication (staging, pinning, polls).
  template <class F>
  void timed_comm(F&& step)
  {
    double begin = sg4::Engine::get_clock();
    step();
    stats.comm_s += sg4::Engine::get_clock() - begin;
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
      cost = unit * (world.options.smpi.grow_injected_times ? consecutive_failures : 1);
    }
    if (cost <= 0)
      return;
    timed_comm([cost] { sg4::this_actor::sleep_for(cost); });
  }

  World& world;
  int rank;
  models::CallStreamPtr stream;
  RankStats stats;
  FunctionTotals functions;
  CurrentCall current;
  std::string blocked_detail;  ///< what the rank blocks on, when not a request (probes, collectives)
  RequestPtr waiting_on;  ///< the request a completion waits for, if any (its description wins over blocked_detail)
  /// --analysis waits: the latest post time of a partner among the requests the current call completed
  /// (-1: none yet), and whether that partner was a send (the call is a receive waiting on it).
  double partner_post_s = -1;
  bool partner_is_send  = false;
  int partner_rank      = -1;  ///< that partner's world rank
  /// Notes a request the current call completed (--analysis waits): an eager send finishes without its
  /// receive, so only a receive or a send that waited for its transfer has a partner to wait for.
  void note_partner(const Request& r)
  {
    if (not r.matched || r.cancelled || r.partner_post_time <= partner_post_s)
      return;
    if (r.kind == Request::Kind::Recv || (r.kind == Request::Kind::Send && not r.detached)) {
      partner_post_s  = r.partner_post_time;
      partner_is_send = r.kind == Request::Kind::Recv;
      partner_rank    = r.kind == Request::Kind::Recv ? r.matched_source : r.peer;
    }
  }
};

}  // namespace gridcast::emulator
