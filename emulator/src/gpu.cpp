#include "gridcast/emulator/gpu.hpp"

#include "gridcast/models/call.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/platform/placement.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>

namespace gridcast::emulator {

using models::CallRecord;
using models::Memory;
using models::Op;

namespace {

/// The cost keys: --cfg name, root-zone property name, member.
struct CostKey {
  const char* cfg;
  const char* property;
  double GpuCosts::*member;
  const char* help;
};

const std::vector<CostKey>& cost_keys()
{
  static const std::vector<CostKey> keys = {
      {"gridcast/gpu/malloc-cost", "gridcast:gpu-malloc-s", &GpuCosts::malloc_s,
       "seconds of one cudaMalloc (default 175e-6, Stanisic et al. 2014, Table 2)"},
      {"gridcast/gpu/free-cost", "gridcast:gpu-free-s", &GpuCosts::free_s,
       "seconds of one cudaFree (default 125e-6, Stanisic et al. 2014, Table 2)"},
      {"gridcast/gpu/host-alloc-cost", "gridcast:gpu-host-alloc-s-per-byte", &GpuCosts::host_alloc_s_per_byte,
       "seconds per byte of cudaHostAlloc (default 6.5e-10: 650 us/MB, Stanisic et al. 2014, Table 2)"},
      {"gridcast/gpu/queue-cost", "gridcast:gpu-queue-s", &GpuCosts::queue_s,
       "seconds the rank spends submitting one copy to the transfer queue (default 10e-6, Stanisic et al. 2014, Table 2)"},
      {"gridcast/gpu/staging-latency", "gridcast:gpu-staging-latency-s", &GpuCosts::staging_latency_s,
       "HostCopy: fixed seconds of one staging cudaMemcpy (default 2e-6, Khetawat et al., Table I)"},
      {"gridcast/gpu/staging-cost", "gridcast:gpu-staging-s-per-byte", &GpuCosts::staging_s_per_byte,
       "HostCopy: seconds per byte of one staging cudaMemcpy (default 7e-11, Khetawat et al., Table I)"},
      {"gridcast/gpu/pin-cost", "gridcast:gpu-pin-s", &GpuCosts::pin_s,
       "GPUDirect: seconds to register (pin) one GPU buffer with the NIC (default 4e-6, Khetawat et al., Table I); "
       "paid once per buffer or per call, see gridcast/gpu/pin-policy"},
  };
  return keys;
}

double parse_seconds(const std::string& text, const std::string& file, const std::string& key)
{
  double v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || not std::isfinite(v) || v < 0)
    throw InputError({file, 0, key, -1}, "expected a number of seconds >= 0, got \"" + text + "\"");
  return v;
}

int int_property(const sg4::Host* h, const char* name, const std::string& file)
{
  const char* v = h->get_property(name);
  if (v == nullptr)
    throw InputError({file, 0, name, -1}, "GPU host " + h->get_name() + " has no property " + name);
  std::string text = v;
  int out = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || out < 0)
    throw InputError({file, 0, name, -1}, "host " + h->get_name() + ": expected an integer >= 0, got \"" + text + "\"");
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix)
{
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& gpu_cfg_keys()
{
  static const std::vector<std::pair<std::string, std::string>> keys = [] {
    std::vector<std::pair<std::string, std::string>> k;
    for (const auto& c : cost_keys())
      k.emplace_back(c.cfg, c.help);
    k.emplace_back("gridcast/gpu/nccl-algorithm",
                   "NCCL collectives: ring (ring allreduce/allgather/reduce-scatter, pipelined broadcast) or tree "
                   "(reduce+broadcast trees); default ring");
    k.emplace_back("gridcast/gpu/pin-policy",
                   "GPUDirect pinning: cache (default: a buffer is registered once and kept until a device cudaFree, "
                   "as the registration caches of CUDA-aware MPIs do) or call (pinned again on every MPI call and "
                   "side)");
    return k;
  }();
  return keys;
}

bool apply_gpu_cfg(GpuOptions& options, const std::string& name, const std::string& value)
{
  for (const auto& c : cost_keys()) {
    if (name == c.cfg) {
      options.costs.*c.member = parse_seconds(value, "--cfg", name);
      options.set_by_cfg[c.cfg] = true;
      return true;
    }
  }
  if (name == "gridcast/gpu/nccl-algorithm") {
    if (value != "ring" && value != "tree")
      throw InputError({"--cfg", 0, name, -1}, "expected ring or tree, got '" + value + "'");
    options.nccl_algorithm = value;
    return true;
  }
  if (name == "gridcast/gpu/pin-policy") {
    if (value != "cache" && value != "call")
      throw InputError({"--cfg", 0, name, -1}, "expected cache or call, got '" + value + "'");
    options.pin_policy = value == "cache" ? PinPolicy::Cache : PinPolicy::Call;
    return true;
  }
  return false;
}

GpuMpiMode parse_gpu_mpi_mode(const std::string& text, const std::string& option)
{
  if (text == "hostcopy")
    return GpuMpiMode::HostCopy;
  if (text == "gpudirect")
    return GpuMpiMode::GpuDirect;
  throw InputError({option, 0, {}, -1}, "expected hostcopy or gpudirect, got '" + text + "'");
}

std::string gpu_mpi_mode_name(GpuMpiMode mode)
{
  return mode == GpuMpiMode::HostCopy ? "hostcopy" : "gpudirect";
}

GpuSystem::GpuSystem(const sg4::Engine& engine, const std::vector<sg4::Host*>& rank_hosts, const GpuOptions& options,
                     const std::filesystem::path& platform_file)
    : rank_hosts_(rank_hosts), rank_device_(rank_hosts.size(), nullptr), options_(options), costs_(options.costs)
{
  const std::string file = platform_file.string();
  // Costs: --cfg wins, then the platform's root-zone calibration properties, then the defaults.
  const sg4::NetZone* root = engine.get_netzone_root();
  for (const auto& c : cost_keys()) {
    if (options.set_by_cfg.count(c.cfg) > 0) {
      cost_sources_[c.cfg] = "cfg";
    } else if (const char* v = root->get_property(c.property)) {
      costs_.*c.member = parse_seconds(v, file, c.property);
      cost_sources_[c.cfg] = "platform";
    } else {
      cost_sources_[c.cfg] = "default";
    }
  }

  for (sg4::Host* h : engine.get_all_hosts()) {
    const char* kind = h->get_property("gridcast:kind");
    if (kind == nullptr || std::string(kind) != "gpu")
      continue;
    GpuDevice d;
    d.host = h;
    d.node = int_property(h, "gridcast:node", file);
    d.index = int_property(h, "gridcast:gpu", file);
    if (const char* m = h->get_property("gridcast:memory-bytes")) {
      std::string text = m;
      auto r = std::from_chars(text.data(), text.data() + text.size(), d.capacity_bytes);
      if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
        throw InputError({file, 0, "gridcast:memory-bytes", -1},
                         "host " + h->get_name() + ": expected a byte count, got \"" + text + "\"");
    }
    devices_.push_back(d);
  }
  for (GpuDevice& d : devices_)
    node_devices_[d.node].push_back(&d);
  for (auto& [node, devs] : node_devices_) {
    std::sort(devs.begin(), devs.end(), [](const GpuDevice* a, const GpuDevice* b) { return a->index < b->index; });
    for (std::size_t i = 0; i < devs.size(); ++i)
      if (devs[i]->index != static_cast<int>(i))
        throw InputError({file, 0, "gridcast:gpu", -1}, "node " + std::to_string(node) + ": GPU indices are not 0.." +
                                                            std::to_string(devs.size() - 1));
  }

  // Local index of each rank on its CPU host, in rank order: rank i drives GPU (local index mod count).
  std::map<const sg4::Host*, int> seen;
  for (std::size_t r = 0; r < rank_hosts_.size(); ++r) {
    int local = seen[rank_hosts_[r]]++;
    const char* node = rank_hosts_[r]->get_property("gridcast:node");
    if (node == nullptr)
      continue;  // a hand-written platform without GPU properties: GPU calls will fail naming the host
    int n = std::atoi(node);
    auto it = node_devices_.find(n);
    if (it == node_devices_.end() || it->second.empty())
      continue;
    rank_device_[r] = it->second[static_cast<std::size_t>(local) % it->second.size()];
  }
}

std::map<std::string, std::pair<double, std::string>> GpuSystem::cost_report() const
{
  std::map<std::string, std::pair<double, std::string>> out;
  for (const auto& c : cost_keys())
    out[c.cfg] = {costs_.*c.member, cost_sources_.at(c.cfg)};
  return out;
}

GpuDevice* GpuSystem::node_device(int rank, int index)
{
  GpuDevice* own = rank_device_[rank];
  if (own == nullptr)
    return nullptr;
  auto& devs = node_devices_[own->node];
  if (index < 0 || index >= static_cast<int>(devs.size()))
    return nullptr;
  return devs[index];
}

/// The device time of a recorded kernel launch, known only at the next synchronisation.
struct RankGpu::PendingKernel {
  bool resolved = false;
  double seconds = 0;
};

/// One CUDA stream: a daemon actor on the GPU host runs the queued work in order.
struct RankGpu::Stream {
  struct Work {
    bool kernel = true;
    double flops = 0;              ///< kernel
    sg4::Host* src = nullptr;      ///< copy
    sg4::Host* dst = nullptr;
    std::uint64_t bytes = 0;
    std::function<void()> task;    ///< anything else run in stream order (an NCCL collective)
    /// A recorded kernel with no device time: the stream waits until a synchronisation tells it
    /// (resolve_kernels), then runs `pending->seconds` on the GPU.
    std::shared_ptr<PendingKernel> pending;
  };
  std::deque<Work> queue;
  std::vector<std::shared_ptr<PendingKernel>> unresolved;  ///< launches without device time, oldest first
  double last_launch_recorded_s = 0;  ///< recorded host clock at the end of the last such launch
  std::set<Stream*> waits_for;        ///< streams whose events this one waited for (cudaStreamWaitEvent)
  sg4::SemaphorePtr pending = sg4::Semaphore::create(0);  ///< one token per queued work
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr progressed = sg4::ConditionVariable::create();
  std::uint64_t submitted = 0;
  std::uint64_t completed = 0;
};

RankGpu::RankGpu(GpuSystem& system, int rank) : system_(system), rank_(rank) {}
RankGpu::~RankGpu() = default;

GpuDevice& RankGpu::device(const GpuFail& fail)
{
  GpuDevice* d = system_.device_of(rank_);
  if (d == nullptr)
    fail("rank " + std::to_string(rank_) + "'s host " + system_.cpu_host(rank_)->get_name() +
         " has no GPU on this platform (no host with gridcast:kind=gpu and its gridcast:node)");
  return *d;
}

RankGpu::Stream& RankGpu::stream(int id, const GpuFail& fail)
{
  if (id < 0)
    id = 0;  // the default stream
  auto it = streams_.find(id);
  if (it != streams_.end())
    return *it->second;
  GpuDevice& dev = device(fail);
  auto s = std::make_unique<Stream>();
  Stream* raw = s.get();
  // The worker runs on the GPU host, so a kernel's execute() uses the GPU's speed and cores.
  sg4::ActorPtr worker = sg4::Actor::create(
      "rank-" + std::to_string(rank_) + ".stream-" + std::to_string(id), dev.host, [raw]() {
        for (;;) {
          raw->pending->acquire();
          Stream::Work w = std::move(raw->queue.front());
          raw->queue.pop_front();
          if (w.pending) {
            // The kernel starts now; its length is known at the host's next synchronisation. Until
            // then the stream is taken by it (its GPU share while unknown is not modelled); after, it
            // runs what is left of its time.
            double start = sg4::Engine::get_clock();
            {
              std::unique_lock lock(*raw->mutex);
              while (not w.pending->resolved)
                raw->progressed->wait(lock);
            }
            double left = std::max(0.0, w.pending->seconds - (sg4::Engine::get_clock() - start));
            double flops = left * sg4::this_actor::get_host()->get_speed();
            if (flops > 0)
              sg4::this_actor::execute(flops);
          } else if (w.task) {
            w.task();
          } else if (w.kernel) {
            if (w.flops > 0)
              sg4::this_actor::execute(w.flops);
          } else if (w.bytes > 0) {
            sg4::Comm::sendto(w.src, w.dst, w.bytes);
          }
          std::unique_lock lock(*raw->mutex);
          ++raw->completed;
          raw->progressed->notify_all();
        }
      });
  worker->daemonize();  // ends with the last rank, blocked on its empty queue
  return *streams_.emplace(id, std::move(s)).first->second;
}

void RankGpu::sleep(double seconds)
{
  if (seconds > 0)
    sg4::this_actor::sleep_for(seconds);
}

void RankGpu::wait_stream(Stream& s, std::uint64_t target)
{
  std::unique_lock lock(*s.mutex);
  while (s.completed < target)
    s.progressed->wait(lock);
}

void RankGpu::perform(const CallRecord& c, const std::string& function, const GpuFail& fail)
{
  double begin = sg4::Engine::get_clock();
  function_ = function;
  async_ = ends_with(function, "Async");
  event_record_ = function.find("EventRecord") != std::string::npos;
  stream_wait_event_ = function.find("StreamWaitEvent") != std::string::npos;
  // The recorded host clock: a launch's own cost comes before it; a synchronisation's blocked time is
  // added where it resolves kernels (the end of the wait).
  if (c.op == Op::GpuKernel && c.seconds > 0)
    recorded_s_ += c.seconds;
  sync_seconds_ = c.op == Op::GpuSync || c.op == Op::GpuMemcpy ? c.seconds : -1.0;
  switch (c.op) {
    case Op::GpuKernel: {
      if (c.flops < 0)
        fail("a kernel's flops cannot be negative");
      if (c.device_seconds < 0 && c.device_seconds != -1.0)
        fail("a kernel's device_seconds cannot be negative");
      // Work: flops scale with the target GPU's speed; a duration alone is kept as it is (its work is
      // the duration times this GPU's speed, so that it shares the GPU like any execution).
      double flops = c.flops;
      if (flops <= 0 && c.device_seconds > 0)
        flops = c.device_seconds * device(fail).host->get_speed();
      // --gpu-model cache: the memory-system model's time on this platform's GPU. A duration measured on
      // the recorded GPU first calibrates the model there (the efficiency of its bounding term); without
      // one, the model's time on this GPU stands.
      if (std::optional<KernelPrice> price = system_.kernel_price(function)) {
        const double seconds = c.device_seconds > 0 && price->from_measured ? price->from_measured(c.device_seconds)
                                                                             : price->target_s;
        flops = seconds * device(fail).host->get_speed();
      }
      // The host pays the launch as measured (the profiler's `seconds` of cudaLaunchKernel), then goes on.
      sleep(c.seconds);
      Stream& s = stream(c.stream, fail);
      Stream::Work w{true, flops, nullptr, nullptr, 0, {}, nullptr};
      if (flops <= 0 && c.flops == 0 && c.device_seconds < 0) {
        // A recorded launch: its device time comes from the next synchronisation that waits on the
        // stream (resolve_kernels).
        w.pending = std::make_shared<PendingKernel>();
        s.unresolved.push_back(w.pending);
        s.last_launch_recorded_s = recorded_s_;
      }
      s.queue.push_back(std::move(w));
      ++s.submitted;
      s.pending->release();
      break;
    }
    case Op::GpuMemcpy: memcpy(c, fail); break;
    case Op::GpuSync: sync(c, fail); break;
    case Op::GpuMalloc: malloc(c, fail); break;
    case Op::GpuFree: free(c, fail); break;
    default: throw InternalError("RankGpu::perform on a non-GPU op");
  }
  if (c.op != Op::GpuKernel && c.seconds > 0)
    recorded_s_ += c.seconds;
  gpu_s_ += sg4::Engine::get_clock() - begin;
}

std::optional<KernelPrice> GpuSystem::kernel_price(const std::string& function)
{
  if (not options_.kernel_price)
    return std::nullopt;
  auto it = prices_.find(function);
  if (it == prices_.end())
    it = prices_.emplace(function, options_.kernel_price(function)).first;
  if (it->second)
    ++priced_launches_;
  else
    ++unpriced_[function];
  return it->second;
}

void RankGpu::enqueue(int stream_id, std::function<void()> task, const GpuFail& fail)
{
  Stream& s = this->stream(stream_id, fail);
  Stream::Work w;
  w.task = std::move(task);
  s.queue.push_back(std::move(w));
  ++s.submitted;
  s.pending->release();
}

void RankGpu::memcpy(const CallRecord& c, const GpuFail& fail)
{
  GpuDevice& dev = device(fail);
  sg4::Host* cpu = system_.cpu_host(rank_);
  sg4::Host* src = nullptr;
  sg4::Host* dst = nullptr;
  // `tag` is the cudaMemcpyKind as the profiler records it; 5 is gridcast's peer-to-peer kind.
  switch (c.tag) {
    case 0: src = cpu, dst = cpu; break;
    case 1: src = cpu, dst = dev.host; break;
    case 2: src = dev.host, dst = cpu; break;
    case 3: src = dev.host, dst = dev.host; break;
    case 4:  // cudaMemcpyDefault: the profiler knows only where the destination lives
      if (c.memory == Memory::Device)
        src = cpu, dst = dev.host;
      else
        src = dev.host, dst = cpu;
      break;
    case 5: {
      GpuDevice* other = system_.node_device(rank_, c.peer);
      if (other == nullptr)
        fail("peer-to-peer copy to GPU " + std::to_string(c.peer) + ", which node " + std::to_string(dev.node) +
             " does not have");
      src = dev.host, dst = other->host;
      break;
    }
    default:
      fail("gpu_memcpy: tag (the copy kind) must be 0 host-host, 1 host-device, 2 device-host, 3 device-device, "
           "4 default or 5 peer, got " + std::to_string(c.tag));
  }
  sleep(system_.costs().queue_s);
  Stream& s = stream(c.stream, fail);
  s.queue.push_back({false, 0, src, dst, c.bytes, {}, nullptr});
  std::uint64_t target = ++s.submitted;
  s.pending->release();
  if (not async_) {
    resolve_kernels(s);  // a blocking copy waits for the stream's kernels first
    wait_stream(s, target);
  }
}

void RankGpu::resolve_kernels(Stream& s)
{
  std::set<Stream*> seen;
  resolve_kernels(s, seen);
}

void RankGpu::resolve_kernels(Stream& s, std::set<Stream*>& seen)
{
  if (not seen.insert(&s).second)
    return;
  for (Stream* other : s.waits_for)  // the stream cannot get past what it waits for
    resolve_kernels(*other, seen);
  if (s.unresolved.empty())
    return;
  // The stream was busy without a break from its last launch to the end of this synchronisation (in
  // order, and work remained until the synchronisation returned): that recorded span is device time of
  // the kernels launched since the last synchronisation, split equally. Exact for one kernel per
  // synchronisation; with several, their earlier parts are not seen (docs/guides/gpu.md). An unknown blocked
  // time (hand-written traces) gives them none, as before.
  double span = sync_seconds_ >= 0 ? std::max(0.0, recorded_s_ + sync_seconds_ - s.last_launch_recorded_s) : 0.0;
  double each = span / static_cast<double>(s.unresolved.size());
  std::unique_lock lock(*s.mutex);
  for (auto& k : s.unresolved) {
    k->seconds = each;
    k->resolved = true;
  }
  s.unresolved.clear();
  s.progressed->notify_all();
}

void RankGpu::sync(const CallRecord& c, const GpuFail& fail)
{
  if (c.request != models::kNoRequest) {
    if (event_record_) {  // cudaEventRecord: remembers the stream's current end
      Stream& s = stream(c.stream, fail);
      events_[c.request] = {&s, s.submitted};
      return;
    }
    auto it = events_.find(c.request);
    if (it == events_.end())
      fail("event " + std::to_string(c.request) + " was never recorded (cudaEventRecord) by this rank");
    EventMark mark = it->second;
    if (stream_wait_event_) {
      // cudaStreamWaitEvent(stream, E): the stream's later work waits until E's stream has reached the
      // mark; the host does not wait.
      Stream& s = stream(c.stream, fail);
      if (&s == mark.stream)
        return;  // a stream is in order with itself
      s.waits_for.insert(mark.stream);
      enqueue(c.stream, [other = mark.stream, target = mark.target]() {
        std::unique_lock lock(*other->mutex);
        while (other->completed < target)
          other->progressed->wait(lock);
      }, fail);
      return;
    }
    resolve_kernels(*mark.stream);
    wait_stream(*mark.stream, mark.target);
    return;
  }
  if (c.stream >= 0) {
    Stream& s = stream(c.stream, fail);
    resolve_kernels(s);
    wait_stream(s, s.submitted);
    return;
  }
  for (auto& [id, s] : streams_)
    resolve_kernels(*s);
  for (auto& [id, s] : streams_)
    wait_stream(*s, s->submitted);
}

void RankGpu::malloc(const CallRecord& c, const GpuFail& fail)
{
  if (c.memory == Memory::Host) {  // cudaHostAlloc / cudaMallocHost: pinning costs per byte
    sleep(system_.costs().host_alloc_s_per_byte * static_cast<double>(c.bytes));
    return;
  }
  GpuDevice& dev = device(fail);
  if (dev.capacity_bytes > 0 && dev.used_bytes + c.bytes > dev.capacity_bytes)
    fail(function_ + " of " + std::to_string(c.bytes) + " bytes on " +
         dev.host->get_name() + " exceeds its memory: " + std::to_string(dev.used_bytes) + " of " +
         std::to_string(dev.capacity_bytes) + " bytes already allocated (" + std::to_string(allocated_bytes_) +
         " by this rank)");
  dev.used_bytes += c.bytes;
  allocated_bytes_ += c.bytes;
  sleep(system_.costs().malloc_s);
}

void RankGpu::free(const CallRecord& c, const GpuFail& fail)
{
  if (c.memory == Memory::Host)  // cudaFreeHost
    return sleep(system_.costs().free_s);
  GpuDevice& dev = device(fail);
  if (c.bytes > allocated_bytes_)
    fail(function_ + " of " + std::to_string(c.bytes) + " bytes, but the rank holds " +
         std::to_string(allocated_bytes_) + " bytes on " + dev.host->get_name());
  dev.used_bytes -= c.bytes;
  allocated_bytes_ -= c.bytes;
  // The trace does not say which buffer went: drop every registration, as a cache that hooks cudaFree
  // would for the freed one (conservative: the rank re-registers buffers it still uses).
  registered_.clear();
  sleep(system_.costs().free_s);
}

void RankGpu::pin(const PinKey& key, const GpuFail& fail)
{
  device(fail);
  if (system_.pin_policy() == PinPolicy::Cache && not registered_.insert(key).second) {
    ++pin_hits_;
    return;
  }
  ++pins_;
  sleep(system_.costs().pin_s);
}

void RankGpu::before_device_send(std::uint64_t bytes, const PinKey& key, const GpuFail& fail)
{
  double begin = sg4::Engine::get_clock();
  if (system_.mpi_mode() == GpuMpiMode::HostCopy)
    sleep(system_.costs().staging_latency_s + system_.costs().staging_s_per_byte * static_cast<double>(bytes));
  else
    pin(key, fail);
  gpu_s_ += sg4::Engine::get_clock() - begin;
}

void RankGpu::before_device_recv(const PinKey& key, const GpuFail& fail)
{
  if (system_.mpi_mode() != GpuMpiMode::GpuDirect)
    return;
  double begin = sg4::Engine::get_clock();
  pin(key, fail);
  gpu_s_ += sg4::Engine::get_clock() - begin;
}

void RankGpu::after_device_recv(std::uint64_t bytes)
{
  if (system_.mpi_mode() != GpuMpiMode::HostCopy)
    return;
  double begin = sg4::Engine::get_clock();
  sleep(system_.costs().staging_latency_s + system_.costs().staging_s_per_byte * static_cast<double>(bytes));
  gpu_s_ += sg4::Engine::get_clock() - begin;
}

sg4::Host* RankGpu::mpi_endpoint(const GpuFail& fail)
{
  if (system_.mpi_mode() != GpuMpiMode::GpuDirect)
    return nullptr;
  return device(fail).host;
}

void RankGpu::request_completed(std::int64_t request)
{
  auto it = device_irecvs_.find(request);
  if (it == device_irecvs_.end())
    return;
  std::uint64_t bytes = it->second;
  device_irecvs_.erase(it);
  after_device_recv(bytes);
}

}  // namespace gridcast::emulator
