// The suite's CPU address generator: runs every thread of every launch of the suite's kernels on the
// host (the bodies of kernels.hpp with a recording accessor) and writes one native binary trace per
// kernel (OUT/<case>.trace) of the warp-level accesses the CUDA kernels make: the lanes grouped into
// warp instructions by warp_group.hpp, a CTA's warps interleaved one instruction each in turn (warps of
// a CTA run side by side), CTAs in linear order.
//
//   gen_traces --out DIR [--size ci|device] [--bases FILE] [--kernel CASE]... [--count-only] [--verify]
//     --size ci      small sizes: the whole suite a few MB of traces (CI runs the model on them)
//     --size device  the sizes suite.cu runs on the GPU
//     --bases FILE   the buffer bases (and registers) the device printed (suite --bases-out); default
//                    2 MiB-aligned bases from 0x7f0000000000, as cudaMalloc gives
//     --count-only   print the counts, write no trace
//     --verify       read each trace back (gridcast::gpu_cache::open_trace) and compare it with what was
//                    written: launches, accesses and a hash of every field (exit 2 when they differ)
// Prints one line per launch: case, kernel, CTAs, warp accesses, footprint. Exit 1 on bad input
// (an unreadable or mismatching bases file), 2 on an internal error (an access outside every buffer).
#include "suite.hpp"
#include "warp_group.hpp"

#include <gridcast/gpu_cache/trace.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

