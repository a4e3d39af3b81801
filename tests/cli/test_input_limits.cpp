// Inputs that would exhaust memory or run for days are input errors: refused before the run (exit 1), the
// limit named and how to raise it. Each case is the exact reproducer of a run that grew without bound
// before the limits existed.
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <string>

using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

const std::string kSourceDir = GRIDCAST_SOURCE_DIR;

std::string replace_first(std::string s, const std::string& from, const std::string& to)
{
  s.replace(s.find(from), from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("limits: a spec whose node count is 1e9 is refused naming --max-elements", "[cli][limits]")
{
  TempDir dir;
  const std::string spec = read_file(kSourceDir + "/platforms/scale-up/spec.json");
  write_file(dir / "huge.json", replace_first(spec, "\"count\": 1 }", "\"count\": 1000000000 }"));
  auto huge = run_gridcast("platform " + (dir / "huge.json").string() + " -o " + (dir / "p.xml").string());
  INFO(huge.output);
  CHECK(huge.exit_code == 1);
  CHECK_THAT(huge.output, Catch::Contains("huge.json: key 'nodes'") && Catch::Contains("more than 4000000") &&
                              Catch::Contains("--max-elements"));
  CHECK_FALSE(std::filesystem::exists(dir / "p.xml"));
  // The limit is the option's: the one-node spec fits the default, not a limit of 10.
  write_file(dir / "one.json", spec);
  CHECK(run_gridcast("platform " + (dir / "one.json").string() + " -o " + (dir / "p.xml").string()).exit_code == 0);
  auto small = run_gridcast("platform " + (dir / "one.json").string() + " -o " + (dir / "q.xml").string() +
                            " --max-elements 10");
  CHECK(small.exit_code == 1);
  CHECK_THAT(small.output, Catch::Contains("more than 10 hosts, links and routes"));
}

TEST_CASE("limits: 10^12 iterations of the model's loop are refused by predict and synth naming --max-calls",
          "[cli][limits]")
{
  TempDir dir;
  const std::string model    = kSourceDir + "/examples/predict-stencil/model.json";
  const std::string platform = kSourceDir + "/examples/stencil3d/platform.xml";
  // The outer loop runs Nw/4 times: Nw 4e12 is 10^12 iterations.
  auto predict = run_gridcast("predict " + model + " --nw 4e12 --np 4 --platform " + platform + " --out " +
                              (dir / "p").string());
  INFO(predict.output);
  CHECK(predict.exit_code == 1);
  CHECK_THAT(predict.output, Catch::Contains("model.json: at Nw 4e+12, Np 4 the model gives 245000000000008 calls") &&
                                 Catch::Contains("--max-calls"));
  CHECK_FALSE(std::filesystem::exists(dir / "p" / "prediction.json"));
  auto synth = run_gridcast("synth " + model + " --nw 4e12 --np 4 --out " + (dir / "s").string());
  CHECK(synth.exit_code == 1);
  CHECK_THAT(synth.output, Catch::Contains("--max-calls"));
  CHECK_FALSE(std::filesystem::exists(dir / "s"));
  // Raised, the limit lets a run through: a small one refused at a limit of 100 calls, taken at the default.
  CHECK(run_gridcast("synth " + model + " --nw 8 --np 4 --max-calls 100 --out " + (dir / "t").string()).exit_code == 1);
  CHECK(run_gridcast("synth " + model + " --nw 8 --np 4 --out " + (dir / "t").string()).exit_code == 0);
}

TEST_CASE("limits: --np of 2^31-1 is refused before anything is allocated for it", "[cli][limits]")
{
  TempDir dir;
  const std::string model = kSourceDir + "/examples/predict-stencil/model.json";
  auto predict = run_gridcast("predict " + model + " --nw 8 --np 2147483647 --platform " + kSourceDir +
                              "/examples/stencil3d/platform.xml");
  INFO(predict.output);
  CHECK(predict.exit_code == 1);
  CHECK_THAT(predict.output, Catch::Contains("--np must be at most 16777216"));
  auto synth = run_gridcast("synth " + model + " --nw 8 --np 2147483647 --out " + (dir / "s").string());
  CHECK(synth.exit_code == 1);
  CHECK_THAT(synth.output, Catch::Contains("--np must be at most 16777216"));
}

TEST_CASE("limits: /dev/zero as a trace is refused, not read until memory runs out", "[cli][limits]")
{
  TempDir dir;
  write_file(dir / "platform.xml", gridcast::test::cluster_xml(1));
  auto r = run_gridcast("replay /dev/zero --platform " + (dir / "platform.xml").string());
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("/dev/zero: not a regular file"));
}
