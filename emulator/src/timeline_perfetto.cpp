#include "timeline_perfetto.hpp"

#include <cmath>

namespace gridcast::emulator {

namespace {
constexpr std::uint32_t kSequence = 1;  // every packet comes from one writer: one sequence
}

std::uint64_t PerfettoPackets::ns(double seconds)
{
  return seconds <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(seconds * 1e9));
}

perfetto::TracePacket& PerfettoPackets::next()
{
  if (trace_.packet_size() == 0)
    trace_.add_packet();
  perfetto::TracePacket& p = *trace_.mutable_packet(0);
  p.Clear();
  p.set_trusted_packet_sequence_id(kSequence);
  if (first_) {
    p.set_sequence_flags(1);  // SEQ_INCREMENTAL_STATE_CLEARED: the sequence starts here, nothing interned
    first_ = false;
  }
  return p;
}

void PerfettoPackets::append(std::string& out)
{
  trace_.AppendToString(&out);
}

void PerfettoPackets::track(std::string& out, std::uint64_t uuid, std::string_view name, std::uint64_t parent)
{
  perfetto::TrackDescriptor* d = next().mutable_track_descriptor();
  d->set_uuid(uuid);
  d->set_name(std::string(name));
  if (parent != 0)
    d->set_parent_uuid(parent);
  append(out);
}

void PerfettoPackets::event(std::string& out, perfetto::TrackEvent::Type type, int tid, std::uint64_t at_ns,
                            std::string_view name, std::string_view category)
{
  perfetto::TracePacket& p = next();
  p.set_timestamp(at_ns);
  perfetto::TrackEvent* e = p.mutable_track_event();
  e->set_type(type);
  e->set_track_uuid(track_of(tid));
  if (not name.empty())
    e->set_name(std::string(name));
  if (not category.empty())
    e->add_categories(std::string(category));
}

void PerfettoPackets::slice(std::string& out, int tid, std::string_view name, std::string_view category,
                            std::uint64_t begin_ns, std::uint64_t end_ns)
{
  event(out, perfetto::TrackEvent::TYPE_SLICE_BEGIN, tid, begin_ns, name, category);
  append(out);
  event(out, perfetto::TrackEvent::TYPE_SLICE_END, tid, end_ns, {}, {});
  append(out);
}

void PerfettoPackets::summary(std::string& out, int tid, std::uint64_t end_ns, std::uint64_t calls, double compute_s,
                              double comm_s, double wait_s)
{
  event(out, perfetto::TrackEvent::TYPE_SLICE_BEGIN, tid, 0, "rank summary", "summary");
  perfetto::TrackEvent* e = trace_.mutable_packet(0)->mutable_track_event();
  perfetto::DebugAnnotation* a = e->add_debug_annotations();
  a->set_name("calls");
  a->set_uint_value(calls);
  for (auto [key, value] : {std::pair{"compute_s", compute_s}, {"comm_s", comm_s}, {"wait_s", wait_s}}) {
    a = e->add_debug_annotations();
    a->set_name(key);
    a->set_double_value(value);
  }
  append(out);
  event(out, perfetto::TrackEvent::TYPE_SLICE_END, tid, end_ns, {}, {});
  append(out);
}

void PerfettoPackets::flow(std::string& out, int tid, std::uint64_t flow, std::uint64_t at_ns, bool terminating)
{
  event(out, perfetto::TrackEvent::TYPE_INSTANT, tid, at_ns, "message", "p2p");
  perfetto::TrackEvent* e = trace_.mutable_packet(0)->mutable_track_event();
  if (terminating)
    e->add_terminating_flow_ids(flow);
  else
    e->add_flow_ids(flow);
  append(out);
}

}  // namespace gridcast::emulator
