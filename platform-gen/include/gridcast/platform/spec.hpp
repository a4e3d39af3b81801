// The platform spec (docs/guides/platforms.md): a typed JSON description of a machine -- node kinds with their
// inside (sockets, GPUs, PCIe tree, NVLink, NICs), how many nodes of each kind, and the network between
// nodes. Figures are strings with units ("25GBps", "1.3us"). A figure the spec leaves out may come from a
// calibration (calibration.hpp) when `resolve` is given one; a figure needed and found in neither is an
// InputError naming the key path.
#pragma once

#include "gridcast/calibration/calibration.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::platform {

/// One link's figures, as written in the spec: either may be absent (to come from a calibration).
struct LinkSpec {
  std::optional<double> bandwidth_Bps;
  std::optional<double> latency_s;
  std::string key;  ///< key path of this object in the spec ("node_kinds.dgx.pcie.root"), for errors
  bool given = false;  ///< the object appears in the spec
};

/// Link figures once resolved: both present, bandwidth > 0, latency >= 0.
struct LinkFigures {
  double bandwidth_Bps = 0;
  double latency_s     = 0;
};

struct GpuSpec {
  std::optional<int> count;
  std::optional<double> speed_flops;
  std::optional<double> memory_bytes;
  LinkSpec copy;  ///< device-to-device copy within one GPU: the GPU host's loopback
  std::string key;
};

/// PCIe tree of one node (Stanisic et al. 2014, Fig. 2(b)): every device has its own up link (device to host) and
/// down link (host to device), with different bandwidths; every transfer through a socket's root
/// complex crosses one shared link (the bus limit). Optional PCIe switches sit between devices and the
/// root complex; transfers between devices under one switch do not reach the root complex.
struct PcieSpec {
  LinkSpec device_up, device_down;  ///< per device (GPU or NIC), one direction each
  LinkSpec root;                    ///< the shared root-complex link of each socket
  int switches_per_socket = 0;
  LinkSpec switch_link;  ///< switch to root complex, full duplex; needed when switches_per_socket > 0
  std::string key;
};

enum class NvlinkTopology { Pairwise, NvSwitch };

struct NvlinkSpec {
  NvlinkTopology topology = NvlinkTopology::Pairwise;
  LinkSpec link;                           ///< one pair's link (pairwise) or one GPU's port (nvswitch), per direction
  std::vector<std::pair<int, int>> pairs;  ///< pairwise only; empty = all pairs
  std::optional<LinkSpec> host;            ///< GPUs attach to the CPU over NVLink (POWER9), not PCIe
  std::string key;
};

enum class NicAttach { Node, Gpu };

struct NicSpec {
  int count        = 1;
  NicAttach attach = NicAttach::Node;
  LinkSpec link;  ///< the NIC's port and cable into the network, full duplex
  std::string key;
};

struct NodeKindSpec {
  std::string name;
  std::string key;  ///< "node_kinds.<name>"
  int sockets          = 1;
  int cores_per_socket = 0;
  std::optional<double> core_speed_flops;
  std::optional<double> memory_bytes;
  /// "llc": the node's last-level cache, all sockets together (gridcast:llc-bytes; docs/reference/collectives.md,
  /// "Cold copies"); absent: from the calibration's memcpy curve, else unknown.
  std::optional<double> llc_bytes;
  LinkSpec memory_link;   ///< CPU memory to a socket's root complex (DMA), full duplex
  LinkSpec loopback;      ///< two ranks on the CPU host (shared memory)
  LinkSpec memory_bus;    ///< optional: capacity concurrent loopback transfers share (latency default 0)
  LinkSpec inter_socket;  ///< socket to socket (UPI, X-Bus), full duplex
  std::optional<GpuSpec> gpus;
  std::optional<PcieSpec> pcie;
  std::optional<NvlinkSpec> nvlink;
  std::optional<NicSpec> nics;
};

struct NodeGroupSpec {
  std::string kind;
  int count = 0;
  std::string key;  ///< "nodes[i]"
};

enum class Topology { Star, FatTree, Torus, Dragonfly };

/// Fat tree in SimGrid's XGFT notation: level i (1 = leaves) has `down[i]` children per switch and each
/// element of level i-1 has `up[i]` parents, with `parallel[i]` links to each. product(down) = number of
/// network endpoints (NICs).
struct FatTreeSpec {
  std::vector<int> down, up, parallel;
};

struct TorusSpec {
  std::vector<int> dims;
};

struct DragonflySpec {
  int groups = 0, routers_per_group = 0, endpoints_per_router = 0, global_links = 1;
  LinkSpec local, global;  ///< default to the network's `link`
};

struct NetworkSpec {
  Topology topology = Topology::Star;
  LinkSpec link;  ///< switch-to-switch (and torus/dragonfly router-to-router) link, per port
  FatTreeSpec fat_tree;
  TorusSpec torus;
  DragonflySpec dragonfly;
  std::string key = "network";
};

struct PlatformSpec {
  std::string file;  ///< where it was read from, for errors
  std::string name;
  std::string description;
  std::vector<std::string> sources;  ///< citations of the figures (data sheets, papers)
  std::vector<NodeKindSpec> kinds;   ///< in the order of their names
  std::vector<NodeGroupSpec> nodes;
  std::optional<NetworkSpec> network;
};

/// Parses a spec document; `file` names it in errors. Unknown keys, units that do not parse, zero or
/// negative bandwidths and inconsistent counts are InputErrors with the key path.
PlatformSpec spec_from_json(const nlohmann::json& j, const std::string& file);
PlatformSpec read_spec(const std::filesystem::path& file);

/// Figures of a node kind once spec and calibration are combined (calibration.hpp fills what the spec
/// leaves out). Only the figures the node's structure uses are required.
struct ResolvedGpu {
  int count           = 0;
  double speed_flops  = 0;
  double memory_bytes = 0;  ///< 0 = unknown
  LinkFigures copy;
};

/// SimGrid's network/crosstraffic weight: a flow also uses 5% of its rate on its reverse route's links.
inline constexpr double kCrossTrafficWeight = 1.05;

struct ResolvedKind {
  const NodeKindSpec* spec = nullptr;
  double core_speed_flops  = 0;
  LinkFigures loopback;
  /// SHARED link on the loopback route beside the per-flow loopback: absent when neither the spec
  /// (`memory_bus`) nor the calibration (`network.shared_bandwidth_Bps`) gives it.
  std::optional<LinkFigures> memory_bus;
  /// The node's last-level cache in bytes: the spec's `llc`, else the knee of the calibration's memcpy
  /// curve (cache_bytes_from_memcpy), else absent (no gridcast:llc-bytes: copies charged as before).
  std::optional<double> llc_bytes;
  std::optional<ResolvedGpu> gpus;
  // Used only where the structure needs them (PCIe present, several sockets, ...):
  LinkFigures memory_link, inter_socket, device_up, device_down, root, switch_link, nvlink, nvlink_host, nic;
};

/// Fills every figure the platform needs from the spec, then from `calibration` (may be null). A figure
/// in neither: InputError naming the spec file and the key path (and where a calibration could give it).
std::vector<ResolvedKind> resolve(const PlatformSpec& spec, const Calibration* calibration);

}  // namespace gridcast::platform
