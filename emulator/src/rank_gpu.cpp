#include "rank_gpu.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <memory>

namespace gridcast::emulator {

using models::CallRecord;

void RankDevice::perform(const CallRecord& c)
{
  double begin = sg4::Engine::get_clock();
  gpu_.perform(c, core_.function_name(c.function), gpu_fail());
  core_.stats.compute_s += sg4::Engine::get_clock() - begin;  // GPU work the rank waits for counts as compute
}

GpuDevice& RankDevice::nccl_device(const char* what)
{
  GpuDevice* d = gpu_.system().device_of(core_.rank);
  if (d == nullptr)
    core_.fail("an NCCL " + std::string(what) + " needs a GPU, and rank " + std::to_string(core_.rank) +
               "'s node has none");
  return *d;
}

std::pair<sg4::Host*, SendMode> RankDevice::send_setup(const CallRecord& c, int dst, std::uint64_t bytes, SendMode mode)
{
  if (c.memory != models::Memory::Device)
    return {nullptr, mode};
  if (nccl(c))
    return {nccl_device("send").host, mode};
  staging([&] { gpu_.before_device_send(bytes, PinKey{0, dst, c.tag, c.comm, bytes}, gpu_fail()); });
  sg4::Host* endpoint = gpu_.mpi_endpoint(gpu_fail());
  return {endpoint, endpoint != nullptr ? SendMode::Synchronous : mode};
}

sg4::Host* RankDevice::recv_setup(const CallRecord& c, int src, int tag, std::uint64_t bytes)
{
  if (c.memory != models::Memory::Device)
    return nullptr;
  if (nccl(c)) {
    sg4::Host* endpoint =
        gpu_.system().device_of(core_.rank) != nullptr ? gpu_.system().device_of(core_.rank)->host : nullptr;
    if (endpoint == nullptr)
      core_.fail("an NCCL receive needs a GPU, and rank " + std::to_string(core_.rank) + "'s node has none");
    return endpoint;
  }
  staging([&] { gpu_.before_device_recv(PinKey{1, src, tag, c.comm, bytes}, gpu_fail()); });
  return gpu_.mpi_endpoint(gpu_fail());
}

void RankDevice::enqueue_nccl(const CollectiveAlgorithm& algo, CollectiveArgs args, const Communicator& comm,
                              const CallRecord& c)
{
  GpuDevice& d = nccl_device("collective");
  if (c.seconds > 0)  // the host side of the call as recorded (the enqueue), as for a kernel launch
    staging([&] { sg4::this_actor::sleep_for(c.seconds); });
  auto own = std::make_shared<Communicator>(comm);
  World* world = &core_.world;
  int rank = core_.rank;
  sg4::Host* gpu_host = d.host;
  gpu_.enqueue(
      c.stream,
      [world, rank, own, algo, args = std::move(args), gpu_host]() {
        try {
          CollectiveContext ctx(world->board, *own, rank, [](double flops) {
            if (flops > 0)
              sg4::this_actor::execute(flops);
          });
          ctx.set_endpoint(gpu_host);
          ctx.set_timeline(world->timeline);
          algo(ctx, args);
        } catch (const simgrid::ForcefulKillException&) {
          throw;
        } catch (...) {
          world->abort_run(std::current_exception());
        }
      },
      gpu_fail());
}

std::string RankDevice::nccl_algorithm(CollectiveKind kind, const std::string& family)
{
  const bool ring = family == "ring";
  switch (kind) {
    case CollectiveKind::Allreduce: return ring ? "ring" : "reduce_bcast";
    case CollectiveKind::Allgather: return ring ? "ring" : "recursive_doubling";
    case CollectiveKind::ReduceScatter: return ring ? "pairwise" : "recursive_halving";
    case CollectiveKind::Bcast: return ring ? "scatter_allgather" : "binomial";
    case CollectiveKind::Reduce: return ring ? "rabenseifner" : "binomial";
    default: return {};
  }
}

}  // namespace gridcast::emulator
