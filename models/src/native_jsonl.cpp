// The native JSON-lines trace encoding: its reader (SAX events straight into a CallRecord) and its
// writer. Keys and values: docs/reference/traces.md.
#include "gridcast/models/native.hpp"

#include "io.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace fs = std::filesystem;

namespace gridcast::models {

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
  LibArgs,
  LibOptions,
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
      {"lib_args", JField::LibArgs},
      {"lib_options", JField::LibOptions},
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
      case JField::LibArgs:
        lib_args_ = 0;
        rec_.library.recorded = true;
        break;
      default:
        return fail("expected a scalar value, got an array");
    }
    in_array_ = true;
    return true;
  }
  bool end_array()
  {
    if (field_ == JField::LibArgs && lib_args_ != kLibArgs)
      return fail("expected " + std::to_string(kLibArgs) + " integers (m, n, k, ld_a, ld_b, ld_c, inc_x, inc_y), got " +
                  std::to_string(lib_args_));
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
        case JField::LibArgs: {
          std::int64_t x = 0;
          if (not to_int64(v, x))
            return false;
          if (lib_args_ >= kLibArgs)
            return fail("more than " + std::to_string(kLibArgs) + " values");
          LibraryArgs& a = rec_.library;
          std::int64_t* slots[kLibArgs] = {&a.m, &a.n, &a.k, &a.ld_a, &a.ld_b, &a.ld_c, &a.inc_x, &a.inc_y};
          *slots[lib_args_++] = x;
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
      case JField::LibArgs:
        return type_error("an array", v);
      case JField::LibOptions:
        if (v.kind != JValue::String)
          return type_error("a string", v);
        if (v.s->size() != rec_.library.options.size())
          return fail("expected " + std::to_string(rec_.library.options.size()) +
                      " letters (trans_a, trans_b, side, uplo, diag; '-' where none)");
        if (v.s->find_first_not_of("NTCLRU-") != std::string::npos)
          return fail("option letters are N, T, C, L, R, U or '-'");
        std::copy(v.s->begin(), v.s->end(), rec_.library.options.begin());
        return true;
      case JField::None:
        break;
    }
    return fail("unexpected value");
  }

  CallRecord& rec_;
  std::string& fn_;
  int depth_          = 0;
  bool in_array_      = false;
  static constexpr int kLibArgs = 8;
  int lib_args_       = 0;  ///< lib_args values read so far
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
using detail::check_finite;
using detail::OutputFile;

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
    if (r.library.recorded) {
      const LibraryArgs& a = r.library;
      vec("lib_args", std::array<std::int64_t, 8>{a.m, a.n, a.k, a.ld_a, a.ld_b, a.ld_c, a.inc_x, a.inc_y});
      o += ",\"lib_options\":\"";
      o.append(a.options.begin(), a.options.end());
      o += '"';
    }
    o += "}\n";
    file_.maybe_flush();
  }

  void close() override { file_.close(); }

private:
  static inline const CallRecord kDefaultRecord{};
  OutputFile file_;
  std::uint64_t count_ = 0;
};
}  // namespace

namespace detail {

CallStreamPtr open_jsonl_trace(const fs::path& file, int rank) { return std::make_unique<JsonLinesStream>(file, rank); }

std::unique_ptr<TraceWriter> make_jsonl_writer(const fs::path& file) { return std::make_unique<JsonLinesWriter>(file); }

}  // namespace detail
}  // namespace gridcast::models