namespace {

using namespace gcbench;
namespace gc = gridcast::gpu_cache;

struct RecordSink {
  std::vector<LaneAccess> accesses;
  void note(int site, unsigned kind, unsigned bytes, std::uint64_t address) {
    accesses.push_back(LaneAccess{address, std::uint8_t(site), std::uint8_t(kind), std::uint8_t(bytes)});
  }
};

struct Options {
  SizeClass size = SizeClass::Ci;
  std::string bases, out;
  std::vector<std::string> kernels;
  bool count_only = false;
  bool verify = false;
};

/// A hash of a trace's launches and accesses, the same whether taken while writing or reading back.
struct TraceDigest {
  std::uint64_t launches = 0, accesses = 0, hash = kHashSeed;
  void add(const gc::KernelLaunch& k) {
    ++launches;
    for (char ch : k.name) hash = mix64(hash ^ std::uint8_t(ch));
    for (std::uint64_t v : {k.launch_id, k.grid.count(), k.block.count(), std::uint64_t(k.shared_bytes_per_cta),
                            std::uint64_t(k.registers_per_thread), std::uint64_t(k.flops)})
      hash = mix64(hash ^ v);
  }
  void add(const gc::WarpAccess& a) {
    ++accesses;
    hash = mix64(hash ^ a.cta ^ (std::uint64_t(a.warp) << 40) ^ (std::uint64_t(a.kind) << 56));
    hash = mix64(hash ^ a.bytes_per_lane ^ (std::uint64_t(a.active_mask) << 8));
    for (unsigned lane = 0; lane < 32; ++lane)
      if ((a.active_mask >> lane) & 1) hash = mix64(hash ^ a.address[lane]);
  }
  bool operator==(const TraceDigest& o) const { return launches == o.launches && accesses == o.accesses && hash == o.hash; }
};

struct InternalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Generates one case's trace; returns its warp accesses.
std::uint64_t generate(const Options& opt, const std::optional<DeviceLayout>& layout, const std::string& name) {
  const Case c = make_case(name, opt.size);
  const std::vector<std::uint64_t> bases = layout ? bases_from_layout(*layout, c) : default_bases(c);
  const LaunchArgs args = bind_bases(c, bases);
  std::vector<std::vector<unsigned char>> contents(c.buffers.size());
  HostMemory memory;
  std::uint64_t footprint = 0;
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    if (contents_decide_addresses(c, i)) contents[i] = initial_contents(c, i);
    memory.regions.push_back({bases[i], c.buffers[i].bytes, contents[i].empty() ? nullptr : contents[i].data()});
    footprint += c.buffers[i].bytes;
  }
  const std::filesystem::path path = std::filesystem::path(opt.out) / (c.name + ".trace");
  std::unique_ptr<gc::TraceWriter> writer;
  if (!opt.count_only) writer = std::make_unique<gc::TraceWriter>(path);
  TraceDigest written;
  std::uint64_t total = 0;
  for (std::size_t li = 0; li < c.launches.size(); ++li) {
    const LaunchSpec& l = c.launches[li];
    gc::KernelLaunch k;
    k.name = kernel_name(l.op);
    k.launch_id = li;
    k.grid = {l.grid.x, l.grid.y, 1};
    k.block = {l.block.x, l.block.y, 1};
    k.shared_bytes_per_cta = std::uint32_t(shared_floats(l.op) * sizeof(float));
    k.registers_per_thread = default_registers(l.op);
    if (layout) {
      auto it = layout->registers.find(k.name);
      if (it != layout->registers.end()) k.registers_per_thread = it->second;
    }
    k.flops = l.flops;
    if (writer) writer->begin_kernel(k);
    written.add(k);
    const unsigned threads = unsigned(l.block.count());
    const unsigned warps = (threads + 31) / 32;
    std::vector<RecordSink> sinks(std::size_t(warps) * 32);
    std::vector<std::vector<WarpInstruction>> per_warp(warps);
    std::vector<float> shared;
    gc::WarpAccess access;
    std::uint64_t launch_accesses = 0;
    for (std::uint64_t cta = 0; cta < l.grid.count(); ++cta) {
      const std::uint64_t oob = run_cta_host(l, args, memory, cta, shared, [&](unsigned tid) {
        sinks[tid].accesses.clear();
        return &sinks[tid];
      });
      if (oob) throw InternalError(std::string(k.name) + ": CTA " + std::to_string(cta) + " accessed " +
                                   std::to_string(oob) + " addresses outside every buffer");
      std::size_t longest = 0;
      for (unsigned w = 0; w < warps; ++w) {
        const std::vector<LaneAccess>* lanes[32];
        for (unsigned lane = 0; lane < 32; ++lane) lanes[lane] = &sinks[w * 32 + lane].accesses;  // lanes past the block stay empty
        group_warp(lanes, per_warp[w]);
        longest = std::max(longest, per_warp[w].size());
      }
      access.cta = cta;
      for (std::size_t i = 0; i < longest; ++i) {
        for (unsigned w = 0; w < warps; ++w) {
          if (i >= per_warp[w].size()) continue;
          const WarpInstruction& in = per_warp[w][i];
          ++launch_accesses;
          if (!writer) continue;
          access.warp = w;
          access.kind = gc::AccessKind(in.kind);
          access.bytes_per_lane = in.bytes;
          access.active_mask = in.active_mask;
          access.address = in.address;
          writer->write(access);
          written.add(access);
        }
      }
    }
    std::printf("%-10s %-12s ctas %8llu warp_accesses %10llu footprint_bytes %llu\n", c.name.c_str(), k.name.c_str(),
                (unsigned long long)l.grid.count(), (unsigned long long)launch_accesses, (unsigned long long)footprint);
    std::fflush(stdout);
    total += launch_accesses;
  }
  if (writer) writer->close();
  if (writer && opt.verify) {
    TraceDigest read;
    auto reader = gc::open_trace(path);
    gc::KernelLaunch k;
    gc::WarpAccess a;
    while (reader->next_kernel(k)) {
      read.add(k);
      while (reader->next_access(a)) read.add(a);
    }
    if (!(read == written))
      throw InternalError(path.string() + " reads back as " + std::to_string(read.launches) + " launches, " +
                          std::to_string(read.accesses) + " accesses, not as written (" +
                          std::to_string(written.launches) + ", " + std::to_string(written.accesses) + ")" +
                          (read.accesses == written.accesses ? " or with other contents" : ""));
    std::printf("%-10s verified: %s reads back as written (%llu bytes)\n", c.name.c_str(), path.string().c_str(),
                (unsigned long long)std::filesystem::file_size(path));
  }
  return total;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "gen_traces: %s\nusage: gen_traces --out DIR [--size ci|device] [--bases FILE] [--kernel CASE]... "
               "[--count-only] [--verify]\ncases:",
               why);
  for (const std::string& n : case_names()) std::fprintf(stderr, " %s", n.c_str());
  std::fprintf(stderr, "\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--size" && has_value) {
      const std::string v = argv[++i];
      if (v != "ci" && v != "device") return usage("--size must be ci or device");
      opt.size = v == "ci" ? SizeClass::Ci : SizeClass::Device;
    } else if (arg == "--bases" && has_value) {
      opt.bases = argv[++i];
    } else if (arg == "--out" && has_value) {
      opt.out = argv[++i];
    } else if (arg == "--kernel" && has_value) {
      opt.kernels.push_back(argv[++i]);
    } else if (arg == "--count-only") {
      opt.count_only = true;
    } else if (arg == "--verify") {
      opt.verify = true;
    } else {
      return usage(("unknown or incomplete option '" + arg + "'").c_str());
    }
  }
  if (opt.out.empty() && !opt.count_only) return usage("--out DIR is required");
  if (opt.kernels.empty()) opt.kernels = case_names();
  for (const std::string& k : opt.kernels)
    if (std::find(case_names().begin(), case_names().end(), k) == case_names().end())
      return usage(("unknown kernel '" + k + "'").c_str());
  try {
    std::optional<DeviceLayout> layout;
    if (!opt.bases.empty()) layout = read_layout(opt.bases);
    if (!opt.count_only) std::filesystem::create_directories(opt.out);
    for (const std::string& k : opt.kernels) generate(opt, layout, k);
  } catch (const InternalError& e) {
    std::fprintf(stderr, "gen_traces: internal error: %s\n", e.what());
    return 2;
  } catch (const std::logic_error& e) {
    std::fprintf(stderr, "gen_traces: internal error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gen_traces: %s\n", e.what());
    return 1;
  }
  return 0;
}
