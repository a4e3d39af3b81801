// One rank's device buffers and NCCL (docs/guides/gpu.md): the GPU calls of its trace, the staging and pinning
// of MPI calls on device buffers, and NCCL collectives enqueued on its streams. Internal to the emulator.
#pragma once

#include "rank_core.hpp"

#include "gridcast/emulator/collectives.hpp"
#include "gridcast/emulator/gpu.hpp"
#include "gridcast/emulator/p2p.hpp"
#include "gridcast/models/call.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace gridcast::emulator {

class RankDevice {
public:
  explicit RankDevice(RankCore& core) : core_(core), gpu_(*core.world.gpus, core.rank) {}

  RankGpu& gpu() { return gpu_; }
  GpuMpiMode mpi_mode() const { return gpu_.mpi_mode(); }

  /// The error a GPU call raises: an InputError naming the record.
  GpuFail gpu_fail() const
  {
    return [this](const std::string& reason) { core_.fail(reason); };
  }

  /// NCCL calls: named ncclXxx, or on an NCCL communicator (the profiler numbers them from 65536).
  bool nccl(const models::CallRecord& c) const
  {
    return c.comm >= kFirstNcclComm || core_.function_name(c.function).rfind("nccl", 0) == 0;
  }

  /// True when a device buffer of this MPI call is staged through host memory (HostCopy, not NCCL).
  bool staged(const models::CallRecord& c) const
  {
    return c.memory == models::Memory::Device && not nccl(c) && gpu_.mpi_mode() == GpuMpiMode::HostCopy;
  }

  /// Runs a staging or pinning step, counted as communication time.
  template <class F>
  void staging(F&& step)
  {
    core_.timed_comm(std::forward<F>(step));
  }

  /// A gpu_* record (kernel, copy, synchronisation, allocation); the time the rank waits counts as compute.
  void perform(const models::CallRecord& c);

  /// For a send from a device buffer: stages or pins, and says where the bytes leave from and the mode
  /// (GPUDirect is rendezvous only, as Open MPI does; NCCL moves GPU to GPU).
  std::pair<sg4::Host*, SendMode> send_setup(const models::CallRecord& c, int dst, std::uint64_t bytes, SendMode mode);
  /// For a receive into a device buffer from `src` (world rank or kAnySource): pins under GPUDirect and
  /// says where the bytes land (nullptr: the rank's CPU host).
  sg4::Host* recv_setup(const models::CallRecord& c, int src, int tag, std::uint64_t bytes);
  /// GPUDirect pins the receive buffer of a sendrecv on device buffers too (not NCCL).
  void pin_recv(const models::CallRecord& c, int src)
  {
    if (c.memory == models::Memory::Device && not nccl(c))
      staging([&] { gpu_.before_device_recv(PinKey{1, src, c.recv_tag, c.comm, c.recv_bytes}, gpu_fail()); });
  }
  /// After a receive of `bytes` into a staged device buffer completed: HostCopy copies them back.
  void after_recv(std::uint64_t bytes)
  {
    staging([&] { gpu_.after_device_recv(bytes); });
  }
  /// A request completed: a nonblocking receive into a staged device buffer is copied back.
  void request_completed(std::int64_t handle)
  {
    staging([&] { gpu_.request_completed(handle); });
  }

  /// NCCL enqueues a collective on its stream and returns, like a kernel launch: the stream's actor (on
  /// the rank's GPU host) runs the algorithm GPU to GPU once the stream's earlier work is done, reduction
  /// work included; the rank goes on and meets the result at a synchronisation (docs/guides/gpu.md).
  void enqueue_nccl(const CollectiveAlgorithm& algo, CollectiveArgs args, const Communicator& comm,
                    const models::CallRecord& c);

  /// NCCL's algorithms expressed with gridcast's point-to-point ones; empty: the usual selection.
  static std::string nccl_algorithm(CollectiveKind kind, const std::string& family);

private:
  /// The GPU this rank drives; `what` (an NCCL operation) fails when its node has none.
  GpuDevice& nccl_device(const char* what);

  RankCore& core_;
  RankGpu gpu_;
};

}  // namespace gridcast::emulator
