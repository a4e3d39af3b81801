// The suite's cases (buffers, launches, sizes, data) and the host side of the address generators:
// what gen_traces.cpp (traces for the model) and suite.cu (the device check) share. Host code only,
// plain C++17 and the standard library: it compiles with g++ alone and with nvcc.
#pragma once

#include "kernels.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace gcbench {

enum class SizeClass { Ci, Device };

struct Dim {
  unsigned x = 1, y = 1;
  std::uint64_t count() const { return std::uint64_t(x) * y; }
};

struct BufferSpec {
  std::string name;
  std::uint64_t bytes = 0;
};

struct LaunchSpec {
  Op op = OpGemm;
  Dim grid, block;
  double flops = 0;  ///< analytic floating-point operations of the launch
};

/// A generated graph in CSR and the BFS state before the traced step.
struct BfsGraph {
  std::vector<std::int32_t> rows, cols, levels;
  std::int32_t level = 0;  ///< the frontier the traced step expands
};

/// One suite kernel: its buffers (in LaunchArgs::base order) and its launches, in order.
struct Case {
  std::string name;
  std::vector<BufferSpec> buffers;
  std::vector<LaunchSpec> launches;
  LaunchArgs args{};                       ///< sizes; bases set by bind_bases
  std::shared_ptr<const BfsGraph> graph;   ///< bfs only
};

/// The __global__ function of a launch kind (suite.cu names its kernels so).
inline const char* kernel_name(int op) {
  static const char* const names[OpCount] = {"k_gemm",    "k_2mm_1",   "k_2mm_2",  "k_atax_1",   "k_atax_2",
                                             "k_bicg_1",  "k_bicg_2",  "k_gesummv", "k_mvt_1",   "k_mvt_2",
                                             "k_syrk",    "k_conv2d",  "k_jacobi2d", "k_reduce", "k_transpose",
                                             "k_bfs"};
  return op >= 0 && op < OpCount ? names[op] : "?";
}

inline const std::vector<std::string>& case_names() {
  static const std::vector<std::string> names = {"gemm", "2mm",      "atax",     "bicg",     "gesummv",  "mvt",
                                                 "syrk", "conv2d",   "jacobi2d", "reduction", "transpose", "bfs"};
  return names;
}

/// Registers per thread of each kernel as nvcc 13.0 -O3 -arch=sm_90 reports them (-Xptxas -v): the
/// KernelLaunch value when no bases file gives the device build's own (suite.cu prints it).
inline unsigned default_registers(int op) {
  static const unsigned regs[OpCount] = {32, 32, 32, 24, 32, 32, 24, 29, 26, 32, 29, 30, 15, 12, 12, 22};
  return op >= 0 && op < OpCount ? regs[op] : 0;
}

inline unsigned ceil_div(std::int64_t a, std::int64_t b) { return unsigned((a + b - 1) / b); }

/// splitmix64: the suite's only random source, so the host and the device build agree on all data.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() { return mix64(state += 0x9e3779b97f4a7c15ULL); }
};

/// A random graph: vertex degrees uniform in [1, 15], neighbours uniform; BFS from vertex 0, and the
/// traced step is the level with the largest frontier (the first such).
inline std::shared_ptr<const BfsGraph> make_graph(std::int64_t vertices) {
  auto g = std::make_shared<BfsGraph>();
  Rng rng{0x6772696463617374ULL};
  g->rows.reserve(vertices + 1);
  g->rows.push_back(0);
  for (std::int64_t v = 0; v < vertices; ++v) {
    const int degree = 1 + int(rng.next() % 15);
    for (int d = 0; d < degree; ++d) g->cols.push_back(std::int32_t(rng.next() % std::uint64_t(vertices)));
    g->rows.push_back(std::int32_t(g->cols.size()));
  }
  std::vector<std::int32_t> dist(vertices, -1);
  std::vector<std::int64_t> frontier_size;
  std::queue<std::int32_t> queue;
  dist[0] = 0;
  queue.push(0);
  while (!queue.empty()) {
    const std::int32_t v = queue.front();
    queue.pop();
    if (std::size_t(dist[v]) >= frontier_size.size()) frontier_size.resize(dist[v] + 1, 0);
    ++frontier_size[dist[v]];
    for (std::int32_t e = g->rows[v]; e < g->rows[v + 1]; ++e) {
      const std::int32_t u = g->cols[e];
      if (dist[u] < 0) {
        dist[u] = dist[v] + 1;
        queue.push(u);
      }
    }
  }
  for (std::size_t l = 0; l < frontier_size.size(); ++l)
    if (frontier_size[l] > frontier_size[g->level]) g->level = std::int32_t(l);
  g->levels.resize(vertices);
  for (std::int64_t v = 0; v < vertices; ++v) g->levels[v] = dist[v] >= 0 && dist[v] <= g->level ? dist[v] : -1;
  return g;
}

