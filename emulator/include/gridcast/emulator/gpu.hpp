// GPUs in the emulator (docs/guides/gpu.md).
//
// Every GPU is a SimGrid host of the platform (`node-<i>.gpu-<j>`, property gridcast:kind=gpu). A rank
// drives the GPU at its local index on its node (ranks placed on one CPU host are numbered 0, 1, ... in
// rank order; GPU = local index mod the node's GPU count), as `cudaSetDevice(local_rank)` does.
//
// - A stream is a daemon actor on the GPU host that runs its operations in order: a kernel is an
//   execution of `flops` on the GPU host (so concurrent kernels of several streams share the GPU host's
//   cores exactly as SimGrid's CPU model shares a host: the core count is the per-GPU concurrency), a
//   copy is a SimGrid communication between the CPU host and the GPU host (or two GPU hosts) along the
//   platform's route, so copies contend on the shared PCIe root link and overlap kernels as the fluid
//   model decides.
// - The rank's own actor only submits: a launch or an async copy returns at once (after the runtime's
//   queueing overhead); a synchronous copy, a stream/device synchronisation or an event synchronisation
//   blocks the rank until the stream has drained up to that point.
// - MPI calls whose buffer is on the device (memory: device) are staged through host memory (HostCopy)
//   or read and written by the NIC straight from GPU memory (GPUDirect), per `--gpu-mpi`.
#pragma once

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mutex.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gridcast::models {
struct CallRecord;
}

namespace gridcast::emulator {

namespace sg4 = simgrid::s4u;

/// How MPI moves a buffer that lives in GPU memory.
enum class GpuMpiMode : std::uint8_t {
  HostCopy,   ///< device-to-host copy, MPI transfer between CPU hosts, host-to-device copy
  GpuDirect,  ///< the NIC reads/writes GPU memory: transfer between GPU hosts, rendezvous only, pinning cost
};

/// Runtime costs the GPU hardware model does not produce by itself. Defaults: Stanisic et al. 2014, Table 2 (runtime
/// operations) and Khetawat et al., Table I (HostCopy staging, GPUDirect pinning).
struct GpuCosts {
  double malloc_s = 175e-6;                      ///< one cudaMalloc
  double free_s = 125e-6;                        ///< one cudaFree
  double host_alloc_s_per_byte = 650e-6 / 1e6;   ///< cudaHostAlloc: 650 us per MB pinned
  double queue_s = 10e-6;                        ///< submitting one copy to the transfer queue
  double staging_latency_s = 2000e-9;            ///< HostCopy: fixed cost of one staging cudaMemcpy
  double staging_s_per_byte = 0.07e-9;           ///< HostCopy: cost per byte of one staging cudaMemcpy
  double pin_s = 4000e-9;                        ///< GPUDirect: registering (pinning) one GPU buffer with the NIC
};

/// When GPUDirect pays `pin_s`. Real CUDA-aware MPIs (Open MPI/UCX rcache, MVAPICH2) keep a registration
/// cache: a buffer is registered with the NIC the first time it is used and stays registered until it is
/// freed, so an application that reuses its halo buffers pays the registration once per buffer.
enum class PinPolicy : std::uint8_t {
  Cache,  ///< once per buffer (default); a device cudaFree empties the rank's cache
  Call,   ///< on every MPI call and side (no registration cache)
};

/// A device buffer as far as a trace can tell: records carry no addresses, so a buffer is identified by
/// how the application uses it. A halo exchange reuses one buffer per (direction, partner, tag, size);
/// a collective one per (operation, communicator, root, size).
struct PinKey {
  int use = 0;                  ///< 0 send, 1 receive, 2 + CollectiveKind for a collective
  std::int32_t peer = -1;       ///< world rank of the partner (point-to-point), root (rooted collectives)
  std::int32_t tag = 0;
  std::int32_t comm = 0;        ///< communicator handle
  std::uint64_t bytes = 0;
  auto operator<=>(const PinKey&) const = default;
};

/// Where each figure of GpuCosts came from: "default", "platform" or "cfg".
struct GpuCostSources {
  std::map<std::string, std::string> source;
};

/// A kernel's device time from the GPU memory-system model (--gpu-model cache, docs/guides/gpu.md).
struct KernelPrice {
  double target_s = 0;  ///< the model's time of one launch on the platform's GPU (seconds)
  /// A launch measured on the recorded GPU (its device_seconds): the model calibrated on that duration,
  /// then its time on the platform's GPU. Empty: the recorded GPU is not described, target_s stands.
  std::function<double(double measured_s)> from_measured;
};
/// Looks a launch's function (its kernel's name) up; nullopt: no price, the recorded time stands.
using KernelPricer = std::function<std::optional<KernelPrice>(const std::string& function)>;

struct GpuOptions {
  GpuMpiMode mpi = GpuMpiMode::HostCopy;
  /// "recorded" (kernel times as the trace gives them) or "cache" (priced by `kernel_price`).
  std::string kernel_model = "recorded";
  std::string kernel_model_gpu;  ///< cache: the platform GPU's data sheet name, for reports
  KernelPricer kernel_price;
  GpuCosts costs;
  std::map<std::string, bool> set_by_cfg;  ///< cost keys given with --cfg (they win over the platform)
  std::string nccl_algorithm = "ring";     ///< "ring" or "tree"
  PinPolicy pin_policy = PinPolicy::Cache; ///< gridcast/gpu/pin-policy
};

/// The gridcast/gpu/... keys of --cfg with their help text.
const std::vector<std::pair<std::string, std::string>>& gpu_cfg_keys();
/// Applies a gridcast/gpu/... key; returns false when `name` is not one of them.
bool apply_gpu_cfg(GpuOptions& options, const std::string& name, const std::string& value);
/// Parses `hostcopy` or `gpudirect` (InputError naming the option otherwise).
GpuMpiMode parse_gpu_mpi_mode(const std::string& text, const std::string& option);
std::string gpu_mpi_mode_name(GpuMpiMode mode);

/// The error a GPU call raises: the RankGpu's caller turns it into an InputError naming the call.
using GpuFail = std::function<void(const std::string&)>;

/// One GPU of the platform, shared by the ranks that drive it.
struct GpuDevice {
  sg4::Host* host = nullptr;
  int node = 0;
  int index = 0;                 ///< gridcast:gpu
  std::uint64_t capacity_bytes = 0;  ///< gridcast:memory-bytes; 0: not tracked
  std::uint64_t used_bytes = 0;
};

/// GPU state of one run: the devices, which rank drives which, the effective costs.
class GpuSystem {
public:
  /// `rank_hosts`: the CPU host of each rank. Reads GPU hosts and cost properties from the loaded
  /// platform; the platform file is named in errors.
  GpuSystem(const sg4::Engine& engine, const std::vector<sg4::Host*>& rank_hosts, const GpuOptions& options,
            const std::filesystem::path& platform_file);

