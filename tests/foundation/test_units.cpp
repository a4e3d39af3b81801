#include "gridcast/foundation/units.hpp"

#include <catch2/catch.hpp>

using namespace gridcast;
using namespace gridcast;

namespace {
const ErrorContext kWhere{"spec.json", 0, "node_kinds.a.loopback.bandwidth", -1};
}

TEST_CASE("units: bandwidths in bytes and bits, decimal and binary prefixes", "[platform][units]")
{
  CHECK(parse_bandwidth_Bps("25GBps", kWhere) == Approx(25e9));
  CHECK(parse_bandwidth_Bps("100Gbps", kWhere) == Approx(12.5e9));
  CHECK(parse_bandwidth_Bps("1.5MiBps", kWhere) == Approx(1.5 * 1024 * 1024));
  CHECK(parse_bandwidth_Bps("800Bps", kWhere) == Approx(800));
  CHECK(parse_bandwidth_Bps("1e3kBps", kWhere) == Approx(1e6));
}

TEST_CASE("units: times, speeds and sizes", "[platform][units]")
{
  CHECK(parse_time_s("1.3us", kWhere) == Approx(1.3e-6));
  CHECK(parse_time_s("2ms", kWhere) == Approx(2e-3));
  CHECK(parse_time_s("500ns", kWhere) == Approx(5e-7));
  CHECK(parse_time_s("0s", kWhere) == 0);
  CHECK(parse_speed_flops("19.5Tf", kWhere) == Approx(19.5e12));
  CHECK(parse_speed_flops("2.4Gf", kWhere) == Approx(2.4e9));
  CHECK(parse_size_bytes("80GiB", kWhere) == Approx(80.0 * 1024 * 1024 * 1024));
  CHECK(parse_size_bytes("512MB", kWhere) == Approx(512e6));
}

TEST_CASE("units: bad quantities name the key and say why", "[platform][units]")
{
  auto message = [](auto parse, const char* text) {
    try {
      parse(text, kWhere);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message(parse_bandwidth_Bps, "25"), Catch::Contains("no unit") && Catch::Contains("spec.json") &&
                                                     Catch::Contains("node_kinds.a.loopback.bandwidth"));
  CHECK_THAT(message(parse_bandwidth_Bps, "25GB/s"), Catch::Contains("unknown unit 'GB/s'"));
  CHECK_THAT(message(parse_bandwidth_Bps, "fastGBps"), Catch::Contains("no number"));
  CHECK_THAT(message(parse_bandwidth_Bps, "0GBps"), Catch::Contains("must be positive"));
  CHECK_THAT(message(parse_bandwidth_Bps, "-3GBps"), Catch::Contains("must be positive"));
  CHECK_THAT(message(parse_time_s, "-1us"), Catch::Contains("must not be negative"));
  CHECK_THAT(message(parse_time_s, "3 us"), Catch::Contains("unknown unit"));
  CHECK_THAT(message(parse_speed_flops, "1.2.3Gf"), Catch::Contains("is not a number"));
  CHECK_THAT(message(parse_size_bytes, "80Gib"), Catch::Contains("unknown unit 'Gib'"));
}

TEST_CASE("units: numbers are written back exactly", "[platform][units]")
{
  for (double v : {25e9, 1.3e-6, 12.5e9, 0.1, 3.0, 1.0 / 3.0})
    CHECK(std::stod(format_number(v)) == v);
  CHECK(format_number(25e9) == "2.5e+10");
  CHECK(format_number(800) == "800");
  CHECK(format_number(1.3e-6) == "1.3e-06");
}

TEST_CASE("byte counts take a plain number of bytes or any size unit, and refuse negatives")
{
  CHECK(parse_byte_count("65536", kWhere) == 65536u);
  CHECK(parse_byte_count("64KiB", kWhere) == 65536u);
  CHECK(parse_byte_count("2KB", kWhere) == 2000u);
  CHECK(parse_byte_count("1TiB", kWhere) == 1099511627776u);
  CHECK(parse_byte_count("0", kWhere) == 0u);
  CHECK(parse_size_bytes("3KB", kWhere) == 3000.0);
  CHECK_THROWS_WITH(parse_byte_count("-1", kWhere), Catch::Contains("cannot be negative"));
  CHECK_THROWS_WITH(parse_byte_count("12parsecs", kWhere), Catch::Contains("unknown unit 'parsecs'"));
}
