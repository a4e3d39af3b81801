// run.json (typed RunInfo, strict schema) and profile directories. Schema: docs/reference/profile-directory.md.
#include "gridcast/models/profile.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/models/native.hpp"

#include "io.hpp"
#include "log2_interpolation.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <fstream>

namespace fs = std::filesystem;

namespace gridcast::models {

std::string_view encoding_name(TraceEncoding e)
{
  return e == TraceEncoding::Binary ? "binary" : "jsonl";
}

std::string rank_file_name(int rank, TraceEncoding e)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d.%s", rank, e == TraceEncoding::Binary ? "gct" : "jsonl");
  return buf;
}

namespace {

constexpr std::string_view kFormatName = "gridcast-profile";
constexpr int kFormatVersion           = 1;

}  // namespace

double rate_at(const RateCurve& curve, double bytes, double fallback)
{
  if (curve.empty())
    return fallback;
  return detail::rate_in_log2(curve, bytes, [](const RatePoint& p) { return p.working_set_bytes; },
                              [](const RatePoint& p) { return p.speed_flops; });
}

std::string recorded_mpi_library(const RunInfo& info)
{
  if (info.mpi_library.empty() && info.origin == "tit-import")
    return "SMPI";
  return info.mpi_library;
}

void prepare_trace_output(const fs::path& out, bool replace)
{
  std::error_code ec;
  if (not fs::exists(out, ec))
    return;
  if (not fs::is_directory(out, ec))
    throw InputError({out.string(), 0, {}, -1}, "exists and is not a directory: choose another --out");
  std::vector<fs::path> ours;  // what gridcast writes into a trace directory
  bool others = false;
  for (const fs::directory_entry& e : fs::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    const bool rank_file   = name.rfind("rank-", 0) == 0 && (e.path().extension() == ".gct" || e.path().extension() == ".jsonl");
    if (name == "run.json" || rank_file || name == "raw" || name == "trace.txt" || name == "trace.txt_files")
      ours.push_back(e.path());
    else
      others = true;
  }
  if (ours.empty()) {
    if (others)
      throw InputError({out.string(), 0, {}, -1}, "is not empty and holds no trace gridcast wrote: choose an empty or new --out");
    return;
  }
  if (not replace)
    throw InputError({out.string(), 0, {}, -1},
                     "already holds a trace (" + ours.front().filename().string() + (ours.size() > 1 ? ", ..." : "") +
                         "): pass --force to replace it, or choose another --out");
  std::sort(ours.begin(), ours.end(), [](const fs::path& a, const fs::path& b) {
    return (a.filename() == "run.json") != (b.filename() == "run.json") ? a.filename() == "run.json" : a < b;
  });
  for (const fs::path& p : ours) {
    fs::remove_all(p, ec);
    if (ec)
      throw InputError({p.string(), 0, {}, -1}, "cannot remove the earlier trace's file: " + ec.message());
  }
}

RunInfo read_run_info(const fs::path& run_json)
{
  const nlohmann::json j = read_json_file(run_json, "run.json");
  JsonObject top(j, run_json.string());
  top.only(
      {"format", "format_version", "np", "nw", "command", "host", "date", "encoding", "complete", "origin", "units",
       "footprint_bytes", "mpi_library"});

  if (top.has("format") && top.need("format") != std::string(kFormatName))
    top.fail("format", "expected \"gridcast-profile\"");
  if (top.has("format_version") && top.integer("format_version") != kFormatVersion)
    top.fail("format_version", "unsupported version " + top.need("format_version").dump() +
                                   " (this gridcast reads version " + std::to_string(kFormatVersion) + ")");

  RunInfo info;
  info.np = top.int32("np", 1);
  if (top.has("nw"))
    info.nw = top.number("nw", JsonObject::Bound::NonNegative);
  for (auto [key, out] : {std::pair<const char*, std::string*>{"command", &info.command}, {"date", &info.date},
                          {"origin", &info.origin}, {"mpi_library", &info.mpi_library}})
    if (top.has(key))
      *out = top.string(key);

  JsonObject host = top.child("host");
  host.only({"name", "speed_flops", "rate_curve", "library_rates"});
  if (host.has("name"))
    info.host.name = host.string("name");
  info.host.speed_flops = host.number("speed_flops", JsonObject::Bound::Positive);
  if (host.has("rate_curve")) {
    const std::size_t n = host.array("rate_curve").size();
    for (std::size_t i = 0; i < n; ++i) {
      JsonObject pt = host.element("rate_curve", i);
      pt.only({"working_set_bytes", "speed_flops"});
      RatePoint rp{pt.number("working_set_bytes", JsonObject::Bound::Positive),
                   pt.number("speed_flops", JsonObject::Bound::Positive)};
      if (not info.host.rate_curve.empty() && not(rp.working_set_bytes > info.host.rate_curve.back().working_set_bytes))
        pt.fail("working_set_bytes", "must increase along the curve");
      info.host.rate_curve.push_back(rp);
    }
  }
  if (host.has("library_rates")) {  // optional: profiles recorded before it lack it
    JsonObject rates = host.child("library_rates");
    for (const auto& item : host.need("library_rates").items()) {
      const std::string kernel = item.key();
      if (library_kernel(kernel + "_").empty())
        rates.fail(kernel, "not a library kernel gridcast prices (" + kernel + ")");
      KernelRateCurve& curve = info.host.library_rates[kernel];
      const std::size_t n = rates.array(kernel).size();
      for (std::size_t i = 0; i < n; ++i) {
        JsonObject pt = rates.element(kernel, i);
        pt.only({"working_set_bytes", "rate"});
        KernelRatePoint rp{pt.number("working_set_bytes", JsonObject::Bound::Positive),
                           pt.number("rate", JsonObject::Bound::Positive)};
        if (not curve.empty() && not(rp.working_set_bytes > curve.back().working_set_bytes))
          pt.fail("working_set_bytes", "must increase along the curve");
        curve.push_back(rp);
      }
      if (curve.empty())
        rates.fail(kernel, "expected at least one point");
    }
  }

  const nlohmann::json& enc = top.need("encoding");
  if (enc == "jsonl")
    info.encoding = TraceEncoding::JsonLines;
  else if (enc == "binary")
    info.encoding = TraceEncoding::Binary;
  else
    top.fail("encoding", "expected \"jsonl\" or \"binary\", got " + enc.dump());

  if (top.has("complete"))
    info.complete = top.boolean("complete");
  if (top.has("footprint_bytes")) {
    info.footprint_bytes = top.numbers("footprint_bytes");
    if (static_cast<int>(info.footprint_bytes.size()) != info.np)
      top.fail("footprint_bytes", std::to_string(info.footprint_bytes.size()) + " values for " +
                                      std::to_string(info.np) + " ranks (one per rank)");
    for (double b : info.footprint_bytes)
      if (not(b >= 0))
        top.fail("footprint_bytes", "a footprint must be >= 0 bytes");
  }

  if (top.has("units")) {
    JsonObject units = top.child("units");
    units.only({"time", "work", "size"});
    // Units are fixed; the key exists so that a file states them and a reader can refuse others.
    for (auto [key, unit] : {std::pair<const char*, const char*>{"time", "s"}, {"work", "flop"}, {"size", "B"}})
      if (units.has(key) && units.need(key) != unit)
        units.fail(key, "unsupported unit " + units.need(key).dump() + " (expected \"" + unit + "\")");
  }
  return info;
}

