#include "gridcast/emulator/calibration_factors.hpp"

#include "gridcast/foundation/errors.hpp"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <charconv>

namespace gridcast::emulator {

namespace sg4 = simgrid::s4u;

PlatformCalibration read_platform_calibration(const sg4::Engine& engine, const std::filesystem::path& platform_file)
{
  PlatformCalibration c;
  const sg4::NetZone* root = engine.get_netzone_root();
  const std::string file   = platform_file.string();
  if (const char* v = root->get_property("gridcast:lat-factor"))
    c.lat_factor = platform::parse_factor_segments(v, file, "gridcast:lat-factor");
  if (const char* v = root->get_property("gridcast:bw-factor"))
    c.bw_factor = platform::parse_factor_segments(v, file, "gridcast:bw-factor");
  if (const char* v = root->get_property("gridcast:eager-threshold")) {
    std::string text = v;
    std::uint64_t bytes = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), bytes);
    if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
      throw InputError({file, 0, "gridcast:eager-threshold", -1},
                       "expected a byte count (an integer >= 0), got \"" + text + "\"");
    c.eager_threshold_bytes = bytes;
  }
  if (const char* v = root->get_property("gridcast:copy-overhead"))
    c.copy_overhead = platform::parse_overhead_points(v, file, "gridcast:copy-overhead");
  if (const char* v = root->get_property("gridcast:memcpy-time")) {
    c.memcpy_time = platform::parse_overhead_points(v, file, "gridcast:memcpy-time");
    if (c.memcpy_time.empty() || c.memcpy_time.front().bytes == 0)
      throw InputError({file, 0, "gridcast:memcpy-time", -1},
                       "expected at least one point \"bytes:seconds\" with bytes > 0, got \"" + std::string(v) + "\"");
  }
  if (const char* v = root->get_property("gridcast:calibration"))
    c.calibration = v;
  return c;
}

void install_factor_callbacks(sg4::Engine& engine, const PlatformCalibration& c, const std::filesystem::path& platform_file)
{
  auto* model = engine.get_netzone_root()->get_network_model();
  auto install = [&](const std::vector<platform::FactorSegment>& segments, bool latency) {
    if (segments.empty())
      return;
    // The callback owns its copy: SimGrid calls it for every communication until the engine ends.
    auto cb = [segments](double size, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                         const std::unordered_set<sg4::NetZone*>&) { return platform::factor_for(segments, size); };
    try {
      if (latency)
        model->set_lat_factor_cb(cb);
      else
        model->set_bw_factor_cb(cb);
    } catch (const std::exception& e) {
      std::string what = e.what();
      throw InputError({platform_file.string(), 0, latency ? "gridcast:lat-factor" : "gridcast:bw-factor", -1},
                       "the platform's calibration factors conflict with factors set by --cfg (" +
                           what.substr(0, what.find('\n')) + "): give one or the other");
    }
  };
  install(c.lat_factor, true);
  install(c.bw_factor, false);
}

}  // namespace gridcast::emulator
