// The native binary reader: tagged records through a fixed buffer, one at a time. Byte layout in
// docs/reference/gpu-memory-traces.md; errors name the byte offset of the record at fault.
#include "trace_io.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace fs = std::filesystem;

namespace gridcast::gpu_cache::detail {

namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
/// The longest access record: tag, size, three varints, the mask and 32 varint addresses.
constexpr std::size_t kMaxAccessBytes = 2 + 3 * 10 + 4 + 32 * 10;

std::string hex_byte(std::uint8_t b)
{
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 15];
}

class BinaryReader final : public TraceReader {
public:
  explicit BinaryReader(const fs::path& path) : file_(path), buffer_(kBufferBytes)
  {
    record_at_ = 0;
    if (not ensure(sizeof kBinaryMagic + 1) || std::memcmp(buffer_.data(), kBinaryMagic, sizeof kBinaryMagic) != 0)
      fail("not a gridcast binary memory trace (the file does not begin with \"GCMTRACE\")");
    const auto version = static_cast<std::uint8_t>(buffer_[sizeof kBinaryMagic]);
    if (version != kBinaryVersion)
      fail("binary memory trace version " + std::to_string(version) + " (this gridcast reads version " +
           std::to_string(kBinaryVersion) + ")");
    pos_ = sizeof kBinaryMagic + 1;
  }

  bool grouped_by_cta() const override { return true; }

  bool next_kernel(KernelLaunch& launch) override
  {
    for (;;) {
      if (ended_)
        return false;
      const int tag = peek_tag();
      if (tag == kTagKernel) {
        read_kernel();
        launch = launch_;
        return true;
      }
      if (tag == kTagEnd) {
        read_end();
        return false;
      }
      if (not has_kernel_)
        fail("an access record before any kernel record");
      read_access(scratch_);  // what is left of the current launch
    }
  }

  bool next_access(WarpAccess& access) override
  {
    if (ended_ || not has_kernel_)
      return false;
    const int tag = peek_tag();
    if (tag == kTagKernel || tag == kTagEnd)
      return false;
    read_access(access);
    return true;
  }

private:
  [[noreturn, gnu::cold, gnu::noinline]] void fail(const std::string& reason) const
  {
    throw InputError({file_.name(), 0, {}, -1}, "byte offset " + std::to_string(record_at_) + ": " + reason);
  }

  /// At least `n` bytes from pos_ in the buffer, reading on; false when the file ends first.
  bool ensure(std::size_t n)
  {
    if (end_ - pos_ >= n)
      return true;
    std::memmove(buffer_.data(), buffer_.data() + pos_, end_ - pos_);
    offset_ += pos_;
    end_ -= pos_;
    pos_ = 0;
    if (n > buffer_.size())
      buffer_.resize(n);
    while (end_ < n && not eof_) {
      const std::size_t got = file_.read(buffer_.data() + end_, buffer_.size() - end_);
      if (got == 0)
        eof_ = true;
      end_ += got;
    }
    return end_ >= n;
  }

  /// The next record's tag (not consumed); the record's offset is noted for errors.
  int peek_tag()
  {
    record_at_ = offset_ + pos_;
    if (not ensure(1))
      fail("truncated: the file ends without its end record");
    return static_cast<std::uint8_t>(buffer_[pos_]);
  }

  // Reading within [p, e): every read checks the end, and a short record is a truncated file.
  struct Cursor {
    const char* p;
    const char* e;
  };

  [[noreturn, gnu::cold, gnu::noinline]] void fail_truncated() const { fail("truncated record"); }

  // kChecked: every byte read checks the end of the buffer (near the end of the file); without, the
  // caller made sure the longest record fits (the hot path of a large trace).
  template <bool kChecked = true>
  std::uint8_t get_byte(Cursor& c)
  {
    if constexpr (kChecked)
      if (c.p == c.e) [[unlikely]]
        fail_truncated();
    return static_cast<std::uint8_t>(*c.p++);
  }

