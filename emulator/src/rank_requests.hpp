// One rank's MPI requests (docs/reference/emulator.md): the handles of its pending nonblocking operations, and
// their completion by waits, tests, cancels, frees and MPI_Finalize. Internal to the emulator.
#pragma once

#include "rank_core.hpp"
#include "rank_gpu.hpp"

#include "gridcast/emulator/p2p.hpp"
#include "gridcast/models/call.hpp"

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gridcast::emulator {

class RequestTable {
public:
  RequestTable(RankCore& core, RankDevice& device) : core_(core), device_(device) {}

  /// Keeps `r` under the record's request handle, which must not be pending already.
  void remember(const models::CallRecord& c, RequestPtr r);
  /// Blocks until `r` completes, splitting the time into partner wait and transfer.
  void complete(const RequestPtr& r);

  /// MPI_Wait on `handle` (also each handle of an MPI_Waitall record `c`).
  void wait(std::int64_t handle, const models::CallRecord& c);
  void wait_any(const models::CallRecord& c);
  /// MPI_Test and its Testall/Testany/Testsome forms.
  void test(const models::CallRecord& c)
  {
    return c.request == models::kNoRequest && not c.requests.empty() ? test_many(c) : test_handle(c);
  }
  void cancel_or_free(const models::CallRecord& c);
  void settle_leftovers();

  /// Whether `handle` names an operation still pending (not completed by a wait or test, not freed).
  bool pending(std::int64_t handle) const { return requests_.count(handle) > 0; }
  /// No request pending, freed ones included (fast-forward needs self-contained iterations).
  bool quiet() const { return requests_.empty() && freed_.empty(); }

private:
  using Table = std::unordered_map<std::int64_t, RequestPtr>;

  bool try_complete(Table::iterator it);
  Table::iterator tested(std::int64_t handle);
  void test_handle(const models::CallRecord& c);
  void smpi_test(Table::iterator it);
  void test_many(const models::CallRecord& c);

  RankCore& core_;
  RankDevice& device_;
  Table requests_;
  /// Handles that are MPI_REQUEST_NULL now: completed by a test, or freed (MPI_Request_free).
  std::unordered_set<std::int64_t> inactive_;
  /// Freed requests whose operation still runs (MPI_Request_free does not stop it); settled at finalize.
  std::vector<RequestPtr> freed_;
  int failed_tests_ = 0;
};

}  // namespace gridcast::emulator
