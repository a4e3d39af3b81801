// run.json and profile directories.
#include "models_support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"

using namespace gridcast;
using namespace gridcast::models;
using namespace gridcast::test;

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
    CHECK(e.reason() == "unknown key (allowed here: name, speed_flops, rate_curve, library_rates)");
    CHECK(std::string(e.what()) ==
          file.string() + ": key 'host.speed': unknown key (allowed here: name, speed_flops, rate_curve, library_rates)");
  }
  SECTION("one wrong key at a time")
  {
    // What is changed in kRunJson, and the key path (and, where given, the reason) of the error.
    struct Case {
      const char* name;
      const char* what;
      const char* replace;
      const char* key;
      const char* reason;  // "" = not checked
    };
    const Case cases[] = {
      {"unknown top-level key", "\"date\"", "\"when\"", "when", ""},
      {"unknown unit key", "\"size\": \"B\"", "\"size\": \"B\", \"energy\": \"J\"", "units.energy", ""},
      {"missing np", "\"np\": 4,", "", "np", "missing required key"},
      {"missing host.speed_flops", "\"speed_flops\": 1000000000.0", "\"name\": \"x\"", "host.speed_flops", ""},
      {"missing encoding", "\"encoding\": \"jsonl\",", "", "encoding", ""},
      {"np < 1", "\"np\": 4", "\"np\": 0", "np", ""},
      {"np not an integer", "\"np\": 4", "\"np\": \"4\"", "np", "expected an integer, got \"4\""},
      {"speed <= 0", "1000000000.0", "0", "host.speed_flops", ""},
      {"bad encoding", "\"jsonl\"", "\"xml\"", "encoding", ""},
      {"wrong format name", "\"gridcast-profile\"", "\"other\"", "format", ""},
      {"unsupported format_version", "\"format_version\": 1", "\"format_version\": 2", "format_version", ""},
      {"unsupported unit", "\"time\": \"s\"", "\"time\": \"ms\"", "units.time", ""},
      {"complete not a boolean", "\"complete\": true", "\"complete\": 1", "complete", ""},
    };
    for (const Case& c : cases) {
      INFO(c.name);
      auto e = error_for(edited(c.what, c.replace));
      CHECK(e.context().key == c.key);
      if (*c.reason != '\0')
        CHECK(e.reason() == c.reason);
    }
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

TEST_CASE("run.json: the ranks' footprints and the host's rate curve round-trip and are checked",
          "[models][profile]")
{
  TempDir tmp;
  write_file(tmp / "run.json", kRunJson);
  RunInfo info = read_run_info(tmp / "run.json");
  CHECK(info.footprint_bytes.empty());
  CHECK(info.host.rate_curve.empty());
  info.footprint_bytes = {1048576, 2097152, 0, 4194304};
  info.host.rate_curve = {{16384, 8e9}, {1048576, 7e9}, {67108864, 3e9}};
  write_run_info(tmp / "out.json", info);
  const std::string text = read_file(tmp / "out.json");
  CHECK_THAT(text, Catch::Contains("\"rate_curve\": ["));
  CHECK_THAT(text, Catch::Contains("\"footprint_bytes\": ["));
  RunInfo back = read_run_info(tmp / "out.json");
  CHECK(back.footprint_bytes == info.footprint_bytes);
  REQUIRE(back.host.rate_curve.size() == 3);
  CHECK(back.host.rate_curve[2].working_set_bytes == 67108864);
  CHECK(back.host.rate_curve[2].speed_flops == 3e9);
  write_run_info(tmp / "again.json", back);
  CHECK(read_file(tmp / "again.json") == text);

  auto key_of = [&](const std::string& what, const std::string& replace) {
    write_file(tmp / "bad.json", [&] {
      std::string s = text;
      auto p        = s.find(what);
      REQUIRE(p != std::string::npos);
      return s.replace(p, what.size(), replace);
    }());
    return expect_input_error([&] { read_run_info(tmp / "bad.json"); });
  };
  // One value per rank: np is 4.
  auto e = key_of("\"footprint_bytes\": [", "\"footprint_bytes\": [1, ");
  CHECK(e.context().key == "footprint_bytes");
  CHECK(e.reason() == "5 values for 4 ranks (one per rank)");
  CHECK(key_of("\"footprint_bytes\": [", "\"footprint_bytes\": [-1, ").context().key == "footprint_bytes");
  // The sizes must increase; rates and sizes must be > 0; no other keys.
  CHECK(key_of("\"working_set_bytes\": 1048576.0", "\"working_set_bytes\": 16384.0").context().key ==
        "host.rate_curve[1].working_set_bytes");
  CHECK(key_of("\"speed_flops\": 7000000000.0", "\"speed_flops\": 0").context().key ==
        "host.rate_curve[1].speed_flops");
  CHECK(key_of("\"speed_flops\": 7000000000.0", "\"speed_flops\": 7e9, \"cache\": 1").context().key ==
        "host.rate_curve[1].cache");
}

TEST_CASE("rate_at interpolates a rate curve in log2 of the size and holds its ends", "[models][profile]")
{
  const RateCurve curve = {{1024, 8e9}, {4096, 6e9}, {16384, 2e9}};
  CHECK(rate_at({}, 5000, 1.5e9) == 1.5e9);     // no curve: the fallback
  CHECK(rate_at(curve, 10, 1) == 8e9);          // below the first point
  CHECK(rate_at(curve, 1e9, 1) == 2e9);         // beyond the last
  CHECK(rate_at(curve, 4096, 1) == 6e9);        // on a point
  CHECK(rate_at(curve, 2048, 1) == Approx(7e9));  // half way in log2 between 1024 and 4096
  CHECK(rate_at(curve, 8192, 1) == Approx(4e9));
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
