// One rank's communicators: the handles of its trace bound to the run's communicators (CommTable), and
// their creation by MPI_Comm_split/dup/idup and among listed members (CommCreator). Internal to the
// emulator.
#pragma once

#include "rank_core.hpp"
#include "rank_requests.hpp"

#include "gridcast/emulator/collectives.hpp"
#include "gridcast/models/call.hpp"

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace gridcast::emulator {

class RankCollectives;

/// The communicator handles one rank's records name, resolved to the run's communicators.
class CommTable {
public:
  CommTable(RankCore& core, const RequestTable& requests) : core_(core), requests_(requests)
  {
    comms_[models::kWorldComm] = &core.world.comms.front();
  }

  /// The communicator of `handle` (every record naming one: kept inline, the errors out of line). A
  /// handle used without a creation record is MPI_COMM_SELF (see self_communicator).
  const Communicator& resolve(std::int32_t handle)
  {
    auto it = comms_.find(handle);
    if (it == comms_.end() && handle > models::kWorldComm && handle < kFirstNcclComm)
      it = comms_.emplace(handle, &self_communicator()).first;
    if (it == comms_.end() || it->second == nullptr)
      unusable(handle, it == comms_.end());
    if (not idup_pending_.empty())
      check_idup(handle);
    current_handle_ = handle;
    return *it->second;
  }

  /// Checks a peer of a point-to-point record: a world rank (docs/reference/traces.md), member of `comm` (the
  /// communicator resolve() returned last). Returns its world rank.
  int world_rank(const Communicator& comm, int peer, const char* field = "peer")
  {
    if (current_handle_ >= kFirstNcclComm)
      return nccl_peer(comm, peer, field);
    if (peer < 0 || peer >= core_.world.board.rank_count() || (comm.id != 0 && comm.rank_of(peer) < 0))
      bad_peer(comm, peer, field);
    return peer;
  }

  /// Binds `handle` to `comm` (nullptr: MPI_COMM_NULL at this rank).
  void bind(std::int32_t handle, const Communicator* comm) { comms_[handle] = comm; }
  /// Binds `handle` to the communicator of an MPI_Comm_idup, usable once `request` completed.
  void bind_idup(std::int32_t handle, const Communicator& comm, std::int64_t request)
  {
    comms_[handle] = &comm;
    idup_pending_[handle] = request;
  }

private:
  [[noreturn]] void unusable(std::int32_t handle, bool never_created) const;
  void check_idup(std::int32_t handle);
  int nccl_peer(const Communicator& comm, int peer, const char* field) const;
  [[noreturn]] void bad_peer(const Communicator& comm, int peer, const char* field) const;
  const Communicator& self_communicator();

  RankCore& core_;
  const RequestTable& requests_;
  std::unordered_map<std::int32_t, const Communicator*> comms_;
  /// Communicators from MPI_Comm_idup whose request has not completed yet: handle -> request.
  std::unordered_map<std::int32_t, std::int64_t> idup_pending_;
  const Communicator* self_ = nullptr;    ///< MPI_COMM_SELF, created at its first use
  std::int32_t current_handle_ = 0;       ///< the handle resolve() resolved last, for messages
};

/// Creates the communicators of one rank's comm_split/comm_dup records (MPI_Comm_split, _dup, _idup,
/// _create_group, MPI_Intercomm_create and _merge) and binds them in its CommTable.
class CommCreator {
public:
  CommCreator(RankCore& core, CommTable& comms, RankCollectives& collectives)
      : core_(core), comms_(comms), collectives_(collectives)
  {
  }

  void split(const models::CallRecord& c);

private:
  enum class SmpiCreation { None, Split, Construct };
  SmpiCreation smpi_creation(const models::CallRecord& c) const;
  static std::vector<int> members_of(const World::PendingSplit& pending, int color);
  void smpi_split_exchange(const Communicator& parent, const World::PendingSplit& pending, bool color_defined);
  void meet_at_no_cost(const Communicator& parent, World::PendingSplit& pending);
  void start_idup(const models::CallRecord& c, const Communicator& parent, std::uint64_t seq);
  bool created_among_members(const models::CallRecord& c) const;
  void create_among_members(const models::CallRecord& c);

  RankCore& core_;
  CommTable& comms_;
  RankCollectives& collectives_;
  std::map<int, std::uint64_t> split_seq_;               ///< per parent comm id: splits and dups started
  std::map<std::vector<int>, std::uint64_t> member_seq_;  ///< creations among members, per member list
};

}  // namespace gridcast::emulator
