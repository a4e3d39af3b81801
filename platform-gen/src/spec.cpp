// Platform spec: strict reading (every key checked, unknown keys rejected with their path), units in
// strings, and resolution of missing figures from a calibration. Reference: docs/guides/platforms.md.
#include "gridcast/platform/spec.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/foundation/units.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

namespace gridcast::platform {

namespace fs = std::filesystem;
using json   = nlohmann::json;

namespace {

using Obj = JsonObject;

/// A non-empty array of integers >= `min` (fat-tree levels, torus dimensions).
std::vector<int> int_list(const Obj& o, std::string_view key, int min)
{
  if (o.array(key).empty())
    o.fail(key, "expected a non-empty array of integers");
  std::vector<int> out;
  for (std::int64_t v : o.integers(key, min, std::numeric_limits<int>::max()))
    out.push_back(static_cast<int>(v));
  return out;
}

LinkSpec link_from(const Obj& parent, std::string_view key)
{
  LinkSpec l;
  l.key = parent.key_path(key);
  if (not parent.has(key))
    return l;
  Obj o = parent.child(key);
  o.only({"bandwidth", "latency"});
  l.given         = true;
  l.bandwidth_Bps = o.opt_quantity("bandwidth", parse_bandwidth_Bps);
  l.latency_s     = o.opt_quantity("latency", parse_time_s);
  return l;
}

GpuSpec gpus_from(const Obj& o)
{
  o.only({"count", "speed", "memory", "copy"});
  GpuSpec g;
  g.key = o.path();
  if (o.has("count"))
    g.count = o.int32("count", 1);
  g.speed_flops  = o.opt_quantity("speed", parse_speed_flops);
  g.memory_bytes = o.opt_quantity("memory", parse_size_bytes);
  g.copy         = link_from(o, "copy");
  return g;
}

PcieSpec pcie_from(const Obj& o)
{
  o.only({"device_up", "device_down", "root", "switches_per_socket", "switch_link"});
  PcieSpec p;
  p.key         = o.path();
  p.device_up   = link_from(o, "device_up");
  p.device_down = link_from(o, "device_down");
  p.root        = link_from(o, "root");
  if (o.has("switches_per_socket"))
    p.switches_per_socket = o.int32("switches_per_socket", 0);
  p.switch_link = link_from(o, "switch_link");
  return p;
}

NvlinkSpec nvlink_from(const Obj& o)
{
  o.only({"topology", "link", "pairs", "host"});
  NvlinkSpec n;
  n.key             = o.path();
  std::string topo = o.string("topology");
  if (topo == "pairwise")
    n.topology = NvlinkTopology::Pairwise;
  else if (topo == "nvswitch")
    n.topology = NvlinkTopology::NvSwitch;
  else
    o.fail("topology", "expected \"pairwise\" or \"nvswitch\", got \"" + topo + "\"");
  n.link = link_from(o, "link");
  if (o.has("pairs")) {
    if (n.topology != NvlinkTopology::Pairwise)
      o.fail("pairs", "pairs are for topology \"pairwise\" only");
    const json& v = o.need("pairs");
    if (not v.is_array())
      o.fail("pairs", "expected an array of [a, b] GPU index pairs");
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string path = o.key_path("pairs") + "[" + std::to_string(i) + "]";
      if (not v[i].is_array() || v[i].size() != 2)
        throw InputError({o.file(), 0, path, -1}, "expected a pair [a, b] of GPU indices, got " + v[i].dump());
      const std::string key = "pairs[" + std::to_string(i) + "]";
      int a = static_cast<int>(o.integer_value(v[i][0], key + "[0]", 0, std::numeric_limits<int>::max()));
      int b = static_cast<int>(o.integer_value(v[i][1], key + "[1]", 0, std::numeric_limits<int>::max()));
      if (a == b)
        throw InputError({o.file(), 0, path, -1}, "a GPU cannot be linked to itself");
      n.pairs.emplace_back(std::min(a, b), std::max(a, b));
    }
  }
  if (o.has("host"))
    n.host = link_from(o, "host");
  return n;
}

NicSpec nics_from(const Obj& o)
{
  o.only({"count", "attach", "link"});
  NicSpec n;
  n.key = o.path();
  if (o.has("count"))
    n.count = o.int32("count", 1);
  if (o.has("attach")) {
    std::string a = o.string("attach");
    if (a == "node")
      n.attach = NicAttach::Node;
    else if (a == "gpu")
      n.attach = NicAttach::Gpu;
    else
      o.fail("attach", "expected \"node\" or \"gpu\", got \"" + a + "\"");
  }
  n.link = link_from(o, "link");
  return n;
}

NodeKindSpec kind_from(const Obj& o, const std::string& name)
{
  o.only({"sockets", "cores_per_socket", "core_speed", "memory", "llc", "memory_link", "loopback", "memory_bus",
          "inter_socket", "gpus", "pcie", "nvlink", "nics"});
  NodeKindSpec k;
  k.name = name;
  k.key  = o.path();
  if (o.has("sockets"))
    k.sockets = o.int32("sockets", 1);
  k.cores_per_socket = o.int32("cores_per_socket", 1);
  k.core_speed_flops = o.opt_quantity("core_speed", parse_speed_flops);
  k.memory_bytes     = o.opt_quantity("memory", parse_size_bytes);
  k.llc_bytes        = o.opt_quantity("llc", parse_size_bytes);
  k.memory_link      = link_from(o, "memory_link");
  k.loopback         = link_from(o, "loopback");
  k.memory_bus       = link_from(o, "memory_bus");
  k.inter_socket     = link_from(o, "inter_socket");
  if (o.has("gpus"))
    k.gpus = gpus_from(o.child("gpus"));
  if (o.has("pcie"))
    k.pcie = pcie_from(o.child("pcie"));
  if (o.has("nvlink"))
    k.nvlink = nvlink_from(o.child("nvlink"));
  if (o.has("nics"))
    k.nics = nics_from(o.child("nics"));
  return k;
}

NetworkSpec network_from(const Obj& o)
{
  o.only({"topology", "link", "fat_tree", "torus", "dragonfly"});
  NetworkSpec n;
  std::string topo = o.string("topology");
  std::string block;
  if (topo == "star")
    n.topology = Topology::Star;
  else if (topo == "fat_tree")
    n.topology = Topology::FatTree, block = "fat_tree";
  else if (topo == "torus")
    n.topology = Topology::Torus, block = "torus";
  else if (topo == "dragonfly")
    n.topology = Topology::Dragonfly, block = "dragonfly";
  else
    o.fail("topology", "expected \"star\", \"fat_tree\", \"torus\" or \"dragonfly\", got \"" + topo + "\"");
  for (std::string_view other : {"fat_tree", "torus", "dragonfly"})
    if (o.has(other) && other != block)
      o.fail(other, "parameters of another topology than \"" + topo + "\"");
  n.link = link_from(o, "link");
  if (n.topology == Topology::FatTree) {
    Obj f = o.child("fat_tree");
    f.only({"down", "up", "parallel"});
    n.fat_tree.down = int_list(f, "down", 1);
    n.fat_tree.up   = int_list(f, "up", 1);
    n.fat_tree.parallel =
        f.has("parallel") ? int_list(f, "parallel", 1) : std::vector<int>(n.fat_tree.down.size(), 1);
    if (n.fat_tree.up.size() != n.fat_tree.down.size())
      f.fail("up", "needs one entry per level (" + std::to_string(n.fat_tree.down.size()) + ", like down)");
    if (n.fat_tree.parallel.size() != n.fat_tree.down.size())
      f.fail("parallel", "needs one entry per level (" + std::to_string(n.fat_tree.down.size()) + ", like down)");
    if (n.fat_tree.up[0] != 1 || n.fat_tree.parallel[0] != 1)
      f.fail("up", "an endpoint (NIC) has one port: up[0] and parallel[0] must be 1 (give NICs per node instead)");
  } else if (n.topology == Topology::Torus) {
    Obj t = o.child("torus");
    t.only({"dims"});
    n.torus.dims = int_list(t, "dims", 1);
  } else if (n.topology == Topology::Dragonfly) {
    Obj d = o.child("dragonfly");
    d.only({"groups", "routers_per_group", "endpoints_per_router", "global_links", "local", "global"});
    n.dragonfly.groups               = d.int32("groups", 2);
    n.dragonfly.routers_per_group    = d.int32("routers_per_group", 1);
    n.dragonfly.endpoints_per_router = d.int32("endpoints_per_router", 1);
    if (d.has("global_links"))
      n.dragonfly.global_links = d.int32("global_links", 1);
    n.dragonfly.local  = link_from(d, "local");
    n.dragonfly.global = link_from(d, "global");
  }
  return n;
}

}  // namespace

