// What the trace readers share: buffered input (lines or bytes) that never holds more than its buffer,
// the checks every access passes whatever its format, and the SASS opcode rules of the foreign formats.
#pragma once

#include "gridcast/foundation/errors.hpp"
#include "gridcast/gpu_cache/trace.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::gpu_cache::detail {

/// The longest line a text reader accepts: an NVBit line of 32 addresses is under 700 bytes, an
/// Accel-Sim instruction under 1 KiB; a longer one is a damaged file, not a reason to buffer gigabytes.
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

/// Threads per CTA: CUDA's limit (1024 on every architecture since Fermi) bounds warps per CTA to 32.
constexpr std::uint64_t kMaxThreadsPerCta = 1024;

/// A file opened for reading in blocks; closes itself.
class InputFile {
public:
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&)            = delete;
  InputFile& operator=(const InputFile&) = delete;
  /// Reads up to `size` bytes; 0 at the end of the file. Throws InputError on a read error.
  std::size_t read(char* data, std::size_t size);
  const std::string& name() const { return name_; }

private:
  std::FILE* file_ = nullptr;
  std::string name_;
};

/// Lines of a text file, one at a time, through a fixed buffer (the trace is never held whole).
class LineReader {
public:
  explicit LineReader(const std::filesystem::path& path);
  /// The next line without its '\n' (and a '\r' before it); false at the end of the file.
  bool next(std::string_view& line);
  /// 1-based number of the line next() gave last.
  std::uint64_t line_number() const { return line_number_; }
  /// Whether the last line given ended the file without a '\n' (a truncated write).
  bool last_line_unterminated() const { return unterminated_; }
  const std::string& file_name() const { return file_.name(); }
  [[noreturn]] void fail(const std::string& reason) const;

private:
  InputFile file_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false, unterminated_ = false;
  std::uint64_t line_number_ = 0;
};

/// Warps of a CTA of `block` threads.
inline std::uint32_t warps_per_cta(const Dim3& block)
{
  return static_cast<std::uint32_t>((block.count() + kWarpLanes - 1) / kWarpLanes);
}

/// Checks a launch's shape (every dimension at least 1, at most 1024 threads per CTA); returns the
/// reason it is wrong, or an empty string.
std::string check_launch(const KernelLaunch& launch);

/// Checks an access against its launch (CTA in the grid, warp in the CTA, size, a lane active); returns
/// the reason it is wrong, or an empty string.
std::string check_access(const WarpAccess& access, const KernelLaunch& launch);

/// log2 of a lane size of 1, 2, 4, 8 or 16 bytes; -1 for any other.
int size_log2(std::uint64_t bytes);

/// What the readers of SASS text (NVBit, Accel-Sim) make of an opcode such as "LDG.E.64.SYS".
struct SassOpcode {
  enum class Class { Access, Skipped, Unknown };
  Class what = Class::Unknown;
  AccessKind kind = AccessKind::GlobalLoad;
  std::uint8_t bytes_per_lane = 4;
};
SassOpcode classify_sass(std::string_view opcode);

/// Parses an unsigned decimal (or, with base 16, hex without "0x") number that fills `text`.
std::optional<std::uint64_t> parse_unsigned(std::string_view text, int base = 10);
/// Parses "0x..." (hex digits required) that fills `text`.
std::optional<std::uint64_t> parse_hex_prefixed(std::string_view text);
/// Parses a signed decimal that fills `text`.
std::optional<std::int64_t> parse_signed(std::string_view text);

inline bool starts_with(std::string_view text, std::string_view prefix)
{
  return text.substr(0, prefix.size()) == prefix;
}

/// Parses "x,y,z" (32-bit counts) that fills `text`.
bool parse_dim3(std::string_view text, Dim3& d);

/// Splits on runs of spaces and tabs.
void split_words(std::string_view text, std::vector<std::string_view>& words);

// The format-specific readers (open_trace picks one).
std::unique_ptr<TraceReader> open_native_jsonl(const std::filesystem::path& path);
std::unique_ptr<TraceReader> open_native_binary(const std::filesystem::path& path);
std::unique_ptr<TraceReader> open_nvbit(const std::filesystem::path& path);
std::unique_ptr<TraceReader> open_accelsim(const std::filesystem::path& path);

/// The first bytes of the binary encoding ("GCMTRACE"), then the version byte.
inline constexpr char kBinaryMagic[8] = {'G', 'C', 'M', 'T', 'R', 'A', 'C', 'E'};
inline constexpr std::uint8_t kBinaryVersion = 1;
inline constexpr std::string_view kJsonlFormat = "gridcast-memtrace";
inline constexpr std::uint64_t kJsonlVersion = 1;

// Binary record tags (docs/reference/gpu-memory-traces.md).
inline constexpr std::uint8_t kTagKernel = 'K';
inline constexpr std::uint8_t kTagEnd = 'E';
inline constexpr std::uint8_t kTagAccess = 0x80;     ///< | full_warp << 6 | has_sm << 5 | mode << 3 | kind
inline constexpr std::uint8_t kTagAccessFullWarp = 0x40;  ///< all 32 lanes active: no mask follows
inline constexpr std::uint8_t kTagAccessHasSm = 0x20;
/// The longest kernel name the binary encoding carries (a mangled C++ template name is a few KiB).
inline constexpr std::uint64_t kMaxKernelNameBytes = 1 << 16;

/// Address modes of the binary encoding, as Accel-Sim's tracer compresses a warp's addresses.
enum class AddressMode : std::uint8_t { List = 0, BaseStride = 1, BaseDelta = 2 };

}  // namespace gridcast::gpu_cache::detail
