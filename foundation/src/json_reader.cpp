// The strict JSON object reader shared by every JSON input of gridcast (see json_reader.hpp).
#include "gridcast/foundation/json_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace gridcast {

using json = nlohmann::json;

json read_json_file(const std::filesystem::path& file, std::string_view what)
{
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))  // would otherwise fail deep inside the stream, naming nothing
    throw InputError({file.string(), 0, {}, -1}, "is a directory, not " + std::string(what));
  std::ifstream in(file, std::ios::binary);
  if (not in)
    throw InputError({file.string(), 0, {}, -1},
                     "cannot open " + std::string(what) + ": " + std::string(std::strerror(errno)));
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix: the user needs the position and the reason.
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos)
      msg.erase(0, p + 2);
    throw InputError({file.string(), 0, {}, -1}, "invalid JSON: " + msg);
  } catch (const json::out_of_range& e) {
    // A number too large for a double (1e400): nlohmann says "number overflow parsing '...'".
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos)
      msg.erase(0, p + 2);
    throw InputError({file.string(), 0, {}, -1}, "invalid JSON: " + msg);
  }
}

JsonObject::JsonObject(const json& j, std::string file, std::string path)
    : j_(j), file_(std::move(file)), path_(std::move(path))
{
  if (not j_.is_object())
    fail("", std::string("expected an object, got ") + j_.type_name());
}

std::string JsonObject::key_path(std::string_view key) const
{
  if (key.empty())
    return path_;
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonObject::fail(std::string_view key, const std::string& reason) const
{
  throw InputError(at(key), reason);
}

void JsonObject::only(std::initializer_list<std::string_view> allowed) const
{
  for (const auto& item : j_.items())
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      std::string list;
      for (auto a : allowed)
        list += (list.empty() ? "" : ", ") + std::string(a);
      fail(item.key(), "unknown key (allowed here: " + list + ")");
    }
}

const json& JsonObject::need(std::string_view key) const
{
  auto it = j_.find(key);
  if (it == j_.end())
    fail(key, "missing required key");
  return *it;
}

std::string JsonObject::string(std::string_view key) const
{
  const json& v = need(key);
  if (not v.is_string())
    fail(key, std::string("expected a string, got ") + v.type_name());
  return v.get<std::string>();
}

bool JsonObject::boolean(std::string_view key) const
{
  const json& v = need(key);
  if (not v.is_boolean())
    fail(key, std::string("expected a boolean, got ") + v.type_name());
  return v.get<bool>();
}

double JsonObject::number(std::string_view key, Bound bound) const
{
  const json& v = need(key);
  if (not v.is_number())
    fail(key, std::string("expected a number, got ") + v.type_name());
  const double d = v.get<double>();
  if (not std::isfinite(d))
    fail(key, "expected a finite number");
  if (bound == Bound::NonNegative && d < 0)
    fail(key, "expected a number >= 0, got " + v.dump());
  if (bound == Bound::Positive && not(d > 0))
    fail(key, "expected a number > 0, got " + v.dump());
  return d;
}

std::uint64_t JsonObject::uint64(std::string_view key) const
{
  const json& v = need(key);
  // A signed integer literal is negative: nlohmann parses every non-negative one as unsigned.
  if (not v.is_number_unsigned())
    fail(key, "expected an integer >= 0, got " + v.dump());
  return v.get<std::uint64_t>();
}

std::int64_t JsonObject::integer_value(const json& v, std::string_view key, std::int64_t lo, std::int64_t hi) const
{
  if (not v.is_number_integer())
    fail(key, "expected an integer, got " + v.dump());
  // An unsigned literal above INT64_MAX is out of every range this reader is asked for.
  const bool too_big = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxInt64);
  const std::int64_t i = too_big ? kMaxInt64 : v.get<std::int64_t>();
  if (too_big || i < lo || i > hi) {
    // A bound at the limit of int or int64 is the type's, not the caller's: the message names the caller's.
    const bool lower = lo != kMinInt64 && lo != std::numeric_limits<int>::min();
    const bool upper = hi != kMaxInt64 && hi != std::numeric_limits<int>::max();
    const std::string range = lower && upper ? "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"
                              : lower        ? ">= " + std::to_string(lo)
                              : upper        ? "<= " + std::to_string(hi)
                                             : std::string(hi == kMaxInt64 ? "of 64 bits" : "of 32 bits");
    fail(key, "expected an integer " + range + ", got " + v.dump());
  }
  return i;
}

double JsonObject::quantity(std::string_view key, QuantityParser parse) const
{
  const json& v = need(key);
  if (not v.is_string())
    fail(key, "expected a string with a unit (like \"25GBps\", \"1.3us\", \"19.5Tf\", \"80GiB\"), got " + v.dump());
  return parse(v.get_ref<const std::string&>(), at(key));
}

const json& JsonObject::array(std::string_view key) const
{
  const json& v = need(key);
  if (not v.is_array())
    fail(key, std::string("expected an array, got ") + v.type_name());
  return v;
}

namespace {
std::string index_key(std::string_view key, std::size_t i)
{
  return std::string(key) + "[" + std::to_string(i) + "]";
}
}  // namespace

std::vector<std::string> JsonObject::strings(std::string_view key) const
{
  const json& a = array(key);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (not a[i].is_string())
      fail(index_key(key, i), std::string("expected a string, got ") + a[i].type_name());
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

std::vector<double> JsonObject::numbers(std::string_view key) const
{
  const json& a = array(key);
  std::vector<double> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (not a[i].is_number())
      fail(index_key(key, i), std::string("expected a number, got ") + a[i].type_name());
    out.push_back(a[i].get<double>());
  }
  return out;
}

std::vector<std::int64_t> JsonObject::integers(std::string_view key, std::int64_t lo, std::int64_t hi) const
{
  const json& a = array(key);
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < a.size(); ++i)
    out.push_back(integer_value(a[i], index_key(key, i), lo, hi));
  return out;
}

JsonObject JsonObject::element(std::string_view key, std::size_t i) const
{
  return JsonObject(array(key)[i], file_, key_path(index_key(key, i)));
}

}  // namespace gridcast
