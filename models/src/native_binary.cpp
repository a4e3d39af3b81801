// The native binary trace encoding ("gct"): its encoder, its reader and its writer. Byte layout:
// docs/reference/traces.md.
#include "gridcast/models/native.hpp"

#include "io.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace fs = std::filesystem;

namespace gridcast::models::detail {

namespace {
void put_double(std::string& out, double v)
{
  static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
  auto bits = std::bit_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // little-endian whatever the host
}

const CallRecord kDefaults{};
}  // namespace

void BinaryEncoder::put_header(std::string& out)
{
  out.append(kBinaryMagic, sizeof kBinaryMagic);
  put_varint(out, kBinaryVersion);
}

std::uint32_t BinaryEncoder::map_function(std::uint32_t id, const FunctionTable& functions, std::string& out)
{
  if (cached_table_ != &functions) {
    cached_table_ = &functions;
    remap_.clear();
  }
  if (id < remap_.size() && remap_[id] != 0)
    return remap_[id] - 1;
  const std::string& name = functions.name(id);  // throws InternalError for a bad id
  std::size_t before      = out_functions_.size();
  std::uint32_t out_id    = out_functions_.intern(name);
  if (out_functions_.size() > before) {  // first use: define it
    out.push_back(static_cast<char>(kRecordFunction));
    put_varint(out, out_id);
    put_varint(out, name.size());
    out.append(name);
  }
  if (id >= remap_.size())
    remap_.resize(id + 1, 0);
  remap_[id] = out_id + 1;
  return out_id;
}

void BinaryEncoder::encode(const CallRecord& r, const FunctionTable& functions, std::string& out)
{
  const std::uint32_t fn = map_function(r.function, functions, out);
  const CallRecord& d    = kDefaults;

  std::uint64_t mask = 0;
  auto bit           = [&mask](unsigned b, bool set) {
    if (set)
      mask |= std::uint64_t{1} << b;
  };
  bit(kFieldFunction, fn != 0);
  bit(kFieldSeconds, r.seconds != d.seconds);
  bit(kFieldFlops, r.flops != d.flops);
  bit(kFieldPeer, r.peer != d.peer);
  bit(kFieldTag, r.tag != d.tag);
  bit(kFieldBytes, r.bytes != d.bytes);
  bit(kFieldSrc, r.src != d.src);
  bit(kFieldRecvTag, r.recv_tag != d.recv_tag);
  bit(kFieldRecvBytes, r.recv_bytes != d.recv_bytes);
  bit(kFieldComm, r.comm != d.comm);
  bit(kFieldRoot, r.root != d.root);
  bit(kFieldRequest, r.request != d.request);
  bit(kFieldRequests, not r.requests.empty());
  bit(kFieldCounts, not r.counts.empty());
  bit(kFieldRecvCounts, not r.recv_counts.empty());
  bit(kFieldColor, r.color != d.color);
  bit(kFieldKey, r.key != d.key);
  bit(kFieldNewComm, r.new_comm != d.new_comm);
  bit(kFieldStream, r.stream != d.stream);
  bit(kFieldDevice, r.device != d.device);
  bit(kFieldMemory, r.memory != d.memory);
  bit(kFieldLine, keep_lines_ && r.line != 0);
  bit(kFieldDeviceSeconds, r.device_seconds != d.device_seconds);
  bit(kFieldLibrary, r.library.recorded);

  out.push_back(static_cast<char>(1 + static_cast<int>(r.op)));
  put_varint(out, mask);
  auto has = [mask](unsigned b) { return (mask >> b) & 1; };
  if (has(kFieldFunction))
    put_varint(out, fn);
  if (has(kFieldSeconds))
    put_double(out, r.seconds);
  if (has(kFieldFlops))
    put_double(out, r.flops);
  if (has(kFieldPeer))
    put_varint(out, zigzag(r.peer));
  if (has(kFieldTag))
    put_varint(out, zigzag(r.tag));
  if (has(kFieldBytes))
    put_varint(out, r.bytes);
  if (has(kFieldSrc))
    put_varint(out, zigzag(r.src));
  if (has(kFieldRecvTag))
    put_varint(out, zigzag(r.recv_tag));
  if (has(kFieldRecvBytes))
    put_varint(out, r.recv_bytes);
  if (has(kFieldComm))
    put_varint(out, zigzag(r.comm));
  if (has(kFieldRoot))
    put_varint(out, zigzag(r.root));
  if (has(kFieldRequest))
    put_varint(out, zigzag(r.request));
  if (has(kFieldRequests)) {
    put_varint(out, r.requests.size());
    for (auto v : r.requests)
      put_varint(out, zigzag(v));
  }
  if (has(kFieldCounts)) {
    put_varint(out, r.counts.size());
    for (auto v : r.counts)
      put_varint(out, v);
  }
  if (has(kFieldRecvCounts)) {
    put_varint(out, r.recv_counts.size());
    for (auto v : r.recv_counts)
      put_varint(out, v);
  }
  if (has(kFieldColor))
    put_varint(out, zigzag(r.color));
  if (has(kFieldKey))
    put_varint(out, zigzag(r.key));
  if (has(kFieldNewComm))
    put_varint(out, zigzag(r.new_comm));
  if (has(kFieldStream))
    put_varint(out, zigzag(r.stream));
  if (has(kFieldDevice))
    put_varint(out, zigzag(r.device));
  if (has(kFieldMemory))
    out.push_back(static_cast<char>(r.memory));
  if (has(kFieldLine))
    put_varint(out, r.line);
  if (has(kFieldDeviceSeconds))
    put_double(out, r.device_seconds);
  if (has(kFieldLibrary)) {
    const LibraryArgs& a = r.library;
    for (std::int64_t v : {a.m, a.n, a.k, a.ld_a, a.ld_b, a.ld_c, a.inc_x, a.inc_y})
      put_varint(out, zigzag(v));
    out.append(a.options.begin(), a.options.end());
  }
}

BinaryTraceStream::BinaryTraceStream(const fs::path& file, int rank, std::string display)
    : in_(file), display_(display.empty() ? file.string() : std::move(display)), rank_(rank)
{
  if (not in_.is_open())
    throw InputError({file.string(), 0, "", rank}, "cannot open binary trace: " + open_failure(errno));
  char magic[sizeof kBinaryMagic];
  if (not in_.read(magic, sizeof magic) || std::memcmp(magic, kBinaryMagic, sizeof magic) != 0)
    throw InputError({display_, 0, "", rank}, "not a gridcast binary trace (bad magic, expected \"GCTRACE1\")");
  std::uint64_t version = varint();
  in_header_            = false;
  if (version != kBinaryVersion)
    throw InputError({display_, 0, "", rank}, "unsupported binary trace version " + std::to_string(version) +
                                                  " (this gridcast reads version " + std::to_string(kBinaryVersion) +
                                                  ")");
}

void BinaryTraceStream::fail(const std::string& reason) const
{
  if (in_header_)
    throw InputError({display_, 0, "", rank_}, "truncated or corrupt header: " + reason);
  throw InputError({display_, record_no_ + 1, "", rank_}, "record " + std::to_string(record_no_ + 1) + ": " + reason);
}

std::uint64_t BinaryTraceStream::varint()
{
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    int b = in_.get();
    if (b < 0)
      fail("truncated record");
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      if (shift == 63 && b > 1)
        fail("corrupt record: varint overflows 64 bits");
      return v;
    }
  }
  fail("corrupt record: varint longer than 10 bytes");
}

