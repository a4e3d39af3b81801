// Wait states of an emulated run (`--analysis waits`), as Scalasca classifies them on real runs: the time a
// rank spends inside an MPI call waiting for a partner that has not got there yet. On an emulated run every
// event time is exact and repeatable, so each wait is too.
//
//   late sender     a receive (MPI_Recv, a wait on an irecv, the receive half of MPI_Sendrecv) waits for its
//                   message's send to be posted: from the call's start to the send's post time;
//   late receiver   a send that cannot finish before its receive is posted (rendezvous, MPI_Ssend) waits
//                   from the call's start to the receive's post time;
//   wait at N x N   an all-to-all collective (allreduce, allgather(v), alltoall(v), reduce_scatter) waits
//                   from the rank's entry to the last member's entry;
//   wait at barrier the same for MPI_Barrier;
//   late broadcast  a non-root of a one-to-all collective (bcast, scatter(v)) entered before the root: from
//                   its entry to the root's;
//   early reduce    the root of an all-to-one collective (reduce, gather(v)) entered before every other
//                   member: from its entry to the first other member's;
//   early scan      a rank of MPI_Scan / MPI_Exscan waits for the last lower rank's entry.
// A call's wait is clipped to the call (it cannot wait past its own end). A call that completes several
// requests waits for the latest of their partners, counted once under that partner's kind.
// Nonblocking collectives are not classified (their time overlaps the caller's).
//
// The critical path (`--analysis critical-path`): the chain of calls and waits that decides when the run
// ends, walked backward from the end of the rank that finishes last. Within a rank, time goes to the call
// it was in (or "(between calls)"); where a call waited (any kind above) and the walk reaches the moment
// its partner arrived, the walk moves to the partner rank at that moment: what came before was the
// partner's. Its length is the last rank's finish time by construction; by rank and by function it says
// whose work and which calls a faster run would have to shorten.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace gridcast::emulator {

enum class WaitKind : std::uint8_t { LateSender, LateReceiver, WaitAtNxN, WaitAtBarrier, LateBroadcast, EarlyReduce, EarlyScan };
inline constexpr int kWaitKinds = 7;

/// Stable snake_case name used in analysis.json ("late_sender", ...).
const char* wait_kind_name(WaitKind k);
/// Words for the console ("late sender", ...).
const char* wait_kind_words(WaitKind k);

/// Wait time of one kind, and in how many calls it occurred.
struct WaitTotal {
  double seconds = 0;
  std::uint64_t calls = 0;
};

/// One (rank, function, kind) with its waits.
struct WaitEntry {
  int rank = 0;
  std::string function;
  WaitKind kind = WaitKind::LateSender;
  WaitTotal total;
};

/// The critical path (--analysis critical-path).
struct CriticalPath {
  double length_s = 0;       ///< the last rank's finish time
  int end_rank = 0;          ///< the rank that finishes last (the lowest of several)
  std::uint64_t rank_changes = 0;  ///< moves to a partner rank
  std::vector<double> by_rank;     ///< seconds of the path on each world rank
  /// Seconds of the path in each function ("(between calls)": time outside any call), the longest first.
  std::vector<std::pair<std::string, double>> by_function;
  /// The path itself, in time order: where it runs from `begin_s` to `end_s` (timeline.json, by_link).
  struct Segment {
    int rank = 0;
    std::uint32_t function = 0;  ///< index in `functions`
    double begin_s = 0, end_s = 0;
    int peer = -1;           ///< a point-to-point call's latest partner (-1: none, or a collective)
    bool from_peer = false;  ///< its data came from the peer (a receive), else went to it
  };
  std::vector<Segment> segments;
  std::vector<std::string> functions;  ///< the segments' function names ("(between calls)" last)
  /// Seconds of the path in point-to-point calls, by the bottleneck link of their message's route (the
  /// least bandwidth; split among equals), the longest first. Set by the emulator, which knows the routes.
  std::vector<std::pair<std::string, double>> by_link;
};

/// One wait, when it happened (with timeline marks: WaitStateRecorder's `marks`); drawn inside the call
/// that waited, which the timeline already names.
struct WaitMark {
  int rank = 0;
  WaitKind kind = WaitKind::LateSender;
  double begin_s = 0, end_s = 0;
};

/// The load imbalance of one iteration of a predicted run's steady loop (Scalasca's: the most loaded rank's
/// compute over the mean), from one head of the loop to the next on every rank.
struct IterationImbalance {
  std::uint64_t iteration = 0;
  double mean_compute_s = 0;
  double max_compute_s = 0;
  int max_rank = 0;  ///< the lowest of equals
  double imbalance_s() const { return max_compute_s - mean_compute_s; }
};