void write_run_info(const fs::path& run_json, const RunInfo& info)
{
  nlohmann::ordered_json o;
  o["format"]            = kFormatName;
  o["format_version"]    = kFormatVersion;
  o["np"]                = info.np;
  o["nw"]                = info.nw;
  o["command"]           = info.command;
  o["host"]              = {{"name", info.host.name}, {"speed_flops", info.host.speed_flops}};
  if (not info.host.rate_curve.empty()) {
    nlohmann::ordered_json curve = nlohmann::ordered_json::array();
    for (const RatePoint& p : info.host.rate_curve)
      curve.push_back({{"working_set_bytes", p.working_set_bytes}, {"speed_flops", p.speed_flops}});
    o["host"]["rate_curve"] = curve;
  }
  if (not info.host.library_rates.empty()) {
    nlohmann::ordered_json rates = nlohmann::ordered_json::object();
    for (const auto& [kernel, points] : info.host.library_rates) {
      nlohmann::ordered_json curve = nlohmann::ordered_json::array();
      for (const KernelRatePoint& p : points)
        curve.push_back({{"working_set_bytes", p.working_set_bytes}, {"rate", p.rate}});
      rates[kernel] = curve;
    }
    o["host"]["library_rates"] = rates;
  }
  o["date"]              = info.date;
  o["encoding"]          = encoding_name(info.encoding);
  o["complete"]          = info.complete;
  o["origin"]            = info.origin;
  if (not info.mpi_library.empty())
    o["mpi_library"] = info.mpi_library;
  o["units"]             = {{"time", "s"}, {"work", "flop"}, {"size", "B"}};
  if (not info.footprint_bytes.empty())
    o["footprint_bytes"] = info.footprint_bytes;
  const std::string text = o.dump(2) + "\n";

  write_file_atomically(run_json, text, "the profile's run.json");
}

ProfileDir::ProfileDir(fs::path dir) : dir_(std::move(dir))
{
  const fs::path run_json = dir_ / "run.json";
  std::error_code ec;
  if (not fs::is_regular_file(run_json, ec))
    throw InputError(detail::at_file(run_json.string()),
                     fs::is_directory(dir_, ec) ? "no run.json in the profile directory" : "no such profile directory");
  info_ = read_run_info(run_json);
  for (int rank = 0; rank < info_.np; ++rank) {
    fs::path file = rank_path(rank);
    if (not fs::is_regular_file(file, ec))
      throw InputError({file.string(), 0, "", rank},
                       "missing trace file of rank " + std::to_string(rank) + " (run.json says np = " +
                           std::to_string(info_.np) + ", encoding " + std::string(encoding_name(info_.encoding)) + ")");
  }
}

fs::path ProfileDir::rank_path(int rank) const
{
  return dir_ / rank_file_name(rank, info_.encoding);
}

CallStreamPtr ProfileDir::open(int rank) const
{
  if (rank < 0 || rank >= info_.np)
    throw InternalError("ProfileDir::open: rank " + std::to_string(rank) + " out of range [0, " +
                        std::to_string(info_.np) + ")");
  return open_native_trace(rank_path(rank), info_.encoding, rank);
}

bool is_profile_dir(const fs::path& path)
{
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(path / "run.json", ec);
}

}  // namespace gridcast::models
