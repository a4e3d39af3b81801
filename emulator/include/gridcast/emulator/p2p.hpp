// MPI point-to-point semantics on SimGrid S4U.
//
// SimGrid 3.32 does not expose match functions on asynchronous comms, so gridcast matches messages
// itself, exactly as an MPI library does: each rank has a queue of posted receives and a queue of
// unexpected sends; a send or receive scans the other queue in order, which gives MPI's non-overtaking
// rule for free. Once a pair matches, the bytes move as a host-to-host SimGrid communication
// (Comm::sendto_async) started at that moment, so the fluid network model decides the transfer time.
//
//   eager (bytes < eager threshold): the sender continues at once (detached), the transfer starts when
//                                    the receive is posted -- SMPI's default (async-small-thresh 0);
//   rendezvous:                      the sender blocks until the transfer has finished.
//
// Copy overhead (a platform from a version-2 calibration, gridcast:copy-overhead; none otherwise): a
// message between two ranks of one host moves through shared memory, and both ranks' cores do work for
// it once its data has arrived (copying out, completing the requests). Each rank has a CPU timeline:
// the sender and the receiver each pay o(n) on theirs, after whatever work they already owe, and a
// request completes when its side has paid. A ping-pong pays o(n) once per one-way trip; an exchange
// pays it twice per rank (the message it sent and the one it received), which is what the measured
// exchange curve shows (docs/guides/calibration.md, "The copy overhead").
// How the bytes move (MessageBoard::Options::use_mailboxes):
//   mailboxes (replay without GPUs): each side posts its own half of a SimGrid mailbox comm when it posts
//     the request, on a mailbox from a pool that the first of the two takes and the second (the one that
//     matches) finds in its partner's request; the transfer starts when the second half is posted, at
//     match time as above. Each actor waits for its own half, as a plain S4U program does. This avoids
//     SimGrid 3.32's cost for host-to-host comms: they are detached, and finishing a detached comm
//     removes it from one global std::list of every detached comm in flight, a linear scan that took
//     30-48% of a 4096-rank ring. The price: an actor must wait for every half it posted before it ends
//     (3.32 cancels the comms of an ending actor), so eager sends are reaped once their transfer is over
//     and drain() waits for the rest; and a half completed by Comm::test() would stay in its actor's
//     list of activities for good, so test() looks at the transfer's remaining bytes instead.
//   host-to-host (runs with GPUs, where a side may be a GPU host rather than its actor's host):
//     Comm::sendto_async between the two hosts, started by the actor that matches.
//
// An actor blocked on a request that has not matched yet sleeps on its own semaphore (one per actor: a
// rank and the actors running its nonblocking collectives block independently); the matching rank
// releases it. (Self-suspension is not used: SimGrid 3.32 implements it with a CPU action that is never
// freed, one per suspension.)
// All of this runs inside SimGrid's cooperative scheduling, so no locks are needed.
#pragma once

#include "gridcast/calibration/calibration.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gridcast::emulator {

namespace sg4 = simgrid::s4u;

inline constexpr int kAnySource = -1;
inline constexpr int kAnyTag = -1;
/// SMPI 3.32's MPI envelope: every message it sends is its data plus these bytes (smpi_request.cpp,
/// "payload_size_ = size_ + 16"), which decides the segment of its piecewise network factors too.
inline constexpr std::uint64_t kSmpiEnvelopeBytes = 16;

enum class SendMode : std::uint8_t {
  Standard,     ///< eager below the threshold, rendezvous above
  Synchronous,  ///< always waits for the transfer (MPI_Ssend)
};

/// The bytes of one matched message in flight. Shared by the send and the receive: only one actor may
/// wait on a SimGrid comm (a second waiter leaks a host sleep action in 3.32), so the first to wait does,
/// and wakes the other when the transfer ends.
struct Transfer {
  sg4::CommPtr comm;  ///< host-to-host path only; on the mailbox path each request holds its own half
  double bytes = 0;   ///< what travels (the sender's size)
  bool started = false;  ///< mailbox path: both halves are posted (the matching side's simcall returned)
  bool done = false;
  bool being_waited = false;
  int blocked_actor = -1;  ///< pid of an actor sleeping on its semaphore until `done`
  int sender = -1, receiver = -1;  ///< world ranks of the two sides
  double copy_s = 0;               ///< copy overhead each side pays once the data arrived (0: none)
  /// Set when `done` becomes true: when each side has paid its copy overhead (the arrival time if none).
  double sender_ready_s = 0, receiver_ready_s = 0;
  const bool* aborting = nullptr;  ///< the board's abort flag

