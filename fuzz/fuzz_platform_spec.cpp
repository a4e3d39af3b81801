// A platform spec, read and turned into a platform as `gridcast platform` does (the XML rendered in memory),
// with a small --max-elements: a large platform is a valid input, only slow to build.
#include "fuzz_support.hpp"

#include "gridcast/platform/generator.hpp"
#include "gridcast/platform/spec.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "spec.json");
  return fuzz::expect_input_errors([&] {
    const platform::PlatformSpec spec = platform::read_spec(file);
    (void)platform::render_xml(platform::build_platform(spec, nullptr, "spec", 2000));
  });
}
