// Unit tests of gridcast::profiler that need no MPI run: function lists, the launcher's command line,
// ELF checks and meta files.
#include "gridcast/foundation/errors.hpp"
#include "gridcast/profiler/profiler.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace gridcast;

namespace {
fs::path scratch(const std::string& name)
{
  fs::path d = fs::temp_directory_path() / ("gridcast-profiler-units-" + std::to_string(getpid()));
  fs::create_directories(d);
  return d / name;
}
void write(const fs::path& p, const std::string& text)
{
  std::ofstream(p, std::ios::binary) << text;
}
std::string error_of(const std::function<void()>& f)
{
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("profiler: function lists are read strictly", "[profiler]")
{
  auto f = scratch("list.txt");
  write(f, "# comment\n\ndgemm_\n  app_kernel\t0.5\t0.25\r\n_ZN3foo3barEv\n");
  CHECK(profiler::read_function_list(f) == std::vector<std::string>{"dgemm_", "app_kernel", "_ZN3foo3barEv"});

  write(f, "dgemm_\n9lives\n");
  CHECK_THAT(error_of([&] { profiler::read_function_list(f); }),
             Catch::Contains("list.txt:2") && Catch::Contains("'9lives' is not a symbol name"));
  write(f, "dgemm_ fast\n");
  CHECK_THAT(error_of([&] { profiler::read_function_list(f); }), Catch::Contains("list.txt:1"));
  write(f, "dgemm_ 1 2 3\n");
  CHECK_THAT(error_of([&] { profiler::read_function_list(f); }), Catch::Contains("expected 'name [seconds [share]]'"));
  CHECK_THAT(error_of([&] { profiler::read_function_list(scratch("absent.txt")); }),
             Catch::Contains("cannot read the function list"));
}

TEST_CASE("profiler: discover keeps the functions covering the share", "[profiler]")
{
  std::vector<profiler::FunctionTotal> totals = {
      {"MPI_Recv", 10, 5}, {"compute", 50, 9}, {"dgemm_", 30, 3}, {"tiny", 1, 1}, {"small", 9, 2}};
  // total 100: compute 50 + dgemm_ 30 = 80 < 85, + MPI_Recv 10 = 90 >= 85
  auto kept = profiler::select_functions(totals, 0.85);
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].name == "dgemm_");
  CHECK(kept[1].name == "MPI_Recv");
  CHECK(profiler::select_functions(totals, 1.0).size() == 4);

  auto f = scratch("discovered.txt");
  profiler::write_function_list(f, kept, 100, "mpirun -np 2 ./app");
  CHECK(profiler::read_function_list(f) == std::vector<std::string>{"dgemm_", "MPI_Recv"});
}

TEST_CASE("profiler: the application is found behind mpirun's options", "[profiler]")
{
  using V = std::vector<std::string>;
  CHECK(profiler::find_application(V{"mpirun", "-np", "2", "--oversubscribe", "-x", "A=1", "--mca", "btl", "self",
                                     "/opt/app", "-in", "x"}) == fs::path("/opt/app"));
  CHECK(profiler::find_application(V{"/usr/bin/mpiexec", "--bind-to=none", "-n", "4", "./a.out"}) ==
        fs::path("./a.out"));
  CHECK(profiler::find_application(V{"./solo", "arg"}) == fs::path("./solo"));
  CHECK_FALSE(profiler::find_application(V{"mpirun", "-np", "2"}).has_value());
  CHECK(profiler::find_application(V{"sh"})->is_absolute());  // through PATH
  CHECK(profiler::find_application(V{"srun", "-n", "4", "--mpi=pmix", "-p", "debug", "--exclusive", "./app", "-n"}) ==
        fs::path("./app"));
}

TEST_CASE("profiler: MPI linkage is read from the ELF dynamic section", "[profiler]")
{
  // This test program is dynamically linked, but not to MPI.
  CHECK_FALSE(profiler::links_mpi_dynamically("/proc/self/exe"));
  if (fs::exists("/usr/bin/hpcc"))
    CHECK(profiler::links_mpi_dynamically("/usr/bin/hpcc"));
  auto script = scratch("script.sh");
  write(script, "#!/bin/sh\nexec mpirun \"$@\"\n");
  CHECK_THAT(error_of([&] { profiler::links_mpi_dynamically(script); }), Catch::Contains("not an ELF executable"));
  CHECK_THAT(error_of([&] { profiler::links_mpi_dynamically(scratch("nothing")); }), Catch::Contains("no such application"));
  auto names = profiler::elf_function_names("/proc/self/exe");
  CHECK(std::find(names.begin(), names.end(), "main") != names.end());
  auto libs = profiler::needed_libraries("/proc/self/exe");
  CHECK(std::any_of(libs.begin(), libs.end(), [](const fs::path& p) { return p.filename() == "libc.so.6"; }));
  CHECK(profiler::is_builtin_function("MPI_Iprobe"));
  CHECK(profiler::is_builtin_function("cblas_dgemm"));
  CHECK_FALSE(profiler::is_builtin_function("main"));
}

