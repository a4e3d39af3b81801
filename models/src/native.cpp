// The native trace encodings (JSON lines and binary "gct"), their writers, and profile conversion.
// Byte layouts and field tables: docs/formats.md.
#include "gridcast/models/native.hpp"

#include "io.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace gridcast::models {
namespace detail {

// ---------------------------------------------------------------- LineReader, ByteReader

ReadFd::ReadFd(const fs::path& file) : fd_(::open(file.c_str(), O_RDONLY | O_CLOEXEC)) {}

ReadFd::~ReadFd()
{
  if (fd_ >= 0)
    ::close(fd_);
}

std::ptrdiff_t ReadFd::read(void* dst, std::size_t n)
{
  auto* out       = static_cast<char*>(dst);
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd_, out + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    got += static_cast<std::size_t>(r);
  }
  return static_cast<std::ptrdiff_t>(got);
}

LineReader::LineReader(const fs::path& file) : in_(file), buf_(kReadBufferSize) {}

bool LineReader::fill()
{
  if (eof_)
    return false;
  // Keep the unread tail at the front, grow when a single line fills the whole buffer.
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size())
    buf_.grow(buf_.size() * 2, end_);
  std::ptrdiff_t got = in_.read(buf_.data() + end_, buf_.size() - end_);
  if (got <= 0) {  // end of file, or a read error, which ends the file as the stream did
    eof_ = true;
    return false;
  }
  end_ += static_cast<std::size_t>(got);
  if (end_ < buf_.size())
    eof_ = true;  // a short read: the file has no more bytes
  return true;
}

bool LineReader::next(std::string_view& line)
{
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl    = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      std::size_t len = static_cast<const char*>(nl) - start;
      begin_ += len + 1;
      if (len > 0 && start[len - 1] == '\r')
        --len;
      line = std::string_view(start, len);
      ++line_no_;
      return true;
    }
    if (not fill()) {
      if (begin_ == end_)
        return false;
      // Last line without a newline.
      std::size_t len = end_ - begin_;
      const char* s   = buf_.data() + begin_;
      begin_          = end_;
      if (s[len - 1] == '\r')
        --len;
      line = std::string_view(s, len);
      ++line_no_;
      return true;
    }
  }
}

ByteReader::ByteReader(const fs::path& file) : in_(file), buf_(kReadBufferSize)
{
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  size_     = ec ? 0 : size;
}

bool ByteReader::refill()
{
  if (not in_.is_open())
    return false;
  consumed_before_ += end_;
  pos_ = end_ = 0;
  std::ptrdiff_t got = in_.read(buf_.data(), buf_.size());
  end_               = got > 0 ? static_cast<std::size_t>(got) : 0;
  return end_ > 0;
}

bool ByteReader::read(void* dst, std::size_t n)
{
  auto* out = static_cast<unsigned char*>(dst);
  while (n > 0) {
    if (pos_ == end_ && not refill())
      return false;
    std::size_t chunk = std::min(n, end_ - pos_);
    std::memcpy(out, buf_.data() + pos_, chunk);
    pos_ += chunk;
    out += chunk;
    n -= chunk;
  }
  return true;
}

// ---------------------------------------------------------------- binary codec

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
}

BinaryTraceStream::BinaryTraceStream(const fs::path& file, int rank, std::string display)
    : in_(file), display_(display.empty() ? file.string() : std::move(display)), rank_(rank)
{
  if (not in_.is_open())
    throw InputError({file.string(), 0, "", rank}, "cannot open binary trace: " + std::string(std::strerror(errno)));
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
    ++record_no_;  // only now: errors above name the record being read
    out.line = has(kFieldLine) ? source_line : record_no_;
    return true;
  }
}

}  // namespace detail

// ---------------------------------------------------------------- JSON lines

