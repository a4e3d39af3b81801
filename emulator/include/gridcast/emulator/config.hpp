// Options of one emulation run. `--cfg name:value` pairs are split between gridcast's own keys
// (gridcast/...), the SMPI settings gridcast honours (smpi/..., each either honoured as smpirun's replay
// honours it or refused) and SimGrid's configuration, which receives everything else unchanged.
#pragma once

#include "gridcast/emulator/collectives.hpp"
#include "gridcast/emulator/gpu.hpp"
#include "gridcast/models/sampling.hpp"
#include "gridcast/models/tit.hpp"
#include "gridcast/platform/placement.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::emulator {

/// gridcast/coll-local-copy: whether collectives charge the local copies of the MPI library (docs/reference/collectives.md).
enum class LocalCopyMode { Auto, On, Off };

/// Steady-state fast-forward of a synthesized run's steady loop (docs/reference/emulator.md): `gridcast predict
/// --fast-forward auto|off` and its --ff-* options. Replays of recorded traces never fast-forward.
struct FastForwardOptions {
  enum class Mode : std::uint8_t {
    Unavailable,  ///< replay: no fast_forward report at all
    Off,          ///< every iteration emulated; reported as such
    Auto,         ///< skip iterations once the loop is stable
  };
  Mode mode = Mode::Unavailable;
  double tolerance = 0.01;             ///< relative spread of the window's periods around their mean
  int window = 3;                      ///< periods (loop head to loop head) that must agree
  int warmup = 1;                      ///< first periods never used
  int tail = 1;                        ///< last iterations always emulated (>= 1)
  std::uint64_t min_iterations = 32;   ///< shorter loops are emulated in full
};

/// The smpi/... settings that change a replay, honoured with smpirun's meaning (docs/reference/cfg.md,
/// "SMPI settings"). smpi/test, smpi/iprobe and smpi/send-is-detached-thresh set the gridcast keys they alias.
struct SmpiSettings {
  bool simulate_computation = true;  ///< smpi/simulate-computation: `no` makes compute calls free
  bool grow_injected_times  = true;  ///< smpi/grow-injected-times: consecutive failed polls cost more each
  std::string comp_adjustment_file;  ///< smpi/comp-adjustment-file, as given (TIT traces only)
  /// The speedups it gives, and smpi/trace-call-use-absolute-path, for the TIT reader.
  models::TitReadOptions tit_read;
  /// Keys given that only mean something for a TIT trace (smpirun's replay ignores them as gridcast does
  /// there; on a profile or a prediction they would be ignored for another reason): refused elsewhere.
  std::vector<std::string> tit_only_keys;
};

