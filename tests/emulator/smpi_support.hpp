// Helpers of the tests that pin gridcast against smpirun 3.32: the platform those figures were measured
// on, and a replay under gridcast's defaults (network/model:SMPI, SMPI's factors).
#pragma once

#include "../support.hpp"

#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/replay.hpp"
#include "gridcast/models/profile.hpp"

#include <string>
#include <vector>

namespace gridcast::test {

/// examples/overlap-solver/platform.xml at `n` hosts: 1.25 GBps / 5 us private links, a 100 GBps / 1 us
/// backbone (route latency 11 us).
inline std::string backbone_cluster(int n)
{
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n  <cluster id=\"cluster\" prefix=\"node-\" suffix=\"\" radical=\"0-" +
         std::to_string(n - 1) + "\" speed=\"1Gf\" bw=\"1.25GBps\" lat=\"5us\" bb_bw=\"100GBps\" bb_lat=\"1us\"/>\n"
         "</platform>\n";
}

/// Replays the JSON-lines `ranks` on backbone_cluster (one rank per host) with replay's own defaults, then
/// the `cfg` settings.
inline emulator::ReplayResult replay_smpi_model(const TempDir& dir, const std::vector<std::string>& ranks,
                                                const std::vector<std::string>& cfg = {})
{
  write_jsonl_profile(dir / "trace", ranks);
  write_file(dir / "platform.xml", backbone_cluster(static_cast<int>(ranks.size())));
  emulator::ReplayOptions opts;
  opts.platform = dir / "platform.xml";
  for (const auto& c : cfg)
    emulator::apply_cfg(opts, c);
  models::ProfileDir trace(dir / "trace");
  opts.recorded_host_speed_flops = trace.info().host.speed_flops;
  return emulator::replay(trace, opts);
}

}  // namespace gridcast::test
