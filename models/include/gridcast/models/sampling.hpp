// Sampled prediction (docs/reference/sampling.md; seed 003, SimProf): the iterations of a synthesized run's
// main loop are its sampling units; their features (calls, bytes and work per function, every rank together)
// come from the synthesized streams, which are cheap; k-means groups them into phases; a stratified random
// sample of units is emulated (each after a warm-up unit) and the loop's time is estimated with its standard
// error. No SimGrid here: the emulator runs the plan (emulator/src/sampling.cpp).
#pragma once

#include "gridcast/models/stream.hpp"
#include "gridcast/models/trace_model.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::models::sampling {

/// Where a run's sampling units come from (choose_units).
enum class UnitKind : std::uint8_t {
  Loop,          ///< the iterations of a synthesized run's steady loop (its streams mark the heads)
  RecordedLoop,  ///< the iterations of a recorded trace's main loop, as the fold finds it on every rank
  Windows,       ///< the spans between consecutive collectives of every rank (any trace)
};

/// The sampling units of a run: iterations 0 .. loop_iterations-2 of its steady loop, each from the head
/// of its iteration to the head of the next on every rank. The last iteration runs into the code after the
/// loop, so it is no unit and is always emulated. For windows, the heads are the ends of the collectives on
/// communicators of every rank (head i after the (i+1)-th): what comes before the first and after the last is no unit.
struct Units {
  UnitKind kind = UnitKind::Loop;
  std::string loop;                   ///< the loop, as SteadyLoop::name says it
  std::uint64_t loop_iterations = 0;
  std::uint64_t count = 0;            ///< units (loop_iterations - 1)
  std::uint64_t calls = 0;            ///< the run's calls, every rank together
  std::uint64_t unit_calls = 0;       ///< those inside the units (the rest is always emulated)
  std::vector<std::string> feature_names;     ///< "calls MPI_Send", "bytes MPI_Send", "work compute"
  std::vector<std::vector<double>> features;  ///< [unit][feature], summed over ranks
  /// Per unit, a cost in seconds from the streams alone: the largest over ranks of its compute work at the
  /// recorded speed plus, per communication call, its recorded seconds where it has them (a profile), else
  /// its bytes at 10 GB/s and 1 us. Only the allocation of samples to phases
  /// uses it (an auxiliary variable); the estimate uses emulated times.
  std::vector<double> proxy_s;
  std::string why_not;  ///< non-empty: the run cannot be sampled, and why
  /// Windows: the splits of communicators of every rank whose colours differ between ranks (by lineage,
  /// "0.2"), so that their collectives cut no window; unit_source cuts the emulated streams the same way.
  std::vector<std::string> partial_splits;
};

/// Reads every rank's stream of `source` once. `why_not` is set when there is no loop to sample (then
/// `count` is 0), when it has fewer than 3 units (they are read, not sampled), when a request is still
/// pending at a head of the loop, or when a message crosses from one unit to another (a skipped unit must
/// take all its messages with it).
Units collect_units(const TraceSource& source, double recorded_speed_flops);

/// The units of a recorded trace: the iterations of each rank's main loop as the fold finds it
/// (recorded_loop.hpp), when every rank has the same number of them; `why_not` otherwise. A call's recorded
/// seconds count in the proxy, which is then the unit's measured time on its slowest rank.
Units collect_recorded_units(const TraceSource& recorded, double recorded_speed_flops);

/// The loop name collect_recorded_units' units carry.
inline constexpr const char* kRecordedLoopName = "the main loop of every rank's recorded calls";

/// The loop name collect_window_units' units carry.
inline constexpr const char* kWindowLoopName = "the windows between collectives on communicators of every rank";

/// The units of any trace where its loop gives too few: the spans between consecutive collectives on
/// communicators that hold every rank (MPI_COMM_WORLD, its duplicates, splits of it where every rank gives
/// the same colour; in an SMPI trace, every collective). Every rank makes them in the same order, so the
/// i-th one is a point every rank passes and a unit skipped on every rank takes its messages with it, as
/// collect_units checks. `why_not` when the ranks make different numbers of them or there are fewer than 2.
Units collect_window_units(const TraceSource& source, double recorded_speed_flops);

/// A loop that can be sampled, with at least kLoopUnitsEnough units holding kLoopCallsEnough of the run's
/// calls, is used without looking at windows.
inline constexpr std::uint64_t kLoopUnitsEnough = 20;
inline constexpr double kLoopCallsEnough = 0.8;

