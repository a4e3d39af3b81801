// The strict JSON object reader shared by run.json, model.json and the platform spec: key paths in errors,
// unknown keys with the allowed list, typed getters and their range messages.
#include "foundation_support.hpp"

#include "gridcast/foundation/json_reader.hpp"

using gridcast::JsonObject;
using gridcast::read_json_file;
using gridcast::test::expect_input_error;
using gridcast::test::TempDir;
using gridcast::test::write_file;
using json = nlohmann::json;

TEST_CASE("json reader: errors name the file and the key path", "[models][json_reader]")
{
  const json j = json::parse(R"({"a": {"b": [{"c": 1}, {"c": "x"}]}, "n": 1.5, "s": ["p", 2], "q": 3})");
  JsonObject root(j, "f.json");
  const JsonObject first = root.child("a").element("b", 0);
  CHECK(first.path() == "a.b[0]");
  CHECK(first.int32("c", 0) == 1);

  auto e = expect_input_error([&] { root.child("a").element("b", 1).int32("c", 0); });
  CHECK(e.context().file == "f.json");
  CHECK(e.context().key == "a.b[1].c");
  CHECK(e.reason() == "expected an integer, got \"x\"");

  e = expect_input_error([&] { root.only({"a", "n", "s"}); });
  CHECK(e.context().key == "q");
  CHECK(e.reason() == "unknown key (allowed here: a, n, s)");

  e = expect_input_error([&] { root.strings("s"); });
  CHECK(e.context().key == "s[1]");
  CHECK(e.reason() == "expected a string, got number");

  e = expect_input_error([&] { root.need("missing"); });
  CHECK(e.context().key == "missing");
  CHECK(e.reason() == "missing required key");

  e = expect_input_error([&] { JsonObject(j["s"], "f.json", "s"); });
  CHECK(e.context().key == "s");
  CHECK(e.reason() == "expected an object, got array");
}

TEST_CASE("json reader: numbers and integers say the range they expect", "[models][json_reader]")
{
  const json j = json::parse(R"({"neg": -1, "zero": 0, "big": 5, "half": 0.5, "huge": 18446744073709551615})");
  JsonObject o(j, "f.json");
  CHECK(o.number("half", JsonObject::Bound::Positive) == 0.5);
  CHECK(o.integer("neg") == -1);
  CHECK(o.uint64("huge") == 18446744073709551615ULL);
  CHECK(expect_input_error([&] { o.number("zero", JsonObject::Bound::Positive); }).reason() ==
        "expected a number > 0, got 0");
  CHECK(expect_input_error([&] { o.number("neg", JsonObject::Bound::NonNegative); }).reason() ==
        "expected a number >= 0, got -1");
  CHECK(expect_input_error([&] { o.int32("zero", 1); }).reason() == "expected an integer >= 1, got 0");
  CHECK(expect_input_error([&] { o.int32("big", 0, 4); }).reason() == "expected an integer in [0, 4], got 5");
  CHECK(expect_input_error([&] { o.int32("huge"); }).reason() ==
        "expected an integer of 32 bits, got 18446744073709551615");
  CHECK(expect_input_error([&] { o.uint64("neg"); }).reason() == "expected an integer >= 0, got -1");
  CHECK(expect_input_error([&] { o.integer("half"); }).reason() == "expected an integer, got 0.5");
}

TEST_CASE("json reader: files that cannot be read or parsed", "[models][json_reader]")
{
  TempDir tmp;
  auto e = expect_input_error([&] { read_json_file(tmp / "absent.json", "the model"); });
  CHECK(e.context().file == (tmp / "absent.json").string());
  CHECK(e.reason().rfind("cannot open the model: ", 0) == 0);
  write_file(tmp / "bad.json", "{\"a\": 1,}");
  e = expect_input_error([&] { read_json_file(tmp / "bad.json", "the model"); });
  CHECK(e.reason().rfind("invalid JSON: ", 0) == 0);
  CHECK(e.reason().find("json.exception") == std::string::npos);
}

TEST_CASE("json reader: a number too large for a double is an input error naming the file", "[models][json_reader]")
{
  TempDir dir;
  write_file(dir / "big.json", "{\"a\": 1e400}");
  auto e = expect_input_error([&] { read_json_file(dir / "big.json", "a test file"); });
  CHECK_THAT(e.what(), Catch::Contains("big.json") && Catch::Contains("number overflow parsing '1e400'"));
}
