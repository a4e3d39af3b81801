// Raw hook files -> native profile directory. The per-thread files of a rank are merged by start time;
// the time between recorded calls becomes compute bursts named after the innermost application function
// that was running (or "compute").
#include "gridcast/profiler/profiler.hpp"

#include "gridcast/profiler/raw_format.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <sstream>
#include <unordered_map>

namespace fs = std::filesystem;

namespace gridcast::profiler {

using hook::Kind;
using hook::RawRecord;
using models::CallRecord;
using models::Op;

namespace {

// ------------------------------------------------------------------ one thread's raw file

struct Event {
  RawRecord rec;
  std::vector<std::int64_t> values;  ///< continuation values (counts, request ids)
  std::string name;                  ///< application function name (Enter/Exit)
};

class RawFile {
public:
  RawFile(const fs::path& file, int rank) : path_(file), rank_(rank), in_(file, std::ios::binary)
  {
    if (not in_)
      throw InputError({file.string(), 0, {}, rank}, "cannot open raw hook file");
    hook::RawHeader h;
    std::error_code ec;
    if (fs::file_size(file, ec) < sizeof h && not ec) {
      // Opened, but its header never made it to disk (the disk was already full): no records, and the
      // meta file says why (write_errno). A header cut by a kill, as well.
      empty_ = true;
      return;
    }
    if (not in_.read(reinterpret_cast<char*>(&h), sizeof h) || std::memcmp(h.magic, hook::RawHeader{}.magic, 8) != 0 ||
        h.record_bytes != static_cast<std::int32_t>(sizeof(RawRecord)))
      throw InputError({file.string(), 0, {}, rank}, "not a gridcast raw file (bad header)");
    thread_ = h.thread;
  }
  int thread() const { return thread_; }
  const fs::path& path() const { return path_; }
  std::uint64_t records_read() const { return count_; }
  /// The name a Def record of this file gave dynamic function `id`; nullptr when none did.
  const std::string* defined_name(std::uint16_t id) const
  {
    auto it = names_.find(id);
    return it == names_.end() ? nullptr : &it->second;
  }

  /// Next Call/Enter/Exit; definitions are absorbed. A record cut by the end of the run ends the file.
  bool next(Event& e)
  {
    for (;;) {
      if (not read(e.rec))
        return false;
      if (e.rec.kind == Kind::Def) {
        std::vector<std::int64_t> packed;
        if (not read_values(e.rec.n_extra, packed))
          return false;
        std::string name(reinterpret_cast<const char*>(packed.data()),
                         std::min<std::size_t>(e.rec.bytes, packed.size() * 8));
        names_[e.rec.fn] = std::move(name);
        continue;
      }
      // A record's span is a time of the run: its start and end are clock readings (positive, and the end
      // within range). Anything else is a damaged file, whose times would overflow every sum below.
      if (e.rec.start_ticks < 0 ||
          std::max<std::int64_t>(0, e.rec.duration_ticks) > std::numeric_limits<std::int64_t>::max() - e.rec.start_ticks)
        throw InputError({path_.string(), count_, {}, rank_},
                         "a record starts at clock tick " + std::to_string(e.rec.start_ticks) + " and lasts " +
                             std::to_string(e.rec.duration_ticks) + " ticks: no clock reads that, a damaged raw file");
      if (e.rec.kind == Kind::Enter || e.rec.kind == Kind::Exit) {
        auto it = names_.find(e.rec.fn);
        if (it == names_.end())
          throw InputError({path_.string(), count_, {}, rank_}, "application function id " + std::to_string(e.rec.fn) +
                                                                    " used before its definition");
        e.name = it->second;
        e.values.clear();
        return true;
      }
      if (e.rec.kind != Kind::Call)
        throw InputError({path_.string(), count_, {}, rank_}, "unexpected raw record kind " +
                                                                  std::to_string(static_cast<int>(e.rec.kind)));
      if (e.rec.fn >= static_cast<std::uint16_t>(hook::Fn::Count))
        throw InputError({path_.string(), count_, {}, rank_}, "unknown function id " + std::to_string(e.rec.fn));
      if (not read_values(e.rec.n_extra, e.values))
        return false;
      auto n_values = static_cast<std::size_t>(static_cast<std::uint32_t>(e.rec.extra_kind) >> 8);
      if (n_values > e.values.size())
        throw InputError({path_.string(), count_, {}, rank_}, "call record announces " + std::to_string(n_values) +
                                                                  " values but carries fewer");
      e.values.resize(n_values);  // drop the zero padding of the last continuation record
      e.rec.extra_kind &= 0xff;
      return true;
    }
  }

private:
  bool read(RawRecord& r)
  {
    if (empty_)
      return false;
    if (not in_.read(reinterpret_cast<char*>(&r), sizeof r))
      return false;  // end, or a record cut by a kill: everything before it is kept
    ++count_;
    return true;
  }
  /// The values of `n_extra` continuation records, grown as they are read: a count damaged into billions
  /// costs what the file holds, not what the count says.
  bool read_values(std::uint32_t n_extra, std::vector<std::int64_t>& out)
  {
    out.clear();
    for (std::uint32_t i = 0; i < n_extra; ++i) {
      RawRecord r;
      if (not read(r))
        return false;
      std::int64_t values[hook::kValuesPerExtra];
      static_assert(sizeof values == sizeof r);
      std::memcpy(values, &r, sizeof r);
      out.insert(out.end(), values, values + hook::kValuesPerExtra);
    }
    return true;
  }