/// The units a sampled run uses: the loop's (a synthesized run's steady loop, or with `recorded` the fold's
/// main loop of a recorded trace) when they are enough (above); otherwise, of the loop's and the windows
/// between world collectives, those that can be sampled and hold more of the run's calls (the loop's on a
/// tie); where neither can be sampled, the loop's, whose `why_not` then says why the windows could not either.
Units choose_units(const TraceSource& source, double recorded_speed_flops, bool recorded);

/// The source a sampled run emulates: `emulated` (the same calls as the source the units were read from,
/// possibly counted or shown on the way) with each rank's stream marking the heads `units` was cut at; null
/// for UnitKind::Loop, whose synthesized streams mark their steady loop themselves. `emulated` must outlive it.
std::unique_ptr<TraceSource> unit_source(const TraceSource& emulated, const Units& units);

/// Phases of the units (the seed's phase formation): the top-K features by univariate regression against
/// the units' proxy cost, standardized; k-means (dlib) for k = 1..20; the smallest k whose silhouette
/// coefficient reaches 90 % of the best. Deterministic.
struct Phases {
  int k = 1;
  std::vector<int> of_unit;           ///< phase of each unit, 0..k-1, numbered by first appearance
  std::vector<double> silhouette;     ///< score of k = 1, 2, ... (k = 1 scores 0)
  std::vector<std::string> features;  ///< the features the clustering used
  /// Per phase, up to 3 features whose mean in the phase is furthest above the mean of all units, in
  /// standard deviations: what sets the phase apart.
  std::vector<std::vector<std::string>> distinct;
};
Phases form_phases(const Units& units, std::size_t top_k = 100, int max_k = 20);

/// The seed's input-sensitivity test (Algorithm 1, Eq. 6): the units of reference inputs (runs at other
/// sizes) classified into the training input's phases by the nearest phase centre of their call counts
/// (`calls F` features only: bytes and work grow with the input, the code path need not; among phases as
/// near, by the other features standardized within each input), then each phase's
/// mean and standard deviation of the unit cost compared with the training input's. A phase is input
/// sensitive when any reference input moves either by more than `threshold` (10 %): a standard deviation
/// of 0 in training compares against the mean. Per function, the phase's mean `work F` per unit is compared
/// the same way.
struct PhaseSensitivity {
  double train_mean = 0, train_std = 0;
  std::vector<std::uint64_t> units;  ///< per reference input: its units classified here
  std::vector<double> mean, std;     ///< per reference input (0 and 0 where it has none)
  bool sensitive = false;
  std::size_t compared = 0;  ///< reference inputs with a unit in the phase (0: the phase could not be tested)
  std::vector<std::string> sensitive_functions;  ///< whose work per unit moved by more than the threshold
};
std::vector<PhaseSensitivity> input_sensitivity(const Units& train, const Phases& phases,
                                                const std::vector<Units>& references, double threshold = 0.10);

/// Runs the input-sensitivity test on a fitted model's training profiles and keeps it in
/// `model.input_phases` (`input_phases_note` says why not where it cannot run): at the Np with the most
/// training sizes, the phases of the largest size's recorded main loop, and every other size's units
/// classified into them (input_sensitivity). Reads those profiles once more.
void test_input_phases(trace::TraceModel& model);

/// A phase leans on its inputs' sizes when it holds at least this share of the loop's time...
inline constexpr double kLeaningShare = 0.10;
/// ...and a sensitive phase tested on fewer inputs than this is flagged at an untested size (the rule:
/// two sizes fit a line through any two points; a third checks it).
inline constexpr std::size_t kInputsForSensitivePhase = 3;

/// One warning per phase of `model` holding kLeaningShare of the loop's time or more that is input sensitive
/// with fewer than kInputsForSensitivePhase sizes tested, or that no other size had iterations in (untested),
/// when `nw` is none of the sizes tested; empty otherwise.
std::vector<std::string> input_phase_warnings(const trace::TraceModel& model, double nw);

/// What the user asked for: --sample N (a total sample size) or auto, --confidence, --margin, --seed.
struct Request {
  std::optional<std::uint64_t> size;  ///< empty: auto
  double confidence = 0.95;
  double margin = 0.02;  ///< auto: the interval's half-width over the estimate
  std::uint64_t seed = 0;
  /// auto's second pass (cli/sampling.cpp): the first pass's strata, in its Plan's order (the transient one
  /// left out), with the means and standard deviations of their emulated units' times and how many it
  /// sampled. The size and the allocation then use these instead of the proxy's, and every stratum keeps at
  /// least its first-pass count.
  struct Observed {
    std::vector<double> mean_s, std_s;
    std::vector<std::uint64_t> sampled;
    double half_width_relative = 0;  ///< the first pass's, for the note
  };
  std::optional<Observed> observed;
};

