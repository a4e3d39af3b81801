// timeline.json in Chrome Trace Event format (Perfetto and chrome://tracing open it): one track per
// rank, one complete event per call, a flow arrow per point-to-point message. Events are streamed to
// the file as the simulation produces them, so memory does not grow with the trace.
#pragma once

#include <simgrid/s4u/Host.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <vector>

namespace gridcast::emulator {

class TimelineWriter {
public:
  TimelineWriter(const std::filesystem::path& file, const std::vector<simgrid::s4u::Host*>& rank_hosts);
  ~TimelineWriter();
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  /// One call of `rank` from `begin_s` lasting `duration_s` (simulated seconds).
  void call(int rank, std::string_view function, double begin_s, double duration_s);
  /// Message `message` (Request::message) leaves `rank`.
  void flow_start(int rank, std::uint64_t message, double at_s);
  /// Message `message` arrives at `rank`.
  void flow_end(int rank, std::uint64_t message, double at_s);
  /// Writes the closing bracket; throws InputError if the file could not be written.
  void close();

private:
  void begin_event();
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  bool first_ = true;
  std::vector<char> buffer_;
};

}  // namespace gridcast::emulator
