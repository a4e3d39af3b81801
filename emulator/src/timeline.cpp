#include "gridcast/emulator/timeline.hpp"

#include "gridcast/models/errors.hpp"

#include <cinttypes>
#include <string>

namespace gridcast::emulator {

namespace {

/// JSON string escaping for function and host names.
std::string escape(std::string_view s)
{
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace

TimelineWriter::TimelineWriter(const std::filesystem::path& file, const std::vector<simgrid::s4u::Host*>& rank_hosts)
    : path_(file), buffer_(1 << 20)
{
  file_ = std::fopen(file.c_str(), "w");
  if (file_ == nullptr)
    throw InputError({file.string(), 0, {}, -1}, "cannot write the timeline");
  std::setvbuf(file_, buffer_.data(), _IOFBF, buffer_.size());
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", file_);
  begin_event();
  std::fputs(R"j({"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"gridcast replay"}})j", file_);
  for (std::size_t r = 0; r < rank_hosts.size(); ++r) {
    begin_event();
    std::fprintf(file_, R"j({"ph":"M","pid":0,"tid":%zu,"name":"thread_name","args":{"name":"rank %zu (%s)"}})j", r, r,
                 escape(rank_hosts[r]->get_name()).c_str());
  }
}

TimelineWriter::~TimelineWriter()
{
  if (file_ != nullptr)
    std::fclose(file_);
}

void TimelineWriter::begin_event()
{
  if (not first_)
    std::fputs(",\n", file_);
  first_ = false;
}

// Timestamps are microseconds with nanosecond resolution, printed with a fixed format so that the file
// is byte-identical between runs.
void TimelineWriter::call(int rank, std::string_view function, double begin_s, double duration_s)
{
  begin_event();
  std::fprintf(file_, R"j({"ph":"X","pid":0,"tid":%d,"name":"%s","ts":%.3f,"dur":%.3f})j", rank,
               escape(function).c_str(), begin_s * 1e6, duration_s * 1e6);
}

void TimelineWriter::flow_start(int rank, std::uint64_t message, double at_s)
{
  begin_event();
  std::fprintf(file_, R"j({"ph":"s","pid":0,"tid":%d,"name":"message","cat":"p2p","id":%)j" PRIu64 R"j(,"ts":%.3f})j", rank,
               message, at_s * 1e6);
}

void TimelineWriter::flow_end(int rank, std::uint64_t message, double at_s)
{
  begin_event();
  std::fprintf(file_,
               R"j({"ph":"f","bp":"e","pid":0,"tid":%d,"name":"message","cat":"p2p","id":%)j" PRIu64 R"j(,"ts":%.3f})j",
               rank, message, at_s * 1e6);
}

void TimelineWriter::close()
{
  if (file_ == nullptr)
    return;
  std::fputs("\n]}\n", file_);
  bool failed = std::ferror(file_) != 0;
  failed = std::fclose(file_) != 0 || failed;
  file_ = nullptr;
  if (failed)
    throw InputError({path_.string(), 0, {}, -1}, "writing the timeline failed");
}

}  // namespace gridcast::emulator
