// A TIT index and the files it names: the input's first part (parts split by "%%" lines) is the index,
// the others are written as f0.txt, f1.txt... for the index to name.
#include "fuzz_support.hpp"

#include "gridcast/models/tit.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  fuzz::clear_scratch();
  const auto parts = fuzz::split_parts(data, size);
  fuzz::write_file(fuzz::scratch() / "trace.txt", parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i)
    fuzz::write_file(fuzz::scratch() / ("f" + std::to_string(i - 1) + ".txt"), parts[i]);
  return fuzz::expect_input_errors([&] {
    models::TitTrace trace(fuzz::scratch() / "trace.txt", fuzz::scratch() / "split");
    models::CallRecord call;
    for (int r = 0; r < trace.rank_count(); ++r)
      for (auto stream = trace.open(r); stream->next(call);) {
      }
  });
}
