// run.json and profile directories.
#include "models_support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"

using namespace gridcast;
using namespace gridcast::models;
using gridcast::test::expect_input_error;
using gridcast::test::read_file;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {
const char* const kRunJson = R"({
  "format": "gridcast-profile",
  "format_version": 1,
  "np": 4,
  "nw": 1000.0,
  "command": "mpirun -np 4 ./app 1000",
  "host": {
    "name": "node-0",
    "speed_flops": 1000000000.0
  },
  "date": "2026-01-01T00:00:00Z",
  "encoding": "jsonl",
  "complete": true,
  "origin": "tit-import",
  "units": {
    "time": "s",
    "work": "flop",
    "size": "B"
  }
}
)";

/// run.json text with `replace` substituted for `what` in kRunJson.
std::string edited(const std::string& what, const std::string& replace)
{
  std::string s = kRunJson;
  auto p        = s.find(what);
  REQUIRE(p != std::string::npos);
  return s.replace(p, what.size(), replace);
}
}  // namespace

TEST_CASE("rank file names", "[models][profile]")
{
  CHECK(rank_file_name(0, TraceEncoding::JsonLines) == "rank-00000.jsonl");
  CHECK(rank_file_name(42, TraceEncoding::Binary) == "rank-00042.gct");
  CHECK(rank_file_name(123456, TraceEncoding::Binary) == "rank-123456.gct");
  CHECK(encoding_name(TraceEncoding::JsonLines) == "jsonl");
  CHECK(encoding_name(TraceEncoding::Binary) == "binary");
}

TEST_CASE("run.json reads into RunInfo and writes back byte for byte", "[models][profile]")
{
  TempDir tmp;
  write_file(tmp / "run.json", kRunJson);
  RunInfo info = read_run_info(tmp / "run.json");
  CHECK(info.format_version == 1);
  CHECK(info.np == 4);
  CHECK(info.nw == 1000.0);
  CHECK(info.command == "mpirun -np 4 ./app 1000");
  CHECK(info.host.name == "node-0");
  CHECK(info.host.speed_flops == 1e9);
  CHECK(info.date == "2026-01-01T00:00:00Z");
  CHECK(info.encoding == TraceEncoding::JsonLines);
  CHECK(info.complete);
  CHECK(info.origin == "tit-import");

  write_run_info(tmp / "out.json", info);
  CHECK(read_file(tmp / "out.json") == kRunJson);

  info.encoding = TraceEncoding::Binary;
  info.complete = false;
  info.nw       = 0.125;
  write_run_info(tmp / "out2.json", info);
  RunInfo back = read_run_info(tmp / "out2.json");
  CHECK(back.encoding == TraceEncoding::Binary);
  CHECK_FALSE(back.complete);
  CHECK(back.nw == 0.125);
}

TEST_CASE("run.json: only np, host.speed_flops and encoding are required", "[models][profile]")
{
  TempDir tmp;
  write_file(tmp / "run.json", R"({"np": 2, "host": {"speed_flops": 2e9}, "encoding": "binary"})");
  RunInfo info = read_run_info(tmp / "run.json");
  CHECK(info.np == 2);
  CHECK(info.host.speed_flops == 2e9);
  CHECK(info.encoding == TraceEncoding::Binary);
  CHECK(info.complete);
  CHECK(info.nw == 0);
}

