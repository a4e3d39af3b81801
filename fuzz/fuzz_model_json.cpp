// A trace model (model.json), the input of synth and predict.
#include "fuzz_support.hpp"

#include "gridcast/models/trace_model.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "model.json");
  return fuzz::expect_input_errors([&] { (void)models::trace::read_model(file); });
}
