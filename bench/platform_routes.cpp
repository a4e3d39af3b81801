// How fast SimGrid loads and routes a generated platform (docs/guides/platforms.md, "Performance"):
//   gridcast_bench_platform_routes platforms/lassen/platform.xml [--gpu]
// prints the load time, then the time to compute the route of every ordered pair of CPU hosts (what a
// run with one rank per node may ask for), or with --gpu of every pair of GPU hosts. Each source's
// shortest-path tree is computed once (DijkstraCache) and reused for its other destinations.
#include "gridcast/platform/placement.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

int main(int argc, char** argv)
{
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml [--gpu]\n", argv[0]);
    return 1;
  }
  const bool gpu = argc > 2 && std::strcmp(argv[2], "--gpu") == 0;
  int sg_argc    = 1;
  sg4::Engine engine(&sg_argc, argv);
  auto t0 = std::chrono::steady_clock::now();
  engine.load_platform(argv[1]);
  engine.seal_platform();
  auto t1 = std::chrono::steady_clock::now();
  std::vector<sg4::Host*> hosts = engine.get_filtered_hosts([gpu](sg4::Host* h) {
    const char* kind = h->get_property("gridcast:kind");
    return (kind != nullptr && std::string(kind) == "gpu") == gpu;
  });
  std::size_t routes = 0, links = 0;
  for (sg4::Host* a : hosts)
    for (sg4::Host* b : hosts) {
      std::vector<sg4::Link*> route;
      double latency = 0;
      a->route_to(b, route, &latency);
      links += route.size();
      ++routes;
    }
  auto t2       = std::chrono::steady_clock::now();
  double load_s = std::chrono::duration<double>(t1 - t0).count();
  double route_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("%s: %zu hosts, %zu links; load+seal %.3f s\n", argv[1], engine.get_host_count(),
              engine.get_link_count(), load_s);
  std::printf("%zu %s-host pairs routed in %.3f s (%.2f us a route, %.1f links a route on average)\n", routes,
              gpu ? "GPU" : "CPU", route_s, 1e6 * route_s / static_cast<double>(routes),
              static_cast<double>(links) / static_cast<double>(routes));
  return 0;
}
