// Helpers of the platform generator tests: small specs as JSON, generation, and route inspection in a
// SimGrid engine (each TEST_CASE runs in its own process, so each may own one engine).
#pragma once

#include "../support.hpp"

#include "gridcast/platform/generator.hpp"
#include "gridcast/platform/spec.hpp"

#include <nlohmann/json.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gridcast::test {

using nlohmann::json;

inline json link_json(const std::string& bw, const std::string& lat)
{
  return json{{"bandwidth", bw}, {"latency", lat}};
}

/// A node kind: 2 sockets x 4 cores, `gpus` GPUs on a PCIe tree (no switches), one NIC per node.
inline json pcie_kind(int gpus, bool nic = true)
{
  json k = {{"sockets", 2},
            {"cores_per_socket", 4},
            {"core_speed", "10Gf"},
            {"memory", "64GiB"},
            {"memory_link", link_json("50GBps", "0.1us")},
            {"loopback", link_json("8GBps", "0.4us")},
            {"inter_socket", link_json("20GBps", "0.2us")}};
  if (gpus > 0)
    k["gpus"] = {{"count", gpus}, {"speed", "10Tf"}, {"memory", "16GiB"}, {"copy", link_json("300GBps", "5us")}};
  k["pcie"] = {{"device_up", link_json("13GBps", "1us")},
               {"device_down", link_json("12GBps", "1us")},
               {"root", link_json("24GBps", "0.1us")}};
  if (nic)
    k["nics"] = {{"count", 1}, {"link", link_json("100Gbps", "0.6us")}};
  return k;
}

/// `nodes` nodes of `kind` on `network` (null: none).
inline json spec_json(const json& kind, int nodes, const json& network = nullptr)
{
  json s = {{"name", "test"}, {"node_kinds", {{"k", kind}}}, {"nodes", json::array({{{"kind", "k"}, {"count", nodes}}})}};
  if (not network.is_null())
    s["network"] = network;
  return s;
}

/// A calibration with the figures a spec may leave out: core speed (2.5 Gf/s), network latency (0.4 us)
/// and bandwidth (7.5 GB/s), eager threshold (4096 B) and piecewise latency and bandwidth factors.
inline platform::Calibration calibration()
{
  platform::Calibration c;
  c.host.name                = "calhost";
  c.host.date                = "2026-11-22";
  c.compute.core_speed_flops = 2.5e9;
  platform::NetworkCalibration n;
  n.latency_s             = 4e-7;
  n.bandwidth_Bps         = 7.5e9;
  n.eager_threshold_bytes = 4096;
  n.lat_factor            = {{0, 1.5}, {4096, 2.0}};
  n.bw_factor             = {{0, 0.5}, {65536, 0.9}};
  c.network               = n;
  return c;
}

/// The value of a root-zone property of `m`, or "(absent)".
inline std::string zone_property(const platform::PlatformModel& m, const std::string& name)
{
  for (const auto& p : m.zone_properties)
    if (p.name == name)
      return p.value;
  return "(absent)";
}

inline platform::PlatformModel build(const json& spec, const platform::Calibration* cal = nullptr)
{
  return platform::build_platform(platform::spec_from_json(spec, "spec.json"), cal, "spec.json");
}

/// A platform loaded into this process's engine.
class Loaded {
public:
  explicit Loaded(const platform::PlatformModel& model)
  {
    write_file(dir_ / "platform.xml", platform::render_xml(model));
    engine_ = std::make_unique<simgrid::s4u::Engine>(&args_.argc, args_.argv.data());
    engine_->load_platform((dir_ / "platform.xml").string());
    engine_->seal_platform();
  }
  simgrid::s4u::Engine& engine() { return *engine_; }

  /// Names of the links of the route from host `a` to host `b` (with _UP/_DOWN for split-duplex ones).
  std::vector<std::string> route(const std::string& a, const std::string& b, double* latency = nullptr)
  {
    std::vector<simgrid::s4u::Link*> links;
    double lat = 0;
    engine_->host_by_name(a)->route_to(engine_->host_by_name(b), links, &lat);
    if (latency != nullptr)
      *latency = lat;
    std::vector<std::string> names;
    for (auto* l : links)
      names.push_back(l->get_name());
    return names;
  }

private:
  TempDir dir_;
  EngineArgs args_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
};

inline bool contains(const std::vector<std::string>& v, const std::string& s)
{
  for (const auto& x : v)
    if (x == s)
      return true;
  return false;
}

}  // namespace gridcast::test
