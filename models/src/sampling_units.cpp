// The sampling units of a synthesized run and their features, read from every rank's stream once
// (docs/reference/sampling.md, "Units and features").
#include "gridcast/models/sampling.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"
#include "gridcast/models/call.hpp"
#include "gridcast/models/recorded_loop.hpp"

#include <algorithm>
#include <map>

namespace gridcast::models::sampling {

namespace {

/// The allocation's cost of a unit (Units::proxy_s): its bytes at 10 GB/s and 1 us per message.
constexpr double kProxyBytesPerSecond = 10e9;
constexpr double kProxyMessageSeconds = 1e-6;
/// The nominal speed of compute work given in flops when the trace has no recorded speed.
constexpr double kProxyFlopsPerSecond = 1e9;

bool is_send(Op op) { return op == Op::Send || op == Op::Ssend || op == Op::Isend || op == Op::Issend; }
bool is_receive(Op op) { return op == Op::Recv || op == Op::Irecv; }

/// Messages of one span (a unit, the code before the loop, the last iteration and after), every rank
/// together: a hash of each message's destination summed where it is sent and where it is received. The
/// sums differ when a message leaves the span, except with a probability of about 2^-64.
struct Balance {
  std::uint64_t sent = 0, received = 0;
  std::uint64_t sends = 0, receives = 0;
  bool even() const { return sent == received && sends == receives; }
};

std::uint64_t key_of(int rank) { return splitmix64(0x5a3c'96e1'7b2d'04f8ULL + static_cast<std::uint64_t>(rank)); }

/// Feature columns by name, added as functions appear.
class Columns {
public:
  std::size_t of(const std::string& kind, const std::string& function)
  {
    auto [it, added] = index_.try_emplace(kind + " " + function, names_.size());
    if (added)
      names_.push_back(it->first);
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }

private:
  std::map<std::string, std::size_t> index_;
  std::vector<std::string> names_;
};

}  // namespace

Units collect_units(const TraceSource& source, double recorded_speed_flops)
{
  Units u;
  const TraceSource::SteadyLoop loop = source.steady_loop();
  u.loop            = loop.name;
  u.loop_iterations = loop.iterations;
  if (loop.iterations == 0) {
    u.why_not = loop.why_not.empty() ? "the run has no main loop" : loop.why_not;
    return u;
  }
  if (loop.iterations < 2) {
    u.why_not = "the main loop has 1 iteration: no unit";
    return u;
  }
  // Fewer than 3 units are read (phases and their comparison still apply) but not sampled.
  const bool windows = loop.name == kWindowLoopName;
  const std::string iteration = windows ? "window" : "iteration";
  if (loop.iterations < 4)
    u.why_not = windows ? std::to_string(loop.iterations - 1) + " windows between collectives on MPI_COMM_WORLD: too few units to sample"
                        : "the main loop has " + std::to_string(loop.iterations) + " iterations: too few units to sample";
  u.count = loop.iterations - 1;
  const std::size_t units = static_cast<std::size_t>(u.count);
  const double speed = recorded_speed_flops > 0 ? recorded_speed_flops : kProxyFlopsPerSecond;
  Columns columns;
  u.features.assign(units, {});
  u.proxy_s.assign(units, 0.0);
  // Spans: units 0..count-1, then the code before the loop, then the last iteration and what follows.
  std::vector<Balance> balance(units + 2);
  const std::size_t before = units, after = units + 1;
  std::vector<double> rank_cost(units);
  CallRecord c;
  for (int r = 0; r < source.rank_count(); ++r) {
    CallStreamPtr stream = source.open(r);
    std::fill(rank_cost.begin(), rank_cost.end(), 0.0);
    std::size_t span = before;
    std::vector<std::int64_t> pending;  // requests created and not completed yet
    for (;;) {
      if (auto head = stream->loop_head()) {
        if (not pending.empty() && u.why_not.empty())
          u.why_not = "rank " + std::to_string(r) + " has requests pending at the head of " + iteration + " " +
                      std::to_string(*head) + ": the " + (windows ? "windows" : "loop's iterations") +
                      " are not self-contained";
        span = *head < u.count ? static_cast<std::size_t>(*head) : after;
      }
      if (not stream->next(c))
        break;
      ++u.calls;
      // Requests: created by nonblocking calls, completed by waits and tests.
      // (MPI_Request_free and MPI_Cancel are CommSize records naming the request.)
      if (c.op == Op::Wait || c.op == Op::Test || c.op == Op::Waitany || c.op == Op::Waitall ||
          c.op == Op::CommSize) {
        auto done = [&](std::int64_t id) { std::erase(pending, id); };
        if (c.request != kNoRequest)
          done(c.request);
        for (std::int64_t id : c.requests)
          done(id);
      } else if (c.request != kNoRequest) {
        pending.push_back(c.request);
      }
      Balance& b = balance[span];
      std::uint64_t bytes = 0;
      if (is_send(c.op) || c.op == Op::Sendrecv) {
        if (c.peer >= 0) {
          b.sent += key_of(c.peer);
          ++b.sends;
          bytes += c.bytes;
        }
      }
      if (is_receive(c.op) && c.peer != kNoRank) {
        b.received += key_of(r);
        ++b.receives;
      }
      if (c.op == Op::Sendrecv && c.src != kNoRank && c.src >= kAnySource) {
        b.received += key_of(r);
        ++b.receives;
      }
      if (span >= units)
        continue;
      ++u.unit_calls;
      const std::string& name = stream->functions().name(c.function);
      std::vector<double>& f = u.features[span];
      auto add = [&](const char* kind, double v) {
        const std::size_t col = columns.of(kind, name);
        if (f.size() <= col)
          f.resize(col + 1, 0.0);
        f[col] += v;
      };
      add("calls", 1);
      double work = 0;
      if (c.op == Op::Compute)
        work = c.flops > 0 ? c.flops : c.seconds > 0 ? c.seconds * speed : 0.0;
      if (work > 0)
        add("work", work);
      if (c.op != Op::Compute && c.bytes > 0) {
        add("bytes", static_cast<double>(c.bytes));
        bytes = std::max<std::uint64_t>(bytes, c.bytes);
      }
      double comm_s = 0;
      if (c.op != Op::Compute && c.seconds >= 0)
        comm_s = c.seconds;  // measured (a profile)
      else if (bytes > 0)
        comm_s = static_cast<double>(bytes) / kProxyBytesPerSecond + kProxyMessageSeconds;
      rank_cost[span] += work / speed + comm_s;
    }
    for (std::size_t i = 0; i < units; ++i)
      u.proxy_s[i] = std::max(u.proxy_s[i], rank_cost[i]);
  }
  u.feature_names = columns.names();
  for (std::vector<double>& f : u.features)
    f.resize(u.feature_names.size(), 0.0);
  if (u.why_not.empty())
    for (std::size_t s = 0; s < balance.size(); ++s)
      if (not balance[s].even()) {
        const std::string where =
            s == before  ? (windows ? "the code before the first window" : "the code before the loop")
            : s == after ? (windows ? "the code after the last window" : "the loop's last iteration and the code after it")
                         : iteration + " " + std::to_string(s);
        u.why_not = "messages cross from one " + iteration + " to another (" + where + " sends " +
                    std::to_string(balance[s].sends) + " and receives " + std::to_string(balance[s].receives) +
                    " that do not pair within it): a skipped " + iteration + " would take half of them";
        break;
      }
  return u;
}

namespace {

/// A recorded trace whose streams mark the heads of their main loop, 0 .. N with N at the loop's end, said
/// as a steady loop of N + 1 iterations: the units are then the N iterations and the "last iteration" is
/// what follows the loop.
class RecordedUnits final : public TraceSource {
public:
  RecordedUnits(const LoopMarkedSource& marked, std::uint64_t iterations) : marked_(marked), iterations_(iterations) {}
  int rank_count() const override { return marked_.rank_count(); }
  CallStreamPtr open(int rank) const override { return marked_.open(rank); }
  SteadyLoop steady_loop() const override { return {iterations_ + 1, kRecordedLoopName, {}, false}; }

private:
  const LoopMarkedSource& marked_;
  std::uint64_t iterations_;
};

/// RecordedUnits with its own marking source, for a sampled replay.
class OwnedRecordedUnits final : public TraceSource {
public:
  OwnedRecordedUnits(const TraceSource& recorded, std::uint64_t iterations)
      : marked_(recorded), units_(marked_, iterations)
  {
  }
  int rank_count() const override { return units_.rank_count(); }
  CallStreamPtr open(int rank) const override { return units_.open(rank); }
  SteadyLoop steady_loop() const override { return units_.steady_loop(); }

private:
  LoopMarkedSource marked_;
  RecordedUnits units_;
};

}  // namespace

Units collect_recorded_units(const TraceSource& recorded, double recorded_speed_flops)
{
  LoopMarkedSource marked(recorded);
  for (int r = 0; r < recorded.rank_count(); ++r)
    marked.open(r);  // finds the rank's loop
  const std::vector<RecordedLoop>& loops = marked.loops();
  Units none;
  if (loops.empty() || loops.front().iterations == 0) {
    none.why_not = "rank 0's recorded calls have no loop";
    return none;
  }
  for (std::size_t r = 1; r < loops.size(); ++r)
    if (loops[r].iterations != loops.front().iterations) {
      none.why_not = "the ranks' main loops differ in length (rank 0: " + std::to_string(loops.front().iterations) +
                     " iterations, rank " + std::to_string(r) + ": " + std::to_string(loops[r].iterations) + ")";
      return none;
    }
  Units u = collect_units(RecordedUnits(marked, loops.front().iterations), recorded_speed_flops);
  u.kind = UnitKind::RecordedLoop;
  return u;
}

namespace {

bool is_world_collective(const CallRecord& c) { return is_collective(c.op) && c.comm == kWorldComm; }

/// A rank's stream whose heads are the ends of its collectives on MPI_COMM_WORLD: head i after the (i+1)-th
/// (the inner stream's own heads are not passed on). At its end it leaves the number of heads in `*heads`.
class WindowStream final : public ForwardingStream {
public:
  WindowStream(CallStreamPtr inner, std::uint64_t* heads) : ForwardingStream(std::move(inner)), heads_(heads) {}
  bool next(CallRecord& out) override
  {
    head_.reset();
    if (not inner_->next(out)) {
      if (heads_ != nullptr)
        *heads_ = seen_;
      return false;
    }
    if (is_world_collective(out))
      head_ = seen_++;
    return true;
  }
  std::optional<std::uint64_t> loop_head() override { return head_; }

private:
  std::uint64_t* heads_;
  std::uint64_t seen_ = 0;
  std::optional<std::uint64_t> head_;
};

/// `inner` cut into windows, said as a steady loop of `heads` iterations; with `counted`, each rank's number
/// of heads is kept as its stream ends (what collect_window_units checks).
class WindowUnits final : public TraceSource {
public:
  WindowUnits(const TraceSource& inner, std::uint64_t heads, bool counted)
      : inner_(inner), heads_(heads), counts_(counted ? static_cast<std::size_t>(inner.rank_count()) : 0, 0)
  {
  }
  int rank_count() const override { return inner_.rank_count(); }
  CallStreamPtr open(int rank) const override
  {
    std::uint64_t* count = counts_.empty() ? nullptr : &counts_[static_cast<std::size_t>(rank)];
    return std::make_unique<WindowStream>(inner_.open(rank), count);
  }
  SteadyLoop steady_loop() const override { return {heads_, kWindowLoopName, {}, inner_.steady_loop().random_work}; }
  const std::vector<std::uint64_t>& counts() const { return counts_; }

private:
  const TraceSource& inner_;
  std::uint64_t heads_;
  mutable std::vector<std::uint64_t> counts_;
};

}  // namespace

Units collect_window_units(const TraceSource& source, double recorded_speed_flops)
{
  // Rank 0's count sizes the loop; every rank's is checked as collect_units reads it.
  std::uint64_t heads = 0;
  {
    CallStreamPtr stream = source.open(0);
    CallRecord c;
    while (stream->next(c))
      heads += is_world_collective(c) ? 1 : 0;
  }
  Units u;
  u.kind = UnitKind::Windows;
  u.loop = kWindowLoopName;
  if (heads < 2) {
    u.why_not = "rank 0 makes " + std::to_string(heads) + " collective" + (heads == 1 ? "" : "s") +
                " on MPI_COMM_WORLD: no window between two";
    return u;
  }
  WindowUnits windows(source, heads, true);
  u = collect_units(windows, recorded_speed_flops);
  u.kind = UnitKind::Windows;
  for (std::size_t r = 1; r < windows.counts().size(); ++r)
    if (windows.counts()[r] != heads) {
      u.why_not = "the ranks make different numbers of collectives on MPI_COMM_WORLD (rank 0: " +
                  std::to_string(heads) + ", rank " + std::to_string(r) + ": " + std::to_string(windows.counts()[r]) + ")";
      break;
    }
  return u;
}

Units choose_units(const TraceSource& source, double recorded_speed_flops, bool recorded)
{
  Units loop = recorded ? collect_recorded_units(source, recorded_speed_flops) : collect_units(source, recorded_speed_flops);
  const bool loop_ok = loop.why_not.empty();
  if (loop_ok && loop.count >= kLoopUnitsEnough &&
      static_cast<double>(loop.unit_calls) >= kLoopCallsEnough * static_cast<double>(loop.calls))
    return loop;
  Units windows = collect_window_units(source, recorded_speed_flops);
  if (windows.why_not.empty() && (not loop_ok || windows.unit_calls > loop.unit_calls))
    return windows;
  if (not loop_ok)
    loop.why_not += "; " + std::string(kWindowLoopName) + " cannot be sampled either: " + windows.why_not;
  return loop;
}

std::unique_ptr<TraceSource> unit_source(const TraceSource& emulated, const Units& units)
{
  switch (units.kind) {
    case UnitKind::Loop:
      return nullptr;
    case UnitKind::RecordedLoop:
      if (units.loop_iterations < 2)
        throw InternalError("unit_source: a recorded loop of " + std::to_string(units.loop_iterations) + " iterations");
      return std::make_unique<OwnedRecordedUnits>(emulated, units.loop_iterations - 1);
    case UnitKind::Windows:
      return std::make_unique<WindowUnits>(emulated, units.loop_iterations, false);
  }
  throw InternalError("unit_source: unknown unit kind");
}

}  // namespace gridcast::models::sampling
