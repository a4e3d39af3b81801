#include "gridcast/emulator/p2p.hpp"

#include "gridcast/foundation/errors.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <algorithm>

namespace gridcast::emulator {

namespace {

/// Every message carries at least one byte on the wire (see match()): SimGrid 3.32 serializes empty comms.
constexpr std::uint64_t kMinWireBytes = 1;

/// What a message of `bytes` puts on the wire: the data and the envelope (Options::envelope_bytes).
std::uint64_t wire_bytes(std::uint64_t bytes, std::uint64_t envelope_bytes)
{
  return std::max(bytes + envelope_bytes, kMinWireBytes);
}

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

Request::~Request()
{
  if (aborting != nullptr && *aborting && half)
    new sg4::CommPtr(std::move(half));  // deliberately leaked, as in ~Transfer
}

MessageBoard::MessageBoard(std::vector<sg4::Host*> rank_hosts, Options options)
    : hosts_(std::move(rank_hosts)), queues_(hosts_.size()), probes_(hosts_.size()),
      endpoint_override_(hosts_.size(), nullptr), options_(options)
{
}

void MessageBoard::set_copy_overhead(std::vector<platform::OverheadPoint> points)
{
  copy_overhead_ = std::move(points);
  cpu_busy_until_s_.assign(hosts_.size(), 0.0);
}

void MessageBoard::arrived(Transfer& t, double at)
{
  if (t.copy_s > 0) {
    // Sender first, then receiver: with two messages crossing, each rank pays both, one after the other.
    double& s = cpu_busy_until_s_[static_cast<std::size_t>(t.sender)];
    s = std::max(s, at) + t.copy_s;
    t.sender_ready_s = s;
    double& r = cpu_busy_until_s_[static_cast<std::size_t>(t.receiver)];
    r = std::max(r, at) + t.copy_s;
    t.receiver_ready_s = r;
  } else {
    t.sender_ready_s = at;
    t.receiver_ready_s = at;
  }
  t.done = true;
}

double MessageBoard::ready_time(const Request& request, const Transfer& t)
{
  return request.kind == Request::Kind::Send ? t.sender_ready_s : t.receiver_ready_s;
}

MessageBoard::ActorState& MessageBoard::own_state(int& pid)
{
  pid = static_cast<int>(sg4::this_actor::get_pid());
  if (static_cast<std::size_t>(pid) >= actors_.size())
    actors_.resize(static_cast<std::size_t>(pid) + 1);
  return actors_[static_cast<std::size_t>(pid)];  // valid until the next yield (another actor may grow the vector)
}

sg4::Semaphore* MessageBoard::own_semaphore(int& pid)
{
  ActorState& state = own_state(pid);
  if (not state.wakeup)
    state.wakeup = sg4::Semaphore::create(0);
  return state.wakeup.get();  // stable while the vector grows
}

bool MessageBoard::stock_mailbox()
{
  if (not options_.use_mailboxes || not free_mailboxes_.empty())
    return false;
  // Mailbox::by_name is a simcall: other actors run meanwhile (and may even take this one).
  sg4::Mailbox* box = sg4::Mailbox::by_name("gridcast-p2p-" + std::to_string(mailboxes_created_++));
  free_mailboxes_.push_back(box);
  return true;
}

sg4::Mailbox* MessageBoard::take_mailbox()
{
  sg4::Mailbox* box = free_mailboxes_.back();
  free_mailboxes_.pop_back();
  return box;
}

void MessageBoard::wait_half(Request& request)
{
  sg4::CommPtr half = std::move(request.half);  // reset first: drain() and the reaping skip it from now on
  half->wait();
  if (request.transfer && not request.transfer->done)
    arrived(*request.transfer, half->get_finish_time());
}

void MessageBoard::track(const RequestPtr& request)
{
  int pid = -1;
  own_state(pid);
  const auto index = static_cast<std::size_t>(pid);
  actors_[index].unwaited.push_back(request);
  if (actors_[index].unwaited.size() >= actors_[index].sweep_at)
    reap(index);
}

void MessageBoard::reap(std::size_t index)
{
  // Forget the halves waited for already, and wait now for eager sends whose transfer is over (it returns
  // at once; it is what takes the comm off this actor's list in SimGrid). Each wait yields, so the list
  // is re-read by index every time; only this actor changes it.
  // The list's elements keep their requests alive (the list's storage survives a move of actors_), so
  // they are looked at through raw pointers: a shared_ptr copy per element costs two atomic operations.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < actors_[index].unwaited.size(); ++i) {
    Request* r = actors_[index].unwaited[i].get();
    if (r->half && r->transfer && r->transfer->done)
      wait_half(*r);
    if (r->half) {
      auto& list = actors_[index].unwaited;
      if (kept != i)
        list[kept] = std::move(list[i]);
      ++kept;
    }
  }
  actors_[index].unwaited.resize(kept);
  actors_[index].sweep_at = std::max<std::size_t>(kMinSweep, 2 * kept);
}

void MessageBoard::drain()
{
  if (not options_.use_mailboxes)
    return;
  int pid = -1;
  own_state(pid);
  const auto index = static_cast<std::size_t>(pid);
  for (std::size_t i = 0; i < actors_[index].unwaited.size(); ++i) {
    Request* r = actors_[index].unwaited[i].get();  // kept alive by the list, see reap()
    if (r->half)
      wait_half(*r);
  }
  actors_[index].unwaited.clear();
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
  send->aborting = &aborting_;
  if (tracking_) {
    send->iteration = iteration_[static_cast<std::size_t>(from)];
    // Counted when posted, not when matched: each iteration posts the same, while a match may come in the
    // receiver's next iteration. Bytes by route as match() counts them, for host-to-host sends (the only
    // ones of a synthesized stream).
    SenderTally& t = senders_[static_cast<std::size_t>(from)];
    ++t.messages;
    if (account_links_ && send->endpoint == nullptr)
      t.route_bytes[(static_cast<std::uint64_t>(from) << 32) | static_cast<std::uint32_t>(to)] += static_cast<double>(bytes);
  }
  if (options_.use_mailboxes && send->endpoint != nullptr)
    throw InternalError("a send from a GPU endpoint on a board that moves bytes through mailboxes");

  auto& posted = queues_[to].posted_recvs;
  for (;;) {
    auto it = std::find_if(posted.begin(), posted.end(), [&](const RequestPtr& r) { return recv_accepts(*r, *send); });
    if (it != posted.end()) {
      RequestPtr recv = std::move(*it);
      posted.erase(it);
      match(send, recv);
      if (options_.use_mailboxes) {
        // The receiver's half is in its mailbox already (posted before anyone could see the receive): this
        // put starts the transfer. When it returns, both halves are in and the mailbox is empty again.
        send->half = recv->mailbox->put_async(&payload_, wire_bytes(bytes, options_.envelope_bytes));
        send->transfer->started = true;
        give_back(recv->mailbox);
      }
      break;
    }
    // Unmatched: the send waits in the queue with a mailbox of its own. Creating one yields, after which
    // the queues may have changed: look again.
    if (stock_mailbox())
      continue;
    // The put is the first thing that yields after the send becomes visible: whoever matches it later
    // finds this half in the mailbox. (Waking a prober yields too, hence after the put.)
    queues_[to].unexpected_sends.push_back(send);
    if (options_.use_mailboxes) {
      send->mailbox = take_mailbox();
      // Waits in the mailbox for the receiver's half.
      send->half = send->mailbox->put_async(&payload_, wire_bytes(bytes, options_.envelope_bytes));
    }
    ProbeWaiter& p = probes_[static_cast<std::size_t>(to)];
    if (p.active && p.context == context && (p.from == kAnySource || p.from == from) &&
        (p.tag == kAnyTag || p.tag == tag)) {
      p.active = false;
      actors_[static_cast<std::size_t>(p.pid)].wakeup->release();
    }
    break;
  }
  if (send->half)
    track(send);
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
  recv->aborting = &aborting_;
  if (tracking_)
    recv->iteration = iteration_[static_cast<std::size_t>(at)];
  if (options_.use_mailboxes && recv->endpoint != nullptr)
    throw InternalError("a receive into a GPU endpoint on a board that moves bytes through mailboxes");

  auto& unexpected = queues_[at].unexpected_sends;
  for (;;) {
    auto it = std::find_if(unexpected.begin(), unexpected.end(),
                           [&](const RequestPtr& s) { return recv_accepts(*recv, *s); });
    if (it != unexpected.end()) {
      RequestPtr send = std::move(*it);
      unexpected.erase(it);
      match(send, recv);
      if (options_.use_mailboxes) {
        recv->half = send->mailbox->get_async<void>(&payload_sink_);  // starts the transfer, see post_send
        recv->transfer->started = true;
        give_back(send->mailbox);
      }
      break;
    }
    if (stock_mailbox())  // yields: look again
      continue;
    queues_[at].posted_recvs.push_back(recv);
    if (options_.use_mailboxes) {
      recv->mailbox = take_mailbox();
      recv->half = recv->mailbox->get_async<void>(&payload_sink_);
    }
    break;
  }
  if (recv->half)
    track(recv);
  return recv;
}

void MessageBoard::match(const RequestPtr& send, const RequestPtr& recv)
{
  // The receiver's buffer size is what MPI would truncate to; the sender's size is what travels.
  // A trace where they differ is still replayed with the sender's size (as SMPI does).
  auto transfer = std::make_shared<Transfer>();
  transfer->aborting = &aborting_;
  const std::uint64_t on_wire = wire_bytes(send->bytes, options_.envelope_bytes);
  transfer->bytes = static_cast<double>(on_wire);  // what travels
  sg4::Host* from_host = send->endpoint != nullptr ? send->endpoint : hosts_[send->owner];
  sg4::Host* to_host = recv->endpoint != nullptr ? recv->endpoint : hosts_[recv->owner];
  // An empty message still costs the route's latency. SimGrid 3.32 serializes zero-size host-to-host
  // comms that share a link (63 empty sendto_async into one host of examples/stencil3d/platform.xml
  // end after 9.0 ms, 1-byte ones after 0.14 ms), which made a flat barrier cost a latency per rank;
  // SMPI's own empty messages do not. One byte is below any link's resolution (0.8 ns at 10 Gb/s).
  // The mailbox path sends the same one byte (post_send, kMinWireBytes). With an envelope (SMPI's
  // network model: 16 bytes) no message is empty on the wire anyway, as in SMPI.
  if (not options_.use_mailboxes)
    transfer->comm = sg4::Comm::sendto_async(from_host, to_host, on_wire);  // may yield
  send->match_time = recv->match_time = sg4::Engine::get_clock();
  transfer->sender = send->owner;
  transfer->receiver = recv->owner;
  // Only between CPU buffers of one host: that is shared memory, where the overhead was measured.
  if (not copy_overhead_.empty() && from_host == to_host && send->endpoint == nullptr && recv->endpoint == nullptr)
    transfer->copy_s = platform::overhead_for(copy_overhead_, static_cast<double>(send->bytes));
  send->transfer = transfer;
  recv->transfer = std::move(transfer);
  send->matched = true;
  recv->matched = true;
  recv->matched_source = send->owner;
  recv->message = send->message;
  send->partner_post_time = recv->post_time;
  recv->partner_post_time = send->post_time;
  ++messages_;
  if (tracking_) {
    if (send->iteration != recv->iteration)
      latest_crossing_ = std::max({latest_crossing_, send->iteration, recv->iteration});
  }
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
    for (std::uint32_t i : route(key, from, to))
      link_total_[i] += static_cast<double>(send->bytes);
  }
  // Release whoever sleeps on its semaphore waiting for this match. The actor that matched is running
  // now, so it is never one of them.
  for (Request* r : {send.get(), recv.get()}) {
    if (r->has_waiter) {
      r->has_waiter = false;
      actors_[static_cast<std::size_t>(r->waiter)].wakeup->release();
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
  if (request->half) {
    // Mailbox path: this side's half was posted with the request; waiting for it covers the partner's
    // arrival and the transfer. The partner wait is what went by before the match.
    wait_half(*request);
    if (request->transfer != nullptr)
      if (double ready = ready_time(*request, *request->transfer); ready > sg4::Engine::get_clock())
        sg4::this_actor::sleep_until(ready);  // this side's copy overhead
    request->completed = true;
    request->transfer = nullptr;
    // Transfers end together (a ring's, a halo's): reap this actor's finished eager sends now, while
    // their comms are still in the cache, unless the list is long (then the size trigger does it).
    int pid = -1;
    own_state(pid);
    if (actors_[static_cast<std::size_t>(pid)].unwaited.size() <= kMinSweep)
      reap(static_cast<std::size_t>(pid));
    return request->match_time > begin ? request->match_time - begin : 0.0;
  }
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
      arrived(t, t.comm->get_finish_time());
      if (t.blocked_actor >= 0)
        actors_[static_cast<std::size_t>(t.blocked_actor)].wakeup->release();
    }
  }
  if (double ready = ready_time(*request, t); ready > sg4::Engine::get_clock())
    sg4::this_actor::sleep_until(ready);  // this side's copy overhead
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
  if (request->half) {
    // Mailbox path. Comm::test() would leave a finished half on its actor's list of activities for good
    // in 3.32 (only a wait takes it off), so: the transfer is over when the partner waited for it, or
    // when both halves are in and nothing remains of it (SimGrid drops a comm's network action as soon as
    // it ends; while it pays the latency its remaining bytes are all of them).
    if (not t.done) {
      if (not t.started)
        return false;  // the matching side's half is not in yet (its simcall is pending)
      // Over: charge the copy overhead from now (a poll may find it late; the partner's wait, when it
      // comes first, charges from the exact finish time instead).
      if (request->half->get_remaining() <= 0)  // at least one byte travels, so this counts down
        arrived(t, sg4::Engine::get_clock());
    }
    if (not t.done)
      return false;
    wait_half(*request);  // over already: returns at once
    // From here on the request has no half: a later test() or wait() takes the host-to-host branch,
    // which only checks this side's copy overhead (t.done is set, so t.comm is never touched).
  }
  if (request->half == nullptr && t.comm == nullptr) {
    if (ready_time(*request, t) > sg4::Engine::get_clock())
      return false;
    request->completed = true;
    request->transfer = nullptr;
    return true;
  }
  if (not t.done && not t.being_waited && t.comm->test())
    arrived(t, t.comm->get_finish_time());  // found finished maybe later than it finished: charge from then
  if (t.done && ready_time(*request, t) <= sg4::Engine::get_clock()) {
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
    actors_[static_cast<std::size_t>(request->waiter)].wakeup->release();
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
  if (request->half) {
    // Its half waits alone in its mailbox: take it out, then the mailbox is free again.
    sg4::CommPtr half = std::move(request->half);
    half->cancel();
    give_back(request->mailbox);
  }
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

const std::vector<std::uint32_t>& MessageBoard::route(std::uint64_t key, sg4::Host* from, sg4::Host* to)
{
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
  return it->second;
}

void MessageBoard::add_skipped(std::uint64_t messages, const std::map<std::uint64_t, double>& route_bytes)
{
  messages_ += messages;
  if (not account_links_)
    return;
  for (const auto& [key, bytes] : route_bytes) {
    const auto from = static_cast<std::size_t>(key >> 32), to = static_cast<std::size_t>(key & 0x7fffffffu);
    for (std::uint32_t i : route(key, hosts_[from], hosts_[to]))
      link_total_[i] += bytes;
  }
}

std::vector<RequestPtr> MessageBoard::unmatched_sends() const
{
  std::vector<RequestPtr> out;
  for (const Queues& q : queues_)
    out.insert(out.end(), q.unexpected_sends.begin(), q.unexpected_sends.end());
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
