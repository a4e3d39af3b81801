// The native memory-trace encodings: writer -> reader round trips (every address mode of the binary
// encoding), streaming across kernels, and every error the readers report.
#include "gpu_cache_support.hpp"

#include "gridcast/foundation/rng.hpp"

#include <bit>
#include <cstring>
#include <limits>

using namespace gridcast;
using namespace gridcast::gpu_cache;
using namespace gridcast::test;

namespace {

/// Accesses that exercise every encoding path: unit and negative strides, deltas within and beyond 32
/// bits, one lane, scattered masks, every kind and size, with and without an SM.
std::vector<WarpAccess> varied_accesses(const KernelLaunch& k)
{
  std::vector<WarpAccess> out;
  const std::uint32_t warps = static_cast<std::uint32_t>((k.block.count() + 31) / 32);
  for (std::uint64_t cta = 0; cta < k.grid.count(); ++cta)
    for (std::uint32_t w = 0; w < warps; ++w)
      for (int shape = 0; shape < 7; ++shape) {
        WarpAccess a;
        a.cta            = cta;
        a.warp           = w;
        a.kind           = static_cast<AccessKind>((cta + w + shape) % 5);
        a.bytes_per_lane = static_cast<std::uint8_t>(1u << ((w + shape) % 5));
        a.sm             = shape % 2 == 0 ? static_cast<std::int32_t>(cta % 80) : -1;
        a.active_mask    = 0xffffffffu;
        const std::uint64_t base = 0x7f0000000000ull + cta * 4096 + w * 128;
        for (unsigned lane = 0; lane < 32; ++lane) {
          switch (shape) {
            case 0: a.address[lane] = base + lane * 4; break;                       // base + stride
            case 1: a.address[lane] = base + 8192 - lane * 8; break;                // negative stride
            case 2: a.address[lane] = base + (lane * 7919u) % 1024 * 4; break;      // deltas
            case 3: a.address[lane] = base + (std::uint64_t(lane) << 36); break;    // a list (deltas > 32 bits)
            case 4: a.address[lane] = base + lane * 4; a.active_mask = 0x00010000u; break;  // one lane
            case 5: a.address[lane] = base + lane * 16; a.active_mask = 0x0f0f00f1u; break; // scattered, strided
            case 6: a.address[lane] = 0xffffffffffffff00ull + lane; a.active_mask = 0x80000001u; break;  // top
          }
        }
        out.push_back(a);
      }
  return out;
}

std::vector<KernelLaunch> two_kernels()
{
  KernelLaunch a;
  a.name                 = "gemm<\"float\", 64>\t\xc3\xa9";
  a.launch_id            = 0;
  a.grid                 = {2, 2, 1};
  a.block                = {64, 1, 1};
  a.shared_bytes_per_cta = 8192;
  a.registers_per_thread = 40;
  a.flops                = 1.5e9;
  KernelLaunch empty;
  empty.name      = "empty_kernel";
  empty.launch_id = 1;
  empty.grid      = {1, 1, 1};
  empty.block     = {32, 1, 1};
  KernelLaunch b;
  b.name      = "_Z9transposePfS_";
  b.launch_id = 2;
  b.grid      = {3, 1, 2};
  b.block     = {16, 16, 1};
  b.flops     = 0.1;
  return {a, empty, b};
}

void write_trace(const std::filesystem::path& file, const std::vector<KernelLaunch>& kernels)
{
  TraceWriter w(file);
  for (const auto& k : kernels) {
    w.begin_kernel(k);
    if (k.name != "empty_kernel")
      for (const auto& a : varied_accesses(k))
        w.write(a);
  }
  w.close();
}

void check_round_trip(const std::filesystem::path& file)
{
  const auto kernels = two_kernels();
  write_trace(file, kernels);
  auto reader = open_trace(file);
  CHECK(reader->grouped_by_cta());
  KernelLaunch got;
  for (const auto& k : kernels) {
    REQUIRE(reader->next_kernel(got));
    CHECK(got.name == k.name);
    CHECK(got.launch_id == k.launch_id);
    CHECK(same_dim(got.grid, k.grid));
    CHECK(same_dim(got.block, k.block));
    CHECK(got.shared_bytes_per_cta == k.shared_bytes_per_cta);
    CHECK(got.registers_per_thread == k.registers_per_thread);
    CHECK(got.flops == k.flops);
    WarpAccess a;
    std::size_t n = 0;
    const auto expected = k.name == "empty_kernel" ? std::vector<WarpAccess>{} : varied_accesses(k);
    while (reader->next_access(a)) {
      REQUIRE(n < expected.size());
      INFO("access " << n);
      CHECK(same_access(a, expected[n]));
      ++n;
    }
    CHECK(n == expected.size());
    CHECK_FALSE(reader->next_access(a));  // stays at the end of the launch
  }
  CHECK_FALSE(reader->next_kernel(got));
  CHECK_FALSE(reader->next_kernel(got));
}

}  // namespace

