// One rank's point-to-point records (docs/reference/emulator.md): sends, receives, sendrecv and probes, posted on
// the message board on the communicator's point-to-point context. Internal to the emulator.
#pragma once

#include "rank_comms.hpp"
#include "rank_core.hpp"
#include "rank_gpu.hpp"
#include "rank_requests.hpp"

#include "gridcast/emulator/p2p.hpp"
#include "gridcast/models/call.hpp"

#include <cstdint>

namespace gridcast::emulator {

class PointToPoint {
public:
  PointToPoint(RankCore& core, CommTable& comms, RankDevice& device, RequestTable& requests)
      : core_(core), comms_(comms), device_(device), requests_(requests)
  {
  }

  /// MPI_Send / MPI_Ssend: posts and blocks until done.
  void send(const models::CallRecord& c, SendMode mode) { requests_.complete(post_send(c, mode)); }
  /// MPI_Isend / MPI_Issend: posts and keeps the request.
  void isend(const models::CallRecord& c, SendMode mode) { requests_.remember(c, post_send(c, mode)); }
  void recv(const models::CallRecord& c)
  {
    requests_.complete(post_recv(c, c.peer, c.tag, c.bytes));
    if (device_.staged(c))
      device_.after_recv(c.bytes);
  }
  void irecv(const models::CallRecord& c)
  {
    requests_.remember(c, post_recv(c, c.peer, c.tag, c.bytes));
    if (device_.staged(c))
      device_.gpu().note_device_irecv(c.request, c.bytes);
  }
  void sendrecv(const models::CallRecord& c);
  /// MPI_Probe blocks until a matching message has been sent to this rank; MPI_Iprobe only looks.
  void probe(const models::CallRecord& c);

private:
  RequestPtr post_send(const models::CallRecord& c, SendMode mode);
  RequestPtr post_recv(const models::CallRecord& c, int peer, int tag, std::uint64_t bytes);

  RankCore& core_;
  CommTable& comms_;
  RankDevice& device_;
  RequestTable& requests_;
  int failed_iprobes_ = 0;
};

}  // namespace gridcast::emulator
