#include "rank_comms.hpp"

#include "rank_collectives.hpp"

#include <algorithm>
#include <string>

namespace gridcast::emulator {

using models::CallRecord;
using models::Op;

void CommTable::unusable(std::int32_t handle, bool never_created) const
{
  core_.fail("communicator handle " + std::to_string(handle) +
             (never_created ? " was never created by this rank" : " is MPI_COMM_NULL at this rank"));
}

void CommTable::check_idup(std::int32_t handle)
{
  auto pending = idup_pending_.find(handle);
  if (pending != idup_pending_.end()) {
    if (requests_.pending(pending->second))
      core_.fail("communicator handle " + std::to_string(handle) + " from MPI_Comm_idup is used before its request " +
                 std::to_string(pending->second) + " completed");
    idup_pending_.erase(pending);  // completed by a wait or test: usable from now on
  }
}

/// ncclSend/ncclRecv name a rank of the NCCL communicator (docs/reference/traces.md), the one exception.
int CommTable::nccl_peer(const Communicator& comm, int peer, const char* field) const
{
  if (peer < 0 || peer >= comm.size())
    core_.fail(std::string(field) + " " + std::to_string(peer) + " is outside NCCL communicator " +
               std::to_string(current_handle_) + " (" + std::to_string(comm.size()) + " ranks)");
  return comm.world_ranks[static_cast<std::size_t>(peer)];
}

void CommTable::bad_peer(const Communicator& comm, int peer, const char* field) const
{
  int np = core_.world.board.rank_count();
  if (peer < 0 || peer >= np)
    core_.fail(std::string(field) + " " + std::to_string(peer) + " is not a world rank (the run has " +
               std::to_string(np) + " ranks)");
  core_.fail(std::string(field) + " " + std::to_string(peer) + " is not a member of communicator " +
             std::to_string(current_handle_) + " (" + std::to_string(comm.size()) +
             " ranks); peers are world ranks");
}

/// A communicator handle used without a creation record is a predefined communicator the profiler
/// registered at its first use: MPI_COMM_SELF (the only predefined one besides MPI_COMM_WORLD). Each rank
/// gets its own, with contexts of its own; a peer outside it is an error naming the record.
const Communicator& CommTable::self_communicator()
{
  if (self_ == nullptr)
    self_ = &core_.world.comms[static_cast<std::size_t>(core_.world.add_communicator({core_.rank}))];
  return *self_;
}

void CommCreator::split(const CallRecord& c)
{
  World& world = core_.world;
  // Rebinding MPI_COMM_WORLD is impossible; TIT traces record comm_split/comm_dup without their result
  // (SMPI's replayer ignores them), and they land here with new_comm = world.
  if (c.new_comm == models::kWorldComm)
    return;
  if (not c.counts.empty() || (c.op == Op::CommSplit && c.color < 0 && created_among_members(c)))
    return create_among_members(c);
  const Communicator& parent = comms_.resolve(c.comm);
  std::uint64_t seq = split_seq_[parent.id]++;
  if (c.op == Op::CommDup && c.request != models::kNoRequest)
    return start_idup(c, parent, seq);
  World::PendingSplit& pending = world.splits[{parent.id, seq}];
  int color = c.op == Op::CommDup ? 0 : c.color;
  int key = c.op == Op::CommDup ? 0 : c.key;
  pending.entries.push_back({color, key, parent.rank_of(core_.rank), core_.rank});

  const SmpiCreation smpi = smpi_creation(c);
  if (smpi == SmpiCreation::Split)
    smpi_split_exchange(parent, pending, color >= 0);
  else if (smpi == SmpiCreation::Construct)
    meet_at_no_cost(parent, pending);
  else  // every member exchanges (color, key) like MPICH's allgather inside MPI_Comm_split: 8 bytes each
    collectives_.creation_exchange(parent);

  if (color < 0) {  // MPI_UNDEFINED: this rank gets MPI_COMM_NULL
    comms_.bind(c.new_comm, nullptr);
    return;
  }
  // Every member has deposited its color by now: the exchange (or, in SMPI's split, rank 0's message to
  // this rank, sent once rank 0 had every color) came after every deposit.
  if (static_cast<int>(pending.entries.size()) != parent.size())
    throw InternalError("comm_split: the exchange finished before every member deposited its color");
  auto [it, created] = pending.comm_of_color.try_emplace(color, -1);
  if (created)
    it->second = world.add_communicator(members_of(pending, color));
  const Communicator& made = world.comms[static_cast<std::size_t>(it->second)];
  comms_.bind(c.new_comm, &made);
  if (smpi != SmpiCreation::None)
    collectives_.smpi_creation_bcast(made);
}

/// SMPI prices a creation by what its code does, not by an exchange of (color, key) (src/smpi/mpi/
/// smpi_comm.cpp and smpi_topo.cpp, 3.32): MPI_Comm_split and MPI_Cart_sub gather at rank 0 and are sent
/// their groups (Split); MPI_Cart_create and MPI_Comm_dup only construct the new communicator
/// (Construct); both end with the construction's broadcast. Other creations (MPI_Comm_split_type,
/// MPI_Comm_create...) keep the allgather, under every selector.
CommCreator::SmpiCreation CommCreator::smpi_creation(const CallRecord& c) const
{
  if (core_.world.options.coll_selector != CollectiveSelector::Smpi)
    return SmpiCreation::None;
  if (c.op == Op::CommDup)
    return SmpiCreation::Construct;
  std::string_view fn = core_.function_name(c.function);
  if (fn == "MPI_Comm_split" || fn == "MPI_Cart_sub")
    return SmpiCreation::Split;
  if (fn == "MPI_Cart_create")
    return SmpiCreation::Construct;
  return SmpiCreation::None;
}

/// The members of each color in new-rank order (key, then parent rank), as world ranks.
std::vector<int> CommCreator::members_of(const World::PendingSplit& pending, int color)
{
  std::vector<World::SplitEntry> members;
  for (const auto& e : pending.entries)
    if (e.color == color)
      members.push_back(e);
  std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
    return a.key != b.key ? a.key < b.key : a.parent_rank < b.parent_rank;
  });
  std::vector<int> world_ranks;
  for (const auto& e : members)
    world_ranks.push_back(e.world_rank);
  return world_ranks;
}