TEST_CASE("gpu-cache native: JSON lines round trip (every kind, size, mask, SM or none, an empty launch)")
{
  TempDir dir;
  check_round_trip(dir / "t.jsonl");
  const std::string text = read_file(dir / "t.jsonl");
  CHECK(text.rfind("{\"format\":\"gridcast-memtrace\",\"version\":1}\n", 0) == 0);
  CHECK(text.find("\"op\":\"atom.global\"") != std::string::npos);
  CHECK(text.find("\"mask\":\"0xf0f00f1\",\"addrs\":[") != std::string::npos);
}

TEST_CASE("gpu-cache native: binary round trip through all three address modes")
{
  TempDir dir;
  check_round_trip(dir / "t.gcmt");
  CHECK(open_trace(dir / "t.gcmt", TraceFormat::NativeBinary) != nullptr);
}

TEST_CASE("gpu-cache native: 20,000 random accesses read back exactly in both encodings")
{
  // Random masks, and addresses built to sit on each side of every mode's limits: constant strides of
  // any sign and size (wrapping around 2^64), steps of exactly INT32_MIN/INT32_MAX and one past them.
  TempDir dir;
  KernelLaunch k;
  k.name  = "random";
  k.grid  = {7, 5, 3};
  k.block = {33, 3, 2};  // 198 threads: 7 warps, the last partial
  SplitMix64 rng(20);
  std::vector<WarpAccess> accesses(20000);
  constexpr std::int64_t kEdges[] = {std::numeric_limits<std::int32_t>::min(),
                                     std::int64_t(std::numeric_limits<std::int32_t>::min()) - 1,
                                     std::numeric_limits<std::int32_t>::max(),
                                     std::int64_t(std::numeric_limits<std::int32_t>::max()) + 1, 0, 1, -1};
  for (auto& a : accesses) {
    a.cta            = rng.next() % k.grid.count();
    a.warp           = static_cast<std::uint32_t>(rng.next() % 7);
    a.sm             = rng.next() % 3 == 0 ? static_cast<std::int32_t>(rng.next() % 200) : -1;
    a.kind           = static_cast<AccessKind>(rng.next() % 5);
    a.bytes_per_lane = static_cast<std::uint8_t>(1u << (rng.next() % 5));
    const unsigned shape = rng.next() % 4;
    a.active_mask = shape == 0 ? 0xffffffffu : static_cast<std::uint32_t>(rng.next() | 1u << (rng.next() % 32));
    std::uint64_t address = rng.next();
    const std::uint64_t stride = rng.next() >> (rng.next() % 64);
    for (unsigned lane = 0; lane < 32; ++lane) {
      a.address[lane] = address;
      switch (shape) {
        case 0: case 1: address += stride; break;                                         // base + stride
        case 2: address += static_cast<std::uint64_t>(kEdges[rng.next() % 7]); break;     // deltas near 32 bits
        default: address = rng.next(); break;                                             // anything
      }
    }
  }
  for (const char* name : {"r.jsonl", "r.bin"}) {
    INFO(name);
    {
      TraceWriter w(dir / name);
      w.begin_kernel(k);
      for (const auto& a : accesses)
        w.write(a);
    }
    auto reader = open_trace(dir / name);
    KernelLaunch got;
    REQUIRE(reader->next_kernel(got));
    WarpAccess a;
    for (std::size_t i = 0; i < accesses.size(); ++i) {
      REQUIRE(reader->next_access(a));
      INFO("access " << i);
      REQUIRE(same_access(a, accesses[i]));
    }
    CHECK_FALSE(reader->next_access(a));
    CHECK_FALSE(reader->next_kernel(got));
  }
}

