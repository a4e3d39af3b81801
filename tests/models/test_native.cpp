// The native encodings: JSON lines and binary, their round trips and their errors.
#include "models_support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

using namespace gridcast;
using namespace gridcast::models;
using namespace gridcast::test;

namespace {

/// A record of `op` with every field away from its default; `i` varies the values.
CallRecord full_record(Op op, std::uint32_t function, int i)
{
  CallRecord r;
  r.op         = op;
  r.function   = function;
  r.seconds    = i % 5 == 0 ? 0.0 : 0.1 * (i + 1) + 1e-9;
  r.flops      = i % 6 == 0 ? 5e-324 : 1e9 / 3.0 * (i + 1);
  r.peer       = i % 3 == 0 ? kAnySource : i + 1;
  r.tag        = i % 4 == 0 ? kAnyTag : 1000 + i;
  r.bytes      = (std::uint64_t{1} << 40) + static_cast<std::uint64_t>(i);
  r.src        = i % 5 == 0 ? kAnySource : 2 * i;
  r.recv_tag   = i % 2 == 0 ? kAnyTag : 7 + i;
  r.recv_bytes = static_cast<std::uint64_t>(i) * 1000 + 1;
  r.comm       = i % 7 + 1;
  r.root       = i % 3 + 1;
  r.request    = (std::int64_t{1} << 35) + i;
  r.requests   = {0, 1, i, std::numeric_limits<std::int64_t>::max()};
  r.counts     = {0, 1, 127, 128, 16384, std::numeric_limits<std::uint64_t>::max()};
  r.recv_counts.assign(static_cast<std::size_t>(i % 4 + 1), static_cast<std::uint64_t>(i));
  r.color    = -3 + i;
  r.key      = 2 * i + 1;
  r.new_comm = i + 2;
  r.stream   = i;
  r.device   = 3;
  r.memory   = Memory::Device;
  r.device_seconds = 0.25 + i;  // the GPU issue's field
  return r;
}

struct Sample {
  FunctionTable functions;
  std::vector<CallRecord> records;
};

/// Two records of every op: one with every field set, one with only defaults.
Sample sample_trace()
{
  Sample s;
  const std::vector<std::string> odd_names = {"quote\"back\\slash", "tab\tnew\nline",
                                              "\xc3\xbcnic\xc3\xb8"
                                              "de",
                                              std::string("ctl\x01\x1f", 5)};
  for (int i = 0; i < kOpCount; ++i) {
    auto op          = static_cast<Op>(i);
    std::string name = i < static_cast<int>(odd_names.size()) ? odd_names[i] : "MPI_" + std::string(op_name(op));
    s.records.push_back(full_record(op, s.functions.intern(name), i));
    CallRecord plain;
    plain.op       = op;
    plain.function = s.functions.intern(op_name(op));
    s.records.push_back(plain);
  }
  return s;
}

void write_records(const std::filesystem::path& file, TraceEncoding e, const std::vector<CallRecord>& records,
                   const FunctionTable& functions)
{
  auto w = make_trace_writer(file, e);
  for (const auto& r : records)
    w->write(r, functions);
  w->close();
}

/// Copies a trace file into another encoding by streaming it.
void convert(const std::filesystem::path& in, TraceEncoding from, const std::filesystem::path& out, TraceEncoding to)
{
  auto s = open_native_trace(in, from, 0);
  auto w = make_trace_writer(out, to);
  CallRecord r;
  while (s->next(r))
    w->write(r, s->functions());
  w->close();
}

void check_same_calls(CallStream& stream, const Sample& sample)
{
  auto got = read_all(stream);
  REQUIRE(got.size() == sample.records.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("record " << i << " op " << op_name(sample.records[i].op));
    CHECK(got[i] == sample.records[i]);  // sample ids are first-seen, like the readers'
    CHECK(stream.functions().name(got[i].function) == sample.functions.name(sample.records[i].function));
    CHECK(got[i].line == i + 1);
  }
}

}  // namespace

