// Calibration carried by a platform XML (docs/reference/calibration-json.md, "Calibration in a platform XML"): the root
// zone's gridcast:lat-factor / gridcast:bw-factor become SimGrid network-model factor callbacks, and
// gridcast:eager-threshold the eager/rendezvous switch unless --cfg sets one; gridcast:copy-overhead the
// per-message CPU work of shared-memory messages (p2p.hpp).
#pragma once

#include "gridcast/calibration/calibration.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::emulator {

struct PlatformCalibration {
  std::vector<platform::FactorSegment> lat_factor, bw_factor;  ///< empty: the property is absent
  std::optional<std::uint64_t> eager_threshold_bytes;
  std::string calibration;  ///< gridcast:calibration, informative
  /// gridcast:copy-overhead (version-2 calibrations): CPU work of both ranks of a shared-memory message,
  /// charged by the MessageBoard (p2p.hpp); empty: none.
  std::vector<platform::OverheadPoint> copy_overhead;
  /// gridcast:memcpy-time: seconds of a local memory copy on one core by size, at which collectives charge
  /// their local copies (collectives.hpp, local_copy_seconds); empty: absent.
  std::vector<platform::OverheadPoint> memcpy_time;
  bool any() const
  {
    return not lat_factor.empty() || not bw_factor.empty() || eager_threshold_bytes.has_value() ||
           not copy_overhead.empty() || not memcpy_time.empty();
  }
};

/// Reads the properties of the loaded platform's root zone. Bad values: InputError naming `platform_file`
/// and the property.
PlatformCalibration read_platform_calibration(const simgrid::s4u::Engine& engine,
                                              const std::filesystem::path& platform_file);

/// Installs the factors on the network model as callbacks: every communication of `size` bytes gets
/// latency * lf(size) and bandwidth * bf(size) (a segment applies from its min_bytes up). Does nothing
/// for an absent list. InputError when SimGrid refuses (factors also set with --cfg network/latency-factor
/// or network/bandwidth-factor).
void install_factor_callbacks(simgrid::s4u::Engine& engine, const PlatformCalibration& calibration,
                              const std::filesystem::path& platform_file);

}  // namespace gridcast::emulator