TEST_CASE("gpu-cache native: binary strided warps cost a few bytes, scattered ones more")
{
  TempDir dir;
  KernelLaunch k;
  k.name  = "stream";
  k.grid  = {1000, 1, 1};
  k.block = {256, 1, 1};
  auto size_of = [&](bool strided) {
    const auto file = dir / (strided ? "s.gcmt" : "d.gcmt");
    TraceWriter w(file);
    w.begin_kernel(k);
    WarpAccess a;
    a.active_mask = 0xffffffffu;
    for (std::uint64_t cta = 0; cta < 1000; ++cta)
      for (std::uint32_t warp = 0; warp < 8; ++warp) {
        a.cta  = cta;
        a.warp = warp;
        for (unsigned lane = 0; lane < 32; ++lane)
          a.address[lane] = 0x7f0000000000ull + (cta * 256 + warp * 32 + lane) * 4 + (strided ? 0 : lane % 3 * 64);
        w.write(a);
      }
    w.close();
    return std::filesystem::file_size(file);
  };
  const auto strided = size_of(true), deltas = size_of(false);
  CHECK(strided < 8000 * 14);  // mode 1, a full warp: tag, size, cta, warp, base, stride
  CHECK(deltas > strided);
  CHECK(deltas < 8000 * (14 + 31 * 2));  // mode 2: one or two bytes a delta
}

TEST_CASE("gpu-cache native: next_kernel skips what is left of a launch, in both encodings")
{
  TempDir dir;
  for (const char* name : {"t.jsonl", "t.bin"}) {
    INFO(name);
    write_trace(dir / name, two_kernels());
    auto reader = open_trace(dir / name);
    KernelLaunch k;
    REQUIRE(reader->next_kernel(k));
    WarpAccess a;
    REQUIRE(reader->next_access(a));
    REQUIRE(reader->next_kernel(k));
    CHECK(k.name == "empty_kernel");
    REQUIRE(reader->next_kernel(k));
    CHECK(k.name == "_Z9transposePfS_");
    REQUIRE(reader->next_access(a));
    CHECK(a.cta == 0);
    CHECK_FALSE(reader->next_kernel(k));
  }
}

TEST_CASE("gpu-cache native: the writer refuses accesses outside the launch and finishes on destruction")
{
  TempDir dir;
  KernelLaunch k;
  k.name  = "k";
  k.grid  = {2, 1, 1};
  k.block = {40, 1, 1};  // two warps, the second partial
  {
    TraceWriter w(dir / "t.jsonl");
    w.begin_kernel(k);
    WarpAccess a;
    a.active_mask = 1;
    a.cta         = 2;
    CHECK(expect_input_error([&] { w.write(a); }).reason().find("CTA 2 is outside the grid of 2 CTAs") !=
          std::string::npos);
    a.cta  = 1;
    a.warp = 2;
    CHECK(expect_input_error([&] { w.write(a); }).reason().find("warp 2 is outside a CTA of 2 warps") !=
          std::string::npos);
    a.warp           = 1;
    a.bytes_per_lane = 3;
    CHECK_THROWS_AS(w.write(a), InputError);
    a.bytes_per_lane = 4;
    w.write(a);
    KernelLaunch bad = k;
    bad.block        = {2048, 1, 1};
    CHECK(expect_input_error([&] { w.begin_kernel(bad); }).reason().find("2048 threads") != std::string::npos);
  }  // the destructor closes the file
  auto reader = open_trace(dir / "t.jsonl");
  KernelLaunch got;
  REQUIRE(reader->next_kernel(got));
  WarpAccess a;
  REQUIRE(reader->next_access(a));
  CHECK(a.warp == 1);
  CHECK_FALSE(reader->next_access(a));
}

// ---- JSON lines errors: each names the file and the line.

namespace {

const std::string kHeader = "{\"format\":\"gridcast-memtrace\",\"version\":1}\n";
const std::string kKernel = "{\"kernel\":\"k\",\"launch_id\":0,\"grid\":[2,1,1],\"block\":[64,1,1],\"shared_bytes\":0,"
                            "\"registers\":0,\"flops\":1e9}\n";

std::string access_line(const std::string& fields)
{
  return "{" + fields + "}\n";
}

const std::string kGood = "\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x3\",\"addrs\":[64,68]";

}  // namespace

