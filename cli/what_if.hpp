// `--what-if EXPR` on replay and predict: rerun with a change and say what it changed. The changes:
//   compute:FUNC*F      every compute call named FUNC (a library call, an application function, or
//                       `compute`, the time between calls) takes F times its work
//   rank:R compute*F    every compute call of rank R takes F times its work
//   link:NAME bw*F      the link NAME (or both directions of a split-duplex NAME) has F times its bandwidth
//   link:NAME lat*F     ... F times its latency
// F is a finite number > 0. The run with the changes goes first, so that a change naming a function or
// a link the run does not have stops before the other run is paid for; the run without them follows, in a
// child process of the same program (SimGrid runs one simulation per process), into DIR/baseline with
// --out DIR or a temporary folder otherwise; both carry the critical path, and `gridcast diff` of the two
// is printed.
#pragma once

#include "gridcast/emulator/config.hpp"
#include "gridcast/models/stream.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace gridcast::cli {

/// The --what-if option's help (replay and predict).
inline constexpr const char* kWhatIfHelp =
    "rerun with a change, repeatable: compute:FUNC*F (every compute call named FUNC, or `compute`, the time "
    "between calls, takes F times its work), rank:R compute*F (every compute call of rank R), link:NAME bw*F or "
    "link:NAME lat*F (a link's bandwidth or latency; the stem of a NAME_UP/NAME_DOWN pair scales both). The run "
    "with the changes goes first (a FUNC or NAME the run lacks stops it), then the run without them (into "
    "DIR/baseline with --out DIR); both get the critical path, and what changed is printed as `gridcast diff` "
    "prints it";

struct WhatIf {
  struct ComputeScale {
    std::string expression;
    std::string function;  ///< empty: every function of `rank`
    int rank = -1;         ///< -1: every rank
    double factor = 1;
    std::uint64_t matched = 0;  ///< compute calls it changed (a change that matched none is an error)
  };
  std::vector<std::string> expressions;
  std::vector<ComputeScale> compute;
  std::vector<emulator::ReplayOptions::LinkScale> links;
  bool empty() const { return expressions.empty(); }
};

/// Parses the --what-if expressions; a malformed one, a factor that is not a finite number > 0 or a
/// negative rank: UsageError naming the expression.
WhatIf parse_what_if(const std::vector<std::string>& expressions, const std::string& command);

/// `inner`'s streams with the compute changes applied (counted in `what_if`, which must outlive it).
/// Throws InputError when a rank change names a rank the run does not have.
std::unique_ptr<models::TraceSource> what_if_source(const models::TraceSource& inner, WhatIf& what_if);

/// After the run: a compute change that matched no call is an InputError naming it.
void check_what_if_matched(const WhatIf& what_if);

/// The folders of a what-if run: the baseline's and the changed run's outputs (temporary ones, removed
/// by the destructor, unless --out gave DIR: DIR/baseline and DIR).
class WhatIfRun {
public:
  WhatIfRun(const std::string& out);
  ~WhatIfRun();
  WhatIfRun(const WhatIfRun&) = delete;
  WhatIfRun& operator=(const WhatIfRun&) = delete;
  const std::filesystem::path& baseline_dir() const { return baseline_; }
  const std::filesystem::path& out_dir() const { return out_; }
  bool temporary() const { return not temp_.empty(); }

  /// Runs `gridcast COMMAND ARGS` without its --what-if, --out, --no-timeline and --analysis options,
  /// with --out baseline_dir(), --no-timeline and --analysis `analysis`: the run without the changes.
  /// Its output is discarded; a failure is an InputError with its stderr.
  void run_baseline(const std::string& command, const std::vector<std::string>& args, const std::string& analysis);
  /// After the changed run: checks that every change matched what the run has (check_what_if_matched), then
  /// runs the baseline (run_baseline).
  void finish(const std::string& command, const WhatIf& what_if, const std::vector<std::string>& args,
              const std::string& analysis);
  /// Prints what the changes did: the diff of the baseline and the changed run (`gridcast diff`).
  void report(const WhatIf& what_if) const;

private:
  std::filesystem::path temp_, baseline_, out_;
};

/// `analysis` with critical-path added (what-if compares the paths).
std::string with_critical_path(const std::string& analysis);

/// Where `what_if` holds changes: starts the what-if run in `run` (its folders), adds the critical path to
/// `analysis` and points `out` at the changed run's folder. Nothing otherwise.
void start_what_if(const WhatIf& what_if, std::optional<WhatIfRun>& run, std::string& out, std::string& analysis);

}  // namespace gridcast::cli