/// The case `name` at a size class; throws std::invalid_argument for an unknown name.
/// Device sizes: at most ~20 million warp accesses per launch; gemm, 2mm, bicg, syrk, jacobi2d fit in
/// the H100's 50 MB L2, atax, gesummv, mvt, conv2d, reduction, transpose, bfs are 2.5-3.6 times larger.
inline Case make_case(const std::string& name, SizeClass size) {
  const bool dev = size == SizeClass::Device;
  Case c;
  c.name = name;
  c.args.alpha = 1.5f;
  c.args.beta = 1.2f;
  auto floats = [](std::int64_t n) { return std::uint64_t(n) * 4; };
  const Dim b2{32, 8}, b1{256, 1};
  if (name == "gemm") {
    const std::int64_t n = dev ? 1024 : 128;  // 12 MB
    c.args.ni = n;
    c.buffers = {{"A", floats(n * n)}, {"B", floats(n * n)}, {"C", floats(n * n)}};
    c.launches = {{OpGemm, {unsigned(n / kGemmTile), unsigned(n / kGemmTile)}, {kGemmTile, kGemmTile},
                   2.0 * n * n * n + 3.0 * n * n}};
  } else if (name == "2mm") {
    const std::int64_t n = dev ? 512 : 64;  // 5 MB
    c.args.ni = c.args.nj = c.args.nk = c.args.nl = n;
    c.buffers = {{"A", floats(n * n)}, {"B", floats(n * n)}, {"C", floats(n * n)}, {"D", floats(n * n)}, {"tmp", floats(n * n)}};
    const Dim grid{ceil_div(n, b2.x), ceil_div(n, b2.y)};
    c.launches = {{Op2mm1, grid, b2, 2.0 * n * n * n + 1.0 * n * n}, {Op2mm2, grid, b2, 2.0 * n * n * n + 2.0 * n * n}};
  } else if (name == "atax") {
    const std::int64_t n = dev ? 6144 : 256;  // 151 MB
    c.args.ni = c.args.nj = n;
    c.buffers = {{"A", floats(n * n)}, {"x", floats(n)}, {"y", floats(n)}, {"tmp", floats(n)}};
    const Dim grid{ceil_div(n, b1.x), 1};
    c.launches = {{OpAtax1, grid, b1, 2.0 * n * n}, {OpAtax2, grid, b1, 2.0 * n * n}};
  } else if (name == "bicg") {
    const std::int64_t n = dev ? 3072 : 256;  // 38 MB
    c.args.ni = c.args.nj = n;
    c.buffers = {{"A", floats(n * n)}, {"r", floats(n)}, {"s", floats(n)}, {"p", floats(n)}, {"q", floats(n)}};
    const Dim grid{ceil_div(n, b1.x), 1};
    c.launches = {{OpBicg1, grid, b1, 2.0 * n * n}, {OpBicg2, grid, b1, 2.0 * n * n}};
  } else if (name == "gesummv") {
    const std::int64_t n = dev ? 4096 : 256;  // 134 MB
    c.args.ni = n;
    c.buffers = {{"A", floats(n * n)}, {"B", floats(n * n)}, {"x", floats(n)}, {"y", floats(n)}, {"tmp", floats(n)}};
    c.launches = {{OpGesummv, {ceil_div(n, b1.x), 1}, b1, 4.0 * n * n + 3.0 * n}};
  } else if (name == "mvt") {
    const std::int64_t n = dev ? 6144 : 256;  // 151 MB
    c.args.ni = n;
    c.buffers = {{"A", floats(n * n)}, {"x1", floats(n)}, {"x2", floats(n)}, {"y1", floats(n)}, {"y2", floats(n)}};
    const Dim grid{ceil_div(n, b1.x), 1};
    c.launches = {{OpMvt1, grid, b1, 2.0 * n * n}, {OpMvt2, grid, b1, 2.0 * n * n}};
  } else if (name == "syrk") {
    const std::int64_t n = dev ? 1024 : 64, m = dev ? 128 : 32;  // 4.7 MB
    c.args.ni = n;
    c.args.nk = m;
    c.buffers = {{"A", floats(n * m)}, {"C", floats(n * n)}};
    c.launches = {{OpSyrk, {ceil_div(n, b2.x), ceil_div(n, b2.y)}, b2, 2.0 * n * n * m + 3.0 * n * n}};
  } else if (name == "conv2d") {
    const std::int64_t n = dev ? 4096 : 256;  // 134 MB
    c.args.ni = c.args.nj = n;
    c.buffers = {{"A", floats(n * n)}, {"B", floats(n * n)}};
    c.launches = {{OpConv2d, {ceil_div(n, b2.x), ceil_div(n, b2.y)}, b2, 17.0 * (n - 2) * (n - 2)}};
  } else if (name == "jacobi2d") {
    const std::int64_t n = dev ? 2048 : 256;  // 34 MB
    c.args.ni = n;
    c.buffers = {{"A", floats(n * n)}, {"B", floats(n * n)}};
    c.launches = {{OpJacobi2d, {ceil_div(n, b2.x), ceil_div(n, b2.y)}, b2, 5.0 * (n - 2) * (n - 2)}};
  } else if (name == "reduction") {
    const std::int64_t n = dev ? (std::int64_t(1) << 25) : (std::int64_t(1) << 18);  // 134 MB
    c.args.ni = n;
    c.buffers = {{"x", floats(n)}, {"sum", floats(1)}};
    c.launches = {{OpReduce, {ceil_div(n, kReduceBlock * kReducePerThread), 1}, {kReduceBlock, 1}, double(n)}};
  } else if (name == "transpose") {
    const std::int64_t n = dev ? 4096 : 256;  // 134 MB
    c.args.ni = n;
    c.buffers = {{"in", floats(n * n)}, {"out", floats(n * n)}};
    c.launches = {{OpTranspose, {ceil_div(n, b2.x), ceil_div(n, b2.y)}, b2, 0.0}};
  } else if (name == "bfs") {
    const std::int64_t v = dev ? (std::int64_t(1) << 22) : 16384;  // ~185 MB
    c.graph = make_graph(v);
    c.args.ni = v;
    c.args.level = c.graph->level;
    c.buffers = {{"row_offsets", floats(v + 1)}, {"columns", floats(std::int64_t(c.graph->cols.size()))},
                 {"levels", floats(v)}, {"next", floats(v)}};
    c.launches = {{OpBfs, {ceil_div(v, b1.x), 1}, b1, 0.0}};
  } else {
    throw std::invalid_argument("unknown suite kernel '" + name + "'");
  }
  return c;
}

