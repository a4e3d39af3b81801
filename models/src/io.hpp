// Internal I/O helpers of gridcast::models: buffered line and byte readers that stream a file in fixed-size
// chunks (never the whole file), and the binary trace codec shared by the native reader/writer and the TIT
// single-file splitter. Not installed, not part of the API.
#pragma once

#include "gridcast/models/call.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/stream.hpp"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::models::detail {

// 8 KiB: the writers' chunk (one write syscall per ~400 TIT lines).
inline constexpr std::size_t kIoBufferSize = 8 * 1024;
// 1 KiB: the readers' buffer (it grows for a longer line). A replay holds one open reader per rank for the
// whole run, so this is paid np times (8 KiB made 32 MiB of a 4096-rank replay's ~165 MiB peak RSS); one
// read syscall per ~50 TIT lines costs well under 1% of replaying them.
inline constexpr std::size_t kReadBufferSize = 1024;
// 256 MiB: the longest line a text reader takes. The longest real lines, a v-collective's counts, take about
// 10 bytes per rank (40 MiB at 4 million ranks); past this a file is not a trace (/dev/zero, a binary file),
// and a reader without a bound would grow its buffer until memory runs out.
inline constexpr std::size_t kMaxLineBytes = std::size_t{256} << 20;

/// A file descriptor open for reading, closed on destruction. The readers use the descriptor directly
/// rather than an std::ifstream, whose object and locale state cost ~0.5 KiB per open trace.
class ReadFd {
public:
  explicit ReadFd(const std::filesystem::path& file);
  ReadFd(const ReadFd&)            = delete;
  ReadFd& operator=(const ReadFd&) = delete;
  ~ReadFd();
  bool is_open() const { return fd_ >= 0; }
  /// Reads up to `n` bytes (fewer only at the end of the file); -1 on a read error (errno set).
  std::ptrdiff_t read(void* dst, std::size_t n);

private:
  int fd_ = -1;
};

inline ErrorContext at_file(std::string file)
{
  ErrorContext c;
  c.file = std::move(file);
  return c;
}
inline ErrorContext at_line(std::string file, std::uint64_t line)
{
  ErrorContext c = at_file(std::move(file));
  c.line         = line;
  return c;
}

/// A byte buffer whose new bytes are left uninitialised (std::vector zero-fills them): with thousands of
/// ranks each holding a reader, zeroing every buffer made all of them resident, even for trace files
/// shorter than the buffer (8 KiB per rank, 32 MiB at 4096 ranks, before a byte was read).
template <class T>
class ReadBuffer {
public:
  explicit ReadBuffer(std::size_t size) : data_(new T[size]), size_(size) {}
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  /// Grows to `size`, keeping the first `keep` elements.
  void grow(std::size_t size, std::size_t keep)
  {
    std::unique_ptr<T[]> bigger(new T[size]);
    std::memcpy(bigger.get(), data_.get(), keep * sizeof(T));
    data_ = std::move(bigger);
    size_ = size;
  }

private:
  std::unique_ptr<T[]> data_;
  std::size_t size_;
};

/// Reads a text file line by line through a kReadBufferSize buffer. Lines are returned without their end of line
/// ("\n" or "\r\n"); a view stays valid until the next call. A line longer than kMaxLineBytes is an
/// InputError naming the file and line.
class LineReader {
public:
  explicit LineReader(const std::filesystem::path& file);
  bool is_open() const { return in_.is_open(); }
  /// Next line, or false at the end of the file. `line_no` becomes its 1-based number.
  bool next(std::string_view& line);
  std::uint64_t line_no() const { return line_no_; }
  /// Bytes of the file consumed (the lines returned so far) and the file's size.
  std::uint64_t consumed() const { return read_total_ - (end_ - begin_); }
  std::uint64_t size() const { return size_; }

private:
  bool fill();  // appends more bytes after the kept tail; false at EOF

  ReadFd in_;
  std::string file_;  // for errors
  ReadBuffer<char> buf_;
  std::size_t begin_     = 0;  // start of unread data
  std::size_t end_       = 0;  // end of valid data
  bool eof_              = false;
  std::uint64_t line_no_ = 0;
  std::uint64_t read_total_ = 0;  // bytes read from the file into buf_ so far
  std::uint64_t size_       = 0;  // the file's size when opened (0 when it has none: a pipe, a device)
};

/// Base of the streams that parse a text trace line by line (JSON lines, TIT): the file's reader, its name
/// for errors and source(), and the function table the parsed records refer to.
class TextTraceStream : public CallStream {
public:
  const FunctionTable& functions() const override { return functions_; }
  const std::string& source() const override { return source_; }
  std::uint64_t bytes_read() const override { return in_.consumed(); }
  std::uint64_t bytes_total() const override { return in_.size(); }

protected:
  /// Opens `file`; "cannot open <what>: <errno text>" (for `rank`) when it cannot be read.
  TextTraceStream(const std::filesystem::path& file, int rank, std::string_view what) : in_(file), source_(file.string())
  {
    if (not in_.is_open())
      throw InputError({source_, 0, "", rank}, "cannot open " + std::string(what) + ": " + open_failure(errno));
  }

  LineReader in_;
  std::string source_;
  FunctionTable functions_;
};

