// calibration.json, written by `gridcast calibrate` and read by platform, profile and replay.
#include "fuzz_support.hpp"

#include "gridcast/calibration/calibration.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "calibration.json");
  return fuzz::expect_input_errors([&] { (void)platform::read_calibration(file); });
}