TEST_CASE("every op with every field round-trips through JSON lines and binary", "[models][native]")
{
  TempDir tmp;
  const Sample sample = sample_trace();
  write_records(tmp / "a.jsonl", TraceEncoding::JsonLines, sample.records, sample.functions);
  write_records(tmp / "a.gct", TraceEncoding::Binary, sample.records, sample.functions);

  auto j = open_native_trace(tmp / "a.jsonl", TraceEncoding::JsonLines, 0);
  check_same_calls(*j, sample);
  auto b = open_native_trace(tmp / "a.gct", TraceEncoding::Binary, 0);
  check_same_calls(*b, sample);
  CHECK(b->source() == (tmp / "a.gct").string());

  // Re-encoding is byte-identical, whichever way round.
  convert(tmp / "a.gct", TraceEncoding::Binary, tmp / "b.jsonl", TraceEncoding::JsonLines);
  convert(tmp / "a.jsonl", TraceEncoding::JsonLines, tmp / "b.gct", TraceEncoding::Binary);
  convert(tmp / "b.jsonl", TraceEncoding::JsonLines, tmp / "c.gct", TraceEncoding::Binary);
  const std::string a_jsonl = read_file(tmp / "a.jsonl");
  const std::string a_gct   = read_file(tmp / "a.gct");
  CHECK(read_file(tmp / "b.jsonl") == a_jsonl);
  CHECK(read_file(tmp / "b.gct") == a_gct);
  CHECK(read_file(tmp / "c.gct") == a_gct);
  CHECK(a_gct.size() < a_jsonl.size() / 2);
  CHECK(a_gct.compare(0, 8, "GCTRACE1") == 0);
}

TEST_CASE("a trace stream says how far it has read its file and ends at its size", "[models][native]")
{
  // What replay's progress report divides: the bytes consumed grow with every record and reach the
  // file's size at its end, in both encodings.
  TempDir tmp;
  const Sample sample = sample_trace();
  write_records(tmp / "p.jsonl", TraceEncoding::JsonLines, sample.records, sample.functions);
  write_records(tmp / "p.gct", TraceEncoding::Binary, sample.records, sample.functions);
  for (auto [file, encoding] : {std::pair{tmp / "p.jsonl", TraceEncoding::JsonLines},
                                std::pair{tmp / "p.gct", TraceEncoding::Binary}}) {
    INFO(file.string());
    auto s = open_native_trace(file, encoding, 0);
    CHECK(s->bytes_total() == std::filesystem::file_size(file));
    CHECK(s->bytes_read() < s->bytes_total());
    CallRecord r;
    std::uint64_t before = s->bytes_read();
    while (s->next(r)) {
      CHECK(s->bytes_read() > before);
      before = s->bytes_read();
    }
    CHECK(s->bytes_read() == s->bytes_total());
  }
}

TEST_CASE("JSON lines: fixed field order, defaults omitted, any written as \"any\"", "[models][native]")
{
  TempDir tmp;
  FunctionTable fns;
  std::vector<CallRecord> recs(4);
  recs[0].op       = Op::Send;
  recs[0].function = fns.intern("MPI_Send");
  recs[0].peer     = 1;
  recs[0].tag      = 3;
  recs[0].bytes    = 80;
  recs[1].op       = Op::Compute;
  recs[1].function = fns.intern("compute");
  recs[1].flops    = 0.1;
  recs[1].seconds  = 1e-05;
  recs[2].op       = Op::Irecv;
  recs[2].function = fns.intern("MPI_Irecv");
  recs[2].peer     = kAnySource;
  recs[2].tag      = kAnyTag;
  recs[2].request  = 0;
  recs[3].op       = Op::Waitall;
  recs[3].function = fns.intern("MPI_Waitall");
  recs[3].requests = {0, 1};
  write_records(tmp / "t.jsonl", TraceEncoding::JsonLines, recs, fns);
  CHECK(read_file(tmp / "t.jsonl") ==
        "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":3,\"bytes\":80}\n"
        "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":1e-05,\"flops\":0.1}\n"
        "{\"op\":\"irecv\",\"fn\":\"MPI_Irecv\",\"peer\":\"any\",\"tag\":\"any\",\"request\":0}\n"
        "{\"op\":\"waitall\",\"fn\":\"MPI_Waitall\",\"requests\":[0,1]}\n");
}

TEST_CASE("binary: the byte layout of docs/reference/traces.md", "[models][native]")
{
  TempDir tmp;
  FunctionTable fns;
  CallRecord r;
  r.op       = Op::Send;
  r.function = fns.intern("MPI_Send");
  r.peer     = 1;
  r.tag      = 3;
  r.bytes    = 80;
  CallRecord c;
  c.op       = Op::Compute;
  c.function = fns.intern("compute");
  c.flops    = 1.0;
  write_records(tmp / "t.gct", TraceEncoding::Binary, {r, c}, fns);
  const std::string expected = std::string("GCTRACE1\x01", 9) + std::string("\x00\x00\x08MPI_Send", 11) +
                               std::string("\x05\x38\x02\x06\x50", 5) + std::string("\x00\x01\x07" "compute", 10) +
                               std::string("\x03\x05\x01\x00\x00\x00\x00\x00\x00\xf0\x3f", 11);
  CHECK(read_file(tmp / "t.gct") == expected);
}