namespace {

using detail::kIoBufferSize;
using json = nlohmann::json;

enum class JField : std::uint8_t {
  Op,
  Fn,
  Seconds,
  Flops,
  Peer,
  Tag,
  Bytes,
  Src,
  RecvTag,
  RecvBytes,
  Comm,
  Root,
  Request,
  Requests,
  Counts,
  RecvCounts,
  Color,
  Key,
  NewComm,
  Stream,
  Device,
  Memory,
  DeviceSeconds,
  None
};

JField field_from_key(std::string_view k)
{
  static constexpr std::pair<std::string_view, JField> kKeys[] = {
      {"op", JField::Op},
      {"fn", JField::Fn},
      {"seconds", JField::Seconds},
      {"flops", JField::Flops},
      {"peer", JField::Peer},
      {"tag", JField::Tag},
      {"bytes", JField::Bytes},
      {"src", JField::Src},
      {"recv_tag", JField::RecvTag},
      {"recv_bytes", JField::RecvBytes},
      {"comm", JField::Comm},
      {"root", JField::Root},
      {"request", JField::Request},
      {"requests", JField::Requests},
      {"counts", JField::Counts},
      {"recv_counts", JField::RecvCounts},
      {"color", JField::Color},
      {"key", JField::Key},
      {"new_comm", JField::NewComm},
      {"stream", JField::Stream},
      {"device", JField::Device},
      {"memory", JField::Memory},
      {"device_seconds", JField::DeviceSeconds},
  };
  for (const auto& [name, f] : kKeys)
    if (name == k)
      return f;
  return JField::None;
}

/// A scalar JSON value as the SAX parser delivers it.
struct JValue {
  enum Kind { Int, UInt, Float, String, Other } kind;
  std::int64_t i       = 0;
  std::uint64_t u      = 0;
  double f             = 0;
  const std::string* s = nullptr;
  const char* what     = "";  // description for errors ("a boolean", "null")
};

/// Fills a CallRecord straight from the SAX events of one line: no DOM, no per-key allocation beyond the
/// parser's own.
class RecordSax {
public:
  RecordSax(CallRecord& rec, std::string& fn) : rec_(rec), fn_(fn) {}

  bool null() { return value({JValue::Other, 0, 0, 0, nullptr, "null"}); }
  bool boolean(bool) { return value({JValue::Other, 0, 0, 0, nullptr, "a boolean"}); }
  bool number_integer(json::number_integer_t v) { return value({JValue::Int, v, 0, 0, nullptr, ""}); }
  bool number_unsigned(json::number_unsigned_t v) { return value({JValue::UInt, 0, v, 0, nullptr, ""}); }
  bool number_float(json::number_float_t v, const std::string&) { return value({JValue::Float, 0, 0, v, nullptr, ""}); }
  bool string(std::string& v) { return value({JValue::String, 0, 0, 0, &v, ""}); }
  bool binary(json::binary_t&) { return value({JValue::Other, 0, 0, 0, nullptr, "binary data"}); }

  bool start_object(std::size_t)
  {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    return fail(in_array_ ? "expected a number, got an object" : "expected a scalar value or an array, got an object");
  }
  bool end_object()
  {
    depth_ = 0;
    return true;
  }
  bool key(std::string& k)
  {
    key_   = k;
    field_ = field_from_key(k);
    if (field_ == JField::None)
      return fail("unknown key");
    auto bit = std::uint32_t{1} << static_cast<unsigned>(field_);
    if (seen_ & bit)
      return fail("duplicate key");
    seen_ |= bit;
    return true;
  }
  bool start_array(std::size_t)
  {
    if (depth_ == 0)
      return fail("a record must be a JSON object, got an array");
    if (in_array_)
      return fail("expected a number, got an array");
    switch (field_) {
      case JField::Requests:
        rec_.requests.clear();
        break;
      case JField::Counts:
        rec_.counts.clear();
        break;
      case JField::RecvCounts:
        rec_.recv_counts.clear();
        break;
      default:
        return fail("expected a scalar value, got an array");
    }
    in_array_ = true;
    return true;
  }
  bool end_array()
  {
    in_array_ = false;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex)
  {
    std::string msg = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> "column 5: ..."
    if (auto p = msg.find("] "); p != std::string::npos)
      msg.erase(0, p + 2);
    if (auto p = msg.find("at line 1, "); p != std::string::npos)
      msg.erase(0, p + 11);
    key_.clear();
    reason_ = "invalid JSON: " + msg;
    return false;
  }

  bool saw(JField f) const { return seen_ & (std::uint32_t{1} << static_cast<unsigned>(f)); }
  const std::string& error_key() const { return key_; }
  const std::string& reason() const { return reason_; }
  bool failed() const { return not reason_.empty(); }

private:
  bool fail(std::string reason)
  {
    reason_ = std::move(reason);
    return false;
  }

  static const char* describe(const JValue& v)
  {
    switch (v.kind) {
      case JValue::Int:
      case JValue::UInt:
        return "an integer";
      case JValue::Float:
        return "a floating-point number";
      case JValue::String:
        return "a string";
      default:
        return v.what;
    }
  }
  bool type_error(const char* expected, const JValue& v)
  {
    return fail(std::string("expected ") + expected + ", got " + describe(v));
  }

