#include "platform_support.hpp"

#include "gridcast/platform/placement.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace gridcast;
using namespace gridcast::test;

namespace {

std::size_t count_links(const platform::PlatformModel& m, const std::string& part)
{
  return static_cast<std::size_t>(std::count_if(m.links.begin(), m.links.end(), [&](const platform::LinkDef& l) {
    return l.name.find(part) != std::string::npos;
  }));
}

}  // namespace

TEST_CASE("generator: PCIe tree with switches, routes through the shared root link", "[platform][generator]")
{
  json k                            = pcie_kind(4, false);
  k["pcie"]["switches_per_socket"] = 1;
  k["pcie"]["switch_link"]          = link_json("15GBps", "0.15us");
  platform::PlatformModel m         = build(spec_json(k, 1));
  CHECK(m.hosts.size() == 5);
  CHECK(m.cpu_hosts == 1);
  CHECK(m.gpu_hosts == 4);
  CHECK(m.routers.size() == 6);  // per socket: rc-in, rc-out, one switch
  // loopback, 4 copies, 2 roots, 2 memory links, 2 switch links, 1 inter-socket link, 4 x (up + down)
  CHECK(m.links.size() == 20);
  Loaded p(m);
  double lat = 0;
  auto down  = p.route("node-0", "node-0.gpu-0", &lat);
  CHECK(down == std::vector<std::string>{"node-0.s0.mem_UP", "node-0.s0.root", "node-0.s0.sw-0.link_DOWN",
                                         "node-0.gpu-0.pcie-down"});
  CHECK(lat == Approx(0.1e-6 + 0.1e-6 + 0.15e-6 + 1e-6));
  auto up = p.route("node-0.gpu-3", "node-0");
  CHECK(up == std::vector<std::string>{"node-0.gpu-3.pcie-up", "node-0.s1.sw-0.link_UP", "node-0.s1.root",
                                       "node-0.s1.mem_DOWN"});
  // Peers under one switch do not reach the root complex; across sockets both roots and the
  // inter-socket link are crossed.
  CHECK(p.route("node-0.gpu-0", "node-0.gpu-1") ==
        std::vector<std::string>{"node-0.gpu-0.pcie-up", "node-0.gpu-1.pcie-down"});
  auto across = p.route("node-0.gpu-1", "node-0.gpu-2");
  CHECK(contains(across, "node-0.s0.root"));
  CHECK(contains(across, "node-0.smp-0_UP"));
  CHECK(contains(across, "node-0.s1.root"));
  CHECK(p.route("node-0", "node-0") == std::vector<std::string>{"node-0.loopback"});
  CHECK(p.route("node-0.gpu-2", "node-0.gpu-2") == std::vector<std::string>{"node-0.gpu-2.copy"});
  // Placement runs ranks on the CPU host only.
  auto hosts = platform::compute_hosts(p.engine());
  REQUIRE(hosts.size() == 1);
  CHECK(hosts[0]->get_name() == "node-0");
  CHECK(std::string(p.engine().host_by_name("node-0.gpu-3")->get_property("gridcast:gpu")) == "3");
}

// No SECTIONs where an engine is created: a SimGrid engine is one per process, and Catch runs a test case
// once per section.
TEST_CASE("generator: NVLink pairs carry GPU-to-GPU traffic, GPUs on NVLink to the host", "[platform][generator]")
{
  {
    json k      = pcie_kind(4, false);
    k.erase("pcie");
    k["nvlink"] = {{"topology", "pairwise"},
                   {"link", link_json("75GBps", "1us")},
                   {"pairs", {{0, 1}, {2, 3}}},
                   {"host", link_json("75GBps", "1us")}};
    platform::PlatformModel m = build(spec_json(k, 1));
    CHECK(m.routers.empty());
    CHECK(count_links(m, "nvlink-") == 2 + 4);  // 2 pairs, 4 host links
    Loaded p(m);
    CHECK(p.route("node-0.gpu-0", "node-0.gpu-1") == std::vector<std::string>{"node-0.nvlink-0-1_UP"});
    CHECK(p.route("node-0.gpu-1", "node-0.gpu-0") == std::vector<std::string>{"node-0.nvlink-0-1_DOWN"});
    CHECK(p.route("node-0.gpu-2", "node-0") == std::vector<std::string>{"node-0.gpu-2.nvlink-host_UP"});
    // Not linked, on different sockets: through both sockets' NVLink to the CPU and the inter-socket link.
    CHECK(p.route("node-0.gpu-1", "node-0.gpu-3") ==
          std::vector<std::string>{"node-0.gpu-1.nvlink-host_UP", "node-0.smp-0_UP", "node-0.gpu-3.nvlink-host_DOWN"});
    CHECK(p.route("node-0.gpu-2", "node-0.gpu-0") ==
          std::vector<std::string>{"node-0.gpu-2.nvlink-host_UP", "node-0.smp-0_DOWN", "node-0.gpu-0.nvlink-host_DOWN"});
  }
}