std::int32_t BinaryTraceStream::int32_field(const char* name)
{
  std::int64_t v = svarint();
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    fail(std::string("corrupt record: ") + name + " out of 32-bit range");
  return static_cast<std::int32_t>(v);
}

double BinaryTraceStream::double_field()
{
  unsigned char b[8];
  if (not in_.read(b, 8))
    fail("truncated record");
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i)
    bits |= static_cast<std::uint64_t>(b[i]) << (8 * i);
  double v = std::bit_cast<double>(bits);
  if (not std::isfinite(v))
    fail("corrupt record: non-finite number");
  return v;
}

template <class T> void BinaryTraceStream::vector_field(std::vector<T>& v, bool is_signed)
{
  std::uint64_t n = varint();
  if (n > in_.remaining())  // every element takes at least one byte
    fail("corrupt record: vector of " + std::to_string(n) + " elements is longer than the rest of the file");
  v.resize(static_cast<std::size_t>(n));
  for (auto& e : v)
    e = is_signed ? static_cast<T>(svarint()) : static_cast<T>(varint());
}

bool BinaryTraceStream::next(CallRecord& out)
{
  for (;;) {
    int type = in_.get();
    if (type < 0) {
      if (after_definition_)  // writers define a function right before the call that uses it
        fail("truncated record (function definition without a call)");
      return false;
    }
    after_definition_ = type == kRecordFunction;
    if (type == kRecordFunction) {
      std::uint64_t id = varint();
      if (id != functions_.size())
        fail("corrupt function definition: id " + std::to_string(id) + ", expected " +
             std::to_string(functions_.size()));
      std::uint64_t len = varint();
      if (len > in_.remaining())
        fail("truncated record");
      std::string name(static_cast<std::size_t>(len), '\0');
      if (not in_.read(name.data(), name.size()))
        fail("truncated record");
      if (functions_.find(name))
        fail("corrupt function definition: '" + name + "' defined twice");
      functions_.intern(name);
      continue;
    }
    if (type > kOpCount)
      fail("corrupt record: unknown record type " + std::to_string(type));

    out.clear();
    out.op             = static_cast<Op>(type - 1);
    std::uint64_t mask = varint();
    if (mask >> kFieldCount)
      fail("corrupt record: unknown field bits in mask " + std::to_string(mask));
    auto has = [mask](unsigned b) { return (mask >> b) & 1; };
    if (has(kFieldFunction)) {
      std::uint64_t fn = varint();
      if (fn >= functions_.size())
        fail("corrupt record: function id " + std::to_string(fn) + " is not defined");
      out.function = static_cast<std::uint32_t>(fn);
    } else if (functions_.size() == 0) {
      fail("corrupt record: function id 0 is not defined");
    }
    if (has(kFieldSeconds))
      out.seconds = double_field();
    if (has(kFieldFlops)) {
      out.flops = double_field();
      if (out.flops < 0)
        fail("corrupt record: negative flops");
    }
    if (has(kFieldPeer))
      out.peer = int32_field("peer");
    if (has(kFieldTag))
      out.tag = int32_field("tag");
    if (has(kFieldBytes))
      out.bytes = varint();
    if (has(kFieldSrc))
      out.src = int32_field("src");
    if (has(kFieldRecvTag))
      out.recv_tag = int32_field("recv_tag");
    if (has(kFieldRecvBytes))
      out.recv_bytes = varint();
    if (has(kFieldComm))
      out.comm = int32_field("comm");
    if (has(kFieldRoot))
      out.root = int32_field("root");
    if (has(kFieldRequest))
      out.request = svarint();
    if (has(kFieldRequests))
      vector_field(out.requests, true);
    if (has(kFieldCounts))
      vector_field(out.counts, false);
    if (has(kFieldRecvCounts))
      vector_field(out.recv_counts, false);
    if (has(kFieldColor))
      out.color = int32_field("color");
    if (has(kFieldKey))
      out.key = int32_field("key");
    if (has(kFieldNewComm))
      out.new_comm = int32_field("new_comm");
    if (has(kFieldStream))
      out.stream = int32_field("stream");
    if (has(kFieldDevice))
      out.device = int32_field("device");
    if (has(kFieldMemory)) {
      int m = in_.get();
      if (m < 0)
        fail("truncated record");
      if (m > 1)
        fail("corrupt record: memory " + std::to_string(m));
      out.memory = static_cast<Memory>(m);
    }
    const std::uint64_t source_line = has(kFieldLine) ? varint() : 0;
    if (has(kFieldDeviceSeconds))
      out.device_seconds = double_field();
    if (has(kFieldLibrary)) {
      LibraryArgs& a = out.library;
      a.recorded     = true;
      for (std::int64_t* v : {&a.m, &a.n, &a.k, &a.ld_a, &a.ld_b, &a.ld_c, &a.inc_x, &a.inc_y})
        *v = svarint();
      for (char& c : a.options) {
        const int b = in_.get();
        if (b < 0)
          fail("truncated record");
        if (std::string_view("NTCLRU-").find(static_cast<char>(b)) == std::string_view::npos)
          fail("corrupt record: library option byte " + std::to_string(b));
        c = static_cast<char>(b);
      }
    }
    ++record_no_;  // only now: errors above name the record being read
    out.line = has(kFieldLine) ? source_line : record_no_;
    return true;
  }
}

namespace {

class BinaryWriter final : public TraceWriter {
public:
  explicit BinaryWriter(const fs::path& file) : file_(file) { detail::BinaryEncoder::put_header(file_.buffer()); }
  ~BinaryWriter() override
  {
    try {
      file_.close();
    } catch (...) {
    }
  }
  void write(const CallRecord& r, const FunctionTable& functions) override
  {
    check_finite(r, file_, ++count_);
    encoder_.encode(r, functions, file_.buffer());
    file_.maybe_flush();
  }
  void close() override { file_.close(); }

private:
  OutputFile file_;
  detail::BinaryEncoder encoder_;
  std::uint64_t count_ = 0;
};

}  // namespace

std::unique_ptr<TraceWriter> make_binary_writer(const fs::path& file) { return std::make_unique<BinaryWriter>(file); }

}  // namespace gridcast::models::detail
