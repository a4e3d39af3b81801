// The foreign trace formats, from files written by hand to what NVBit's mem_trace tool prints and what
// Accel-Sim's tracer writes (docs/reference/gpu-memory-traces.md gives both).
#include "gpu_cache_support.hpp"

#include <cinttypes>
#include <cstdio>

using namespace gridcast;
using namespace gridcast::gpu_cache;
using namespace gridcast::test;

namespace {

/// 32 addresses as mem_trace prints them ("0x%016lx " each): base + lane * stride for the lanes of
/// `mask`, 0x0 for the others.
std::string lanes(std::uint64_t base, std::uint64_t stride, std::uint32_t mask = 0xffffffffu, int count = 32)
{
  std::string out;
  char text[32];
  for (int lane = 0; lane < count; ++lane) {
    std::snprintf(text, sizeof text, "0x%016" PRIx64 " ", (mask >> (lane % 32)) & 1 ? base + lane * stride : 0);
    out += text;
  }
  return out;
}

const std::string kCtx = "MEMTRACE: CTX 0x00005581a2b3c4d0 - ";

std::string launch_line(int id, const std::string& grid, const std::string& block, const std::string& name = "vecAdd(double*, double*, double*, int)")
{
  return kCtx + "LAUNCH - Kernel pc 0x00007f3a2c000100 - Kernel name " + name + " - grid launch id " +
         std::to_string(id) + " - grid size " + grid + " - block size " + block +
         " - nregs 16 - shmem 1024 - cuda stream id 0\n";
}

std::string access_line(int id, const std::string& cta, int warp, const std::string& op, const std::string& addrs)
{
  return kCtx + "grid_launch_id " + std::to_string(id) + " - CTA " + cta + " - warp " + std::to_string(warp) +
         " - " + op + " - " + addrs + "\n";
}

std::vector<WarpAccess> read_all(TraceReader& reader, std::vector<KernelLaunch>& kernels)
{
  std::vector<WarpAccess> out;
  KernelLaunch k;
  WarpAccess a;
  while (reader.next_kernel(k)) {
    kernels.push_back(k);
    while (reader.next_access(a))
      out.push_back(a);
  }
  return out;
}

}  // namespace

TEST_CASE("gpu-cache NVBit: mem_trace output with its banner, the application's lines and two launches")
{
  TempDir dir;
  const std::string text =
      std::string(100, '-') + "\nNVBit (NVidia Binary Instrumentation Tool v1.7.1) Build Time Nov 20 2026\n" +
      "         INSTR_BEGIN = 0 - Beginning of the instruction interval where to apply instrumentation\n" +
      launch_line(0, "2,1,1", "64,1,1") +
      access_line(0, "1,0,0", 4, "LDG.E.64.SYS", lanes(0x7f0000000200, 8)) +
      access_line(0, "1,0,0", 4, "STS", lanes(0x10, 4)) +  // shared memory: not a data-cache access
      access_line(0, "0,0,0", 7, "STG.E.64", lanes(0x7f0000100000, 8, 0x0000ffffu)) +
      access_line(0, "1,0,0", 5, "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU", lanes(0x7f0000300000, 0, 0x1)) +
      access_line(0, "1,0,0", 4, "LDG.E.U8.CONSTANT", lanes(0x7f0000000000, 1)) +
      "Result: PASS\n" + launch_line(1, "1,2,1", "32,1,1", "void scale<float>(float*, int)") +
      access_line(1, "0,1,0", 0, "LDL.128", lanes(0x7ffff000, 16)) + access_line(1, "0,1,0", 0, "RED.E.ADD.STRONG.GPU", lanes(0x7f0000400000, 4)) +
      access_line(1, "0,0,0", 3, "LD.E", lanes(0x7f0000500000, 4, 0x80000000u)) +
      access_line(1, "0,0,0", 3, "ST.E.16", lanes(0x7f0000600000, 2));
  write_file(dir / "memtrace.txt", text);
  auto reader = open_trace(dir / "memtrace.txt");  // found by content
  CHECK_FALSE(reader->grouped_by_cta());
  std::vector<KernelLaunch> kernels;
  const auto accesses = read_all(*reader, kernels);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].name == "vecAdd(double*, double*, double*, int)");
  CHECK(kernels[0].launch_id == 0);
  CHECK(same_dim(kernels[0].grid, {2, 1, 1}));
  CHECK(same_dim(kernels[0].block, {64, 1, 1}));
  CHECK(kernels[0].registers_per_thread == 16);
  CHECK(kernels[0].shared_bytes_per_cta == 1024);
  CHECK(kernels[0].flops < 0);
  CHECK(kernels[1].name == "void scale<float>(float*, int)");
  CHECK(kernels[1].launch_id == 1);
  REQUIRE(accesses.size() == 8);
  // Launch 0: the SM warp slots 4 and 5 of CTA 1 are its warps 0 and 1, slot 7 of CTA 0 its warp 0.
  CHECK(accesses[0].cta == 1);
  CHECK(accesses[0].warp == 0);
  CHECK(accesses[0].kind == AccessKind::GlobalLoad);
  CHECK(accesses[0].bytes_per_lane == 8);
  CHECK(accesses[0].active_mask == 0xffffffffu);
  CHECK(accesses[0].address[31] == 0x7f0000000200 + 31 * 8);
  CHECK(accesses[0].sm == -1);
  CHECK(accesses[1].cta == 0);
  CHECK(accesses[1].warp == 0);
  CHECK(accesses[1].kind == AccessKind::GlobalStore);
  CHECK(accesses[1].active_mask == 0x0000ffffu);
  CHECK(accesses[2].warp == 1);
  CHECK(accesses[2].kind == AccessKind::GlobalAtomic);
  CHECK(accesses[2].bytes_per_lane == 4);
  CHECK(accesses[2].active_mask == 1);
  CHECK(accesses[3].warp == 0);
  CHECK(accesses[3].bytes_per_lane == 1);
  // Launch 1: CTA (0,1,0) of a 1x2 grid is CTA 1.
  CHECK(accesses[4].cta == 1);
  CHECK(accesses[4].kind == AccessKind::LocalLoad);
  CHECK(accesses[4].bytes_per_lane == 16);
  CHECK(accesses[5].kind == AccessKind::GlobalAtomic);
  CHECK(accesses[6].cta == 0);
  CHECK(accesses[6].kind == AccessKind::GlobalLoad);
  CHECK(accesses[6].active_mask == 0x80000000u);
  CHECK(accesses[6].address[31] == 0x7f0000500000 + 31 * 4);
  CHECK(accesses[7].kind == AccessKind::GlobalStore);
  CHECK(accesses[7].bytes_per_lane == 2);
}