TEST_CASE("profiler: the hook's meta files are read strictly", "[profiler]")
{
  auto f = scratch("rank-1.meta");
  write(f, "rank 1\nsize 4\npid 77\nhost node\ninit_ticks 100\nend_ticks 300\nticks_per_s 1000\nthreads 1\nstatus finalized\ncode 0\n");
  auto m = profiler::read_raw_meta(f);
  CHECK(m.rank == 1);
  CHECK(m.size == 4);
  CHECK(m.host == "node");
  CHECK(m.end_ticks == 300);
  CHECK(m.status == "finalized");
  write(f, "rank 1\nsize 4\nspeed 3\n");
  CHECK_THAT(error_of([&] { profiler::read_raw_meta(f); }), Catch::Contains("rank-1.meta:3") && Catch::Contains("speed"));
  write(f, "rank x\n");
  CHECK_THAT(error_of([&] { profiler::read_raw_meta(f); }), Catch::Contains("not an integer"));
  write(f, "rank 1\nsize 4\n");
  CHECK_THAT(error_of([&] { profiler::read_raw_meta(f); }), Catch::Contains("ticks_per_s"));
  write(f, "rank 4\nsize 4\n");
  CHECK_THAT(error_of([&] { profiler::read_raw_meta(f); }), Catch::Contains("without a valid rank"));
}

// ---------------------------------------------------------------- conversion of hand-made raw files

#include "gridcast/profiler/raw_format.hpp"

#include <cstring>

#include "gridcast/models/native.hpp"

namespace {
hook::RawRecord raw_call(hook::Fn fn, std::int64_t start, std::int64_t duration)
{
  hook::RawRecord r;
  r.fn = static_cast<std::uint16_t>(fn);
  r.start_ticks = start;
  r.duration_ticks = duration;
  return r;
}

void write_raw(const fs::path& file, const std::vector<hook::RawRecord>& records, std::size_t cut_bytes = 0)
{
  std::ofstream out(file, std::ios::binary);
  hook::RawHeader h;
  h.rank = 0;
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  std::string bytes(reinterpret_cast<const char*>(records.data()), records.size() * sizeof(hook::RawRecord));
  bytes.resize(bytes.size() - cut_bytes);
  out << bytes;
}
}  // namespace

TEST_CASE("profiler: folded polls are written back one by one, gaps become compute", "[profiler]")
{
  fs::path raw = scratch("raw-folded");
  fs::remove_all(raw);
  fs::create_directories(raw);
  // 1 tick = 1 ms: MPI_Init 0..10, three failed MPI_Test of request 5 folded (20..50, 6 ms inside the
  // calls), MPI_Finalize at 100.
  write(raw / "rank-0.meta",
        "rank 0\nsize 1\npid 1\nhost h\ninit_ticks 0\nend_ticks 100\nticks_per_s 1000\nthreads 1\n"
        "status finalized\ncode 0\n");
  auto test = raw_call(hook::Fn::MPI_Test, 20, 30);
  test.request = 5;
  test.repeat = 2;
  test.busy_ticks = 6;
  write_raw(raw / "rank-0.thread-0.gcraw",
            {raw_call(hook::Fn::MPI_Init, 0, 10), test, raw_call(hook::Fn::MPI_Finalize, 100, 0)});
  models::RunInfo info;
  info.encoding = models::TraceEncoding::JsonLines;
  fs::path out = scratch("prof-folded");
  fs::remove_all(out);
  auto result = profiler::convert_raw(raw, info, out);
  REQUIRE(result.ranks.size() == 1);
  CHECK(result.ranks[0].wall_s == Approx(0.1));
  CHECK(result.ranks[0].coverage() == Approx(1.0));
  CHECK(result.all_finalized);

  std::ifstream in(out / "rank-00000.jsonl");
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() ==
        "{\"op\":\"init\",\"fn\":\"MPI_Init\",\"seconds\":0.01}\n"
        "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.01}\n"
        "{\"op\":\"test\",\"fn\":\"MPI_Test\",\"seconds\":0.002,\"request\":5}\n"
        "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.012}\n"
        "{\"op\":\"test\",\"fn\":\"MPI_Test\",\"seconds\":0.002,\"request\":5}\n"
        "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.012}\n"
        "{\"op\":\"test\",\"fn\":\"MPI_Test\",\"seconds\":0.002,\"request\":5}\n"
        "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.05}\n"
        "{\"op\":\"finalize\",\"fn\":\"MPI_Finalize\",\"seconds\":0}\n");
}