PlatformSpec spec_from_json(const json& j, const std::string& file)
{
  Obj root(j, file);
  root.only({"name", "description", "sources", "node_kinds", "nodes", "network"});
  PlatformSpec s;
  s.file = file;
  s.name = root.string("name");
  if (s.name.empty() || s.name.find_first_of(" \t\"'<>&") != std::string::npos)
    root.fail("name", "expected a non-empty name without spaces, quotes or <>&");
  if (root.has("description"))
    s.description = root.string("description");
  if (root.has("sources"))
    s.sources = root.strings("sources");
  Obj kinds = root.child("node_kinds");
  if (kinds.raw().empty())
    root.fail("node_kinds", "expected at least one node kind");
  for (const auto& item : kinds.raw().items())  // nlohmann::json keeps keys sorted: a fixed order
    s.kinds.push_back(kind_from(kinds.child(item.key()), item.key()));

  const json& nodes = root.need("nodes");
  if (not nodes.is_array() || nodes.empty())
    root.fail("nodes", "expected a non-empty array of {\"kind\": ..., \"count\": ...}");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Obj g = root.element("nodes", i);
    g.only({"kind", "count"});
    NodeGroupSpec group;
    group.key   = g.path();
    group.kind  = g.string("kind");
    group.count = g.int32("count", 1);
    if (std::none_of(s.kinds.begin(), s.kinds.end(), [&](const NodeKindSpec& k) { return k.name == group.kind; }))
      g.fail("kind", "no node kind named \"" + group.kind + "\" in node_kinds");
    s.nodes.push_back(group);
  }
  if (root.has("network"))
    s.network = network_from(root.child("network"));
  return s;
}

