// The hook's raw files of a two-rank run, converted as `gridcast profile` does: the input's parts (split by
// "%%" lines) are rank-0.meta, rank-0.thread-0.gcraw, rank-1.meta and rank-1.thread-0.gcraw. At most 100,000
// records per rank: a longer profile is a valid input, only slow to convert.
#include "fuzz_support.hpp"

#include "gridcast/profiler/profiler.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  fuzz::clear_scratch();
  const auto parts = fuzz::split_parts(data, size);
  const char* names[] = {"rank-0.meta", "rank-0.thread-0.gcraw", "rank-1.meta", "rank-1.thread-0.gcraw"};
  for (std::size_t i = 0; i < parts.size() && i < 4; ++i)
    fuzz::write_file(fuzz::scratch() / names[i], parts[i]);
  return fuzz::expect_input_errors([&] { (void)profiler::convert_raw(fuzz::scratch(), models::RunInfo{}, {}, 100'000); });
}