TEST_CASE("profiler: a BLAS call's recorded arguments reach the profile, a call without them stays without",
          "[profiler][library]")
{
  fs::path raw = scratch("raw-blas");
  fs::remove_all(raw);
  fs::create_directories(raw);
  write(raw / "rank-0.meta",
        "rank 0\nsize 1\npid 1\nhost h\ninit_ticks 0\nend_ticks 100\nticks_per_s 1000\nthreads 1\n"
        "status finalized\ncode 0\n");
  // cblas_dgemm 64 x 48 x 32, A transposed, as the hook writes it: the call, then one continuation record
  // of kLibArgValues values; then a dgemm_ of a raw file written before the hook kept arguments.
  auto gemm = raw_call(hook::Fn::cblas_dgemm, 10, 20);
  gemm.n_extra = 1;
  gemm.extra_kind = static_cast<std::int32_t>(hook::ExtraKind::LibArgs) | (hook::kLibArgValues << 8);
  std::int64_t values[hook::kValuesPerExtra] = {};
  values[hook::kLibM] = 64;
  values[hook::kLibN] = 48;
  values[hook::kLibK] = 32;
  values[hook::kLibLdA] = 32;
  values[hook::kLibLdB] = 32;
  values[hook::kLibLdC] = 64;
  values[hook::kLibOptions] = 'T' | ('N' << 8) | ('-' << 16) | ('-' << 24) | (std::int64_t{'-'} << 32);
  hook::RawRecord extra;
  std::memcpy(&extra, values, sizeof extra);
  write_raw(raw / "rank-0.thread-0.gcraw", {raw_call(hook::Fn::MPI_Init, 0, 10), gemm, extra,
                                            raw_call(hook::Fn::dgemm_, 40, 10), raw_call(hook::Fn::MPI_Finalize, 100, 0)});
  models::RunInfo info;
  info.encoding = models::TraceEncoding::JsonLines;
  fs::path out = scratch("prof-blas");
  fs::remove_all(out);
  profiler::convert_raw(raw, info, out);
  std::ifstream in(out / "rank-00000.jsonl");
  std::stringstream text;
  text << in.rdbuf();
  CHECK_THAT(text.str(), Catch::Contains("{\"op\":\"compute\",\"fn\":\"cblas_dgemm\",\"seconds\":0.02,"
                                         "\"lib_args\":[64,48,32,32,32,64,0,0],\"lib_options\":\"TN---\"}\n"));
  CHECK_THAT(text.str(), Catch::Contains("{\"op\":\"compute\",\"fn\":\"dgemm_\",\"seconds\":0.01}\n"));
}

TEST_CASE("profiler: two failed polls folded as a cycle are written back interleaved", "[profiler]")
{
  fs::path raw = scratch("raw-cycle");
  fs::remove_all(raw);
  fs::create_directories(raw);
  // 1 tick = 1 ms. MPI_Test of request 5 (A) and MPI_Test of request 6 (B) alternated: A B A B A, from 20
  // to 48; A's three calls took 6 ms, B's two 4 ms; 18 ms of gaps between the five calls.
  write(raw / "rank-0.meta",
        "rank 0\nsize 1\npid 1\nhost h\ninit_ticks 0\nend_ticks 100\nticks_per_s 1000\nthreads 1\n"
        "status finalized\ncode 0\n");
  auto a = raw_call(hook::Fn::MPI_Test, 20, 28);
  a.request = 5;
  a.repeat = 2;
  a.busy_ticks = 6;
  a.flags = hook::kFlagPollCycle;
  auto b = raw_call(hook::Fn::MPI_Test, 24, 20);
  b.request = 6;
  b.repeat = 1;
  b.busy_ticks = 4;
  write_raw(raw / "rank-0.thread-0.gcraw",
            {raw_call(hook::Fn::MPI_Init, 0, 10), a, b, raw_call(hook::Fn::MPI_Finalize, 100, 0)});
  models::RunInfo info;
  info.encoding = models::TraceEncoding::JsonLines;
  fs::path out = scratch("prof-cycle");
  fs::remove_all(out);
  auto result = profiler::convert_raw(raw, info, out);
  REQUIRE(result.ranks.size() == 1);
  CHECK(result.ranks[0].coverage() == Approx(1.0));
  std::ifstream in(out / "rank-00000.jsonl");
  std::stringstream text;
  text << in.rdbuf();
  const std::string gap = "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.0045}\n";
  const std::string ta = "{\"op\":\"test\",\"fn\":\"MPI_Test\",\"seconds\":0.002,\"request\":5}\n";
  const std::string tb = "{\"op\":\"test\",\"fn\":\"MPI_Test\",\"seconds\":0.002,\"request\":6}\n";
  CHECK(text.str() == "{\"op\":\"init\",\"fn\":\"MPI_Init\",\"seconds\":0.01}\n"
                      "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.01}\n" +
                          ta + gap + tb + gap + ta + gap + tb + gap + ta +
                          "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":0.052}\n"
                          "{\"op\":\"finalize\",\"fn\":\"MPI_Finalize\",\"seconds\":0}\n");
}