/// The initial contents of buffer `index` of a case: the graph for bfs (and a zero `next`), zero for
/// the reduction's sum, else floats in [0, 1) from a hash of the case, buffer and element.
inline std::vector<unsigned char> initial_contents(const Case& c, std::size_t index) {
  std::vector<unsigned char> bytes(c.buffers.at(index).bytes, 0);
  if (c.graph) {
    const std::vector<std::int32_t>* src =
        index == 0 ? &c.graph->rows : index == 1 ? &c.graph->cols : index == 2 ? &c.graph->levels : nullptr;
    if (src) std::memcpy(bytes.data(), src->data(), bytes.size());
    return bytes;
  }
  if (c.name == "reduction" && index == 1) return bytes;
  std::uint64_t salt = 0xcbf29ce484222325ULL;  // FNV-1a of the case name, then the buffer
  for (char ch : c.name) salt = (salt ^ std::uint8_t(ch)) * 0x100000001b3ULL;
  salt = mix64(salt ^ (std::uint64_t(index) << 32));
  const std::size_t n = bytes.size() / 4;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = float(mix64(salt + i) >> 40) * (1.0f / 16777216.0f);
    std::memcpy(&bytes[i * 4], &v, 4);
  }
  return bytes;
}

/// Whether a buffer's contents decide addresses (the host generator then needs a copy of them).
inline bool contents_decide_addresses(const Case& c, std::size_t index) { return c.graph && index < 3; }