  Transfer() = default;
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;
  /// When a run is aborted (bad input in one rank), SimGrid complains loudly about comms destroyed
  /// while running; those are dropped without destruction instead: the process is about to exit.
  ~Transfer();
};

/// A posted send or receive. Shared between the posting rank and the matching engine.
struct Request {
  /// Local: completed by something other than a message (a nonblocking collective's own actor).
  enum class Kind : std::uint8_t { Send, Recv, Local };
  Kind kind = Kind::Send;
  int owner = -1;      ///< world rank that posted it
  int peer = -1;       ///< send: destination; recv: source or kAnySource (world ranks)
  int tag = 0;         ///< recv may hold kAnyTag
  int context = 0;     ///< communicator context: messages match only within one context
  std::uint64_t bytes = 0;
  bool detached = false;  ///< eager send: the owner does not wait for the transfer
  bool matched = false;
  bool completed = false;
  int matched_source = -1;      ///< recv: world rank of the sender it matched
  std::uint64_t message = 0;    ///< send: id of the message (1, 2, ...); recv: the id it matched
  double post_time = 0;         ///< simulated time it was posted
  double partner_post_time = -1;  ///< set at match time: when the request it matched was posted
  std::shared_ptr<Transfer> transfer;  ///< set at match time
  bool has_waiter = false;      ///< an actor is blocked on its semaphore until this request matches
  bool cancelled = false;       ///< MPI_Cancel removed it before it matched: it completes with no transfer
  int waiter = -1;              ///< pid of that actor (the rank's own, or a nonblocking collective's)
  /// Where the bytes leave (send) or land (recv) when not the owner's host: a GPU host under GPUDirect.
  sg4::Host* endpoint = nullptr;
  /// Mailbox path: this side's half of the comm, posted with the request, reset once its actor waited
  /// for it; and the pooled mailbox the first side took (the matching side posts its half there).
  sg4::CommPtr half;
  sg4::Mailbox* mailbox = nullptr;
  double match_time = -1;       ///< simulated time of the match (mailbox path), for the partner wait
  std::int64_t iteration = -1;  ///< the owner's steady-loop iteration when posted (fast-forward; -1: none)
  const bool* aborting = nullptr;  ///< the board's abort flag (see ~Transfer)

  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();
};
using RequestPtr = std::shared_ptr<Request>;

