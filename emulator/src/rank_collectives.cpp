#include "rank_collectives.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <memory>
#include <vector>

namespace gridcast::emulator {

using models::CallRecord;

CollectiveAlgorithm const* RankCollectives::choose(CollectiveKind kind, const CollectiveArgs& args,
                                                   const Communicator& comm, const CallRecord& c, std::string& name)
{
  World& world = core_.world;
  auto forced = world.options.forced_algorithms.find(kind);
  if (c.memory == models::Memory::Device && device_.nccl(c))
    name = RankDevice::nccl_algorithm(kind, device_.gpu().system().nccl_algorithm());
  if (not name.empty())
    ;  // NCCL's own algorithm
  else if (forced != world.options.forced_algorithms.end())
    name = forced->second;
  else if (c.request != models::kNoRequest)  // a nonblocking collective
    name = world.registry.select_nonblocking(kind, args, comm.size(), world.options.coll_selector);
  else
    name = world.registry.select(kind, args, comm.size(), world.options.coll_selector);
  const CollectiveAlgorithm* algo = world.registry.find(kind, name);
  if (algo == nullptr)
    throw InternalError("no collective algorithm " + name + " for " + std::string(collective_name(kind)));
  if (comm.rank_of(core_.rank) == 0) {
    world.collective_choices[std::string(collective_name(kind))][name] += 1;
    if (world.steady)
      ++choices_[{std::string(collective_name(kind)), name}];  // this rank's share, for fast-forward
  }
  return algo;
}

void RankCollectives::collective(CollectiveKind kind, const CallRecord& c)
{
  World& world = core_.world;
  RankStats& stats = core_.stats;
  const Communicator& comm = comms_.resolve(c.comm);
  CollectiveArgs args;
  args.bytes = c.bytes;
  args.recv_bytes = c.recv_bytes;
  args.root = c.root;
  args.flops = c.flops;
  args.counts = c.counts;
  args.recv_counts = c.recv_counts;
  if (args.root < 0 || args.root >= comm.size())
    core_.fail("root " + std::to_string(args.root) + " is outside the communicator (size " +
               std::to_string(comm.size()) + ")");
  auto check_counts = [&](const std::vector<std::uint64_t>& v, const char* what) {
    if (not v.empty() && static_cast<int>(v.size()) != comm.size())
      core_.fail(std::string(what) + " has " + std::to_string(v.size()) + " entries, the communicator has " +
                 std::to_string(comm.size()) + " ranks");
  };
  check_counts(args.counts, "counts");
  check_counts(args.recv_counts, "recv_counts");

  std::string name;
  const bool device = c.memory == models::Memory::Device;
  const CollectiveAlgorithm* algo = choose(kind, args, comm, c, name);
  if (c.request != models::kNoRequest)
    return start_nonblocking(kind, name, *algo, std::move(args), comm, c);
  if (device && device_.nccl(c))
    return device_.enqueue_nccl(*algo, std::move(args), comm, c);

  double begin = sg4::Engine::get_clock();
  double compute_before = stats.compute_s;
  CollectiveContext ctx(world.board, comm, core_.rank, [&stats](double flops) {
    double b = sg4::Engine::get_clock();
    if (flops > 0)
      sg4::this_actor::execute(flops);
    stats.compute_s += sg4::Engine::get_clock() - b;
  });
  ctx.set_timeline(world.timeline);
  if (not device) {  // host buffers only: a device buffer's copies are the GPU's
    ctx.set_local_copy_time(&world.options.local_copy_time);
    ctx.set_node_map(world.nodes.get());
  }
  core_.blocked_detail = "inside " + std::string(collective_name(kind)) + " (" + name + ")";
  // Device buffers: NCCL and GPUDirect move every message of the algorithm between GPU hosts; HostCopy
  // stages this rank's send data to the host before and its result back after (docs/guides/gpu.md).
  auto [d2h_bytes, h2d_bytes] = staged_bytes(kind, args, comm);
  RankGpu& gpu = device_.gpu();
  if (device && gpu.mpi_mode() == GpuMpiMode::GpuDirect) {
    // Pinning of the call's buffers, once per call (or once per buffer with the registration cache).
    PinKey key{2 + static_cast<int>(kind), c.root, 0, c.comm, c.bytes};
    device_.staging([&] { gpu.before_device_recv(key, device_.gpu_fail()); });
    world.board.set_endpoint_override(core_.rank, gpu.mpi_endpoint(device_.gpu_fail()));
  } else if (device_.staged(c) && d2h_bytes > 0) {
    device_.staging([&] { gpu.before_device_send(d2h_bytes, PinKey{}, device_.gpu_fail()); });  // HostCopy: no pinning
  }
  (*algo)(ctx, args);
  world.board.set_endpoint_override(core_.rank, nullptr);
  if (device_.staged(c) && h2d_bytes > 0)
    device_.after_recv(h2d_bytes);
  core_.blocked_detail.clear();
  double elapsed = sg4::Engine::get_clock() - begin;
  double computed = stats.compute_s - compute_before;
  stats.wait_s += ctx.partner_wait_s();
  stats.comm_s += std::max(0.0, elapsed - computed - ctx.partner_wait_s());
}

/// Bytes this rank's HostCopy staging moves: its send data to the host before the collective, its
/// result back to the device after.
std::pair<std::uint64_t, std::uint64_t> RankCollectives::staged_bytes(CollectiveKind kind, const CollectiveArgs& a,
                                                                      const Communicator& comm) const
{
  const std::uint64_t n = static_cast<std::uint64_t>(comm.size());
  const bool root = comm.rank_of(core_.rank) == a.root;
  const std::uint64_t recv = a.recv_bytes > 0 ? a.recv_bytes : a.bytes;
  auto sum = [](const std::vector<std::uint64_t>& v) {
    std::uint64_t t = 0;
    for (auto x : v)
      t += x;
    return t;
  };
  const int me = comm.rank_of(core_.rank);
  switch (kind) {
    case CollectiveKind::Barrier: return {0, 0};
    case CollectiveKind::Bcast: return root ? std::pair{a.bytes, std::uint64_t{0}} : std::pair{std::uint64_t{0}, a.bytes};
    case CollectiveKind::Reduce: return {a.bytes, root ? a.bytes : 0};
    case CollectiveKind::Allgather: return {a.bytes, recv * n};
    case CollectiveKind::Alltoall: return {a.bytes * n, recv * n};
    case CollectiveKind::Gather: return {a.bytes, root ? recv * n : 0};
    case CollectiveKind::Scatter: return {root ? a.bytes * n : 0, recv};
    case CollectiveKind::Alltoallv: return {sum(a.counts), sum(a.recv_counts)};
    case CollectiveKind::Gatherv: return {a.bytes, root ? sum(a.recv_counts) : 0};
    case CollectiveKind::Allgatherv: return {a.bytes, sum(a.recv_counts)};
    case CollectiveKind::Scatterv: return {root ? sum(a.counts) : 0, a.recv_bytes};
    case CollectiveKind::ReduceScatter:
      return {sum(a.recv_counts), me >= 0 && me < static_cast<int>(a.recv_counts.size()) ? a.recv_counts[me] : 0};
    default: return {a.bytes, a.bytes};  // allreduce, scan, exscan
  }
}

void RankCollectives::start_nonblocking(CollectiveKind kind, const std::string& /*name*/,
                                        const CollectiveAlgorithm& algo, CollectiveArgs args, const Communicator& comm,
                                        const CallRecord& c)
{
  World& world_ref = core_.world;
  std::uint64_t seq = nbc_seq_[comm.id]++;
  auto [slot, created] = world_ref.nbc_contexts.try_emplace({comm.id, seq});
  if (created)
    slot->second = {world_ref.next_nbc_context--, comm.size()};
  auto own = std::make_shared<Communicator>(comm);
  own->coll_context = slot->second.context;
  if (--slot->second.members_left == 0)
    world_ref.nbc_contexts.erase(slot);

  RequestPtr request = world_ref.board.post_local(core_.rank);
  requests_.remember(c, request);
  World* world = &world_ref;
  int rank = core_.rank;
  const auto* copy_time = c.memory == models::Memory::Device ? nullptr : &world_ref.options.local_copy_time;
  sg4::Actor::create("rank-" + std::to_string(rank) + "-i" + std::string(collective_name(kind)),
                     sg4::this_actor::get_host(),
                     [world, rank, own, algo, args = std::move(args), request, copy_time]() {
                       try {
                         CollectiveContext ctx(world->board, *own, rank, [](double flops) {
                           if (flops > 0)
                             sg4::this_actor::execute(flops);
                         });
                         ctx.set_local_copy_time(copy_time);
                         ctx.set_node_map(world->nodes.get());
                         ctx.set_timeline(world->timeline);
                         algo(ctx, args);
                         world->board.finish_local(request);
                         world->board.drain();  // this actor's eager sends must outlive it
                       } catch (const simgrid::ForcefulKillException&) {
                         throw;
                       } catch (...) {
                         world->abort_run(std::current_exception());
                       }
                     });
}

template <typename Exchange>
void RankCollectives::run_exchange(const Communicator& among, Exchange exchange)
{
  World& world = core_.world;
  CollectiveContext ctx(world.board, among, core_.rank, [](double) {});
  ctx.set_timeline(world.timeline);
  double begin = sg4::Engine::get_clock();
  exchange(ctx);
  core_.stats.wait_s += ctx.partner_wait_s();
  core_.stats.comm_s += sg4::Engine::get_clock() - begin - ctx.partner_wait_s();
}

void RankCollectives::creation_exchange(const Communicator& among)
{
  World& world = core_.world;
  CollectiveArgs args;
  args.bytes = 8;
  args.recv_bytes = 8;
  std::string name = world.registry.select(CollectiveKind::Allgather, args, among.size(), world.options.coll_selector);
  const CollectiveAlgorithm& algo = *world.registry.find(CollectiveKind::Allgather, name);
  run_exchange(among, [&](CollectiveContext& ctx) { algo(ctx, args); });
}

void RankCollectives::smpi_split_exchange(const Communicator& parent,
                                          const std::function<std::vector<std::vector<int>>()>& groups,
                                          bool color_defined)
{
  World& world = core_.world;
  CollectiveArgs args;  // SMPI's gather__default of 2 ints to rank 0
  args.bytes = 8;
  args.recv_bytes = 8;
  args.root = 0;
  std::string name = world.registry.select(CollectiveKind::Gather, args, parent.size(), CollectiveSelector::Smpi);
  const CollectiveAlgorithm& gather = *world.registry.find(CollectiveKind::Gather, name);
  constexpr int kGroupTag = 1;  // SMPI's system tag for the groups, apart from the gather's messages
  run_exchange(parent, [&](CollectiveContext& ctx) {
    gather(ctx, args);
    if (ctx.rank() == 0) {
      for (const auto& color : groups()) {
        std::vector<RequestPtr> sends;
        for (int r : color)
          if (r != 0)
            sends.push_back(ctx.isend(r, 8, kGroupTag));
        ctx.wait_all(sends);
      }
    } else if (color_defined) {
      ctx.recv(0, 8, kGroupTag);
    }
  });
}

void RankCollectives::smpi_creation_bcast(const Communicator& created)
{
  World& world = core_.world;
  CollectiveArgs args;
  args.bytes = 4;
  args.root = 0;
  std::string name = world.registry.select(CollectiveKind::Bcast, args, created.size(), CollectiveSelector::Smpi);
  const CollectiveAlgorithm& bcast = *world.registry.find(CollectiveKind::Bcast, name);
  run_exchange(created, [&](CollectiveContext& ctx) { bcast(ctx, args); });
}

}  // namespace gridcast::emulator