  fs::path path_;
  int rank_;
  std::ifstream in_;
  int thread_ = 0;
  bool empty_ = false;  ///< the file holds no header: nothing to read
  std::uint64_t count_ = 0;
  std::unordered_map<std::uint16_t, std::string> names_;
};

// ------------------------------------------------------------------ raw record -> CallRecord

/// The tag of the exchanges a neighbourhood collective is expanded into: the largest tag a trace can hold
/// (traces take tags >= 0 only), which applications practically never use (MPI guarantees only 32767),
/// so that the exchanges match only each other.
constexpr std::int32_t kNeighborTag = 2147483647;
/// The converter's own request ids (neighbourhood exchanges), far above the hook's (0, 1, 2...).
constexpr std::int64_t kFirstNeighborRequest = std::int64_t{1} << 40;

std::int32_t peer_of(std::int32_t raw) { return raw == -1 ? models::kAnySource : raw; }
std::int32_t comm_of(std::int32_t raw) { return raw < 0 ? models::kWorldComm : raw; }

std::optional<Op> collective_op(std::string_view family)
{
  static const std::map<std::string_view, Op> kOps = {
      {"barrier", Op::Barrier},     {"bcast", Op::Bcast},         {"reduce", Op::Reduce},
      {"allreduce", Op::Allreduce}, {"alltoall", Op::Alltoall},   {"alltoallv", Op::Alltoallv},
      {"gather", Op::Gather},       {"gatherv", Op::Gatherv},     {"allgather", Op::Allgather},
      {"allgatherv", Op::Allgatherv}, {"scatter", Op::Scatter},   {"scatterv", Op::Scatterv},
      {"reducescatter", Op::ReduceScatter}, {"scan", Op::Scan},   {"exscan", Op::Exscan}};
  auto it = kOps.find(family);
  if (it == kOps.end())
    return std::nullopt;
  return it->second;
}

void positive_ids(const std::vector<std::int64_t>& values, std::size_t from, std::size_t to,
                  std::vector<std::int64_t>& out)
{
  out.clear();
  for (std::size_t i = from; i < to && i < values.size(); ++i)
    if (values[i] >= 0)
      out.push_back(values[i]);
}

/// A BLAS/LAPACK call's arguments from its ExtraKind::LibArgs values (raw files written before the hook
/// recorded them have none: the call then has no arguments, and the latency model regresses its time).
models::LibraryArgs library_args(const std::vector<std::int64_t>& v)
{
  models::LibraryArgs a;
  if (v.size() < static_cast<std::size_t>(hook::kLibArgValues))
    return a;
  a.recorded = true;
  a.m = v[hook::kLibM];
  a.n = v[hook::kLibN];
  a.k = v[hook::kLibK];
  a.ld_a = v[hook::kLibLdA];
  a.ld_b = v[hook::kLibLdB];
  a.ld_c = v[hook::kLibLdC];
  a.inc_x = v[hook::kLibIncX];
  a.inc_y = v[hook::kLibIncY];
  const auto options = static_cast<std::uint64_t>(v[hook::kLibOptions]);
  for (std::size_t i = 0; i < a.options.size(); ++i) {
    const auto c = static_cast<char>((options >> (8 * i)) & 0xff);
    a.options[i] = std::string_view("NTCLRU").find(c) == std::string_view::npos ? '-' : c;
  }
  return a;
}

/// A call with no simulated effect, kept by name.
void mark_local(CallRecord& c)
{
  c.op = Op::CommSize;
}

/// e.values[from, to) as counts (negative values, which no count has, as 0).
void counts_of(const Event& e, std::size_t from, std::size_t to, std::vector<std::uint64_t>& out)
{
  out.clear();
  for (std::size_t i = from; i < to && i < e.values.size(); ++i)
    out.push_back(static_cast<std::uint64_t>(std::max<std::int64_t>(0, e.values[i])));
}

/// Sends, receives, persistent starts, sendrecv and probes; false for other families.
bool convert_point_to_point(const Event& e, std::string_view family, CallRecord& c)
{
  const RawRecord& r = e.rec;
  if (family == "send" || family == "ssend" || family == "isend" || family == "issend" || family == "recv" ||
      family == "irecv") {
    if (r.peer == -3) {  // MPI_PROC_NULL: returns at once
      mark_local(c);
      return true;
    }
    c.op = family == "send" ? Op::Send : family == "ssend" ? Op::Ssend : family == "isend" ? Op::Isend
         : family == "issend" ? Op::Issend : family == "recv" ? Op::Recv : Op::Irecv;
    c.peer = peer_of(r.peer);
    c.tag = r.tag == -1 ? models::kAnyTag : r.tag;
    c.bytes = r.bytes;
    if (family[0] == 'i')
      c.request = r.request;
    return true;
  }
  if (family == "start") {  // MPI_Start(all): the isend/irecv the persistent request performs
    auto kind = static_cast<hook::StartKind>(r.key);
    if (kind == hook::StartKind::Unknown || r.peer == -3) {  // not seen created, or MPI_PROC_NULL
      mark_local(c);
      c.request = models::kNoRequest;
      return true;
    }
    c.op = kind == hook::StartKind::Isend ? Op::Isend : kind == hook::StartKind::Issend ? Op::Issend : Op::Irecv;
    c.peer = peer_of(r.peer);
    c.tag = r.tag == -1 ? models::kAnyTag : r.tag;
    c.bytes = r.bytes;
    c.request = r.request;
    return true;
  }
  if (family == "sendrecv") {
    bool no_dest = r.peer == -3, no_src = r.src == -3;
    if (no_dest && no_src) {
      mark_local(c);
      return true;
    }
    if (no_dest) {
      c.op = Op::Recv;
      c.peer = peer_of(r.src);
      c.tag = r.recv_tag;
      c.bytes = r.recv_bytes;
      return true;
    }
    c.op = no_src ? Op::Send : Op::Sendrecv;
    c.peer = peer_of(r.peer);
    c.tag = r.tag;
    c.bytes = r.bytes;
    if (not no_src) {
      c.src = peer_of(r.src);
      c.recv_tag = r.recv_tag;
      c.recv_bytes = r.recv_bytes;
    }
    return true;
  }
  if (family == "probe") {
    c.op = Op::Probe;
    c.peer = r.peer == -3 ? models::kNoRank : peer_of(r.peer);
    c.tag = r.tag;
    if (r.flags & hook::kFlagOutcome) {
      c.src = r.src;
      c.recv_tag = r.recv_tag;
      c.recv_bytes = r.recv_bytes;
    }
    return true;
  }
  return false;
}

/// Waits and tests of one, all, any or some requests; false for other families.
bool convert_completion(const Event& e, std::string_view family, CallRecord& c)
{
  const RawRecord& r = e.rec;
  if (family == "wait" || family == "test") {
    if (r.request < 0) {  // a null request: returns at once
      mark_local(c);
      return true;
    }
    c.op = family == "wait" ? Op::Wait : Op::Test;
    c.request = r.request;
    c.comm = 0;
    return true;
  }
  if (family == "waitall" || family == "waitany" || family == "testall" || family == "testany") {
    positive_ids(e.values, 0, e.values.size(), c.requests);
    c.comm = 0;
    if (c.requests.empty()) {
      mark_local(c);
      return true;
    }
    if (family == "waitall") c.op = Op::Waitall;
    else if (family == "waitany") c.op = Op::Waitany;
    else {
      c.op = Op::Test;
      if (family == "testany" && (r.flags & hook::kFlagOutcome))
        c.request = r.request;  // the one that completed: that is what the test did
      else if (c.requests.size() == 1)
        c.request = c.requests.front();  // a test of one request is MPI_Test
      if (c.request >= 0)
        c.requests.clear();
    }
    return true;
  }
  if (family == "waitsome" || family == "testsome") {
    auto n_all = static_cast<std::size_t>(std::max(0, r.root));
    std::vector<std::int64_t> all;
    positive_ids(e.values, 0, n_all, all);
    positive_ids(e.values, n_all, e.values.size(), c.requests);
    c.comm = 0;
    if (family == "waitsome") {
      c.op = Op::Waitall;  // it waited until these completed
      if (c.requests.empty()) mark_local(c);
    } else {
      c.op = Op::Test;
      if (c.requests.empty())
        c.requests = all;
      if (c.requests.size() == 1) {
        c.request = c.requests.front();
        c.requests.clear();
      } else if (c.requests.empty()) {
        mark_local(c);
      }
    }
    return true;
  }
  return false;
}

/// Communicator creation (split, dup, dynamic processes, NCCL's init); false for other families.
bool convert_communicator(const Event& e, std::string_view family, bool gpu, CallRecord& c)
{
  const RawRecord& r = e.rec;
  if (family == "comm_split") {
    c.op = Op::CommSplit;
    c.color = r.color;
    c.key = r.key;
    c.new_comm = r.new_comm;
    if (static_cast<hook::ExtraKind>(r.extra_kind) == hook::ExtraKind::Members) {
      // Created among its members only: `counts` lists them (world ranks, in rank order); none = null.
      counts_of(e, 0, e.values.size(), c.counts);
      if (c.counts.empty())
        c.color = -1;
    }
    return true;
  }
  if (family == "dynamic_process") {
    if (static_cast<hook::ExtraKind>(r.extra_kind) == hook::ExtraKind::Members) {
      // Connect, accept or join between ranks of this world: a creation among its members, as
      // MPI_Intercomm_create is written.
      c.op = Op::CommSplit;
      c.color = 0;  // the members say it all; the remote size may differ between the two sides
      c.new_comm = r.new_comm;
      counts_of(e, 0, e.values.size(), c.counts);
      return true;
    }
    // Spawn, or a connection to processes outside the world: kept as what it was so that replay and fit
    // can refuse it by name.
    c.op = Op::DynamicProcess;
    c.root = r.root;
    c.color = r.color;
    c.new_comm = r.new_comm;
    return true;
  }
  if (family == "comm_dup") {
    c.op = Op::CommDup;
    c.new_comm = r.new_comm;
    if (r.flags & hook::kFlagNonblocking)  // MPI_Comm_idup: usable once its request completes
      c.request = r.request;
    if (gpu)  // ncclCommInitRank: a new NCCL communicator, this rank's place in it in `root`
      c.root = r.root;
    return true;
  }
  return false;
}

/// CUDA runtime calls; false for other families.
bool convert_gpu(const Event& e, std::string_view family, CallRecord& c)
{
  const RawRecord& r = e.rec;
  if (family == "gpu_malloc") { c.op = Op::GpuMalloc; c.bytes = r.bytes; c.comm = 0; return true; }
  if (family == "gpu_free") { c.op = Op::GpuFree; c.comm = 0; return true; }
  if (family == "gpu_memcpy") { c.op = Op::GpuMemcpy; c.bytes = r.bytes; c.tag = r.peer; c.comm = 0; return true; }
  if (family == "gpu_kernel") { c.op = Op::GpuKernel; c.bytes = r.bytes; c.recv_bytes = r.recv_bytes; c.comm = 0; return true; }
  if (family == "gpu_sync") {
    c.op = Op::GpuSync;
    c.comm = 0;
    if (r.request >= 0)  // events: the event's id (cudaEventRecord, cudaStreamWaitEvent, cudaEventSynchronize)
      c.request = r.request;
    return true;
  }
  return false;
}

/// Collectives, blocking and not, with their per-rank counts; false for other families.
bool convert_collective(const Event& e, std::string_view family, CallRecord& c)
{
  const RawRecord& r = e.rec;
  auto op = collective_op(family);
  if (not op)
    return false;
  c.op = *op;
  c.bytes = r.bytes;
  c.recv_bytes = r.recv_bytes;
  c.root = r.root;
  if (r.flags & hook::kFlagNonblocking)
    c.request = r.request;
  std::size_t n = e.values.size();
  switch (static_cast<hook::ExtraKind>(r.extra_kind)) {
    case hook::ExtraKind::CountsBoth:  // send counts, then as many receive counts
      counts_of(e, 0, n / 2, c.counts);
      counts_of(e, n / 2, n, c.recv_counts);
      break;
    case hook::ExtraKind::Counts:
      counts_of(e, 0, n, c.counts);
      break;
    case hook::ExtraKind::RecvCounts:
      counts_of(e, 0, n, c.recv_counts);
      break;
    default:
      break;
  }
  return true;
}

/// Fills `c` for the hooked call `e` (c.function set by the caller).
void to_call_record(const Event& e, double ticks_per_s, CallRecord& c)
{
  const RawRecord& r = e.rec;
  std::string_view family = hook::kFnFamilies[r.fn];
  std::string_view name = hook::kFnNames[r.fn];
  bool gpu = name.substr(0, 4) == "cuda" || name.substr(0, 4) == "nccl";
  c.seconds = static_cast<double>(r.duration_ticks) / ticks_per_s;
  c.comm = comm_of(r.comm);
  if (r.flags & hook::kFlagDeviceMemory)
    c.memory = models::Memory::Device;
  if (gpu) {
    c.stream = r.color;
    c.device = r.key;
  }

  if (family == "init") { c.op = Op::Init; return; }
  if (family == "finalize") { c.op = Op::Finalize; return; }
  if (family == "local") {
    mark_local(c);
    c.request = r.request;  // MPI_Cancel, MPI_Request_free name one
    return;
  }
  if (family == "blas") {
    c.op = Op::Compute;
    c.comm = 0;
    if (static_cast<hook::ExtraKind>(r.extra_kind) == hook::ExtraKind::LibArgs)
      c.library = library_args(e.values);
    return;
  }
  if (convert_point_to_point(e, family, c) || convert_completion(e, family, c) ||
      convert_communicator(e, family, gpu, c) || convert_gpu(e, family, c) || convert_collective(e, family, c))
    return;
  throw InternalError("raw family '" + std::string(family) + "' has no conversion");
}

}  // namespace
}  // namespace gridcast::profiler

