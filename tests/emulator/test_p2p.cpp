// Point-to-point semantics against hand-computed times. Each TEST_CASE runs in its own process (CTest
// runs them one by one) with a fresh SimGrid engine on a tiny platform built in C++. The CM02 network
// model is used because its time for one flow is exactly latency + bytes / bandwidth.
#include "gridcast/emulator/p2p.hpp"

#include "../support.hpp"

#include <catch2/catch.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <memory>
#include <vector>

namespace sg4 = simgrid::s4u;
using namespace gridcast::emulator;

namespace {

constexpr double kLatency = 1e-5;    // seconds
constexpr double kBandwidth = 1e9;   // bytes per second
constexpr double kStarSpeed = 1e9;   // flops per second

/// A star: every host has a private link (kLatency, kBandwidth) to a central point; a route between two
/// hosts crosses both private links, so its latency is 2 * kLatency and a lone flow gets kBandwidth.
/// Built as a full zone with explicit routes so the numbers are obvious.
struct Star {
  std::unique_ptr<sg4::Engine> engine;
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Link*> links;

  explicit Star(int n)
  {
    static gridcast::test::EngineArgs args;
    engine = std::make_unique<sg4::Engine>(&args.argc, args.argv.data());
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");  // no reverse-path ACK traffic: exact figures
    auto* zone = sg4::create_full_zone("star");
    for (int i = 0; i < n; ++i) {
      hosts.push_back(zone->create_host("h" + std::to_string(i), kStarSpeed));
      links.push_back(zone->create_link("l" + std::to_string(i), kBandwidth)->set_latency(kLatency));
    }
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        zone->add_route(hosts[i]->get_netpoint(), hosts[j]->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(links[i]), sg4::LinkInRoute(links[j])}, true);
    zone->seal();
  }
};

/// Time of one lone message between two hosts of the star.
double star_transfer(double bytes) { return 2 * kLatency + bytes / kBandwidth; }

/// The board's two ways of moving bytes (p2p.hpp): host-to-host comms, or mailbox comms between the
/// actors. Every scenario below runs with both and must give the same times.
MessageBoard::Options board_options(std::uint64_t eager_threshold, bool mailboxes)
{
  MessageBoard::Options o;
  o.eager_threshold_bytes = eager_threshold;
  o.use_mailboxes = mailboxes;
  return o;
}

}  // namespace

// SimGrid allows one engine per process, so each size is its own TEST_CASE (CTest runs each alone).
static void ping_pong(double bytes, bool mailboxes)
{
  Star star(2);
  MessageBoard board(star.hosts, board_options(65536, mailboxes));
  double end0 = -1;
  double end1 = -1;
  sg4::Actor::create("r0", star.hosts[0], [&] {
    board.wait(board.post_send(0, 1, static_cast<std::uint64_t>(bytes), 0, 0, SendMode::Standard));
    board.wait(board.post_recv(0, 1, static_cast<std::uint64_t>(bytes), 0, 0));
    end0 = sg4::Engine::get_clock();
    board.drain();
  });
  sg4::Actor::create("r1", star.hosts[1], [&] {
    board.wait(board.post_recv(1, 0, static_cast<std::uint64_t>(bytes), 0, 0));
    board.wait(board.post_send(1, 0, static_cast<std::uint64_t>(bytes), 0, 0, SendMode::Standard));
    end1 = sg4::Engine::get_clock();
    board.drain();
  });
  star.engine->run();
  REQUIRE(end0 == Approx(2 * star_transfer(bytes)).epsilon(1e-9));
  // Rank 1's second send is eager for small messages (it leaves at once) and rendezvous for large ones.
  if (bytes < 65536)
    REQUIRE(end1 == Approx(star_transfer(bytes)).epsilon(1e-9));
  else
    REQUIRE(end1 == Approx(2 * star_transfer(bytes)).epsilon(1e-9));
  REQUIRE(board.messages() == 2);
}