/// The first units of the loop are always emulated, as a stratum of their own taken whole (sampled: all;
/// no sampling error): the ranks' skew and the pipelines settle there, so they differ from the units after
/// them in time though not in calls. A quarter of the units at most.
inline constexpr std::uint64_t kTransientUnits = 2;

/// Units whose calls (the `calls F` features, exactly) at most this share of the units make are rare, and
/// so are those whose proxy cost is more than kRareOutlier standard deviations above their phase's mean
/// (the others'). They are taken whole, the rarest calls first, then the furthest costs, while they number
/// at most kRareBudget of the units: a unit type a sample of a few per phase would miss (a checkpoint every
/// 16th step, a set-up window) is otherwise estimated from units unlike it, with a spread that cannot show
/// it (survey sampling's certainty stratum).
inline constexpr double kRareShare = 0.02;
inline constexpr double kRareOutlier = 3.0;
inline constexpr double kRareBudget = 0.05;

/// Which units a sampled run emulates.
struct Plan {
  enum Role : std::uint8_t { Skipped = 0, WarmUp = 1, Sampled = 2 };
  static constexpr int kTransientStratum = -1, kRareStratum = -2;  ///< in `formed`
  std::uint64_t loop_iterations = 0;
  std::vector<int> phase;          ///< per unit
  std::vector<std::uint8_t> role;  ///< per unit
  /// Strata: the phases, then (when transient > 0) the first units, then (when rare > 0) the units with rare
  /// calls, each of the last two taken whole.
  int phases = 1;
  std::uint64_t transient = 0;
  std::uint64_t rare = 0;
  std::vector<int> formed;  ///< per stratum: its phase in Phases (kTransientStratum, kRareStratum: taken whole)
  std::vector<std::uint64_t> phase_units;    ///< N_h
  std::vector<std::uint64_t> phase_sampled;  ///< n_h
  double confidence = 0.95;
  double margin = 0.02;
  bool automatic = false;
  std::string note;  ///< how the size was chosen (auto, raised to 2 per phase, every unit)
  bool emulates(std::uint64_t unit) const { return unit >= role.size() || role[unit] != Skipped; }
};

/// The first kTransientUnits units taken whole, and those with rare calls (kRareShare); for the others, Eq. 1 (Neyman allocation) with the proxy's
/// standard deviation per phase, at least 2 per phase (Eq. 5 needs two) and at most N_h; per phase, one unit
/// drawn from the seed in each of n_h contiguous blocks of its units (a stratified sample along the loop); the unit before each sampled one emulated as its warm-up. auto: the
/// smallest total whose expected half-width, with the proxy's relative spread per phase, is within the
/// margin. A size N counts the random sample, not the transient units.
Plan plan_sample(const Units& units, const Phases& phases, const Request& request);

/// Eq. 2-5: the stratified estimate of a sum over all units from the sampled units' values.
struct PhaseEstimate {
  std::uint64_t units = 0, sampled = 0;
  /// Of the sampled values. std: Eq. 5 by successive differences in loop order, sqrt(sum (y_i - y_{i-1})^2 /
  /// (2 (n - 1))), the estimator of a one-per-block sample (Wolter 1984); 0 with one sample.
  double mean = 0, std = 0;
};
struct Estimate {
  double total = 0;           ///< sum over phases of N_h times the phase's sample mean
  double standard_error = 0;  ///< of the total: N times Eq. 4
  /// Satterthwaite's effective degrees of freedom of the standard error (infinite when no phase varies).
  double degrees_of_freedom = 0;
  /// Eq. 3 with Student's t quantile at those degrees of freedom instead of the seed's z: a phase of a few
  /// samples estimates its spread poorly, and the normal quantile then under-covers (bench/sampling.py).
  double half_width = 0;
  std::vector<PhaseEstimate> phases;
};
/// `values[u]` is read for the sampled units of `plan` only.
Estimate estimate_total(const Plan& plan, const std::vector<double>& values);

/// The two-sided normal quantile of a confidence level in (0, 1): 1.96 for 0.95.
double z_of(double confidence);
/// The two-sided Student's t quantile of a confidence level at `degrees_of_freedom` (> 0; infinite: z_of).
double t_of(double confidence, double degrees_of_freedom);

}  // namespace gridcast::models::sampling
