// The native writer: JSON lines for a path ending in .jsonl, the binary encoding otherwise (byte layout
// in docs/reference/gpu-memory-traces.md). The file is written under a temporary name and renamed onto
// the target by close(): a generator that fails half-way leaves no trace that looks complete.
#include "trace_io.hpp"

#include "gridcast/foundation/output_file.hpp"

#include <bit>
#include <charconv>
#include <exception>
#include <limits>

namespace fs = std::filesystem;

namespace gridcast::gpu_cache {

using namespace detail;

namespace {

constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

void put_varint(std::string& out, std::uint64_t v)
{
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::uint64_t zigzag(std::int64_t v)
{
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

void put_u32(std::string& out, std::uint32_t v)
{
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_number(std::string& out, std::uint64_t v)
{
  char text[24];
  auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  out.append(text, end);
}

void put_double_text(std::string& out, double v)
{
  char text[40];
  auto [end, ec] = std::to_chars(text, text + sizeof text, v);  // shortest text that reads back the same
  out.append(text, end);
}

void put_json_string(std::string& out, std::string_view s)
{
  out.push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

}  // namespace

struct TraceWriter::Impl {
  OutputFile file;
  bool jsonl;
  bool has_kernel = false;
  bool closed     = false;
  KernelLaunch launch;
  std::uint64_t accesses = 0;
  std::string buffer;
  int exceptions_at_open = std::uncaught_exceptions();

  Impl(const fs::path& path, bool jsonl_) : file(path, "the memory trace"), jsonl(jsonl_) {}

  void flush_if_full()
  {
    if (buffer.size() >= kFlushBytes) {
      file.write(buffer);
      buffer.clear();
    }
  }

  [[noreturn]] void fail(const std::string& reason) const
  {
    throw InputError({file.target().string(), 0, {}, -1}, reason);
  }

  void kernel_jsonl(const KernelLaunch& k)
  {
    buffer += "{\"kernel\":";
    put_json_string(buffer, k.name);
    buffer += ",\"launch_id\":";
    put_number(buffer, k.launch_id);
    auto dim = [this](const char* key, const Dim3& d) {
      buffer += key;
      put_number(buffer, d.x);
      buffer.push_back(',');
      put_number(buffer, d.y);
      buffer.push_back(',');
      put_number(buffer, d.z);
      buffer.push_back(']');
    };
    dim(",\"grid\":[", k.grid);
    dim(",\"block\":[", k.block);
    buffer += ",\"shared_bytes\":";
    put_number(buffer, k.shared_bytes_per_cta);
    buffer += ",\"registers\":";
    put_number(buffer, k.registers_per_thread);
    buffer += ",\"flops\":";
    if (k.flops < 0)
      buffer += "-1";
    else
      put_double_text(buffer, k.flops);
    buffer += "}\n";
  }

  void kernel_binary(const KernelLaunch& k)
  {
    buffer.push_back(static_cast<char>(kTagKernel));
    put_varint(buffer, k.launch_id);
    for (const Dim3* d : {&k.grid, &k.block}) {
      put_varint(buffer, d->x);
      put_varint(buffer, d->y);
      put_varint(buffer, d->z);
    }
    put_varint(buffer, k.shared_bytes_per_cta);
    put_varint(buffer, k.registers_per_thread);
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(k.flops < 0 ? -1.0 : k.flops);
    for (int i = 0; i < 8; ++i)
      buffer.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    put_varint(buffer, k.name.size());
    buffer += k.name;
  }

  void access_jsonl(const WarpAccess& a)
  {
    buffer += "{\"cta\":";
    put_number(buffer, a.cta);
    buffer += ",\"warp\":";
    put_number(buffer, a.warp);
    if (a.sm >= 0) {
      buffer += ",\"sm\":";
      put_number(buffer, static_cast<std::uint64_t>(a.sm));
    }
    buffer += ",\"op\":\"";
    buffer += to_string(a.kind);
    buffer += "\",\"size\":";
    put_number(buffer, a.bytes_per_lane);
    char mask[16];
    auto [end, ec] = std::to_chars(mask, mask + sizeof mask, a.active_mask, 16);
    buffer += ",\"mask\":\"0x";
    buffer.append(mask, end);
    buffer += "\",\"addrs\":[";
    bool first = true;
    for (unsigned lane = 0; lane < kWarpLanes; ++lane)
      if ((a.active_mask >> lane) & 1) {
        if (not first)
          buffer.push_back(',');
        first = false;
        put_number(buffer, a.address[lane]);
      }
    buffer += "]}\n";
  }

  /// The mode Accel-Sim's tracer would pick: base + stride when the active lanes' addresses step by one
  /// constant, base + deltas when every step fits 32 bits, else the list.
  void access_binary(const WarpAccess& a)
  {
    std::uint64_t active[kWarpLanes];
    unsigned n = 0;
    for (unsigned lane = 0; lane < kWarpLanes; ++lane)
      if ((a.active_mask >> lane) & 1)
        active[n++] = a.address[lane];
    AddressMode mode = AddressMode::List;
    if (n >= 2) {
      const std::uint64_t stride = active[1] - active[0];
      bool constant = true, small = true;
      for (unsigned i = 1; i < n; ++i) {
        const auto step = static_cast<std::int64_t>(active[i] - active[i - 1]);
        constant = constant && active[i] - active[i - 1] == stride;
        small    = small && step >= std::numeric_limits<std::int32_t>::min() &&
                step <= std::numeric_limits<std::int32_t>::max();
      }
      mode = constant ? AddressMode::BaseStride : small ? AddressMode::BaseDelta : AddressMode::List;
    }
    std::uint8_t tag = kTagAccess | static_cast<std::uint8_t>(static_cast<unsigned>(mode) << 3) |
                       static_cast<std::uint8_t>(a.kind);
    if (a.sm >= 0)
      tag |= kTagAccessHasSm;
    if (a.active_mask == 0xffffffffu)
      tag |= kTagAccessFullWarp;
    buffer.push_back(static_cast<char>(tag));
    buffer.push_back(static_cast<char>(size_log2(a.bytes_per_lane)));
    put_varint(buffer, a.cta);
    put_varint(buffer, a.warp);
    if (a.sm >= 0)
      put_varint(buffer, static_cast<std::uint64_t>(a.sm));
    if (a.active_mask != 0xffffffffu)
      put_u32(buffer, a.active_mask);
    switch (mode) {
      case AddressMode::List:
        for (unsigned i = 0; i < n; ++i)
          put_varint(buffer, active[i]);
        break;
      case AddressMode::BaseStride:
        put_varint(buffer, active[0]);
        put_varint(buffer, zigzag(static_cast<std::int64_t>(active[1] - active[0])));
        break;
      case AddressMode::BaseDelta:
        put_varint(buffer, active[0]);
        for (unsigned i = 1; i < n; ++i)
          put_varint(buffer, zigzag(static_cast<std::int64_t>(active[i] - active[i - 1])));
        break;
    }
  }
};

TraceWriter::TraceWriter(const fs::path& path) : impl_(std::make_unique<Impl>(path, path.extension() == ".jsonl"))
{
  if (impl_->jsonl) {
    impl_->buffer += "{\"format\":\"";
    impl_->buffer += kJsonlFormat;
    impl_->buffer += "\",\"version\":";
    put_number(impl_->buffer, kJsonlVersion);
    impl_->buffer += "}\n";
  } else {
    impl_->buffer.append(kBinaryMagic, sizeof kBinaryMagic);
    impl_->buffer.push_back(static_cast<char>(kBinaryVersion));
  }
}

TraceWriter::~TraceWriter()
{
  // Finished only when not unwinding from an error: the OutputFile then discards the temporary.
  if (impl_ && not impl_->closed && std::uncaught_exceptions() == impl_->exceptions_at_open) {
    try {
      close();
    } catch (const std::exception&) {  // a destructor cannot report it; close() does
    }
  }
}

void TraceWriter::begin_kernel(const KernelLaunch& launch)
{
  Impl& w = *impl_;
  if (w.closed)
    throw InternalError("TraceWriter::begin_kernel after close()");
  if (std::string reason = check_launch(launch); not reason.empty())
    w.fail("kernel '" + launch.name + "': " + reason);
  if (launch.name.size() > kMaxKernelNameBytes)
    w.fail("a kernel name of " + std::to_string(launch.name.size()) + " bytes (at most " +
           std::to_string(kMaxKernelNameBytes) + ")");
  w.launch     = launch;
  w.has_kernel = true;
  if (w.jsonl)
    w.kernel_jsonl(launch);
  else
    w.kernel_binary(launch);
  w.flush_if_full();
}

void TraceWriter::write(const WarpAccess& access)
{
  Impl& w = *impl_;
  if (not w.has_kernel || w.closed)
    throw InternalError("TraceWriter::write without a kernel begun (or after close())");
  if (static_cast<unsigned>(access.kind) > static_cast<unsigned>(AccessKind::GlobalAtomic))
    throw InternalError("TraceWriter::write: access kind " + std::to_string(static_cast<int>(access.kind)));
  if (std::string reason = check_access(access, w.launch); not reason.empty())
    w.fail("kernel '" + w.launch.name + "': " + reason);
  if (w.jsonl)
    w.access_jsonl(access);
  else
    w.access_binary(access);
  ++w.accesses;
  w.flush_if_full();
}

void TraceWriter::close()
{
  Impl& w = *impl_;
  if (w.closed)
    return;
  w.closed = true;
  if (not w.jsonl) {
    w.buffer.push_back(static_cast<char>(kTagEnd));
    put_varint(w.buffer, w.accesses);
  }
  w.file.write(w.buffer);
  w.buffer.clear();
  w.file.commit();
}

}  // namespace gridcast::gpu_cache
