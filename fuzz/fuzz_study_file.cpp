// A study file read and expanded into its points as `gridcast study run` does before anything runs (the
// settings' checks, spec changes by key path, path templates, the platform's capacity, the ids). One input
// holds up to three parts separated by "%%" lines: study.json, then spec.json and model.json beside it (a
// profile directory `trace/` gets the third part as its run.json, for replay studies).
#include "fuzz_support.hpp"

#include "gridcast/study/results.hpp"
#include "gridcast/study/study.hpp"

using namespace gridcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto parts = fuzz::split_parts(data, size);
  fuzz::clear_scratch();
  const auto& dir = fuzz::scratch();
  const auto file = fuzz::write_file(dir / "study.json", parts[0]);
  fuzz::write_file(dir / "spec.json", parts.size() > 1 ? parts[1] : std::string_view{});
  fuzz::write_file(dir / "model.json", parts.size() > 2 ? parts[2] : std::string_view{"{}"});
  std::filesystem::create_directories(dir / "trace");
  fuzz::write_file(dir / "trace" / "run.json", parts.size() > 2 ? parts[2] : std::string_view{"{}"});
  return fuzz::expect_input_errors([&] {
    const study::StudyFile s = study::read_study(file);
    const auto points        = study::expand(s);
    (void)study::make_manifest(s, points, dir / "out");
  });
}
