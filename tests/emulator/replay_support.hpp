// Helpers of the replay tests: a tiny JSON-lines profile replayed under CM02 on test::cluster_xml, where one
// lone flow between two nodes takes exactly 2 * 10 us + bytes / 1 GBps (the figures hand-computed times use).
#pragma once

#include "../support.hpp"

#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/profile.hpp"

#include <string>
#include <vector>

namespace gridcast::test {

constexpr double kLat = 10e-6;  // cluster_xml's default per-link latency
constexpr double kBw  = 1e9;    // 1GBps
inline double transfer(double bytes)
{
  return 2 * kLat + bytes / kBw;
}

/// Writes `ranks` (one JSON-lines text per rank, recorded on a host of `speed_flops`) as a profile in `dir`,
/// and replays it on a cluster of `hosts` nodes with the `cfg` settings applied after CM02's (and the wait
/// states classified where `wait_states`, the critical path walked where `critical_path`).
inline emulator::ReplayResult replay_jsonl(const TempDir& dir, const std::vector<std::string>& ranks, int hosts,
                                           double speed_flops = 1e9, const std::vector<std::string>& cfg = {},
                                           bool wait_states = false, bool critical_path = false)
{
  write_jsonl_profile(dir / "trace", ranks, speed_flops);
  write_file(dir / "platform.xml", cluster_xml(hosts));
  emulator::ReplayOptions opts;
  opts.platform = dir / "platform.xml";
  emulator::apply_cfg(opts, "network/model:CM02");
  emulator::apply_cfg(opts, "network/crosstraffic:0");
  for (const auto& c : cfg)
    emulator::apply_cfg(opts, c);
  opts.wait_states   = wait_states;
  opts.critical_path = critical_path;
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  return emulator::replay(trace, opts);
}

}  // namespace gridcast::test
