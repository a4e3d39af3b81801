// `gridcast platform`: from a spec (+ calibration) to a SimGrid 3.32 platform. The platform is one zone
// routed by Dijkstra with a route cache: every host, router and link is explicit, so nodes keep their
// inside (CPU host, GPU hosts, PCIe tree, NVLink, NICs) and any network graph fits. Host naming,
// properties and the topologies: docs/guides/platforms.md.
#pragma once

#include "gridcast/calibration/calibration.hpp"
#include "gridcast/platform/spec.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gridcast::platform {

struct Property {
  std::string name, value;
};

struct HostDef {
  std::string name;
  double speed_flops = 0;
  int cores          = 1;
  std::vector<Property> properties;
};

/// SHARED: one capacity for both directions (a bus). SPLITDUPLEX: one capacity per direction (full
/// duplex hardware: PCIe lanes, NVLink, InfiniBand); a route names the direction it uses. FATPIPE: every
/// flow gets the full bandwidth (SimGrid's own loopback model, used for shared-memory loopbacks).
enum class Sharing { Shared, SplitDuplex, Fatpipe };
enum class Direction { None, Up, Down };

struct LinkDef {
  std::string name;
  double bandwidth_Bps = 0;
  double latency_s     = 0;
  Sharing sharing      = Sharing::SplitDuplex;
};

struct LinkUse {
  std::size_t link = 0;  ///< index in PlatformModel::links
  Direction direction = Direction::None;
};

/// An edge of the routing graph (src and dst are adjacent), or with `bypass` a whole host-to-host route
/// that overrides Dijkstra's choice.
struct RouteDef {
  std::string src, dst;
  std::vector<LinkUse> links;
  bool symmetrical = true;
};

/// 4 million: about 600,000 plain nodes, 1 GB of XML; what a spec asks beyond this is taken for a mistake
/// (a count of 1e9) unless the user raises the limit.
inline constexpr std::size_t kDefaultMaxPlatformElements = 4'000'000;

struct PlatformModel {
  std::string zone_id = "gridcast";
  std::vector<std::string> comments;  ///< written at the top of the XML
  std::vector<Property> zone_properties;
  std::vector<HostDef> hosts;
  std::vector<std::string> routers;
  std::vector<LinkDef> links;
  std::vector<RouteDef> routes;
  std::vector<RouteDef> bypass_routes;
  // Summary figures
  int nodes = 0, cpu_hosts = 0, gpu_hosts = 0, switches = 0;
  double bisection_Bps = 0;  ///< see docs/guides/platforms.md for how each topology computes it
  std::string topology = "none";
};

/// Builds the platform. `calibration` may be null; when given, its factors go into the root zone's
/// properties (gridcast:lat-factor, gridcast:bw-factor, gridcast:eager-threshold, gridcast:calibration).
/// `spec_name` is the spec's file name as written in the XML's header comment. A platform of more than
/// `max_elements` hosts, links, routers and routes is an InputError (`gridcast platform --max-elements`).
PlatformModel build_platform(const PlatformSpec& spec, const Calibration* calibration, const std::string& spec_name,
                             std::size_t max_elements = kDefaultMaxPlatformElements);

/// The SimGrid XML text (TinyXML2): deterministic bytes for a given model.
std::string render_xml(const PlatformModel& model);

struct CheckSummary {
  std::size_t hosts = 0, links = 0, routes_checked = 0;
  bool all_pairs    = false;  ///< every ordered pair of hosts, or a deterministic sample
};

/// Checks the routes of the platform loaded (and sealed) in `engine`: every checked pair has a route
/// with at least one link and a finite latency. All ordered pairs up to `all_pairs_max_hosts` hosts;
/// beyond, every pair within the first and the last node plus `sample_pairs` pairs drawn with a fixed
/// seed (64 sources, each to sample_pairs/64 destinations). A missing route is an InternalError.
CheckSummary check_routes(const simgrid::s4u::Engine& engine, std::size_t all_pairs_max_hosts = 64,
                          std::size_t sample_pairs = 4096);

}  // namespace gridcast::platform
