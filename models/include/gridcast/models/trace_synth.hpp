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

class SynthSource final : public TraceSource {
public:
  /// Evaluates every count, size and compute formula at the target and checks that every rank has a
  /// group and every peer a value; throws InputError where the target is outside what the model can
  /// express (a rank class never seen, a negative count, a peer outside 0..Np-1).
  SynthSource(std::shared_ptr<const TraceModel> model, SynthTarget target, SynthOptions options = {});
  ~SynthSource() override;
  int rank_count() const override { return target_.np; }
  CallStreamPtr open(int rank) const override;
  /// The RunInfo a profile directory written from this source gets.
  RunInfo run_info(TraceEncoding encoding) const;
  /// Calls every rank's stream will emit, all ranks together (for progress reports).
  std::uint64_t total_calls() const;
  /// The loop the emulator may fast-forward: in every group's program, the top-level loop that emits the
  /// most calls, when all have the same number of iterations and none holds calls a skip cannot leave
  /// out (communicator creation, GPU calls, init/finalize). docs/reference/emulator.md.
  SteadyLoop steady_loop() const override;

  struct Program;  // the model compiled for the target, shared by the streams

private:
  std::shared_ptr<const TraceModel> model_;
  SynthTarget target_;
  SynthOptions options_;
  std::vector<std::shared_ptr<const Program>> programs_;  ///< per group
  std::vector<int> group_of_rank_;
  std::string origin_;
};

/// Writes rank `rank`'s stream as SMPI time-independent trace lines (sizes as MPI_BYTE counts, any source
/// as -555, any tag as -444), the syntax `gridcast import tit` and `smpirun -replay` read. Nonblocking
/// collectives are written as `smpirun -trace-ti` writes them ("iallreduce ...", "wait S S TAG"), which
/// `smpirun -replay` of SimGrid 3.32 does not read. Throws InputError for ops TIT cannot express
/// (MPI_Comm_idup included).
void write_tit_rank(CallStream& stream, int rank, int np, std::ostream& out);

/// Writes DIR/trace.txt (the index) and DIR/trace.txt_files/rank-<r+1>.txt for every rank of `source`.
void write_tit(const TraceSource& source, const std::filesystem::path& dir);

}  // namespace gridcast::models::trace