  bool to_double(const JValue& v, double& out)
  {
    switch (v.kind) {
      case JValue::Int:
        out = static_cast<double>(v.i);
        return true;
      case JValue::UInt:
        out = static_cast<double>(v.u);
        return true;
      case JValue::Float:
        out = v.f;
        return std::isfinite(out) || fail("expected a finite number");
      default:
        return type_error("a number", v);
    }
  }
  bool to_int64(const JValue& v, std::int64_t& out)
  {
    if (v.kind == JValue::Int) {
      out = v.i;
      return true;
    }
    if (v.kind == JValue::UInt) {
      if (v.u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return fail("integer out of range");
      out = static_cast<std::int64_t>(v.u);
      return true;
    }
    return type_error("an integer", v);
  }
  bool to_uint64(const JValue& v, std::uint64_t& out)
  {
    if (v.kind == JValue::UInt) {
      out = v.u;
      return true;
    }
    if (v.kind == JValue::Int) {
      if (v.i < 0)
        return fail("expected a non-negative integer, got " + std::to_string(v.i));
      out = static_cast<std::uint64_t>(v.i);
      return true;
    }
    return type_error("a non-negative integer", v);
  }
  bool to_int32(const JValue& v, std::int32_t& out)
  {
    std::int64_t x = 0;
    if (not to_int64(v, x))
      return false;
    if (x < std::numeric_limits<std::int32_t>::min() || x > std::numeric_limits<std::int32_t>::max())
      return fail("integer " + std::to_string(x) + " out of 32-bit range");
    out = static_cast<std::int32_t>(x);
    return true;
  }
  /// An integer rank or tag, or "any" (stored as `any`).
  bool to_int32_or_any(const JValue& v, std::int32_t any, std::int32_t& out)
  {
    if (v.kind == JValue::String) {
      if (*v.s == "any") {
        out = any;
        return true;
      }
      return fail("expected an integer or \"any\", got \"" + *v.s + "\"");
    }
    if (v.kind != JValue::Int && v.kind != JValue::UInt)
      return type_error("an integer or \"any\"", v);
    return to_int32(v, out);
  }

  bool value(const JValue& v)
  {
    if (depth_ == 0)
      return fail("a record must be a JSON object");
    if (in_array_) {
      switch (field_) {
        case JField::Requests: {
          std::int64_t x = 0;
          if (not to_int64(v, x))
            return false;
          rec_.requests.push_back(x);
          return true;
        }
        case JField::Counts:
        case JField::RecvCounts: {
          std::uint64_t x = 0;
          if (not to_uint64(v, x))
            return false;
          (field_ == JField::Counts ? rec_.counts : rec_.recv_counts).push_back(x);
          return true;
        }
        default:
          return fail("unexpected array");
      }
    }
    switch (field_) {
      case JField::Op:
        if (v.kind != JValue::String)
          return type_error("a string", v);
        if (auto op = op_from_name(*v.s)) {
          rec_.op = *op;
          return true;
        }
        return fail("unknown op '" + *v.s + "'");
      case JField::Fn:
        if (v.kind != JValue::String)
          return type_error("a string", v);
        if (v.s->empty())
          return fail("empty function name");
        fn_ = *v.s;
        return true;
      case JField::Seconds:
        return to_double(v, rec_.seconds);
      case JField::Flops:
        if (not to_double(v, rec_.flops))
          return false;
        return rec_.flops >= 0 || fail("flops must be >= 0");
      case JField::Peer:
        return to_int32_or_any(v, kAnySource, rec_.peer);
      case JField::Src:
        return to_int32_or_any(v, kAnySource, rec_.src);
      case JField::Tag:
        return to_int32_or_any(v, kAnyTag, rec_.tag);
      case JField::RecvTag:
        return to_int32_or_any(v, kAnyTag, rec_.recv_tag);
      case JField::Bytes:
        return to_uint64(v, rec_.bytes);
      case JField::RecvBytes:
        return to_uint64(v, rec_.recv_bytes);
      case JField::Comm:
        return to_int32(v, rec_.comm);
      case JField::Root:
        return to_int32(v, rec_.root);
      case JField::Request:
        return to_int64(v, rec_.request);
      case JField::Requests:
      case JField::Counts:
      case JField::RecvCounts:
        return type_error("an array", v);
      case JField::Color:
        return to_int32(v, rec_.color);
      case JField::Key:
        return to_int32(v, rec_.key);
      case JField::NewComm:
        return to_int32(v, rec_.new_comm);
      case JField::Stream:
        return to_int32(v, rec_.stream);
      case JField::Device:
        return to_int32(v, rec_.device);
      case JField::Memory:
        if (v.kind == JValue::String && *v.s == "host")
          rec_.memory = Memory::Host;
        else if (v.kind == JValue::String && *v.s == "device")
          rec_.memory = Memory::Device;
        else
          return fail("expected \"host\" or \"device\"");
        return true;
      case JField::DeviceSeconds:
        return to_double(v, rec_.device_seconds);
      case JField::None:
        break;
    }
    return fail("unexpected value");
  }

  CallRecord& rec_;
  std::string& fn_;
  int depth_          = 0;
  bool in_array_      = false;
  JField field_       = JField::None;
  std::uint32_t seen_ = 0;
  std::string key_;
  std::string reason_;
};

class JsonLinesStream final : public detail::TextTraceStream {
public:
  JsonLinesStream(const fs::path& file, int rank) : TextTraceStream(file, rank, "trace"), rank_(rank) {}

