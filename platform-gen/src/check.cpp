// The generator's own check of a loaded platform: routes exist, have links and a finite latency.
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"
#include "gridcast/platform/generator.hpp"
#include "gridcast/platform/placement.hpp"

#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <algorithm>
#include <cmath>

namespace gridcast::platform {

namespace {

void check_pair(sg4::Host* a, sg4::Host* b)
{
  std::vector<sg4::Link*> links;
  double latency = 0;
  try {
    a->route_to(b, links, &latency);
  } catch (const std::exception& e) {
    throw InternalError("generated platform has no route from " + a->get_name() + " to " + b->get_name() + ": " +
                        e.what());
  }
  if (links.empty() || not std::isfinite(latency) || latency < 0)
    throw InternalError("generated platform has an empty or broken route from " + a->get_name() + " to " +
                        b->get_name());
}

}  // namespace

CheckSummary check_routes(const sg4::Engine& engine, std::size_t all_pairs_max_hosts, std::size_t sample_pairs)
{
  std::vector<sg4::Host*> hosts = engine.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(),
            [](const sg4::Host* a, const sg4::Host* b) { return natural_less(a->get_name(), b->get_name()); });
  CheckSummary s;
  s.hosts = hosts.size();
  s.links = engine.get_link_count();
  if (hosts.size() <= all_pairs_max_hosts) {
    s.all_pairs = true;
    for (sg4::Host* a : hosts)
      for (sg4::Host* b : hosts) {
        check_pair(a, b);
        ++s.routes_checked;
      }
    return s;
  }
  // Every pair inside the first and the last node (their insides differ most often from the rest in
  // heterogeneous specs), then pairs drawn with a fixed seed.
  auto node_of = [](const sg4::Host* h) {
    const char* n = h->get_property("gridcast:node");
    return n == nullptr ? std::string() : std::string(n);
  };
  for (const std::string& node : {node_of(hosts.front()), node_of(hosts.back())}) {
    std::vector<sg4::Host*> inside;
    for (sg4::Host* h : hosts)
      if (node_of(h) == node)
        inside.push_back(h);
    for (sg4::Host* a : inside)
      for (sg4::Host* b : inside) {
        check_pair(a, b);
        ++s.routes_checked;
      }
  }
  // A few sources to many destinations: Dijkstra runs once per source (the route cache keeps its tree).
  SplitMix64 rng{0x6772696463617374ULL};  // "gridcast": the same sampled pairs on every run
  const std::size_t sources  = 64;
  const std::size_t per_source = (sample_pairs + sources - 1) / sources;
  for (std::size_t i = 0; i < sources; ++i) {
    sg4::Host* a = hosts[rng.next() % hosts.size()];
    for (std::size_t j = 0; j < per_source; ++j) {
      check_pair(a, hosts[rng.next() % hosts.size()]);
      ++s.routes_checked;
    }
  }
  return s;
}

}  // namespace gridcast::platform
