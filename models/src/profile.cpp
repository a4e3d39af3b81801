// run.json (typed RunInfo, strict schema) and profile directories. Schema: docs/formats.md.
#include "gridcast/models/profile.hpp"

#include "gridcast/models/errors.hpp"
#include "gridcast/models/native.hpp"

#include "io.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>

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

using json = nlohmann::json;

constexpr std::string_view kFormatName = "gridcast-profile";
constexpr int kFormatVersion           = 1;

/// Validates one JSON object of run.json against its allowed keys; `prefix` builds key paths ("host.").
class Checker {
public:
  Checker(const fs::path& file, const json& object, std::string prefix)
      : file_(file.string()), obj_(object), prefix_(std::move(prefix))
  {
  }

  [[noreturn]] void fail(std::string_view key, const std::string& reason) const
  {
    throw InputError({file_, 0, prefix_ + std::string(key), -1}, reason);
  }

  void only(std::initializer_list<std::string_view> allowed) const
  {
    for (const auto& item : obj_.items()) {
      bool known = false;
      for (auto k : allowed)
        known = known || item.key() == k;
      if (not known)
        fail(item.key(), "unknown key");
    }
  }

  const json* find(std::string_view key, bool required) const
  {
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required)
        fail(key, "missing required key");
      return nullptr;
    }
    return &*it;
  }

  void string(std::string_view key, std::string& out) const
  {
    if (const json* v = find(key, false)) {
      if (not v->is_string())
        fail(key, std::string("expected a string, got ") + v->type_name());
      out = v->get<std::string>();
    }
  }

  double number(std::string_view key, bool required, double fallback) const
  {
    const json* v = find(key, required);
    if (v == nullptr)
      return fallback;
    if (not v->is_number())
      fail(key, std::string("expected a number, got ") + v->type_name());
    double d = v->get<double>();
    if (not std::isfinite(d))
      fail(key, "expected a finite number");
    return d;
  }

  const std::string& file() const { return file_; }

private:
  std::string file_;
  const json& obj_;
  std::string prefix_;
};

}  // namespace

RunInfo read_run_info(const fs::path& run_json)
{
  const std::string file = run_json.string();
  std::ifstream in(run_json, std::ios::binary);
  if (not in)
    throw InputError(detail::at_file(file), "cannot open run.json: " + std::string(std::strerror(errno)));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos)
      msg.erase(0, p + 2);
    throw InputError(detail::at_file(file), "invalid JSON: " + msg);
  }
  if (not j.is_object())
    throw InputError(detail::at_file(file), "run.json must hold a JSON object");

  RunInfo info;
  Checker top(run_json, j, "");
  top.only(
      {"format", "format_version", "np", "nw", "command", "host", "date", "encoding", "complete", "origin", "units"});

  if (const json* v = top.find("format", false); v != nullptr && (not v->is_string() || *v != kFormatName))
    top.fail("format", "expected \"gridcast-profile\"");
  if (const json* v = top.find("format_version", false)) {
    if (not v->is_number_integer())
      top.fail("format_version", std::string("expected an integer, got ") + v->type_name());
    if (v->get<std::int64_t>() != kFormatVersion)
      top.fail("format_version", "unsupported version " + v->dump() + " (this gridcast reads version " +
                                     std::to_string(kFormatVersion) + ")");
  }

  const json& np = *top.find("np", true);
  if (not np.is_number_integer())
    top.fail("np", std::string("expected an integer, got ") + np.type_name());
  // nlohmann parses every non-negative integer as unsigned: a signed one is negative.
  if (not np.is_number_unsigned() || np.get<std::uint64_t>() < 1 ||
      np.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    top.fail("np", "expected an integer >= 1, got " + np.dump());
  info.np = np.get<int>();

  info.nw = top.number("nw", false, 0.0);
  if (info.nw < 0)
    top.fail("nw", "expected a number >= 0");
  top.string("command", info.command);
  top.string("date", info.date);
  top.string("origin", info.origin);

  const json& host = *top.find("host", true);
  if (not host.is_object())
    top.fail("host", std::string("expected an object, got ") + host.type_name());
  Checker h(run_json, host, "host.");
  h.only({"name", "speed_flops"});
  h.string("name", info.host.name);
  info.host.speed_flops = h.number("speed_flops", true, 0.0);
  if (info.host.speed_flops <= 0)
    h.fail("speed_flops", "expected a number > 0");

  const json& enc = *top.find("encoding", true);
  if (enc == "jsonl")
    info.encoding = TraceEncoding::JsonLines;
  else if (enc == "binary")
    info.encoding = TraceEncoding::Binary;
  else
    top.fail("encoding", "expected \"jsonl\" or \"binary\", got " + enc.dump());

  if (const json* v = top.find("complete", false)) {
    if (not v->is_boolean())
      top.fail("complete", std::string("expected a boolean, got ") + v->type_name());
    info.complete = v->get<bool>();
  }

  if (const json* units = top.find("units", false)) {
    if (not units->is_object())
      top.fail("units", std::string("expected an object, got ") + units->type_name());
    Checker u(run_json, *units, "units.");
    u.only({"time", "work", "size"});
    // Units are fixed; the key exists so that a file states them and a reader can refuse others.
    for (auto [key, unit] : {std::pair<const char*, const char*>{"time", "s"}, {"work", "flop"}, {"size", "B"}})
      if (const json* v = u.find(key, false); v != nullptr && (not v->is_string() || *v != unit))
        u.fail(key, std::string("unsupported unit ") + v->dump() + " (expected \"" + unit + "\")");
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
  o["date"]              = info.date;
  o["encoding"]          = encoding_name(info.encoding);
  o["complete"]          = info.complete;
  o["origin"]            = info.origin;
  o["units"]             = {{"time", "s"}, {"work", "flop"}, {"size", "B"}};
  const std::string text = o.dump(2) + "\n";

  std::ofstream out(run_json, std::ios::binary | std::ios::trunc);
  if (not out)
    throw InputError(detail::at_file(run_json.string()),
                     "cannot open for writing: " + std::string(std::strerror(errno)));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (not out)
    throw InputError(detail::at_file(run_json.string()), "write failed: " + std::string(std::strerror(errno)));
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