namespace gridcast::profiler {
namespace {

/// One rank's conversion: merges its thread files by time and writes (or only counts) its records.
class RankConverter {
public:
  RankConverter(int rank, std::vector<fs::path> files, std::int64_t init_ticks, std::int64_t end_ticks,
                std::int64_t ticks_per_s, std::uint64_t max_records)
      : rank_(rank), init_ticks_(init_ticks), end_ticks_(end_ticks), ticks_per_s_(static_cast<double>(ticks_per_s)),
        max_records_(max_records)
  {
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      files_.push_back(std::make_unique<RawFile>(f, rank));
  }

  RankSummary run(models::TraceWriter* writer, std::map<std::string, FunctionTotal>& totals)
  {
    writer_ = writer;
    totals_ = &totals;
    cursor_ticks_ = init_ticks_;
    // Heap of the next event of every thread file, earliest first; ties by thread (file order): stable.
    struct Head {
      Event e;
      std::size_t file;
      std::uint64_t seq;
    };
    auto later = [](const Head* a, const Head* b) {
      if (a->e.rec.start_ticks != b->e.rec.start_ticks)
        return a->e.rec.start_ticks > b->e.rec.start_ticks;
      if (a->file != b->file)
        return a->file > b->file;
      return a->seq > b->seq;
    };
    std::vector<Head> heads(files_.size());
    std::priority_queue<Head*, std::vector<Head*>, decltype(later)> queue(later);
    std::vector<std::uint64_t> seq(files_.size(), 0);
    stacks_.assign(files_.size(), {});
    for (std::size_t i = 0; i < files_.size(); ++i) {
      heads[i].file = i;
      if (files_[i]->next(heads[i].e)) {
        heads[i].seq = seq[i]++;
        queue.push(&heads[i]);
      }
    }
    std::int64_t last_end = init_ticks_;
    while (not queue.empty()) {
      Head* h = queue.top();
      queue.pop();
      const Event& e = h->e;
      last_end = std::max(last_end, e.rec.start_ticks + std::max<std::int64_t>(0, e.rec.duration_ticks));
      handle(e, h->file);
      if (files_[h->file]->next(h->e)) {
        h->seq = seq[h->file]++;
        queue.push(h);
      }
    }
    // Without MPI_Finalize (killed, aborted) the trace ends with its last record.
    std::int64_t end = end_ticks_ > 0 ? end_ticks_ : last_end;
    gap_until(end, stacks_.empty() ? nullptr : &stacks_[0]);
    summary_.rank = rank_;
    summary_.wall_s = static_cast<double>(end - init_ticks_) / ticks_per_s_;
    summary_.last_record_s = static_cast<double>(last_end - init_ticks_) / ticks_per_s_;
    for (const auto& f : files_)
      summary_.raw_records += f->records_read();
    return summary_;
  }

private:
  void handle(const Event& e, std::size_t file)
  {
    auto& stack = stacks_[file];
    if (e.rec.kind == Kind::Enter) {
      gap_until(e.rec.start_ticks, &stack);
      stack.push_back(e.name);
      return;
    }
    if (e.rec.kind == Kind::Exit) {
      gap_until(e.rec.start_ticks, &stack);
      if (not stack.empty() && stack.back() == e.name)
        stack.pop_back();
      return;
    }
    gap_until(e.rec.start_ticks, &stack);
    std::string_view name = hook::kFnNames[e.rec.fn];
    if (std::string_view(hook::kFnFamilies[e.rec.fn]) == "neighbor")
      return neighbor_exchange(e, name, file);
    if ((e.rec.flags & hook::kFlagPollCycle) != 0 && e.rec.repeat > 0) {
      // Two failed polls that alternated, folded as a cycle: the partner is the next call of this file.
      Event partner;
      if (files_[file]->next(partner) && partner.rec.kind == Kind::Call)
        return poll_cycle(e, partner, stack);
      // The file ended (cut by a kill): the first one alone, below.
    }
    record_.clear();
    to_call_record(e, ticks_per_s_, record_);
    // A kernel launch is named after its kernel when the hook knew the name (a Def of this file).
    if (record_.op == Op::GpuKernel && e.rec.tag >= static_cast<std::int32_t>(hook::kFirstDynamicFn)) {
      const std::string* kernel = files_[file]->defined_name(static_cast<std::uint16_t>(e.rec.tag));
      if (kernel == nullptr)
        throw InputError({files_[file]->path().string(), files_[file]->records_read(), {}, rank_},
                         "a kernel launch names kernel id " + std::to_string(e.rec.tag) + ", which the file never defined");
      name = *kernel;
    }
    record_.function = functions_.intern(name);
    if (not neighbor_requests_.empty())
      expand_neighbor_requests(record_);
    std::int64_t end = e.rec.start_ticks + std::max<std::int64_t>(0, e.rec.duration_ticks);
    covered(e.rec.start_ticks, end);
    if (e.rec.repeat <= 0) {
      summary_.hooked_s += static_cast<double>(e.rec.duration_ticks) / ticks_per_s_;
      emit(record_, name, record_.seconds);
      return;
    }
    // A run of identical failed polls folded by the hook: every call is written again, each with the
    // mean duration, separated by the mean gap (computation) -- the count and the total time are exact.
    // Folded calls are at least a clock tick apart: a count past the record's span is a damaged file, whose
    // count would otherwise be expanded into billions of records.
    if (e.rec.repeat > std::max<std::int64_t>(0, e.rec.duration_ticks))
      throw InputError({files_[file]->path().string(), files_[file]->records_read(), {}, rank_},
                       "a folded poll record claims " + std::to_string(e.rec.repeat) + " more calls in " +
                           std::to_string(e.rec.duration_ticks) + " clock ticks: a damaged raw file");
    auto calls = static_cast<std::uint64_t>(e.rec.repeat) + 1;
    double busy_s = static_cast<double>(std::max<std::int64_t>(0, e.rec.busy_ticks)) / ticks_per_s_;
    double span_s = static_cast<double>(std::max<std::int64_t>(0, e.rec.duration_ticks)) / ticks_per_s_;
    double gap_s = std::max(0.0, span_s - busy_s) / static_cast<double>(calls - 1);
    record_.seconds = busy_s / static_cast<double>(calls);
    std::string gap_name = stack.empty() ? std::string("compute") : stack.back();
    gap_record_.clear();
    gap_record_.op = Op::Compute;
    gap_record_.seconds = gap_s;
    gap_record_.function = functions_.intern(gap_name);
    summary_.hooked_s += busy_s + (gap_name != "compute" ? span_s - busy_s : 0.0);
    for (std::uint64_t i = 0; i < calls; ++i) {
      if (i > 0 && gap_s > 0)
        emit(gap_record_, gap_name, gap_s);
      emit(record_, name, record_.seconds);
    }
  }