/// Requests in posting order, matched by a scan from the front (MPI's non-overtaking order). Every rank
/// has two; a std::deque allocates ~0.6 KiB as soon as it is constructed (4.7 MiB of a 4096-rank replay,
/// for queues that mostly hold 0 to 2 entries), this allocates nothing until used. Taking the front is
/// O(1) (a head index; the dead prefix is dropped once it is half the storage), so a long queue drained
/// in order stays linear, as with a deque.
class RequestQueue {
public:
  using iterator       = std::vector<RequestPtr>::iterator;
  using const_iterator = std::vector<RequestPtr>::const_iterator;
  iterator begin() { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  const_iterator end() const { return items_.end(); }
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  void push_back(RequestPtr request) { items_.push_back(std::move(request)); }
  void erase(iterator it)
  {
    if (it != begin()) {
      items_.erase(it);
      return;
    }
    it->reset();
    ++head_;
    if (head_ == items_.size()) {
      items_.clear();  // keeps the capacity: the next message reuses it
      head_ = 0;
    } else if (head_ >= kCompactAt && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

private:
  static constexpr std::size_t kCompactAt = 32;
  std::vector<RequestPtr> items_;
  std::size_t head_ = 0;  ///< items_[0, head_) are taken (null)
};

/// Per-simulation point-to-point state shared by all ranks: hosts and matching queues.
class MessageBoard {
public:
  struct Options {
    std::uint64_t eager_threshold_bytes = 65536;  ///< like SMPI's smpi/send-is-detached-thresh
    /// Bytes every message carries on the wire besides its data (tag, source, communicator): SMPI 3.32
    /// sends size + 16 (smpi_request.cpp), and its piecewise network factors apply to that size. The
    /// eager switch and the link byte counts use the data size alone, as SMPI's detached switch does.
    std::uint64_t envelope_bytes = 0;
    /// Move bytes as mailbox comms between the ranks' actors (see the top of this file). Only for runs
    /// where every request leaves from and lands on its actor's host (no GPU endpoint), and every actor
    /// that posts calls drain() before it ends.
    bool use_mailboxes = false;
  };

  MessageBoard(std::vector<sg4::Host*> rank_hosts, Options options);

  int rank_count() const { return static_cast<int>(hosts_.size()); }
  sg4::Host* host_of(int world_rank) const { return hosts_[world_rank]; }
  const Options& options() const { return options_; }

  /// Posts a send from `from` to `to`. Starts the transfer if a matching receive is posted.
  RequestPtr post_send(int from, int to, std::uint64_t bytes, int tag, int context, SendMode mode,
                       sg4::Host* endpoint = nullptr);
  /// Posts a receive at `at` from `from` (or kAnySource). Starts the transfer if a matching send waits.
  RequestPtr post_recv(int at, int from, std::uint64_t bytes, int tag, int context, sg4::Host* endpoint = nullptr);
  /// While set, every send or receive `rank` posts without an explicit endpoint uses `host` (a rank inside
  /// a collective on GPU buffers under GPUDirect or NCCL); nullptr clears it.
  void set_endpoint_override(int rank, sg4::Host* host) { endpoint_override_[rank] = host; }

  /// A request of kind Local owned by `owner`, completed by finish_local().
  RequestPtr post_local(int owner);
  /// Completes a Local request and wakes the actor waiting for it.
  void finish_local(const RequestPtr& request);
  /// MPI_Cancel: a request not matched yet leaves its queue and completes at once (cancelled); a
  /// matched one cannot be cancelled and completes normally. Returns whether it was cancelled.
  bool cancel(const RequestPtr& request);
  /// MPI_Iprobe at `at`: whether a message matching (from or kAnySource, tag or kAnyTag, context) has
  /// been sent to it and not received yet. Its envelope is visible from the moment it is sent.
  bool iprobe(int at, int from, int tag, int context) const;
  /// MPI_Probe: blocks the calling actor until iprobe() would be true.
  void probe(int at, int from, int tag, int context);

  /// Blocks the calling actor until `request` has completed. Returns the seconds spent before the
  /// transfer started (waiting for the partner), for the wait/communication breakdown.
  double wait(const RequestPtr& request);
  /// Completes `request` if its transfer has finished; never blocks.
  bool test(const RequestPtr& request);

  /// Requests still unmatched at `world_rank` (for deadlock reports).
  std::vector<RequestPtr> pending_at(int world_rank) const;
  /// Sends that no receive matched (eager ones complete without one): by receiving rank, then in the
  /// order they were posted. At the end of a run, messages the trace sent and never received.
  std::vector<RequestPtr> unmatched_sends() const;

  /// Counts the bytes of every message on each link of its route (off by default: it costs one route
  /// lookup per new host pair). SimGrid's link-load plugin is not used because it cannot attach to the
  /// loopback link the engine creates before any plugin can start.
  void set_link_accounting(bool on) { account_links_ = on; }
  /// Options::use_mailboxes, set before anything is posted.
  void set_use_mailboxes(bool on) { options_.use_mailboxes = on; }
  /// Bytes carried by each link so far (links that carried nothing are absent), in no particular order.
  std::vector<std::pair<sg4::Link*, double>> link_bytes() const;

  /// The shared-memory copy overhead curve (gridcast:copy-overhead of the platform); empty: none.
  void set_copy_overhead(std::vector<platform::OverheadPoint> points);
  /// Mailbox path: waits, in the calling actor, for every half it posted and has not waited for (eager
  /// sends, requests never waited). Call it when an actor's work is over: SimGrid 3.32 cancels the comms
  /// of an actor that ends, which would fail its partner's transfer.
  void drain();

  /// Marks the run as aborted: transfers still in flight are abandoned rather than destroyed.
  void abort() { aborting_ = true; }

  /// Total messages matched so far (with those of skipped iterations, see add_skipped).
  std::uint64_t messages() const { return messages_; }

  // --- Steady-state fast-forward (docs/reference/emulator.md) ---
  /// Starts the bookkeeping below (off by default: it costs a little per message).
  void track_iterations()
  {
    tracking_ = true;
    iteration_.assign(hosts_.size(), -1);
    senders_.assign(hosts_.size(), {});
  }
  /// The steady-loop iteration `rank` is in now; its later requests carry it.
  void set_iteration(int rank, std::int64_t iteration) { iteration_[static_cast<std::size_t>(rank)] = iteration; }
  /// The largest iteration index touched by a message sent in one iteration and received in another
  /// (either side's), or -2 when none has been: such a message would cross a skip.
  std::int64_t latest_crossing() const { return latest_crossing_; }
  /// Messages `rank` has sent and their bytes by route (when links are counted), counted when posted.
  struct SenderTally {
    std::uint64_t messages = 0;
    std::map<std::uint64_t, double> route_bytes;  ///< route key (see match) -> bytes
  };
  const SenderTally& sent_by(int rank) const { return senders_[static_cast<std::size_t>(rank)]; }
  /// What `rank` would have sent in skipped iterations: counted in messages() and on the links of each
  /// route, as if those messages had been sent.
  void add_skipped(std::uint64_t messages, const std::map<std::uint64_t, double>& route_bytes);

private:
  struct Queues {
    RequestQueue posted_recvs;     ///< receives waiting for a send
    RequestQueue unexpected_sends; ///< sends waiting for a receive
  };
  void match(const RequestPtr& send, const RequestPtr& recv);
  /// The links (indices into link_total_) of the route with `key` (see match), looked up once.
  const std::vector<std::uint32_t>& route(std::uint64_t key, sg4::Host* from, sg4::Host* to);
  /// The transfer's data has arrived (at `at_s`, its comm's finish time): charges the copy overhead to both
  /// sides' CPU timelines, sets their ready times and `done`.
  void arrived(Transfer& t, double at_s);
  /// The time `request`'s side of its finished transfer is ready (its copy overhead paid).
  static double ready_time(const Request& request, const Transfer& t);
  /// Mailbox path: when the pool is empty, creates a mailbox into it and returns true. That is a simcall,
  /// so other actors may run meanwhile: the caller must read the queues again.
  bool stock_mailbox();
  /// A mailbox from the pool (not empty: see stock_mailbox), and giving one back once both halves are in.
  sg4::Mailbox* take_mailbox();
  void give_back(sg4::Mailbox* box) { free_mailboxes_.push_back(box); }
  /// Mailbox path: remembers a half the calling actor posted, until it waits for it; reaps finished
  /// eager sends now and then, so that the actor's list of activities in SimGrid stays short.
  void track(const RequestPtr& request);
  /// The reaping itself, for the actor whose state is actors_[index].
  void reap(std::size_t index);
  static constexpr std::size_t kMinSweep = 8;
  /// Waits for `request`'s own half in the calling actor (blocks until the transfer is over).
  void wait_half(Request& request);
  /// Per-actor state, by pid.
  struct ActorState {
    sg4::SemaphorePtr wakeup;             ///< count 0: acquire blocks until a match
    std::vector<RequestPtr> unwaited;     ///< mailbox halves posted and not waited for yet
    std::size_t sweep_at = kMinSweep;     ///< size of `unwaited` that triggers the next reaping
  };
  ActorState& own_state(int& pid);
  /// The semaphore of the calling actor (created on first use): each blocked actor sleeps on its own,
  /// so that a rank and the actors of its nonblocking collectives never take each other's wake-ups.
  sg4::Semaphore* own_semaphore(int& pid);
  /// A blocking probe in progress at one rank.
  struct ProbeWaiter {
    bool active = false;
    int from = kAnySource;
    int tag = kAnyTag;
    int context = 0;
    int pid = -1;
  };

  std::vector<sg4::Host*> hosts_;
  std::vector<Queues> queues_;
  std::vector<ActorState> actors_;          ///< by actor pid
  std::vector<ProbeWaiter> probes_;         ///< by rank
  std::vector<sg4::Host*> endpoint_override_;  ///< per rank, see set_endpoint_override
  Options options_;
  std::uint64_t messages_ = 0;
  std::uint64_t next_message_ = 1;
  bool tracking_ = false;
  std::vector<std::int64_t> iteration_;   ///< per rank, while tracking
  std::vector<SenderTally> senders_;      ///< per rank, while tracking
  std::int64_t latest_crossing_ = -2;
  bool account_links_ = false;
  bool aborting_ = false;
  std::vector<platform::OverheadPoint> copy_overhead_;
  std::vector<double> cpu_busy_until_s_;  ///< per world rank: the end of the copy work it owes
  /// Route cache keyed by (source rank << 32 | destination rank), as indices into link_total_.
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> routes_;
  std::unordered_map<sg4::Link*, std::uint32_t> link_index_;
  std::vector<sg4::Link*> links_;
  std::vector<double> link_total_;
  std::vector<sg4::Mailbox*> free_mailboxes_;
  std::uint64_t mailboxes_created_ = 0;
  int payload_ = 0;          ///< S4U refuses a null payload: every put carries a pointer to this
  void* payload_sink_ = nullptr;  ///< where every get stores that pointer (nobody reads it)
};

}  // namespace gridcast::emulator
