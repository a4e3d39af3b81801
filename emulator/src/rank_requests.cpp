#include "rank_requests.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <string_view>

namespace gridcast::emulator {

using models::CallRecord;
using models::Op;

namespace {

/// How an MPI_Test-family record completes the requests it names.
enum class TestKind { All, Any, Some };
TestKind test_kind(std::string_view fn)
{
  if (fn.find("Testall") != std::string_view::npos || fn.find("testall") != std::string_view::npos)
    return TestKind::All;
  if (fn.find("Testany") != std::string_view::npos || fn.find("testany") != std::string_view::npos)
    return TestKind::Any;
  return TestKind::Some;
}

}  // namespace

void RequestTable::remember(const CallRecord& c, RequestPtr r)
{
  if (c.request == models::kNoRequest)
    core_.fail("a nonblocking call needs a request handle");
  auto [it, inserted] = requests_.try_emplace(c.request, std::move(r));
  if (not inserted)
    core_.fail("request handle " + std::to_string(c.request) + " is still pending from an earlier call");
}

void RequestTable::complete(const RequestPtr& r)
{
  World& world = core_.world;
  double begin = sg4::Engine::get_clock();
  core_.waiting_on = r;  // described only if the run deadlocks: building the text for every wait costs
  double partner = world.board.wait(r);
  core_.waiting_on = nullptr;
  double elapsed = sg4::Engine::get_clock() - begin;
  core_.stats.wait_s += partner;
  core_.stats.comm_s += elapsed - partner;
  if (world.waits)
    core_.note_partner(*r);
  if (r->kind == Request::Kind::Recv && not r->cancelled && world.timeline != nullptr)
    world.timeline->flow_end(core_.rank, r->message, sg4::Engine::get_clock());
}

void RequestTable::wait(std::int64_t handle, const CallRecord& c)
{
  auto it = requests_.find(handle);
  if (it == requests_.end()) {
    // A request completed by a successful test, or freed, is MPI_REQUEST_NULL: waiting on it is a no-op.
    if (inactive_.count(handle) > 0)
      return;
    // A waitall naming one handle twice (profiles of Open MPI do, when two requests shared a handle):
    // the second is null by then. Checked only here, off the common path.
    if (c.op == Op::Waitall && std::count(c.requests.begin(), c.requests.end(), handle) > 1)
      return;
    core_.fail("wait on request handle " + std::to_string(handle) +
               " that no isend/irecv/nonblocking collective created");
  }
  RequestPtr r = std::move(it->second);
  requests_.erase(it);
  complete(r);
  device_.request_completed(handle);
}

void RequestTable::wait_any(const CallRecord& c)
{
  // Complete the first request that is done already; otherwise the first to match, then its transfer.
  // (A transfer that finishes while another request is still unmatched is not noticed earlier: the
  // simplification is documented in docs/reference/emulator.md.)
  for (std::int64_t h : c.requests) {
    auto it = requests_.find(h);
    if (it != requests_.end() && try_complete(it))
      return;
  }
  for (std::int64_t h : c.requests) {
    auto it = requests_.find(h);
    if (it != requests_.end() && it->second->matched)
      return wait(h, c);
  }
  for (std::int64_t h : c.requests)
    if (requests_.count(h) > 0)
      return wait(h, c);
}

/// Tests one pending request without blocking; on success it becomes MPI_REQUEST_NULL.
bool RequestTable::try_complete(Table::iterator it)
{
  World& world = core_.world;
  if (not world.board.test(it->second))
    return false;
  if (it->second->kind == Request::Kind::Recv && not it->second->cancelled && world.timeline != nullptr)
    world.timeline->flow_end(core_.rank, it->second->message, sg4::Engine::get_clock());
  const std::int64_t handle = it->first;
  inactive_.insert(handle);
  requests_.erase(it);
  device_.request_completed(handle);
  return true;
}

/// A handle named by a test must exist (pending, or MPI_REQUEST_NULL already).
RequestTable::Table::iterator RequestTable::tested(std::int64_t handle)
{
  auto it = requests_.find(handle);
  if (it == requests_.end() && inactive_.count(handle) == 0)
    core_.fail("test on request handle " + std::to_string(handle) +
               " that no isend/irecv/nonblocking collective created");
  return it;
}

void RequestTable::test_handle(const CallRecord& c)
{
  auto it = tested(c.request);
  if (c.seconds < 0 && core_.world.options.coll_selector == CollectiveSelector::Smpi) {
    smpi_test(it);
    return;
  }
  bool done = it == requests_.end() || try_complete(it);
  core_.poll_cost(c.seconds, done, failed_tests_, core_.world.options.test_cost_s);
}

/// A test of unknown duration (an SMPI trace's) as smpirun's replay costs it, for the smpi selector's
/// compatibility: SMPI's Request::test sleeps smpi/test times a multiplier shared by every rank before it
/// tests, whether the test then succeeds or not; a success resets the multiplier to 1, a failure adds 1
/// (with smpi/grow-injected-times). A test of a request already complete costs nothing: the replay skips it.
void RequestTable::smpi_test(Table::iterator it)
{
  if (it == requests_.end())
    return;
  int& sleeps          = core_.world.smpi_test_sleeps;
  const double cost    = sleeps * core_.world.options.test_cost_s;
  if (cost > 0)
    core_.timed_comm([cost] { sg4::this_actor::sleep_for(cost); });
  if (try_complete(it))
    sleeps = 1;
  else if (core_.world.options.smpi.grow_injected_times)
    ++sleeps;
}

/// MPI_Testall (all or none), MPI_Testany (the first complete one), MPI_Testsome (every complete one)
/// over `requests`; the function name says which, Testsome's rule otherwise.
void RequestTable::test_many(const CallRecord& c)
{
  TestKind kind = test_kind(core_.function_name(c.function));
  bool done = false;
  if (kind == TestKind::All) {
    bool all = true;
    for (std::int64_t h : c.requests) {
      auto it = tested(h);
      all = all && (it == requests_.end() || core_.world.board.test(it->second));
    }
    if (all)
      for (std::int64_t h : c.requests)
        if (auto it = requests_.find(h); it != requests_.end())
          try_complete(it);
    done = all;
  } else {
    for (std::int64_t h : c.requests) {
      auto it = tested(h);
      if (it != requests_.end() && try_complete(it)) {
        done = true;
        if (kind == TestKind::Any)
          break;
      }
    }
  }
  core_.poll_cost(c.seconds, done, failed_tests_, core_.world.options.test_cost_s);
}

/// MPI_Cancel: an operation not matched yet is cancelled (a later wait returns at once); a matched one
/// completes normally. MPI_Request_free: the handle becomes MPI_REQUEST_NULL, the operation goes on.
void RequestTable::cancel_or_free(const CallRecord& c)
{
  std::string_view fn = core_.function_name(c.function);
  bool cancel = contains(fn, "Cancel", "cancel");
  auto it = requests_.find(c.request);
  if (it == requests_.end()) {
    if (inactive_.count(c.request) > 0 && cancel)
      return;  // cancelling a request already complete has no effect
    core_.fail(std::string(cancel ? "MPI_Cancel" : std::string(fn)) + " of request handle " +
               std::to_string(c.request) + " that no isend/irecv/nonblocking collective created" +
               (inactive_.count(c.request) > 0 ? " (it is null)" : ""));
  }
  if (cancel) {
    core_.world.board.cancel(it->second);
    return;
  }
  freed_.push_back(std::move(it->second));
  requests_.erase(it);
  inactive_.insert(c.request);
}

/// At MPI_Finalize (the end of the trace) MPI requires every request complete. The recording completed
/// them all, but a test that succeeded there may have run before the transfer ended in the simulation,
/// and freed requests were never waited for: the rank waits for all of them here, in handle order.
void RequestTable::settle_leftovers()
{
  std::vector<std::int64_t> handles;
  for (const auto& [h, r] : requests_)
    handles.push_back(h);
  std::sort(handles.begin(), handles.end());
  for (std::int64_t h : handles) {
    RequestPtr r = std::move(requests_[h]);
    requests_.erase(h);
    complete(r);
  }
  for (RequestPtr& r : freed_)
    complete(r);
  freed_.clear();
}

}  // namespace gridcast::emulator
