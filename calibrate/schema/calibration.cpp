// calibration.json: strict reading (every key checked, unknown keys rejected with their path) and
// deterministic writing. Schema: docs/reference/calibration-json.md, section "calibration.json".
#include "gridcast/calibration/calibration.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/foundation/json_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

namespace gridcast::platform {

namespace fs = std::filesystem;
using json   = nlohmann::json;
using ojson  = nlohmann::ordered_json;

namespace {

using Obj = JsonObject;
using Bound = JsonObject::Bound;

Stat stat_from(const Obj& parent, std::string_view key);

/// A rate curve under `key` of `parent`: objects {bytes, <rate_key>: Stat}, sizes > 0 ascending strictly,
/// medians > 0. `Point` is {bytes, Stat}.
template <class Point>
std::vector<Point> rate_points(const Obj& parent, std::string_view key, std::string_view rate_key)
{
  std::vector<Point> out;
  const json& points = parent.array(key);
  for (std::size_t i = 0; i < points.size(); ++i) {
    Obj p = parent.element(key, i);
    p.only({"bytes", rate_key});
    const std::uint64_t bytes = p.uint64("bytes");
    const Stat rate           = stat_from(p, rate_key);
    Point point{bytes, rate};
    if (point.bytes == 0)
      p.fail("bytes", "expected a size > 0");
    if (not(rate.median > 0))
      p.fail(rate_key, "expected a median > 0");
    if (i > 0 && point.bytes <= out.back().bytes)
      p.fail("bytes", "working-set sizes must ascend strictly");
    out.push_back(point);
  }
  return out;
}

Stat stat_from(const Obj& parent, std::string_view key)
{
  Obj o = parent.child(key);
  o.only({"median", "min", "max", "repetitions"});
  Stat s;
  s.median      = o.number("median", Bound::NonNegative);
  s.min         = o.number("min", Bound::NonNegative);
  s.max         = o.number("max", Bound::NonNegative);
  s.repetitions = o.int32("repetitions", 1);
  if (not(s.min <= s.median && s.median <= s.max))
    parent.fail(key, "expected min <= median <= max");
  return s;
}

ojson stat_to(const Stat& s)
{
  ojson o;
  o["median"]      = s.median;
  o["min"]         = s.min;
  o["max"]         = s.max;
  o["repetitions"] = s.repetitions;
  return o;
}

std::vector<FactorSegment> segments_from(const Obj& parent, std::string_view key)
{
  const json& a = parent.array(key);
  if (a.empty())
    parent.fail(key, "expected at least one segment (the one from min_bytes 0)");
  std::vector<FactorSegment> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    Obj o = parent.element(key, i);
    o.only({"min_bytes", "factor"});
    FactorSegment s{o.uint64("min_bytes"), o.number("factor", Bound::Positive)};
    if (i == 0 && s.min_bytes != 0)
      o.fail("min_bytes", "the first segment must start at 0");
    if (i > 0 && s.min_bytes <= out.back().min_bytes)
      o.fail("min_bytes", "segments must ascend strictly by min_bytes");
    out.push_back(s);
  }
  return out;
}

ojson segments_to(const std::vector<FactorSegment>& v)
{
  ojson a = ojson::array();
  for (const auto& s : v)
    a.push_back(ojson{{"min_bytes", s.min_bytes}, {"factor", s.factor}});
  return a;
}

GpuLinkFigures link_from(const Obj& parent, std::string_view key)
{
  Obj o = parent.child(key);
  o.only({"latency_s", "bandwidth_Bps"});
  return {o.number("latency_s", Bound::NonNegative), o.number("bandwidth_Bps", Bound::NonNegative)};
}

ojson link_to(const GpuLinkFigures& l)
{
  return ojson{{"latency_s", l.latency_s}, {"bandwidth_Bps", l.bandwidth_Bps}};
}

GpuCalibration gpu_from(const Obj& o, bool source_required)
{
  o.only({"source", "device_name", "device_count", "memory_bytes", "speed_flops", "h2d_pageable", "d2h_pageable",
          "h2d_pinned", "d2h_pinned", "d2d", "p2p", "kernel_launch_s", "malloc_s", "free_s",
          "host_alloc_s_per_byte"});
  GpuCalibration g;
  g.source = (source_required || o.has("source")) ? o.string("source") : "datasheet";
  if (g.source != "measured" && g.source != "datasheet")
    o.fail("source", "expected \"measured\" or \"datasheet\", got \"" + g.source + "\"");
  g.device_name  = o.string("device_name");
  g.device_count = o.int32("device_count", 1);
  g.memory_bytes = o.number("memory_bytes", Bound::NonNegative);
  g.speed_flops  = o.number("speed_flops", Bound::NonNegative);
  g.h2d_pageable = link_from(o, "h2d_pageable");
  g.d2h_pageable = link_from(o, "d2h_pageable");
  g.h2d_pinned   = link_from(o, "h2d_pinned");
  g.d2h_pinned   = link_from(o, "d2h_pinned");
  g.d2d          = link_from(o, "d2d");
  g.p2p          = link_from(o, "p2p");
  g.kernel_launch_s       = o.number("kernel_launch_s", Bound::NonNegative);
  g.malloc_s              = o.number("malloc_s", Bound::NonNegative);
  g.free_s                = o.number("free_s", Bound::NonNegative);
  g.host_alloc_s_per_byte = o.number("host_alloc_s_per_byte", Bound::NonNegative);
  return g;
}

std::string shortest(double d)
{
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

}  // namespace

Calibration calibration_from_json(const json& j, const std::string& file)
{
  Obj top(j, file, "");
  top.only({"format", "version", "host", "compute", "network", "gpu"});
  if (top.string("format") != kCalibrationFormat)
    top.fail("format", std::string("expected \"") + kCalibrationFormat + "\"");
  Calibration c;
  c.version = top.int32("version", 0);
  if (c.version < kCalibrationOldestVersion || c.version > kCalibrationVersion)
    top.fail("version", "unsupported version " + std::to_string(c.version) + " (this gridcast reads versions " +
                            std::to_string(kCalibrationOldestVersion) + " to " + std::to_string(kCalibrationVersion) +
                            ")");

  Obj host = top.child("host");
  host.only({"name", "cpu_model", "cores", "date", "gridcast_version", "load_average"});
  c.host.name             = host.string("name");
  c.host.cpu_model        = host.string("cpu_model");
  c.host.cores            = host.int32("cores", 1);
  c.host.date             = host.string("date");
  c.host.gridcast_version = host.string("gridcast_version");
  c.host.load_average     = host.number("load_average", Bound::NonNegative);

  Obj compute = top.child("compute");
  compute.only({"dgemm_flops", "stream_triad_Bps", "scalar_flops", "core_speed_flops", "reduction", "memcpy",
                "memcpy_all_cores", "rate_by_working_set", "library_rates"});
  c.compute.dgemm_flops      = stat_from(compute, "dgemm_flops");
  c.compute.stream_triad_Bps = stat_from(compute, "stream_triad_Bps");
  c.compute.scalar_flops     = stat_from(compute, "scalar_flops");
  c.compute.core_speed_flops = compute.number("core_speed_flops", Bound::Positive);
  // Optional size curves (calibrations before them lack them): sizes > 0 strictly ascending, medians > 0.
  for (auto [key, curve] : {std::pair{"reduction", &c.compute.reduction}, std::pair{"memcpy", &c.compute.memcpy},
                            std::pair{"memcpy_all_cores", &c.compute.memcpy_all_cores}}) {
    if (not compute.has(key))
      continue;
    const json& points = compute.array(key);
    for (std::size_t i = 0; i < points.size(); ++i) {
      Obj p = compute.element(key, i);
      p.only({"bytes", "time_s"});
      SizedTiming point{p.uint64("bytes"), stat_from(p, "time_s")};
      if (point.bytes == 0)
        p.fail("bytes", "expected a size > 0");
      if (not(point.time_s.median > 0))
        p.fail("time_s", "expected a median > 0");
      if (i > 0 && point.bytes <= curve->back().bytes)
        p.fail("bytes", std::string(key) + " sizes must ascend strictly");
      curve->push_back(point);
    }
  }
  if (compute.has("rate_by_working_set"))  // optional (calibrations before it lack it)
    c.compute.rate_by_working_set = rate_points<SizedRate>(compute, "rate_by_working_set", "flops");

  if (compute.has("library_rates")) {  // optional (calibrations before it lack it)
    const json& curves = compute.array("library_rates");
    for (std::size_t i = 0; i < curves.size(); ++i) {
      Obj k = compute.element("library_rates", i);
      k.only({"kernel", "work", "points"});
      KernelRateCurve curve{k.string("kernel"), k.string("work"), {}};
      if (curve.work != "flops" && curve.work != "bytes")
        k.fail("work", "expected \"flops\" or \"bytes\"");
      for (const KernelRateCurve& other : c.compute.library_rates)
        if (other.kernel == curve.kernel)
          k.fail("kernel", "a second curve for " + curve.kernel);
      curve.points = rate_points<KernelRatePoint>(k, "points", "rate");
      if (curve.points.empty())
        k.fail("points", "expected at least one point");
      c.compute.library_rates.push_back(std::move(curve));
    }
  }

  if (top.has("network")) {
    Obj n = top.child("network");
    n.only({"launcher", "latency_s", "bandwidth_Bps", "eager_threshold_bytes", "lat_factor", "bw_factor", "pingpong",
            "collectives", "exchange", "shared_bandwidth_Bps", "copy_overhead", "collectives_measured"});
    NetworkCalibration net;
    net.launcher              = n.string("launcher");
    net.latency_s             = n.number("latency_s", Bound::NonNegative);
    net.bandwidth_Bps         = n.number("bandwidth_Bps", Bound::Positive);
    net.eager_threshold_bytes = n.uint64("eager_threshold_bytes");
    net.lat_factor            = segments_from(n, "lat_factor");
    net.bw_factor             = segments_from(n, "bw_factor");
    const json& pp            = n.array("pingpong");
    for (std::size_t i = 0; i < pp.size(); ++i) {
      Obj p = n.element("pingpong", i);
      p.only({"bytes", "one_way_s"});
      PingPongPoint point{p.uint64("bytes"), stat_from(p, "one_way_s")};
      if (i > 0 && point.bytes <= net.pingpong.back().bytes)
        p.fail("bytes", "ping-pong sizes must ascend strictly");
      net.pingpong.push_back(point);
    }
    const json& coll = n.array("collectives");
    for (std::size_t i = 0; i < coll.size(); ++i) {
      Obj p = n.element("collectives", i);
      p.only({"op", "np", "bytes", "time_s"});
      CollectiveTiming t{p.string("op"), p.int32("np", 1), p.uint64("bytes"), stat_from(p, "time_s")};
      if (t.op.empty())
        p.fail("op", "expected a collective name");
      net.collectives.push_back(t);
    }
    if (n.has("collectives_measured")) {  // optional: absent = the loop difference
      Obj m = n.child("collectives_measured");
      m.only({"method", "date", "load_average"});
      CollectivesMeasured cm{m.string("method"), m.string("date"), m.number("load_average", Bound::NonNegative)};
      if (cm.method != kCollectivesLoopMeanSlowestRank && cm.method != kCollectivesMedianCallSlowestRank &&
          cm.method != kCollectivesLoopDifference)
        m.fail("method", std::string("expected \"") + kCollectivesLoopMeanSlowestRank + "\", \"" +
                             kCollectivesMedianCallSlowestRank + "\" or \"" + kCollectivesLoopDifference +
                             "\", got \"" + cm.method + "\"");
      if (cm.load_average < 0)
        m.fail("load_average", "expected a load average >= 0");
      net.collectives_measured = cm;
    }
    if (n.has("exchange")) {  // optional (calibrations before the exchange curve lack it)
      const json& ex = n.array("exchange");
      for (std::size_t i = 0; i < ex.size(); ++i) {
        Obj p = n.element("exchange", i);
        p.only({"bytes", "time_s"});
        SizedTiming point{p.uint64("bytes"), stat_from(p, "time_s")};
        if (i > 0 && point.bytes <= net.exchange.back().bytes)
          p.fail("bytes", "exchange sizes must ascend strictly");
        net.exchange.push_back(point);
      }
    }
    if (n.has("shared_bandwidth_Bps"))
      net.shared_bandwidth_Bps = n.number("shared_bandwidth_Bps", Bound::Positive);
    if (n.has("copy_overhead")) {  // version 2
      if (c.version < 2)
        n.fail("copy_overhead", "needs version 2 or later (the file says version " + std::to_string(c.version) + ")");
      const json& co = n.array("copy_overhead");
      for (std::size_t i = 0; i < co.size(); ++i) {
        Obj p = n.element("copy_overhead", i);
        p.only({"bytes", "time_s"});
        OverheadPoint point{p.uint64("bytes"), p.number("time_s", Bound::NonNegative)};
        if (not std::isfinite(point.time_s) || point.time_s < 0)
          p.fail("time_s", "expected seconds >= 0");
        if (i > 0 && point.bytes <= net.copy_overhead.back().bytes)
          p.fail("bytes", "copy_overhead sizes must ascend strictly");
        net.copy_overhead.push_back(point);
      }
    }
    c.network = std::move(net);
  }
  if (top.has("gpu"))
    c.gpu = gpu_from(top.child("gpu"), true);
  return c;
}

ojson to_json(const GpuCalibration& g)
{
  ojson o;
  o["source"]                = g.source;
  o["device_name"]           = g.device_name;
  o["device_count"]          = g.device_count;
  o["memory_bytes"]          = g.memory_bytes;
  o["speed_flops"]           = g.speed_flops;
  o["h2d_pageable"]          = link_to(g.h2d_pageable);
  o["d2h_pageable"]          = link_to(g.d2h_pageable);
  o["h2d_pinned"]            = link_to(g.h2d_pinned);
  o["d2h_pinned"]            = link_to(g.d2h_pinned);
  o["d2d"]                   = link_to(g.d2d);
  o["p2p"]                   = link_to(g.p2p);
  o["kernel_launch_s"]       = g.kernel_launch_s;
  o["malloc_s"]              = g.malloc_s;
  o["free_s"]                = g.free_s;
  o["host_alloc_s_per_byte"] = g.host_alloc_s_per_byte;
  return o;
}

ojson to_json(const Calibration& c)
{
  ojson o;
  o["format"]  = kCalibrationFormat;
  o["version"] = c.version;
  ojson host;
  host["name"]             = c.host.name;
  host["cpu_model"]        = c.host.cpu_model;
  host["cores"]            = c.host.cores;
  host["date"]             = c.host.date;
  host["gridcast_version"] = c.host.gridcast_version;
  host["load_average"]     = c.host.load_average;
  o["host"]                = host;
  ojson compute;
  compute["dgemm_flops"]      = stat_to(c.compute.dgemm_flops);
  compute["stream_triad_Bps"] = stat_to(c.compute.stream_triad_Bps);
  compute["scalar_flops"]     = stat_to(c.compute.scalar_flops);
  compute["core_speed_flops"] = c.compute.core_speed_flops;
  for (auto [key, curve] : {std::pair{"reduction", &c.compute.reduction}, std::pair{"memcpy", &c.compute.memcpy},
                            std::pair{"memcpy_all_cores", &c.compute.memcpy_all_cores}}) {
    if (curve->empty())
      continue;
    ojson points = ojson::array();
    for (const auto& p : *curve)
      points.push_back(ojson{{"bytes", p.bytes}, {"time_s", stat_to(p.time_s)}});
    compute[key] = points;
  }
  if (not c.compute.rate_by_working_set.empty()) {
    ojson curve = ojson::array();
    for (const auto& p : c.compute.rate_by_working_set)
      curve.push_back(ojson{{"bytes", p.bytes}, {"flops", stat_to(p.flops)}});
    compute["rate_by_working_set"] = curve;
  }
  if (not c.compute.library_rates.empty()) {
    ojson curves = ojson::array();
    for (const KernelRateCurve& k : c.compute.library_rates) {
      ojson points = ojson::array();
      for (const KernelRatePoint& p : k.points)
        points.push_back(ojson{{"bytes", p.bytes}, {"rate", stat_to(p.rate)}});
      curves.push_back(ojson{{"kernel", k.kernel}, {"work", k.work}, {"points", points}});
    }
    compute["library_rates"] = curves;
  }
  o["compute"]                = compute;
  if (c.network) {
    const NetworkCalibration& n = *c.network;
    ojson net;
    net["launcher"]              = n.launcher;
    net["latency_s"]             = n.latency_s;
    net["bandwidth_Bps"]         = n.bandwidth_Bps;
    net["eager_threshold_bytes"] = n.eager_threshold_bytes;
    net["lat_factor"]            = segments_to(n.lat_factor);
    net["bw_factor"]             = segments_to(n.bw_factor);
    ojson pp                     = ojson::array();
    for (const auto& p : n.pingpong)
      pp.push_back(ojson{{"bytes", p.bytes}, {"one_way_s", stat_to(p.one_way_s)}});
    net["pingpong"] = pp;
    ojson coll      = ojson::array();
    for (const auto& t : n.collectives)
      coll.push_back(ojson{{"op", t.op}, {"np", t.np}, {"bytes", t.bytes}, {"time_s", stat_to(t.time_s)}});
    net["collectives"] = coll;
    if (n.collectives_measured)
      net["collectives_measured"] = ojson{{"method", n.collectives_measured->method},
                                          {"date", n.collectives_measured->date},
                                          {"load_average", n.collectives_measured->load_average}};
    if (not n.exchange.empty()) {
      ojson ex = ojson::array();
      for (const auto& p : n.exchange)
        ex.push_back(ojson{{"bytes", p.bytes}, {"time_s", stat_to(p.time_s)}});
      net["exchange"] = ex;
    }
    if (n.shared_bandwidth_Bps > 0)
      net["shared_bandwidth_Bps"] = n.shared_bandwidth_Bps;
    if (not n.copy_overhead.empty()) {
      ojson co = ojson::array();
      for (const auto& p : n.copy_overhead)
        co.push_back(ojson{{"bytes", p.bytes}, {"time_s", p.time_s}});
      net["copy_overhead"] = co;
    }
    o["network"] = net;
  }
  if (c.gpu)
    o["gpu"] = to_json(*c.gpu);
  return o;
}

GpuCalibration gpu_calibration_from_json(const json& j, const std::string& file, const std::string& key_prefix)
{
  return gpu_from(Obj(j, file, key_prefix), false);
}

GpuCalibration read_gpu_datasheet(const fs::path& file)
{
  const std::string name = file.string();
  return gpu_calibration_from_json(read_json_file(file, "the calibration"), name, "");
}

Calibration read_calibration(const fs::path& file)
{
  return calibration_from_json(read_json_file(file, "the calibration"), file.string());
}

namespace {

void write_text(const fs::path& file, const std::string& text)
{
  write_file_atomically(file, text, "the calibration");
}

}  // namespace

void write_calibration(const fs::path& file, const Calibration& c)
{
  // Validate what we write with the reader, so that a file we produce is always one we accept.
  const ojson doc = to_json(c);
  calibration_from_json(json::parse(doc.dump()), file.string() + " (being written)");
  write_text(file, doc.dump(2) + "\n");
}

void write_gpu_datasheet(const fs::path& file, const GpuCalibration& g)
{
  const ojson doc = to_json(g);
  gpu_calibration_from_json(json::parse(doc.dump()), file.string() + " (being written)", "");
  write_text(file, doc.dump(2) + "\n");
}

std::string format_factor_segments(const std::vector<FactorSegment>& segments)
{
  std::string out;
  for (const auto& s : segments) {
    if (not out.empty())
      out += ';';
    out += std::to_string(s.min_bytes) + ":" + shortest(s.factor);
  }
  return out;
}

namespace {

/// One "bytes:value" item of a size-keyed list (the factor and overhead lists of the root zone).
struct SizeValue {
  std::uint64_t bytes = 0;
  double value = 0;
};

/// Splits "bytes:value;bytes:value;..." (a trailing ';' tolerated, as SMPI does) and parses each item;
/// `item` names an entry in messages ("segment", "point"), `value_ok`/`value_expect` check the value.
/// Ordering rules are the caller's.
template <class Fail, class ValueOk>
std::vector<SizeValue> parse_size_value_list(const std::string& text, const std::string& item_word,
                                             const std::string& value_word, const std::string& value_expect,
                                             ValueOk value_ok, Fail fail)
{
  std::vector<SizeValue> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(';', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(pos, end - pos);
    pos              = end + 1;
    if (item.empty()) {
      if (end == text.size() && not out.empty())
        break;
      fail("empty " + item_word);
    }
    std::size_t colon = item.find(':');
    if (colon == std::string::npos)
      fail(item_word + " \"" + item + "\" has no ':'");
    SizeValue v;
    const char* b = item.data();
    auto r1       = std::from_chars(b, b + colon, v.bytes);
    if (r1.ec != std::errc() || r1.ptr != b + colon)
      fail("bad byte count in \"" + item + "\"");
    auto r2 = std::from_chars(b + colon + 1, b + item.size(), v.value);
    if (r2.ec != std::errc() || r2.ptr != b + item.size() || not std::isfinite(v.value) || not value_ok(v.value))
      fail("bad " + value_word + " in \"" + item + "\" (expected " + value_expect + ")");
    out.push_back(v);
  }
  if (out.empty())
    fail("no " + item_word);
  return out;
}

}  // namespace

std::vector<FactorSegment> parse_factor_segments(const std::string& text, const std::string& file,
                                                 const std::string& key)
{
  auto fail = [&](const std::string& why) -> void {
    throw InputError({file, 0, key, -1}, "bad factor list \"" + text + "\": " + why +
                                             " (expected \"min_bytes:factor;...\", ascending from 0)");
  };
  std::vector<FactorSegment> out;
  for (const SizeValue& v :
       parse_size_value_list(text, "segment", "factor", "a number > 0", [](double f) { return f > 0; }, fail)) {
    if (out.empty() && v.bytes != 0)
      fail("the first segment must start at 0");
    if (not out.empty() && v.bytes <= out.back().min_bytes)
      fail("segments must ascend strictly");
    out.push_back({v.bytes, v.value});
  }
  return out;
}

double factor_for(const std::vector<FactorSegment>& segments, double bytes)
{
  double f = 1;
  for (const auto& s : segments) {
    if (bytes < static_cast<double>(s.min_bytes))
      break;
    f = s.factor;
  }
  return f;
}

std::string format_overhead_points(const std::vector<OverheadPoint>& points)
{
  std::string out;
  for (const auto& p : points) {
    if (not out.empty())
      out += ';';
    out += std::to_string(p.bytes) + ":" + shortest(p.time_s);
  }
  return out;
}

std::vector<OverheadPoint> parse_overhead_points(const std::string& text, const std::string& file,
                                                 const std::string& key)
{
  auto fail = [&](const std::string& why) -> void {
    throw InputError({file, 0, key, -1}, "bad overhead list \"" + text + "\": " + why +
                                             " (expected \"bytes:seconds;...\", sizes ascending)");
  };
  std::vector<OverheadPoint> out;
  for (const SizeValue& v :
       parse_size_value_list(text, "point", "seconds", "a number >= 0", [](double t) { return t >= 0; }, fail)) {
    if (not out.empty() && v.bytes <= out.back().bytes)
      fail("sizes must ascend strictly");
    out.push_back({v.bytes, v.value});
  }
  return out;
}

double overhead_for(const std::vector<OverheadPoint>& points, double bytes)
{
  if (points.empty())
    return 0;
  if (bytes <= static_cast<double>(points.front().bytes))
    return points.front().time_s;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const double x1 = static_cast<double>(points[i].bytes);
    if (bytes <= x1) {
      const double x0 = static_cast<double>(points[i - 1].bytes);
      return points[i - 1].time_s + (points[i].time_s - points[i - 1].time_s) * (bytes - x0) / (x1 - x0);
    }
  }
  return points.back().time_s;
}

