// The native JSON-lines reader: one object a line, parsed in place by a small scanner made for these
// three shapes of line (a general JSON library would allocate a tree per line: 10x slower on traces of
// gigabytes). Unknown keys, repeated keys and values of the wrong type are errors naming the line.
#include "trace_io.hpp"

#include <bit>
#include <charconv>
#include <cmath>

namespace fs = std::filesystem;

namespace gridcast::gpu_cache::detail {

namespace {

/// One line's scanner; every failure goes through the reader's fail() (file and line).
class Scanner {
public:
  Scanner(std::string_view text, const LineReader& lines) : s_(text), lines_(lines) {}

  [[noreturn]] void fail(const std::string& reason) const { lines_.fail(reason); }

  void skip_ws()
  {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t'))
      ++i_;
  }
  bool at_end()
  {
    skip_ws();
    return i_ == s_.size();
  }
  char peek()
  {
    skip_ws();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void expect(char c, const char* what)
  {
    if (peek() != c)
      fail(std::string("bad JSON: expected ") + what);
    ++i_;
  }

  /// A string; escapes decoded into `out` (kernel names may carry any character).
  void string(std::string& out)
  {
    expect('"', "a string");
    out.clear();
    for (;;) {
      if (i_ >= s_.size())
        fail("bad JSON: a string without its closing quote");
      const char c = s_[i_++];
      if (c == '"')
        return;
      if (static_cast<unsigned char>(c) < 0x20)
        fail("bad JSON: a control character inside a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size())
        fail("bad JSON: a string without its closing quote");
      switch (const char e = s_[i_++]) {
        case '"': case '\\': case '/': out.push_back(e); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': utf8(unicode_escape(), out); break;
        default: fail(std::string("bad JSON: the escape \\") + e);
      }
    }
  }

  std::uint64_t unsigned_number(const char* key)
  {
    skip_ws();
    std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9')
      ++i_;
    auto v = parse_unsigned(s_.substr(start, i_ - start));
    if (not v || (i_ - start > 1 && s_[start] == '0') || is_number_char())
      fail(std::string("key '") + key + "': not an unsigned integer");
    return *v;
  }

  std::uint32_t u32(const char* key)
  {
    const std::uint64_t v = unsigned_number(key);
    if (v > 0xffffffffu)
      fail(std::string("key '") + key + "': " + std::to_string(v) + " does not fit 32 bits");
    return static_cast<std::uint32_t>(v);
  }

  double real(const char* key)
  {
    skip_ws();
    std::size_t start = i_;
    while (i_ < s_.size() && is_number_char())
      ++i_;
    double v       = 0;
    const char* b  = s_.data() + start;
    const char* e  = s_.data() + i_;
    auto [end, ec] = std::from_chars(b, e, v);
    if (start == i_ || ec != std::errc{} || end != e || not std::isfinite(v))
      fail(std::string("key '") + key + "': not a number");
    return v;
  }

  /// "[a,b,...]" of unsigned integers, each given to `put`.
  template <class Put>
  void unsigned_array(const char* key, Put&& put)
  {
    expect('[', "an array");
    if (peek() == ']') {
      ++i_;
      return;
    }
    for (;;) {
      put(unsigned_number(key));
      const char c = peek();
      ++i_;
      if (c == ']')
        return;
      if (c != ',')
        fail(std::string("key '") + key + "': bad JSON array");
    }
  }

  /// The next key of the object ("{" before the first, "," between them); false after the "}".
  bool next_key(std::string& key, bool first)
  {
    if (first)
      expect('{', "an object");
    const char c = peek();
    if (c == '}') {
      ++i_;
      if (not at_end())
        fail("bad JSON: text after the object");
      return false;
    }
    if (not first) {
      if (c != ',')
        fail("bad JSON: expected ',' or '}'");
      ++i_;
    }
    string(key);
    expect(':', "':' after a key");
    return true;
  }

private:
  bool is_number_char() const
  {
    if (i_ >= s_.size())
      return false;
    const char c = s_[i_];
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  }

  unsigned hex4()
  {
    if (i_ + 4 > s_.size())
      fail("bad JSON: a short \\u escape");
    auto v = parse_unsigned(s_.substr(i_, 4), 16);
    if (not v)
      fail("bad JSON: a bad \\u escape");
    i_ += 4;
    return static_cast<unsigned>(*v);
  }

  std::uint32_t unicode_escape()
  {
    std::uint32_t cp = hex4();
    if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
      if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u')
        fail("bad JSON: a lone surrogate in a \\u escape");
      i_ += 2;
      const std::uint32_t low = hex4();
      if (low < 0xdc00 || low >= 0xe000)
        fail("bad JSON: a lone surrogate in a \\u escape");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
      fail("bad JSON: a lone surrogate in a \\u escape");
    }
    return cp;
  }

  static void utf8(std::uint32_t cp, std::string& out)
  {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  const LineReader& lines_;
};

std::optional<AccessKind> kind_from_op(std::string_view op)
{
  for (AccessKind k : {AccessKind::GlobalLoad, AccessKind::GlobalStore, AccessKind::LocalLoad, AccessKind::LocalStore,
                       AccessKind::GlobalAtomic})
    if (op == to_string(k))
      return k;
  return std::nullopt;
}

class JsonlReader final : public TraceReader {
public:
  explicit JsonlReader(const fs::path& path) : lines_(path)
  {
    std::string_view line;
    if (not lines_.next(line))
      lines_.fail("an empty file (a native JSON-lines trace begins with {\"format\":\"gridcast-memtrace\",...})");
    Scanner sc(line, lines_);
    bool first = true, has_format = false, has_version = false;
    while (sc.next_key(key_, first)) {
      first = false;
      if (key_ == "format" && not has_format) {
        sc.string(text_);
        if (text_ != kJsonlFormat)
          lines_.fail("format '" + text_ + "' (expected '" + std::string(kJsonlFormat) + "')");
        has_format = true;
      } else if (key_ == "version" && not has_version) {
        const std::uint64_t version = sc.unsigned_number("version");
        if (version != kJsonlVersion)
          lines_.fail("version " + std::to_string(version) + " (this gridcast reads version " +
                      std::to_string(kJsonlVersion) + ")");
        has_version = true;
      } else {
        lines_.fail("key '" + key_ + "': unknown or repeated in the header line");
      }
    }
    if (not has_format || not has_version)
      lines_.fail("the header line needs \"format\" and \"version\"");
    check_terminated();
  }

  bool grouped_by_cta() const override { return true; }

  bool next_kernel(KernelLaunch& launch) override
  {
    for (;;) {
      if (pending_ == Pending::Kernel) {
        pending_ = Pending::None;
        launch   = launch_;
        return true;
      }
      if (pending_ == Pending::End)
        return false;
      if (read_line(scratch_) && not has_kernel_)
        lines_.fail("an access line before any kernel line");
    }
  }

  bool next_access(WarpAccess& access) override
  {
    if (not has_kernel_ || pending_ != Pending::None)
      return false;
    return read_line(access);
  }

private:
  enum class Pending { None, Kernel, End };

  void check_terminated() const
  {
    if (lines_.last_line_unterminated())
      lines_.fail("truncated: the last line has no end of line");
  }

  /// Reads the next non-empty line: an access into `access` (true), or a kernel line or the end of the
  /// file noted as pending (false).
  bool read_line(WarpAccess& access)
  {
    std::string_view line;
    do {
      if (not lines_.next(line)) {
        pending_ = Pending::End;
        return false;
      }
    } while (line.find_first_not_of(" \t") == std::string_view::npos);
    check_terminated();
    Scanner sc(line, lines_);
    if (not sc.next_key(key_, true))
      lines_.fail("an empty object");
    if (key_ == "kernel") {
      read_kernel(sc);
      pending_ = Pending::Kernel;
      return false;
    }
    if (not has_kernel_ && key_ == "cta")
      lines_.fail("an access line before any kernel line");
    read_access(sc, access);
    return true;
  }

  void read_kernel(Scanner& sc)
  {
    KernelLaunch k;
    k.launch_id = launches_;
    unsigned seen = 0;
    auto once = [&](unsigned bit) {
      if (seen & bit)
        lines_.fail("key '" + key_ + "' repeated");
      seen |= bit;
    };
    auto dim3 = [&](Dim3& d) {
      std::uint32_t v[3];
      unsigned n = 0;
      sc.unsigned_array(key_.c_str(), [&](std::uint64_t x) {
        if (n == 3 || x > 0xffffffffu)
          lines_.fail("key '" + key_ + "': expected [x,y,z] of 32-bit counts");
        v[n++] = static_cast<std::uint32_t>(x);
      });
      if (n != 3)
        lines_.fail("key '" + key_ + "': expected [x,y,z]");
      d = {v[0], v[1], v[2]};
    };
    sc.string(k.name);
    once(1);
    while (sc.next_key(key_, false)) {
      if (key_ == "launch_id") {
        once(2);
        k.launch_id = sc.unsigned_number("launch_id");
      } else if (key_ == "grid") {
        once(4);
        dim3(k.grid);
      } else if (key_ == "block") {
        once(8);
        dim3(k.block);
      } else if (key_ == "shared_bytes") {
        once(16);
        k.shared_bytes_per_cta = sc.u32("shared_bytes");
      } else if (key_ == "registers") {
        once(32);
        k.registers_per_thread = sc.u32("registers");
      } else if (key_ == "flops") {
        once(64);
        k.flops = sc.real("flops");
        if (k.flops < 0)
          k.flops = -1;
      } else {
        lines_.fail("key '" + key_ + "': unknown in a kernel line");
      }
    }
    if ((seen & (4 | 8)) != (4 | 8))
      lines_.fail("kernel '" + k.name + "': a kernel line needs \"grid\" and \"block\"");
    if (std::string reason = check_launch(k); not reason.empty())
      lines_.fail("kernel '" + k.name + "': " + reason);
    launch_     = std::move(k);
    has_kernel_ = true;
    ++launches_;
  }

  void read_access(Scanner& sc, WarpAccess& a)
  {
    unsigned seen = 0;
    std::uint64_t addrs[kWarpLanes];
    unsigned n_addrs = 0;
    a.sm             = -1;
    bool first_key   = true;
    do {
      const unsigned bit = key_ == "cta" ? 1 : key_ == "warp" ? 2 : key_ == "sm" ? 4 : key_ == "op" ? 8
                         : key_ == "size" ? 16 : key_ == "mask" ? 32 : key_ == "addrs" ? 64 : 0;
      if (bit == 0)
        lines_.fail("key '" + key_ + "': unknown in an access line" +
                    (first_key ? " (a line begins with \"kernel\" or \"cta\")" : ""));
      if (seen & bit)
        lines_.fail("key '" + key_ + "' repeated");
      seen |= bit;
      first_key = false;
      switch (bit) {
        case 1: a.cta = sc.unsigned_number("cta"); break;
        case 2: a.warp = sc.u32("warp"); break;
        case 4: {
          const std::uint64_t sm = sc.unsigned_number("sm");
          if (sm > 0x7fffffff)
            lines_.fail("key 'sm': " + std::to_string(sm) + " is out of range");
          a.sm = static_cast<std::int32_t>(sm);
          break;
        }
        case 8: {
          sc.string(text_);
          auto kind = kind_from_op(text_);
          if (not kind)
            lines_.fail("key 'op': unknown operation '" + text_ +
                        "' (ld.global, st.global, ld.local, st.local or atom.global)");
          a.kind = *kind;
          break;
        }
        case 16: {
          const std::uint64_t size = sc.unsigned_number("size");
          if (size_log2(size) < 0)
            lines_.fail("key 'size': " + std::to_string(size) + " bytes (1, 2, 4, 8 or 16)");
          a.bytes_per_lane = static_cast<std::uint8_t>(size);
          break;
        }
        case 32: {
          sc.string(text_);
          auto mask = text_.size() <= 10 ? parse_hex_prefixed(text_) : std::nullopt;
          if (not mask || *mask > 0xffffffffu)
            lines_.fail("key 'mask': '" + text_ + "' is not a 32-bit hex mask such as \"0xffffffff\"");
          a.active_mask = static_cast<std::uint32_t>(*mask);
          break;
        }
        case 64:
          sc.unsigned_array("addrs", [&](std::uint64_t x) {
            if (n_addrs == kWarpLanes)
              lines_.fail("key 'addrs': more than 32 addresses");
            addrs[n_addrs++] = x;
          });
          break;
      }
    } while (sc.next_key(key_, false));
    if (seen != (127 & ~4u) && seen != 127)
      lines_.fail("an access line needs \"cta\", \"warp\", \"op\", \"size\", \"mask\" and \"addrs\"");
    if (static_cast<unsigned>(std::popcount(a.active_mask)) != n_addrs)
      lines_.fail("mask " + text_for_mask(a.active_mask) + " has " + std::to_string(std::popcount(a.active_mask)) +
                  " active lanes but " + std::to_string(n_addrs) + " addresses are given");
    unsigned k = 0;
    for (std::uint32_t m = a.active_mask; m != 0; m &= m - 1)
      a.address[std::countr_zero(m)] = addrs[k++];
    if (std::string reason = check_access(a, launch_); not reason.empty())
      lines_.fail("kernel '" + launch_.name + "': " + reason);
  }

  static std::string text_for_mask(std::uint32_t mask)
  {
    char text[16];
    auto [end, ec] = std::to_chars(text, text + sizeof text, mask, 16);
    return "0x" + std::string(text, end);
  }

  LineReader lines_;
  std::string key_, text_;
  Pending pending_ = Pending::None;
  bool has_kernel_ = false;
  KernelLaunch launch_;
  std::uint64_t launches_ = 0;
  WarpAccess scratch_;
};

}  // namespace

std::unique_ptr<TraceReader> open_native_jsonl(const fs::path& path)
{
  return std::make_unique<JsonlReader>(path);
}

}  // namespace gridcast::gpu_cache::detail