TEST_CASE("gpu-cache NVBit: the lines of NVBit 1.4 and before (no MEMTRACE prefix) read too")
{
  TempDir dir;
  write_file(dir / "old.txt", "Kernel vecAdd(double*, double*, double*, int) - grid size 1,1,1 - block size 32,1,1 - "
                              "nregs 8 - shmem 0 - cuda stream id 0\n"
                              "CTA 0,0,0 - warp 0 - LDG.E - " + lanes(0x7f0000000000, 4) + "\n" +
                              "CTA 0,0,0 - warp 0 - STL - " + lanes(0x00fffd00, 4) + "\n");
  auto reader = open_trace(dir / "old.txt");
  std::vector<KernelLaunch> kernels;
  const auto accesses = read_all(*reader, kernels);
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].name == "vecAdd(double*, double*, double*, int)");
  CHECK(kernels[0].registers_per_thread == 8);
  REQUIRE(accesses.size() == 2);
  CHECK(accesses[1].kind == AccessKind::LocalStore);
}

TEST_CASE("gpu-cache NVBit: errors name the file and the line")
{
  TempDir dir;
  const std::string head = launch_line(0, "2,1,1", "32,1,1");
  auto check = [&](const std::string& text, const std::string& where, const std::string& reason) {
    write_file(dir / "bad.txt", text);
    const std::string message = trace_error(dir / "bad.txt", TraceFormat::NvbitMemTrace);
    INFO(message);
    CHECK(message.find(where) != std::string::npos);
    CHECK(message.find(reason) != std::string::npos);
  };
  check(access_line(0, "0,0,0", 0, "LDG.E", lanes(64, 4)), "bad.txt:1: ", "before any kernel launch line");
  check(head + access_line(0, "0,0,0", 0, "FOO.E", lanes(64, 4)), "bad.txt:2: ", "unknown memory instruction 'FOO.E'");
  check(head + access_line(0, "0,0,0", 0, "LDG.E", lanes(64, 4, ~0u, 33)), "bad.txt:2: ", "more than 32 addresses");
  check(head + access_line(0, "0,0,0", 0, "LDG.E", lanes(64, 4, ~0u, 20)), "bad.txt:2: ", "truncated: 20 addresses");
  check(head + access_line(0, "2,0,0", 0, "LDG.E", lanes(64, 4)), "bad.txt:2: ", "CTA 2,0,0 is outside the grid 2,1,1");
  check(head + access_line(0, "0,0,0", 0, "LDG.E", lanes(64, 4)) + access_line(0, "0,0,0", 1, "LDG.E", lanes(64, 4)),
        "bad.txt:3: ", "shows more warps than its 1");
  check(head + access_line(1, "0,0,0", 0, "LDG.E", lanes(64, 4)), "bad.txt:2: ", "an access of grid launch 1 within launch 0");
  check(head + access_line(0, "0,0,0", 0, "LDG.E", lanes(0, 0)), "bad.txt:2: ", "no active lane");
  check(head + access_line(0, "0,0,0", 0, "LDG.E", "0x40 0xZZ " + lanes(64, 4, ~0u, 30)), "bad.txt:2: ", "bad address '0xZZ'");
  check(head + access_line(0, "0,0", 0, "LDG.E", lanes(64, 4)), "bad.txt:2: ", "bad CTA");
  check(kCtx + "LAUNCH - Kernel pc 0x1 - Kernel name k - grid launch id 0 - grid size 1,1,1\n", "bad.txt:1: ",
        "needs the kernel name, grid size and block size");
  check(launch_line(0, "1,1,1", "2048,1,1"), "bad.txt:1: ", "2048 threads");
}

