#include "rank_runner.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <optional>

namespace gridcast::emulator {

using models::CallRecord;
using models::Op;

namespace {

std::optional<CollectiveKind> collective_kind_of(Op op)
{
  switch (op) {
    case Op::Barrier: return CollectiveKind::Barrier;
    case Op::Bcast: return CollectiveKind::Bcast;
    case Op::Reduce: return CollectiveKind::Reduce;
    case Op::Allreduce: return CollectiveKind::Allreduce;
    case Op::Alltoall: return CollectiveKind::Alltoall;
    case Op::Alltoallv: return CollectiveKind::Alltoallv;
    case Op::Gather: return CollectiveKind::Gather;
    case Op::Gatherv: return CollectiveKind::Gatherv;
    case Op::Allgather: return CollectiveKind::Allgather;
    case Op::Allgatherv: return CollectiveKind::Allgatherv;
    case Op::Scatter: return CollectiveKind::Scatter;
    case Op::Scatterv: return CollectiveKind::Scatterv;
    case Op::ReduceScatter: return CollectiveKind::ReduceScatter;
    case Op::Scan: return CollectiveKind::Scan;
    case Op::Exscan: return CollectiveKind::Exscan;
    default: return std::nullopt;
  }
}

std::string describe(const Request& r)
{
  if (r.kind == Request::Kind::Local)
    return "nonblocking collective still running";
  std::string s = r.kind == Request::Kind::Send ? "send to rank " : "receive from rank ";
  s += r.peer == kAnySource ? std::string("any") : std::to_string(r.peer);
  s += " tag " + (r.tag == kAnyTag ? std::string("any") : std::to_string(r.tag));
  s += ", " + std::to_string(r.bytes) + " bytes";
  s += r.matched ? ", matched" : ", never matched";
  return s;
}

}  // namespace

RankRunner::RankRunner(World& world, int rank, models::CallStreamPtr stream, double recorded_speed)
    : core_(world, rank, std::move(stream)), recorded_speed_(recorded_speed), device_(core_),
      requests_(core_, device_), comms_(core_, requests_), p2p_(core_, comms_, device_, requests_),
      collectives_(core_, comms_, device_, requests_), creator_(core_, comms_, collectives_),
      fast_forward_(core_, recorded_speed), sampling_(core_)
{
}

void RankRunner::run()
{
  World& world = core_.world;
  models::CallStream& stream = *core_.stream;
  CallRecord call;
  for (;;) {
    if (world.steady) {
      // Fast-forward: only streams of a synthesized run say where the steady loop's iterations start.
      if (auto head = stream.loop_head();
          head && fast_forward_.at_head(*head, requests_.quiet(), collectives_.choices()))
        continue;  // skipped: the stream is at the head after the skipped span now
    }
    if (world.sampled) {
      // A sampled run: units the plan does not emulate are drained at their heads.
      if (auto head = stream.loop_head(); head && sampling_.at_head(*head, requests_.quiet()))
        continue;  // drained: the stream is at the next emulated head now
    }
    if (world.waits) {
      // The imbalance per iteration of the steady loop: the rank's compute at each of its heads.
      if (auto head = stream.loop_head())
        world.waits->iteration(core_.rank, *head, core_.stats.compute_s);
    }
    if (not stream.next(call))
      break;
    core_.current = {true, call.function, call.line, call.peer, call.tag};
    core_.partner_post_s = -1;
    double begin = sg4::Engine::get_clock();
    perform(call);
    double elapsed = sg4::Engine::get_clock() - begin;
    if (world.waits)
      note_waits(call, begin, begin + elapsed);
    ++core_.stats.calls;
    core_.functions.record(call.function, elapsed);
    if (world.timeline != nullptr)
      world.timeline->call(core_.rank, stream.functions().name(call.function), begin, elapsed);
  }
  core_.current.valid = false;
  finished_ = true;
  core_.stats.finish_s = sg4::Engine::get_clock();
}

BlockedRank RankRunner::blocked_report() const
{
  BlockedRank b;
  b.rank = core_.rank;
  b.file = core_.stream->source();
  if (not core_.current.valid) {
    b.function = "(start)";
    return b;
  }
  b.function = core_.function_name(core_.current.function);
  b.line = core_.current.line;
  b.peer = core_.current.peer;
  b.tag = core_.current.tag;
  b.detail = core_.waiting_on ? describe(*core_.waiting_on) : core_.blocked_detail;
  return b;
}

void RankRunner::perform(const CallRecord& c)
{
  if (c.op < Op::GpuKernel || c.op > Op::GpuFree)
    device_.gpu().note_recorded_s(c.seconds);  // the recorded time line, for kernels without device time
  switch (c.op) {
    case Op::Init:
      return;
    case Op::Finalize:
      return requests_.settle_leftovers();
    case Op::CommSize:
      // Local calls have no simulated effect, except MPI_Cancel and MPI_Request_free (they name a request).
      if (c.request != models::kNoRequest)
        return requests_.cancel_or_free(c);
      return;
    case Op::Probe:
      return p2p_.probe(c);
    case Op::Compute:
      return compute(c);
    case Op::Sleep: {
      double begin = sg4::Engine::get_clock();
      if (c.seconds > 0)
        sg4::this_actor::sleep_for(c.seconds);
      core_.stats.compute_s += sg4::Engine::get_clock() - begin;
      return;
    }
    case Op::Send:
    case Op::Ssend:
      return p2p_.send(c, c.op == Op::Ssend ? SendMode::Synchronous : SendMode::Standard);
    case Op::Isend:
    case Op::Issend:
      return p2p_.isend(c, c.op == Op::Issend ? SendMode::Synchronous : SendMode::Standard);
    case Op::Recv:
      return p2p_.recv(c);
    case Op::Irecv:
      return p2p_.irecv(c);
    case Op::Sendrecv:
      return p2p_.sendrecv(c);
    case Op::Wait:
      return requests_.wait(c.request, c);
    case Op::Waitall:
      for (std::int64_t h : c.requests)
        requests_.wait(h, c);
      return;
    case Op::Waitany:
      return requests_.wait_any(c);
    case Op::Test:
      return requests_.test(c);
    case Op::CommSplit:
    case Op::CommDup:
      return creator_.split(c);
    case Op::DynamicProcess:
      core_.fail(models::dynamic_process_refusal(core_.function_name(c.function)));
    case Op::GpuKernel:
    case Op::GpuMemcpy:
    case Op::GpuSync:
    case Op::GpuMalloc:
    case Op::GpuFree:
      return device_.perform(c);
    default:
      break;
  }
  if (auto kind = collective_kind_of(c.op))
    return collectives_.collective(*kind, c);
  throw InternalError("unhandled op " + std::string(models::op_name(c.op)));
}

void RankRunner::note_waits(const CallRecord& c, double begin_s, double end_s)
{
  WaitStateRecorder& waits = *core_.world.waits;
  const std::string& fn = core_.function_name(c.function);
  if (waits.logs_calls())
    waits.call(core_.rank, fn, begin_s, end_s);
  auto kind = collective_kind_of(c.op);
  if (not kind || c.request != models::kNoRequest) {  // nonblocking collectives are not classified
    if (core_.partner_post_s >= 0)
      waits.point_to_point(core_.rank, fn, begin_s, end_s, core_.partner_post_s, core_.partner_is_send,
                           core_.partner_rank);
    return;
  }
  WaitKind w = WaitKind::WaitAtNxN;
  int root   = -1;
  switch (*kind) {
    case CollectiveKind::Barrier: w = WaitKind::WaitAtBarrier; break;
    case CollectiveKind::Bcast:
    case CollectiveKind::Scatter:
    case CollectiveKind::Scatterv:
      w    = WaitKind::LateBroadcast;
      root = c.root;
      break;
    case CollectiveKind::Reduce:
    case CollectiveKind::Gather:
    case CollectiveKind::Gatherv:
      w    = WaitKind::EarlyReduce;
      root = c.root;
      break;
    case CollectiveKind::Scan:
    case CollectiveKind::Exscan: w = WaitKind::EarlyScan; break;
    default: break;
  }
  const Communicator& comm = comms_.resolve(c.comm);
  waits.collective(comm.id, coll_sequence_[comm.id]++, w, comm.size(), comm.rank_of(core_.rank), root, core_.rank, fn,
                   begin_s, end_s);
}

void RankRunner::compute(const CallRecord& c)
{
  if (not core_.world.options.smpi.simulate_computation) {
    // smpi/simulate-computation:no, as smpirun's replay: the computation between MPI calls takes no time
    // (the flops of reductions and the sleeps still do).
    fast_forward_.note_compute(0, 0);
    return;
  }
  double flops = c.flops;
  if (flops <= 0 && c.seconds > 0) {
    if (recorded_speed_ <= 0)
      core_.fail("compute call gives seconds but the trace names no recording host speed");
    flops = c.seconds * recorded_speed_;
  }
  double begin = sg4::Engine::get_clock();
  if (flops > 0)
    sg4::this_actor::execute(flops);
  const double spent = sg4::Engine::get_clock() - begin;
  core_.stats.compute_s += spent;
  fast_forward_.note_compute(spent, std::max(0.0, flops));
}

}  // namespace gridcast::emulator
