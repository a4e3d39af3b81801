// The timeline: one track per rank, one slice per call, a flow arrow per message (inside collectives too);
// with --analysis, each wait as a slice inside its call and the critical path on a track of its own.
// Two formats, chosen by the file's extension: timeline.json in Chrome Trace Event format (Perfetto and
// chrome://tracing open it), or timeline.pftrace in Perfetto's protobuf format (about half the
// bytes, for runs of many ranks drawn in full). Events are streamed to the file as the simulation produces
// them, so memory does not grow with the trace.
#pragma once
#include "gridcast/foundation/output_file.hpp"

#include <simgrid/s4u/Host.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::emulator {

class PerfettoPackets;

class TimelineWriter {
public:
  /// Perfetto's protobuf format when `file` ends in kPerfettoExtension, Chrome's JSON otherwise.
  TimelineWriter(const std::filesystem::path& file, const std::vector<simgrid::s4u::Host*>& rank_hosts);
  static constexpr const char* kPerfettoExtension = ".pftrace";
  ~TimelineWriter();
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  /// One call of `rank` from `begin_s` lasting `duration_s` (simulated seconds).
  void call(int rank, std::string_view function, double begin_s, double duration_s);
  /// A slice named `name` in category `category` on track `tid` (a rank's, or one made with
  /// track_name): the waits and the critical path of --analysis are drawn with it.
  void slice(int tid, std::string_view name, std::string_view category, double begin_s, double duration_s);
  /// Names track `tid` (the ranks' tracks are named at construction).
  void track_name(int tid, std::string_view name);
  /// Message `message` (Request::message) leaves `rank`.
  void flow_start(int rank, std::uint64_t message, double at_s);
  /// Message `message` arrives at `rank`.
  void flow_end(int rank, std::uint64_t message, double at_s);
  /// Draws only the ranks marked in `ranks` (one entry per rank) call by call; the others' calls, waits
  /// and messages are left out, and summary() gives each of them one slice. Tracks past the ranks (the
  /// critical path's) are always drawn. Without it every rank is drawn.
  void set_detail(std::vector<bool> ranks) { detail_ = std::move(ranks); }
  /// Whether `tid`'s events are written.
  bool detailed(int tid) const
  {
    return detail_.empty() || tid < 0 || static_cast<std::size_t>(tid) >= detail_.size() || detail_[static_cast<std::size_t>(tid)];
  }
  /// One slice over a rank's whole run, [0, finish_s], with its totals as arguments (seconds).
  void summary(int rank, double finish_s, double compute_s, double comm_s, double wait_s, std::uint64_t calls);
  /// Writes the closing bracket; throws InputError if the file could not be written.
  void close();

private:
  // Events are formatted with std::to_chars into out_ and written in large blocks: printf-style
  // formatting of doubles dominated replay time when the timeline was on.
  void make_room();  ///< writes the buffer out once it holds kFlushBytes
  void begin_event();
  void put(std::string_view s);
  void put_int(std::int64_t v);
  void put_us(double seconds);
  void flow(std::string_view phase, int rank, std::uint64_t message, double at_s);  ///< seconds as microseconds, fixed 3 decimals (ns resolution)
  void flush();
  std::optional<OutputFile> file_;  ///< renamed onto the target by close(): never a half-written timeline
  bool first_ = true;
  std::string out_;
  std::vector<bool> detail_;  ///< empty: every rank
  std::unique_ptr<PerfettoPackets> perfetto_;  ///< set: the protobuf format, whose packets go to out_
};

}  // namespace gridcast::emulator
