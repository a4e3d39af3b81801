#include "platform_support.hpp"

#include "gridcast/calibration/calibration.hpp"

#include <catch2/catch.hpp>

using namespace gridcast::test;

namespace {

json two_nodes()
{
  return spec_json(pcie_kind(1), 2, {{"topology", "star"}});
}

}  // namespace

TEST_CASE("platform cli: generates, checks and summarizes, same bytes every run", "[platform][cli]")
{
  TempDir dir;
  write_file(dir / "spec.json", two_nodes().dump(2));
  auto first = run_gridcast("platform " + (dir / "spec.json").string() + " -o " + (dir / "a.xml").string());
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK_THAT(first.output, Catch::Contains("4 hosts (2 CPU, 2 GPU)") && Catch::Contains("routes checked: 16") &&
                               Catch::Contains("bisection bandwidth 12.5 GB/s"));
  auto second = run_gridcast("platform " + (dir / "spec.json").string() + " -o " + (dir / "b.xml").string());
  REQUIRE(second.exit_code == 0);
  CHECK(read_file(dir / "a.xml") == read_file(dir / "b.xml"));
  CHECK_FALSE(std::filesystem::exists(dir / "a.xml.tmp"));
  CHECK(run_gridcast("platform --help").exit_code == 0);
}

TEST_CASE("platform cli: an output that cannot be written exits 1 naming it, the old file intact", "[platform][cli]")
{
  TempDir dir;
  write_file(dir / "spec.json", two_nodes().dump(2));
  if (std::filesystem::exists("/dev/full")) {  // the disk is full: not "wrote /dev/full" and exit 0
    auto full = run_gridcast("platform " + (dir / "spec.json").string() + " -o /dev/full");
    INFO(full.output);
    CHECK(full.exit_code == 1);
    CHECK_THAT(full.output, Catch::Contains("/dev/full") && Catch::Contains("cannot write the platform"));
  }
  std::filesystem::create_directories(dir / "a-directory");
  auto directory = run_gridcast("platform " + (dir / "spec.json").string() + " -o " + (dir / "a-directory").string());
  CHECK(directory.exit_code == 1);
  CHECK_THAT(directory.output, Catch::Contains("a-directory") && Catch::Contains("is a directory"));
  auto as_spec = run_gridcast("platform " + (dir / "a-directory").string() + " -o " + (dir / "x.xml").string());
  CHECK(as_spec.exit_code == 1);
  CHECK_THAT(as_spec.output, Catch::Contains("a-directory") && Catch::Contains("is a directory"));
}

TEST_CASE("platform cli: bad input exits 1 with the file and key path, writes nothing", "[platform][cli]")
{
  TempDir dir;
  json s                                   = two_nodes();
  s["node_kinds"]["k"]["nics"]["link"]["bandwidth"] = "-100Gbps";
  write_file(dir / "spec.json", s.dump());
  auto r = run_gridcast("platform " + (dir / "spec.json").string() + " -o " + (dir / "p.xml").string());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("spec.json") && Catch::Contains("node_kinds.k.nics.link.bandwidth"));
  CHECK_FALSE(std::filesystem::exists(dir / "p.xml"));
  CHECK(run_gridcast("platform " + (dir / "spec.json").string()).exit_code == 1);  // no -o
}

TEST_CASE("platform cli: a trace replays on a generated 2-node platform", "[platform][cli]")
{
  TempDir dir;
  write_file(dir / "spec.json", two_nodes().dump(2));
  REQUIRE(run_gridcast("platform " + (dir / "spec.json").string() + " -o " + (dir / "p.xml").string()).exit_code == 0);
  // Rank 0 computes then sends 1 MB to rank 1 over the network: one rank per CPU host (GPU hosts run
  // no rank).
  write_jsonl_profile(dir / "prof", one_message_ranks("1000000", "0.001"));
  auto r = run_gridcast("replay " + (dir / "prof").string() + " --platform " + (dir / "p.xml").string() +
                        " --ranks-per-host 1 --out " + (dir / "out").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string prediction = read_file(dir / "out" / "prediction.json");
  CHECK_THAT(prediction, Catch::Contains("\"node-0\"") && Catch::Contains("\"node-1\""));
  CHECK_THAT(prediction, !Catch::Contains("gpu-0\""));
}

TEST_CASE("platform cli: a calibration fills the figures and its factors reach the root zone", "[platform][cli]")
{
  TempDir dir;
  json k = pcie_kind(0);
  k.erase("core_speed");
  k.erase("loopback");
  write_file(dir / "spec.json", spec_json(k, 2, {{"topology", "star"}}).dump(2));
  // The figures of calibration(), and the measurements a written calibration.json carries besides.
  gridcast::platform::Calibration cal = calibration();
  cal.host.cores               = 2;
  cal.host.cpu_model           = "test cpu";
  cal.host.gridcast_version    = "0.1.0";
  cal.compute.dgemm_flops      = {2.5e9, 2.4e9, 2.6e9, 5};
  cal.compute.stream_triad_Bps = {1.2e10, 1.1e10, 1.3e10, 5};
  cal.compute.scalar_flops     = {1.1e9, 1e9, 1.2e9, 5};
  cal.network->launcher        = "mpirun";
  cal.network->pingpong        = {{1, {5e-7, 4e-7, 6e-7, 5}}, {4194304, {9e-4, 8e-4, 1e-3, 5}}};
  gridcast::platform::write_calibration(dir / "calibration.json", cal);

  const std::string spec = (dir / "spec.json").string();
  auto missing           = run_gridcast("platform " + spec + " -o " + (dir / "p.xml").string());
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("node_kinds.k.core_speed"));

  auto r = run_gridcast("platform " + spec + " --calibration " + (dir / "calibration.json").string() + " -o " +
                        (dir / "p.xml").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string xml = read_file(dir / "p.xml");
  CHECK_THAT(xml, Catch::Contains("<prop id=\"gridcast:lat-factor\" value=\"0:1.5;4096:2\"/>") &&
                      Catch::Contains("<prop id=\"gridcast:eager-threshold\" value=\"4096\"/>") &&
                      Catch::Contains("<host id=\"node-1\" speed=\"2.5e+09f\" core=\"8\">") &&
                      Catch::Contains("bandwidth=\"7.5e+09Bps\" latency=\"4e-07s\" sharing_policy=\"FATPIPE\""));
  // The emulator runs on it (and installs the calibrated factors from the root zone).
  write_jsonl_profile(dir / "prof", one_message_ranks("1000"));
  auto replay = run_gridcast("replay " + (dir / "prof").string() + " --platform " + (dir / "p.xml").string() +
                             " --ranks-per-host 1");
  INFO(replay.output);
  CHECK(replay.exit_code == 0);
}
