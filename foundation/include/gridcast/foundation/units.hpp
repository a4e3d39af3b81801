// Quantities with units in strings, as platform specs write them: "25GBps", "100Gbps", "1.3us",
// "19.5Tf", "80GiB". One parser per kind of quantity; each returns the value in SI base units
// (bytes per second, seconds, flop/s, bytes) and throws InputError naming `where` on anything else.
#pragma once

#include "gridcast/foundation/errors.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace gridcast {

/// Bandwidth: a number followed by a decimal (k M G T P) or binary (Ki Mi Gi Ti) prefix and "Bps"
/// (bytes per second) or "bps" (bits per second): "25GBps", "100Gbps", "12.5GiBps". Must be > 0.
double parse_bandwidth_Bps(std::string_view text, const ErrorContext& where);

/// Time: a number followed by "s", "ms", "us" or "ns": "1.3us". Must be >= 0.
double parse_time_s(std::string_view text, const ErrorContext& where);

/// Compute speed: a number followed by "f", "kf", "Mf", "Gf", "Tf", "Pf" (flop/s): "19.5Tf". Must be > 0.
double parse_speed_flops(std::string_view text, const ErrorContext& where);

/// Size: a number followed by "B", "kB" (or "KB"), "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB": "80GiB".
/// Must be > 0.
double parse_size_bytes(std::string_view text, const ErrorContext& where);

/// A byte count as --cfg values write it: a plain number of bytes ("65536") or a size with any unit of
/// parse_size_bytes ("64KiB"), rounded to whole bytes. Must be >= 0.
std::uint64_t parse_byte_count(std::string_view text, const ErrorContext& where);

/// Shortest decimal text that reads back as exactly `value` (std::to_chars): deterministic output.
std::string format_number(double value);

}  // namespace gridcast
