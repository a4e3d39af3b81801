// The readers' shared pieces: buffered input, the checks of launches and accesses, number parsing and
// the SASS opcode rules (docs/reference/gpu-memory-traces.md, "SASS opcodes").
#include "trace_io.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>

namespace fs = std::filesystem;

namespace gridcast::gpu_cache {

const char* to_string(AccessKind kind)
{
  switch (kind) {
    case AccessKind::GlobalLoad: return "ld.global";
    case AccessKind::GlobalStore: return "st.global";
    case AccessKind::LocalLoad: return "ld.local";
    case AccessKind::LocalStore: return "st.local";
    case AccessKind::GlobalAtomic: return "atom.global";
  }
  throw InternalError("to_string: access kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace gridcast::gpu_cache

namespace gridcast::gpu_cache::detail {

InputFile::InputFile(const fs::path& path) : name_(path.string())
{
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError({name_, 0, {}, -1}, "is a directory, not a trace file");
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr)
    throw InputError({name_, 0, {}, -1}, "cannot open the trace: " + open_failure(errno));
}

InputFile::~InputFile()
{
  if (file_ != nullptr)
    std::fclose(file_);
}

std::size_t InputFile::read(char* data, std::size_t size)
{
  const std::size_t got = std::fread(data, 1, size, file_);
  if (got < size && std::ferror(file_))
    throw InputError({name_, 0, {}, -1}, std::string("cannot read the trace: ") + std::strerror(errno));
  return got;
}

LineReader::LineReader(const fs::path& path) : file_(path), buffer_(std::size_t{1} << 18) {}

void LineReader::fail(const std::string& reason) const
{
  throw InputError({file_.name(), line_number_, {}, -1}, reason);
}

bool LineReader::next(std::string_view& line)
{
  for (;;) {
    const char* start = buffer_.data() + begin_;
    if (const void* nl = std::memchr(start, '\n', end_ - begin_)) {
      std::size_t length = static_cast<const char*>(nl) - start;
      begin_ += length + 1;
      ++line_number_;
      if (length > 0 && start[length - 1] == '\r')
        --length;
      line = {start, length};
      return true;
    }
    if (eof_) {
      if (begin_ == end_)
        return false;
      line = {start, end_ - begin_};
      begin_ = end_;
      ++line_number_;
      unterminated_ = true;
      return true;
    }
    // No complete line in the buffer: keep the partial one, and read behind it (growing the buffer
    // only for a line longer than it, up to the limit).
    const std::size_t partial = end_ - begin_;
    if (partial >= kMaxLineBytes) {
      ++line_number_;
      fail("a line longer than " + std::to_string(kMaxLineBytes) + " bytes (not a trace of this format)");
    }
    std::memmove(buffer_.data(), buffer_.data() + begin_, partial);
    begin_ = 0;
    end_   = partial;
    if (end_ == buffer_.size())
      buffer_.resize(buffer_.size() * 2);
    const std::size_t got = file_.read(buffer_.data() + end_, buffer_.size() - end_);
    if (got == 0)
      eof_ = true;
    end_ += got;
  }
}

std::string check_launch(const KernelLaunch& launch)
{
  if (launch.grid.x == 0 || launch.grid.y == 0 || launch.grid.z == 0)
    return "a grid dimension of 0 CTAs";
  if (launch.block.x == 0 || launch.block.y == 0 || launch.block.z == 0)
    return "a block dimension of 0 threads";
  if (launch.block.count() > kMaxThreadsPerCta)
    return "a CTA of " + std::to_string(launch.block.count()) + " threads (CUDA allows at most " +
           std::to_string(kMaxThreadsPerCta) + ")";
  return {};
}

std::string check_access(const WarpAccess& access, const KernelLaunch& launch)
{
  if (access.cta >= launch.grid.count())
    return "CTA " + std::to_string(access.cta) + " is outside the grid of " + std::to_string(launch.grid.count()) +
           " CTAs";
  const std::uint32_t warps = warps_per_cta(launch.block);
  if (access.warp >= warps)
    return "warp " + std::to_string(access.warp) + " is outside a CTA of " + std::to_string(warps) + " warps";
  if (size_log2(access.bytes_per_lane) < 0)
    return "an access size of " + std::to_string(access.bytes_per_lane) + " bytes (1, 2, 4, 8 or 16)";
  if (access.active_mask == 0)
    return "no active lane (mask 0)";
  return {};
}

int size_log2(std::uint64_t bytes)
{
  switch (bytes) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    case 16: return 4;
    default: return -1;
  }
}

namespace {

/// Bytes per lane from the opcode's modifiers: the first of 8/16/32/64/128 alone or after U, S or F
/// ("LDG.E.64", "LDG.E.U8", "ATOMG.E.ADD.F64.RN"); 4 bytes when none says.
std::uint8_t size_from_modifiers(std::string_view opcode)
{
  std::size_t dot = opcode.find('.');
  while (dot != std::string_view::npos) {
    std::size_t next      = opcode.find('.', dot + 1);
    std::string_view word = opcode.substr(dot + 1, next == std::string_view::npos ? std::string_view::npos : next - dot - 1);
    if (not word.empty() && (word[0] == 'U' || word[0] == 'S' || word[0] == 'F'))
      word.remove_prefix(1);
    if (word == "8")
      return 1;
    if (word == "16")
      return 2;
    if (word == "32")
      return 4;
    if (word == "64")
      return 8;
    if (word == "128")
      return 16;
    dot = next;
  }
  return 4;
}

}  // namespace

SassOpcode classify_sass(std::string_view opcode)
{
  const std::string_view base = opcode.substr(0, opcode.find('.'));
  SassOpcode out;
  auto access = [&](AccessKind kind) {
    out.what           = SassOpcode::Class::Access;
    out.kind           = kind;
    out.bytes_per_lane = size_from_modifiers(opcode);
    return out;
  };
  // Global memory, and generic LD/ST/ATOM (which address global memory in the kernels traced; shared
  // and local windows of the generic space are not told apart).
  if (base == "LDG" || base == "LD")
    return access(AccessKind::GlobalLoad);
  if (base == "STG" || base == "ST")
    return access(AccessKind::GlobalStore);
  if (base == "LDL")
    return access(AccessKind::LocalLoad);
  if (base == "STL")
    return access(AccessKind::LocalStore);
  if (base == "ATOMG" || base == "ATOM" || base == "RED" || base == "REDG")
    return access(AccessKind::GlobalAtomic);
  // Shared, constant, texture and surface memory, cache control, barriers and asynchronous copies into
  // shared memory: no L1/L2 data-cache traffic the model follows.
  static constexpr std::string_view kSkipped[] = {
      "LDS", "STS", "LDSM", "STSM", "ATOMS", "REDS", "LDC", "ULDC", "TEX", "TLD", "TLD4", "TMML", "TXD", "TXQ",
      "SULD", "SUST", "SUATOM", "SURED", "SUQUERY", "CCTL", "CCTLL", "CCTLT", "MEMBAR", "ERRBAR", "FENCE",
      "LDGSTS", "LDGDEPBAR", "DEPBAR", "UBLKCP", "UBLKRED", "UBLKPF", "UTMALDG", "UTMASTG", "UTMAPF",
      "UTMAREDG", "UTMACCTL", "UTMACMDFLUSH", "ATOMCAS", "QSPC"};
  for (std::string_view skipped : kSkipped)
    if (base == skipped) {
      out.what = SassOpcode::Class::Skipped;
      return out;
    }
  return out;
}

std::optional<std::uint64_t> parse_unsigned(std::string_view text, int base)
{
  std::uint64_t value = 0;
  if (text.empty())
    return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parse_hex_prefixed(std::string_view text)
{
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X'))
    return std::nullopt;
  return parse_unsigned(text.substr(2), 16);
}

std::optional<std::int64_t> parse_signed(std::string_view text)
{
  std::int64_t value = 0;
  if (text.empty() || text[0] == '+')
    return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

bool parse_dim3(std::string_view text, Dim3& d)
{
  const std::size_t a = text.find(','), b = a == std::string_view::npos ? a : text.find(',', a + 1);
  if (b == std::string_view::npos)
    return false;
  auto x = parse_unsigned(text.substr(0, a)), y = parse_unsigned(text.substr(a + 1, b - a - 1)),
       z = parse_unsigned(text.substr(b + 1));
  if (not x || not y || not z || *x > 0xffffffffu || *y > 0xffffffffu || *z > 0xffffffffu)
    return false;
  d = {static_cast<std::uint32_t>(*x), static_cast<std::uint32_t>(*y), static_cast<std::uint32_t>(*z)};
  return true;
}

void split_words(std::string_view text, std::vector<std::string_view>& words)
{
  words.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t')
      ++i;
    if (i > start)
      words.push_back(text.substr(start, i - start));
  }
}

}  // namespace gridcast::gpu_cache::detail