  /// Two failed polls folded as a cycle A B A B... (the hook's kFlagPollCycle): written back interleaved,
  /// A's calls with A's mean duration and B's with B's, the rest of the span as compute gaps of the mean
  /// length between them. Counts and total times are exact, as for a single folded poll.
  void poll_cycle(const Event& a, const Event& b, const std::vector<std::string>& stack)
  {
    CallRecord ra, rb;
    to_call_record(a, ticks_per_s_, ra);
    to_call_record(b, ticks_per_s_, rb);
    std::string_view name_a = hook::kFnNames[a.rec.fn], name_b = hook::kFnNames[b.rec.fn];
    ra.function = functions_.intern(name_a);
    rb.function = functions_.intern(name_b);
    if (not neighbor_requests_.empty()) {
      expand_neighbor_requests(ra);
      expand_neighbor_requests(rb);
    }
    auto calls_a = static_cast<std::uint64_t>(std::max<std::int64_t>(0, a.rec.repeat)) + 1;
    auto calls_b = static_cast<std::uint64_t>(std::max<std::int64_t>(0, b.rec.repeat)) + 1;
    auto busy = [&](const RawRecord& r) {
      return static_cast<double>(std::max<std::int64_t>(0, r.repeat > 0 ? r.busy_ticks : r.duration_ticks)) /
             ticks_per_s_;
    };
    double busy_a = busy(a.rec), busy_b = busy(b.rec);
    std::int64_t end = std::max(a.rec.start_ticks + std::max<std::int64_t>(0, a.rec.duration_ticks),
                                b.rec.start_ticks + std::max<std::int64_t>(0, b.rec.duration_ticks));
    double span_s = static_cast<double>(end - a.rec.start_ticks) / ticks_per_s_;
    double gap_s = std::max(0.0, span_s - busy_a - busy_b) / static_cast<double>(calls_a + calls_b - 1);
    ra.seconds = busy_a / static_cast<double>(calls_a);
    rb.seconds = busy_b / static_cast<double>(calls_b);
    covered(a.rec.start_ticks, end);
    std::string gap_name = stack.empty() ? std::string("compute") : stack.back();
    gap_record_.clear();
    gap_record_.op = Op::Compute;
    gap_record_.seconds = gap_s;
    gap_record_.function = functions_.intern(gap_name);
    summary_.hooked_s += busy_a + busy_b + (gap_name != "compute" ? span_s - busy_a - busy_b : 0.0);
    bool first = true;
    auto one = [&](const CallRecord& r, std::string_view name) {
      if (not first && gap_s > 0)
        emit(gap_record_, gap_name, gap_s);
      first = false;
      emit(r, name, r.seconds);
    };
    for (std::uint64_t i = 0; i < std::max(calls_a, calls_b); ++i) {
      if (i < calls_a)
        one(ra, name_a);
      if (i < calls_b)
        one(rb, name_b);
    }
  }

