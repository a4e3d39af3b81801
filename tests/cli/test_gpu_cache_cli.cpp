// `gridcast gpu-cache`: a trace written by hand through the H100 data sheet, the metrics file, and the
// errors of bad sheets, bad traces and kernels that fit no SM (exit 1, naming the file and the key).
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <string>

using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

const std::string kH100 = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/gpus/h100.json";

std::string load(unsigned cta, unsigned warp, unsigned long base)
{
  std::string addrs;
  for (unsigned lane = 0; lane < 32; ++lane)
    addrs += (lane ? "," : "") + std::to_string(base + 4 * lane);
  return "{\"cta\":" + std::to_string(cta) + ",\"warp\":" + std::to_string(warp) +
         ",\"op\":\"ld.global\",\"size\":4,\"mask\":\"0xffffffff\",\"addrs\":[" + addrs + "]}\n";
}

std::string trace(const std::string& kernel_extra = "")
{
  // Two warps of one CTA read the same line: the second finds it in L1. A second CTA reads another line.
  return "{\"format\":\"gridcast-memtrace\",\"version\":1}\n"
         "{\"kernel\":\"copy\",\"launch_id\":0,\"grid\":[2,1,1],\"block\":[64,1,1]" + kernel_extra + "}\n" +
         load(0, 0, 4096) + load(0, 1, 4096) + load(1, 0, 8192);
}

}  // namespace

TEST_CASE("gpu-cache cli: a trace through the H100 sheet prints a table and writes the metrics")
{
  TempDir dir;
  write_file(dir / "t.jsonl", trace(",\"flops\":1000"));
  auto r = run_gridcast("gpu-cache " + (dir / "t.jsonl").string() + " --gpu " + kH100 + " -o " + (dir / "m.json").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("H100 SXM5 80GB") && Catch::Contains("copy") && Catch::Contains("wrote"));
  const std::string m = read_file(dir / "m.json");
  CHECK_THAT(m, Catch::Contains("\"warp_accesses\": 3"));
  CHECK_THAT(m, Catch::Contains("\"accesses\": 12") && Catch::Contains("\"hits\": 4"));
  CHECK_THAT(m, Catch::Contains("\"overall\": 0.3333333333333333"));
  CHECK_THAT(m, Catch::Contains("\"read_sectors\": 8"));
  CHECK_THAT(m, Catch::Contains("\"write\": null"));
  CHECK_THAT(m, Catch::Contains("\"bound\": \"launch\""));
  // The same input, the same bytes.
  REQUIRE(run_gridcast("gpu-cache " + (dir / "t.jsonl").string() + " --gpu " + kH100 + " -q -o " + (dir / "m2.json").string())
              .exit_code == 0);
  CHECK(read_file(dir / "m2.json") == m);
}

TEST_CASE("gpu-cache cli: a bad data sheet is an error naming the file and the key")
{
  TempDir dir;
  write_file(dir / "t.jsonl", trace());
  std::string sheet = read_file(kH100);
  sheet.replace(sheet.find("\"slices\""), 8, "\"banks\"");
  write_file(dir / "gpu.json", sheet);
  auto r = run_gridcast("gpu-cache " + (dir / "t.jsonl").string() + " --gpu " + (dir / "gpu.json").string());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains((dir / "gpu.json").string()) && Catch::Contains("l2.banks") &&
                           Catch::Contains("unknown key"));
  r = run_gridcast("gpu-cache " + (dir / "t.jsonl").string() + " --gpu " + (dir / "none.json").string());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("none.json") && Catch::Contains("cannot open"));
}

