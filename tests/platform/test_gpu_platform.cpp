// The platform generator carries a calibration's GPU runtime costs to the root zone (docs/guides/gpu.md).
#include "../platform/platform_support.hpp"

#include <catch2/catch.hpp>

using namespace gridcast;
using namespace gridcast::test;

TEST_CASE("gpu platform: a calibration's GPU costs become root-zone properties", "[gpu][platform]")
{
  platform::Calibration cal = calibration();
  platform::GpuCalibration g;
  g.malloc_s = 1.5e-4;
  g.free_s = 0;  // not measured: no property, the emulator keeps its default
  g.host_alloc_s_per_byte = 2.5e-10;
  cal.gpu = g;
  platform::PlatformModel m = build(spec_json(pcie_kind(0, false), 1), &cal);
  auto prop = [&](const std::string& name) { return zone_property(m, name); };
  CHECK(prop("gridcast:gpu-malloc-s") == "0.00015");
  CHECK(prop("gridcast:gpu-free-s") == "(absent)");
  CHECK(prop("gridcast:gpu-host-alloc-s-per-byte") == "2.5e-10");
  platform::PlatformModel plain = build(spec_json(pcie_kind(0, false), 1));
  for (const auto& p : plain.zone_properties)
    CHECK(p.name.rfind("gridcast:gpu-", 0) == std::string::npos);
}