namespace {

const std::string kHeaderLines =
    "-kernel id = 1\n-grid dim = (2,1,1)\n-block dim = (64,1,1)\n-shmem = 4096\n-nregs = 16\n"
    "-binary version = 70\n-cuda stream id = 0\n-shmem base_addr = 0x00007f2b70000000\n"
    "-local mem base_addr = 0x00007f2b6e000000\n-nvbit version = 1.5.5\n";
const std::string kFormatComment =
    "\n#traces format = PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] "
    "[mem_addresses]\n\n";

std::string traceg(const std::string& name, const std::string& blocks, int version = 3)
{
  return "-kernel name = " + name + "\n" + kHeaderLines + "-accelsim tracer version = " + std::to_string(version) +
         "\n" + kFormatComment + blocks;
}

/// A thread block as post-traces-processing writes it: blank lines around the markers.
std::string block(const std::string& cta, const std::vector<std::pair<int, std::vector<std::string>>>& warps)
{
  std::string out = "#BEGIN_TB\n\nthread block = " + cta + "\n";
  for (const auto& [warp, insts] : warps) {
    out += "\nwarp = " + std::to_string(warp) + "\ninsts = " + std::to_string(insts.size()) + "\n";
    for (const auto& i : insts)
      out += i + "\n";
  }
  return out + "\n#END_TB\n\n";
}

std::string deltas(int n, int delta)
{
  std::string out;
  for (int i = 0; i < n; ++i)
    out += std::to_string(delta) + " ";
  return out;
}

}  // namespace