TEST_CASE("JSON lines reader: comments, blank lines, fn optional, ids first-seen", "[models][native]")
{
  TempDir tmp;
  write_file(tmp / "r.jsonl", "# a comment\n\n  \n{\"op\":\"init\"}\r\n"
                              "{ \"bytes\" : 8, \"peer\" : 2, \"fn\" : \"MPI_Send\", \"op\" : \"send\" }\n"
                              "{\"op\":\"compute\",\"seconds\":2,\"flops\":1000}\n"
                              "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":-1,\"tag\":-1}");
  auto s   = open_native_trace(tmp / "r.jsonl", TraceEncoding::JsonLines, 3);
  auto all = read_all(*s);
  REQUIRE(all.size() == 4);
  CHECK(all[0].op == Op::Init);
  CHECK(all[0].line == 4);
  CHECK(all[0].function == 0);
  CHECK(s->functions().name(0) == "init");
  CHECK(all[1].op == Op::Send);
  CHECK(all[1].peer == 2);
  CHECK(all[1].bytes == 8);
  CHECK(all[1].function == 1);
  CHECK(all[2].seconds == 2.0);
  CHECK(all[2].flops == 1000.0);
  CHECK(all[3].peer == kAnySource);
  CHECK(all[3].tag == kAnyTag);
  CHECK(all[3].function == 1);
  CHECK(all[3].line == 7);
}

TEST_CASE("JSON lines errors carry file, line, rank and key", "[models][native]")
{
  TempDir tmp;
  const auto file = tmp / "rank-00002.jsonl";

  SECTION("an unknown key after a good line")
  {
    write_file(file, "# header\n\n{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1}\n{\"op\":\"send\",\"peerx\":1}\n");
    auto s = open_native_trace(file, TraceEncoding::JsonLines, 2);
    CallRecord r;
    REQUIRE(s->next(r));
    CHECK(r.line == 3);
    auto e = expect_input_error([&] { s->next(r); });
    CHECK(e.context().file == file.string());
    CHECK(e.context().line == 4);
    CHECK(e.context().rank == 2);
    CHECK(e.context().key == "peerx");
    CHECK(e.reason() == "unknown key");
    CHECK(std::string(e.what()) == file.string() + ":4: key 'peerx': rank 2: unknown key");
  }

  struct Bad {
    const char* line;
    const char* key;
    const char* reason_part;
  };
  const Bad cases[] = {
      {R"({"op":"send","bytes":"80"})", "bytes", "expected a non-negative integer, got a string"},
      {R"({"op":"send","bytes":-1})", "bytes", "non-negative"},
      {R"({"op":"sned"})", "op", "unknown op 'sned'"},
      {R"({"op":3})", "op", "expected a string"},
      {R"({"op":"send","peer":1.5})", "peer", "integer or \"any\""},
      {R"({"op":"send","peer":"all"})", "peer", "\"all\""},
      {R"({"op":"send","requests":[1,"x"]})", "requests", "expected an integer"},
      {R"({"op":"send","counts":5})", "counts", "expected an array"},
      {R"({"op":"send","counts":[[1]]})", "counts", "got an array"},
      {R"({"op":"send","memory":"gpu"})", "memory", "\"host\" or \"device\""},
      {R"({"op":"send","op":"recv"})", "op", "duplicate key"},
      {R"({"fn":"MPI_Send"})", "op", "missing key"},
      {R"({"op":"send","comm":4294967296})", "comm", "out of 32-bit range"},
      {R"({"op":"send","seconds":null})", "seconds", "got null"},
      {R"({"op":"send","tag":{"a":1}})", "tag", "got an object"},
      {R"({"op":"compute","flops":-1})", "flops", ">= 0"},
      {R"({"op":"send","fn":""})", "fn", "empty function name"},
      {R"({"op":"send",})", "", "invalid JSON"},
      {R"({"op":"send"} x)", "", "invalid JSON"},
      {R"([1])", "", "must be a JSON object"},
      {R"(17)", "", "must be a JSON object"},
  };
  for (const auto& c : cases) {
    INFO(c.line);
    write_file(file, std::string("{\"op\":\"init\"}\n") + c.line + "\n");
    auto s = open_native_trace(file, TraceEncoding::JsonLines, 2);
    CallRecord r;
    REQUIRE(s->next(r));
    auto e = expect_input_error([&] { s->next(r); });
    CHECK(e.context().file == file.string());
    CHECK(e.context().line == 2);
    CHECK(e.context().rank == 2);
    CHECK(e.context().key == c.key);
    CHECK_THAT(e.reason(), Catch::Contains(c.reason_part));
  }
}