  /// The device rank `rank` drives; nullptr when its node has no GPU.
  GpuDevice* device_of(int rank) { return rank_device_[rank]; }
  /// Whether the platform has any GPU (else no message can leave from or land on a GPU host).
  bool has_devices() const { return not devices_.empty(); }
  /// GPU `index` of the node of rank `rank`'s host; nullptr when absent.
  GpuDevice* node_device(int rank, int index);
  sg4::Host* cpu_host(int rank) const { return rank_hosts_[rank]; }

  const GpuCosts& costs() const { return costs_; }
  const std::map<std::string, std::string>& cost_sources() const { return cost_sources_; }
  /// Every cost as (cfg key, seconds, source: "default", "platform" or "cfg"), for prediction.json.
  std::map<std::string, std::pair<double, std::string>> cost_report() const;
  GpuMpiMode mpi_mode() const { return options_.mpi; }
  const std::string& nccl_algorithm() const { return options_.nccl_algorithm; }
  /// --gpu-model cache: the price of a launch of `function`, looked up once per name; counts the launch
  /// as priced or not.
  std::optional<KernelPrice> kernel_price(const std::string& function);
  /// Launches priced by the memory-system model, and the launches of each kernel that had no price.
  std::uint64_t priced_launches() const { return priced_launches_; }
  const std::map<std::string, std::uint64_t>& unpriced_kernels() const { return unpriced_; }
  PinPolicy pin_policy() const { return options_.pin_policy; }

private:
  std::vector<sg4::Host*> rank_hosts_;
  std::vector<GpuDevice*> rank_device_;
  std::map<int, std::vector<GpuDevice*>> node_devices_;  ///< node -> devices by index
  std::deque<GpuDevice> devices_;
  GpuOptions options_;
  GpuCosts costs_;
  std::map<std::string, std::string> cost_sources_;
  std::map<std::string, std::optional<KernelPrice>> prices_;  ///< by function name, looked up once
  std::uint64_t priced_launches_ = 0;
  std::map<std::string, std::uint64_t> unpriced_;
};

/// The GPU side of one rank: its streams, events and allocations.
class RankGpu {
public:
  RankGpu(GpuSystem& system, int rank);
  ~RankGpu();
  RankGpu(const RankGpu&) = delete;
  RankGpu& operator=(const RankGpu&) = delete;

