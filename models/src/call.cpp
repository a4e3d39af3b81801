// The call record, op names and the function table.
#include "gridcast/models/call.hpp"

#include "gridcast/foundation/errors.hpp"

#include <array>
#include <utility>

namespace gridcast::models {

namespace {
// Indexed by Op; must follow the enum order (checked below).
constexpr std::array<std::string_view, kOpCount> kOpNames = {
    "init",       "finalize",   "compute",    "sleep",         "send",       "ssend",    "isend",     "issend",
    "recv",       "irecv",      "sendrecv",   "wait",          "waitall",    "waitany",  "test",      "barrier",
    "bcast",      "reduce",     "allreduce",  "alltoall",      "alltoallv",  "gather",   "gatherv",   "allgather",
    "allgatherv", "scatter",    "scatterv",   "reducescatter", "scan",       "exscan",   "comm_size", "comm_split",
    "comm_dup",   "gpu_kernel", "gpu_memcpy", "gpu_sync",      "gpu_malloc", "gpu_free",
    "probe",      "dynamic_process",
};
static_assert(kOpNames[static_cast<int>(Op::Sendrecv)] == "sendrecv");
static_assert(kOpNames[static_cast<int>(Op::ReduceScatter)] == "reducescatter");
static_assert(kOpNames[static_cast<int>(Op::CommDup)] == "comm_dup");
static_assert(kOpNames[static_cast<int>(Op::GpuFree)] == "gpu_free");
static_assert(kOpNames[static_cast<int>(Op::Probe)] == "probe");
static_assert(kOpNames[static_cast<int>(Op::DynamicProcess)] == "dynamic_process");
}  // namespace

std::string_view op_name(Op op)
{
  auto i = static_cast<std::size_t>(op);
  if (i >= kOpNames.size())
    throw InternalError("op_name: invalid Op value " + std::to_string(i));
  return kOpNames[i];
}

std::optional<Op> op_from_name(std::string_view name)
{
  // 40 short names: a linear scan is as fast as a hash and needs no static map.
  for (std::size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name)
      return static_cast<Op>(i);
  return std::nullopt;
}

std::string dynamic_process_refusal(std::string_view function)
{
  const bool spawn = function.substr(0, 14) == "MPI_Comm_spawn";
  return "dynamic process management (" + std::string(function) + ") cannot be replayed: the " +
         (spawn ? "spawned processes" : "processes it connects to") + " are not in the profile";
}

bool is_point_to_point(Op op)
{
  switch (op) {
    case Op::Send:
    case Op::Ssend:
    case Op::Isend:
    case Op::Issend:
    case Op::Recv:
    case Op::Irecv:
    case Op::Sendrecv:
    case Op::Wait:
    case Op::Waitall:
    case Op::Waitany:
    case Op::Test:
    case Op::Probe:
      return true;
    default:
      return false;
  }
}

bool is_collective(Op op)
{
  switch (op) {
    case Op::Barrier:
    case Op::Bcast:
    case Op::Reduce:
    case Op::Allreduce:
    case Op::Alltoall:
    case Op::Alltoallv:
    case Op::Gather:
    case Op::Gatherv:
    case Op::Allgather:
    case Op::Allgatherv:
    case Op::Scatter:
    case Op::Scatterv:
    case Op::ReduceScatter:
    case Op::Scan:
    case Op::Exscan:
    case Op::CommSplit:
    case Op::CommDup:
      return true;
    default:
      return false;
  }
}

void CallRecord::clear()
{
  // Keep the vectors' storage: move them out, reset everything, move them back empty.
  auto keep_requests    = std::move(requests);
  auto keep_counts      = std::move(counts);
  auto keep_recv_counts = std::move(recv_counts);
  *this                 = CallRecord{};
  requests              = std::move(keep_requests);
  counts                = std::move(keep_counts);
  recv_counts           = std::move(keep_recv_counts);
  requests.clear();
  counts.clear();
  recv_counts.clear();
}

bool operator==(const CallRecord& a, const CallRecord& b)
{
  // `line` says where a record was read, not what it is: it is not compared.
  return a.op == b.op && a.function == b.function && a.seconds == b.seconds && a.flops == b.flops && a.peer == b.peer &&
         a.tag == b.tag && a.bytes == b.bytes && a.src == b.src && a.recv_tag == b.recv_tag &&
         a.recv_bytes == b.recv_bytes && a.comm == b.comm && a.root == b.root && a.request == b.request &&
         a.requests == b.requests && a.counts == b.counts && a.recv_counts == b.recv_counts && a.color == b.color &&
         a.key == b.key && a.new_comm == b.new_comm && a.stream == b.stream && a.device == b.device &&
         a.memory == b.memory && a.device_seconds == b.device_seconds && a.library == b.library;
}

std::uint32_t FunctionTable::intern(std::string_view name)
{
  auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<std::uint32_t>(names_.size()));
  if (inserted)
    names_.emplace_back(name);
  return it->second;
}

std::optional<std::uint32_t> FunctionTable::find(std::string_view name) const
{
  auto it = ids_.find(std::string(name));
  if (it == ids_.end())
    return std::nullopt;
  return it->second;
}

const std::string& FunctionTable::name(std::uint32_t id) const
{
  if (id >= names_.size())
    throw InternalError("FunctionTable::name: id " + std::to_string(id) + " out of range (table has " +
                        std::to_string(names_.size()) + " names)");
  return names_[id];
}

}  // namespace gridcast::models
