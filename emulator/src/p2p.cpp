#include "gridcast/emulator/p2p.hpp"

#include "gridcast/models/errors.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <algorithm>

namespace gridcast::emulator {

namespace {

bool recv_accepts(const Request& recv, const Request& send)
{
  return recv.context == send.context && (recv.peer == kAnySource || recv.peer == send.owner) &&
         (recv.tag == kAnyTag || recv.tag == send.tag);
}

}  // namespace

Transfer::~Transfer()
{
  if (not done && aborting != nullptr && *aborting && comm)
    new sg4::CommPtr(std::move(comm));  // deliberately leaked, see the declaration
}

MessageBoard::MessageBoard(std::vector<sg4::Host*> rank_hosts, Options options)
    : hosts_(std::move(rank_hosts)), queues_(hosts_.size()), probes_(hosts_.size()),
      endpoint_override_(hosts_.size(), nullptr), options_(options)
{
}

sg4::Semaphore* MessageBoard::own_semaphore(int& pid)
{
  pid = static_cast<int>(sg4::this_actor::get_pid());
  if (static_cast<std::size_t>(pid) >= wakeups_.size())
    wakeups_.resize(static_cast<std::size_t>(pid) + 1);
  if (not wakeups_[static_cast<std::size_t>(pid)])
    wakeups_[static_cast<std::size_t>(pid)] = sg4::Semaphore::create(0);
  return wakeups_[static_cast<std::size_t>(pid)].get();  // stable while the vector grows
}

RequestPtr MessageBoard::post_send(int from, int to, std::uint64_t bytes, int tag, int context, SendMode mode,
                                   sg4::Host* endpoint)
{
  if (to < 0 || to >= rank_count())
    throw InternalError("post_send to rank " + std::to_string(to) + " outside the world");
  auto send = std::make_shared<Request>();
  send->kind = Request::Kind::Send;
  send->owner = from;
  send->peer = to;
  send->tag = tag;
  send->context = context;
  send->bytes = bytes;
  send->detached = mode == SendMode::Standard && bytes < options_.eager_threshold_bytes;
  send->post_time = sg4::Engine::get_clock();
  send->message = next_message_++;
  send->endpoint = endpoint != nullptr ? endpoint : endpoint_override_[from];

  auto& posted = queues_[to].posted_recvs;
  auto it = std::find_if(posted.begin(), posted.end(), [&](const RequestPtr& r) { return recv_accepts(*r, *send); });
  if (it != posted.end()) {
    RequestPtr recv = *it;
    posted.erase(it);
    match(send, recv);
  } else {
    queues_[to].unexpected_sends.push_back(send);
    ProbeWaiter& p = probes_[static_cast<std::size_t>(to)];
    if (p.active && p.context == context && (p.from == kAnySource || p.from == from) &&
        (p.tag == kAnyTag || p.tag == tag)) {
      p.active = false;
      wakeups_[static_cast<std::size_t>(p.pid)]->release();
    }
  }
  return send;
}

RequestPtr MessageBoard::post_recv(int at, int from, std::uint64_t bytes, int tag, int context, sg4::Host* endpoint)
{
  if (from != kAnySource && (from < 0 || from >= rank_count()))
    throw InternalError("post_recv from rank " + std::to_string(from) + " outside the world");
  auto recv = std::make_shared<Request>();
  recv->kind = Request::Kind::Recv;
  recv->owner = at;
  recv->peer = from;
  recv->tag = tag;
  recv->context = context;
  recv->bytes = bytes;
  recv->post_time = sg4::Engine::get_clock();
  recv->endpoint = endpoint != nullptr ? endpoint : endpoint_override_[at];

  auto& unexpected = queues_[at].unexpected_sends;
  auto it = std::find_if(unexpected.begin(), unexpected.end(),
                         [&](const RequestPtr& s) { return recv_accepts(*recv, *s); });
  if (it != unexpected.end()) {
    RequestPtr send = *it;
    unexpected.erase(it);
    match(send, recv);
  } else {
    queues_[at].posted_recvs.push_back(recv);
  }
  return recv;
}

void MessageBoard::match(const RequestPtr& send, const RequestPtr& recv)
{
  // The receiver's buffer size is what MPI would truncate to; the sender's size is what travels.
  // A trace where they differ is still replayed with the sender's size (as SMPI does).
  auto transfer = std::make_shared<Transfer>();
  transfer->aborting = &aborting_;
  sg4::Host* from_host = send->endpoint != nullptr ? send->endpoint : hosts_[send->owner];
  sg4::Host* to_host = recv->endpoint != nullptr ? recv->endpoint : hosts_[recv->owner];
  // An empty message still costs the route's latency. SimGrid 3.32 serializes zero-size host-to-host
  // comms that share a link (63 empty sendto_async into one host of examples/stencil3d/platform.xml
  // end after 9.0 ms, 1-byte ones after 0.14 ms), which made a flat barrier cost a latency per rank;
  // SMPI's own empty messages do not. One byte is below any link's resolution (0.8 ns at 10 Gb/s).
  transfer->comm = sg4::Comm::sendto_async(from_host, to_host, std::max<std::uint64_t>(send->bytes, 1));
  send->transfer = transfer;
  recv->transfer = std::move(transfer);
  send->matched = true;
  recv->matched = true;
  recv->matched_source = send->owner;
  recv->message = send->message;
  ++messages_;
  if (account_links_) {
    sg4::Host* from = from_host;
    sg4::Host* to = to_host;
    std::uint64_t key = (static_cast<std::uint64_t>(send->owner) << 32) | static_cast<std::uint32_t>(recv->owner);
    // Routes are cached per rank pair; a side leaving or landing on its GPU (a rank has one) takes
    // another route, kept apart by a flag bit per side (rank ids stay below 2^31).
    if (send->endpoint != nullptr)
      key |= std::uint64_t{1} << 63;
    if (recv->endpoint != nullptr)
      key |= std::uint64_t{1} << 31;
    auto it = routes_.find(key);
    if (it == routes_.end()) {
      std::vector<sg4::Link*> links;
      double latency = 0;
      from->route_to(to, links, &latency);
      std::vector<std::uint32_t> indices;
      for (sg4::Link* l : links) {
        auto [pos, added] = link_index_.try_emplace(l, static_cast<std::uint32_t>(links_.size()));
        if (added) {
          links_.push_back(l);
          link_total_.push_back(0.0);
        }
        indices.push_back(pos->second);
      }
      it = routes_.emplace(key, std::move(indices)).first;
    }
    for (std::uint32_t i : it->second)
      link_total_[i] += static_cast<double>(send->bytes);
  }
  // Release whoever sleeps on its semaphore waiting for this match. The actor that matched is running
  // now, so it is never one of them.
  for (Request* r : {send.get(), recv.get()}) {
    if (r->has_waiter) {
      r->has_waiter = false;
      wakeups_[static_cast<std::size_t>(r->waiter)]->release();
    }
  }
}

double MessageBoard::wait(const RequestPtr& request)
{
  if (request->completed)
    return 0.0;
  if (request->detached) {
    // Eager send: the data sits in the library's buffer; the sender is free at once, and the transfer
    // (started at match time) is the receiver's to wait for.
    request->completed = true;
    return 0.0;
  }
  double begin = sg4::Engine::get_clock();
  int pid = -1;
  sg4::Semaphore* wakeup = nullptr;
  if (not request->matched || not request->transfer || not request->transfer->done)
    wakeup = own_semaphore(pid);  // only when this actor may block
  while (not request->matched) {
    // Exactly one release answers this acquire: the match of this request, which clears has_waiter.
    request->has_waiter = true;
    request->waiter = pid;
    wakeup->acquire();
  }
  if (request->kind == Request::Kind::Local)
    return 0.0;  // finish_local completed it: no partner to wait for, the time was the collective's
  double partner_wait = sg4::Engine::get_clock() - begin;
  Transfer& t = *request->transfer;
  if (not t.done) {
    if (t.being_waited) {
      t.blocked_actor = pid;
      while (not t.done)
        wakeup->acquire();
    } else {
      t.being_waited = true;
      t.comm->wait();
      t.done = true;
      if (t.blocked_actor >= 0)
        wakeups_[static_cast<std::size_t>(t.blocked_actor)]->release();
    }
  }
  request->completed = true;
  request->transfer = nullptr;  // release the activity as soon as both sides are done with it
  return partner_wait;
}

bool MessageBoard::test(const RequestPtr& request)
{
  if (request->completed)
    return true;
  if (request->detached) {
    request->completed = true;
    return true;
  }
  if (not request->matched)
    return false;
  Transfer& t = *request->transfer;
  if (not t.done && not t.being_waited && t.comm->test())
    t.done = true;
  if (t.done) {
    request->completed = true;
    request->transfer = nullptr;
    return true;
  }
  return false;
}

RequestPtr MessageBoard::post_local(int owner)
{
  auto r = std::make_shared<Request>();
  r->kind = Request::Kind::Local;
  r->owner = owner;
  r->post_time = sg4::Engine::get_clock();
  return r;
}

void MessageBoard::finish_local(const RequestPtr& request)
{
  request->matched = true;
  request->completed = true;
  if (request->has_waiter) {
    request->has_waiter = false;
    wakeups_[static_cast<std::size_t>(request->waiter)]->release();
  }
}

bool MessageBoard::cancel(const RequestPtr& request)
{
  if (request->matched || request->completed || request->kind == Request::Kind::Local)
    return false;
  auto& queue = request->kind == Request::Kind::Recv ? queues_[static_cast<std::size_t>(request->owner)].posted_recvs
                                                     : queues_[static_cast<std::size_t>(request->peer)].unexpected_sends;
  auto it = std::find(queue.begin(), queue.end(), request);
  if (it == queue.end())
    throw InternalError("cancel: an unmatched request is not in its queue");
  queue.erase(it);
  request->cancelled = true;
  request->completed = true;
  return true;
}

bool MessageBoard::iprobe(int at, int from, int tag, int context) const
{
  Request probe;
  probe.kind = Request::Kind::Recv;
  probe.owner = at;
  probe.peer = from;
  probe.tag = tag;
  probe.context = context;
  const auto& unexpected = queues_[static_cast<std::size_t>(at)].unexpected_sends;
  return std::any_of(unexpected.begin(), unexpected.end(), [&](const RequestPtr& s) { return recv_accepts(probe, *s); });
}

void MessageBoard::probe(int at, int from, int tag, int context)
{
  int pid = -1;
  sg4::Semaphore* wakeup = own_semaphore(pid);
  while (not iprobe(at, from, tag, context)) {
    // Exactly one release answers this acquire: post_send of a matching message, which clears `active`.
    probes_[static_cast<std::size_t>(at)] = ProbeWaiter{true, from, tag, context, pid};
    wakeup->acquire();
  }
}

std::vector<std::pair<sg4::Link*, double>> MessageBoard::link_bytes() const
{
  std::vector<std::pair<sg4::Link*, double>> out;
  for (std::size_t i = 0; i < links_.size(); ++i)
    if (link_total_[i] > 0)
      out.emplace_back(links_[i], link_total_[i]);
  return out;
}

std::vector<RequestPtr> MessageBoard::pending_at(int world_rank) const
{
  std::vector<RequestPtr> out;
  const Queues& q = queues_[world_rank];
  out.insert(out.end(), q.posted_recvs.begin(), q.posted_recvs.end());
  // Unexpected sends queued at this rank belong to other ranks; report the ones this rank posted.
  for (const Queues& other : queues_)
    for (const RequestPtr& s : other.unexpected_sends)
      if (s->owner == world_rank)
        out.push_back(s);
  return out;
}

}  // namespace gridcast::emulator
