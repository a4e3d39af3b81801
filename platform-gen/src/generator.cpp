// From a resolved spec to the platform model: node insides, then the network between NICs. Names and
// structure: docs/guides/platforms.md ("Host naming", "Inside a node", "Networks").
#include "gridcast/platform/generator.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/units.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace gridcast::platform {

namespace {

std::string str(int i)
{
  return std::to_string(i);
}

/// A place where the network plugs into a node: a NIC router (NICs on PCIe) or the CPU host itself.
struct Endpoint {
  std::string netpoint;
  std::string port;  ///< name of the port link (NIC to first switch)
  LinkFigures nic;
};

/// Where a PCIe device plugs in: the routers traffic enters (towards the host) and leaves (towards
/// the device) through. Without switches these are a socket's root-complex routers.
struct AttachPoint {
  std::string in, out;
};

/// What the steps that build one node share: its name, its kind, and what one step leaves for the next
/// (the socket chain's links, where each GPU attaches).
struct NodeParts {
  NodeParts(int index, const ResolvedKind& kind)
      : i(index), P("node-" + std::to_string(index)), rk(kind), k(*kind.spec), gpus(kind.gpus ? kind.gpus->count : 0),
        host_nvlink(k.nvlink && k.nvlink->host), gpus_on_pcie(gpus > 0 && not host_nvlink),
        pcie(k.pcie && (gpus_on_pcie || k.nics)), switches(pcie ? k.pcie->switches_per_socket : 0), gpu_attach(gpus),
        host_link(gpus)
  {
  }
  std::string gpu_name(int j) const { return P + ".gpu-" + str(j); }
  int gpu_socket(int j) const { return j * k.sockets / gpus; }
  /// Devices of a socket spread evenly over its switches, in index order.
  AttachPoint attach(int socket, int local, int on_socket) const
  {
    std::string s = P + ".s" + str(socket);
    if (switches == 0)
      return AttachPoint{s + ".rc-in", s + ".rc-out"};
    std::string sw = s + ".sw-" + str(local * switches / on_socket);
    return AttachPoint{sw, sw};
  }

  const int i;
  const std::string P;  ///< the CPU host's name, prefix of everything in the node
  const ResolvedKind& rk;
  const NodeKindSpec& k;
  const int gpus;
  const bool host_nvlink;   ///< GPUs attach to the CPU by NVLink (POWER9 nodes)
  const bool gpus_on_pcie;
  const bool pcie;          ///< the node has a PCIe fabric (devices on it)
  const int switches;       ///< PCIe switches per socket
  std::vector<std::size_t> smp;               ///< inter-socket links, socket s to s+1
  std::vector<AttachPoint> gpu_attach;        ///< where GPU j plugs into PCIe
  std::vector<std::size_t> host_link;         ///< NVLink to the CPU, when GPUs attach that way
};

/// What the network's topologies share: the endpoints in order and the checks of their figures.
struct NetworkParts {
  const std::string& file;
  const NetworkSpec& net;
  std::vector<const Endpoint*> eps;
  int per_node = 0;  ///< NICs per node
  long endpoints() const { return static_cast<long>(eps.size()); }
  LinkFigures need_link(const LinkSpec& l) const
  {
    if (not l.bandwidth_Bps)
      throw InputError({file, 0, l.key + ".bandwidth", -1}, "missing: give it in the spec");
    if (not l.latency_s)
      throw InputError({file, 0, l.key + ".latency", -1}, "missing: give it in the spec");
    return LinkFigures{*l.bandwidth_Bps, *l.latency_s};
  }
  [[noreturn]] void mismatch(const std::string& key, long got, int nodes) const
  {
    throw InputError({file, 0, key, -1}, "multiplies out to " + std::to_string(got) + " endpoints, the platform has " +
                                             std::to_string(endpoints()) + " (" + std::to_string(nodes) + " nodes x " +
                                             std::to_string(per_node) + " NICs)");
  }
};

long product(const std::vector<int>& v)
{
  long p = 1;
  for (int x : v)
    p *= x;
  return p;
}

class Builder {
public:
  Builder(const PlatformSpec& spec, const std::vector<ResolvedKind>& kinds, std::size_t max_elements)
      : spec_(spec), kinds_(kinds), max_elements_(max_elements)
  {
  }

  PlatformModel& model() { return m_; }

