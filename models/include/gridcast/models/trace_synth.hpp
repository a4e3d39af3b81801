// Synthesis: every rank's call stream at a target (Nw, Np), generated lazily from a trace model. The
// stream walks the group's rolled template with a stack of loop counters, so its memory does not depend
// on the number of iterations. A SynthSource is a TraceSource: the emulator can replay it directly.
#pragma once

#include "gridcast/models/profile.hpp"
#include "gridcast/models/stream.hpp"
#include "gridcast/models/trace_model.hpp"

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace gridcast::models::trace {

struct SynthTarget {
  double nw = 0;
  int np = 0;
};

struct SynthOptions {
  /// Scatter every compute call around its predicted work by its function's empirical distribution
  /// (model.json latency[].variability), drawn from a generator seeded by `seed` and the rank.
  bool variability = false;
  std::uint64_t seed = 0;
};

/// A template position whose parameter is approximated at the target: by the fit (model.json
/// "approximated"), by a formula that does not reproduce its training points (leave-one-out error above
/// kExactError), or at the target itself (a count or size no formula gives a plausible value for).
struct ApproximatedPosition {
  std::string where;  ///< template path, "groups[0].template[1].body[0]"
  std::string field;  ///< "peer", "bytes", "count"...
  std::string method;
  double train_error = 0;  ///< relative (docs/reference/outputs.md, "model_quality")
};

/// How much of a prediction the model expresses exactly, and how far the target is from training.
struct ModelQuality {
  /// A formula is exact when its leave-one-out error is at most this (relative).
  static constexpr double kExactError = 1e-6;
  std::uint64_t positions = 0;  ///< template positions (loops, calls, polling constructs) of every group
  std::uint64_t exact = 0;      ///< of which every parameter is exact
  std::vector<ApproximatedPosition> approximated;
  /// Target over the training range: > 1 above the largest, < 1 below the smallest, 1 inside.
  double nw_factor = 1;
  double np_factor = 1;
};

class SynthSource final : public TraceSource {
public:
  /// Evaluates every count, size and compute formula at the target and checks that every rank has a
  /// group and every peer a value. A count or size that comes out negative or not finite at the target
  /// is 0 and a count between integers is rounded, each listed in quality(); throws InputError where
  /// the target is outside what the model can place (a rank class never seen, a peer outside 0..Np-1).
  SynthSource(std::shared_ptr<const TraceModel> model, SynthTarget target, SynthOptions options = {});
  ~SynthSource() override;
  int rank_count() const override { return target_.np; }
  CallStreamPtr open(int rank) const override;
  /// The RunInfo a profile directory written from this source gets.
  RunInfo run_info(TraceEncoding encoding) const;
  /// Calls every rank's stream will emit, all ranks together (for progress reports and the --max-calls
  /// limit); 2^64-1 when there are more.
  std::uint64_t total_calls() const;
  /// The loop the emulator may fast-forward: in every group's program, the top-level loop that emits the
  /// most calls, when all have the same number of iterations and none holds calls a skip cannot leave
  /// out (communicator creation, GPU calls, init/finalize). docs/reference/emulator.md.
  SteadyLoop steady_loop() const override;
  /// What the prediction approximates (positions, how, their training error) and how far it extrapolates.
  const ModelQuality& quality() const { return quality_; }

  struct Program;  // the model compiled for the target, shared by the streams
  /// A blocking send, receive or sendrecv of one rank that pairs with nothing at the target: the
  /// ordinal of the call among the rank's blocking point-to-point calls, and which halves to drop
  /// (kDropSend, kDropRecv).
  struct P2pDrop {
    std::uint64_t ordinal = 0;
    std::uint8_t halves = 0;
  };
  static constexpr std::uint8_t kDropSend = 1, kDropRecv = 2;

private:
  /// Where the model approximates something: every rank's point-to-point calls are matched (sends and
  /// receives per source, destination, tag and communicator, in order), and the blocking receives
  /// (or receive halves of a sendrecv) that no send matches are dropped from the streams, counted in
  /// quality() (a receive without its send would block the run forever).
  void balance_point_to_point();
  std::shared_ptr<const TraceModel> model_;
  SynthTarget target_;
  SynthOptions options_;
  std::vector<std::shared_ptr<const Program>> programs_;  ///< per group
  std::vector<int> group_of_rank_;
  std::string origin_;
  ModelQuality quality_;
  std::vector<std::vector<P2pDrop>> drops_;  ///< per rank, by ordinal (empty: nothing dropped)
};

/// One line per approximated position ("approximated: groups[0].template[1] peer: ... (training error
/// 12.5 %)"), then the exact share and the extrapolation factors: what `predict` and `synth` print.
/// Nothing where every position is exact.
void print_quality(std::ostream& out, const ModelQuality& q);

/// Writes rank `rank`'s stream as SMPI time-independent trace lines (sizes as MPI_BYTE counts, any source
/// as -555, any tag as -444), the syntax `gridcast import tit` and `smpirun -replay` read. Nonblocking
/// collectives are written as `smpirun -trace-ti` writes them ("iallreduce ...", "wait S S TAG"), which
/// `smpirun -replay` of SimGrid 3.32 does not read. Throws InputError for ops TIT cannot express
/// (MPI_Comm_idup included).
void write_tit_rank(CallStream& stream, int rank, int np, std::ostream& out);

/// Writes DIR/trace.txt (the index) and DIR/trace.txt_files/rank-<r+1>.txt for every rank of `source`.
void write_tit(const TraceSource& source, const std::filesystem::path& dir);

}  // namespace gridcast::models::trace