constexpr std::uint64_t kDefaultBase = 0x7f0000000000ULL;  // user-space, like cudaMalloc's
constexpr std::uint64_t kAllocationAlign = 2ull << 20;       // cudaMalloc aligns large buffers to 2 MiB

/// Bases like cudaMalloc gives one buffer after the other, 2 MiB-aligned.
inline std::vector<std::uint64_t> default_bases(const Case& c) {
  std::vector<std::uint64_t> bases;
  std::uint64_t next = kDefaultBase;
  for (const BufferSpec& b : c.buffers) {
    bases.push_back(next);
    next += (b.bytes + kAllocationAlign - 1) / kAllocationAlign * kAllocationAlign;
  }
  return bases;
}

inline LaunchArgs bind_bases(const Case& c, const std::vector<std::uint64_t>& bases) {
  LaunchArgs a = c.args;
  for (std::size_t i = 0; i < bases.size() && i < 6; ++i) a.base[i] = bases[i];
  return a;
}

// ---------------------------------------------------------------------------------------------
// The bases file: what suite.cu prints about the device run, what gen_traces --bases reads.
//   # comment
//   gpu <name>
//   case <name>
//   buffer <name> 0x<base> <bytes>
//   kernel <name> registers <n> shared_bytes <n>

struct DeviceLayout {
  struct Buffer {
    std::string name;
    std::uint64_t base = 0, bytes = 0;
    int line = 0;
  };
  std::map<std::string, std::vector<Buffer>> buffers;  ///< by case
  std::map<std::string, unsigned> registers;           ///< by kernel name
  std::string path;
};

inline DeviceLayout read_layout(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  DeviceLayout layout;
  layout.path = path;
  std::string line, current;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::string key;
    if (!(words >> key) || key[0] == '#' || key == "gpu") continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (key == "case") {
      if (!(words >> current)) throw std::runtime_error(where + "'case' without a name");
    } else if (key == "buffer") {
      DeviceLayout::Buffer b;
      std::string base;
      if (current.empty()) throw std::runtime_error(where + "'buffer' before any 'case'");
      if (!(words >> b.name >> base >> b.bytes) || base.rfind("0x", 0) != 0)
        throw std::runtime_error(where + "expected 'buffer NAME 0xBASE BYTES'");
      std::size_t used = 0;
      try {
        b.base = std::stoull(base, &used, 16);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != base.size()) throw std::runtime_error(where + "bad base address '" + base + "'");
      b.line = number;
      layout.buffers[current].push_back(b);
    } else if (key == "kernel") {
      std::string name, reg_key, shared_key;
      unsigned regs = 0, shared = 0;
      if (!(words >> name >> reg_key >> regs >> shared_key >> shared) || reg_key != "registers")
        throw std::runtime_error(where + "expected 'kernel NAME registers N shared_bytes N'");
      layout.registers[name] = regs;
    } else {
      throw std::runtime_error(where + "unknown key '" + key + "'");
    }
  }
  return layout;
}

/// The device bases of a case from a layout; throws naming the file when the case is missing or its
/// buffers differ from this build's (another size or another version of the suite).
inline std::vector<std::uint64_t> bases_from_layout(const DeviceLayout& layout, const Case& c) {
  auto it = layout.buffers.find(c.name);
  if (it == layout.buffers.end()) throw std::runtime_error(layout.path + ": no 'case " + c.name + "'");
  if (it->second.size() != c.buffers.size())
    throw std::runtime_error(layout.path + ": case " + c.name + " has " + std::to_string(it->second.size()) +
                             " buffers, this generator " + std::to_string(c.buffers.size()));
  std::vector<std::uint64_t> bases;
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    const DeviceLayout::Buffer& b = it->second[i];
    if (b.name != c.buffers[i].name || b.bytes != c.buffers[i].bytes)
      throw std::runtime_error(layout.path + ":" + std::to_string(b.line) + ": buffer " + b.name + " of " +
                               std::to_string(b.bytes) + " bytes, this generator expects " + c.buffers[i].name + " of " +
                               std::to_string(c.buffers[i].bytes) + " (use --size device)");
    bases.push_back(b.base);
  }
  return bases;
}