struct WaitStateReport {
  double total_s = 0;                  ///< every wait of every rank
  double rank_time_s = 0;              ///< the ranks' finish times summed (what the waits are a share of)
  std::map<WaitKind, WaitTotal> by_kind;
  std::vector<WaitTotal> by_rank;      ///< all kinds, by world rank
  /// Every (rank, function, kind) that waited, the longest first (ties: rank, function, kind).
  std::vector<WaitEntry> entries;
  std::optional<CriticalPath> critical_path;  ///< set when the recorder logged every call
  std::vector<WaitMark> marks;  ///< every wait, in the order they were noted (only with marks on)
  /// Per iteration of the steady loop, where the run has one (predict: synthesized streams mark its heads;
  /// replay: each rank's recorded calls folded, models/recorded_loop.hpp): every iteration whose start and
  /// the next one's were seen on every rank.
  std::vector<IterationImbalance> iterations;
  std::string iterations_loop = "the steady loop";  ///< which loop, for reports
  std::string iterations_note;  ///< why a recorded trace's iterations are not measured (empty: they are)
};

/// What one rank's calls tell the recorder. The emulator calls it; it computes the collective waits once
/// every member's entry is known (at the end of the run).
class WaitStateRecorder {
public:
  /// `critical_path`: log every call (call()) for the critical path. `marks`: keep every wait with its
  /// times (WaitStateReport::marks, drawn on timeline.json), and the path's segments.
  WaitStateRecorder(int ranks, bool critical_path, bool marks = false);

  bool logs_calls() const { return log_calls_; }
  /// With the critical path: every call of `rank`, in order, before point_to_point() or collective() on it.
  void call(int rank, const std::string& function, double begin_s, double end_s);

  /// A point-to-point call of `rank` (function `function`) from `begin_s` to `end_s` whose latest partner
  /// was posted at `partner_post_s` (< 0: none), that partner being a send (late sender) or not.
  /// `partner_rank`: the world rank of that partner.
  void point_to_point(int rank, const std::string& function, double begin_s, double end_s, double partner_post_s,
                      bool partner_is_send, int partner_rank);

  /// Entry of `rank` (its rank `comm_rank` in a communicator of `comm_size` ranks, id `comm_id`) into the
  /// `sequence`-th blocking collective it calls on that communicator. `root`: the collective's root as a
  /// communicator rank (-1: none).
  void collective(int comm_id, std::uint64_t sequence, WaitKind kind, int comm_size, int comm_rank, int root, int rank,
                  const std::string& function, double begin_s, double end_s);

  /// `rank` is at the head of iteration `index` of the steady loop, having computed `compute_s` so far.
  void iteration(int rank, std::uint64_t index, double compute_s);

  /// The report; `finish_s[r]`: when rank r ended. Once, at the end of the run.
  WaitStateReport report(const std::vector<double>& finish_s);

private:
  struct Entry {
    int comm_rank = 0;
    int rank = 0;
    std::uint32_t function = 0;
    double begin_s = 0, end_s = 0;
    std::size_t call = 0;  ///< index in calls_[rank] (with the critical path)
  };
  /// One logged call: what it waited for, if anything (partner -1: nothing).
  struct Call {
    double begin_s = 0, end_s = 0;
    std::uint32_t function = 0;
    int partner = -1;
    double partner_s = 0;
    int peer = -1;  ///< a point-to-point call's latest partner, whether it waited for it or not
    bool from_peer = false;
  };
  CriticalPath walk(const std::vector<double>& finish_s) const;
  struct Instance {
    WaitKind kind = WaitKind::WaitAtNxN;
    int root = -1;
    int size = 0;
    std::vector<Entry> entries;
  };
  using Waits = std::map<std::tuple<int, std::uint32_t, WaitKind>, WaitTotal>;  ///< (rank, function, kind)
  static void add(Waits& waits, int rank, std::uint32_t function, WaitKind kind, double seconds);
  std::uint32_t function_id(const std::string& f);

  int ranks_;
  bool log_calls_ = false;
  bool marks_ = false;
  std::vector<WaitMark> p2p_marks_;  ///< point-to-point waits as they are noted (with marks)
  /// Per rank, its compute so far at each head of the steady loop it reached, by iteration index.
  std::vector<std::vector<std::pair<std::uint64_t, double>>> heads_;
  std::vector<IterationImbalance> imbalance() const;
  std::vector<std::vector<Call>> calls_;  ///< by world rank, with the critical path
  std::vector<std::string> functions_;
  std::map<std::string, std::uint32_t> function_ids_;
  std::map<std::pair<int, std::uint64_t>, Instance> collectives_;  ///< (communicator, sequence)
  Waits waits_;  ///< point-to-point waits; the collective ones are computed by report()
};

}  // namespace gridcast::emulator