/// Reads bytes from a file through a kReadBufferSize buffer.
class ByteReader {
public:
  explicit ByteReader(const std::filesystem::path& file);
  bool is_open() const { return in_.is_open(); }
  /// Next byte, or -1 at the end of the file.
  int get()
  {
    if (pos_ < end_)
      return buf_[pos_++];
    return refill() ? buf_[pos_++] : -1;
  }
  /// Copies `n` bytes into `dst`; false if the file ends first.
  bool read(void* dst, std::size_t n);
  /// Bytes left in the file (its size minus what was consumed).
  std::uint64_t remaining() const { return size_ - consumed_before_ - pos_; }
  std::uint64_t consumed() const { return consumed_before_ + pos_; }
  std::uint64_t size() const { return size_; }

private:
  bool refill();

  ReadFd in_;
  ReadBuffer<unsigned char> buf_;
  std::size_t pos_               = 0;
  std::size_t end_               = 0;
  std::uint64_t consumed_before_ = 0;  // bytes of the file before buf_[0]
  std::uint64_t size_            = 0;
};

// ---- binary codec ("gct", see docs/reference/traces.md) ----

inline constexpr char kBinaryMagic[8]         = {'G', 'C', 'T', 'R', 'A', 'C', 'E', '1'};
inline constexpr std::uint64_t kBinaryVersion = 1;
inline constexpr std::uint8_t kRecordFunction = 0;  // record type 0; 1 + Op for calls

/// Presence bits of the binary call record, in encoding order.
enum BinaryField : unsigned {
  kFieldFunction,
  kFieldSeconds,
  kFieldFlops,
  kFieldPeer,
  kFieldTag,
  kFieldBytes,
  kFieldSrc,
  kFieldRecvTag,
  kFieldRecvBytes,
  kFieldComm,
  kFieldRoot,
  kFieldRequest,
  kFieldRequests,
  kFieldCounts,
  kFieldRecvCounts,
  kFieldColor,
  kFieldKey,
  kFieldNewComm,
  kFieldStream,
  kFieldDevice,
  kFieldMemory,
  kFieldLine,  // only in spill files written with keep_lines (TIT import): the source line number
  kFieldDeviceSeconds,  // gpu_kernel: the kernel's duration on the device (added by the GPU issue)
  kFieldLibrary,  // a library call's arguments: 8 zigzag varints, then 5 option bytes (older files lack it)
  kFieldCount
};

inline void put_varint(std::string& out, std::uint64_t v)
{
  if (v < 0x80) {
    out.push_back(static_cast<char>(v));
    return;
  }
  char buf[10];
  std::size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, n);
}
inline std::uint64_t zigzag(std::int64_t v)
{
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v)
{
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

/// Encodes records into bytes. Function ids are renumbered densely in first-use order, and a function
/// definition record is emitted before the first call that uses each function.
class BinaryEncoder {
public:
  explicit BinaryEncoder(bool keep_lines = false) : keep_lines_(keep_lines) {}
  static void put_header(std::string& out);
  /// Appends `record` (and a function definition if needed) to `out`.
  void encode(const CallRecord& record, const FunctionTable& functions, std::string& out);

private:
  std::uint32_t map_function(std::uint32_t id, const FunctionTable& functions, std::string& out);

  bool keep_lines_;
  FunctionTable out_functions_;
  const FunctionTable* cached_table_ = nullptr;
  std::vector<std::uint32_t> remap_;  // source id -> out id + 1 (0: not seen yet)
};

/// Streams a binary trace. `display` is the name used in error messages and source() (the original TIT
/// file for spill files).
class BinaryTraceStream final : public CallStream {
public:
  BinaryTraceStream(const std::filesystem::path& file, int rank, std::string display = {});
  bool next(CallRecord& out) override;
  const FunctionTable& functions() const override { return functions_; }
  const std::string& source() const override { return display_; }
  std::uint64_t bytes_read() const override { return in_.consumed(); }
  std::uint64_t bytes_total() const override { return in_.size(); }

private:
  [[noreturn]] void fail(const std::string& reason) const;
  std::uint64_t varint();
  std::int64_t svarint() { return unzigzag(varint()); }
  std::int32_t int32_field(const char* name);
  double double_field();
  template <class T> void vector_field(std::vector<T>& v, bool is_signed);

  ByteReader in_;
  std::string display_;
  int rank_;
  FunctionTable functions_;
  std::uint64_t record_no_ = 0;  // call records read so far
  bool in_header_          = true;
  bool after_definition_   = false;
};

// ---- writers of the native encodings

/// Buffered output file shared by both writers.
class OutputFile {
public:
  explicit OutputFile(const std::filesystem::path& file) : path_(file), out_(file, std::ios::binary | std::ios::trunc)
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
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
  std::ofstream out_;
  std::string buf_;
  bool closed_ = false;
};
inline void check_finite(const CallRecord& r, const OutputFile& file, std::uint64_t record_no)
{
  if (not std::isfinite(r.seconds) || not std::isfinite(r.flops) || not std::isfinite(r.device_seconds))
    throw InputError(detail::at_line(file.path().string(), record_no),
                     "cannot write a non-finite seconds or flops value");
}

/// The native encodings' reader and writers that native.cpp opens: JSON lines (native_jsonl.cpp) and
/// binary (native_binary.cpp).
CallStreamPtr open_jsonl_trace(const std::filesystem::path& file, int rank);
std::unique_ptr<TraceWriter> make_jsonl_writer(const std::filesystem::path& file);
std::unique_ptr<TraceWriter> make_binary_writer(const std::filesystem::path& file);

}  // namespace gridcast::models::detail
