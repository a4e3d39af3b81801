#include "gridcast/emulator/config.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/units.hpp"

#include <charconv>
#include <optional>
#include <cmath>

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
  } else if (name == "contexts/guard-size" || name == "network/TCP-gamma" || name == "network/weight-S") {
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
      {"gridcast/coll-selector", "whose default algorithm choice to reproduce: mpich (default: MPICH 3.x's "
                                 "rules), smpi (SMPI 3.32's smpi/coll-selector:default, what smpirun runs; "
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
  if (name == "gridcast/test-cost") {
    options.test_cost_s = parse_double(value, name);
    if (options.test_cost_s < 0)
      throw InputError({"--cfg", 0, name, -1}, "a cost cannot be negative");
    return;
  }
  if (name == "gridcast/iprobe-cost") {
    options.iprobe_cost_s = parse_double(value, name);
    if (options.iprobe_cost_s < 0)
      throw InputError({"--cfg", 0, name, -1}, "a cost cannot be negative");
    return;
  }
  if (name == "gridcast/coll-selector") {
    if (value == "mpich")
      options.coll_selector = CollectiveSelector::Mpich;
    else if (value == "smpi")
      options.coll_selector = CollectiveSelector::Smpi;
    else if (value == "openmpi-4.1")
      options.coll_selector = CollectiveSelector::OpenMpi41;
    else
      throw InputError({"--cfg", 0, name, -1}, "unknown selector '" + value + "' (known: mpich, smpi, openmpi-4.1)");
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
  check_simgrid_cfg(name, value);
  options.simgrid_cfg.emplace_back(name, value);
}

}  // namespace gridcast::emulator