TEST_CASE("ping-pong of an eager message takes two latencies plus two transfers", "[p2p]") { ping_pong(8.0, false); }
TEST_CASE("ping-pong of a rendezvous message takes two latencies plus two transfers", "[p2p]") { ping_pong(1e6, false); }
TEST_CASE("mailboxes: ping-pong of an eager message takes two latencies plus two transfers", "[p2p]")
{
  ping_pong(8.0, true);
}
TEST_CASE("mailboxes: ping-pong of a rendezvous message takes two latencies plus two transfers", "[p2p]")
{
  ping_pong(1e6, true);
}

static void shared_link(bool mailboxes)
{
  // h0 -> h2 and h1 -> h2 at the same time: both cross l2, so each gets half of its bandwidth.
  Star star(3);
  MessageBoard board(star.hosts, board_options(65536, mailboxes));
  const double bytes = 1e6;
  std::vector<double> done(3, -1);
  for (int s = 0; s < 2; ++s)
    sg4::Actor::create("s" + std::to_string(s), star.hosts[s], [&, s] {
      board.wait(board.post_send(s, 2, static_cast<std::uint64_t>(bytes), 0, 0, SendMode::Standard));
      done[s] = sg4::Engine::get_clock();
      board.drain();
    });
  sg4::Actor::create("r", star.hosts[2], [&] {
    auto a = board.post_recv(2, 0, static_cast<std::uint64_t>(bytes), 0, 0);
    auto b = board.post_recv(2, 1, static_cast<std::uint64_t>(bytes), 0, 0);
    board.wait(a);
    board.wait(b);
    done[2] = sg4::Engine::get_clock();
  });
  star.engine->run();
  const double expected = 2 * kLatency + 2 * bytes / kBandwidth;
  REQUIRE(done[0] == Approx(expected).epsilon(1e-9));
  REQUIRE(done[1] == Approx(expected).epsilon(1e-9));
  REQUIRE(done[2] == Approx(expected).epsilon(1e-9));
}

TEST_CASE("two flows into one host share its link", "[p2p]") { shared_link(false); }
TEST_CASE("mailboxes: two flows into one host share its link", "[p2p]") { shared_link(true); }

// The receiver computes 1 ms before posting its receive; the sender sends, then computes 2 ms.
static void late_receiver(std::uint64_t bytes, bool mailboxes = false)
{
  Star star(2);
  const std::uint64_t threshold = 65536;
  MessageBoard board(star.hosts, board_options(threshold, mailboxes));
  const double late = 1e-3;
  const double work = 2e-3;
  double sender_end = -1;
  double receiver_end = -1;
  sg4::Actor::create("sender", star.hosts[0], [&] {
    board.wait(board.post_send(0, 1, bytes, 5, 0, SendMode::Standard));
    sg4::this_actor::execute(work * kStarSpeed);
    sender_end = sg4::Engine::get_clock();
    board.drain();
  });
  sg4::Actor::create("receiver", star.hosts[1], [&] {
    sg4::this_actor::execute(late * kStarSpeed);
    board.wait(board.post_recv(1, 0, bytes, 5, 0));
    receiver_end = sg4::Engine::get_clock();
  });
  star.engine->run();
  // Either way the bytes move only once the receive is posted (SMPI's default behaviour).
  REQUIRE(receiver_end == Approx(late + star_transfer(bytes)).epsilon(1e-9));
  if (bytes < threshold)
    REQUIRE(sender_end == Approx(work).epsilon(1e-9));
  else
    REQUIRE(sender_end == Approx(late + star_transfer(bytes) + work).epsilon(1e-9));
}

TEST_CASE("eager sends leave at once", "[p2p]") { late_receiver(1024); }
TEST_CASE("rendezvous sends wait for the receiver", "[p2p]") { late_receiver(1 << 20); }
TEST_CASE("the eager threshold is exclusive: 65535 bytes are eager, 65536 rendezvous", "[p2p]")
{
  late_receiver(65535);
}
TEST_CASE("a message of exactly the eager threshold uses rendezvous", "[p2p]") { late_receiver(65536); }
TEST_CASE("mailboxes: eager sends leave at once", "[p2p]") { late_receiver(1024, true); }
TEST_CASE("mailboxes: rendezvous sends wait for the receiver", "[p2p]") { late_receiver(1 << 20, true); }