  /// A neighbourhood collective becomes the point-to-point exchanges it performs, which a replay can
  /// simulate on any topology: an irecv from every in-neighbour, an isend to every out-neighbour (world
  /// ranks, on the topology's communicator, with the reserved tag kNeighborTag so that they never match the
  /// application's messages; MPI_PROC_NULL neighbours skipped), then a waitall of them. The requests are
  /// ids of the converter's own (from kFirstNeighborRequest). The nonblocking forms leave out the waitall:
  /// the wait or test of their request later waits for or tests these requests instead.
  void neighbor_exchange(const Event& e, std::string_view name, std::size_t file)
  {
    const RawRecord& r = e.rec;
    auto in = static_cast<std::size_t>(std::max(0, r.root));
    auto out = static_cast<std::size_t>(std::max(0, r.key));
    if (e.values.size() != 2 * (in + out))
      throw InputError({files_[file]->path().string(), files_[file]->records_read(), {}, rank_},
                       std::string(name) + " record with " + std::to_string(e.values.size()) + " values for " +
                           std::to_string(in) + " in- and " + std::to_string(out) + " out-neighbours");
    const std::uint32_t fn = functions_.intern(name);
    const std::int32_t comm = comm_of(r.comm);
    const bool device = (r.flags & hook::kFlagDeviceMemory) != 0;
    std::vector<CallRecord> records;
    std::vector<std::int64_t> ids;
    auto exchange = [&](Op op, std::int64_t peer, std::int64_t bytes) {
      if (peer < 0)  // MPI_PROC_NULL (or a rank the hook could not translate): no communication
        return;
      CallRecord c;
      c.op = op;
      c.function = fn;
      c.seconds = 0;
      c.peer = static_cast<std::int32_t>(peer);
      c.tag = kNeighborTag;
      c.bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, bytes));
      c.comm = comm;
      if (device)
        c.memory = models::Memory::Device;
      c.request = next_neighbor_request_++;
      ids.push_back(c.request);
      records.push_back(std::move(c));
    };
    for (std::size_t i = 0; i < in; ++i)
      exchange(Op::Irecv, e.values[i], e.values[in + out + out + i]);
    for (std::size_t i = 0; i < out; ++i)
      exchange(Op::Isend, e.values[in + i], e.values[in + out + i]);
    const bool nonblocking = (r.flags & hook::kFlagNonblocking) != 0;
    if (nonblocking)
      neighbor_requests_[r.request] = ids;
    CallRecord last;
    last.function = fn;
    if (not nonblocking && not ids.empty()) {
      last.op = Op::Waitall;
      last.requests = ids;
      records.push_back(std::move(last));
    } else if (records.empty()) {
      last.op = Op::CommSize;  // no neighbour to talk to: a local call
      last.comm = comm;
      records.push_back(std::move(last));
    }
    // The call's time goes to its last record (the waitall, where a blocking one spends it).
    double seconds = static_cast<double>(std::max<std::int64_t>(0, r.duration_ticks)) / ticks_per_s_;
    records.back().seconds = seconds;
    covered(r.start_ticks, r.start_ticks + std::max<std::int64_t>(0, r.duration_ticks));
    summary_.hooked_s += seconds;
    for (const auto& c : records)
      emit(c, name, c.seconds);
  }