TEST_CASE("gpu-cache cli: bad traces and kernels that fit no SM are errors naming the trace")
{
  TempDir dir;
  write_file(dir / "t.jsonl", trace(",\"shared_bytes\":300000"));
  auto r = run_gridcast("gpu-cache " + (dir / "t.jsonl").string() + " --gpu " + kH100);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains((dir / "t.jsonl").string()) && Catch::Contains("kernel 'copy'") &&
                           Catch::Contains("does not fit"));
  std::string bad = trace();
  bad.replace(bad.find("ld.global"), 9, "ld.texture");
  write_file(dir / "bad.jsonl", bad);
  r = run_gridcast("gpu-cache " + (dir / "bad.jsonl").string() + " --gpu " + kH100);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("bad.jsonl:3"));
}

TEST_CASE("gpu-cache cli: usage errors")
{
  auto r = run_gridcast("gpu-cache t.jsonl");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--gpu"));
  r = run_gridcast("gpu-cache t.jsonl --gpu " + kH100 + " --format pcap");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--format must be"));
  r = run_gridcast("gpu-cache t.jsonl --gpu " + kH100 + " --precision fp16");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--precision must be"));
}

TEST_CASE("gpu-cache cli: replay --gpu-model cache prices the launches of a traced kernel on the sheet's GPU")
{
  TempDir dir;
  // The memory trace names the kernel demangled with its parameters; the profile has it mangled.
  std::string t = trace(",\"flops\":1000");
  t.replace(t.find("\"copy\""), 6, "\"copy(float const*)\"");
  write_file(dir / "traces" / "copy.jsonl", t);
  const std::string launch = "{\"op\":\"gpu_kernel\",\"fn\":\"_Z4copyPKf\",\"stream\":1}\n";
  const std::string other  = "{\"op\":\"gpu_kernel\",\"fn\":\"_Z5otherv\",\"stream\":1,\"device_seconds\":0.001}\n";
  const std::string sync   = "{\"op\":\"gpu_sync\",\"fn\":\"cudaDeviceSynchronize\"}\n";
  gridcast::test::write_jsonl_profile(dir / "prof", {"{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n" + launch + launch + other +
                                                     sync + "{\"op\":\"finalize\",\"fn\":\"MPI_Finalize\"}\n"});
  const std::string platform = std::string(GRIDCAST_SOURCE_DIR) + "/platforms/dgx-h100/platform.xml";
  const std::string base     = "replay " + (dir / "prof").string() + " --platform " + platform;
  auto r = run_gridcast(base + " --gpu-model cache --gpu-traces " + (dir / "traces").string() + " --gpu-sheet " + kH100 +
                        " -o " + (dir / "out").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("GPU kernels: 2 launches priced by the memory-system model on H100 SXM5 80GB") &&
                           Catch::Contains("without a memory trace (recorded times kept): _Z5otherv x1"));
  const std::string prediction = read_file(dir / "out" / "prediction.json");
  CHECK_THAT(prediction, Catch::Contains("\"gpu_model\"") && Catch::Contains("\"priced_launches\": 2") &&
                             Catch::Contains("\"_Z5otherv\": 1"));
  CHECK_THAT(prediction, Catch::Contains("\"gpu_sheet\"") && Catch::Contains("\"gpu_memory_trace\""));
  // Deterministic, and a setting of the cache model without it is refused, never ignored.
  auto again = run_gridcast(base + " --gpu-model cache --gpu-traces " + (dir / "traces").string() + " --gpu-sheet " +
                            kH100 + " -o " + (dir / "out2").string());
  REQUIRE(again.exit_code == 0);
  CHECK(read_file(dir / "out2" / "prediction.json") == prediction);
  auto refused = run_gridcast(base + " --gpu-sheet " + kH100);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Catch::Contains("apply to --gpu-model cache only"));
  auto missing = run_gridcast(base + " --gpu-model cache --gpu-sheet " + kH100);
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("needs --gpu-traces"));
  auto no_folder = run_gridcast(base + " --gpu-model cache --gpu-traces " + (dir / "nothing").string() + " --gpu-sheet " + kH100);
  CHECK(no_folder.exit_code == 1);
  CHECK_THAT(no_folder.output, Catch::Contains("nothing") && Catch::Contains("no such file or folder"));
}