  std::size_t link(const std::string& name, const LinkFigures& f, Sharing sharing)
  {
    grow();
    m_.links.push_back({name, f.bandwidth_Bps, f.latency_s, sharing});
    return m_.links.size() - 1;
  }
  void router(const std::string& name)
  {
    grow();
    m_.routers.push_back(name);
  }
  void edge(const std::string& src, const std::string& dst, std::vector<LinkUse> links, bool symmetrical)
  {
    grow();
    m_.routes.push_back({src, dst, std::move(links), symmetrical});
  }
  /// Counts one more host, link, router or route: a spec whose counts multiply out past the limit is refused
  /// while it is built, before it takes all the memory (every element costs ~100 bytes here and more in
  /// SimGrid).
  void grow()
  {
    if (++elements_ > max_elements_)
      throw InputError({spec_.file, 0, "nodes", -1},
                       "the platform would have more than " + std::to_string(max_elements_) +
                           " hosts, links and routes (" + std::to_string(nodes_built_) +
                           " nodes built so far): are the counts right? `gridcast platform --max-elements N` "
                           "raises the limit");
  }
  /// A link used one way: its own direction for a split-duplex link, none otherwise.
  static LinkUse up(std::size_t l) { return {l, Direction::Up}; }
  static LinkUse down(std::size_t l) { return {l, Direction::Down}; }
  static LinkUse plain(std::size_t l) { return {l, Direction::None}; }

  void nodes()
  {
    int index = 0;
    for (const NodeGroupSpec& g : spec_.nodes) {
      const ResolvedKind& rk = kind(g.kind);
      for (int c = 0; c < g.count; ++c, nodes_built_ = index)
        node(index++, rk);
    }
    m_.nodes = index;
  }

  void network();

private:
  const ResolvedKind& kind(const std::string& name) const
  {
    for (const ResolvedKind& k : kinds_)
      if (k.spec->name == name)
        return k;
    throw InternalError("node kind '" + name + "' not resolved");
  }

  // One node, in the order its parts are written (the order of links and routes in the XML).
  void node(int i, const ResolvedKind& rk)
  {
    NodeParts n(i, rk);
    cpu_host(n);
    gpu_hosts(n);
    pcie_fabric(n);
    socket_chain(n);
    attach_gpus(n);
    if (n.k.nvlink && n.k.nvlink->topology == NvlinkTopology::Pairwise)
      nvlink_pairs(n);
    else if (n.k.nvlink && n.k.nvlink->topology == NvlinkTopology::NvSwitch)
      nvswitch(n);
    endpoints_.push_back(nics(n));
  }
  void cpu_host(const NodeParts& n);
  void gpu_hosts(const NodeParts& n);
  void pcie_fabric(const NodeParts& n);
  void socket_chain(NodeParts& n);
  void attach_gpus(NodeParts& n);
  void nvlink_pairs(const NodeParts& n);
  void nvswitch(const NodeParts& n);
  std::vector<Endpoint> nics(const NodeParts& n);

  /// A PCIe device (GPU or NIC) named `dev`, with its own up and down links, plugged in at `at`.
  void pcie_device(const std::string& dev, const ResolvedKind& rk, const AttachPoint& at)
  {
    std::size_t u = link(dev + ".pcie-up", rk.device_up, Sharing::Shared);
    std::size_t d = link(dev + ".pcie-down", rk.device_down, Sharing::Shared);
    edge(dev, at.in, {plain(u)}, false);
    edge(at.out, dev, {plain(d)}, false);
  }
  void connect(const Endpoint& ep, const std::string& sw)
  {
    std::size_t l = link(ep.port, ep.nic, Sharing::SplitDuplex);
    edge(ep.netpoint, sw, {up(l)}, true);
  }
  double min_half_injection() const;

  void star(const NetworkParts& n);
  void fat_tree(const NetworkParts& n);
  void torus(const NetworkParts& n);
  void dragonfly(const NetworkParts& n);

