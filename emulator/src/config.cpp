#include "gridcast/emulator/config.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/units.hpp"

#include <algorithm>
#include <map>
#include <charconv>
#include <cmath>
#include <optional>

namespace gridcast::emulator {

namespace {

std::optional<CollectiveKind> kind_by_name(std::string_view name)
{
  for (int k = 0; k <= static_cast<int>(CollectiveKind::Exscan); ++k)
    if (collective_name(static_cast<CollectiveKind>(k)) == name)
      return static_cast<CollectiveKind>(k);
  return std::nullopt;
}

double parse_double(const std::string& text, const std::string& key)
{
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || not std::isfinite(v))
    throw InputError({"--cfg", 0, key, -1}, "'" + text + "' is not a number");
  return v;
}

/// SimGrid 3.32 answers a wrong value of these keys with an abort, a segmentation fault or a solver that
/// never converges, not with an exception: each is checked here so that the user gets exit 1 naming the key.
void check_simgrid_cfg(const std::string& name, const std::string& value)
{
  auto fail = [&](const std::string& why) { throw InputError({"--cfg", 0, name, -1}, "'" + value + "': " + why); };
  auto one_of = [&](std::initializer_list<std::string_view> known) {
    std::string list;
    for (std::string_view k : known) {
      if (k == value)
        return;
      list += (list.empty() ? "" : ", ") + std::string(k);
    }
    fail("not a valid value (known: " + list + ")");
  };
  auto number = [&](double low, bool low_included) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || not std::isfinite(v))
      fail("not a number");
    if (v < low || (v == low && not low_included))
      fail(std::string("must be ") + (low_included ? "at least " : "greater than ") + format_number(low));
  };
  if (name == "network/model") {
    if (value == "ns-3")
      fail("gridcast does not run SimGrid's ns-3 binding (it needs ns-3 and its own platform description)");
    one_of({"SMPI", "CM02", "LV08", "IB", "Constant"});
  } else if (name == "cpu/model") {
    one_of({"Cas01"});
  } else if (name == "host/model") {
    one_of({"default", "compound", "ptask_L07"});
  } else if (name == "network/optim" || name == "cpu/optim") {
    one_of({"Lazy", "TI", "Full"});
  } else if (name == "contexts/factory") {
    one_of({"raw", "ucontext", "boost", "thread"});
  } else if (name == "surf/precision" || name == "maxmin/precision") {
    number(0, false);
  } else if (name == "contexts/stack-size") {
    number(1, true);
    // A rank's stack, in KiB: beyond 1 GiB it is a typo, and the context plan's sums would overflow.
    if (std::stod(value) > 1024.0 * 1024)
      fail("more than 1048576 (KiB, 1 GiB) for one rank's stack");
  } else if (name == "contexts/guard-size") {
    number(0, true);
    if (std::stod(value) > 1024.0 * 1024 * 1024)
      fail("more than 1 GiB of guard for one rank's stack");
  } else if (name == "network/TCP-gamma" || name == "network/weight-S") {
    number(0, true);
  } else if (name == "network/bandwidth-factor") {
    number(0, false);
  } else if (name == "network/latency-factor") {
    number(0, true);
  } else if (name == "smpi/bw-factor" || name == "smpi/lat-factor") {
    // "bytes:factor;bytes:factor;...", in any order (SimGrid's own default lists them descending).
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t end        = value.find(';', start);
      const std::string part = value.substr(start, end == std::string::npos ? std::string::npos : end - start);
      const auto colon       = part.find(':');
      std::uint64_t bytes    = 0;
      double factor          = 0;
      auto b = std::from_chars(part.data(), part.data() + (colon == std::string::npos ? 0 : colon), bytes);
      auto f = colon == std::string::npos ? std::from_chars_result{part.data(), std::errc::invalid_argument}
                                          : std::from_chars(part.data() + colon + 1, part.data() + part.size(), factor);
      if (colon == std::string::npos || b.ec != std::errc() || b.ptr != part.data() + colon || f.ec != std::errc() ||
          f.ptr != part.data() + part.size() || not std::isfinite(factor) || factor < 0 ||
          (name == "smpi/bw-factor" && factor == 0))
        fail("segment '" + part + "' is not \"bytes:factor\" with a whole number of bytes and a factor " +
             (name == "smpi/bw-factor" ? "> 0" : ">= 0") + " (e.g. 65472:0.94;0:0.81)");
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
}

