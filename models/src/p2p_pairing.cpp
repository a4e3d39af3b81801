// Pairing of point-to-point sends and receives, channel by channel (p2p_pairing.hpp).
#include "gridcast/models/p2p_pairing.hpp"

#include <map>
#include <tuple>

namespace gridcast::models {

namespace {

using Channel = std::tuple<std::int32_t, std::int32_t, std::int32_t, std::int32_t>;  // (from, to, tag, comm)

bool is_send(Op op)
{
  return op == Op::Send || op == Op::Isend || op == Op::Ssend || op == Op::Issend || op == Op::Sendrecv;
}
bool is_receive(Op op) { return op == Op::Recv || op == Op::Irecv || op == Op::Sendrecv; }

/// The channel a receive takes its message from.
Channel receive_channel(const CallRecord& c, int rank)
{
  const bool sr = c.op == Op::Sendrecv;
  return {sr ? c.src : c.peer, rank, sr ? c.recv_tag : c.tag, c.comm};
}

}  // namespace

PairingReport check_pairing(const TraceSource& trace)
{
  PairingReport report;
  std::map<Channel, std::pair<std::uint64_t, std::uint64_t>> channels;  // (sends, receives)
  CallRecord c;
  for (int r = 0; r < trace.rank_count(); ++r) {
    CallStreamPtr s = trace.open(r);
    while (s->next(c)) {
      if (is_send(c.op))
        ++channels[{r, c.peer, c.tag, c.comm}].first;
      if (is_receive(c.op)) {
        const Channel ch = receive_channel(c, r);
        if (std::get<0>(ch) == kAnySource || std::get<2>(ch) == kAnyTag) {
          report.checked = false;
          return report;
        }
        ++channels[ch].second;
      }
    }
  }
  for (const auto& [ch, n] : channels) {
    if (n.second > n.first)
      report.receives_without_send += n.second - n.first;
    else
      report.sends_without_receive += n.first - n.second;
  }
  if (report.receives_without_send == 0)
    return report;
  // The first receive past its channel's sends, rank by rank.
  for (int r = 0; r < trace.rank_count() && report.first_receive.empty(); ++r) {
    std::map<Channel, std::uint64_t> seen;
    CallStreamPtr s = trace.open(r);
    while (report.first_receive.empty() && s->next(c)) {
      if (not is_receive(c.op))
        continue;
      const Channel ch = receive_channel(c, r);
      if (++seen[ch] > channels[ch].first)
        report.first_receive = "rank " + std::to_string(r) + " receives from rank " + std::to_string(std::get<0>(ch)) +
                               ", tag " + std::to_string(std::get<2>(ch)) + " (" + s->source() + ", line " +
                               std::to_string(c.line) + ")";
    }
  }
  return report;
}

}  // namespace gridcast::models