  bool next(CallRecord& out) override
  {
    std::string_view line;
    while (in_.next(line)) {
      std::size_t first = line.find_first_not_of(" \t");
      if (first == std::string_view::npos || line[first] == '#')
        continue;
      out.clear();
      fn_.clear();
      RecordSax sax(out, fn_);
      bool ok = json::sax_parse(line.begin(), line.end(), &sax, nlohmann::detail::input_format_t::json, true, false);
      if (not ok || sax.failed())
        throw InputError({source_, in_.line_no(), sax.error_key(), rank_},
                         sax.failed() ? sax.reason() : std::string("invalid JSON"));
      if (not sax.saw(JField::Op))
        throw InputError({source_, in_.line_no(), "op", rank_}, "missing key");
      out.function = functions_.intern(fn_.empty() ? op_name(out.op) : std::string_view(fn_));
      out.line     = in_.line_no();
      return true;
    }
    return false;
  }
private:
  int rank_;
  std::string fn_;
};

// ---- writers

/// True for well-formed UTF-8 (what JSON readers accept): no overlong forms, surrogates or values > U+10FFFF.
bool valid_utf8(std::string_view s)
{
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n;
    unsigned lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf)
      n = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      n  = 2;
      lo = c == 0xe0 ? 0xa0 : 0x80;
      hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n  = 3;
      lo = c == 0xf0 ? 0x90 : 0x80;
      hi = c == 0xf4 ? 0x8f : 0xbf;
    } else
      return false;
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size())
        return false;
      auto d = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xbf))
        return false;
    }
    i += n + 1;
  }
  return true;
}