TEST_CASE("gpu-cache native: a good JSON-lines trace written by hand reads")
{
  TempDir dir;
  write_file(dir / "t.jsonl", kHeader + kKernel + access_line(kGood) +
                                  access_line("\"warp\":0,\"cta\":0,\"sm\":3,\"op\":\"atom.global\",\"size\":16,"
                                              "\"mask\":\"0x80000000\",\"addrs\":[18446744073709551615]") +
                                  "\n{\"kernel\":\"k2\",\"grid\":[1,1,1],\"block\":[1,1,1]}\n");
  auto reader = open_trace(dir / "t.jsonl");
  KernelLaunch k;
  REQUIRE(reader->next_kernel(k));
  CHECK(k.flops == 1e9);
  WarpAccess a;
  REQUIRE(reader->next_access(a));
  CHECK(a.address[0] == 64);
  CHECK(a.address[1] == 68);
  REQUIRE(reader->next_access(a));
  CHECK(a.kind == AccessKind::GlobalAtomic);
  CHECK(a.sm == 3);
  CHECK(a.address[31] == 18446744073709551615ull);
  CHECK_FALSE(reader->next_access(a));
  REQUIRE(reader->next_kernel(k));
  CHECK(k.name == "k2");
  CHECK(k.launch_id == 1);  // the order in the trace when not given
  CHECK(k.flops < 0);
  CHECK_FALSE(reader->next_kernel(k));
}

TEST_CASE("gpu-cache native: JSON-lines errors name the file, the line and what is wrong")
{
  TempDir dir;
  const std::string at3 = "bad.jsonl:3: ";
  auto check = [&](const std::string& text, const std::string& where, const std::string& reason) {
    write_file(dir / "bad.jsonl", text);
    const std::string message = trace_error(dir / "bad.jsonl", TraceFormat::NativeJsonl);
    INFO(message);
    CHECK(message.find(where) != std::string::npos);
    CHECK(message.find(reason) != std::string::npos);
  };
  check("", "bad.jsonl:", "an empty file");
  check("{\"format\":\"other\",\"version\":1}\n", "bad.jsonl:1: ", "format 'other'");
  check("{\"format\":\"gridcast-memtrace\",\"version\":2}\n", "bad.jsonl:1: ", "version 2");
  check(kHeader + access_line(kGood), "bad.jsonl:2: ", "an access line before any kernel line");
  check(kHeader + kKernel + "{\"cta\":1,\"warp\":1,\"op\":\"ld.global\"", at3, "truncated");
  check(kHeader + kKernel + access_line(kGood).substr(0, 40) + "\n", at3, "bad JSON");
  check(kHeader + kKernel + access_line(kGood).substr(0, access_line(kGood).size() - 1), at3, "truncated");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.shared\",\"size\":4,\"mask\":\"0x1\",\"addrs\":[64]"),
        at3, "unknown operation 'ld.shared'");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":3,\"mask\":\"0x1\",\"addrs\":[64]"),
        at3, "key 'size': 3 bytes");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":32,\"mask\":\"0x1\",\"addrs\":[64]"),
        at3, "key 'size': 32 bytes");
  std::string addrs33 = "[";
  for (int i = 0; i < 33; ++i)
    addrs33 += (i ? ",": "") + std::to_string(64 + i);
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0xffffffff\",\"addrs\":" + addrs33 + "]"),
        at3, "more than 32 addresses");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x7\",\"addrs\":[64,68]"),
        at3, "mask 0x7 has 3 active lanes but 2 addresses are given");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x0\",\"addrs\":[]"),
        at3, "no active lane");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"7\",\"addrs\":[64,68,72]"),
        at3, "key 'mask'");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x100000000\",\"addrs\":[64]"),
        at3, "key 'mask'");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x1\",\"addrs\":[-64]"),
        at3, "key 'addrs': not an unsigned integer");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x1\",\"addrs\":[18446744073709551616]"),
        at3, "key 'addrs': not an unsigned integer");
  check(kHeader + kKernel + access_line("\"cta\":1.5,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x1\",\"addrs\":[64]"),
        at3, "key 'cta': not an unsigned integer");
  check(kHeader + kKernel + access_line("\"cta\":2,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x1\",\"addrs\":[64]"),
        at3, "CTA 2 is outside the grid of 2 CTAs");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":2,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x1\",\"addrs\":[64]"),
        at3, "warp 2 is outside a CTA of 2 warps");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"size\":4,\"mask\":\"0x1\"}"),
        at3, "bad JSON");
  check(kHeader + kKernel + access_line("\"cta\":1,\"warp\":1,\"op\":\"ld.global\",\"mask\":\"0x1\",\"addrs\":[64]"),
        at3, "an access line needs");
  check(kHeader + kKernel + access_line(kGood + ",\"pc\":16"), at3, "key 'pc': unknown in an access line");
  check(kHeader + kKernel + access_line(kGood + ",\"cta\":1"), at3, "key 'cta' repeated");
  check(kHeader + "{\"kernel\":\"k\",\"grid\":[2,1],\"block\":[64,1,1]}\n", "bad.jsonl:2: ", "key 'grid': expected [x,y,z]");
  check(kHeader + "{\"kernel\":\"k\",\"grid\":[0,1,1],\"block\":[64,1,1]}\n", "bad.jsonl:2: ", "a grid dimension of 0");
  check(kHeader + "{\"kernel\":\"k\",\"grid\":[1,1,1]}\n", "bad.jsonl:2: ", "needs \"grid\" and \"block\"");
  check(kHeader + "{\"kernel\":\"k\",\"grid\":[1,1,1],\"block\":[1,1,1],\"flops\":\"many\"}\n", "bad.jsonl:2: ",
        "key 'flops': not a number");
  check(kHeader + "{\"kernel\":\"k\",\"grid\":[1,1,1],\"block\":[1,1,1],\"stream\":0}\n", "bad.jsonl:2: ",
        "key 'stream': unknown in a kernel line");
  check(kHeader + "{\"kernel\":\"k\",\"grid\":[1,1,1],\"block\":[1,1,1]} x\n", "bad.jsonl:2: ", "text after the object");
}