/// SMPI's split at this rank. Parent rank 0 has every color once the gather is done: only there are the
/// groups it sends known (colors in the order of their first member, by parent rank).
void CommCreator::smpi_split_exchange(const Communicator& parent, const World::PendingSplit& pending,
                                      bool color_defined)
{
  auto groups = [&] {
    std::vector<World::SplitEntry> by_rank = pending.entries;
    std::sort(by_rank.begin(), by_rank.end(), [](const auto& a, const auto& b) { return a.parent_rank < b.parent_rank; });
    std::vector<int> seen;
    std::vector<std::vector<int>> out;
    for (const auto& e : by_rank) {
      if (e.color < 0 || std::find(seen.begin(), seen.end(), e.color) != seen.end())
        continue;
      seen.push_back(e.color);
      std::vector<int> parent_ranks;
      for (int w : members_of(pending, e.color))
        parent_ranks.push_back(parent.rank_of(w));
      out.push_back(std::move(parent_ranks));
    }
    return out;
  };
  collectives_.smpi_split_exchange(parent, groups, color_defined);
}

/// Waits, at no simulated cost, until every member of `parent` has deposited its entry.
void CommCreator::meet_at_no_cost(const Communicator& parent, World::PendingSplit& pending)
{
  if (not pending.rendezvous)
    pending.rendezvous = sg4::Barrier::create(static_cast<unsigned>(parent.size()));
  pending.rendezvous->wait();
}

/// MPI_Comm_idup (a comm_dup record with `request`): a duplicate has the parent's members in the parent's
/// order, so the communicator is known at once (the first member to arrive builds it; the n-th creation
/// on a parent is the n-th at every member). Its cost, the members' 8-byte allgather, runs as a
/// nonblocking collective on the parent: the rank goes on, and the wait or test naming the request
/// completes when the exchange has. The handle may be used only after that (MPI 4.0, 6.4.2):
/// CommTable::resolve() rejects an earlier use.
void CommCreator::start_idup(const CallRecord& c, const Communicator& parent, std::uint64_t seq)
{
  World& world = core_.world;
  World::PendingSplit& pending = world.splits[{parent.id, seq}];
  auto [it, created] = pending.comm_of_color.try_emplace(0, -1);
  if (created)
    it->second = world.add_communicator(parent.world_ranks);
  CollectiveArgs args;
  args.bytes = 8;
  args.recv_bytes = 8;
  std::string name =
      world.registry.select(CollectiveKind::Allgather, args, parent.size(), world.options.coll_selector);
  collectives_.start_nonblocking(CollectiveKind::Allgather, name,
                                 *world.registry.find(CollectiveKind::Allgather, name), std::move(args), parent, c);
  comms_.bind_idup(c.new_comm, world.comms[static_cast<std::size_t>(it->second)], c.request);
}

/// A creation that the profiler wrote with its members (MPI_Comm_create_group, MPI_Intercomm_create and
/// _merge): the members' world ranks in `counts`, none when this rank got MPI_COMM_NULL.
bool CommCreator::created_among_members(const CallRecord& c) const
{
  std::string_view fn = core_.function_name(c.function);
  return fn == "MPI_Comm_create_group" || fn == "MPI_Intercomm_create" || fn == "MPI_Intercomm_merge";
}

/// Creates the communicator of `counts` (world ranks in rank order) among its members alone: the n-th
/// creation of a member list at one member is the n-th at every other. Its cost: the members exchange
/// 8 bytes each on it (an allgather), as the split of a parent does.
void CommCreator::create_among_members(const CallRecord& c)
{
  World& world = core_.world;
  if (c.counts.empty()) {
    comms_.bind(c.new_comm, nullptr);  // MPI_COMM_NULL at this rank
    return;
  }
  std::vector<int> members;
  members.reserve(c.counts.size());
  for (std::uint64_t w : c.counts) {
    if (w >= world.comms.front().world_ranks.size())
      core_.fail("communicator members name world rank " + std::to_string(w) + ", outside the world of " +
                 std::to_string(world.comms.front().world_ranks.size()));
    members.push_back(static_cast<int>(w));
  }
  if (std::find(members.begin(), members.end(), core_.rank) == members.end())
    core_.fail("a communicator created among its members does not list this rank");
  std::uint64_t seq = member_seq_[members]++;
  auto [it, created] = world.member_comms.try_emplace({members, seq}, -1);
  if (created)
    it->second = world.add_communicator(members);
  const Communicator& comm = world.comms[static_cast<std::size_t>(it->second)];
  comms_.bind(c.new_comm, &comm);
  collectives_.creation_exchange(comm);
}

}  // namespace gridcast::emulator