  /// Performs a gpu_* call named `function` (the application's function: a name ending in `Async` makes a
  /// copy asynchronous; `cudaEventRecord` records an event). Bad input calls `fail`, which must throw.
  void perform(const models::CallRecord& c, const std::string& function, const GpuFail& fail);

  /// Queues `task` on stream `stream` (-1: stream 0) after its earlier work and returns at once: the
  /// stream's actor (on the GPU host) runs it in order. NCCL collectives use it, as NCCL enqueues them.
  void enqueue(int stream, std::function<void()> task, const GpuFail& fail);

  // --- MPI with device buffers (records with memory: device) ---
  /// Before the data of a device-buffer send leaves: HostCopy stages it to the host, GPUDirect pins
  /// the buffer `key` (once per buffer under PinPolicy::Cache).
  void before_device_send(std::uint64_t bytes, const PinKey& key, const GpuFail& fail);
  /// Before a device-buffer receive is posted: GPUDirect pins `key` (HostCopy has nothing to do yet).
  void before_device_recv(const PinKey& key, const GpuFail& fail);
  /// Registrations this rank paid for (GPUDirect), and the uses a registration cache answered.
  std::uint64_t pins() const { return pins_; }
  std::uint64_t pin_hits() const { return pin_hits_; }
  /// After a device-buffer receive completed: HostCopy stages the data back to the device.
  void after_device_recv(std::uint64_t bytes);
  /// The host the NIC reads or writes for a device buffer: the GPU host under GPUDirect, else nullptr
  /// (the rank's CPU host).
  sg4::Host* mpi_endpoint(const GpuFail& fail);
  /// Remembers a nonblocking device-buffer receive, to stage it back when it completes.
  void note_device_irecv(std::int64_t request, std::uint64_t bytes) { device_irecvs_[request] = bytes; }
  /// A request completed: stages it back when it was a device-buffer receive.
  void request_completed(std::int64_t request);
  GpuMpiMode mpi_mode() const { return system_.mpi_mode(); }
  GpuSystem& system() { return system_; }

  /// Seconds this rank spent in GPU calls and staging (blocked or paying runtime costs).
  double gpu_s() const { return gpu_s_; }

  /// Advances the recorded host clock by a non-GPU record's measured `seconds` (for the device time of
  /// recorded kernels, see resolve_kernels).
  void note_recorded_s(double seconds)
  {
    if (seconds > 0)
      recorded_s_ += seconds;
  }

private:
  struct Stream;
  struct PendingKernel;
  Stream& stream(int id, const GpuFail& fail);
  /// A synchronisation that waits on `s` gives its recorded kernels without device time their time.
  void resolve_kernels(Stream& s);
  void resolve_kernels(Stream& s, std::set<Stream*>& seen);
  GpuDevice& device(const GpuFail& fail);
  void sleep(double seconds);
  void wait_stream(Stream& s, std::uint64_t target);
  void memcpy(const models::CallRecord& c, const GpuFail& fail);
  void sync(const models::CallRecord& c, const GpuFail& fail);
  void malloc(const models::CallRecord& c, const GpuFail& fail);
  void free(const models::CallRecord& c, const GpuFail& fail);
  void pin(const PinKey& key, const GpuFail& fail);

  GpuSystem& system_;
  int rank_;
  std::map<int, std::unique_ptr<Stream>> streams_;
  struct EventMark {
    Stream* stream = nullptr;
    std::uint64_t target = 0;
  };
  std::map<std::int64_t, EventMark> events_;
  std::map<std::int64_t, std::uint64_t> device_irecvs_;
  std::set<PinKey> registered_;        ///< GPUDirect registration cache (PinPolicy::Cache)
  std::uint64_t pins_ = 0;
  std::uint64_t pin_hits_ = 0;
  std::uint64_t allocated_bytes_ = 0;  ///< device memory this rank holds
  std::string function_;      ///< the call in progress (for errors)
  bool async_ = false;        ///< the call in progress is an ...Async one
  bool event_record_ = false; ///< the call in progress is cudaEventRecord
  bool stream_wait_event_ = false;  ///< the call in progress is cudaStreamWaitEvent
  double sync_seconds_ = -1;  ///< the call in progress's measured seconds (a synchronisation's blocked time)
  double recorded_s_ = 0;     ///< the rank's host clock as recorded: sum of its records' measured seconds
  double gpu_s_ = 0;
};

}  // namespace gridcast::emulator