// ---- Binary errors: each names the file and the byte offset of the record.

namespace {

struct Bytes {
  std::string s;
  Bytes& u8(unsigned v)
  {
    s.push_back(static_cast<char>(v));
    return *this;
  }
  Bytes& varint(std::uint64_t v)
  {
    while (v >= 0x80) {
      s.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    s.push_back(static_cast<char>(v));
    return *this;
  }
  Bytes& u32(std::uint32_t v)
  {
    for (int i = 0; i < 4; ++i)
      u8((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes& header()
  {
    s += "GCMTRACE";
    return u8(1);
  }
  /// A kernel "k" of grid (2,1,1) and 64 threads a CTA.
  Bytes& kernel()
  {
    u8('K').varint(0).varint(2).varint(1).varint(1).varint(64).varint(1).varint(1).varint(0).varint(0);
    const auto bits = std::bit_cast<std::uint64_t>(-1.0);
    for (int i = 0; i < 8; ++i)
      u8((bits >> (8 * i)) & 0xff);
    return varint(1).u8('k');
  }
  /// A load of lanes 0 and 1 (mode 1: base 64, stride 4) by CTA `cta`, warp `warp`.
  Bytes& access(std::uint64_t cta = 1, std::uint64_t warp = 1)
  {
    return u8(0x80 | (1 << 3)).u8(2).varint(cta).varint(warp).u32(3).varint(64).varint(8);
  }
  Bytes& end(std::uint64_t n) { return u8('E').varint(n); }
};

}  // namespace

TEST_CASE("gpu-cache native: a binary trace written byte by byte reads")
{
  TempDir dir;
  Bytes b;
  b.header().kernel().access().u8(0x80 | 0x20 | (2 << 3) | 4).u8(4).varint(0).varint(0).varint(7).u32(0x80000005u)
      .varint(1000).varint(7).varint(40)   // mode 2: lanes 0, 2, 31 at 1000, 996, 1016
      .u8(0x80 | 0x40 | (1 << 3) | 1).u8(3).varint(1).varint(0).varint(4096).varint(15)  // a full warp, stride -8
      .end(3);
  write_file(dir / "t.gcmt", b.s);
  auto reader = open_trace(dir / "t.gcmt");
  KernelLaunch k;
  REQUIRE(reader->next_kernel(k));
  CHECK(k.name == "k");
  CHECK(k.flops < 0);
  WarpAccess a;
  REQUIRE(reader->next_access(a));
  CHECK(a.address[0] == 64);
  CHECK(a.address[1] == 68);
  CHECK(a.sm == -1);
  REQUIRE(reader->next_access(a));
  CHECK(a.kind == AccessKind::GlobalAtomic);
  CHECK(a.bytes_per_lane == 16);
  CHECK(a.sm == 7);
  CHECK(a.address[0] == 1000);
  CHECK(a.address[2] == 996);
  CHECK(a.address[31] == 1016);
  REQUIRE(reader->next_access(a));
  CHECK(a.kind == AccessKind::GlobalStore);
  CHECK(a.active_mask == 0xffffffffu);
  CHECK(a.address[31] == 4096 - 31 * 8);
  CHECK_FALSE(reader->next_access(a));
  CHECK_FALSE(reader->next_kernel(k));
}

TEST_CASE("gpu-cache native: binary errors name the file and the byte offset")
{
  TempDir dir;
  auto check = [&](const std::string& bytes, const std::string& reason, const std::string& where = "") {
    write_file(dir / "bad.gcmt", bytes);
    const std::string message = trace_error(dir / "bad.gcmt", TraceFormat::NativeBinary);
    INFO(message);
    CHECK(message.find("bad.gcmt: ") != std::string::npos);
    CHECK(message.find(where) != std::string::npos);
    CHECK(message.find(reason) != std::string::npos);
  };
  const std::size_t at_access = Bytes().header().kernel().s.size();
  const std::string at        = "byte offset " + std::to_string(at_access) + ": ";
  check("GCMTRACX\x01", "does not begin with \"GCMTRACE\"");
  check(Bytes().header().s.substr(0, 8) + "\x02", "version 2");
  check(Bytes().header().kernel().access().s, "the file ends without its end record");
  check(Bytes().header().access().end(1).s, "an access record before any kernel record");
  check(Bytes().header().kernel().u8(0x7f).s, "unknown record tag 0x7f", at);
  check(Bytes().header().kernel().u8(0x85).u8(2).s, "unknown record tag 0x85", at);   // kind 5
  check(Bytes().header().kernel().u8(0x98).u8(2).s, "unknown record tag 0x98", at);   // mode 3
  check(Bytes().header().kernel().u8(0x88).u8(5).s, "access size code 5", at);
  check(Bytes().header().kernel().access(2, 0).end(1).s, "CTA 2 is outside the grid of 2 CTAs", at);
  check(Bytes().header().kernel().access(0, 2).end(1).s, "warp 2 is outside a CTA of 2 warps", at);
  check(Bytes().header().kernel().u8(0x80).u8(2).varint(0).varint(0).u32(0).end(1).s, "no active lane", at);
  check(Bytes().header().kernel().u8(0x90).u8(2).varint(0).varint(0).u32(3).varint(64).varint(std::uint64_t(1) << 33).end(1).s,
        "does not fit 32 bits", at);
  check(Bytes().header().kernel().u8(0x80).u8(2).varint(0).varint(0).u32(1).u8(0xff).u8(0xff).u8(0xff).u8(0xff).u8(0xff)
            .u8(0xff).u8(0xff).u8(0xff).u8(0xff).u8(0x7f).end(1).s,
        "overflows 64 bits", at);
  check(Bytes().header().kernel().access().end(2).s, "the end record counts 2 accesses, the file holds 1");
  check(Bytes().header().kernel().access().end(1).u8(0).s, "bytes after the end record");
  Bytes zero_grid;
  zero_grid.header().u8('K').varint(0).varint(0);
  check(zero_grid.s + std::string(20, '\x01'), "a grid dimension of 0");
}

TEST_CASE("gpu-cache native: every truncation of a binary trace is an error, never a shorter trace")
{
  TempDir dir;
  const auto file = dir / "t.gcmt";
  write_trace(file, two_kernels());
  const std::string whole = read_file(file);
  std::size_t errors = 0;
  for (std::size_t cut = 0; cut < whole.size(); cut += (cut < 200 ? 1 : 97)) {
    write_file(dir / "cut.gcmt", whole.substr(0, cut));
    try {
      drain(*open_trace(dir / "cut.gcmt", TraceFormat::NativeBinary));
    } catch (const InputError&) {
      ++errors;
      continue;
    }
    FAIL("a trace cut at byte " << cut << " of " << whole.size() << " read without error");
  }
  CHECK(errors > 200);
}

TEST_CASE("gpu-cache native: the format is found by content")
{
  TempDir dir;
  write_trace(dir / "a.jsonl", two_kernels());
  write_trace(dir / "b.bin", two_kernels());
  std::filesystem::copy_file(dir / "a.jsonl", dir / "a-without-extension");
  std::filesystem::copy_file(dir / "b.bin", dir / "b-without-extension.jsonl.txt");
  for (const char* name : {"a-without-extension", "b-without-extension.jsonl.txt"}) {
    auto reader = open_trace(dir / name);
    KernelLaunch k;
    REQUIRE(reader->next_kernel(k));
    CHECK(k.flops == 1.5e9);
  }
  write_file(dir / "other.txt", "hello\nworld\n");
  CHECK(std::string(expect_input_error([&] { open_trace(dir / "other.txt"); }).what()).find("not a memory trace") !=
        std::string::npos);
  CHECK(std::string(expect_input_error([&] { open_trace(dir / "missing.jsonl"); }).what()).find("cannot open") !=
        std::string::npos);
}
