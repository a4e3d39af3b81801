// A profile directory's run.json.
#include "fuzz_support.hpp"

#include "gridcast/models/profile.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "run.json");
  return fuzz::expect_input_errors([&] { (void)models::read_run_info(file); });
}