  const PlatformSpec& spec_;
  const std::vector<ResolvedKind>& kinds_;
  std::size_t max_elements_;
  std::size_t elements_ = 0;
  int nodes_built_      = 0;
  PlatformModel m_;
  std::vector<std::vector<Endpoint>> endpoints_;  ///< [node][nic]
};

void Builder::cpu_host(const NodeParts& n)
{
  const NodeKindSpec& k = n.k;
  HostDef cpu{n.P, n.rk.core_speed_flops, k.sockets * k.cores_per_socket, {}};
  cpu.properties = {{"gridcast:kind", "cpu"},
                    {"gridcast:node", str(n.i)},
                    {"gridcast:node-kind", k.name},
                    {"gridcast:sockets", str(k.sockets)},
                    {"gridcast:gpus", str(n.gpus)}};
  if (k.memory_bytes)
    cpu.properties.push_back({"gridcast:memory-bytes", format_number(*k.memory_bytes)});
  if (n.rk.llc_bytes)  // the cold-copy rule of collectives (docs/reference/collectives.md, "Cold copies")
    cpu.properties.push_back({"gridcast:llc-bytes", format_number(*n.rk.llc_bytes)});
  grow();
  m_.hosts.push_back(cpu);
  ++m_.cpu_hosts;
  // Two ranks on one CPU host talk through shared memory: SimGrid's loopback model (every flow at the
  // full rate), with the calibrated figures; plus, where calibrated, a SHARED memory-bus link whose
  // capacity concurrent transfers divide (both ranks copy against one memory system).
  std::size_t lo = link(n.P + ".loopback", n.rk.loopback, Sharing::Fatpipe);
  if (n.rk.memory_bus) {
    std::size_t bus = link(n.P + ".memory-bus", *n.rk.memory_bus, Sharing::Shared);
    edge(n.P, n.P, {plain(lo), plain(bus)}, false);
  } else {
    edge(n.P, n.P, {plain(lo)}, false);
  }
}

void Builder::gpu_hosts(const NodeParts& n)
{
  for (int j = 0; j < n.gpus; ++j) {
    HostDef g{n.gpu_name(j), n.rk.gpus->speed_flops, 1, {}};
    g.properties = {{"gridcast:kind", "gpu"},
                    {"gridcast:node", str(n.i)},
                    {"gridcast:gpu", str(j)},
                    {"gridcast:socket", str(n.gpu_socket(j))},
                    {"gridcast:memory-bytes", format_number(n.rk.gpus->memory_bytes)}};
    grow();
    m_.hosts.push_back(g);
    ++m_.gpu_hosts;
    // Copies within one GPU share its memory bandwidth.
    std::size_t c = link(n.gpu_name(j) + ".copy", n.rk.gpus->copy, Sharing::Shared);
    edge(n.gpu_name(j), n.gpu_name(j), {plain(c)}, false);
  }
}

void Builder::pcie_fabric(const NodeParts& n)
{
  if (not n.pcie)
    return;
  for (int s = 0; s < n.k.sockets; ++s) {
    std::string S = n.P + ".s" + str(s);
    // The root complex is two routers joined by the shared bus link: every edge into it ends at
    // rc-in, every edge out of it starts at rc-out, so each route through it crosses the bus once.
    router(S + ".rc-in");
    router(S + ".rc-out");
    std::size_t root = link(S + ".root", n.rk.root, Sharing::Shared);
    edge(S + ".rc-in", S + ".rc-out", {plain(root)}, false);
    std::size_t mem = link(S + ".mem", n.rk.memory_link, Sharing::SplitDuplex);
    edge(n.P, S + ".rc-in", {up(mem)}, false);
    edge(S + ".rc-out", n.P, {down(mem)}, false);
    for (int w = 0; w < n.switches; ++w) {
      std::string sw = S + ".sw-" + str(w);
      router(sw);
      std::size_t l = link(sw + ".link", n.rk.switch_link, Sharing::SplitDuplex);
      edge(sw, S + ".rc-in", {up(l)}, false);
      edge(S + ".rc-out", sw, {down(l)}, false);
    }
  }
}

void Builder::socket_chain(NodeParts& n)
{
  // Sockets in a chain (socket s to s+1), UP towards the higher socket.
  if (n.k.sockets <= 1 || not(n.pcie || n.host_nvlink))
    return;
  for (int s = 0; s + 1 < n.k.sockets; ++s) {
    n.smp.push_back(link(n.P + ".smp-" + str(s), n.rk.inter_socket, Sharing::SplitDuplex));
    if (n.pcie) {
      std::string a = n.P + ".s" + str(s), b = n.P + ".s" + str(s + 1);
      edge(a + ".rc-out", b + ".rc-in", {up(n.smp.back())}, false);
      edge(b + ".rc-out", a + ".rc-in", {down(n.smp.back())}, false);
    }
  }
}

void Builder::attach_gpus(NodeParts& n)
{
  if (n.gpus == 0)
    return;
  std::vector<int> on_socket(n.k.sockets, 0), local(n.gpus, 0);
  for (int j = 0; j < n.gpus; ++j)
    local[j] = on_socket[n.gpu_socket(j)]++;
  for (int j = 0; j < n.gpus; ++j) {
    if (n.pcie)
      n.gpu_attach[j] = n.attach(n.gpu_socket(j), local[j], on_socket[n.gpu_socket(j)]);
    if (n.gpus_on_pcie)
      pcie_device(n.gpu_name(j), n.rk, n.gpu_attach[j]);
    else {  // NVLink to the CPU (POWER9 nodes): full duplex, no PCIe on the way
      n.host_link[j] = link(n.gpu_name(j) + ".nvlink-host", n.rk.nvlink_host, Sharing::SplitDuplex);
      edge(n.gpu_name(j), n.P, {up(n.host_link[j])}, true);
    }
  }
}

void Builder::nvlink_pairs(const NodeParts& n)
{
  std::vector<std::pair<int, int>> pairs = n.k.nvlink->pairs;
  if (pairs.empty())
    for (int a = 0; a < n.gpus; ++a)
      for (int b = a + 1; b < n.gpus; ++b)
        pairs.emplace_back(a, b);
  for (auto [a, b] : pairs) {
    std::size_t l = link(n.P + ".nvlink-" + str(a) + "-" + str(b), n.rk.nvlink, Sharing::SplitDuplex);
    edge(n.gpu_name(a), n.gpu_name(b), {up(l)}, true);
  }
  // GPUs on NVLink to different sockets and not linked together go through both sockets: the
  // CPU host stands for all sockets, so explicit routes put the inter-socket links on the way.
  if (not n.host_nvlink || n.smp.empty())
    return;
  for (int a = 0; a < n.gpus; ++a)
    for (int b = 0; b < n.gpus; ++b) {
      int sa = n.gpu_socket(a), sb = n.gpu_socket(b);
      if (sa == sb ||
          std::find(pairs.begin(), pairs.end(), std::make_pair(std::min(a, b), std::max(a, b))) != pairs.end())
        continue;
      std::vector<LinkUse> links{up(n.host_link[a])};
      for (int s = sa; s < sb; ++s)
        links.push_back(up(n.smp[s]));
      for (int s = sa; s > sb; --s)
        links.push_back(down(n.smp[s - 1]));
      links.push_back(down(n.host_link[b]));
      grow();
      m_.bypass_routes.push_back({n.gpu_name(a), n.gpu_name(b), std::move(links), false});
    }
}

void Builder::nvswitch(const NodeParts& n)
{
  std::string nvs = n.P + ".nvswitch";
  router(nvs);
  std::vector<std::size_t> port(n.gpus);
  for (int j = 0; j < n.gpus; ++j) {
    port[j] = link(n.gpu_name(j) + ".nvlink", n.rk.nvlink, Sharing::SplitDuplex);
    edge(n.gpu_name(j), nvs, {up(port[j])}, true);
  }
  // Through the NVSwitch and through a shared PCIe switch both take two links; Dijkstra counts links,
  // so explicit routes make GPU-to-GPU traffic take NVLink, as the hardware does.
  for (int a = 0; a < n.gpus; ++a)
    for (int b = 0; b < n.gpus; ++b)
      if (a != b) {
        grow();
        m_.bypass_routes.push_back({n.gpu_name(a), n.gpu_name(b), {up(port[a]), down(port[b])}, false});
      }
}

std::vector<Endpoint> Builder::nics(const NodeParts& n)
{
  std::vector<Endpoint> eps;
  if (not n.k.nics)
    return eps;
  const int c = n.k.nics->count;
  std::vector<int> on_socket(n.k.sockets, 0), local(c, 0);
  auto nic_socket = [&](int i) { return i * n.k.sockets / c; };
  for (int i = 0; i < c; ++i)
    local[i] = on_socket[nic_socket(i)]++;
  for (int i = 0; i < c; ++i) {
    std::string nic = n.P + ".nic-" + str(i);
    if (n.pcie) {
      router(nic);
      AttachPoint at = n.k.nics->attach == NicAttach::Gpu ? n.gpu_attach[i]
                                                           : n.attach(nic_socket(i), local[i], on_socket[nic_socket(i)]);
      pcie_device(nic, n.rk, at);
      eps.push_back({nic, nic + ".port", n.rk.nic});
    } else {
      eps.push_back({n.P, nic + ".port", n.rk.nic});  // a plain cluster node: the port is the host's
    }
  }
  return eps;
}

double Builder::min_half_injection() const
{
  // Half the endpoints, the slowest ones: what one half of the machine can push into the network.
  std::vector<double> bw;
  for (const auto& node : endpoints_)
    for (const Endpoint& e : node)
      bw.push_back(e.nic.bandwidth_Bps);
  std::sort(bw.begin(), bw.end());
  return std::accumulate(bw.begin(), bw.begin() + static_cast<std::ptrdiff_t>(bw.size() / 2), 0.0);
}

void Builder::network()
{
  const std::string& file = spec_.file;
  if (not spec_.network) {
    if (m_.nodes > 1)
      throw InputError({file, 0, "network", -1},
                       std::to_string(m_.nodes) + " nodes need a network between them: give \"network\"");
    return;
  }
  NetworkParts n{file, *spec_.network, {}, -1};
  // Every node needs NICs, the same count everywhere (endpoints are numbered NIC-major: see below).
  for (const NodeGroupSpec& g : spec_.nodes) {
    const NodeKindSpec& k = *kind(g.kind).spec;
    if (not k.nics)
      throw InputError({file, 0, k.key + ".nics", -1}, "nodes on a network need NICs");
    if (n.per_node >= 0 && k.nics->count != n.per_node)
      throw InputError({file, 0, k.key + ".nics.count", -1},
                       "all nodes need the same number of NICs (" + std::to_string(n.per_node) + " elsewhere)");
    n.per_node = k.nics->count;
  }
  // Endpoint e = nic * nodes + node: consecutive endpoints are the same NIC of consecutive nodes, so a
  // leaf switch of a fat tree gathers one rail (NIC k of many nodes), as rail-optimized clusters do.
  for (int c = 0; c < n.per_node; ++c)
    for (int i = 0; i < m_.nodes; ++i)
      n.eps.push_back(&endpoints_[i][c]);
  switch (n.net.topology) {
    case Topology::Star: star(n); break;
    case Topology::FatTree: fat_tree(n); break;
    case Topology::Torus: torus(n); break;
    case Topology::Dragonfly: dragonfly(n); break;
  }
}

void Builder::star(const NetworkParts& n)
{
  m_.topology = "star";
  router("switch");
  ++m_.switches;
  for (const Endpoint* e : n.eps)
    connect(*e, "switch");
  m_.bisection_Bps = min_half_injection();
}

void Builder::fat_tree(const NetworkParts& n)
{
  m_.topology           = "fat_tree";
  const FatTreeSpec& ft = n.net.fat_tree;
  const long E          = n.endpoints();
  if (product(ft.down) != E)
    n.mismatch("network.fat_tree.down", product(ft.down), m_.nodes);
  LinkFigures port = n.need_link(n.net.link);
  const int L      = static_cast<int>(ft.down.size());
  // Level l (0 = leaves) has G_l = prod(down[l+1..]) groups; the switches of a group (planes_l =
  // prod(up[0..l]) of them) are one router whose up-going link carries all their up ports: with
  // load spread evenly over equal paths (ECMP, D-mod-k), the capacities are the same, and the tree
  // gives Dijkstra one path only.
  std::vector<long> groups(L), planes(L);
  for (int l = 0; l < L; ++l) {
    groups[l] = product(std::vector<int>(ft.down.begin() + l + 1, ft.down.end()));
    planes[l] = product(std::vector<int>(ft.up.begin(), ft.up.begin() + l + 1));
    m_.switches += static_cast<int>(groups[l] * planes[l]);
    for (long g = 0; g < groups[l]; ++g)
      router("ft.l" + str(l) + "-" + std::to_string(g));
  }
  for (long e = 0; e < E; ++e)
    connect(*n.eps[e], "ft.l0-" + std::to_string(e / ft.down[0]));
  m_.bisection_Bps = min_half_injection();
  for (int l = 1; l < L; ++l) {
    LinkFigures agg{port.bandwidth_Bps * static_cast<double>(planes[l - 1] * ft.up[l] * ft.parallel[l]),
                    port.latency_s};
    for (long h = 0; h < groups[l - 1]; ++h) {
      std::string child = "ft.l" + str(l - 1) + "-" + std::to_string(h);
      std::size_t u     = link(child + ".up", agg, Sharing::SplitDuplex);
      edge(child, "ft.l" + str(l) + "-" + std::to_string(h / ft.down[l]), {up(u)}, true);
    }
    m_.bisection_Bps = std::min(m_.bisection_Bps, static_cast<double>(groups[l - 1] / 2) * agg.bandwidth_Bps);
  }
}

void Builder::torus(const NetworkParts& n)
{
  m_.topology               = "torus";
  const std::vector<int>& d = n.net.torus.dims;
  const long E              = n.endpoints();
  if (product(d) != E)
    n.mismatch("network.torus.dims", product(d), m_.nodes);
  LinkFigures lf = n.need_link(n.net.link);
  auto name      = [&](long e) {
    std::string s = "torus";
    for (std::size_t k = 0; k < d.size(); ++k) {
      s += (k == 0 ? "." : "-") + std::to_string(e % d[k]);
      e /= d[k];
    }
    return s;
  };
  for (long e = 0; e < E; ++e)
    router(name(e));
  m_.switches = static_cast<int>(E);
  for (long e = 0; e < E; ++e)
    connect(*n.eps[e], name(e));
  long stride = 1;
  for (std::size_t k = 0; k < d.size(); ++k) {
    for (long e = 0; e < E; ++e) {
      long c = (e / stride) % d[k];
      // A ring of 2 is one link; of 1, none.
      if (d[k] == 1 || (d[k] == 2 && c == 1))
        continue;
      long next     = e + (((c + 1) % d[k]) - c) * stride;
      std::size_t l = link(name(e) + ".d" + std::to_string(k), lf, Sharing::SplitDuplex);
      edge(name(e), name(next), {up(l)}, true);
    }
    stride *= d[k];
  }
  int dmax         = *std::max_element(d.begin(), d.end());
  m_.bisection_Bps = dmax == 1 ? 0 : (dmax > 2 ? 2.0 : 1.0) * static_cast<double>(E / dmax) * lf.bandwidth_Bps;
  m_.bisection_Bps = std::min(m_.bisection_Bps, min_half_injection());
}

void Builder::dragonfly(const NetworkParts& n)
{
  m_.topology             = "dragonfly";
  const DragonflySpec& df = n.net.dragonfly;
  const long E            = n.endpoints();
  long total              = static_cast<long>(df.groups) * df.routers_per_group * df.endpoints_per_router;
  if (total != E)
    n.mismatch("network.dragonfly (groups x routers_per_group x endpoints_per_router)", total, m_.nodes);
  LinkFigures local  = n.need_link(df.local.given ? df.local : n.net.link);
  LinkFigures global = n.need_link(df.global.given ? df.global : n.net.link);
  const int R        = df.routers_per_group;
  auto name          = [&](int g, int r) { return "df.g" + str(g) + "-r" + str(r); };
  for (int g = 0; g < df.groups; ++g)
    for (int r = 0; r < R; ++r)
      router(name(g, r));
  m_.switches = df.groups * R;
  for (long e = 0; e < E; ++e)
    connect(*n.eps[e], name(static_cast<int>(e / (static_cast<long>(R) * df.endpoints_per_router)),
                            static_cast<int>((e / df.endpoints_per_router) % R)));
  for (int g = 0; g < df.groups; ++g)  // all-to-all inside a group
    for (int a = 0; a < R; ++a)
      for (int b = a + 1; b < R; ++b) {
        std::size_t l = link("df.g" + str(g) + ".r" + str(a) + "-r" + str(b), local, Sharing::SplitDuplex);
        edge(name(g, a), name(g, b), {up(l)}, true);
      }
  // global_links links between every two groups, spread round-robin over the routers of each group.
  for (int g1 = 0; g1 < df.groups; ++g1)
    for (int g2 = g1 + 1; g2 < df.groups; ++g2)
      for (int k = 0; k < df.global_links; ++k) {
        int r1        = ((g2 - 1) * df.global_links + k) % R;
        int r2        = (g1 * df.global_links + k) % R;
        std::size_t l = link("df.g" + str(g1) + "-g" + str(g2) + "." + str(k), global, Sharing::SplitDuplex);
        edge(name(g1, r1), name(g2, r2), {up(l)}, true);
      }
  double half      = std::floor(df.groups / 2.0) * std::ceil(df.groups / 2.0);
  m_.bisection_Bps = std::min(half * df.global_links * global.bandwidth_Bps, min_half_injection());
}

std::string comment_safe(std::string s)
{
  // "--" may not appear inside an XML comment.
  for (std::size_t p = s.find("--"); p != std::string::npos; p = s.find("--", p))
    s.replace(p, 2, "- -");
  return s;
}

}  // namespace

