#include "gridcast/emulator/wait_states.hpp"

#include <algorithm>
#include <limits>

namespace gridcast::emulator {

const char* wait_kind_name(WaitKind k)
{
  switch (k) {
    case WaitKind::LateSender: return "late_sender";
    case WaitKind::LateReceiver: return "late_receiver";
    case WaitKind::WaitAtNxN: return "wait_at_nxn";
    case WaitKind::WaitAtBarrier: return "wait_at_barrier";
    case WaitKind::LateBroadcast: return "late_broadcast";
    case WaitKind::EarlyReduce: return "early_reduce";
    case WaitKind::EarlyScan: return "early_scan";
  }
  return "?";
}

const char* wait_kind_words(WaitKind k)
{
  switch (k) {
    case WaitKind::LateSender: return "late sender";
    case WaitKind::LateReceiver: return "late receiver";
    case WaitKind::WaitAtNxN: return "wait at N x N";
    case WaitKind::WaitAtBarrier: return "wait at barrier";
    case WaitKind::LateBroadcast: return "late broadcast";
    case WaitKind::EarlyReduce: return "early reduce";
    case WaitKind::EarlyScan: return "early scan";
  }
  return "?";
}

WaitStateRecorder::WaitStateRecorder(int ranks, bool critical_path, bool marks)
    : ranks_(ranks), log_calls_(critical_path), marks_(marks)
{
  if (log_calls_)
    calls_.resize(static_cast<std::size_t>(ranks));
}

void WaitStateRecorder::call(int rank, const std::string& function, double begin_s, double end_s)
{
  calls_[static_cast<std::size_t>(rank)].push_back({begin_s, end_s, function_id(function), -1, 0});
}

std::uint32_t WaitStateRecorder::function_id(const std::string& f)
{
  auto [it, inserted] = function_ids_.try_emplace(f, static_cast<std::uint32_t>(functions_.size()));
  if (inserted)
    functions_.push_back(f);
  return it->second;
}

void WaitStateRecorder::add(Waits& waits, int rank, std::uint32_t function, WaitKind kind, double seconds)
{
  if (seconds <= 0)
    return;
  WaitTotal& t = waits[{rank, function, kind}];
  t.seconds += seconds;
  ++t.calls;
}

void WaitStateRecorder::point_to_point(int rank, const std::string& function, double begin_s, double end_s,
                                       double partner_post_s, bool partner_is_send, int partner_rank)
{
  if (log_calls_ && partner_rank >= 0) {
    Call& c    = calls_[static_cast<std::size_t>(rank)].back();
    c.peer      = partner_rank;
    c.from_peer = partner_is_send;
  }
  if (partner_post_s <= begin_s)
    return;  // the partner was there first: whatever the call took is communication
  if (log_calls_ && partner_rank >= 0) {
    Call& c   = calls_[static_cast<std::size_t>(rank)].back();
    c.partner   = partner_rank;
    c.partner_s = std::min(partner_post_s, end_s);
  }
  const WaitKind kind = partner_is_send ? WaitKind::LateSender : WaitKind::LateReceiver;
  add(waits_, rank, function_id(function), kind, std::min(partner_post_s, end_s) - begin_s);
  if (marks_)
    p2p_marks_.push_back({rank, kind, begin_s, std::min(partner_post_s, end_s)});
}

void WaitStateRecorder::collective(int comm_id, std::uint64_t sequence, WaitKind kind, int comm_size, int comm_rank,
                                   int root, int rank, const std::string& function, double begin_s, double end_s)
{
  Instance& in = collectives_[{comm_id, sequence}];
  if (in.entries.empty()) {
    in.kind = kind;
    in.root = root;
    in.size = comm_size;
  }
  const std::size_t call = log_calls_ ? calls_[static_cast<std::size_t>(rank)].size() - 1 : 0;
  in.entries.push_back({comm_rank, rank, function_id(function), begin_s, end_s, call});
}

void WaitStateRecorder::iteration(int rank, std::uint64_t index, double compute_s)
{
  if (heads_.empty())
    heads_.resize(static_cast<std::size_t>(ranks_));
  auto& h = heads_[static_cast<std::size_t>(rank)];
  if (h.empty() || index > h.back().first)  // each head once, in order
    h.emplace_back(index, compute_s);
}

std::vector<IterationImbalance> WaitStateRecorder::imbalance() const
{
  std::vector<IterationImbalance> out;
  if (heads_.empty())
    return out;
  // Iteration i is measured where every rank reached heads i and i + 1 (consecutive in its list).
  std::size_t common = heads_[0].size();
  for (const auto& h : heads_)
    common = std::min(common, h.size());
  for (std::size_t k = 0; k + 1 < common; ++k) {
    const std::uint64_t index = heads_[0][k].first;
    IterationImbalance it;
    it.iteration = index;
    bool measured = true;
    double sum = 0;
    for (std::size_t r = 0; r < heads_.size() && measured; ++r) {
      const auto& h = heads_[r];
      measured = h[k].first == index && h[k + 1].first == index + 1;
      const double c = h[k + 1].second - h[k].second;
      sum += c;
      if (r == 0 || c > it.max_compute_s) {
        it.max_compute_s = c;
        it.max_rank = static_cast<int>(r);
      }
    }
    if (not measured)
      break;
    it.mean_compute_s = sum / static_cast<double>(heads_.size());
    out.push_back(it);
  }
  return out;
}

WaitStateReport WaitStateRecorder::report(const std::vector<double>& finish_s)
{
  // The collective waits: each instance once every member entered (a run that stopped early leaves some
  // incomplete; they are not counted).
  Waits waits = waits_;
  std::vector<WaitMark> collective_marks;
  for (const auto& [key, in] : collectives_) {
    if (static_cast<int>(in.entries.size()) != in.size || in.size < 2)
      continue;
    double first_other = std::numeric_limits<double>::infinity();  // early reduce: the first non-root entry
    for (const Entry& e : in.entries)
      if (e.comm_rank != in.root)
        first_other = std::min(first_other, e.begin_s);
    // The latest entry among those `pick` accepts (the lowest rank of several at the same time): what a
    // rank waits for, and where the critical path moves.
    auto who = [&](auto pick) {
      const Entry* w = nullptr;
      for (const Entry& o : in.entries)
        if (pick(o) && (w == nullptr || o.begin_s > w->begin_s || (o.begin_s == w->begin_s && o.rank < w->rank)))
          w = &o;
      return w;
    };
    for (const Entry& e : in.entries) {
      const Entry* by = nullptr;  // what this rank waits for
      switch (in.kind) {
        case WaitKind::WaitAtNxN:
        case WaitKind::WaitAtBarrier: by = who([](const Entry&) { return true; }); break;
        case WaitKind::LateBroadcast: by = who([&](const Entry& o) { return o.comm_rank == in.root; }); break;
        case WaitKind::EarlyReduce:
          if (e.comm_rank == in.root)
            for (const Entry& o : in.entries)
              if (o.comm_rank != in.root && o.begin_s == first_other && (by == nullptr || o.rank < by->rank))
                by = &o;
          break;
        case WaitKind::EarlyScan: by = who([&](const Entry& o) { return o.comm_rank < e.comm_rank; }); break;
        case WaitKind::LateSender:
        case WaitKind::LateReceiver: break;
      }
      if (by == nullptr || by->begin_s <= e.begin_s)
        continue;
      const double until = std::min(by->begin_s, e.end_s);
      add(waits, e.rank, e.function, in.kind, until - e.begin_s);
      if (marks_ && until > e.begin_s)
        collective_marks.push_back({e.rank, in.kind, e.begin_s, until});
      if (log_calls_) {
        Call& c   = calls_[static_cast<std::size_t>(e.rank)][e.call];
        c.partner   = by->rank;
        c.partner_s = until;
      }
    }
  }
  WaitStateReport r;
  r.by_rank.assign(static_cast<std::size_t>(ranks_), WaitTotal{});
  for (double f : finish_s)
    r.rank_time_s += f;
  for (const auto& [key, t] : waits) {
    const auto& [rank, function, kind] = key;
    r.total_s += t.seconds;
    WaitTotal& k = r.by_kind[kind];
    k.seconds += t.seconds;
    k.calls += t.calls;
    if (rank >= 0 && rank < ranks_) {
      r.by_rank[static_cast<std::size_t>(rank)].seconds += t.seconds;
      r.by_rank[static_cast<std::size_t>(rank)].calls += t.calls;
    }
    r.entries.push_back({rank, functions_[function], kind, t});
  }
  std::stable_sort(r.entries.begin(), r.entries.end(), [](const WaitEntry& a, const WaitEntry& b) {
    return a.total.seconds > b.total.seconds;  // entries come ordered by (rank, function id, kind): ties keep it
  });
  if (log_calls_)
    r.critical_path = walk(finish_s);
  r.iterations = imbalance();
  if (marks_) {
    r.marks = p2p_marks_;
    r.marks.insert(r.marks.end(), collective_marks.begin(), collective_marks.end());
  }
  return r;
}

CriticalPath WaitStateRecorder::walk(const std::vector<double>& finish_s) const
{
  CriticalPath p;
  p.by_rank.assign(static_cast<std::size_t>(ranks_), 0.0);
  for (std::size_t r = 0; r < finish_s.size(); ++r)
    if (finish_s[r] > finish_s[static_cast<std::size_t>(p.end_rank)])
      p.end_rank = static_cast<int>(r);
  if (finish_s.empty())
    return p;
  constexpr std::uint32_t kBetween = std::numeric_limits<std::uint32_t>::max();
  std::map<std::uint32_t, double> by_function;
  auto segment = [&](int rank, std::uint32_t function, double from, double to, const Call* c = nullptr) {
    if (to <= from)
      return;
    p.by_rank[static_cast<std::size_t>(rank)] += to - from;
    by_function[function] += to - from;
    const auto between = static_cast<std::uint32_t>(functions_.size());  // "(between calls)" after the others
    p.segments.push_back({rank, function == kBetween ? between : function, from, to, c != nullptr ? c->peer : -1,
                          c != nullptr && c->from_peer});
  };
  int r    = p.end_rank;
  double t = finish_s[static_cast<std::size_t>(r)];
  p.length_s = t;
  while (t > 0) {
    const std::vector<Call>& log = calls_[static_cast<std::size_t>(r)];
    // The last call that began before t: each step moves t back, to a call's start or to a partner's arrival.
    auto it = std::lower_bound(log.begin(), log.end(), t, [](const Call& c, double v) { return c.begin_s < v; });
    if (it == log.begin()) {
      segment(r, kBetween, 0, t);
      break;
    }
    const Call& c = *(it - 1);
    if (c.end_s < t) {
      segment(r, kBetween, c.end_s, t);
      t = c.end_s;
    }
    if (c.partner >= 0 && c.partner_s > c.begin_s && c.partner_s < t) {
      segment(r, c.function, c.partner_s, t, &c);
      t = c.partner_s;
      r = c.partner;
      ++p.rank_changes;
      continue;
    }
    segment(r, c.function, c.begin_s, t, &c);
    t = c.begin_s;
  }
  std::reverse(p.segments.begin(), p.segments.end());  // walked from the end
  p.functions = functions_;
  p.functions.emplace_back("(between calls)");
  for (const auto& [f, seconds] : by_function)
    p.by_function.emplace_back(f == kBetween ? std::string("(between calls)") : functions_[f], seconds);
  std::stable_sort(p.by_function.begin(), p.by_function.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return p;
}

}  // namespace gridcast::emulator