  template <bool kChecked = true>
  std::uint64_t get_varint(Cursor& c)
  {
    std::uint8_t b = get_byte<kChecked>(c);
    if (b < 0x80) [[likely]]
      return b;
    std::uint64_t v = b & 0x7f;
    for (unsigned shift = 7;; shift += 7) {
      b = get_byte<kChecked>(c);
      if (shift == 63 && b > 1) [[unlikely]]
        fail("a number that overflows 64 bits");
      v |= std::uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0)
        return v;
    }
  }

  std::uint32_t get_u32_varint(Cursor& c, const char* what)
  {
    const std::uint64_t v = get_varint(c);
    if (v > std::numeric_limits<std::uint32_t>::max())
      fail(std::string(what) + " " + std::to_string(v) + " does not fit 32 bits");
    return static_cast<std::uint32_t>(v);
  }

  static std::int64_t unzigzag(std::uint64_t v)
  {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
  }

  void read_kernel()
  {
    // The fixed part is at most 1 + 9 varints + 8 bytes + the name's length; the name follows.
    ensure(1 + 10 * 10 + 8 + 10);
    Cursor c{buffer_.data() + pos_ + 1, buffer_.data() + end_};
    KernelLaunch k;
    k.launch_id = get_varint(c);
    for (Dim3* d : {&k.grid, &k.block}) {
      d->x = get_u32_varint(c, "a dimension");
      d->y = get_u32_varint(c, "a dimension");
      d->z = get_u32_varint(c, "a dimension");
    }
    k.shared_bytes_per_cta = get_u32_varint(c, "shared bytes");
    k.registers_per_thread = get_u32_varint(c, "registers");
    std::uint64_t bits     = 0;
    for (int i = 0; i < 8; ++i)
      bits |= std::uint64_t(get_byte(c)) << (8 * i);
    k.flops = std::bit_cast<double>(bits);
    if (not std::isfinite(k.flops))
      fail("flops is not a finite number");
    if (k.flops < 0)
      k.flops = -1;
    const std::uint64_t name_bytes = get_varint(c);
    if (name_bytes > kMaxKernelNameBytes)
      fail("a kernel name of " + std::to_string(name_bytes) + " bytes (at most " +
           std::to_string(kMaxKernelNameBytes) + ")");
    const std::size_t head = static_cast<std::size_t>(c.p - (buffer_.data() + pos_));
    if (not ensure(head + name_bytes))
      fail("truncated record");
    k.name.assign(buffer_.data() + pos_ + head, name_bytes);
    pos_ += head + name_bytes;
    if (std::string reason = check_launch(k); not reason.empty())
      fail("kernel '" + k.name + "': " + reason);
    launch_     = std::move(k);
    has_kernel_ = true;
    grid_ctas_  = launch_.grid.count();
    cta_warps_  = warps_per_cta(launch_.block);
  }

  void read_end()
  {
    ensure(1 + 10);
    Cursor c{buffer_.data() + pos_ + 1, buffer_.data() + end_};
    const std::uint64_t count = get_varint(c);
    pos_ = static_cast<std::size_t>(c.p - buffer_.data());
    if (count != accesses_)
      fail("the end record counts " + std::to_string(count) + " accesses, the file holds " +
           std::to_string(accesses_));
    if (ensure(1)) {
      record_at_ = offset_ + pos_;
      fail("bytes after the end record");
    }
    ended_ = true;
  }

  void read_access(WarpAccess& a)
  {
    if (ensure(kMaxAccessBytes)) [[likely]]
      decode_access<false>(a);
    else
      decode_access<true>(a);
    ++accesses_;
  }

  template <bool kChecked>
  void decode_access(WarpAccess& a)
  {
    Cursor c{buffer_.data() + pos_, buffer_.data() + end_};
    const std::uint8_t tag = get_byte<kChecked>(c);
    const unsigned kind = tag & 7, mode = (tag >> 3) & 3;
    if ((tag & kTagAccess) == 0 || kind > static_cast<unsigned>(AccessKind::GlobalAtomic) ||
        mode > static_cast<unsigned>(AddressMode::BaseDelta))
      fail("unknown record tag " + hex_byte(tag));
    const std::uint8_t size = get_byte<kChecked>(c);
    if (size > 4)
      fail("access size code " + std::to_string(size) + " (0 to 4: 1, 2, 4, 8 or 16 bytes)");
    a.kind           = static_cast<AccessKind>(kind);
    a.bytes_per_lane = static_cast<std::uint8_t>(1u << size);
    a.cta            = get_varint<kChecked>(c);
    const std::uint64_t warp = get_varint<kChecked>(c);
    a.warp                   = static_cast<std::uint32_t>(warp);
    a.sm             = -1;
    if (tag & kTagAccessHasSm) {
      const std::uint64_t sm = get_varint<kChecked>(c);
      if (sm > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
        fail("SM " + std::to_string(sm) + " is out of range");
      a.sm = static_cast<std::int32_t>(sm);
    }
    std::uint32_t mask = 0xffffffffu;
    if ((tag & kTagAccessFullWarp) == 0) {
      mask = 0;
      for (int i = 0; i < 4; ++i)
        mask |= std::uint32_t(get_byte<kChecked>(c)) << (8 * i);
    }
    a.active_mask = mask;
    if (mask == 0)
      fail("no active lane (mask 0)");
    switch (static_cast<AddressMode>(mode)) {
      case AddressMode::List:
        for (std::uint32_t m = mask; m != 0; m &= m - 1)
          a.address[std::countr_zero(m)] = get_varint<kChecked>(c);
        break;
      case AddressMode::BaseStride: {
        std::uint64_t address = get_varint<kChecked>(c);
        const auto stride     = static_cast<std::uint64_t>(unzigzag(get_varint<kChecked>(c)));
        if (mask == 0xffffffffu) {
          for (unsigned lane = 0; lane < kWarpLanes; ++lane)
            a.address[lane] = address + lane * stride;
        } else {
          for (std::uint32_t m = mask; m != 0; m &= m - 1, address += stride)
            a.address[std::countr_zero(m)] = address;
        }
        break;
      }
      case AddressMode::BaseDelta: {
        std::uint64_t address = get_varint<kChecked>(c);
        std::uint32_t m       = mask;
        a.address[std::countr_zero(m)] = address;
        for (m &= m - 1; m != 0; m &= m - 1) {
          const std::int64_t delta = unzigzag(get_varint<kChecked>(c));
          if (delta < std::numeric_limits<std::int32_t>::min() || delta > std::numeric_limits<std::int32_t>::max())
            fail("an address delta of " + std::to_string(delta) + " does not fit 32 bits");
          address += static_cast<std::uint64_t>(delta);
          a.address[std::countr_zero(m)] = address;
        }
        break;
      }
    }
    if (a.cta >= grid_ctas_ || warp >= cta_warps_) [[unlikely]]  // the size and the mask are checked above
      fail("kernel '" + launch_.name + "': " +
           (a.cta >= grid_ctas_ ? check_access(a, launch_)
                                : "warp " + std::to_string(warp) + " is outside a CTA of " + std::to_string(cta_warps_) +
                                      " warps"));
    pos_ = static_cast<std::size_t>(c.p - buffer_.data());
  }

  InputFile file_;
  std::vector<char> buffer_;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t offset_ = 0;     ///< file offset of buffer_[0]
  std::uint64_t record_at_ = 0;  ///< file offset of the record being read, for errors
  bool eof_ = false, ended_ = false, has_kernel_ = false;
  KernelLaunch launch_;
  std::uint64_t accesses_ = 0;
  WarpAccess scratch_;

  // The launch's bounds, set with it (read_kernel) for the per-access check.
  std::uint64_t grid_ctas_ = 0;
  std::uint32_t cta_warps_ = 0;
};

}  // namespace

std::unique_ptr<TraceReader> open_native_binary(const fs::path& path)
{
  return std::make_unique<BinaryReader>(path);
}

}  // namespace gridcast::gpu_cache::detail