  /// A wait or test of a nonblocking neighbourhood collective's request waits for or tests the exchanges
  /// it stands for (neighbor_exchange()).
  void expand_neighbor_requests(CallRecord& c)
  {
    auto splice = [&](std::vector<std::int64_t>& list) {
      std::vector<std::int64_t> out;
      for (std::int64_t h : list)
        if (auto it = neighbor_requests_.find(h); it != neighbor_requests_.end())
          out.insert(out.end(), it->second.begin(), it->second.end());
        else
          out.push_back(h);
      list = std::move(out);
    };
    bool single = c.request >= 0 && neighbor_requests_.count(c.request) > 0;
    bool in_list = std::any_of(c.requests.begin(), c.requests.end(),
                               [&](std::int64_t h) { return neighbor_requests_.count(h) > 0; });
    if (not single && not in_list)
      return;
    if (c.op == Op::CommSize) {  // MPI_Request_free/MPI_Cancel of the collective: its exchanges go on
      c.request = models::kNoRequest;
      return;
    }
    if (c.op == Op::Wait || (c.op == Op::Waitany && single)) {
      c.op = Op::Waitall;  // waiting for the collective is waiting for all its exchanges
      c.requests = neighbor_requests_[c.request];
      c.request = models::kNoRequest;
    } else if (c.op == Op::Test && single && c.requests.empty()) {
      c.requests = neighbor_requests_[c.request];
      c.request = models::kNoRequest;
    } else {
      if (single && c.op == Op::Test)
        c.request = models::kNoRequest;
      splice(c.requests);
    }
    if (c.requests.empty() && c.request < 0 && c.op != Op::CommSize) {
      c.op = Op::CommSize;  // a collective without neighbours: nothing to wait for
      c.requests.clear();
    }
  }

