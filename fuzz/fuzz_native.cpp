// One rank's trace in a native encoding (docs/reference/traces.md), read to its end. Built twice:
// fuzz_native_jsonl and fuzz_native_binary (GRIDCAST_FUZZ_BINARY).
#include "fuzz_support.hpp"

#include "gridcast/models/native.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
#ifdef GRIDCAST_FUZZ_BINARY
  const auto encoding = models::TraceEncoding::Binary;
#else
  const auto encoding = models::TraceEncoding::JsonLines;
#endif
  const auto file = fuzz::input_file(data, size, models::rank_file_name(0, encoding));
  return fuzz::expect_input_errors([&] {
    models::CallRecord call;
    for (auto stream = models::open_native_trace(file, encoding, 0); stream->next(call);) {
    }
  });
}