TEST_CASE("gpu-cache Accel-Sim: a kernelslist.g folder of .traceg files in every address format")
{
  TempDir dir;
  write_file(dir / "traces" / "kernelslist.g",
             "MemcpyHtoD,0x00007f2b5e000000,4096\nkernel-1.traceg\nMemcpyHtoD,0x00007f2b5e100000,4096\nkernel-2.traceg\n");
  write_file(dir / "traces" / "kernel-1.traceg",
             traceg("_Z6vecAddPdS_S_i",
                    block("1,0,0", {{0, {"0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0 ",
                                         "0010 ffffffff 1 R2 LDG.E.64 1 R4 8 1 0x7f2b5e000200 8 ",
                                         "0020 0000ffff 0 STG.E.64 2 R6 R2 8 2 0x7f2b5e100200 " + deltas(15, -8),
                                         "0030 ffffffff 0 EXIT 0 0 "}},
                                    {1, {"0000 00000005 1 R3 LDL 1 R1 4 0 0x00007f2b6e000010 0x00007f2b6e000030 ",
                                         "0010 ffffffff 0 STS 2 R1 R3 4 1 0x7f2b70000000 4 ",
                                         "0020 00000000 1 R3 LDG.E 1 R1 4 1 "}}}) +
                        block("0,0,0", {{1, {"0000 80000001 0 RED.E.ADD.STRONG.GPU 2 R2 R4 4 2 0x7f2b5e000000 124 "}}})));
  // A trace of the tracer's version 2: every instruction line begins with the CTA and the warp.
  write_file(dir / "traces" / "kernel-2.traceg",
             traceg("_Z5scalePfi", block("0,0,0", {{0, {"0 0 0 0 0000 ffffffff 0 ATOMG.E.EXCH.64.STRONG.GPU 2 R2 R4 8 1 0x7f2b5e300000 8 "}}}), 2));
  auto reader = open_trace(dir / "traces");  // the folder
  CHECK(reader->grouped_by_cta());
  std::vector<KernelLaunch> kernels;
  const auto accesses = read_all(*reader, kernels);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].name == "_Z6vecAddPdS_S_i");
  CHECK(kernels[0].launch_id == 0);
  CHECK(same_dim(kernels[0].grid, {2, 1, 1}));
  CHECK(kernels[0].shared_bytes_per_cta == 4096);
  CHECK(kernels[0].registers_per_thread == 16);
  CHECK(kernels[1].name == "_Z5scalePfi");
  CHECK(kernels[1].launch_id == 1);
  REQUIRE(accesses.size() == 5);
  CHECK(accesses[0].cta == 1);
  CHECK(accesses[0].warp == 0);
  CHECK(accesses[0].kind == AccessKind::GlobalLoad);
  CHECK(accesses[0].bytes_per_lane == 8);
  CHECK(accesses[0].address[0] == 0x7f2b5e000200);
  CHECK(accesses[0].address[31] == 0x7f2b5e000200 + 31 * 8);
  CHECK(accesses[1].kind == AccessKind::GlobalStore);
  CHECK(accesses[1].active_mask == 0x0000ffffu);
  CHECK(accesses[1].address[15] == 0x7f2b5e100200 - 15 * 8);
  CHECK(accesses[2].warp == 1);
  CHECK(accesses[2].kind == AccessKind::LocalLoad);
  CHECK(accesses[2].active_mask == 5);
  CHECK(accesses[2].address[0] == 0x7f2b6e000010);
  CHECK(accesses[2].address[2] == 0x7f2b6e000030);
  CHECK(accesses[3].cta == 0);
  CHECK(accesses[3].kind == AccessKind::GlobalAtomic);
  CHECK(accesses[3].address[31] == 0x7f2b5e000000 + 124);
  CHECK(accesses[4].kind == AccessKind::GlobalAtomic);
  CHECK(accesses[4].bytes_per_lane == 8);

  // One .traceg alone, and the list file named directly.
  auto one = open_trace(dir / "traces" / "kernel-2.traceg");
  kernels.clear();
  CHECK(read_all(*one, kernels).size() == 1);
  auto listed = open_trace(dir / "traces" / "kernelslist.g");
  kernels.clear();
  CHECK(read_all(*listed, kernels).size() == 5);
}