TEST_CASE("profiler: a raw file cut by a kill keeps its whole records, a missing rank is an empty trace",
          "[profiler]")
{
  fs::path raw = scratch("raw-cut");
  fs::remove_all(raw);
  fs::create_directories(raw);
  write(raw / "rank-0.meta",
        "rank 0\nsize 2\npid 1\nhost h\ninit_ticks 0\nend_ticks 0\nticks_per_s 1000\nthreads 1\nstatus running\n"
        "code 0\n");
  auto send = raw_call(hook::Fn::MPI_Send, 20, 5);
  send.peer = 1;
  send.bytes = 8;
  // The last record (a barrier) is cut in the middle, as a SIGKILL during write(2) would leave it.
  write_raw(raw / "rank-0.thread-0.gcraw",
            {raw_call(hook::Fn::MPI_Init, 0, 10), send, raw_call(hook::Fn::MPI_Barrier, 30, 1)}, 50);
  models::RunInfo info;
  info.encoding = models::TraceEncoding::JsonLines;
  fs::path out = scratch("prof-cut");
  fs::remove_all(out);
  auto result = profiler::convert_raw(raw, info, out);
  CHECK_FALSE(result.all_finalized);
  CHECK(result.ranks[1].status == "missing");
  CHECK(result.ranks[0].status == "killed");  // the meta MPI_Init wrote: the rank never said how it ended
  CHECK(result.ranks[0].wall_s == Approx(0.025));  // to the end of the last whole record
  models::ProfileDir prof(out);
  CHECK_FALSE(prof.info().complete);
  CHECK(prof.info().np == 2);
  auto stream = prof.open(0);
  std::vector<std::string> ops;
  models::CallRecord r;
  while (stream->next(r))
    ops.emplace_back(models::op_name(r.op));
  CHECK(ops == std::vector<std::string>{"init", "compute", "send"});
  CHECK(fs::file_size(out / "rank-00001.jsonl") == 0);
}

TEST_CASE("profiler: every name of a function list is checked against the application and its libraries",
          "[profiler]")
{
  auto list = scratch("check.txt");
  // Wrapped by the hook, defined by this test program, exported by libc (with a symbol version).
  write(list, "# list\ncblas_dgemm\nmain\nmalloc\nmemcpy@GLIBC_2.14\n");
  auto ok = profiler::check_function_list(list, "/proc/self/exe");
  CHECK(ok.application == std::vector<std::string>{"main"});
  CHECK(ok.libraries == std::vector<std::string>{"malloc", "memcpy@GLIBC_2.14"});
  write(list, "main\n\n# a typo\nmian\n");
  CHECK_THAT(error_of([&] { profiler::check_function_list(list, "/proc/self/exe"); }),
             Catch::Contains("check.txt:4") && Catch::Contains("unknown symbol 'mian'") &&
                 Catch::Contains("/proc/self/exe"));
}

