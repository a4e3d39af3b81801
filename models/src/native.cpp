// The native trace encodings: the buffered readers both use, and opening, writing and converting
// profiles. The encodings themselves: native_jsonl.cpp (JSON lines) and native_binary.cpp ("gct").
// Byte layouts and field tables: docs/reference/traces.md.
#include "gridcast/models/native.hpp"

#include "io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
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

LineReader::LineReader(const fs::path& file) : in_(file), file_(file.string()), buf_(kReadBufferSize)
{
  std::error_code ec;
  const auto size = fs::is_regular_file(file, ec) ? fs::file_size(file, ec) : 0;
  size_           = ec ? 0 : size;
}

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
  if (end_ == buf_.size()) {
    if (buf_.size() >= kMaxLineBytes)
      throw InputError(at_line(file_, line_no_ + 1),
                       "a line longer than " + std::to_string(kMaxLineBytes >> 20) +
                           " MiB: not a text trace (is it a binary file or a device?)");
    buf_.grow(buf_.size() * 2, end_);
  }
  std::ptrdiff_t got = in_.read(buf_.data() + end_, buf_.size() - end_);
  if (got <= 0) {  // end of file, or a read error, which ends the file as the stream did
    eof_ = true;
    return false;
  }
  end_ += static_cast<std::size_t>(got);
  read_total_ += static_cast<std::uint64_t>(got);
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


}  // namespace detail


CallStreamPtr open_native_trace(const fs::path& file, TraceEncoding encoding, int rank)
{
  if (encoding == TraceEncoding::Binary)
    return std::make_unique<detail::BinaryTraceStream>(file, rank);
  return detail::open_jsonl_trace(file, rank);
}

std::unique_ptr<TraceWriter> make_trace_writer(const fs::path& file, TraceEncoding encoding)
{
  if (encoding == TraceEncoding::Binary)
    return detail::make_binary_writer(file);
  return detail::make_jsonl_writer(file);
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
