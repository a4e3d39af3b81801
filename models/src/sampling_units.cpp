// The sampling units of a synthesized run and their features, read from every rank's stream once
// (docs/reference/sampling.md, "Units and features").
#include "gridcast/models/sampling.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"
#include "gridcast/models/call.hpp"
#include "gridcast/models/recorded_loop.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

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
    u.why_not = windows ? std::to_string(loop.iterations - 1) + " windows between collectives on communicators of every rank: too few units to sample"
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

/// Which communicators hold every rank, as one rank's stream goes: MPI_COMM_WORLD, a duplicate of one
/// that does, and a split of one that does where every rank gives the same colour (MPI_Cart_create of
/// every rank, as the hook records it). A rank cannot see the others' colours, so a first pass takes every
/// such split as whole and notes the colours; the splits found to differ between ranks (`partial`) are
/// then taken as not whole. A creation is named by its lineage, "0.2.1": the second creation on the
/// third one made on world, the same name on every rank that makes it since the creations on one
/// communicator are collective, and in the same order on each of its ranks.
class WholeComms {
public:
  explicit WholeComms(const std::set<std::string>* partial) : partial_(partial) {}
  bool whole(std::int32_t comm) const { return whole_.contains(comm); }
  /// After each record: a creation makes its new handle whole or not.
  void after(const CallRecord& c)
  {
    if (c.op != Op::CommSplit && c.op != Op::CommDup)
      return;
    const auto parent = lineage_.find(c.comm);
    if (parent == lineage_.end()) {  // made on a communicator whose creation is not in the trace
      whole_.erase(c.new_comm);
      lineage_.erase(c.new_comm);
      made_.erase(c.new_comm);
      return;
    }
    const std::string name = parent->second + "." + std::to_string(made_[c.comm]++);
    bool is_whole = whole(c.comm);
    if (is_whole && c.op == Op::CommSplit) {
      colours_.emplace(name, c.color);
      is_whole = c.color >= 0 && not partial_->contains(name);
    }
    lineage_[c.new_comm] = name;
    made_.erase(c.new_comm);  // a handle freed and made again starts a new lineage
    if (is_whole)
      whole_.insert(c.new_comm);
    else
      whole_.erase(c.new_comm);
  }
  /// The colour this rank gave each split of a communicator taken as whole, by lineage.
  const std::map<std::string, std::int32_t>& colours() const { return colours_; }

private:
  const std::set<std::string>* partial_;
  std::set<std::int32_t> whole_{kWorldComm};
  std::map<std::int32_t, std::string> lineage_{{kWorldComm, "0"}};
  std::map<std::int32_t, std::uint64_t> made_;
  std::map<std::string, std::int32_t> colours_;
};

/// A rank's stream whose heads are the ends of its collectives on communicators of every rank: head i after
/// the (i+1)-th (the inner stream's own heads are not passed on). At its end it leaves the number of heads
/// in `*heads` and the colours of its splits in `*colours`, where given.
class WindowStream final : public ForwardingStream {
public:
  WindowStream(CallStreamPtr inner, const std::set<std::string>* partial, std::uint64_t* heads,
               std::map<std::string, std::int32_t>* colours)
      : ForwardingStream(std::move(inner)), comms_(partial), heads_(heads), colours_(colours)
  {
  }
  bool next(CallRecord& out) override
  {
    head_.reset();
    if (not inner_->next(out)) {
      if (heads_ != nullptr)
        *heads_ = seen_;
      if (colours_ != nullptr)
        *colours_ = comms_.colours();
      return false;
    }
    if (is_collective(out.op) && comms_.whole(out.comm))
      head_ = seen_++;
    comms_.after(out);
    return true;
  }
  std::optional<std::uint64_t> loop_head() override { return head_; }

private:
  WholeComms comms_;
  std::uint64_t* heads_;
  std::map<std::string, std::int32_t>* colours_;
  std::uint64_t seen_ = 0;
  std::optional<std::uint64_t> head_;
};