  /// The time from the cursor to `t` is computation: a compute record named after the innermost
  /// application function running on that thread.
  void gap_until(std::int64_t t, const std::vector<std::string>* stack)
  {
    if (t <= cursor_ticks_)
      return;
    std::string name = stack != nullptr && not stack->empty() ? stack->back() : std::string("compute");
    double seconds = static_cast<double>(t - cursor_ticks_) / ticks_per_s_;
    record_.clear();
    record_.op = Op::Compute;
    record_.seconds = seconds;
    record_.function = functions_.intern(name);
    if (name != "compute")
      summary_.hooked_s += seconds;
    covered(cursor_ticks_, t);
    emit(record_, name, seconds);
  }

  void covered(std::int64_t start, std::int64_t end)
  {
    std::int64_t from = std::max(start, cursor_ticks_);
    if (end > from)
      summary_.covered_s += static_cast<double>(end - from) / ticks_per_s_;
    cursor_ticks_ = std::max(cursor_ticks_, end);
  }

  void emit(const CallRecord& record, std::string_view name, double seconds)
  {
    if (summary_.records == max_records_)
      throw InputError({files_.front()->path().string(), 0, {}, rank_},
                       "rank " + std::to_string(rank_) + "'s raw files expand to more than " +
                           std::to_string(max_records_) + " records: a damaged raw file, or a run longer than " +
                           "any replay could use");
    if (writer_ != nullptr)
      writer_->write(record, functions_);
    ++summary_.records;
    auto& t = (*totals_)[std::string(name)];
    t.name = name;
    t.seconds += std::max(0.0, seconds);
    ++t.calls;
  }

  int rank_;
  std::int64_t init_ticks_, end_ticks_;
  double ticks_per_s_;
  std::uint64_t max_records_;
  std::vector<std::unique_ptr<RawFile>> files_;
  std::vector<std::vector<std::string>> stacks_;  ///< per thread file: application functions running
  std::int64_t cursor_ticks_ = 0;
  models::TraceWriter* writer_ = nullptr;
  std::map<std::string, FunctionTotal>* totals_ = nullptr;
  models::FunctionTable functions_;
  CallRecord record_;
  CallRecord gap_record_;
  /// Requests of the exchanges of each nonblocking neighbourhood collective, by the collective's request.
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> neighbor_requests_;
  std::int64_t next_neighbor_request_ = kFirstNeighborRequest;
  RankSummary summary_;
};

/// Raw files of rank r: rank-R.thread-T.gcraw.
std::map<int, std::vector<fs::path>> thread_files(const fs::path& raw_dir)
{
  std::map<int, std::vector<fs::path>> out;
  for (const auto& entry : fs::directory_iterator(raw_dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || entry.path().extension() != ".gcraw")
      continue;
    int rank = -1;
    auto [p, ec] = std::from_chars(name.data() + 5, name.data() + name.size(), rank);
    if (ec != std::errc() || rank < 0)
      throw InputError({entry.path().string(), 0, {}, -1}, "raw file name without a rank");
    out[rank].push_back(entry.path());
  }
  return out;
}

}  // namespace