/// What gridcast does with an smpi/... key (every key SimGrid 3.32 defines is listed in kSmpiKeys).
enum class SmpiKeyUse : std::uint8_t {
  Honoured,     ///< applied with smpirun's meaning (apply_smpi_cfg)
  SimGrid,      ///< read by SimGrid's network model itself: passed on (check_network_cfg checks the model)
  NoEffect,     ///< changes nothing in smpirun's replay either (output, host-side memory, build options)
  TitNoEffect,  ///< changes nothing in smpirun's replay of a TIT trace; refused for profiles and predictions
  DefaultOnly,  ///< gridcast does not model it: only SMPI's default value (which changes nothing) is accepted
  Refused,      ///< gridcast has its own option for it, or no equivalent whatever the value
};

struct SmpiKey {
  std::string_view name;
  SmpiKeyUse use;
  /// DefaultOnly: SMPI's default value; Refused: what to use instead; TitNoEffect: why it means nothing
  /// elsewhere; otherwise what it does.
  std::string_view note;
};

// SimGrid 3.32's smpi/... flags (src/smpi/internals/smpi_config.cpp and the files it names), in the order
// of its documentation. Checked against `smpirun -replay` (bench/smpirun_replay_compat.py).
constexpr SmpiKey kSmpiKeys[] = {
    {"smpi/simulate-computation", SmpiKeyUse::Honoured, "compute calls take no time when no"},
    {"smpi/comp-adjustment-file", SmpiKeyUse::Honoured, "speedups of compute and sleep per call location (TIT)"},
    {"smpi/trace-call-use-absolute-path", SmpiKeyUse::Honoured, "how comp-adjustment-file names locations"},
    {"smpi/test", SmpiKeyUse::Honoured, "alias of gridcast/test-cost"},
    {"smpi/iprobe", SmpiKeyUse::Honoured, "alias of gridcast/iprobe-cost"},
    {"smpi/grow-injected-times", SmpiKeyUse::Honoured, "consecutive failed polls cost more each"},
    {"smpi/send-is-detached-thresh", SmpiKeyUse::Honoured, "alias of gridcast/eager-threshold"},
    {"smpi/coll-selector", SmpiKeyUse::Honoured, "default: as gridcast/coll-selector:smpi; other values refused"},
    {"smpi/bw-factor", SmpiKeyUse::SimGrid, "network/model:SMPI's bandwidth factors"},
    {"smpi/lat-factor", SmpiKeyUse::SimGrid, "network/model:SMPI's latency factors"},
    {"smpi/IB-penalty-factors", SmpiKeyUse::SimGrid, "network/model:IB's penalties"},
    {"smpi/host-speed", SmpiKeyUse::TitNoEffect, "TIT traces give flops; a profile's run.json gives the host speed"},
    {"smpi/cpu-threshold", SmpiKeyUse::TitNoEffect, "TIT traces give flops; gridcast replays every compute record"},
    {"smpi/wtime", SmpiKeyUse::TitNoEffect, "TIT traces hold no MPI_Wtime; gridcast does not charge them"},
    {"smpi/display-timing", SmpiKeyUse::NoEffect, "gridcast always prints the simulated time"},
    {"smpi/display-allocs", SmpiKeyUse::NoEffect, ""},
    {"smpi/list-leaks", SmpiKeyUse::NoEffect, ""},
    {"smpi/keep-temps", SmpiKeyUse::NoEffect, ""},
    {"smpi/tmpdir", SmpiKeyUse::NoEffect, ""},
    {"smpi/privatization", SmpiKeyUse::NoEffect, ""},
    {"smpi/privatize-libs", SmpiKeyUse::NoEffect, ""},
    {"smpi/shared-malloc", SmpiKeyUse::NoEffect, ""},
    {"smpi/shared-malloc-blocksize", SmpiKeyUse::NoEffect, ""},
    {"smpi/shared-malloc-hugepage", SmpiKeyUse::NoEffect, ""},
    {"smpi/auto-shared-malloc-thresh", SmpiKeyUse::NoEffect, ""},
    {"smpi/trace-call-location", SmpiKeyUse::NoEffect, ""},
    {"smpi/errors-are-fatal", SmpiKeyUse::NoEffect, ""},
    {"smpi/pedantic", SmpiKeyUse::NoEffect, ""},
    {"smpi/papi-events", SmpiKeyUse::NoEffect, ""},
    {"smpi/map", SmpiKeyUse::NoEffect, ""},
    {"smpi/async-small-thresh", SmpiKeyUse::DefaultOnly, "0"},
    {"smpi/os", SmpiKeyUse::DefaultOnly, "0:0:0:0:0"},
    {"smpi/or", SmpiKeyUse::DefaultOnly, "0:0:0:0:0"},
    {"smpi/ois", SmpiKeyUse::DefaultOnly, "0:0:0:0:0"},
    {"smpi/init", SmpiKeyUse::DefaultOnly, "0"},
    {"smpi/finalization-barrier", SmpiKeyUse::DefaultOnly, "no"},
    {"smpi/iprobe-cpu-usage", SmpiKeyUse::DefaultOnly, "1"},
    {"smpi/buffering", SmpiKeyUse::DefaultOnly, "infinite"},
    {"smpi/np", SmpiKeyUse::Refused, "the trace gives the number of ranks"},
    {"smpi/hostfile", SmpiKeyUse::Refused, "use --hostfile"},
    {"smpi/replay", SmpiKeyUse::Refused, "give the trace as gridcast replay's argument"},
    {"smpi/barrier", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/barrier"},
    {"smpi/bcast", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/bcast"},
    {"smpi/reduce", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/reduce"},
    {"smpi/allreduce", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/allreduce"},
    {"smpi/alltoall", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/alltoall"},
    {"smpi/alltoallv", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/alltoallv"},
    {"smpi/gather", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/gather"},
    {"smpi/allgather", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/allgather"},
    {"smpi/allgatherv", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/allgatherv"},
    {"smpi/scatter", SmpiKeyUse::Refused, "SMPI's algorithm names are not gridcast's: use gridcast/coll/scatter"},
    {"smpi/reduce_scatter", SmpiKeyUse::Refused,
     "SMPI's algorithm names are not gridcast's: use gridcast/coll/reducescatter"},
};

const SmpiKey* find_smpi_key(std::string_view name)
{
  for (const SmpiKey& k : kSmpiKeys)
    if (k.name == name)
      return &k;
  return nullptr;
}

/// SimGrid's spellings of a boolean (xbt_cfg's parse_bool).
std::optional<bool> parse_bool(std::string_view v)
{
  if (v == "yes" || v == "on" || v == "true" || v == "1")
    return true;
  if (v == "no" || v == "off" || v == "false" || v == "0")
    return false;
  return std::nullopt;
}

/// True when `value` means SMPI's default `def`: the same boolean, the same number, or for the overhead
/// lists (smpi/os, or, ois: "bytes:base:per_byte;...") every base and per-byte cost zero.
bool is_smpi_default(std::string_view value, std::string_view def)
{
  if (value == def)
    return true;
  if (def == "yes" || def == "no")
    return parse_bool(value) == parse_bool(def);
  auto number = [](std::string_view t) -> std::optional<double> {
    double v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size())
      return std::nullopt;
    return v;
  };
  if (def == "0:0:0:0:0") {  // every segment "bytes:cost:cost" with costs of zero
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t end        = value.find(';', start);
      const std::string_view part  = value.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
      const std::size_t first      = part.find(':');
      if (first == std::string_view::npos)
        return false;
      std::string_view costs = part.substr(first + 1);
      while (not costs.empty()) {
        const std::size_t colon = costs.find(':');
        auto v                  = number(costs.substr(0, colon));
        if (not v || *v != 0)
          return false;
        costs = colon == std::string_view::npos ? std::string_view{} : costs.substr(colon + 1);
      }
      if (end == std::string_view::npos)
        return true;
      start = end + 1;
    }
    return false;
  }
  auto a = number(value), b = number(def);
  return a && b && *a == *b;
}

std::string accepted_smpi_keys()
{
  std::string list;
  for (const SmpiKey& k : kSmpiKeys)
    if (k.use != SmpiKeyUse::Refused)
      list += (list.empty() ? "" : ", ") + std::string(k.name);
  return list;
}

bool parse_smpi_bool(const std::string& name, const std::string& value)
{
  if (auto b = parse_bool(value))
    return *b;
  throw InputError({"--cfg", 0, name, -1}, "'" + value + "' is not yes or no");
}

}  // namespace

void resolve_coll_selector(ReplayOptions& options, const SelectorEvidence& evidence)
{
  if (options.coll_selector_set)
    return;
  const std::string& lib = evidence.mpi_library;
  if (not evidence.conflict.empty()) {
    options.coll_selector     = CollectiveSelector::Mpich;
    options.coll_selector_why = "auto: " + evidence.conflict + ", so MPICH's rules (gridcast's fallback)";
  } else if (evidence.smpi_trace || lib.rfind("SMPI", 0) == 0) {
    options.coll_selector     = CollectiveSelector::Smpi;
    options.coll_selector_why = "auto: the input was recorded by SMPI, as smpirun -replay chooses";
  } else if (lib.rfind("Open MPI", 0) == 0) {
    options.coll_selector     = CollectiveSelector::OpenMpi41;
    options.coll_selector_why = "auto: the run was recorded with " + lib +
                                (lib.rfind("Open MPI v4.", 0) == 0 ? std::string()
                                                                   : std::string(" (Open MPI 4.1's rules are the "
                                                                                 "nearest gridcast has)"));
  } else if (lib.rfind("MPICH", 0) == 0) {
    options.coll_selector     = CollectiveSelector::Mpich;
    options.coll_selector_why = "auto: the run was recorded with " + lib;
  } else {
    options.coll_selector     = CollectiveSelector::Mpich;
    options.coll_selector_why = lib.empty() ? std::string("auto: the input does not name its MPI library, so "
                                                          "MPICH's rules (gridcast's fallback)")
                                            : "auto: the run was recorded with " + lib +
                                                  ", whose rules gridcast does not have, so MPICH's (its fallback)";
  }
}

void check_cfg_for_input(const ReplayOptions& options, bool tit_trace)
{
  if (tit_trace)
    return;
  if (not options.smpi.comp_adjustment_file.empty())
    throw InputError({"--cfg", 0, "smpi/comp-adjustment-file", -1},
                     "applies to SMPI time-independent traces only (it keys on their `location` lines)");
  if (not options.smpi.tit_only_keys.empty()) {
    const std::string& key = options.smpi.tit_only_keys.front();
    const SmpiKey* k       = find_smpi_key(key);
    throw InputError({"--cfg", 0, key, -1}, "only accepted for SMPI time-independent traces, where smpirun's replay "
                                            "ignores it too; here it would be ignored: " +
                                                std::string(k ? k->note : ""));
  }
}

void check_network_cfg(const ReplayOptions& options)
{
  std::string model = "SMPI";  // gridcast's default, as smpirun's
  std::map<std::string, std::string> optim{{"network", "Lazy"}, {"cpu", "Lazy"}};  // SimGrid's defaults
  for (const auto& [name, value] : options.simgrid_cfg) {
    if (name == "network/model")
      model = value;
    if (name == "network/optim" || name == "cpu/optim")
      optim[name.substr(0, name.find('/'))] = value;
  }
  // SimGrid aborts (signal 6) on a lazy model without selective update.
  for (const auto& [name, value] : options.simgrid_cfg) {
    const std::string part = name.substr(0, name.find('/'));
    if ((name == "network/maxmin-selective-update" || name == "cpu/maxmin-selective-update") &&
        (value == "no" || value == "0" || value == "false" || value == "off") && optim[part] == "Lazy")
      throw InputError({"--cfg", 0, name, -1}, part + "/optim:Lazy (the default) needs selective update; give " +
                                                   part + "/optim:Full with it, or leave it out");
  }
  for (const auto& [name, value] : options.simgrid_cfg) {
    const bool smpi_factor    = name == "smpi/bw-factor" || name == "smpi/lat-factor";
    const bool network_factor = name == "network/bandwidth-factor" || name == "network/latency-factor";
    if (network_factor && model == "SMPI")
      throw InputError({"--cfg", 0, name, -1},
                       "network/model:SMPI ignores it (its factors are smpi/bw-factor and smpi/lat-factor); give "
                       "those, or another network/model (CM02, LV08, IB)");
    if (smpi_factor && model != "SMPI")
      throw InputError({"--cfg", 0, name, -1}, "only network/model:SMPI reads it, and the run uses network/model:" +
                                                   model + "; use network/bandwidth-factor or network/latency-factor");
    if (name == "smpi/IB-penalty-factors" && model != "IB")
      throw InputError({"--cfg", 0, name, -1},
                       "only network/model:IB reads it, and the run uses network/model:" + model);
  }
}

namespace {

/// Applies an smpi/... key; false when it is not one.
bool apply_smpi_cfg(ReplayOptions& options, const std::string& name, const std::string& value)
{
  if (name.rfind("smpi/", 0) != 0)
    return false;
  const SmpiKey* key = find_smpi_key(name);
  if (key == nullptr)
    throw InputError({"--cfg", 0, name, -1},
                     "not an SMPI setting gridcast knows (accepted: " + accepted_smpi_keys() +
                         "; docs/reference/cfg.md says what each does)");
  switch (key->use) {
    case SmpiKeyUse::Refused:
      throw InputError({"--cfg", 0, name, -1}, "not accepted: " + std::string(key->note));
    case SmpiKeyUse::DefaultOnly:
      if (not is_smpi_default(value, key->note))
        throw InputError({"--cfg", 0, name, -1},
                         "'" + value + "': gridcast does not model this setting, so it only accepts SMPI's default (" +
                             std::string(key->note) + "), which changes nothing");
      return true;
    case SmpiKeyUse::NoEffect:
      return true;
    case SmpiKeyUse::TitNoEffect:
      if (std::find(options.smpi.tit_only_keys.begin(), options.smpi.tit_only_keys.end(), name) ==
          options.smpi.tit_only_keys.end())
        options.smpi.tit_only_keys.push_back(name);
      return true;
    case SmpiKeyUse::SimGrid:
      check_simgrid_cfg(name, value);
      options.simgrid_cfg.emplace_back(name, value);
      return true;
    case SmpiKeyUse::Honoured:
      break;
  }
  if (name == "smpi/simulate-computation") {
    options.smpi.simulate_computation = parse_smpi_bool(name, value);
  } else if (name == "smpi/grow-injected-times") {
    options.smpi.grow_injected_times = parse_smpi_bool(name, value);
  } else if (name == "smpi/trace-call-use-absolute-path") {
    options.smpi.tit_read.absolute_location_paths = parse_smpi_bool(name, value);
  } else if (name == "smpi/comp-adjustment-file") {
    options.smpi.comp_adjustment_file = value;
    options.smpi.tit_read.speedup_by_location.clear();
    if (not value.empty())
      models::read_comp_adjustment_file(value, options.smpi.tit_read);
  } else if (name == "smpi/coll-selector") {
    if (value != "default")
      throw InputError({"--cfg", 0, name, -1},
                       "'" + value + "': gridcast reproduces SMPI's default selection only (smpi/coll-selector:default, "
                       "the same as gridcast/coll-selector:smpi); for MPICH's or Open MPI's rules use "
                       "gridcast/coll-selector:mpich or openmpi-4.1");
    options.coll_selector     = CollectiveSelector::Smpi;
    options.coll_selector_set = true;
    options.coll_selector_why = "--cfg smpi/coll-selector:default";
  } else {
    return false;  // an alias of a gridcast key: apply_cfg handles it
  }
  return true;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& gridcast_cfg_keys()
{
  static const std::vector<std::pair<std::string, std::string>> keys = [] {
    std::vector<std::pair<std::string, std::string>> k{
      {"gridcast/eager-threshold", "bytes below which a standard send is eager (detached); default 65536, "
                                   "alias smpi/send-is-detached-thresh"},
      {"gridcast/envelope-bytes", "bytes every MPI message carries on the wire besides its data (tag, source, "
                                  "communicator); default 16, SMPI 3.32's envelope, under network/model:SMPI "
                                  "(gridcast's default) on a platform without calibrated factors, 0 otherwise "
                                  "(a calibration measured whole messages: its factors hold the real envelope)"},
      {"gridcast/test-cost", "simulated seconds of a failing MPI_Test, multiplied by the number of "
                             "consecutive failures (SMPI's smpi/test); default 1e-4. Only for polls whose "
                             "duration the trace does not give (profiled polls cost their recorded seconds)"},
      {"gridcast/iprobe-cost", "the same for a failing MPI_Iprobe (SMPI's smpi/iprobe); default 1e-4"},
      {"gridcast/coll/<op>", "force the algorithm of collective <op> (barrier, bcast, reduce, allreduce, "
                             "alltoall, alltoallv, gather, gatherv, allgather, allgatherv, scatter, scatterv, "
                             "reducescatter, scan, exscan); `gridcast algorithms` lists the names"},
      {"gridcast/coll-selector", "whose default algorithm choice to reproduce: auto (default: smpi for an "
                                 "SMPI trace or profiles imported from one, openmpi-4.1 for a profile "
                                 "recorded with Open MPI, mpich otherwise; prediction.json says which and "
                                 "why), mpich (MPICH 3.x's rules), smpi (SMPI 3.32's smpi/coll-selector:default, what smpirun runs; "
                                 "use it to compare with smpirun) or openmpi-4.1 (Open MPI 4.1's fixed rules "
                                 "for allreduce and alltoall, MPICH's for the rest; for platforms calibrated "
                                 "with Open MPI); gridcast/coll/<op> still wins"},
      {"gridcast/coll-local-copy", "charge the local copies MPI libraries make inside collectives (own "
                                   "block of alltoall/allgather/gather/scatter, initial copy of the "
                                   "reductions) with the platform's gridcast:memcpy-time: auto (default: where "
                                   "the platform has it, i.e. platforms generated from a calibration), on "
                                   "(an error without it) or off"},
    };
    for (const auto& g : gpu_cfg_keys())  // GPU costs and NCCL (docs/guides/gpu.md)
      k.push_back(g);
    return k;
  }();
  return keys;
}

std::uint64_t parse_bytes(const std::string& text, const std::string& key)
{
  return parse_byte_count(text, {"--cfg", 0, key, -1});
}

void apply_cfg(ReplayOptions& options, const std::string& name_value)
{
  auto colon = name_value.find(':');
  if (colon == std::string::npos || colon == 0)
    throw InputError({"--cfg", 0, name_value, -1}, "expected name:value");
  std::string name = name_value.substr(0, colon);
  std::string value = name_value.substr(colon + 1);
  if (name == "gridcast/eager-threshold" || name == "smpi/send-is-detached-thresh") {
    options.eager_threshold_bytes = parse_bytes(value, name);
    options.eager_threshold_set   = true;
    return;
  }
  if (name == "gridcast/envelope-bytes") {
    options.envelope_bytes = parse_bytes(value, name);
    options.envelope_set   = true;
    return;
  }
  if (apply_smpi_cfg(options, name, value))
    return;
  if (name == "gridcast/test-cost" || name == "smpi/test") {
    options.test_cost_s = parse_double(value, name);
    if (options.test_cost_s < 0)
      throw InputError({"--cfg", 0, name, -1}, "a cost cannot be negative");
    return;
  }
  if (name == "gridcast/iprobe-cost" || name == "smpi/iprobe") {
    options.iprobe_cost_s = parse_double(value, name);
    if (options.iprobe_cost_s < 0)
      throw InputError({"--cfg", 0, name, -1}, "a cost cannot be negative");
    return;
  }
  if (name == "gridcast/coll-selector") {
    if (value == "auto") {  // the default, named: what was chosen before it (by an earlier --cfg) is undone
      options.coll_selector_set = false;
      options.coll_selector_why.clear();
      return;
    }
    if (value == "mpich")
      options.coll_selector = CollectiveSelector::Mpich;
    else if (value == "smpi")
      options.coll_selector = CollectiveSelector::Smpi;
    else if (value == "openmpi-4.1")
      options.coll_selector = CollectiveSelector::OpenMpi41;
    else
      throw InputError({"--cfg", 0, name, -1},
                       "unknown selector '" + value + "' (known: auto, mpich, smpi, openmpi-4.1)");
    options.coll_selector_set = true;
    options.coll_selector_why = "--cfg " + name_value;
    return;
  }
  if (name == "gridcast/coll-local-copy") {
    if (value == "auto")
      options.local_copy = LocalCopyMode::Auto;
    else if (value == "on")
      options.local_copy = LocalCopyMode::On;
    else if (value == "off")
      options.local_copy = LocalCopyMode::Off;
    else
      throw InputError({"--cfg", 0, name, -1}, "expected auto, on or off, got '" + value + "'");
    return;
  }
  if (name.rfind("gridcast/coll/", 0) == 0) {
    std::string op = name.substr(std::string("gridcast/coll/").size());
    auto kind = kind_by_name(op);
    if (not kind)
      throw InputError({"--cfg", 0, name, -1}, "unknown collective '" + op + "'");
    CollectiveRegistry registry;
    if (registry.find(*kind, value) == nullptr) {
      std::string known;
      for (const auto& n : registry.names(*kind))
        known += (known.empty() ? "" : ", ") + n;
      throw InputError({"--cfg", 0, name, -1}, "unknown algorithm '" + value + "' (known: " + known + ")");
    }
    options.forced_algorithms[*kind] = value;
    return;
  }
  if (apply_gpu_cfg(options.gpu, name, value))
    return;
  if (name.rfind("gridcast/", 0) == 0)
    throw InputError({"--cfg", 0, name, -1}, "unknown gridcast setting");
  if (name.rfind("smpi/", 0) == 0)
    throw InternalError("apply_cfg: smpi key " + name + " left unhandled");
  check_simgrid_cfg(name, value);
  options.simgrid_cfg.emplace_back(name, value);
}

}  // namespace gridcast::emulator