TEST_CASE("mailboxes: an eager send outlives its sender, which drains it before it ends", "[p2p]")
{
  // The sender is done at once; its message is received 1 ms later. Without drain() SimGrid would
  // cancel the put when the sender's actor ends, and the receiver would wait forever.
  Star star(2);
  MessageBoard board(star.hosts, board_options(65536, true));
  double sender_done = -1;
  double received = -1;
  sg4::Actor::create("sender", star.hosts[0], [&] {
    board.wait(board.post_send(0, 1, 1024, 0, 0, SendMode::Standard));
    sender_done = sg4::Engine::get_clock();
    board.drain();
  });
  sg4::Actor::create("receiver", star.hosts[1], [&] {
    sg4::this_actor::execute(1e-3 * kStarSpeed);
    board.wait(board.post_recv(1, 0, 1024, 0, 0));
    received = sg4::Engine::get_clock();
  });
  star.engine->run();
  REQUIRE(sender_done == 0.0);
  REQUIRE(received == Approx(1e-3 + star_transfer(1024)).epsilon(1e-9));
}

TEST_CASE("mailboxes: many eager sends are reaped as they finish, and each arrives", "[p2p]")
{
  // 100 eager messages, far more than the reaping threshold: every one must arrive, in order.
  Star star(2);
  MessageBoard board(star.hosts, board_options(65536, true));
  const int n = 100;
  std::vector<std::uint64_t> got;
  sg4::Actor::create("sender", star.hosts[0], [&] {
    for (int i = 0; i < n; ++i) {
      board.wait(board.post_send(0, 1, 1000, 3, 0, SendMode::Standard));
      sg4::this_actor::execute(1e-5 * kStarSpeed);
    }
    board.drain();
  });
  sg4::Actor::create("receiver", star.hosts[1], [&] {
    for (int i = 0; i < n; ++i) {
      auto r = board.post_recv(1, 0, 1000, 3, 0);
      board.wait(r);
      got.push_back(r->message);
    }
  });
  star.engine->run();
  REQUIRE(got.size() == static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    REQUIRE(got[static_cast<std::size_t>(i)] == static_cast<std::uint64_t>(i + 1));
}

static void synchronous_send(bool mailboxes)
{
  Star star(2);
  MessageBoard board(star.hosts, board_options(65536, mailboxes));
  double sender_end = -1;
  sg4::Actor::create("sender", star.hosts[0], [&] {
    board.wait(board.post_send(0, 1, 8, 0, 0, SendMode::Synchronous));
    sender_end = sg4::Engine::get_clock();
  });
  sg4::Actor::create("receiver", star.hosts[1], [&] {
    sg4::this_actor::execute(1e-3 * kStarSpeed);
    board.wait(board.post_recv(1, 0, 8, 0, 0));
  });
  star.engine->run();
  REQUIRE(sender_end == Approx(1e-3 + star_transfer(8)).epsilon(1e-9));
}

TEST_CASE("synchronous sends wait even when small", "[p2p]") { synchronous_send(false); }
TEST_CASE("mailboxes: synchronous sends wait even when small", "[p2p]") { synchronous_send(true); }

static void mpi_matching(bool mailboxes)
{
  Star star(3);
  MessageBoard board(star.hosts, board_options(65536, mailboxes));
  std::vector<int> got_from;
  sg4::Actor::create("r0", star.hosts[0], [&] {
    // Two messages with the same (source, tag): they must arrive in the order sent.
    board.wait(board.post_send(0, 2, 100, 7, 0, SendMode::Standard));
    board.wait(board.post_send(0, 2, 200, 7, 0, SendMode::Standard));
    // Same tag on another context: must not match an application receive.
    board.wait(board.post_send(0, 2, 300, 7, 1, SendMode::Standard));
    board.drain();
  });
  sg4::Actor::create("r1", star.hosts[1], [&] {
    sg4::this_actor::execute(1e-3 * kStarSpeed);  // arrives later than rank 0's messages
    board.wait(board.post_send(1, 2, 400, 9, 0, SendMode::Standard));
    board.drain();
  });
  sg4::Actor::create("r2", star.hosts[2], [&] {
    // A receive for tag 9 from anyone is posted first: only rank 1's message may satisfy it.
    auto tag9 = board.post_recv(2, kAnySource, 400, 9, 0);
    for (int i = 0; i < 2; ++i) {
      auto r = board.post_recv(2, kAnySource, 0, kAnyTag, 0);
      board.wait(r);
      got_from.push_back(r->matched_source);
    }
    board.wait(tag9);
    got_from.push_back(tag9->matched_source);
    auto ctx1 = board.post_recv(2, 0, 300, kAnyTag, 1);
    board.wait(ctx1);
    got_from.push_back(ctx1->matched_source);
  });
  star.engine->run();
  REQUIRE(got_from == std::vector<int>{0, 0, 1, 0});
  for (int r = 0; r < 3; ++r)
    REQUIRE(board.pending_at(r).empty());
}

TEST_CASE("matching follows MPI: source, tag, context, wildcards and non-overtaking", "[p2p]") { mpi_matching(false); }
TEST_CASE("mailboxes: matching follows MPI: source, tag, context, wildcards and non-overtaking", "[p2p]")
{
  mpi_matching(true);
}

static void wire_order(bool mailboxes)
{
  // Non-overtaking seen through sizes: rank 1 receives any-tag twice and must see 100 then 200 bytes.
  Star star(2);
  MessageBoard board(star.hosts, board_options(65536, mailboxes));
  std::vector<int> tags;
  sg4::Actor::create("r0", star.hosts[0], [&] {
    board.wait(board.post_send(0, 1, 100, 1, 0, SendMode::Standard));
    board.wait(board.post_send(0, 1, 200, 2, 0, SendMode::Standard));
    board.drain();
  });
  sg4::Actor::create("r1", star.hosts[1], [&] {
    sg4::this_actor::execute(1e-3 * kStarSpeed);
    for (int i = 0; i < 2; ++i) {
      auto r = board.post_recv(1, 0, 0, kAnyTag, 0);
      board.wait(r);
      tags.push_back(static_cast<int>(r->message));
    }
  });
  star.engine->run();
  REQUIRE(tags == std::vector<int>{1, 2});
}

TEST_CASE("message order on the wire: the first matched send is the first one posted", "[p2p]") { wire_order(false); }
TEST_CASE("mailboxes: message order on the wire: the first matched send is the first one posted", "[p2p]")
{
  wire_order(true);
}

static void test_completes(bool mailboxes)
{
  Star star(2);
  MessageBoard board(star.hosts, board_options(65536, mailboxes));
  std::vector<bool> results;
  sg4::Actor::create("r0", star.hosts[0], [&] {
    sg4::this_actor::execute(1e-3 * kStarSpeed);
    board.wait(board.post_send(0, 1, 1 << 20, 0, 0, SendMode::Standard));
  });
  sg4::Actor::create("r1", star.hosts[1], [&] {
    auto r = board.post_recv(1, 0, 1 << 20, 0, 0);
    results.push_back(board.test(r));  // nothing sent yet
    sg4::this_actor::execute(2e-3 * kStarSpeed);
    results.push_back(board.test(r));  // 1 ms + star_transfer(1 MiB) ~ 2.07 ms: still moving at 2 ms
    sg4::this_actor::execute(1e-3 * kStarSpeed);
    results.push_back(board.test(r));  // done by 3 ms
  });
  star.engine->run();
  REQUIRE(results == std::vector<bool>{false, false, true});
}

TEST_CASE("test() completes only finished transfers", "[p2p]") { test_completes(false); }
TEST_CASE("mailboxes: test() completes only finished transfers", "[p2p]") { test_completes(true); }
