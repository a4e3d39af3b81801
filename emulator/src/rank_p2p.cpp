#include "rank_p2p.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <string>
#include <string_view>

namespace gridcast::emulator {

using models::CallRecord;

RequestPtr PointToPoint::post_send(const CallRecord& c, SendMode mode)
{
  World& world = core_.world;
  const Communicator& comm = comms_.resolve(c.comm);
  int dst = comms_.world_rank(comm, c.peer);
  if (c.tag < 0)
    core_.fail("a send needs a tag >= 0, got " + std::to_string(c.tag));
  auto [endpoint, effective_mode] = device_.send_setup(c, dst, c.bytes, mode);
  RequestPtr r = world.board.post_send(core_.rank, dst, c.bytes, c.tag, comm.p2p_context, effective_mode, endpoint);
  if (world.timeline != nullptr)
    world.timeline->flow_start(core_.rank, r->message, sg4::Engine::get_clock());
  return r;
}

RequestPtr PointToPoint::post_recv(const CallRecord& c, int peer, int tag, std::uint64_t bytes)
{
  const Communicator& comm = comms_.resolve(c.comm);
  int src = peer == models::kAnySource ? kAnySource : comms_.world_rank(comm, peer);
  sg4::Host* endpoint = device_.recv_setup(c, src, tag, bytes);
  return core_.world.board.post_recv(core_.rank, src, bytes, tag == models::kAnyTag ? kAnyTag : tag, comm.p2p_context,
                                     endpoint);
}

void PointToPoint::sendrecv(const CallRecord& c)
{
  MessageBoard& board = core_.world.board;
  const Communicator& comm = comms_.resolve(c.comm);
  int dst = comms_.world_rank(comm, c.peer);
  int src = c.src == models::kAnySource ? kAnySource : comms_.world_rank(comm, c.src, "src");
  auto [endpoint, mode] = device_.send_setup(c, dst, c.bytes, SendMode::Standard);
  device_.pin_recv(c, src);  // GPUDirect pins the receive buffer too
  RequestPtr s = board.post_send(core_.rank, dst, c.bytes, c.tag, comm.p2p_context, mode, endpoint);
  RequestPtr r = board.post_recv(core_.rank, src, c.recv_bytes, c.recv_tag == models::kAnyTag ? kAnyTag : c.recv_tag,
                                 comm.p2p_context, endpoint);
  requests_.complete(s);
  requests_.complete(r);
  if (device_.staged(c))
    device_.after_recv(c.recv_bytes);
}

void PointToPoint::probe(const CallRecord& c)
{
  if (c.peer == models::kNoRank)  // MPI_PROC_NULL: returns at once
    return;
  MessageBoard& board = core_.world.board;
  const Communicator& comm = comms_.resolve(c.comm);
  int src = c.peer == models::kAnySource ? kAnySource : comms_.world_rank(comm, c.peer);
  int tag = c.tag == models::kAnyTag ? kAnyTag : c.tag;
  std::string_view fn = core_.function_name(c.function);
  if (contains(fn, "Iprobe", "iprobe") || contains(fn, "Improbe", "improbe")) {  // MPI_Improbe polls too
    bool found = board.iprobe(core_.rank, src, tag, comm.p2p_context);
    return core_.poll_cost(c.seconds, found, failed_iprobes_, core_.world.options.iprobe_cost_s);
  }
  double begin = sg4::Engine::get_clock();
  core_.blocked_detail = "probe for a message from rank " +
                         (src == kAnySource ? std::string("any") : std::to_string(src)) + " tag " +
                         (tag == kAnyTag ? std::string("any") : std::to_string(tag)) + ", never sent";
  board.probe(core_.rank, src, tag, comm.p2p_context);
  core_.blocked_detail.clear();
  core_.stats.wait_s += sg4::Engine::get_clock() - begin;
}

}  // namespace gridcast::emulator
