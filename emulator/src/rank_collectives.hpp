// One rank's collective records (docs/reference/collectives.md): the algorithm chosen for each, blocking ones run
// in the rank's actor, nonblocking ones in an actor of their own, NCCL ones on a GPU stream; and the
// exchange that creating a communicator costs. Internal to the emulator.
#pragma once

#include "fast_forward.hpp"
#include "rank_comms.hpp"
#include "rank_core.hpp"
#include "rank_gpu.hpp"
#include "rank_requests.hpp"

#include "gridcast/emulator/collectives.hpp"
#include "gridcast/models/call.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace gridcast::emulator {

class RankCollectives {
public:
  RankCollectives(RankCore& core, CommTable& comms, RankDevice& device, RequestTable& requests)
      : core_(core), comms_(comms), device_(device), requests_(requests)
  {
  }

  /// A collective record of kind `kind`: blocking, nonblocking (with `request`) or NCCL.
  void collective(CollectiveKind kind, const models::CallRecord& c);

  /// A nonblocking collective (a collective record with `request`): its algorithm runs at once in an actor
  /// of its own on the rank's host, on a matching context of its own, while the rank goes on; the wait or
  /// test naming the request completes when that actor has finished. This is MPI with asynchronous
  /// progress: a library that progresses collectives only inside MPI calls overlaps less.
  void start_nonblocking(CollectiveKind kind, const std::string& name, const CollectiveAlgorithm& algo,
                         CollectiveArgs args, const Communicator& comm, const models::CallRecord& c);

  /// The cost of creating a communicator: its members (of the parent, for a split) exchange 8 bytes each
  /// with an allgather, as MPI_Comm_split does for (color, key).
  void creation_exchange(const Communicator& among);

  /// SMPI 3.32's MPI_Comm_split (Comm::split; MPI_Cart_sub is one), under the SMPI selector: every member
  /// of `parent` sends its (color, key), 8 bytes, to parent rank 0 (SMPI's linear gather); rank 0 then
  /// sends each member of each color, colors in the order of their first member, its new group (8 bytes,
  /// a pointer), waiting for one color's sends before the next. `groups`, called at rank 0 once the
  /// gather is done, gives every color's members in new-rank order as parent ranks; `color_defined`:
  /// whether this rank gets a communicator (and so a message from rank 0).
  void smpi_split_exchange(const Communicator& parent, const std::function<std::vector<std::vector<int>>()>& groups,
                           bool color_defined);
  /// SMPI 3.32's cost of a new communicator's construction, at each of its members: rank 0 broadcasts
  /// the communicator's id (4 bytes) with the selected broadcast.
  void smpi_creation_bcast(const Communicator& created);

  /// This rank's collective choices as first rank of their communicator, counted while the run may
  /// fast-forward (the skip extrapolates them).
  const ChoiceCounts& choices() const { return choices_; }

private:
  /// Runs `exchange` on a collective context of `among` for this rank, its time counted as communication
  /// and waiting.
  template <typename Exchange>
  void run_exchange(const Communicator& among, Exchange exchange);
  CollectiveAlgorithm const* choose(CollectiveKind kind, const CollectiveArgs& args, const Communicator& comm,
                                    const models::CallRecord& c, std::string& name);
  std::pair<std::uint64_t, std::uint64_t> staged_bytes(CollectiveKind kind, const CollectiveArgs& a,
                                                       const Communicator& comm) const;

  RankCore& core_;
  CommTable& comms_;
  RankDevice& device_;
  RequestTable& requests_;
  ChoiceCounts choices_;
  std::map<int, std::uint64_t> nbc_seq_;  ///< per communicator id: nonblocking collectives started
};

}  // namespace gridcast::emulator