TEST_CASE("binary: truncated and corrupt files name the file, record and rank", "[models][native]")
{
  TempDir tmp;
  FunctionTable fns;
  std::vector<CallRecord> recs(3);
  for (int i = 0; i < 3; ++i) {
    recs[i]          = full_record(Op::Isend, fns.intern("MPI_Isend"), i);
    recs[i].requests = {};
  }
  const auto file = tmp / "t.gct";
  write_records(file, TraceEncoding::Binary, recs, fns);
  const std::string bytes = read_file(file);

  SECTION("truncated last record")
  {
    write_file(file, bytes.substr(0, bytes.size() - 1));
    auto s = open_native_trace(file, TraceEncoding::Binary, 5);
    CallRecord r;
    REQUIRE(s->next(r));
    CHECK(r == recs[0]);
    CHECK(r.line == 1);
    REQUIRE(s->next(r));
    CHECK(r.line == 2);
    auto e = expect_input_error([&] { s->next(r); });
    CHECK(e.context().file == file.string());
    CHECK(e.context().line == 3);
    CHECK(e.context().rank == 5);
    CHECK_THAT(e.reason(), Catch::Contains("truncated record"));
  }
  SECTION("every truncation point is detected")
  {
    // Cutting at a record boundary leaves a shorter valid trace; cutting anywhere else is an error.
    std::vector<std::size_t> boundaries;
    for (std::size_t k = 0; k < 3; ++k) {
      std::vector<CallRecord> prefix(recs.begin(), recs.begin() + static_cast<std::ptrdiff_t>(k));
      write_records(tmp / "prefix.gct", TraceEncoding::Binary, prefix, fns);
      boundaries.push_back(read_file(tmp / "prefix.gct").size());
    }
    REQUIRE(boundaries[0] == 9);
    for (std::size_t n = 9; n < bytes.size(); ++n) {
      write_file(file, bytes.substr(0, n));
      INFO("size " << n);
      auto s = open_native_trace(file, TraceEncoding::Binary, 1);
      CallRecord r;
      std::size_t good = 0;
      auto boundary    = std::find(boundaries.begin(), boundaries.end(), n);
      if (boundary != boundaries.end()) {
        while (s->next(r))
          ++good;
        CHECK(good == static_cast<std::size_t>(boundary - boundaries.begin()));
        continue;
      }
      auto e = expect_input_error([&] {
        while (s->next(r))
          ++good;
      });
      CHECK(good < 3);
      CHECK(e.context().line == good + 1);
      CHECK(e.context().rank == 1);
    }
  }
  SECTION("truncated header")
  {
    write_file(file, bytes.substr(0, 5));
    auto e = expect_input_error([&] { open_native_trace(file, TraceEncoding::Binary, 4); });
    CHECK(e.context().file == file.string());
    CHECK(e.context().rank == 4);
  }
  SECTION("bad magic")
  {
    write_file(file, "{\"op\":\"init\"}\n");
    auto e = expect_input_error([&] { open_native_trace(file, TraceEncoding::Binary, 0); });
    CHECK_THAT(e.reason(), Catch::Contains("bad magic"));
  }
  SECTION("unknown record type")
  {
    write_file(file, bytes + "\xee");
    auto s = open_native_trace(file, TraceEncoding::Binary, 0);
    CallRecord r;
    for (int i = 0; i < 3; ++i)
      REQUIRE(s->next(r));
    auto e = expect_input_error([&] { s->next(r); });
    CHECK(e.context().line == 4);
    CHECK_THAT(e.reason(), Catch::Contains("unknown record type 238"));
  }
  SECTION("huge vector length")
  {
    std::string bad(bytes.substr(0, 9));        // header
    bad += std::string("\x00\x00\x04init", 7);  // function 0 = "init"
    bad += static_cast<char>(1 + static_cast<int>(Op::Waitall));
    bad += static_cast<char>(0x80);  // mask: bit 12 (requests) -> varint 0x1000 = 0x80 0x20
    bad += static_cast<char>(0x20);
    bad += std::string("\xff\xff\xff\xff\x0f", 5);  // 2^32-1 elements
    write_file(file, bad);
    auto s = open_native_trace(file, TraceEncoding::Binary, 0);
    CallRecord r;
    auto e = expect_input_error([&] { s->next(r); });
    CHECK(e.context().line == 1);
    CHECK_THAT(e.reason(), Catch::Contains("longer than the rest of the file"));
  }
}

