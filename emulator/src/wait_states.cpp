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

WaitStateRecorder::WaitStateRecorder(int ranks) : ranks_(ranks) {}

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
                                       double partner_post_s, bool partner_is_send)
{
  if (partner_post_s <= begin_s)
    return;  // the partner was there first: whatever the call took is communication
  add(waits_, rank, function_id(function), partner_is_send ? WaitKind::LateSender : WaitKind::LateReceiver,
      std::min(partner_post_s, end_s) - begin_s);
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
  in.entries.push_back({comm_rank, rank, function_id(function), begin_s, end_s});
}

WaitStateReport WaitStateRecorder::report(const std::vector<double>& finish_s) const
{
  // The collective waits: each instance once every member entered (a run that stopped early leaves some
  // incomplete; they are not counted).
  Waits waits = waits_;
  for (const auto& [key, in] : collectives_) {
    if (static_cast<int>(in.entries.size()) != in.size || in.size < 2)
      continue;
    double last = -std::numeric_limits<double>::infinity();
    double root_begin = 0;
    double first_other = std::numeric_limits<double>::infinity();
    for (const Entry& e : in.entries) {
      last = std::max(last, e.begin_s);
      if (e.comm_rank == in.root)
        root_begin = e.begin_s;
      else
        first_other = std::min(first_other, e.begin_s);
    }
    for (const Entry& e : in.entries) {
      double until = e.begin_s;  // when what this rank waits for arrived
      switch (in.kind) {
        case WaitKind::WaitAtNxN:
        case WaitKind::WaitAtBarrier: until = last; break;
        case WaitKind::LateBroadcast: until = e.comm_rank == in.root ? e.begin_s : root_begin; break;
        case WaitKind::EarlyReduce: until = e.comm_rank == in.root ? first_other : e.begin_s; break;
        case WaitKind::EarlyScan:
          for (const Entry& o : in.entries)
            if (o.comm_rank < e.comm_rank)
              until = std::max(until, o.begin_s);
          break;
        case WaitKind::LateSender:
        case WaitKind::LateReceiver: break;
      }
      add(waits, e.rank, e.function, in.kind, std::min(until, e.end_s) - e.begin_s);
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
  return r;
}

}  // namespace gridcast::emulator