struct ReplayOptions {
  std::filesystem::path platform;
  platform::PlacementPolicy placement;
  std::uint64_t seed = 0;                 ///< reported; every random choice derives from it
  std::uint64_t eager_threshold_bytes = 65536;
  bool eager_threshold_set = false;       ///< set by --cfg: wins over the platform's gridcast:eager-threshold
  /// gridcast/envelope-bytes: bytes each MPI message carries on the wire besides its data. When not set,
  /// replay() takes SMPI's 16 under network/model:SMPI without calibrated factors, 0 otherwise.
  std::uint64_t envelope_bytes = 0;
  bool envelope_set = false;
  double test_cost_s = 1e-4;              ///< simulated cost of one MPI_Test that fails, like SMPI's smpi/test
  double iprobe_cost_s = 1e-4;            ///< same for MPI_Iprobe, like SMPI's smpi/iprobe
  std::map<CollectiveKind, std::string> forced_algorithms;   ///< gridcast/coll/<op>:<algorithm>
  CollectiveSelector coll_selector = CollectiveSelector::Mpich;  ///< gridcast/coll-selector:mpich|smpi|openmpi-4.1
  bool coll_selector_set = false;  ///< given by --cfg (gridcast/coll-selector or smpi/coll-selector)
  /// Why `coll_selector` is what it is (resolve_coll_selector): the --cfg that named it, or what auto saw.
  std::string coll_selector_why;
  /// gridcast/coll-local-copy:auto|on|off. Auto: charged where the platform has gridcast:memcpy-time.
  LocalCopyMode local_copy = LocalCopyMode::Auto;
  /// The copy curve the run charges local copies with, resolved by replay() from `local_copy` and the
  /// platform; empty: not charged.
  std::vector<platform::OverheadPoint> local_copy_time;
  SmpiSettings smpi;                      ///< smpi/... settings honoured
  std::vector<std::pair<std::string, std::string>> simgrid_cfg;  ///< passed to SimGrid in order
  std::filesystem::path out_dir;          ///< empty: no files written
  bool timeline = true;                   ///< write timeline.json when out_dir is set
  /// The ranks timeline.json draws call by call (one entry per rank; --timeline-ranks); the others get a
  /// summary slice each. Empty: every rank.
  std::vector<bool> timeline_ranks;
  bool link_stats = true;                 ///< track bytes per link (SimGrid's link-load plugin)
  double recorded_host_speed_flops = 0;   ///< from run.json; 0 when the trace gives flops (TIT)
  GpuOptions gpu;                         ///< --gpu-mpi and gridcast/gpu/... (docs/guides/gpu.md)
  FastForwardOptions fast_forward;        ///< predict only
  /// predict --sample: the units emulated, by phase (models/sampling.hpp); null: every unit. Excludes
  /// fast-forward and --analysis.
  std::shared_ptr<const models::sampling::Plan> sampling_plan;
  /// --analysis waits: classify every wait of the run (wait_states.hpp) into ReplayResult::wait_states.
  bool wait_states = false;
  /// --analysis critical-path: log every call and walk the critical path (wait_states.hpp); implies the
  /// wait states, which it follows.
  bool critical_path = false;
  /// --what-if: the changes this run makes to its input (for prediction.json's config.what_if), and
  /// those that act on the platform: links scaled once it is loaded.
  std::vector<std::string> what_if;
  struct LinkScale {
    std::string expression;  ///< as given, for errors
    std::string link;        ///< a link's name, or the name of a split-duplex pair (NAME_UP and NAME_DOWN)
    double bandwidth_factor = 1;
    double latency_factor = 1;
  };
  std::vector<LinkScale> link_scales;
  /// Where replay() tells the user what it chose for them before it simulates (the CLI: stderr, as a
  /// note); unset: silent.
  std::function<void(const std::string&)> note;
};

/// The gridcast/... keys understood by --cfg, with their help text (for --help and docs).
const std::vector<std::pair<std::string, std::string>>& gridcast_cfg_keys();


/// What `gridcast/coll-selector:auto` (the default) chooses from: where the input came from.
struct SelectorEvidence {
  /// The input is an SMPI time-independent trace: SMPI chose the algorithms of the recorded run, and
  /// smpirun's replay reproduces them.
  bool smpi_trace = false;
  /// The first line of MPI_Get_library_version in the recorded run ("Open MPI v4.1.4, ..."), "SMPI" for a
  /// profile imported from an SMPI trace (models::recorded_mpi_library); empty: unknown.
  std::string mpi_library;
  /// Non-empty when the inputs disagree (profiles of two MPI libraries): what differs. Auto then takes
  /// MPICH's rules and says why.
  std::string conflict;
};

/// Sets options.coll_selector and coll_selector_why, unless --cfg named a selector: SMPI's selection for
/// an SMPI trace, Open MPI 4.1's rules for a profile recorded with Open MPI, MPICH's otherwise.
void resolve_coll_selector(ReplayOptions& options, const SelectorEvidence& evidence);

/// Applies one `name:value` pair to `options`: gridcast keys are parsed and checked (InputError naming
/// the key), anything else is queued for SimGrid. smpi/send-is-detached-thresh is accepted as an alias of
/// gridcast/eager-threshold so that SMPI command lines carry over.
void apply_cfg(ReplayOptions& options, const std::string& name_value);

/// Refuses the settings that mean nothing for this input: smpi/comp-adjustment-file and the TIT-only keys
/// on a profile directory or a prediction (InputError naming the key).
void check_cfg_for_input(const ReplayOptions& options, bool tit_trace);

/// Refuses the settings the network model of the run would ignore (network/bandwidth-factor and
/// network/latency-factor under network/model:SMPI, smpi/bw-factor and smpi/lat-factor under any other,
/// smpi/IB-penalty-factors outside network/model:IB). Called by replay() before SimGrid starts.
void check_network_cfg(const ReplayOptions& options);

/// Parses a size such as "65536", "64KiB", "1MB" into bytes.
std::uint64_t parse_bytes(const std::string& text, const std::string& key);

}  // namespace gridcast::emulator
