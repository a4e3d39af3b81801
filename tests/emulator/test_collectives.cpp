// Collective algorithms against hand-computed times, and a sweep checking that every algorithm pairs
// its sends and receives for every communicator size, root, size and protocol.
//
// Platform: a full mesh where every ORDERED pair of hosts has its own one-way link (latency kL,
// bandwidth kB). With the CM02 model and no cross traffic a lone message of s bytes takes exactly
//     T(s) = kL + s / kB,
// and two messages share a link only if they go between the same two hosts in the same direction at
// the same time, which none of these algorithms does. An algorithm's time is then the length of its
// critical path in messages, which is what the comments derive. Most timings use the all-rendezvous
// protocol (eager threshold 0: a send returns when its transfer is over), the protocol of the textbook
// "rounds" analysis in Thakur, Rabenseifner & Gropp 2005; one test shows what eager sends change.
//
// SimGrid 3.32 keeps its clock and its network model for the whole process, across Engine objects (a
// second set_config("network/model:...") aborts). So each TEST_CASE builds ONE engine and runs its
// scenarios one after the other -- Engine::run returns when a scenario's actors are done -- and
// measures every duration from the clock at the scenario's start.
#include "gridcast/emulator/collectives.hpp"

#include "../support.hpp"

#include <catch2/catch.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;
using namespace gridcast::emulator;
using K = CollectiveKind;

namespace {

constexpr double kL = 1e-4;      // link latency, seconds
constexpr double kB = 1e8;       // link bandwidth, bytes per second
constexpr double kSpeed = 1e9;   // host speed, flops per second
constexpr double kFlops = 2e6;   // reduction work per rank: kFlops / kSpeed = 2 ms
constexpr std::uint64_t kRendezvousAll = 0;                                     // every send blocks
constexpr std::uint64_t kEagerAll = std::numeric_limits<std::uint64_t>::max();  // no send blocks
constexpr std::uint64_t kDefaultEager = 65536;

/// One lone message of `bytes`.
double T(double bytes)
{
  return kL + bytes / kB;
}
/// An empty MPI message travels as 1 byte (SimGrid 3.32 serializes zero-size comms on a shared link).
constexpr double kEmptyBytes = 1;
/// Transfer part only.
double X(double bytes)
{
  return bytes / kB;
}
int ceil_log2(int n)
{
  int k = 0;
  while ((1 << k) < n)
    ++k;
  return k;
}
int floor_log2(int n)
{
  int k = 0;
  while ((2 << k) <= n)
    ++k;
  return k;
}
bool is_pow2(int n)
{
  return (n & (n - 1)) == 0;
}

/// CM02 without cross traffic: one flow takes latency + size / bandwidth. The model can be chosen only
/// before the first platform of the process exists, so set it only when it is not already the one.
void use_exact_network_model()
{
  if (simgrid::config::get_value<std::string>("network/model") != "CM02")
    sg4::Engine::set_config("network/model:CM02");
  if (simgrid::config::get_value<bool>("network/crosstraffic"))
    sg4::Engine::set_config("network/crosstraffic:0");
}

/// The full mesh of one-way links described at the top of the file.
///
///     h0 --l0-1--> h1        every ordered pair (i, j) has its own link li-j,
///     h0 <--l1-0-- h1        latency kL, bandwidth kB; the route i -> j is that link alone
class Mesh {
public:
  explicit Mesh(int n)
  {
    static gridcast::test::EngineArgs args;
    engine_ = std::make_unique<sg4::Engine>(&args.argc, args.argv.data());
    use_exact_network_model();
    auto* zone = sg4::create_full_zone("mesh");
    for (int i = 0; i < n; ++i)
      hosts_.push_back(zone->create_host("h" + std::to_string(i), kSpeed));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j) {
          sg4::Link* link = zone->create_link("l" + std::to_string(i) + "-" + std::to_string(j), kB)->set_latency(kL);
          zone->add_route(hosts_[i]->get_netpoint(), hosts_[j]->get_netpoint(), nullptr, nullptr,
                          {sg4::LinkInRoute(link)}, false);
        }
    zone->seal();
  }
  sg4::Engine& engine() { return *engine_; }
  const std::vector<sg4::Host*>& hosts() const { return hosts_; }

private:
  std::unique_ptr<sg4::Engine> engine_;
  std::vector<sg4::Host*> hosts_;
};

struct Outcome {
  double duration = 0;             ///< from the common start to the last rank's end
  std::vector<double> ends;        ///< per communicator rank, from the start
  std::vector<double> partner_wait;
  int finished = 0;                ///< ranks whose algorithm returned
  std::size_t pending = 0;         ///< requests left unmatched on the board, over all world ranks
  std::string errors;              ///< exceptions thrown by the algorithm
};