std::optional<std::uint64_t> cache_bytes_from_memcpy(const std::vector<OverheadPoint>& points)
{
  if (points.size() < 3)
    return std::nullopt;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (points[i].bytes == 0 || not(points[i].time_s > 0) || (i > 0 && points[i].bytes <= points[i - 1].bytes))
      return std::nullopt;
  const auto per_byte_s = [&](std::size_t i) { return points[i].time_s / static_cast<double>(points[i].bytes); };
  const double half_out_of_cache_s = per_byte_s(points.size() - 1) / 2;
  // The largest copy still served by a cache: every larger one is slower than half the out-of-cache level.
  std::size_t k = points.size() - 1;
  while (k > 0 && per_byte_s(k - 1) > half_out_of_cache_s)
    --k;
  if (k == 0)
    return std::nullopt;  // even the smallest copy runs at more than half the out-of-cache time: no cache seen
  const std::size_t in = k - 1;
  const double x0 = std::log2(static_cast<double>(points[in].bytes));
  const double x1 = std::log2(static_cast<double>(points[k].bytes));
  const double fraction = (half_out_of_cache_s - per_byte_s(in)) / (per_byte_s(k) - per_byte_s(in));
  const double knee_bytes = std::exp2(x0 + fraction * (x1 - x0));
  const auto kib = static_cast<std::uint64_t>(2 * knee_bytes / 1024);
  return kib * 1024;
}

}  // namespace gridcast::platform