TEST_CASE("generator: an NVSwitch carries GPU-to-GPU traffic next to a PCIe tree", "[platform][generator]")
{
  {
    json k      = pcie_kind(8, false);
    k["nvlink"] = {{"topology", "nvswitch"}, {"link", link_json("450GBps", "1us")}};
    Loaded p(build(spec_json(k, 1)));
    for (int b = 1; b < 8; ++b)
      CHECK(p.route("node-0.gpu-0", "node-0.gpu-" + std::to_string(b)) ==
            std::vector<std::string>{"node-0.gpu-0.nvlink_UP", "node-0.gpu-" + std::to_string(b) + ".nvlink_DOWN"});
    CHECK(contains(p.route("node-0", "node-0.gpu-5"), "node-0.s1.root"));
  }
}

TEST_CASE("generator: star network", "[platform][generator]")
{
  platform::PlatformModel m = build(spec_json(pcie_kind(1), 4, {{"topology", "star"}}));
  CHECK(m.nodes == 4);
  CHECK(m.hosts.size() == 8);
  CHECK(m.switches == 1);
  CHECK(count_links(m, ".port") == 4);
  CHECK(m.bisection_Bps == Approx(2 * 12.5e9));
  Loaded p(m);
  auto r = p.route("node-0", "node-3");
  CHECK(contains(r, "node-0.nic-0.port_UP"));
  CHECK(contains(r, "node-3.nic-0.port_DOWN"));
  CHECK(contains(r, "node-0.nic-0.pcie-down"));
  CHECK(contains(r, "node-3.nic-0.pcie-up"));
  CHECK(platform::compute_hosts(p.engine()).size() == 4);
}

TEST_CASE("generator: tapered fat tree", "[platform][generator]")
{
  // 8 endpoints: 4 leaves of 2, each leaf with 1 up port to the top level: 2:1 tapering.
  json ft = {{"topology", "fat_tree"},
             {"link", link_json("100Gbps", "0.2us")},
             {"fat_tree", {{"down", {2, 4}}, {"up", {1, 1}}}}};
  platform::PlatformModel m = build(spec_json(pcie_kind(0), 8, ft));
  CHECK(m.switches == 5);
  CHECK(count_links(m, "ft.") == 4);  // one aggregated up link per leaf
  CHECK(m.bisection_Bps == Approx(2 * 12.5e9));  // two leaves' up links, not four NICs
  Loaded p(m);
  double same_leaf_lat = 0, cross_lat = 0;
  auto same  = p.route("node-0", "node-1", &same_leaf_lat);
  auto cross = p.route("node-0", "node-7", &cross_lat);
  CHECK(std::none_of(same.begin(), same.end(), [](const std::string& l) { return l.rfind("ft.", 0) == 0; }));
  CHECK(contains(cross, "ft.l0-0.up_UP"));
  CHECK(contains(cross, "ft.l0-3.up_DOWN"));
  CHECK(cross_lat == Approx(same_leaf_lat + 2 * 0.2e-6));
}

TEST_CASE("generator: non-blocking fat tree, up ports x planes carry a leaf's whole down capacity",
          "[platform][generator]")
{
  json ft = {{"topology", "fat_tree"},
             {"link", link_json("100Gbps", "0.2us")},
             {"fat_tree", {{"down", {2, 4}}, {"up", {1, 1}}}}};
  {
    json nb                     = ft;
    nb["fat_tree"]["up"]        = {1, 2};
    platform::PlatformModel m2  = build(spec_json(pcie_kind(0), 8, nb));
    CHECK(m2.switches == 4 + 2);
    for (const auto& l : m2.links)
      if (l.name.rfind("ft.", 0) == 0)
        CHECK(l.bandwidth_Bps == Approx(25e9));
    CHECK(m2.bisection_Bps == Approx(4 * 12.5e9));
  }
}

TEST_CASE("generator: torus", "[platform][generator]")
{
  {
    json t = {{"topology", "torus"}, {"link", link_json("100Gbps", "0.1us")}, {"torus", {{"dims", {2, 3}}}}};
    platform::PlatformModel m = build(spec_json(pcie_kind(0), 6, t));
    CHECK(m.switches == 6);
    CHECK(count_links(m, "torus.") == 3 + 6);  // a ring of 2 is one link; two rings of 3
    // The cut across the ring of 3 has 2 x 2 links (50 GB/s), but half the NICs inject only 3 x 12.5 GB/s.
    CHECK(m.bisection_Bps == Approx(3 * 12.5e9));
    Loaded p(m);
    // Endpoint 0 is (0,0), endpoint 5 is (1,2): one hop in each dimension (the ring of 3 wraps).
    auto r = p.route("node-0", "node-5");
    CHECK(std::count_if(r.begin(), r.end(), [](const std::string& l) { return l.rfind("torus.", 0) == 0; }) == 2);
  }
}

