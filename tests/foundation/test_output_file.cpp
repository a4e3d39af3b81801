// Results are written to a temporary file and renamed: never half-written, never a silent failed write.
#include "foundation_support.hpp"

#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/foundation/output_file.hpp"

#include <filesystem>

using gridcast::OutputFile;
using gridcast::write_file_atomically;
using gridcast::test::expect_input_error;
using gridcast::test::read_file;
using gridcast::test::TempDir;
using gridcast::test::write_file;
namespace fs = std::filesystem;

namespace {

std::size_t entries(const fs::path& dir)
{
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("write_file_atomically replaces the target and leaves no temporary file")
{
  TempDir dir;
  write_file(dir / "result.json", "old\n");
  write_file_atomically(dir / "result.json", "new content\n", "the result");
  CHECK(read_file(dir / "result.json") == "new content\n");
  CHECK(entries(dir.path()) == 1);
}

TEST_CASE("an OutputFile that is not committed leaves the previous target and no temporary file")
{
  TempDir dir;
  write_file(dir / "model.json", "the good model\n");
  {
    OutputFile out(dir / "model.json", "the model");
    out.write("{\"half\": ");
    // destroyed without commit(), as when the writer throws halfway
  }
  CHECK(read_file(dir / "model.json") == "the good model\n");
  CHECK(entries(dir.path()) == 1);
  {
    OutputFile out(dir / "fresh.json", "the model");
    out.write("{");
  }
  CHECK_FALSE(fs::exists(dir / "fresh.json"));
  CHECK(entries(dir.path()) == 1);
}

TEST_CASE("a write that cannot reach the device fails, naming the target")
{
  if (not fs::exists("/dev/full"))
    return;  // Linux's always-full device: nothing to test without it
  const auto e = expect_input_error([] { write_file_atomically("/dev/full", std::string(1 << 16, 'x'), "the model"); });
  CHECK(std::string(e.what()).find("/dev/full") != std::string::npos);
  CHECK(std::string(e.what()).find("cannot write the model") != std::string::npos);
}

TEST_CASE("a directory as an output or a JSON input is an input error naming it")
{
  TempDir dir;
  fs::create_directories(dir / "sub");
  const auto w = expect_input_error([&] { write_file_atomically(dir / "sub", "x", "the prediction"); });
  CHECK(std::string(w.what()).find("is a directory") != std::string::npos);
  const auto r = expect_input_error([&] { gridcast::read_json_file(dir / "sub", "the model"); });
  CHECK(std::string(r.what()).find((dir / "sub").string()) != std::string::npos);
  CHECK(std::string(r.what()).find("is a directory") != std::string::npos);
}

TEST_CASE("an output in a directory that does not exist is an input error naming the target")
{
  TempDir dir;
  const auto e = expect_input_error([&] { write_file_atomically(dir / "no" / "such" / "x.json", "x", "the result"); });
  CHECK(std::string(e.what()).find("x.json") != std::string::npos);
}