PlatformSpec read_spec(const fs::path& file)
{
  return spec_from_json(read_json_file(file, "the platform spec"), file.string());
}

// ---------------------------------------------------------------------------------------------------
// Resolution: spec first, calibration second, error third.

namespace {

class Resolver {
public:
  Resolver(const PlatformSpec& spec, const Calibration* cal) : spec_(spec), cal_(cal) {}

  [[noreturn]] void missing(const std::string& key, const std::string& hint) const
  {
    throw InputError({spec_.file, 0, key, -1},
                     "missing: give it in the spec" + (hint.empty() ? std::string() : " or " + hint));
  }

  /// A link's figures: the spec's, else `from_cal` when it has them (bandwidth > 0), else an error.
  LinkFigures link(const LinkSpec& l, const GpuLinkFigures* from_cal, const std::string& hint) const
  {
    LinkFigures f;
    bool cal_ok = from_cal != nullptr && from_cal->bandwidth_Bps > 0;
    if (l.bandwidth_Bps)
      f.bandwidth_Bps = *l.bandwidth_Bps;
    else if (cal_ok)
      f.bandwidth_Bps = from_cal->bandwidth_Bps;
    else
      missing(l.key + ".bandwidth", hint);
    if (l.latency_s)
      f.latency_s = *l.latency_s;
    else if (cal_ok)
      f.latency_s = from_cal->latency_s;
    else
      missing(l.key + ".latency", hint);
    return f;
  }