// ---------------------------------------------------------------------------------------------
// Running bodies on the host.

/// The buffers as the host sees them: device address ranges, with the contents where addresses
/// depend on them (else reads give 0: values of the other kernels never decide an address).
struct HostMemory {
  struct Region {
    std::uint64_t base, bytes;
    const unsigned char* data;
  };
  std::vector<Region> regions;

  /// The region holding [address, address+bytes), or nullptr when outside every buffer.
  const Region* find(std::uint64_t address, unsigned bytes) const {
    for (const Region& r : regions)
      if (address >= r.base && address + bytes <= r.base + r.bytes) return &r;
    return nullptr;
  }
};

template <class T>
struct Identity {
  using type = T;
};

/// The host accessor: tells `sink` of every access (site, kind, bytes, address) and reads values
/// from HostMemory; counts accesses outside every buffer (a body bug: the check reports them).
template <class Sink>
struct HostAccessor {
  const HostMemory* memory;
  Sink* sink;
  std::uint64_t out_of_bounds = 0;

  template <class T>
  T load(int site, const T* p) {
    const std::uint64_t address = reinterpret_cast<std::uint64_t>(p);
    sink->note(site, kKindLoad, sizeof(T), address);
    T value{};
    const HostMemory::Region* r = memory->find(address, sizeof(T));
    if (!r) ++out_of_bounds;
    else if (r->data) std::memcpy(&value, r->data + (address - r->base), sizeof(T));
    return value;
  }
  template <class T>
  void store(int site, T* p, typename Identity<T>::type) {
    note_write(site, kKindStore, p);
  }
  void atomic_add(int site, float* p, float) { note_write(site, kKindAtomic, p); }
  void sync() {}

private:
  template <class T>
  void note_write(int site, unsigned kind, T* p) {
    const std::uint64_t address = reinterpret_cast<std::uint64_t>(p);
    sink->note(site, kind, sizeof(T), address);
    if (!memory->find(address, sizeof(T))) ++out_of_bounds;
  }
};

template <int OP = 0, class Acc>
void run_body_host(int op, const LaunchArgs& a, const ThreadIdx& t, Acc& acc, float* shared) {
  if constexpr (OP < OpCount) {
    if (op == OP) run_body<OP>(a, t, acc, shared);
    else run_body_host<OP + 1>(op, a, t, acc, shared);
  }
}

/// The built-ins of thread `tid` (x fastest) of CTA `cta` (linear, x fastest).
inline ThreadIdx thread_idx(const LaunchSpec& l, std::uint64_t cta, unsigned tid) {
  return ThreadIdx{unsigned(cta % l.grid.x), unsigned(cta / l.grid.x), tid % l.block.x, tid / l.block.x,
                   l.block.x, l.block.y, l.grid.x, l.grid.y};
}

/// Runs every thread of one CTA to completion, thread by thread; make_sink(tid) gives each thread's
/// sink. Returns the accesses that fell outside every buffer.
template <class MakeSink>
std::uint64_t run_cta_host(const LaunchSpec& l, const LaunchArgs& a, const HostMemory& memory, std::uint64_t cta,
                           std::vector<float>& shared, MakeSink&& make_sink) {
  std::uint64_t out_of_bounds = 0;
  shared.assign(std::size_t(shared_floats(l.op)) + 1, 0.0f);
  const unsigned threads = unsigned(l.block.count());
  for (unsigned tid = 0; tid < threads; ++tid) {
    auto* sink = make_sink(tid);
    HostAccessor<std::remove_pointer_t<decltype(sink)>> acc{&memory, sink};
    run_body_host(l.op, a, thread_idx(l, cta, tid), acc, shared.data());
    out_of_bounds += acc.out_of_bounds;
  }
  return out_of_bounds;
}

/// A sink folding a thread's accesses into the check hash (suite.cu compares it with the device's).
struct HashSink {
  std::uint64_t hash = kHashSeed, count = 0;
  void note(int, unsigned kind, unsigned bytes, std::uint64_t address) {
    hash = fold_access(hash, kind, bytes, address);
    ++count;
  }
};

}  // namespace gcbench