TEST_CASE("generator: dragonfly of 3 groups of 2 routers", "[platform][generator]")
{
  {
    json d = {{"topology", "dragonfly"},
              {"link", link_json("100Gbps", "0.1us")},
              {"dragonfly", {{"groups", 3}, {"routers_per_group", 2}, {"endpoints_per_router", 1}}}};
    platform::PlatformModel m = build(spec_json(pcie_kind(0), 6, d));
    CHECK(m.switches == 6);
    CHECK(count_links(m, "df.") == 3 + 3);
    CHECK(m.bisection_Bps == Approx(2 * 12.5e9));
    Loaded p(m);
    // Endpoint 0 is router 0 of group 0, endpoint 3 router 1 of group 1: the global link g0-g1 ends at
    // router 0 of group 1, then one local hop.
    auto r = p.route("node-0", "node-3");
    CHECK(contains(r, "df.g0-g1.0_UP"));
    CHECK(contains(r, "df.g1.r0-r1_UP"));
    CHECK(platform::check_routes(p.engine()).all_pairs);
  }
}

TEST_CASE("generator: NICs per GPU make rails of a fat tree", "[platform][generator]")
{
  json k                            = pcie_kind(2);
  k["nics"]                         = {{"count", 2}, {"attach", "gpu"}, {"link", link_json("400Gbps", "0.6us")}};
  json ft = {{"topology", "fat_tree"},
             {"link", link_json("400Gbps", "0.2us")},
             {"fat_tree", {{"down", {4, 2}}, {"up", {1, 4}}}}};
  platform::PlatformModel m = build(spec_json(k, 4, ft));
  Loaded p(m);
  // GPU 1 of node 0 to GPU 1 of node 3: NIC 1 of both, one rail leaf, no spine.
  auto r = p.route("node-0.gpu-1", "node-3.gpu-1");
  // (GPU 1 and NIC 1 share socket 1's root complex: no PCIe switches here.)
  CHECK(r == std::vector<std::string>{"node-0.gpu-1.pcie-up", "node-0.s1.root", "node-0.nic-1.pcie-down",
                                      "node-0.nic-1.port_UP", "node-3.nic-1.port_DOWN", "node-3.nic-1.pcie-up",
                                      "node-3.s1.root", "node-3.gpu-1.pcie-down"});
  platform::CheckSummary s = platform::check_routes(p.engine(), 8, 256);
  CHECK_FALSE(s.all_pairs);
  CHECK(s.routes_checked >= 256);
}

TEST_CASE("generator: the XML bytes are deterministic", "[platform][generator]")
{
  json ft = {{"topology", "fat_tree"},
             {"link", link_json("100Gbps", "0.2us")},
             {"fat_tree", {{"down", {2, 2}}, {"up", {1, 2}}}}};
  json s           = spec_json(pcie_kind(2), 4, ft);
  std::string a    = platform::render_xml(build(s));
  std::string b    = platform::render_xml(build(s));
  CHECK(a == b);
  CHECK(a.rfind("<?xml version='1.0'?>\n<!DOCTYPE platform", 0) == 0);
  CHECK_THAT(a, Catch::Contains("routing=\"DijkstraCache\"") && Catch::Contains("sharing_policy=\"SPLITDUPLEX\"") &&
                    Catch::Contains("<prop id=\"gridcast:kind\" value=\"gpu\"/>"));
}

TEST_CASE("generator: node kinds mix on one network, nodes numbered in spec order", "[platform][generator]")
{
  json spec = {{"name", "mixed"},
               {"node_kinds", {{"cpu-only", pcie_kind(0)}, {"gpu", pcie_kind(2)}}},
               {"nodes", json::array({{{"kind", "gpu"}, {"count", 2}}, {{"kind", "cpu-only"}, {"count", 3}}})},
               {"network", {{"topology", "star"}}}};
  platform::PlatformModel m = build(spec);
  CHECK(m.nodes == 5);
  CHECK(m.cpu_hosts == 5);
  CHECK(m.gpu_hosts == 4);
  Loaded p(m);
  CHECK(std::string(p.engine().host_by_name("node-1")->get_property("gridcast:node-kind")) == "gpu");
  CHECK(std::string(p.engine().host_by_name("node-2")->get_property("gridcast:node-kind")) == "cpu-only");
  CHECK(p.engine().host_by_name_or_null("node-2.gpu-0") == nullptr);
  platform::CheckSummary s = platform::check_routes(p.engine());
  CHECK(s.all_pairs);
  CHECK(s.routes_checked == 9 * 9);
  CHECK(contains(p.route("node-1.gpu-1", "node-4"), "node-4.nic-0.port_DOWN"));
}