TEST_CASE("gpu-cache Accel-Sim: errors name the file and the line")
{
  TempDir dir;
  const auto file = dir / "kernel-1.traceg";
  auto check = [&](const std::string& text, const std::string& where, const std::string& reason) {
    write_file(file, text);
    const std::string message = trace_error(file, TraceFormat::AccelSim);
    INFO(message);
    CHECK(message.find(where) != std::string::npos);
    CHECK(message.find(reason) != std::string::npos);
  };
  const int first = 22;  // the line of the first instruction in block()'s layout after traceg()'s header
  auto at = [&](int line) { return "kernel-1.traceg:" + std::to_string(line) + ": "; };
  check(traceg("k", block("0,0,0", {{0, {"0000 ffffffff 0 FOO.E 1 R2 4 1 0x100 4 "}}})), at(first), "unknown memory instruction 'FOO.E'");
  check(traceg("k", block("0,0,0", {{0, {"0000 00000003 0 LDG.E 1 R2 4 0 0x100 0x104 0x108 "}}})), at(first),
        "more address fields than the mask's 2 active lanes need");
  check(traceg("k", block("0,0,0", {{0, {"0000 ffffffff 0 LDG.E 1 R2 4 0 " + lanes(64, 4, ~0u, 33)}}})), at(first),
        "more than 32 addresses");
  check(traceg("k", block("0,0,0", {{0, {"0000 ffffffff 0 LDG.E 1 R2 4 2 0x100 " + deltas(30, 4)}}})), at(first),
        "truncated: fewer address fields");
  check(traceg("k", block("0,0,0", {{0, {"0000 ffffffff 0 LDG.E 1 R2 4 3 0x100 4 "}}})), at(first), "bad address format '3'");
  check(traceg("k", block("0,0,0", {{0, {"0000 ffffffff 0 LDG.E 1 R2 4 1 0x100 four "}}})), at(first), "bad stride or delta 'four'");
  check(traceg("k", block("2,0,0", {{0, {}}})), at(first - 4), "thread block 2,0,0 is outside the grid 2,1,1");
  check(traceg("k", block("0,0,0", {{2, {}}})), at(first - 2), "warp 2 is outside a CTA of 2 warps");
  std::string cut = traceg("k", block("0,0,0", {{0, {"0000 ffffffff 0 LDG.E 1 R2 4 1 0x100 4 "}}}));
  check(cut.substr(0, cut.find("#END_TB")), "kernel-1.traceg", "truncated: the file ends inside a thread block");
  check(traceg("k", "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n0000 ffffffff 0 EXIT 0 0\n#END_TB\n"),
        "kernel-1.traceg:21: ", "warp 0 has 1 fewer instructions");
  check(traceg("k", "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 0\n0000 ffffffff 0 EXIT 0 0\n#END_TB\n"),
        "kernel-1.traceg:20: ", "more instructions than 'insts =' announced");
  check("-kernel name = k\n-grid dim = (2,1)\n", "kernel-1.traceg:2: ", "bad -grid dim");
  check("-kernel name = k\n-block dim = (2,1,1)\n#BEGIN_TB\n", "kernel-1.traceg:3: ", "needs -kernel name, -grid dim and -block dim");
  check("-kernel name = k\n", "kernel-1.traceg", "truncated: the file ends in its header");
  write_file(dir / "kernelslist.g", "kernel-1.traceg\nMemcpyDtoH,0x0,4\n");
  write_file(file, traceg("k", ""));
  const std::string list_error = trace_error(dir.path(), TraceFormat::AccelSim);
  CHECK(list_error.find("kernelslist.g:2: ") != std::string::npos);
  CHECK(list_error.find("expected a kernel-N.traceg file name") != std::string::npos);
  write_file(dir / "kernelslist.g", "kernel-9.traceg\n");
  CHECK(trace_error(dir.path(), TraceFormat::AccelSim).find("kernel-9.traceg: cannot open") != std::string::npos);
  TempDir empty;
  CHECK(trace_error(empty.path(), TraceFormat::AccelSim).find("without kernelslist.g") != std::string::npos);
}

TEST_CASE("gpu-cache SASS opcodes: kinds, sizes and the instructions the model does not follow")
{
  TempDir dir;
  // Each opcode in an NVBit line; the ones that give an access are counted.
  const std::vector<std::pair<std::string, int>> sizes = {
      {"LDG.E", 4}, {"LDG.E.SYS", 4}, {"LDG.E.U8", 1}, {"LDG.E.S16", 2}, {"LDG.E.64", 8}, {"LDG.E.128.CONSTANT", 16},
      {"LDG.E.LTC128B.128", 16}, {"STG.E.U16", 2}, {"ATOMG.E.CAS.64.STRONG.GPU", 8}, {"ATOMG.E.ADD.F64.RN.STRONG.GPU", 8},
      {"RED.E.ADD.F32.FTZ.RN.STRONG.GPU", 4}, {"LDL.LU", 4}, {"STL.64", 8}};
  std::string text = launch_line(0, "1,1,1", "32,1,1");
  for (const auto& [op, bytes] : sizes)
    text += access_line(0, "0,0,0", 0, op, lanes(0x1000, 4));
  for (const char* skipped : {"LDS.U.128", "STS.64", "LDSM.16.M88.4", "ATOMS.ADD", "LDC.64", "TEX.SCR.LL", "SULD.D.BA.1D",
                              "SUST.D.BA.2D", "LDGSTS.E.BYPASS.LTC128B.128", "CCTL.IVALL", "UTMALDG.2D"})
    text += access_line(0, "0,0,0", 0, skipped, lanes(0x1000, 4));
  write_file(dir / "ops.txt", text);
  auto reader = open_trace(dir / "ops.txt");
  std::vector<KernelLaunch> kernels;
  const auto accesses = read_all(*reader, kernels);
  REQUIRE(accesses.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO(sizes[i].first);
    CHECK(accesses[i].bytes_per_lane == sizes[i].second);
  }
}

TEST_CASE("gpu-cache fuzz findings: each reproducer is an input error")
{
  // fuzz/regressions/gpu_trace/: a 1.4-style launch line "Kernel - grid size ..." (no name before the
  // first " - ") was cut past its end: an out_of_range exception, exit 2.
  const std::filesystem::path dir = std::filesystem::path(GRIDCAST_SOURCE_DIR) / "fuzz" / "regressions" / "gpu_trace";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    INFO(entry.path());
    CHECK_THROWS_AS(drain(*open_trace(entry.path())), InputError);
  }
}
