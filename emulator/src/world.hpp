// State shared by all rank actors of one replay: the message board, the communicators created so far,
// the collective registry and choices, GPUs, nodes and the fast-forward decision. Internal to the emulator.
#pragma once

#include "fast_forward.hpp"
#include "sampling.hpp"

#include "gridcast/emulator/collectives.hpp"
#include "gridcast/emulator/config.hpp"
#include "gridcast/emulator/gpu.hpp"
#include "gridcast/emulator/p2p.hpp"
#include "gridcast/emulator/timeline.hpp"
#include "gridcast/emulator/wait_states.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::emulator {

/// First NCCL communicator handle: the profiler numbers NCCL communicators from here (docs/reference/traces.md).
constexpr std::int32_t kFirstNcclComm = 65536;

/// State shared by all rank actors of one run.
struct World {
  World(std::vector<sg4::Host*> hosts, const ReplayOptions& opts, TimelineWriter* tl)
      : board(hosts, MessageBoard::Options{opts.eager_threshold_bytes, opts.envelope_bytes}), options(opts), timeline(tl)
  {
    Communicator world;
    world.id = 0;
    world.world_ranks.resize(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i)
      world.world_ranks[i] = static_cast<int>(i);
    world.p2p_context = 0;
    world.coll_context = 1;
    comms.push_back(std::move(world));
  }

  /// Members deposited for one pending MPI_Comm_split/dup, keyed by (parent comm id, sequence).
  struct SplitEntry {
    int color;
    int key;
    int parent_rank;
    int world_rank;
  };
  struct PendingSplit {
    std::vector<SplitEntry> entries;
    std::map<int, int> comm_of_color;  ///< color -> global comm id, created by the first member to ask
    /// Under the SMPI selector, an MPI_Cart_create exchanges nothing before its members build the new
    /// communicator (SMPI maps new rank i to old rank i): they meet here, at no cost, to learn who is in.
    sg4::BarrierPtr rendezvous;
  };

  MessageBoard board;
  const ReplayOptions& options;
  TimelineWriter* timeline;
  CollectiveRegistry registry;
  std::deque<Communicator> comms;  // deque: references stay valid as communicators are added
  std::map<std::pair<int, std::uint64_t>, PendingSplit> splits;
  /// Communicators created among their members only (a comm_split with `counts`), keyed by (members,
  /// sequence of creations of that member list at each member): global comm id.
  std::map<std::pair<std::vector<int>, std::uint64_t>, int> member_comms;
  std::map<std::string, std::map<std::string, std::uint64_t>> collective_choices;
  std::unique_ptr<GpuSystem> gpus;  ///< GPU hosts and costs (docs/guides/gpu.md)
  std::unique_ptr<NodeMap> nodes;   ///< ranks sharing a host, and its gridcast:llc-bytes (cold copies)
  std::unique_ptr<SteadyState> steady;  ///< set when the run may fast-forward
  std::unique_ptr<SampledRun> sampled;  ///< set when the run is sampled (predict --sample)
  std::unique_ptr<WaitStateRecorder> waits;  ///< set with --analysis waits (ReplayOptions::wait_states)
  /// Matching contexts of nonblocking collectives in flight, keyed by (comm id, sequence number of the
  /// nonblocking collective on that comm): each gets its own, so that two of them, or one and a blocking
  /// collective, never take each other's messages. Negative, apart from every communicator's contexts.
  struct NbcContext {
    int context = 0;
    int members_left = 0;  ///< erased when every member has taken it
  };
  std::map<std::pair<int, std::uint64_t>, NbcContext> nbc_contexts;
  int next_nbc_context = -1;
  /// SMPI 3.32's multiplier of its test sleep (a static in Request::test, shared by every rank): a test
  /// sleeps it times smpi/test, a success resets it to 1, a failure adds 1. Used by the smpi selector.
  int smpi_test_sleeps = 1;
  /// The first exception thrown inside an actor, rethrown after the simulation stops.
  std::exception_ptr failure;
  /// Stops the run after an exception in one actor: every other actor is killed.
  void abort_run(std::exception_ptr e)
  {
    if (not failure)
      failure = std::move(e);
    board.abort();
    for (auto const& a : sg4::Engine::get_instance()->get_all_actors())
      if (a != sg4::Actor::self())
        a->kill();
  }

  /// Adds a communicator of `world_ranks` (in rank order) with matching contexts of its own; returns its id.
  int add_communicator(std::vector<int> world_ranks)
  {
    Communicator comm;
    comm.id = static_cast<int>(comms.size());
    comm.p2p_context = 2 * comm.id;
    comm.coll_context = 2 * comm.id + 1;
    comm.world_ranks = std::move(world_ranks);
    comms.push_back(std::move(comm));
    return comms.back().id;
  }
};

}  // namespace gridcast::emulator
