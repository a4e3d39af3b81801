// Strict reading of JSON input files (run.json, model.json, platform specs, calibration.json and GPU data
// sheets): one object at a time, every key checked against an allowed list, typed getters, and errors that
// name the file and the key path ("node_kinds.dgx.pcie.root", "groups[2].template[0].peer") so that a user
// can find the mistake. it is part of gridcast::foundation, which needs no SimGrid.
#pragma once

#include "gridcast/foundation/errors.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast {

/// Reads `file` as JSON. Errors (InputError, naming the file): "cannot open <what>: <errno text>" and
/// "invalid JSON: <parser message>". `what` says what the file is ("run.json", "the model").
nlohmann::json read_json_file(const std::filesystem::path& file, std::string_view what);

/// One JSON object under validation. `path` is its key path from the file's root (empty for the root); the
/// object must outlive the reader. Every getter of a key that is absent throws "missing required key":
/// optional keys are tested with has() first, so that no default is ever taken silently.
class JsonObject {
public:
  /// Throws InputError("expected an object, got <type>") at `path` unless `j` is an object.
  JsonObject(const nlohmann::json& j, std::string file, std::string path = {});

  /// `path.key` ("key" at the root; the object's own path for an empty key).
  std::string key_path(std::string_view key) const;
  ErrorContext at(std::string_view key) const { return {file_, 0, key_path(key), -1}; }
  [[noreturn]] void fail(std::string_view key, const std::string& reason) const;

  /// Rejects the first key not in `allowed`: "unknown key (allowed here: a, b, c)".
  void only(std::initializer_list<std::string_view> allowed) const;

  bool has(std::string_view key) const { return j_.find(key) != j_.end(); }
  const nlohmann::json& need(std::string_view key) const;

  std::string string(std::string_view key) const;
  bool boolean(std::string_view key) const;

  /// Which numbers a number() accepts; the error says the bound ("expected a number > 0, got -1").
  enum class Bound { Any, NonNegative, Positive };
  /// A finite number.
  double number(std::string_view key, Bound bound = Bound::Any) const;

  static constexpr std::int64_t kMinInt64 = std::numeric_limits<std::int64_t>::min();
  static constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();
  /// An integer in [lo, hi]; "expected an integer, got 1.5", "expected an integer >= 1, got 0".
  std::int64_t integer(std::string_view key, std::int64_t lo = kMinInt64, std::int64_t hi = kMaxInt64) const
  {
    return integer_value(need(key), key, lo, hi);
  }
  /// An integer in [lo, hi], a range inside the int's.
  int int32(std::string_view key, std::int64_t lo = std::numeric_limits<int>::min(),
            std::int64_t hi = std::numeric_limits<int>::max()) const
  {
    return static_cast<int>(integer(key, lo, hi));
  }
  /// An integer >= 0 up to 2^64 - 1 (nlohmann parses every non-negative integer literal as unsigned).
  std::uint64_t uint64(std::string_view key) const;
  /// The integer check of integer() for a value found under `key` (an array element: "dims[1]").
  std::int64_t integer_value(const nlohmann::json& v, std::string_view key, std::int64_t lo = kMinInt64,
                             std::int64_t hi = kMaxInt64) const;

  /// A quantity with its unit in a string ("25GBps", "1.3us"); a bare number is refused so that no unit is
  /// ever guessed. `parse` converts the string (and reports a bad unit at the context it is given).
  using QuantityParser = double (*)(std::string_view, const ErrorContext&);
  double quantity(std::string_view key, QuantityParser parse) const;
  std::optional<double> opt_quantity(std::string_view key, QuantityParser parse) const
  {
    return has(key) ? std::optional<double>(quantity(key, parse)) : std::nullopt;
  }

  const nlohmann::json& array(std::string_view key) const;
  /// Arrays of one type; a bad element is named by its index ("members[2]: expected a string, got number").
  std::vector<std::string> strings(std::string_view key) const;
  std::vector<double> numbers(std::string_view key) const;
  std::vector<std::int64_t> integers(std::string_view key, std::int64_t lo = kMinInt64,
                                     std::int64_t hi = kMaxInt64) const;

  /// The object under `key`, and the object at index `i` of the array under `key`.
  JsonObject child(std::string_view key) const { return JsonObject(need(key), file_, key_path(key)); }
  JsonObject element(std::string_view key, std::size_t i) const;

  const nlohmann::json& raw() const { return j_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

private:
  const nlohmann::json& j_;
  std::string file_;
  std::string path_;
};

}  // namespace gridcast