ConvertResult convert_raw(const fs::path& raw_dir, models::RunInfo info, const fs::path& out,
                          std::uint64_t max_records_per_rank)
{
  if (not fs::is_directory(raw_dir))
    throw InputError({raw_dir.string(), 0, {}, -1}, "no raw hook directory");
  // Every rank that reached MPI_Init wrote its meta file; the world size comes from any of them.
  // One rank's unreadable meta file (a kill while the hook rewrote it, a damaged disk) is that rank's
  // fault: the others are converted, it is marked damaged. Only when no meta file reads is it an error.
  std::map<int, RawMeta> metas;
  std::map<int, std::string> damaged;
  std::optional<InputError> first_damage;
  for (const auto& entry : fs::directory_iterator(raw_dir))
    if (entry.path().extension() == ".meta") {
      try {
        RawMeta m = read_raw_meta(entry.path());
        metas[m.rank] = m;
      } catch (const InputError& e) {
        const std::string stem = entry.path().stem().string();  // rank-R
        int rank = -1;
        if (stem.rfind("rank-", 0) != 0 ||
            std::from_chars(stem.data() + 5, stem.data() + stem.size(), rank).ptr != stem.data() + stem.size() ||
            rank < 0)
          throw;
        damaged[rank] = e.what();
        if (not first_damage)
          first_damage = e;
      }
    }
  if (metas.empty() && first_damage)
    throw *first_damage;
  if (metas.empty())
    throw InputError({raw_dir.string(), 0, {}, -1},
                     "the hook recorded nothing: the application never called MPI_Init with libgridcast-hook.so "
                     "preloaded (is it an MPI program? did the launcher pass LD_PRELOAD on?)");
  int np = metas.begin()->second.size;
  for (const auto& [rank, m] : metas)
    if (m.size != np)
      throw InputError({(raw_dir / ("rank-" + std::to_string(rank) + ".meta")).string(), 0, "size", rank},
                       "world size " + std::to_string(m.size) + " differs from rank " +
                           std::to_string(metas.begin()->first) + "'s " + std::to_string(np));
  auto files = thread_files(raw_dir);

  ConvertResult result;
  result.all_finalized = static_cast<int>(metas.size()) == np;
  info.np = np;
  if (info.host.name.empty())
    info.host.name = metas.begin()->second.host;
  info.mpi_library = metas.begin()->second.mpi_library;
  std::map<std::string, FunctionTotal> totals;
  if (not out.empty())
    fs::create_directories(out);
  for (int r = 0; r < np; ++r) {
    std::unique_ptr<models::TraceWriter> writer;
    if (not out.empty())
      writer = models::make_trace_writer(out / models::rank_file_name(r, info.encoding), info.encoding);
    auto meta = metas.find(r);
    if (meta == metas.end()) {
      // The rank never reached MPI_Init (or its files were lost), or its meta file does not read: an empty
      // trace, an incomplete profile.
      RankSummary s;
      s.rank = r;
      s.status = "missing";
      if (auto d = damaged.find(r); d != damaged.end()) {
        s.status = "damaged";
        s.damage = d->second;
      }
      result.ranks.push_back(s);
      result.all_finalized = false;
    } else {
      RankConverter conv(r, files[r], meta->second.init_ticks, meta->second.end_ticks, meta->second.ticks_per_s,
                         max_records_per_rank);
      RankSummary s = conv.run(writer.get(), totals);
      s.status = meta->second.status;
      // "running" is what MPI_Init wrote: the rank ended without the hook seeing it end (SIGKILL, a crash
      // without a handler), so its file stops where the last flush left it.
      if (s.status == "running")
        s.status = "killed";
      if (meta->second.write_errno != 0) {
        s.write_error = std::strerror(meta->second.write_errno);
        s.records_dropped = meta->second.records_dropped;
      }
      if (s.status != "finalized" || not s.write_error.empty())
        result.all_finalized = false;
      result.ranks.push_back(s);
    }
    if (writer)
      writer->close();
  }
  info.complete = info.complete && result.all_finalized;
  // Each rank's data footprint: what its resident set grew to above the program, its libraries and MPI
  // as MPI_Init left them (the latency model's rate model looks the host's rate up at this size).
  info.footprint_bytes.clear();
  for (int r = 0; r < np; ++r) {
    auto meta = metas.find(r);
    if (meta == metas.end() || meta->second.init_rss_bytes <= 0 || meta->second.peak_rss_bytes <= 0) {
      info.footprint_bytes.clear();
      break;
    }
    info.footprint_bytes.push_back(
        static_cast<double>(std::max<std::int64_t>(0, meta->second.peak_rss_bytes - meta->second.init_rss_bytes)));
  }
  if (info.origin.empty())
    info.origin = "profile";
  if (not out.empty())
    models::write_run_info(out / "run.json", info);
  for (auto& [name, t] : totals)
    result.functions.push_back(t);
  std::sort(result.functions.begin(), result.functions.end(), [](const FunctionTotal& a, const FunctionTotal& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
  });
  return result;
}

}  // namespace gridcast::profiler