namespace {
/// Writes a raw-hook fuzz input (fuzz/regressions/raw_hook/NAME: two ranks' meta and raw files, parts split
/// by "%%" lines, as the harness writes them) into a fresh folder, and returns it.
fs::path write_raw_parts(const std::string& name)
{
  std::ifstream in(std::string(GRIDCAST_SOURCE_DIR) + "/fuzz/regressions/raw_hook/" + name, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(not all.empty());
  const fs::path dir = scratch(name + ".d");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const char* names[] = {"rank-0.meta", "rank-0.thread-0.gcraw", "rank-1.meta", "rank-1.thread-0.gcraw"};
  std::size_t start = 0;
  for (const char* file : names) {
    const std::size_t at = all.find("\n%%\n", start);
    write(dir / file, all.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos)
      break;
    start = at + 4;
  }
  return dir;
}
}  // namespace

TEST_CASE("profiler: a raw call record whose continuation count is damaged costs what the file holds",
          "[profiler]")
{
  // The fuzzer's reproducer (fuzz/regressions/raw_hook/): two ranks' meta and raw files in one input, parts
  // split by "%%" lines. A call record announces ~2^31 continuation records the file does not have: the
  // reader allocated 100 GB for them before reading any. Now the record is cut by the end of the file, as
  // the record of a killed rank is, and the conversion goes on.
  const fs::path dir = write_raw_parts("extra-count-oom.bin");
  const profiler::ConvertResult result = profiler::convert_raw(dir, models::RunInfo{}, {});
  CHECK(result.ranks.size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("profiler: a record whose clock ticks overflow is a damaged file", "[profiler]")
{
  // The fuzzer's reproducer (fuzz/regressions/raw_hook/): a record whose start and duration were damaged
  // into ~7e18 ticks each, whose end overflowed a 64-bit integer (UBSan: signed overflow).
  const fs::path dir = write_raw_parts("clock-overflow.bin");
  const std::string error = error_of([&] { (void)profiler::convert_raw(dir, models::RunInfo{}, {}); });
  CHECK_THAT(error, Catch::Contains(".gcraw") && Catch::Contains("no clock reads that, a damaged raw file"));
  fs::remove_all(dir);
}

TEST_CASE("profiler: a folded poll record claiming more calls than its clock ticks is a damaged file", "[profiler]")
{
  // The fuzzer's reproducer (fuzz/regressions/raw_hook/): a folded-poll record whose count was damaged into
  // ~10^18 calls, which the conversion expanded one record at a time, for ever.
  const fs::path dir = write_raw_parts("folded-poll-count.bin");
  const std::string error = error_of([&] { (void)profiler::convert_raw(dir, models::RunInfo{}, {}); });
  CHECK_THAT(error, Catch::Contains(".gcraw") && Catch::Contains("a folded poll record claims") &&
                        Catch::Contains("a damaged raw file"));
  fs::remove_all(dir);
}

TEST_CASE("profiler: a meta file's damaged world size is refused before a summary per rank", "[profiler]")
{
  // The fuzzer's reproducer (fuzz/regressions/raw_hook/): rank 0's meta file says the world has 239,482,053
  // ranks; the conversion allocated a summary for each of them (gigabytes) before finding all but one missing.
  const fs::path dir = write_raw_parts("world-size-oom.bin");
  const std::string error = error_of([&] { (void)profiler::convert_raw(dir, models::RunInfo{}, {}); });
  CHECK_THAT(error, Catch::Contains("rank-0.meta") && Catch::Contains("world size 239482053") &&
                        Catch::Contains("at most 1048576 ranks"));
  fs::remove_all(dir);
}

TEST_CASE("profiler: one rank's damaged meta file marks that rank and the others are converted", "[profiler]")
{
  fs::path raw = scratch("raw-damaged-meta");
  fs::remove_all(raw);
  fs::create_directories(raw);
  const std::string meta = "size 2\npid 1\nhost h\ninit_ticks 0\nend_ticks 100\nticks_per_s 1000\nthreads 1\n"
                           "status finalized\ncode 0\n";
  write(raw / "rank-0.meta", "rank 0\n" + meta);
  // What a kill during an in-place rewrite left before bad67d2: a new line over the old one's tail.
  write(raw / "rank-1.meta", "rank 1\n" + meta + "end_ticks 1591268967372525\n96149756\n");
  for (int r : {0, 1})
    write_raw(raw / ("rank-" + std::to_string(r) + ".thread-0.gcraw"),
              {raw_call(hook::Fn::MPI_Init, 0, 10), raw_call(hook::Fn::MPI_Finalize, 100, 0)});
  models::RunInfo info;
  info.encoding = models::TraceEncoding::JsonLines;
  fs::path out = scratch("prof-damaged-meta");
  fs::remove_all(out);
  auto result = profiler::convert_raw(raw, info, out);
  REQUIRE(result.ranks.size() == 2);
  CHECK(result.ranks[0].status == "finalized");
  CHECK(result.ranks[0].records == 3);  // init, the compute between, finalize
  CHECK(result.ranks[1].status == "damaged");
  CHECK_THAT(result.ranks[1].damage, Catch::Contains("rank-1.meta"));
  CHECK(result.ranks[1].records == 0);
  CHECK_FALSE(result.all_finalized);
  CHECK(fs::file_size(out / "rank-00001.jsonl") == 0);
}