/// `inner` cut into windows, said as a steady loop of `heads` iterations; with `counted`, each rank's number
/// of heads and its splits' colours are kept as its stream ends (what collect_window_units checks).
class WindowUnits final : public TraceSource {
public:
  WindowUnits(const TraceSource& inner, std::set<std::string> partial, std::uint64_t heads, bool counted)
      : inner_(inner), partial_(std::move(partial)), heads_(heads),
        counts_(counted ? static_cast<std::size_t>(inner.rank_count()) : 0, 0),
        colours_(counts_.size())
  {
  }
  int rank_count() const override { return inner_.rank_count(); }
  CallStreamPtr open(int rank) const override
  {
    const bool counted = not counts_.empty();
    const auto r = static_cast<std::size_t>(rank);
    return std::make_unique<WindowStream>(inner_.open(rank), &partial_, counted ? &counts_[r] : nullptr,
                                          counted ? &colours_[r] : nullptr);
  }
  SteadyLoop steady_loop() const override { return {heads_, kWindowLoopName, {}, inner_.steady_loop().random_work}; }
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  const std::vector<std::map<std::string, std::int32_t>>& colours() const { return colours_; }

private:
  const TraceSource& inner_;
  std::set<std::string> partial_;
  std::uint64_t heads_;
  mutable std::vector<std::uint64_t> counts_;
  mutable std::vector<std::map<std::string, std::int32_t>> colours_;
};

/// The splits taken as whole that are not: a rank that gives another colour than rank 0, or none.
std::set<std::string> partial_splits(const std::vector<std::map<std::string, std::int32_t>>& colours)
{
  std::set<std::string> partial;
  for (const auto& rank : colours)
    for (const auto& [name, colour] : rank) {
      const auto at0 = colours.front().find(name);
      if (colour < 0 || at0 == colours.front().end() || at0->second != colour)
        partial.insert(name);
    }
  for (const auto& [name, colour] : colours.front())
    for (const auto& rank : colours)
      if (not rank.contains(name))
        partial.insert(name);
  return partial;
}

}  // namespace

Units collect_window_units(const TraceSource& source, double recorded_speed_flops)
{
  // Rank 0's count sizes the loop; every rank's is checked as collect_units reads it. A second pass when
  // the first finds splits that do not hold every rank (WholeComms): at most two, since a split's
  // lineage does not depend on which others are whole.
  std::set<std::string> partial;
  for (int pass = 0;; ++pass) {
    std::uint64_t heads = 0;
    {
      WindowStream stream(source.open(0), &partial, nullptr, nullptr);
      CallRecord c;
      while (stream.next(c))
        heads += stream.loop_head() ? 1 : 0;
    }
    Units u;
    u.kind = UnitKind::Windows;
    u.loop = kWindowLoopName;
    if (heads < 2) {
      u.why_not = "rank 0 makes " + std::to_string(heads) + " collective" + (heads == 1 ? "" : "s") +
                  " on communicators of every rank: no window between two";
      return u;
    }
    WindowUnits windows(source, partial, heads, true);
    u = collect_units(windows, recorded_speed_flops);
    u.kind = UnitKind::Windows;
    std::set<std::string> found = partial_splits(windows.colours());
    if (pass == 0 && not found.empty()) {
      partial = std::move(found);
      continue;
    }
    if (not std::includes(partial.begin(), partial.end(), found.begin(), found.end()))
      throw InternalError("collect_window_units: the splits of whole communicators changed between passes");
    u.partial_splits.assign(partial.begin(), partial.end());
    for (std::size_t r = 1; r < windows.counts().size(); ++r)
      if (windows.counts()[r] != heads) {
        u.why_not = "the ranks make different numbers of collectives on communicators of every rank (rank 0: " +
                    std::to_string(heads) + ", rank " + std::to_string(r) + ": " +
                    std::to_string(windows.counts()[r]) + ")";
        break;
      }
    return u;
  }
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
      return std::make_unique<WindowUnits>(
          emulated, std::set<std::string>(units.partial_splits.begin(), units.partial_splits.end()),
          units.loop_iterations, false);
  }
  throw InternalError("unit_source: unknown unit kind");
}

}  // namespace gridcast::models::sampling
