#include "platform_support.hpp"

#include <catch2/catch.hpp>

using namespace gridcast::test;

namespace {

json two_nodes()
{
  return spec_json(pcie_kind(1), 2, {{"topology", "star"}});
}

}  // namespace

TEST_CASE("platform cli: generates, checks and summarizes; same bytes every run", "[platform][cli]")
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
  write_jsonl_profile(dir / "prof", {R"({"op":"init","fn":"MPI_Init"}
{"op":"compute","fn":"compute","seconds":0.001}
{"op":"send","fn":"MPI_Send","peer":1,"tag":0,"bytes":1000000}
{"op":"finalize","fn":"MPI_Finalize"}
)",
                                     R"({"op":"init","fn":"MPI_Init"}
{"op":"recv","fn":"MPI_Recv","peer":0,"tag":0,"bytes":1000000}
{"op":"finalize","fn":"MPI_Finalize"}
)"});
  auto r = run_gridcast("replay " + (dir / "prof").string() + " --platform " + (dir / "p.xml").string() +
                        " --ranks-per-host 1 --out " + (dir / "out").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string prediction = read_file(dir / "out" / "prediction.json");
  CHECK_THAT(prediction, Catch::Contains("\"node-0\"") && Catch::Contains("\"node-1\""));
  CHECK_THAT(prediction, !Catch::Contains("gpu-0\""));
}