PlatformModel build_platform(const PlatformSpec& spec, const Calibration* calibration, const std::string& spec_name,
                             std::size_t max_elements)
{
  std::vector<ResolvedKind> kinds = resolve(spec, calibration);
  Builder b(spec, kinds, max_elements);
  b.nodes();
  b.network();
  PlatformModel& m = b.model();
  m.comments.push_back(" Generated by `gridcast platform " + comment_safe(spec_name) +
                       "`: do not edit, regenerate (docs/guides/platforms.md). ");
  if (not spec.description.empty())
    m.comments.push_back(" " + comment_safe(spec.description) + " ");
  for (const std::string& s : spec.sources)
    m.comments.push_back(" Source: " + comment_safe(s) + " ");
  m.zone_properties.push_back({"gridcast:platform", spec.name});
  m.zone_properties.push_back({"gridcast:nodes", std::to_string(m.nodes)});
  if (calibration != nullptr) {
    m.zone_properties.push_back({"gridcast:calibration", calibration->host.name + " " + calibration->host.date});
    if (calibration->network) {
      const NetworkCalibration& n = *calibration->network;
      if (not n.lat_factor.empty())
        m.zone_properties.push_back({"gridcast:lat-factor", format_factor_segments(n.lat_factor)});
      if (not n.bw_factor.empty())
        m.zone_properties.push_back({"gridcast:bw-factor", format_factor_segments(n.bw_factor)});
      m.zone_properties.push_back({"gridcast:eager-threshold", std::to_string(n.eager_threshold_bytes)});
      // Version 2 calibrations: the CPU work of both ranks of a shared-memory message (docs/guides/calibration.md).
      if (not n.copy_overhead.empty())
        m.zone_properties.push_back({"gridcast:copy-overhead", format_overhead_points(n.copy_overhead)});
    }
    // The time of a local copy on one core by size, with which collectives charge the copies MPI makes
    // without a message (docs/reference/collectives.md, "Local copies"): the measured memcpy curve
    // (compute.memcpy, source just written) where the calibration has it. Older calibrations: 2/3 of
    // the measured sum of two buffers (compute.reduction, a[i] += b[i]: 3 streams of memory traffic, a
    // copy moves 2), which over-charges copies that fit a cache about 2x on this machine (a compiled
    // sum loop is slower than memcpy there: 64 KiB in 1.03 us against 0.48 us measured); without that
    // curve either, the STREAM triad rate, which counts traffic (2 bytes a byte copied).
    {
      std::vector<OverheadPoint> copy;
      for (const SizedTiming& r : calibration->compute.memcpy)
        copy.push_back({r.bytes, r.time_s.median});
      if (copy.empty())
        for (const SizedTiming& r : calibration->compute.reduction)
          if (r.bytes > 0 && r.time_s.median > 0)
            copy.push_back({r.bytes, r.time_s.median * 2.0 / 3.0});
      const double triad_Bps = calibration->compute.stream_triad_Bps.median;
      if (copy.empty() && triad_Bps > 0)
        for (std::uint64_t bytes : {std::uint64_t{1} << 20, std::uint64_t{1} << 30})
          copy.push_back({bytes, 2.0 * static_cast<double>(bytes) / triad_Bps});
      if (not copy.empty())
        m.zone_properties.push_back({"gridcast:memcpy-time", format_overhead_points(copy)});
    }
    // GPU runtime costs measured by `gridcast calibrate` replace the emulator's defaults (docs/guides/gpu.md);
    // zero means not measured.
    if (calibration->gpu) {
      const GpuCalibration& g = *calibration->gpu;
      if (g.malloc_s > 0)
        m.zone_properties.push_back({"gridcast:gpu-malloc-s", format_number(g.malloc_s)});
      if (g.free_s > 0)
        m.zone_properties.push_back({"gridcast:gpu-free-s", format_number(g.free_s)});
      if (g.host_alloc_s_per_byte > 0)
        m.zone_properties.push_back({"gridcast:gpu-host-alloc-s-per-byte", format_number(g.host_alloc_s_per_byte)});
    }
  }
  return std::move(m);
}

}  // namespace gridcast::platform