  ResolvedKind kind(const NodeKindSpec& k, bool networked) const
  {
    ResolvedKind r;
    r.spec = &k;
    const std::string cal_name = cal_ ? "the calibration (" + cal_->host.name + ")" : std::string();
    auto hint                  = [&](const std::string& field) {
      return cal_ ? cal_name + " field " + field + " (absent or zero there)"
                                   : "pass --calibration with " + field;
    };
    if (k.core_speed_flops)
      r.core_speed_flops = *k.core_speed_flops;
    else if (cal_ && cal_->compute.core_speed_flops > 0)
      r.core_speed_flops = cal_->compute.core_speed_flops;
    else
      missing(k.key + ".core_speed", hint("compute.core_speed_flops"));

    std::optional<GpuLinkFigures> net_cal;
    if (cal_ && cal_->network)
      net_cal = GpuLinkFigures{cal_->network->latency_s, cal_->network->bandwidth_Bps};
    r.loopback = link(k.loopback, net_cal ? &*net_cal : nullptr, hint("network.latency_s/bandwidth_Bps"));
    // The memory bus is optional: a latency of its own is rarely known (0: the loopback carries it).
    double cal_bus_Bps = (cal_ && cal_->network) ? cal_->network->shared_bandwidth_Bps : 0;
    if (k.memory_bus.given || cal_bus_Bps > 0) {
      GpuLinkFigures bus_cal{0, cal_bus_Bps};
      LinkSpec bus = k.memory_bus;
      if (not bus.latency_s)
        bus.latency_s = 0.0;
      r.memory_bus = link(bus, cal_bus_Bps > 0 ? &bus_cal : nullptr, hint("network.shared_bandwidth_Bps"));
      // SimGrid's cross-traffic (on by default) charges every flow 5% of its rate on the links of its
      // reverse route too, for TCP acknowledgements; a loopback's reverse route is itself, so each flow
      // weighs 1.05 on the bus. Shared memory has no acknowledgements: the link is written 5% wider so
      // that the flows share the measured capacity (docs/guides/platforms.md, "Inside a node").
      r.memory_bus->bandwidth_Bps *= kCrossTrafficWeight;
    }

    // The last-level cache: given, or the knee of the calibration's memcpy curve; optional (without it
    // collectives charge every local copy at the curve point of its own size).
    if (k.llc_bytes) {
      r.llc_bytes = k.llc_bytes;
    } else if (cal_) {
      std::vector<OverheadPoint> memcpy_curve;
      for (const SizedTiming& t : cal_->compute.memcpy)
        memcpy_curve.push_back({t.bytes, t.time_s.median});
      if (auto c = cache_bytes_from_memcpy(memcpy_curve))
        r.llc_bytes = static_cast<double>(*c);
    }

    const GpuCalibration* gcal = (cal_ && cal_->gpu) ? &*cal_->gpu : nullptr;
    auto gpu_hint = [&](const std::string& field) { return hint("gpu." + field); };

    int gpu_count = 0;
    if (k.gpus) {
      ResolvedGpu g;
      if (k.gpus->count)
        g.count = *k.gpus->count;
      else if (gcal && gcal->device_count > 0)
        g.count = gcal->device_count;
      else
        missing(k.gpus->key + ".count", gpu_hint("device_count"));
      if (k.gpus->speed_flops)
        g.speed_flops = *k.gpus->speed_flops;
      else if (gcal && gcal->speed_flops > 0)
        g.speed_flops = gcal->speed_flops;
      else
        missing(k.gpus->key + ".speed", gpu_hint("speed_flops"));
      if (k.gpus->memory_bytes)
        g.memory_bytes = *k.gpus->memory_bytes;
      else if (gcal && gcal->memory_bytes > 0)
        g.memory_bytes = gcal->memory_bytes;
      else
        missing(k.gpus->key + ".memory", gpu_hint("memory_bytes"));
      g.copy    = link(k.gpus->copy, gcal ? &gcal->d2d : nullptr, gpu_hint("d2d"));
      gpu_count = g.count;
      r.gpus    = g;
    }

    // Structure checks: GPU counts that the fabric does not match.
    if (k.nvlink && not k.gpus)
      throw InputError({spec_.file, 0, k.nvlink->key, -1}, "NVLink without GPUs: give " + k.key + ".gpus");
    if (k.nvlink)
      for (std::size_t i = 0; i < k.nvlink->pairs.size(); ++i) {
        auto [a, b] = k.nvlink->pairs[i];
        if (b >= gpu_count)
          throw InputError({spec_.file, 0, k.nvlink->key + ".pairs[" + std::to_string(i) + "]", -1},
                           "GPU index " + std::to_string(b) + " but the node has " + std::to_string(gpu_count) +
                               " GPUs (" + k.key + ".gpus.count)");
        for (std::size_t j = 0; j < i; ++j)
          if (k.nvlink->pairs[j] == k.nvlink->pairs[i])
            throw InputError({spec_.file, 0, k.nvlink->key + ".pairs[" + std::to_string(i) + "]", -1},
                             "the same pair appears twice");
      }
    if (k.nics && k.nics->attach == NicAttach::Gpu && k.nics->count != gpu_count)
      throw InputError({spec_.file, 0, k.nics->key + ".count", -1},
                       "NICs attached per GPU: count " + std::to_string(k.nics->count) + " must equal the " +
                           std::to_string(gpu_count) + " GPUs of " + k.key + ".gpus.count");
    if (k.nics && not networked)
      throw InputError({spec_.file, 0, k.nics->key, -1}, "NICs but no network: give the top-level \"network\"");

    const bool host_nvlink = k.nvlink && k.nvlink->host;
    const bool gpus_on_pcie = k.gpus && not host_nvlink;
    const bool nics_on_pcie = k.nics && k.pcie;
    if (gpus_on_pcie && not k.pcie)
      throw InputError({spec_.file, 0, k.key + ".pcie", -1},
                       "the GPUs attach to the host over PCIe (no nvlink.host): give the PCIe tree");
    if (k.nics && k.nics->attach == NicAttach::Gpu && not k.pcie)
      throw InputError({spec_.file, 0, k.key + ".pcie", -1}, "NICs attached per GPU sit on the PCIe tree: give it");
    if (k.pcie && (gpus_on_pcie || nics_on_pcie)) {
      const PcieSpec& p = *k.pcie;
      r.device_up       = link(p.device_up, gcal ? &gcal->d2h_pinned : nullptr, gpu_hint("d2h_pinned"));
      r.device_down     = link(p.device_down, gcal ? &gcal->h2d_pinned : nullptr, gpu_hint("h2d_pinned"));
      r.root            = link(p.root, nullptr, "");
      r.memory_link     = link(k.memory_link, nullptr, "");
      if (p.switches_per_socket > 0)
        r.switch_link = link(p.switch_link, nullptr, "");
      else if (p.switch_link.given)
        throw InputError({spec_.file, 0, p.switch_link.key, -1}, "switch_link without switches_per_socket");
    }
    if (k.sockets > 1 && ((k.pcie && (gpus_on_pcie || nics_on_pcie)) || (host_nvlink && gpu_count > 0)))
      r.inter_socket = link(k.inter_socket, nullptr, "");
    if (k.nvlink) {
      r.nvlink = link(k.nvlink->link, gcal ? &gcal->p2p : nullptr, gpu_hint("p2p"));
      if (host_nvlink)
        r.nvlink_host = link(*k.nvlink->host, nullptr, "");
    }
    if (k.nics)
      r.nic = link(k.nics->link, nullptr, "");
    return r;
  }

private:
  const PlatformSpec& spec_;
  const Calibration* cal_;
};

}  // namespace

std::vector<ResolvedKind> resolve(const PlatformSpec& spec, const Calibration* calibration)
{
  Resolver r(spec, calibration);
  std::vector<ResolvedKind> out;
  for (const NodeKindSpec& k : spec.kinds)
    out.push_back(r.kind(k, spec.network.has_value()));
  return out;
}

}  // namespace gridcast::platform
