#include "gridcast/emulator/timeline.hpp"

#include "gridcast/foundation/errors.hpp"
#include "timeline_perfetto.hpp"

#include <charconv>
#include <string>

namespace gridcast::emulator {

namespace {

constexpr std::size_t kFlushBytes = 1 << 20;
constexpr std::string_view kFlowStart = R"j({"ph":"s")j";

/// JSON string escaping for function and host names.
bool needs_escape(std::string_view s)
{
  for (char ch : s)
    if (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20)
      return true;
  return false;
}

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
{
  file_.emplace(file, "the timeline");
  out_.reserve(kFlushBytes + 4096);
  if (file.extension() == kPerfettoExtension) {
    perfetto_ = std::make_unique<PerfettoPackets>();
    perfetto_->track(out_, 1, "gridcast replay", 0);
    for (std::size_t r = 0; r < rank_hosts.size(); ++r)
      perfetto_->track(out_, PerfettoPackets::track_of(static_cast<int>(r)),
                       "rank " + std::to_string(r) + " (" + rank_hosts[r]->get_name() + ")", 1);
    return;
  }
  put("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  begin_event();
  put(R"j({"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"gridcast replay"}})j");
  for (std::size_t r = 0; r < rank_hosts.size(); ++r) {
    begin_event();
    put(R"j({"ph":"M","pid":0,"tid":)j");
    put_int(static_cast<std::int64_t>(r));
    put(R"j(,"name":"thread_name","args":{"name":"rank )j");
    put_int(static_cast<std::int64_t>(r));
    put(" (");
    put(escape(rank_hosts[r]->get_name()));
    put(")\"}}");
  }
}

TimelineWriter::~TimelineWriter() = default;

void TimelineWriter::put(std::string_view s)
{
  out_.append(s);
}

void TimelineWriter::put_int(std::int64_t v)
{
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, end);
}

void TimelineWriter::put_us(double seconds)
{
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, seconds * 1e6, std::chars_format::fixed, 3);
  out_.append(buf, end);
}

void TimelineWriter::flush()
{
  // Never throws here (inside an actor): a failed write shows as the stream's error in close().
  if (not out_.empty() && file_)
    std::fwrite(out_.data(), 1, out_.size(), file_->stream());
  out_.clear();
}

void TimelineWriter::make_room()
{
  if (out_.size() >= kFlushBytes)
    flush();
}

void TimelineWriter::begin_event()
{
  make_room();
  if (not first_)
    put(",\n");
  first_ = false;
}

// Timestamps are microseconds with nanosecond resolution, printed with a fixed format so that the file
// is byte-identical between runs.
void TimelineWriter::call(int rank, std::string_view function, double begin_s, double duration_s)
{
  slice(rank, function, {}, begin_s, duration_s);
}

void TimelineWriter::slice(int tid, std::string_view name, std::string_view category, double begin_s, double duration_s)
{
  if (not detailed(tid))
    return;
  if (perfetto_) {
    make_room();
    const std::uint64_t begin_ns = PerfettoPackets::ns(begin_s);
    perfetto_->slice(out_, tid, name, category, begin_ns, PerfettoPackets::ns(begin_s + duration_s));
    return;
  }
  begin_event();
  put(R"j({"ph":"X","pid":0,"tid":)j");
  put_int(tid);
  put(R"j(,"name":")j");
  if (needs_escape(name))
    put(escape(name));
  else
    put(name);  // the common case, once per call: no copy
  if (not category.empty()) {
    put(R"j(","cat":")j");
    put(category);
  }
  put(R"j(","ts":)j");
  put_us(begin_s);
  put(R"j(,"dur":)j");
  put_us(duration_s);
  put("}");
}

void TimelineWriter::track_name(int tid, std::string_view name)
{
  if (perfetto_) {
    perfetto_->track(out_, PerfettoPackets::track_of(tid), name, 1);
    return;
  }
  begin_event();
  put(R"j({"ph":"M","pid":0,"tid":)j");
  put_int(tid);
  put(R"j(,"name":"thread_name","args":{"name":")j");
  put(needs_escape(name) ? escape(name) : std::string(name));
  put("\"}}");
}

void TimelineWriter::flow(std::string_view phase, int rank, std::uint64_t message, double at_s)
{
  if (not detailed(rank))
    return;
  if (perfetto_) {
    make_room();
    // Flow ids start at 1 (a message's id can be 0).
    perfetto_->flow(out_, rank, message + 1, PerfettoPackets::ns(at_s), phase != kFlowStart);
    return;
  }
  begin_event();
  put(phase);
  put(R"j(,"pid":0,"tid":)j");
  put_int(rank);
  put(R"j(,"name":"message","cat":"p2p","id":)j");
  put_int(static_cast<std::int64_t>(message));
  put(R"j(,"ts":)j");
  put_us(at_s);
  put("}");
}

void TimelineWriter::flow_start(int rank, std::uint64_t message, double at_s)
{
  flow(kFlowStart, rank, message, at_s);
}

void TimelineWriter::flow_end(int rank, std::uint64_t message, double at_s)
{
  flow(R"j({"ph":"f","bp":"e")j", rank, message, at_s);
}

void TimelineWriter::summary(int rank, double finish_s, double compute_s, double comm_s, double wait_s,
                             std::uint64_t calls)
{
  if (perfetto_) {
    make_room();
    perfetto_->summary(out_, rank, PerfettoPackets::ns(finish_s), calls, compute_s, comm_s, wait_s);
    return;
  }
  begin_event();
  put(R"j({"ph":"X","pid":0,"tid":)j");
  put_int(rank);
  put(R"j(,"name":"rank summary","cat":"summary","ts":0.000,"dur":)j");
  put_us(finish_s);
  put(R"j(,"args":{"calls":)j");
  put_int(static_cast<std::int64_t>(calls));
  for (auto [key, value] : {std::pair{"compute_s", compute_s}, {"comm_s", comm_s}, {"wait_s", wait_s}}) {
    put(",\"");
    put(key);
    put("\":");
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    out_.append(buf, end);
  }
  put("}}");
}

void TimelineWriter::close()
{
  if (not file_)
    return;
  if (not perfetto_)
    put("\n]}\n");
  flush();
  file_->commit();
  file_.reset();
}

}  // namespace gridcast::emulator
