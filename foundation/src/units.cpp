#include "gridcast/foundation/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace gridcast {

namespace {

using Suffixes = std::initializer_list<std::pair<std::string_view, double>>;

/// Splits "<number><suffix>" and looks the suffix up; `kind` and `examples` make the error readable.
double parse_quantity(std::string_view text, const ErrorContext& where, Suffixes suffixes, std::string_view kind,
                      std::string_view examples, bool bare_number_is_base_unit = false)
{
  auto fail = [&](const std::string& why) -> double {
    throw InputError(where, "bad " + std::string(kind) + " '" + std::string(text) + "': " + why + " (examples: " +
                                std::string(examples) + ")");
  };
  std::size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
                               text[end] == 'e' || text[end] == 'E' || text[end] == '-' || text[end] == '+')) {
    // An 'e' starts an exponent only when a digit or sign follows; otherwise it begins no suffix we know.
    if ((text[end] == 'e' || text[end] == 'E') &&
        (end + 1 >= text.size() || not(std::isdigit(static_cast<unsigned char>(text[end + 1])) ||
                                       text[end + 1] == '-' || text[end + 1] == '+')))
      break;
    ++end;
  }
  if (end == 0)
    return fail("no number");
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, value);
  if (ec != std::errc() || ptr != text.data() + end || not std::isfinite(value))
    return fail("'" + std::string(text.substr(0, end)) + "' is not a number");
  std::string_view suffix = text.substr(end);
  if (suffix.empty()) {
    if (bare_number_is_base_unit)
      return value;
    return fail("no unit");
  }
  for (const auto& [name, scale] : suffixes)
    if (suffix == name)
      return value * scale;
  return fail("unknown unit '" + std::string(suffix) + "'");
}

}  // namespace

double parse_bandwidth_Bps(std::string_view text, const ErrorContext& where)
{
  constexpr double k = 1e3, Ki = 1024.0;
  double v = parse_quantity(text, where,
                            {{"Bps", 1},          {"kBps", k},         {"MBps", k * k},         {"GBps", k * k * k},
                             {"TBps", k * k * k * k}, {"KiBps", Ki},   {"MiBps", Ki * Ki},      {"GiBps", Ki * Ki * Ki},
                             {"TiBps", Ki * Ki * Ki * Ki}, {"bps", 0.125}, {"kbps", k / 8},     {"Mbps", k * k / 8},
                             {"Gbps", k * k * k / 8}, {"Tbps", k * k * k * k / 8}},
                            "bandwidth", "\"25GBps\" bytes/s, \"100Gbps\" bits/s, \"12GiBps\"");
  if (not(v > 0))
    throw InputError(where, "bandwidth must be positive, got '" + std::string(text) + "'");
  return v;
}

double parse_time_s(std::string_view text, const ErrorContext& where)
{
  double v = parse_quantity(text, where, {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}}, "time",
                            "\"1.3us\", \"2ms\", \"500ns\", \"0s\"");
  if (v < 0)
    throw InputError(where, "time must not be negative, got '" + std::string(text) + "'");
  return v;
}

double parse_speed_flops(std::string_view text, const ErrorContext& where)
{
  double v = parse_quantity(text, where,
                            {{"f", 1}, {"kf", 1e3}, {"Mf", 1e6}, {"Gf", 1e9}, {"Tf", 1e12}, {"Pf", 1e15}},
                            "speed", "\"19.5Tf\", \"2.4Gf\" (flop/s)");
  if (not(v > 0))
    throw InputError(where, "speed must be positive, got '" + std::string(text) + "'");
  return v;
}

namespace {

/// Every size unit gridcast reads, in specs and in --cfg values alike ("KB" is the common spelling of kB).
constexpr double kKilo = 1e3, kKibi = 1024.0;
const Suffixes kSizeUnits{{"B", 1},
                          {"kB", kKilo},
                          {"KB", kKilo},
                          {"MB", kKilo * kKilo},
                          {"GB", kKilo * kKilo * kKilo},
                          {"TB", kKilo * kKilo * kKilo * kKilo},
                          {"KiB", kKibi},
                          {"MiB", kKibi * kKibi},
                          {"GiB", kKibi * kKibi * kKibi},
                          {"TiB", kKibi * kKibi * kKibi * kKibi}};

}  // namespace

double parse_size_bytes(std::string_view text, const ErrorContext& where)
{
  double v = parse_quantity(text, where, kSizeUnits, "size", "\"80GiB\", \"512MB\"");
  if (not(v > 0))
    throw InputError(where, "size must be positive, got '" + std::string(text) + "'");
  return v;
}

std::uint64_t parse_byte_count(std::string_view text, const ErrorContext& where)
{
  double v = parse_quantity(text, where, kSizeUnits, "size", "\"65536\", \"64KiB\", \"1MB\"", true);
  if (v < 0)
    throw InputError(where, "a size cannot be negative: '" + std::string(text) + "'");
  if (not(v < 1.8e19))
    throw InputError(where, "size '" + std::string(text) + "' is too large");
  return static_cast<std::uint64_t>(std::llround(v));
}

std::string format_number(double value)
{
  std::array<char, 64> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  return std::string(buf.data(), ptr);
}

}  // namespace gridcast
