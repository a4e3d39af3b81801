// timeline.pftrace: the timeline's events as Perfetto TracePackets (emulator/proto/perfetto_trace.proto),
// appended to the writer's buffer. A file of one-packet Trace messages one after the other is one Trace
// (protobuf concatenates repeated fields), which is what Perfetto reads.
#pragma once
#include "proto/perfetto_trace.pb.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace gridcast::emulator {

class PerfettoPackets {
public:
  /// Track uuids: 1 is the run's own, under which every timeline track (tid >= 0) is uuid tid + 2.
  static std::uint64_t track_of(int tid) { return static_cast<std::uint64_t>(tid) + 2; }

  /// A named track under the run's (`parent` 0: the run's own track, at the top).
  void track(std::string& out, std::uint64_t uuid, std::string_view name, std::uint64_t parent);
  /// A slice [begin_ns, end_ns] on `tid`'s track; `args` (name, value) pairs go on its beginning.
  void slice(std::string& out, int tid, std::string_view name, std::string_view category, std::uint64_t begin_ns,
             std::uint64_t end_ns);
  /// A slice with the totals of a rank's run as its arguments.
  void summary(std::string& out, int tid, std::uint64_t end_ns, std::uint64_t calls, double compute_s, double comm_s,
               double wait_s);
  /// An instant on `tid`'s track that starts (`terminating` false) or ends message `flow`'s arrow.
  void flow(std::string& out, int tid, std::uint64_t flow, std::uint64_t at_ns, bool terminating);

  /// Simulated seconds as whole nanoseconds (the JSON timeline's resolution).
  static std::uint64_t ns(double seconds);

private:
  perfetto::TracePacket& next();
  void append(std::string& out);
  void event(std::string& out, perfetto::TrackEvent::Type type, int tid, std::uint64_t at_ns, std::string_view name,
             std::string_view category);
  perfetto::Trace trace_;  ///< holds the one packet being written, reused
  bool first_ = true;
};

}  // namespace gridcast::emulator
