// One rank's trace in the native jsonl encoding (docs/reference/profile-directory.md), read to its end.
#include "fuzz_support.hpp"

#include "gridcast/models/native.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto file = fuzz::input_file(data, size, "rank-00000.jsonl");
  return fuzz::expect_input_errors([&] {
    models::CallRecord call;
    for (auto stream = models::open_native_trace(file, models::TraceEncoding::JsonLines, 0); stream->next(call);) {
    }
  });
}