TEST_CASE("run.json errors name the file and the key path", "[models][profile]")
{
  TempDir tmp;
  const auto file = tmp / "run.json";
  auto error_for  = [&](const std::string& text) {
    write_file(file, text);
    return expect_input_error([&] { read_run_info(file); });
  };

  SECTION("unknown nested key")
  {
    auto e = error_for(edited("\"speed_flops\"", "\"speed\""));
    CHECK(e.context().file == file.string());
    // The unknown key is reported first (before the missing speed_flops).
    CHECK(e.context().key == "host.speed");
    CHECK(e.reason() == "unknown key (allowed here: name, speed_flops)");
    CHECK(std::string(e.what()) == file.string() + ": key 'host.speed': unknown key (allowed here: name, speed_flops)");
  }
  SECTION("unknown top-level key")
  {
    auto e = error_for(edited("\"date\"", "\"when\""));
    CHECK(e.context().key == "when");
  }
  SECTION("unknown unit key")
  {
    auto e = error_for(edited("\"size\": \"B\"", "\"size\": \"B\", \"energy\": \"J\""));
    CHECK(e.context().key == "units.energy");
  }
  SECTION("missing np")
  {
    auto e = error_for(edited("\"np\": 4,", ""));
    CHECK(e.context().key == "np");
    CHECK(e.reason() == "missing required key");
  }
  SECTION("missing host.speed_flops")
  {
    auto e = error_for(edited("\"speed_flops\": 1000000000.0", "\"name\": \"x\""));
    CHECK(e.context().key == "host.speed_flops");
  }
  SECTION("missing encoding")
  {
    auto e = error_for(edited("\"encoding\": \"jsonl\",", ""));
    CHECK(e.context().key == "encoding");
  }
  SECTION("np < 1")
  {
    auto e = error_for(edited("\"np\": 4", "\"np\": 0"));
    CHECK(e.context().key == "np");
  }
  SECTION("np not an integer")
  {
    auto e = error_for(edited("\"np\": 4", "\"np\": \"4\""));
    CHECK(e.context().key == "np");
    CHECK(e.reason() == "expected an integer, got \"4\"");
  }
  SECTION("speed <= 0")
  {
    auto e = error_for(edited("1000000000.0", "0"));
    CHECK(e.context().key == "host.speed_flops");
  }
  SECTION("bad encoding")
  {
    auto e = error_for(edited("\"jsonl\"", "\"xml\""));
    CHECK(e.context().key == "encoding");
  }
  SECTION("wrong format name")
  {
    auto e = error_for(edited("\"gridcast-profile\"", "\"other\""));
    CHECK(e.context().key == "format");
  }
  SECTION("unsupported format_version")
  {
    auto e = error_for(edited("\"format_version\": 1", "\"format_version\": 2"));
    CHECK(e.context().key == "format_version");
  }
  SECTION("unsupported unit")
  {
    auto e = error_for(edited("\"time\": \"s\"", "\"time\": \"ms\""));
    CHECK(e.context().key == "units.time");
  }
  SECTION("complete not a boolean")
  {
    auto e = error_for(edited("\"complete\": true", "\"complete\": 1"));
    CHECK(e.context().key == "complete");
  }
  SECTION("invalid JSON")
  {
    auto e = error_for("{\"np\": 4,,}");
    CHECK(e.context().file == file.string());
    CHECK(e.reason().rfind("invalid JSON", 0) == 0);
  }
  SECTION("not an object")
  {
    auto e = error_for("[1, 2]");
    CHECK(e.context().key.empty());
  }
}

TEST_CASE("ProfileDir checks every rank file", "[models][profile]")
{
  TempDir tmp;
  const auto dir = tmp / "prof";
  test::write_jsonl_profile(dir, {"{\"op\":\"init\"}\n", "{\"op\":\"init\"}\n", "{\"op\":\"init\"}\n"});
  CHECK(is_profile_dir(dir));
  CHECK_FALSE(is_profile_dir(tmp.path()));

  {
    ProfileDir profile(dir);
    CHECK(profile.rank_count() == 3);
    CHECK(profile.rank_path(2) == dir / "rank-00002.jsonl");
    auto stream = profile.open(1);
    CallRecord r;
    REQUIRE(stream->next(r));
    CHECK(r.op == Op::Init);
    CHECK(stream->functions().name(r.function) == "init");
    CHECK_FALSE(stream->next(r));
  }

  std::filesystem::remove(dir / "rank-00001.jsonl");
  auto e = expect_input_error([&] { ProfileDir profile(dir); });
  CHECK(e.context().file == (dir / "rank-00001.jsonl").string());
  CHECK(e.context().rank == 1);

  auto e2 = expect_input_error([&] { ProfileDir profile(tmp / "nothing"); });
  CHECK(e2.context().file == (tmp / "nothing" / "run.json").string());
}
