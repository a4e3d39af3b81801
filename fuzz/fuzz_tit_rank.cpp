// One rank's TIT trace file, listed four times by an index: each of the four ranks reads its own lines
// of it and skips the others', as smpirun's replay does (docs/reference/tit.md).
#include "fuzz_support.hpp"

#include "gridcast/models/tit.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "rank.txt");
  fuzz::write_file(fuzz::scratch() / "trace.txt", "rank.txt\nrank.txt\nrank.txt\nrank.txt\n");
  return fuzz::expect_input_errors([&] {
    models::TitTrace trace(fuzz::scratch() / "trace.txt", fuzz::scratch() / "split");
    models::CallRecord call;
    for (int r = 0; r < trace.rank_count(); ++r)
      for (auto stream = trace.open(r); stream->next(call);) {
      }
  });
}
