// A GPU data sheet (calibrate --gpu-datasheet): a GPU's figures from its vendor instead of measurements.
#include "fuzz_support.hpp"

#include "gridcast/calibration/calibration.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "gpu.json");
  return fuzz::expect_input_errors([&] { (void)platform::read_gpu_datasheet(file); });
}
