// The digests of input files (prediction.json's inputs, a study's point ids), and the CSV fields of the
// tables gridcast writes.
#include "gridcast/foundation/csv.hpp"
#include "gridcast/foundation/digest.hpp"

#include "foundation_support.hpp"

#include <string>

using gridcast::digest_file;
using gridcast::digest_files;
using gridcast::digest_text;
using gridcast::test::TempDir;

namespace {

std::filesystem::path write(const TempDir& dir, const std::string& name, const std::string& bytes)
{
  gridcast::test::write_file(dir / name, bytes);
  return dir / name;
}

}  // namespace

TEST_CASE("input digests are SHA-1 (FIPS 180-4 test vectors)", "[speed][report]")
{
  TempDir s;
  CHECK(digest_file(write(s, "empty", "")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(digest_file(write(s, "abc", "abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  // 56 bytes: the padding needs a second block.
  CHECK(digest_file(write(s, "two-blocks", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  // One million 'a': many read chunks, none a multiple of the block size.
  CHECK(digest_file(write(s, "million", std::string(1000000, 'a'))) ==
        "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  // Several files hash as their concatenation.
  CHECK(digest_files({s / "abc", s / "empty"}) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(digest_files({write(s, "ab", "ab"), write(s, "c", "c")}) == "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST_CASE("a text digests as a file of the same bytes", "[foundation][digest]")
{
  TempDir s;
  CHECK(digest_text("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(digest_text(std::string(1000000, 'a')) == digest_file(write(s, "million", std::string(1000000, 'a'))));
}

TEST_CASE("csv fields are quoted only where they must be and read back as written", "[foundation][csv]")
{
  CHECK(gridcast::csv_field("node-1") == "node-1");
  CHECK(gridcast::csv_field("a,b") == "\"a,b\"");
  CHECK(gridcast::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  const std::vector<std::string> fields = {"1", "a,b", "say \"hi\"", "", "x"};
  std::string line;
  for (const auto& f : fields)
    line += (line.empty() ? "" : ",") + gridcast::csv_field(f);
  CHECK(gridcast::csv_fields(line, {}) == fields);
  const auto e = gridcast::test::expect_input_error([] { gridcast::csv_fields("1,\"open", {"t.csv", 3, {}, -1}); });
  CHECK_THAT(std::string(e.what()), Catch::Contains("t.csv") && Catch::Contains("not closed"));
}
