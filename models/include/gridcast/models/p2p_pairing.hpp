// Whether a trace's point-to-point sends and receives pair up, channel by channel: what a replay needs to
// reach the end. A recorded MPI run always pairs; a trace that does not was written incompletely.
#pragma once

#include "gridcast/models/stream.hpp"

#include <cstdint>
#include <string>

namespace gridcast::models {

struct PairingReport {
  std::uint64_t receives_without_send = 0;
  std::uint64_t sends_without_receive = 0;
  /// The first receive without a send (by rank, then position): "rank 1 receives from rank 0, tag 0
  /// (FILE, line 2)"; empty where every receive has its send.
  std::string first_receive;
  bool checked = true;  ///< false: a receive takes any source or any tag, and nothing was counted
  bool paired() const { return receives_without_send == 0 && sends_without_receive == 0; }
};

/// Counts, for every (source, destination, tag, communicator), the sends (send, isend, ssend, issend,
/// sendrecv) and receives (recv, irecv, sendrecv) of `trace`: a channel with more receives than sends
/// leaves receives that wait forever, one with more sends leaves messages no one takes. Reads every rank
/// once (twice when a receive lacks its send, to name the first). Wildcard receives stop the count.
PairingReport check_pairing(const TraceSource& trace);

}  // namespace gridcast::models