void append_json_string(std::string& out, std::string_view s)
{
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

template <class T> void append_number(std::string& out, T v)
{
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // doubles: shortest form that reads back exactly
  out.append(buf, res.ptr);
}

/// Buffered output file shared by both writers.
class OutputFile {
public:
  explicit OutputFile(const fs::path& file) : path_(file), out_(file, std::ios::binary | std::ios::trunc)
  {
    if (not out_.is_open())
      throw InputError(detail::at_file(path_.string()),
                       "cannot open for writing: " + std::string(std::strerror(errno)));
    buf_.reserve(kIoBufferSize + 4096);
  }
  std::string& buffer() { return buf_; }
  void maybe_flush()
  {
    if (buf_.size() >= kIoBufferSize)
      flush();
  }
  void flush()
  {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
    if (not out_)
      throw InputError(detail::at_file(path_.string()), "write failed: " + std::string(std::strerror(errno)));
  }
  void close()
  {
    if (closed_)
      return;
    closed_ = true;
    flush();
    out_.close();
    if (not out_)
      throw InputError(detail::at_file(path_.string()),
                       "could not close the file: " + std::string(std::strerror(errno)));
  }
  bool closed() const { return closed_; }
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
  std::ofstream out_;
  std::string buf_;
  bool closed_ = false;
};

void check_finite(const CallRecord& r, const OutputFile& file, std::uint64_t record_no)
{
  if (not std::isfinite(r.seconds) || not std::isfinite(r.flops) || not std::isfinite(r.device_seconds))
    throw InputError(detail::at_line(file.path().string(), record_no),
                     "cannot write a non-finite seconds or flops value");
}

class JsonLinesWriter final : public TraceWriter {
public:
  explicit JsonLinesWriter(const fs::path& file) : file_(file) {}
  ~JsonLinesWriter() override
  {
    try {
      file_.close();
    } catch (...) {  // destructors must not throw; close() reports errors
    }
  }

  void write(const CallRecord& r, const FunctionTable& functions) override
  {
    check_finite(r, file_, ++count_);
    const std::string& fn = functions.name(r.function);
    if (not valid_utf8(fn))
      throw InputError(detail::at_line(file_.path().string(), count_),
                       "function name is not valid UTF-8 and cannot be written as JSON (use the binary encoding)");
    const CallRecord& d = kDefaultRecord;
    std::string& o      = file_.buffer();
    o += "{\"op\":\"";
    o += op_name(r.op);
    o += "\",\"fn\":";
    append_json_string(o, fn);
    auto num = [&o](const char* k, auto v) {
      o += ",\"";
      o += k;
      o += "\":";
      append_number(o, v);
    };
    auto rank_or_any = [&o](const char* k, std::int32_t v, std::int32_t any) {
      o += ",\"";
      o += k;
      o += "\":";
      if (v == any)
        o += "\"any\"";
      else
        append_number(o, v);
    };
    auto vec = [&o](const char* k, const auto& v) {
      o += ",\"";
      o += k;
      o += "\":[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0)
          o.push_back(',');
        append_number(o, v[i]);
      }
      o.push_back(']');
    };
    if (r.seconds != d.seconds)
      num("seconds", r.seconds);
    if (r.flops != d.flops)
      num("flops", r.flops);
    if (r.peer != d.peer)
      rank_or_any("peer", r.peer, kAnySource);
    if (r.tag != d.tag)
      rank_or_any("tag", r.tag, kAnyTag);
    if (r.bytes != d.bytes)
      num("bytes", r.bytes);
    if (r.src != d.src)
      rank_or_any("src", r.src, kAnySource);
    if (r.recv_tag != d.recv_tag)
      rank_or_any("recv_tag", r.recv_tag, kAnyTag);
    if (r.recv_bytes != d.recv_bytes)
      num("recv_bytes", r.recv_bytes);
    if (r.comm != d.comm)
      num("comm", r.comm);
    if (r.root != d.root)
      num("root", r.root);
    if (r.request != d.request)
      num("request", r.request);
    if (not r.requests.empty())
      vec("requests", r.requests);
    if (not r.counts.empty())
      vec("counts", r.counts);
    if (not r.recv_counts.empty())
      vec("recv_counts", r.recv_counts);
    if (r.color != d.color)
      num("color", r.color);
    if (r.key != d.key)
      num("key", r.key);
    if (r.new_comm != d.new_comm)
      num("new_comm", r.new_comm);
    if (r.stream != d.stream)
      num("stream", r.stream);
    if (r.device != d.device)
      num("device", r.device);
    if (r.memory != d.memory)
      o += r.memory == Memory::Device ? ",\"memory\":\"device\"" : ",\"memory\":\"host\"";
    if (r.device_seconds != d.device_seconds)
      num("device_seconds", r.device_seconds);
    o += "}\n";
    file_.maybe_flush();
  }

  void close() override { file_.close(); }

private:
  static inline const CallRecord kDefaultRecord{};
  OutputFile file_;
  std::uint64_t count_ = 0;
};

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

CallStreamPtr open_native_trace(const fs::path& file, TraceEncoding encoding, int rank)
{
  if (encoding == TraceEncoding::Binary)
    return std::make_unique<detail::BinaryTraceStream>(file, rank);
  return std::make_unique<JsonLinesStream>(file, rank);
}

std::unique_ptr<TraceWriter> make_trace_writer(const fs::path& file, TraceEncoding encoding)
{
  if (encoding == TraceEncoding::Binary)
    return std::make_unique<BinaryWriter>(file);
  return std::make_unique<JsonLinesWriter>(file);
}

void write_profile(const TraceSource& source, RunInfo info, const fs::path& out, TraceEncoding encoding)
{
  std::error_code ec;
  if (const auto* dir = dynamic_cast<const ProfileDir*>(&source);
      dir != nullptr && fs::equivalent(dir->path(), out, ec))
    throw InputError(detail::at_file(out.string()), "the output directory is the input profile; choose another --out");
  fs::create_directories(out, ec);
  if (ec || not fs::is_directory(out))
    throw InputError(detail::at_file(out.string()),
                     "cannot create the output directory" + (ec ? ": " + ec.message() : std::string()));

  info.np       = source.rank_count();
  info.encoding = encoding;
  CallRecord record;
  for (int rank = 0; rank < info.np; ++rank) {
    CallStreamPtr in = source.open(rank);
    auto writer      = make_trace_writer(out / rank_file_name(rank, encoding), encoding);
    while (in->next(record))
      writer->write(record, in->functions());
    writer->close();
  }
  // run.json last: a conversion that failed half-way leaves no valid-looking profile behind.
  write_run_info(out / "run.json", info);
}

}  // namespace gridcast::models
