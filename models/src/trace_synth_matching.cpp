// Synthesis: receives that pair with no send at the target, when peers or counts were approximated.
#include "trace_synth_program.hpp"

#include "gridcast/foundation/errors.hpp"

#include <map>
#include <sstream>
#include <tuple>

namespace gridcast::models::trace {

void SynthSource::balance_point_to_point()
{
  // Constructs whose calls do not come from template leaves (numbered loops, trees, axis sweeps) are
  // not numbered like them, and a wildcard receive can match any send: then nothing is checked.
  if (not model_->numbered.empty() || not model_->trees.empty() || not model_->axis_sweeps.empty())
    return;
  struct Half {
    int rank;
    std::uint64_t ordinal;  ///< kNonblocking: an isend or irecv, which is not dropped
  };
  constexpr std::uint64_t kNonblocking = ~std::uint64_t{0};
  struct Channel {
    std::vector<Half> sends, recvs;
  };
  std::map<std::tuple<int, int, std::int32_t, std::int32_t>, Channel> channels;  // (from, to, tag, comm)
  for (int r = 0; r < target_.np; ++r) {
    auto stream = open(r);
    CallRecord c;
    std::uint64_t ordinal = 0;
    while (stream->next(c)) {
      const bool blocking = synth::is_blocking_p2p(c.op);
      const std::uint64_t k = blocking ? ordinal++ : kNonblocking;
      if (c.op == Op::Send || c.op == Op::Ssend || c.op == Op::Isend || c.op == Op::Issend || c.op == Op::Sendrecv)
        channels[{r, c.peer, c.tag, c.comm}].sends.push_back({r, k});
      const bool recv = c.op == Op::Recv || c.op == Op::Irecv || c.op == Op::Sendrecv;
      const std::int32_t from = c.op == Op::Sendrecv ? c.src : c.peer;
      const std::int32_t tag  = c.op == Op::Sendrecv ? c.recv_tag : c.tag;
      if (recv && (from == kAnySource || tag == kAnyTag))
        return;
      if (recv)
        channels[{from, r, tag, c.comm}].recvs.push_back({r, k});
    }
  }
  // A receive without its send blocks forever: dropped (a blocking one; a nonblocking one is counted).
  // A send without its receive completes where it is sent eagerly, as in a training run that recorded
  // it so: kept, and counted.
  std::map<int, std::map<std::uint64_t, std::uint8_t>> drop;
  std::uint64_t recvs = 0, dropped = 0, left = 0, lone_sends = 0;
  for (const auto& [key, ch] : channels) {
    recvs += ch.recvs.size();
    lone_sends += ch.sends.size() > ch.recvs.size() ? ch.sends.size() - ch.recvs.size() : 0;
    for (std::size_t i = ch.sends.size(); i < ch.recvs.size(); ++i) {
      const Half& h = ch.recvs[i];
      if (h.ordinal == kNonblocking) {
        ++left;
      } else {
        drop[h.rank][h.ordinal] |= kDropRecv;
        ++dropped;
      }
    }
  }
  if (drop.empty() && left == 0)
    return;
  drops_.resize(static_cast<std::size_t>(target_.np));
  for (const auto& [rank, by_ordinal] : drop)
    for (const auto& [ordinal, halves] : by_ordinal)
      drops_[static_cast<std::size_t>(rank)].push_back({ordinal, halves});
  std::ostringstream o;
  o << dropped << " of " << recvs
    << " receives have no matching send at the target (approximated peers or counts): dropped";
  if (left > 0)
    o << "; " << left << " nonblocking receives left unmatched (the run may not finish)";
  if (lone_sends > 0)
    o << "; " << lone_sends << " sends have no matching receive (kept: they complete where sent eagerly)";
  quality_.approximated.push_back({"point-to-point", "matching", o.str(), 0.0});
}

}  // namespace gridcast::models::trace