std::vector<int> first_ranks(int n)
{
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

/// Runs `algo` once on the communicator `world_ranks` (a fresh board over all hosts of the mesh). Rank r
/// enters after `delay(r)` seconds with the arguments `args_of(r)`; reduction work runs on its host.
Outcome run_collective(Mesh& mesh, const CollectiveAlgorithm& algo, const std::vector<int>& world_ranks,
                       const std::function<CollectiveArgs(int)>& args_of, std::uint64_t eager_threshold,
                       const std::function<double(int)>& delay = {})
{
  const int n = static_cast<int>(world_ranks.size());
  MessageBoard board(mesh.hosts(), MessageBoard::Options{eager_threshold});
  Communicator comm;
  comm.id = 3;
  comm.world_ranks = world_ranks;
  comm.p2p_context = 6;
  comm.coll_context = 7;
  Outcome out;
  out.ends.assign(static_cast<std::size_t>(n), -1);
  out.partner_wait.assign(static_cast<std::size_t>(n), 0);
  const double start = sg4::Engine::get_clock();
  for (int r = 0; r < n; ++r) {
    sg4::Actor::create("rank" + std::to_string(r), mesh.hosts()[static_cast<std::size_t>(world_ranks[r])], [&, r] {
      if (delay)
        sg4::this_actor::sleep_for(delay(r));
      CollectiveContext ctx(board, comm, comm.world_ranks[static_cast<std::size_t>(r)],
                            [](double flops) { sg4::this_actor::execute(flops); });
      try {
        algo(ctx, args_of(r));
      } catch (const std::exception& e) {
        out.errors += "rank " + std::to_string(r) + ": " + e.what() + "\n";
        return;
      }
      out.ends[static_cast<std::size_t>(r)] = sg4::Engine::get_clock() - start;
      out.partner_wait[static_cast<std::size_t>(r)] = ctx.partner_wait_s();
      ++out.finished;
    });
  }
  mesh.engine().run();
  for (int w = 0; w < board.rank_count(); ++w)
    out.pending += board.pending_at(w).size();
  out.duration = n == 0 ? 0 : *std::max_element(out.ends.begin(), out.ends.end());
  return out;
}

const CollectiveRegistry& registry()
{
  static const CollectiveRegistry r;
  return r;
}

/// Simulated time of `kind`/`name` on communicator ranks 0..n-1 (hosts 0..n-1), every rank with `args`.
double time_of(Mesh& mesh, K kind, const std::string& name, int n, const CollectiveArgs& args,
               std::uint64_t eager_threshold = kRendezvousAll)
{
  const CollectiveAlgorithm* algo = registry().find(kind, name);
  REQUIRE(algo != nullptr);
  Outcome out = run_collective(mesh, *algo, first_ranks(n), [&](int) { return args; }, eager_threshold);
  INFO(out.errors);
  REQUIRE(out.finished == n);
  REQUIRE(out.pending == 0);
  return out.duration;
}

CollectiveArgs sized(std::uint64_t bytes, int root = 0, double flops = 0)
{
  CollectiveArgs a;
  a.bytes = bytes;
  a.recv_bytes = bytes;
  a.root = root;
  a.flops = flops;
  return a;
}

const std::vector<int> kSizes = {1, 2, 3, 4, 5, 8};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Plumbing

TEST_CASE("Communicator::rank_of maps world ranks to communicator ranks", "[collectives]")
{
  Communicator world;
  world.world_ranks = {0, 1, 2, 3};
  CHECK(world.rank_of(2) == 2);
  CHECK(world.rank_of(4) == -1);
  CHECK(world.rank_of(-1) == -1);
  Communicator odd;
  odd.world_ranks = {5, 3, 1};
  CHECK(odd.rank_of(1) == 2);
  CHECK(odd.rank_of(5) == 0);
  CHECK(odd.rank_of(0) == -1);
  Communicator shifted;  // identity at index 1 must not fool the fast path for other ranks
  shifted.world_ranks = {2, 1, 0};
  CHECK(shifted.rank_of(1) == 1);
  CHECK(shifted.rank_of(0) == 2);
  Communicator sorted;  // a split keeping world order: found by bisection
  sorted.world_ranks = {3, 4, 8, 10, 11};
  CHECK(sorted.rank_of(8) == 2);
  CHECK(sorted.rank_of(11) == 4);
  CHECK(sorted.rank_of(9) == -1);
  Communicator scrambled;  // bisection misses, the scan finds
  scrambled.world_ranks = {9, 2, 7, 0, 5};
  for (int i = 0; i < scrambled.size(); ++i)
    CHECK(scrambled.rank_of(scrambled.world_ranks[static_cast<std::size_t>(i)]) == i);
  CHECK(scrambled.rank_of(4) == -1);
}

TEST_CASE("every collective kind has a name and its algorithms", "[collectives]")
{
  CHECK(collective_name(K::Barrier) == "barrier");
  CHECK(collective_name(K::ReduceScatter) == "reducescatter");
  CHECK(collective_name(K::Exscan) == "exscan");
  using Names = std::vector<std::string>;
  CHECK(registry().names(K::Barrier) == Names{"binomial", "dissemination", "linear", "nbc"});
  CHECK(registry().names(K::Bcast) == Names{"binomial", "linear", "pipeline", "scatter_allgather"});
  CHECK(registry().names(K::Reduce) == Names{"binomial", "linear", "rabenseifner"});
  CHECK(registry().names(K::Allreduce) ==
        Names{"linear_reduce_bcast", "nbc", "rabenseifner", "recursive_doubling", "reduce_bcast", "ring"});
  CHECK(registry().names(K::Allgather) == Names{"bruck", "linear", "recursive_doubling", "ring"});
  CHECK(registry().names(K::Allgatherv) == Names{"linear", "ring"});
  CHECK(registry().names(K::Alltoall) == Names{"basic_linear", "bruck", "linear", "pairwise"});
  CHECK(registry().names(K::Alltoallv) == Names{"basic_linear", "linear", "pairwise"});
  CHECK(registry().names(K::Gather) == Names{"binomial", "linear"});
  CHECK(registry().names(K::Gatherv) == Names{"linear"});
  CHECK(registry().names(K::Scatter) == Names{"binomial", "linear"});
  CHECK(registry().names(K::Scatterv) == Names{"linear"});
  CHECK(registry().names(K::ReduceScatter) ==
        Names{"linear_reduce_scatterv", "nbc", "pairwise", "recursive_halving", "reduce_scatterv"});
  CHECK(registry().names(K::Scan) == Names{"direct", "linear", "recursive_doubling"});
  CHECK(registry().names(K::Exscan) == Names{"direct", "linear", "recursive_doubling"});
  CHECK(registry().find(K::Bcast, "ring") == nullptr);
}

TEST_CASE("select follows MPICH's size and communicator-size rules", "[collectives]")
{
  const CollectiveRegistry& reg = registry();
  auto pick = [&](K kind, std::uint64_t bytes, int n) { return reg.select(kind, sized(bytes), n); };

  CHECK(pick(K::Barrier, 0, 7) == "dissemination");
  // Bcast: binomial below 12 KiB or below 8 ranks, else scatter + allgather.
  CHECK(pick(K::Bcast, 12287, 64) == "binomial");
  CHECK(pick(K::Bcast, 12288, 7) == "binomial");
  CHECK(pick(K::Bcast, 12288, 8) == "scatter_allgather");
  // Reduce: Rabenseifner above 2 KiB when there is at least one byte per rank of the pof2 group.
  CHECK(pick(K::Reduce, 2048, 4) == "binomial");
  CHECK(pick(K::Reduce, 2049, 4) == "rabenseifner");
  CHECK(pick(K::Reduce, 4095, 5000) == "binomial");  // pof2 = 4096 ranks, fewer bytes
  CHECK(pick(K::Reduce, 4096, 5000) == "rabenseifner");
  // Allreduce: recursive doubling up to 2 KiB (or below one byte per pof2 rank), else Rabenseifner.
  CHECK(pick(K::Allreduce, 2048, 16) == "recursive_doubling");
  CHECK(pick(K::Allreduce, 2049, 16) == "rabenseifner");
  CHECK(pick(K::Allreduce, 3000, 4096) == "recursive_doubling");
  CHECK(pick(K::Allreduce, 1 << 24, 3) == "rabenseifner");
  // Allgather on the total gathered: pow2 and < 512 KiB -> recursive doubling; < 80 KiB -> Bruck; ring.
  CHECK(pick(K::Allgather, 65535, 8) == "recursive_doubling");  // total just below 512 KiB
  CHECK(pick(K::Allgather, 65536, 8) == "ring");
  CHECK(pick(K::Allgather, 8191, 10) == "bruck");  // total 81910 < 81920
  CHECK(pick(K::Allgather, 8192, 10) == "ring");
  // Alltoall per destination: Bruck for <= 256 B on >= 8 ranks, scattered up to 32 KiB, then pairwise.
  CHECK(pick(K::Alltoall, 256, 8) == "bruck");
  CHECK(pick(K::Alltoall, 256, 7) == "linear");
  CHECK(pick(K::Alltoall, 257, 8) == "linear");
  CHECK(pick(K::Alltoall, 32768, 8) == "linear");
  CHECK(pick(K::Alltoall, 32769, 8) == "pairwise");
  // Reduce-scatter on the total: recursive halving below 512 KiB, pairwise above.
  CollectiveArgs rs;
  rs.recv_counts = {100000, 100000, 100000, 100000, 100000};
  CHECK(reg.select(K::ReduceScatter, rs, 5) == "recursive_halving");
  rs.recv_counts.push_back(100000);
  CHECK(reg.select(K::ReduceScatter, rs, 6) == "pairwise");
  // The rest do not depend on sizes.
  CHECK(pick(K::Alltoallv, 1, 4) == "linear");
  CHECK(pick(K::Allgatherv, 1, 4) == "ring");
  CHECK(pick(K::Gather, 1 << 20, 4) == "binomial");
  CHECK(pick(K::Scatter, 1 << 20, 4) == "binomial");
  CHECK(pick(K::Scan, 1, 4) == "recursive_doubling");
  CHECK(pick(K::Exscan, 1, 4) == "recursive_doubling");

  // Whatever it picks exists, for every kind, size and communicator size.
  for (int k = 0; k <= static_cast<int>(K::Exscan); ++k)
    for (std::uint64_t bytes : {0ULL, 1ULL, 3000ULL, 40000ULL, 1ULL << 20})
      for (int n : {1, 2, 3, 8, 9, 1000}) {
        auto kind = static_cast<K>(k);
        INFO(collective_name(kind) << " " << bytes << " B on " << n);
        CHECK(reg.find(kind, reg.select(kind, sized(bytes), n)) != nullptr);
      }
}

TEST_CASE("select with the smpi selector follows SMPI 3.32's default selector", "[collectives]")
{
  const CollectiveRegistry& reg = registry();
  auto pick = [&](K kind, std::uint64_t bytes, int n) {
    return reg.select(kind, sized(bytes), n, CollectiveSelector::Smpi);
  };
  // smpi_default_selector.cpp: flat algorithms and a binomial bcast, whatever the size.
  for (int n : {2, 7, 64, 256, 5000})
    for (std::uint64_t bytes : {8ULL, 100000ULL, 1ULL << 24}) {
      INFO(bytes << " B on " << n);
      CHECK(pick(K::Barrier, 0, n) == "linear");
      CHECK(pick(K::Bcast, bytes, n) == "binomial");
      CHECK(pick(K::Reduce, bytes, n) == "linear");
      CHECK(pick(K::Allreduce, bytes, n) == "linear_reduce_bcast");
      CHECK(pick(K::Allgather, bytes, n) == "linear");
      CHECK(pick(K::Allgatherv, bytes, n) == "linear");
      CHECK(pick(K::Alltoallv, bytes, n) == "basic_linear");
      CHECK(pick(K::Gather, bytes, n) == "linear");
      CHECK(pick(K::Scatter, bytes, n) == "linear");
      CHECK(pick(K::Gatherv, bytes, n) == "linear");
      CHECK(pick(K::Scatterv, bytes, n) == "linear");
      CHECK(pick(K::Scan, bytes, n) == "direct");
      CHECK(pick(K::Exscan, bytes, n) == "direct");
    }
  // Alltoall: Open MPI 4.1's table on (n, bytes per destination). At 64 ranks 512 B is Bruck and 2500 B
  // basic linear (both checked against smpirun 3.32: same simulated time as forcing smpi/alltoall).
  CHECK(pick(K::Alltoall, 512, 64) == "bruck");
  CHECK(pick(K::Alltoall, 1023, 64) == "bruck");
  CHECK(pick(K::Alltoall, 1024, 64) == "basic_linear");
  CHECK(pick(K::Alltoall, 2500, 64) == "basic_linear");
  CHECK(pick(K::Alltoall, 262144, 64) == "pairwise");
  CHECK(pick(K::Alltoall, 511, 63) == "bruck");
  CHECK(pick(K::Alltoall, 512, 63) == "basic_linear");
  CHECK(pick(K::Alltoall, 1 << 20, 63) == "basic_linear");
  CHECK(pick(K::Alltoall, 3, 16) == "basic_linear");
  CHECK(pick(K::Alltoall, 4, 16) == "bruck");
  CHECK(pick(K::Alltoall, 1 << 20, 12) == "basic_linear");
  CHECK(pick(K::Alltoall, 1, 2) == "pairwise");
  CHECK(pick(K::Alltoall, 2, 2) == "basic_linear");
  CHECK(pick(K::Alltoall, 300000, 4) == "basic_linear");
  CHECK(pick(K::Alltoall, 600000, 4) == "pairwise");
  CHECK(pick(K::Alltoall, 2047, 5000) == "bruck");
  CHECK(pick(K::Alltoall, 2048, 5000) == "basic_linear");
  // Reduce-scatter: equal blocks -> flat reduce + flat scatterv; unequal ones -> MPICH's rule.
  CollectiveArgs rs;
  rs.recv_counts = {100000, 100000, 100000, 100000, 100000, 100000};
  CHECK(reg.select(K::ReduceScatter, rs, 6, CollectiveSelector::Smpi) == "linear_reduce_scatterv");
  rs.recv_counts.back() = 1;
  CHECK(reg.select(K::ReduceScatter, rs, 6, CollectiveSelector::Smpi) == "recursive_halving");
  // The MPICH selector is the three-argument select.
  CHECK(reg.select(K::Allreduce, sized(8), 256, CollectiveSelector::Mpich) == "recursive_doubling");

  for (int k = 0; k <= static_cast<int>(K::Exscan); ++k)
    for (std::uint64_t bytes : {0ULL, 1ULL, 3000ULL, 40000ULL, 1ULL << 20})
      for (int n : {1, 2, 3, 8, 9, 1000}) {
        auto kind = static_cast<K>(k);
        INFO(collective_name(kind) << " " << bytes << " B on " << n);
        CHECK(reg.find(kind, reg.select(kind, sized(bytes), n, CollectiveSelector::Smpi)) != nullptr);
      }
}

TEST_CASE("a rank outside the communicator cannot build a context", "[collectives]")
{
  Communicator comm;
  comm.world_ranks = {0, 2};
  MessageBoard board({}, MessageBoard::Options{});
  CHECK_THROWS_AS(CollectiveContext(board, comm, 1, {}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------------
// Hand-computed times. L = kL, S' = S / kB; "round" = one message on the critical path.

TEST_CASE("barrier times", "[collectives]")
{
  Mesh mesh(8);
  for (int n : kSizes) {
    INFO("n = " << n);
    // Dissemination: ceil(log2 n) rounds of empty messages; each round all ranks signal at once.
    CHECK(time_of(mesh, K::Barrier, "dissemination", n, {}) == Approx(ceil_log2(n) * T(kEmptyBytes)));
    // Binomial: the empty fan-in reaches rank 0 after ceil(log2 n) rounds (rank 0 receives its
    // children one after the other, the last one ready just in time), the fan-out takes as many.
    CHECK(time_of(mesh, K::Barrier, "binomial", n, {}) == Approx(2 * ceil_log2(n) * T(kEmptyBytes)));
  }
}

TEST_CASE("bcast times", "[collectives]")
{
  Mesh mesh(8);
  for (int n : kSizes) {
    INFO("n = " << n);
    const double s = 420000;  // divisible by 1..8; below 512 KiB, so pow2 sizes use recursive doubling
    // Binomial, blocking sends: the root sends to relative ranks n/2.., n/4.., ..., one after the
    // other; every subtree does the same in parallel: ceil(log2 n) rounds of the whole buffer.
    CHECK(time_of(mesh, K::Bcast, "binomial", n, sized(s)) == Approx(ceil_log2(n) * T(s)));
    // Same with a root in the middle: relative ranks, same tree, same time.
    CHECK(time_of(mesh, K::Bcast, "binomial", n, sized(s, n / 2)) == Approx(ceil_log2(n) * T(s)));
    // Eager sends: the root's sends leave together on distinct links, so relative rank v gets the
    // data after popcount(v) hops; the deepest is floor(log2 n) (7 = 0b111 for n = 8, 3 = 0b11 for 5).
    CHECK(time_of(mesh, K::Bcast, "binomial", n, sized(1000), kEagerAll) == Approx(floor_log2(n) * T(1000)));
    // Linear: n - 1 parallel isends.
    CHECK(time_of(mesh, K::Bcast, "linear", n, sized(s)) == Approx(n == 1 ? 0.0 : T(s)));
    // Scatter + allgather, blocks c = S/n. The binomial scatter keeps the root busy for ceil(log2 n)
    // messages carrying all n - 1 foreign blocks: ceil(log2 n) L + (n-1) c'; every other rank has its
    // block by then. Then:
    //  pow2: recursive doubling, log2 n exchanges of 1, 2, 4... blocks: log2 n L + (n-1) c';
    //  else: ring, n - 1 steps of one block: (n-1) (L + c').
    const double c = s / n;
    const double expected = n == 1     ? 0.0
                            : is_pow2(n) ? 2 * ceil_log2(n) * kL + 2 * (n - 1) * X(c)
                                         : (ceil_log2(n) + n - 1) * kL + 2 * (n - 1) * X(c);
    CHECK(time_of(mesh, K::Bcast, "scatter_allgather", n, sized(s)) == Approx(expected));
  }
  // At 512 KiB and above the allgather is a ring even on 8 ranks: (3 + 7) L + 14 c'.
  const double s = 840000;
  CHECK(time_of(mesh, K::Bcast, "scatter_allgather", 8, sized(s)) == Approx(10 * kL + 14 * X(s / 8)));
  // The ring is on real ranks, the blocks relative to the root: the time does not depend on the root.
  CHECK(time_of(mesh, K::Bcast, "scatter_allgather", 5, sized(420000, 3)) == Approx(7 * kL + 8 * X(420000 / 5)));
}

TEST_CASE("pipelined bcast times", "[collectives]")
{
  Mesh mesh(8);
  const std::uint64_t seg = 131072;  // the segment
  const double g = static_cast<double>(seg);
  for (int n : kSizes) {
    INFO("n = " << n);
    // Four whole segments along the chain 0 -> 1 -> ... -> n-1, blocking sends: the root sends segment
    // i once segment i - 1 is over (at i T(g)); every rank forwards a segment as soon as it has it and
    // its previous forward is over, and the next receive is already posted. So each hop adds one T(g),
    // and the last rank has the last segment after (k - 1) + (n - 1) segment times.
    const double expected = n == 1 ? 0.0 : (4 + n - 2) * T(g);
    CHECK(time_of(mesh, K::Bcast, "pipeline", n, sized(4 * seg)) == Approx(expected));
    // Relative ranks: a root in the middle takes the same time.
    CHECK(time_of(mesh, K::Bcast, "pipeline", n, sized(4 * seg, n / 2)) == Approx(expected));
  }
  // A short last segment: 3 whole segments and 1000 bytes between two ranks, one after the other.
  CHECK(time_of(mesh, K::Bcast, "pipeline", 2, sized(3 * seg + 1000)) == Approx(3 * T(g) + T(1000)));
  // Below one segment it is one message per hop: n - 1 hops of the whole buffer.
  CHECK(time_of(mesh, K::Bcast, "pipeline", 5, sized(1000)) == Approx(4 * T(1000)));
}

TEST_CASE("reduce times", "[collectives]")
{
  Mesh mesh(8);
  const double s = 840000;
  const double work = kFlops / kSpeed;  // every rank reduces after its communication; the root is last
  for (int n : kSizes) {
    INFO("n = " << n);
    // Binomial fan-in: the root receives from relative ranks 1, 2, 4... in turn; each child's subtree
    // is done just in time: ceil(log2 n) rounds of the whole buffer.
    CHECK(time_of(mesh, K::Reduce, "binomial", n, sized(s, 0, kFlops)) == Approx(ceil_log2(n) * T(s) + work));
    CHECK(time_of(mesh, K::Reduce, "binomial", n, sized(s, n - 1, kFlops)) == Approx(ceil_log2(n) * T(s) + work));
    // Linear: n - 1 parallel messages into the root.
    CHECK(time_of(mesh, K::Reduce, "linear", n, sized(s, 0, kFlops)) == Approx((n == 1 ? 0.0 : T(s)) + work));
    // Rabenseifner with p = pof2 <= n: reduce-scatter by halving (S/2, S/4, ..., S/p) then the
    // binomial gather of the same sizes back: 2 log2 p L + 2 (p-1)/p S'. Non-pow2 adds the fold of the
    // whole buffer first: L + S'.
    const int p = 1 << floor_log2(n);
    const double core = 2 * floor_log2(n) * kL + 2.0 * (p - 1) / p * X(s);
    const double expected = n == 1 ? 0.0 : (is_pow2(n) ? core : T(s) + core);
    CHECK(time_of(mesh, K::Reduce, "rabenseifner", n, sized(s, 0, kFlops)) == Approx(expected + work));
  }
  // Root folded away (n = 5, root 1 sits out as an odd rank < 2 rem): after the reduce-scatter
  // (3L + 1.75 S'), rank 0 hands block 0 (S/4) to the root (+ L + S'/4), and the root then receives
  // newrank 2's block (+ L + S'/4) and newrank 1's two blocks (+ L + S'/2): 6L + 2.75 S'.
  CHECK(time_of(mesh, K::Reduce, "rabenseifner", 5, sized(s, 1, kFlops)) == Approx(6 * kL + 2.75 * X(s) + work));
}

TEST_CASE("allreduce times", "[collectives]")
{
  Mesh mesh(8);
  const double s = 840000;
  const double work = kFlops / kSpeed;
  for (int n : kSizes) {
    INFO("n = " << n);
    const int lp = floor_log2(n);
    const int p = 1 << lp;
    const double fold = is_pow2(n) ? 0.0 : 2 * T(s);  // the whole buffer in, the result back out
    // Recursive doubling: log2 p exchanges of the whole buffer.
    CHECK(time_of(mesh, K::Allreduce, "recursive_doubling", n, sized(s, 0, kFlops)) ==
          Approx(lp * T(s) + fold + work));
    // Rabenseifner: halving (S/2 ... S/p) then doubling back: 2 log2 p L + 2 (p-1)/p S'.
    CHECK(time_of(mesh, K::Allreduce, "rabenseifner", n, sized(s, 0, kFlops)) ==
          Approx(2 * lp * kL + 2.0 * (p - 1) / p * X(s) + fold + work));
    // Ring: 2 (n - 1) steps of one chunk S/n.
    CHECK(time_of(mesh, K::Allreduce, "ring", n, sized(s, 0, kFlops)) == Approx(2 * (n - 1) * T(s / n) + work));
    // Reduce + bcast of 1680 B (binomial both ways): 2 ceil(log2 n) rounds.
    CHECK(time_of(mesh, K::Allreduce, "reduce_bcast", n, sized(1680, 0, kFlops)) ==
          Approx(2 * ceil_log2(n) * T(1680) + work));
  }
  // Large on 8 ranks: Rabenseifner reduce (6L + 1.75 S') then scatter + ring-allgather bcast (the
  // buffer is >= 512 KiB): 3L + 7 c' + 7 (L + c') with c = S/8, i.e. 10L + 1.75 S'.
  CHECK(time_of(mesh, K::Allreduce, "reduce_bcast", 8, sized(s, 0, kFlops)) == Approx(16 * kL + 3.5 * X(s) + work));
}

TEST_CASE("allgather times", "[collectives]")
{
  Mesh mesh(8);
  const double s = 100000;  // each rank's contribution
  for (int n : kSizes) {
    INFO("n = " << n);
    // Ring: n - 1 steps of one contribution.
    CHECK(time_of(mesh, K::Allgather, "ring", n, sized(s)) == Approx((n - 1) * T(s)));
    // Recursive doubling (pow2): exchanges of 1, 2, 4... contributions: log2 n L + (n-1) S'.
    // Other sizes run the ring.
    CHECK(time_of(mesh, K::Allgather, "recursive_doubling", n, sized(s)) ==
          Approx(is_pow2(n) ? ceil_log2(n) * kL + (n - 1) * X(s) : (n - 1) * T(s)));
    // Bruck: 1, 2, 4... contributions, then the n - pof2 remaining ones: ceil(log2 n) L + (n-1) S'.
    CHECK(time_of(mesh, K::Allgather, "bruck", n, sized(s)) == Approx(ceil_log2(n) * kL + (n - 1) * X(s)));
  }
}

TEST_CASE("allgatherv times", "[collectives]")
{
  Mesh mesh(8);
  const double u = 100000;
  for (int n : kSizes) {
    INFO("n = " << n);
    CollectiveArgs even;
    even.bytes = static_cast<std::uint64_t>(u);
    even.recv_counts.assign(static_cast<std::size_t>(n), static_cast<std::uint64_t>(u));
    // Ring of equal blocks: n - 1 steps; linear: one parallel round.
    CHECK(time_of(mesh, K::Allgatherv, "ring", n, even) == Approx((n - 1) * T(u)));
    CHECK(time_of(mesh, K::Allgatherv, "linear", n, even) == Approx(n == 1 ? 0.0 : T(u)));
    // Linear with block i = (i+1) u: everybody but rank n-1 waits for rank n-1's n u.
    CollectiveArgs ramp;
    for (int i = 0; i < n; ++i)
      ramp.recv_counts.push_back(static_cast<std::uint64_t>((i + 1) * u));
    CHECK(time_of(mesh, K::Allgatherv, "linear", n, ramp) == Approx(n == 1 ? 0.0 : T(n * u)));
  }
}

TEST_CASE("alltoall and alltoallv times", "[collectives]")
{
  Mesh mesh(8);
  const double s = 100000;  // per destination
  // Bruck, step k moves the blocks whose index has bit k set: n = 2: {1}; 3: {1}, {2}; 4: {1,3},
  // {2,3}; 5: {1,3}, {2,3}, {4}; 8: four blocks in each of 3 steps.
  const std::map<int, double> bruck = {{1, 0.0},
                                       {2, T(s)},
                                       {3, 2 * T(s)},
                                       {4, 2 * T(2 * s)},
                                       {5, 2 * T(2 * s) + T(s)},
                                       {8, 3 * T(4 * s)}};
  for (int n : kSizes) {
    INFO("n = " << n);
    // Pairwise: n - 1 exchanges (XOR partners for 1, 2, 4, 8; shifts for 3, 5).
    CHECK(time_of(mesh, K::Alltoall, "pairwise", n, sized(s)) == Approx((n - 1) * T(s)));
    CHECK(time_of(mesh, K::Alltoall, "bruck", n, sized(s)) == Approx(bruck.at(n)));
    // Scattered isend/irecv: one parallel round on distinct links.
    CHECK(time_of(mesh, K::Alltoall, "linear", n, sized(s)) == Approx(n == 1 ? 0.0 : T(s)));

    CollectiveArgs v;
    v.counts.assign(static_cast<std::size_t>(n), static_cast<std::uint64_t>(s));
    v.recv_counts = v.counts;
    CHECK(time_of(mesh, K::Alltoallv, "pairwise", n, v) == Approx((n - 1) * T(s)));
    CHECK(time_of(mesh, K::Alltoallv, "linear", n, v) == Approx(n == 1 ? 0.0 : T(s)));
  }
}

TEST_CASE("gather and scatter times", "[collectives]")
{
  Mesh mesh(8);
  const double s = 100000;  // per rank
  for (int n : kSizes) {
    INFO("n = " << n);
    // Binomial gather: subtrees forward everything they hold, the root receives its subtrees one after
    // the other, the last (n/2 blocks) just ready: ceil(log2 n) L + (n - 1) S'.
    CHECK(time_of(mesh, K::Gather, "binomial", n, sized(s)) == Approx(ceil_log2(n) * kL + (n - 1) * X(s)));
    CHECK(time_of(mesh, K::Gather, "binomial", n, sized(s, n - 1)) == Approx(ceil_log2(n) * kL + (n - 1) * X(s)));
    // Binomial scatter: the root's ceil(log2 n) blocking sends carry all n - 1 blocks; every subtree
    // finishes with it.
    CHECK(time_of(mesh, K::Scatter, "binomial", n, sized(s)) == Approx(ceil_log2(n) * kL + (n - 1) * X(s)));
    CHECK(time_of(mesh, K::Gather, "linear", n, sized(s)) == Approx(n == 1 ? 0.0 : T(s)));
    CHECK(time_of(mesh, K::Scatter, "linear", n, sized(s)) == Approx(n == 1 ? 0.0 : T(s)));
  }
  // v-variants with rank i's block (i + 1) u at root 0: the largest, n u from rank n - 1, decides.
  const double u = 50000;
  for (int n : kSizes) {
    INFO("n = " << n);
    std::vector<std::uint64_t> ramp;
    for (int i = 0; i < n; ++i)
      ramp.push_back(static_cast<std::uint64_t>((i + 1) * u));
    const CollectiveAlgorithm* gatherv = registry().find(K::Gatherv, "linear");
    Outcome g = run_collective(mesh, *gatherv, first_ranks(n), [&](int r) {
      CollectiveArgs a;
      a.bytes = ramp[static_cast<std::size_t>(r)];
      a.recv_counts = ramp;
      return a;
    }, kRendezvousAll);
    CHECK(g.finished == n);
    CHECK(g.duration == Approx(n == 1 ? 0.0 : T(n * u)));
    const CollectiveAlgorithm* scatterv = registry().find(K::Scatterv, "linear");
    Outcome sv = run_collective(mesh, *scatterv, first_ranks(n), [&](int r) {
      CollectiveArgs a;
      a.counts = ramp;
      a.recv_bytes = ramp[static_cast<std::size_t>(r)];
      return a;
    }, kRendezvousAll);
    CHECK(sv.finished == n);
    CHECK(sv.duration == Approx(n == 1 ? 0.0 : T(n * u)));
  }
}

TEST_CASE("reduce-scatter times", "[collectives]")
{
  Mesh mesh(8);
  const double c = 100000;  // every rank's block
  const double work = kFlops / kSpeed;
  // Recursive halving, pow2: exchanges of n/2, n/4, ..., 1 blocks: log2 n L + (n-1) c'.
  // n = 3: rank 0 hands all 3 blocks to rank 1 (L + 3c'); ranks 1 and 2 swap (rank 2 sends the 2
  // blocks rank 1 answers for, gets 1): L + 2c'; rank 1 returns rank 0's block: L + c'. 3L + 6c'.
  // n = 5: fold of 5 blocks (L + 5c'); newrank 0 (rank 1, answers for blocks 0-1) gets 3 blocks from
  // newrank 2 (L + 3c'), then 2 blocks from newrank 1 (L + 2c'); the unfold returns one (L + c'):
  // 4L + 11c'.
  const std::map<int, double> halving = {{1, 0.0},
                                         {2, kL + X(c)},
                                         {3, 3 * kL + 6 * X(c)},
                                         {4, 2 * kL + 3 * X(c)},
                                         {5, 4 * kL + 11 * X(c)},
                                         {8, 3 * kL + 7 * X(c)}};
  for (int n : kSizes) {
    INFO("n = " << n);
    CollectiveArgs a;
    a.recv_counts.assign(static_cast<std::size_t>(n), static_cast<std::uint64_t>(c));
    a.flops = kFlops;
    CHECK(time_of(mesh, K::ReduceScatter, "recursive_halving", n, a) == Approx(halving.at(n) + work));
    // Pairwise: n - 1 exchanges of one block.
    CHECK(time_of(mesh, K::ReduceScatter, "pairwise", n, a) == Approx((n - 1) * T(c) + work));
    // Reduce + scatterv of 200 B blocks: binomial reduce of n blocks (ceil(log2 n) rounds), then one
    // parallel round of single blocks.
    CollectiveArgs small;
    small.recv_counts.assign(static_cast<std::size_t>(n), 200);
    small.flops = kFlops;
    CHECK(time_of(mesh, K::ReduceScatter, "reduce_scatterv", n, small) ==
          Approx((n == 1 ? 0.0 : ceil_log2(n) * T(200.0 * n) + T(200)) + work));
  }
}

TEST_CASE("scan and exscan times", "[collectives]")
{
  Mesh mesh(8);
  const double s = 100000;
  const double work = kFlops / kSpeed;
  for (int n : kSizes) {
    INFO("n = " << n);
    for (K kind : {K::Scan, K::Exscan}) {
      // Linear: a chain of n - 1 hops; recursive doubling: ceil(log2 n) exchanges (rank 0 has a
      // partner at every distance).
      CHECK(time_of(mesh, kind, "linear", n, sized(s, 0, kFlops)) == Approx((n - 1) * T(s) + work));
      CHECK(time_of(mesh, kind, "recursive_doubling", n, sized(s, 0, kFlops)) ==
            Approx(ceil_log2(n) * T(s) + work));
    }
  }
}

TEST_CASE("SMPI's default algorithms times", "[collectives]")
{
  Mesh mesh(8);
  const double s = 100000;
  const double work = kFlops / kSpeed;
  for (int n : kSizes) {
    INFO("n = " << n);
    const double flat = n == 1 ? 0.0 : 1.0;  // one parallel round on distinct links, none alone
    // Linear barrier: empty messages into rank 0, then out of it.
    CHECK(time_of(mesh, K::Barrier, "linear", n, {}) == Approx(2 * flat * T(kEmptyBytes)));
    // Allreduce: flat reduce to rank 0 (one round), then ceil(log2 n) binomial rounds back.
    CHECK(time_of(mesh, K::Allreduce, "linear_reduce_bcast", n, sized(s, 0, kFlops)) ==
          Approx((flat + ceil_log2(n)) * T(s) + work));
    CHECK(time_of(mesh, K::Allgather, "linear", n, sized(s)) == Approx(flat * T(s)));
    CHECK(time_of(mesh, K::Alltoall, "basic_linear", n, sized(s)) == Approx(flat * T(s)));
    CollectiveArgs v;
    v.counts.assign(static_cast<std::size_t>(n), static_cast<std::uint64_t>(s));
    v.recv_counts = v.counts;
    CHECK(time_of(mesh, K::Alltoallv, "basic_linear", n, v) == Approx(flat * T(s)));
    // Reduce-scatter of equal blocks u: the whole n u into rank 0, then one block out to each.
    CollectiveArgs rs;
    rs.recv_counts.assign(static_cast<std::size_t>(n), static_cast<std::uint64_t>(s));
    rs.flops = kFlops;
    CHECK(time_of(mesh, K::ReduceScatter, "linear_reduce_scatterv", n, rs) ==
          Approx(flat * (T(n * s) + T(s)) + work));
    // Scan and exscan: every lower rank's buffer arrives at once.
    for (K kind : {K::Scan, K::Exscan})
      CHECK(time_of(mesh, kind, "direct", n, sized(s, 0, kFlops)) == Approx(flat * T(s) + work));
  }
  // With eager sends the flat reduce's senders do not wait: only rank 0 and the bcast tree do, so the
  // time is the same (the critical path is rank 0's receives, then the tree).
  CHECK(time_of(mesh, K::Allreduce, "linear_reduce_bcast", 8, sized(1000), kEagerAll) == Approx(T(1000) * 4));
}

TEST_CASE("time spent waiting for a late partner is reported as partner wait", "[collectives]")
{
  Mesh mesh(2);
  // Rank 1 enters the barrier 1 s late: rank 0's receive matches at 1 s (1 s of partner wait), the
  // empty message then takes L. Rank 1 finds rank 0's message waiting.
  Outcome out = run_collective(mesh, *registry().find(K::Barrier, "dissemination"), {0, 1},
                               [](int) { return CollectiveArgs{}; }, kRendezvousAll,
                               [](int r) { return r == 1 ? 1.0 : 0.0; });
  REQUIRE(out.finished == 2);
  CHECK(out.ends[0] == Approx(1.0 + kL));
  CHECK(out.partner_wait[0] == Approx(1.0));
  CHECK(out.partner_wait[1] == Approx(0.0).margin(1e-12));
}

TEST_CASE("collective messages do not match application messages", "[collectives]")
{
  Mesh mesh(2);
  MessageBoard board(mesh.hosts(), MessageBoard::Options{kDefaultEager});
  Communicator comm;
  comm.world_ranks = {0, 1};
  comm.p2p_context = 0;
  comm.coll_context = 1;
  const CollectiveAlgorithm& barrier = *registry().find(K::Barrier, "dissemination");
  double app_received = -1;
  const double start = sg4::Engine::get_clock();
  // Rank 0 sends an application message with every small tag before the barrier; rank 1 receives
  // them only after it. Had the barrier's receive taken one, rank 1 would wait forever below.
  sg4::Actor::create("r0", mesh.hosts()[0], [&] {
    for (int t = 0; t < 100; ++t)
      board.wait(board.post_send(0, 1, 8, t, comm.p2p_context, SendMode::Standard));
    CollectiveContext ctx(board, comm, 0, {});
    barrier(ctx, {});
  });
  sg4::Actor::create("r1", mesh.hosts()[1], [&] {
    CollectiveContext ctx(board, comm, 1, {});
    barrier(ctx, {});
    for (int t = 0; t < 100; ++t)
      board.wait(board.post_recv(1, 0, 8, t, comm.p2p_context));
    app_received = sg4::Engine::get_clock() - start;
  });
  mesh.engine().run();
  CHECK(app_received > 0);
  CHECK(board.pending_at(0).empty());
  CHECK(board.pending_at(1).empty());
}

// ---------------------------------------------------------------------------------------------------
// Every algorithm, every size: all ranks return and no request is left unmatched.

namespace {

/// Bytes rank r sends to rank j in the v-collectives of the sweep: uneven, with zeros.
std::uint64_t v_block(int r, int j, std::uint64_t unit)
{
  return static_cast<std::uint64_t>((r * 7 + j * 3) % 4) * unit;
}

/// Arguments of rank r for `kind` in the sweep: consistent across ranks, as a correct program has them.
CollectiveArgs sweep_args(K kind, int r, int n, std::uint64_t bytes, int root)
{
  CollectiveArgs a = sized(bytes, root, 1000);
  auto own = [&](int i) { return static_cast<std::uint64_t>(i % 3) * bytes; };  // rank i's v-block
  switch (kind) {
    case K::Alltoallv:
      for (int j = 0; j < n; ++j) {
        a.counts.push_back(v_block(r, j, bytes));
        a.recv_counts.push_back(v_block(j, r, bytes));
      }
      break;
    case K::Allgatherv:
    case K::ReduceScatter:
      for (int i = 0; i < n; ++i)
        a.recv_counts.push_back(own(i));
      a.bytes = own(r);
      break;
    case K::Gatherv:
      for (int i = 0; i < n; ++i)
        a.recv_counts.push_back(own(i));
      a.bytes = own(r);
      break;
    case K::Scatterv:
      for (int i = 0; i < n; ++i)
        a.counts.push_back(own(i));
      a.recv_bytes = own(r);
      break;
    default:
      break;
  }
  return a;
}

bool rooted(K kind)
{
  switch (kind) {
    case K::Bcast:
    case K::Reduce:
    case K::Gather:
    case K::Gatherv:
    case K::Scatter:
    case K::Scatterv:
      return true;
    default:
      return false;
  }
}

}  // namespace

TEST_CASE("every algorithm pairs its sends and receives", "[collectives]")
{
  constexpr int kHosts = 9;
  Mesh mesh(kHosts);
  for (int k = 0; k <= static_cast<int>(K::Exscan); ++k) {
    const auto kind = static_cast<K>(k);
    for (const std::string& name : registry().names(kind)) {
      const CollectiveAlgorithm& algo = *registry().find(kind, name);
      for (int n = 1; n <= kHosts; ++n) {
        // A communicator that is not world order: world rank (2i + 1) mod 9 is communicator rank i.
        std::vector<int> members;
        for (int i = 0; i < n; ++i)
          members.push_back((2 * i + 1) % kHosts);
        std::vector<int> roots = {0};
        if (rooted(kind))
          roots = {0, 1 % n, n / 2, n - 1};
        std::sort(roots.begin(), roots.end());
        roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
        for (int root : roots)
          for (std::uint64_t bytes : {0ULL, 1ULL, 1000ULL, 3000ULL, 70000ULL, 600000ULL})
            for (std::uint64_t eager : {kDefaultEager, kRendezvousAll}) {
              Outcome out = run_collective(
                  mesh, algo, members, [&](int r) { return sweep_args(kind, r, n, bytes, root); }, eager);
              std::ostringstream what;
              what << collective_name(kind) << "/" << name << " n=" << n << " root=" << root << " bytes=" << bytes
                   << " eager<" << eager << " " << out.errors;
              INFO(what.str());
              CHECK(out.finished == n);
              CHECK(out.pending == 0);
            }
      }
    }
  }
}