TEST_CASE("JSON lines cannot hold a function name that is not UTF-8, binary can", "[models][native]")
{
  TempDir tmp;
  FunctionTable fns;
  std::vector<CallRecord> recs(2);
  recs[0].function = fns.intern("ok");
  recs[1].function = fns.intern("bad\xff\xfe");
  auto w = make_trace_writer(tmp / "t.jsonl", TraceEncoding::JsonLines);
  w->write(recs[0], fns);
  auto e = expect_input_error([&] { w->write(recs[1], fns); });
  CHECK(e.context().file == (tmp / "t.jsonl").string());
  CHECK(e.context().line == 2);
  w->close();
  CHECK(read_file(tmp / "t.jsonl") == "{\"op\":\"compute\",\"fn\":\"ok\"}\n");

  write_records(tmp / "t.gct", TraceEncoding::Binary, recs, fns);
  auto s   = open_native_trace(tmp / "t.gct", TraceEncoding::Binary, 0);
  auto got = read_all(*s);
  REQUIRE(got.size() == 2);
  CHECK(s->functions().name(got[1].function) == "bad\xff\xfe");
}

TEST_CASE("writers renumber functions densely in first-use order", "[models][native]")
{
  TempDir tmp;
  FunctionTable fns;
  fns.intern("unused");
  fns.intern("b");
  fns.intern("a");
  std::vector<CallRecord> recs(3);
  recs[0].function = 2;  // "a"
  recs[1].function = 1;  // "b"
  recs[2].function = 2;
  for (auto e : {TraceEncoding::JsonLines, TraceEncoding::Binary}) {
    const auto file = tmp / std::string("f.").append(encoding_name(e));
    write_records(file, e, recs, fns);
    auto s   = open_native_trace(file, e, 0);
    auto got = read_all(*s);
    REQUIRE(got.size() == 3);
    CHECK(got[0].function == 0);
    CHECK(got[1].function == 1);
    CHECK(got[2].function == 0);
    CHECK(s->functions().names() == std::vector<std::string>{"a", "b"});
  }
}

TEST_CASE("write_profile converts a profile rank by rank", "[models][native]")
{
  TempDir tmp;
  test::write_jsonl_profile(tmp / "in", {"{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n"
                                         "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"bytes\":8}\n",
                                         "{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n"
                                         "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"bytes\":8}\n"});
  ProfileDir in(tmp / "in");
  RunInfo info = in.info();
  info.origin  = "convert";
  write_profile(in, info, tmp / "out", TraceEncoding::Binary);
  CHECK(std::filesystem::exists(tmp / "out" / "rank-00000.gct"));
  CHECK(std::filesystem::exists(tmp / "out" / "rank-00001.gct"));

  ProfileDir out(tmp / "out");
  CHECK(out.info().encoding == TraceEncoding::Binary);
  CHECK(out.info().np == 2);
  CHECK(out.info().origin == "convert");
  CHECK(out.info().command == "test");
  for (int r = 0; r < 2; ++r) {
    auto a = in.open(r);
    auto b = out.open(r);
    CHECK(read_all(*a) == read_all(*b));
    CHECK(a->functions().names() == b->functions().names());
  }

  // And back: byte-identical to the original JSON lines.
  write_profile(out, out.info(), tmp / "back", TraceEncoding::JsonLines);
  CHECK(read_file(tmp / "back" / "rank-00001.jsonl") == read_file(tmp / "in" / "rank-00001.jsonl"));

  SECTION("an unwritable output directory is an InputError")
  {
    write_file(tmp / "plain-file", "x");
    auto e = expect_input_error([&] { write_profile(in, info, tmp / "plain-file" / "sub", TraceEncoding::Binary); });
    CHECK(e.context().file == (tmp / "plain-file" / "sub").string());
  }
  SECTION("writing over the input profile is refused")
  {
    auto e = expect_input_error([&] { write_profile(in, info, tmp / "in", TraceEncoding::JsonLines); });
    CHECK(e.context().file == (tmp / "in").string());
  }
}
