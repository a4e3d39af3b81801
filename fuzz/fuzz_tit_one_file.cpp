// A one-file TIT trace (every rank's lines in one file), split into per-rank spill files before reading.
#include "fuzz_support.hpp"

#include "gridcast/models/tit.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "trace.txt");
  return fuzz::expect_input_errors([&] {
    models::TitTrace trace(file, fuzz::scratch() / "split");
    models::CallRecord call;
    for (int r = 0; r < trace.rank_count(); ++r)
      for (auto stream = trace.open(r); stream->next(call);) {
      }
  });
}
