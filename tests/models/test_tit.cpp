// SMPI time-independent traces: line syntax, datatypes, request resolution, index and single files.
#include "models_support.hpp"

#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/tit.hpp"

#include <fstream>
#include <map>
#include <sstream>

using namespace gridcast;
using namespace gridcast::models;
using namespace gridcast::test;

namespace {

/// Parses `lines` of `rank` in order with one parser (so that waits see earlier isend/irecv).
std::vector<CallRecord> parse_lines(int rank, const std::vector<std::string>& lines, FunctionTable& fns, int np = 4,
                                    std::shared_ptr<const TitReadOptions> options = {})
{
  TitLineParser parser(np, rank, "trace.txt", std::move(options));
  std::vector<CallRecord> out;
  CallRecord r;
  std::uint64_t n = 0;
  for (const auto& line : lines)
    if (parser.parse(line, ++n, r, fns))
      out.push_back(r);
  return out;
}

CallRecord parse_one(const std::string& line, int rank = 0, int np = 4)
{
  FunctionTable fns;
  auto recs = parse_lines(rank, {line}, fns, np);
  REQUIRE(recs.size() == 1);
  return recs[0];
}

using Counts = std::vector<std::uint64_t>;

const char* const kSmpiIndex = "tests/models/data/tit-smpi-4/tr.txt";

}  // namespace

TEST_CASE("TIT datatype ids measured on SimGrid 3.32", "[models][tit]")
{
  CHECK(tit_datatype_size(0) == 8);    // MPI_DOUBLE
  CHECK(tit_datatype_size(1) == 4);    // MPI_INT
  CHECK(tit_datatype_size(2) == 1);    // MPI_CHAR
  CHECK(tit_datatype_size(6) == 1);    // MPI_BYTE
  CHECK(tit_datatype_size(14) == 16);  // MPI_LONG_DOUBLE
  CHECK(tit_datatype_size(32) == 16);  // MPI_DOUBLE_INT
  CHECK(tit_datatype_size(50) == 32);  // MPI_LONG_DOUBLE_INT
  CHECK(tit_datatype_size(59) == 8);   // MPI_COUNT
  auto derived = expect_input_error([] { tit_datatype_size(-1); });
  CHECK_THAT(derived.reason(), Catch::Contains("derived datatype"));
  CHECK_THROWS_AS(tit_datatype_size(60), InputError);
}

TEST_CASE("TIT datatypes: the real SMPI trace of every predefined type", "[models][tit]")
{
  // sizes.txt: "TAG <tag> <name> size <MPI_Type_size>" printed by models/tools/tit_datatypes.cpp.
  std::map<std::int32_t, std::uint64_t> size_of_tag;
  std::istringstream sizes(read_file(source_path("tests/models/data/tit-datatypes/sizes.txt")));
  std::string tag_word, name, size_word;
  std::int32_t tag;
  std::uint64_t size;
  while (sizes >> tag_word >> tag >> name >> size_word >> size)
    size_of_tag[tag] = size;
  REQUIRE(size_of_tag.size() == 60);

  TitTrace trace(source_path("tests/models/data/tit-datatypes/dtm.txt"));
  REQUIRE(trace.rank_count() == 2);
  auto s = trace.open(0);
  CallRecord r;
  std::size_t sends = 0;
  auto e            = expect_input_error([&] {
    while (s->next(r)) {
      if (r.op != Op::Send)
        continue;
      INFO("tag " << r.tag);
      REQUIRE(size_of_tag.count(r.tag) == 1);
      CHECK(r.bytes == size_of_tag[r.tag]);  // one element each
      ++sends;
    }
  });
  CHECK(sends == 60);
  // The last send uses a derived datatype, which TIT writes as -1.
  CHECK_THAT(e.reason(), Catch::Contains("derived datatype"));
  CHECK(e.context().rank == 0);
  CHECK(e.context().line > 60);
}

TEST_CASE("every TIT action of SMPI 3.32 maps to the right fields", "[models][tit]")
{
  FunctionTable fns;
  // Lines as written by smpirun -trace-ti for rank 0 of 4 (tests/models/data/tit-smpi-4).
  auto recs = parse_lines(0,
                          {
                              "0 init",                                          // 0
                              "0 compute 0.62116",                               // 1
                              "0 sleep 0.5",                                     // 2
                              "0 isend 1 7 100 0",                               // 3
                              "0 irecv 3 7 100 0",                               // 4
                              "0 waitall 2",                                     // 5
                              "0 send 1 3 10 1",                                 // 6
                              "0 recv -333 3 10 1",                              // 7
                              "0 Ssend 1 9 3 1",                                 // 8
                              "0 sendRecv 8 1 8 3 0 0",                          // 9
                              "0 barrier",                                       // 10
                              "0 bcast 50 1 0 ",                                 // 11
                              "0 reduce 20 0 0 0 ",                              // 12
                              "0 allreduce 30 0 0 ",                             // 13
                              "0 alltoall 10 10 0 0",                            // 14
                              "0 alltoallv 40 10 10 10 10 100 10 20 30 40 0 0",  // 15
                              "0 gather 10 10 0 0 0",                            // 16
                              "0 gatherv 10 0 0 0 0 2 0 0",                      // 17
                              "0 allgather 10 10 0 0",                           // 18
                              "0 allgatherv 10 10 20 30 40 0 0",                 // 19
                              "0 scatter 10 10 0 0 0",                           // 20
                              "0 scatterv 0 0 0 0 10 1 0 0",                     // 21
                              "0 reducescatter 10 20 30 40 0 0",                 // 22
                              "0 scan 10 0 0 ",                                  // 23
                              "0 exscan 10 0 0 ",                                // 24
                              "0 comm_size 4",                                   // 25
                              "0 comm_split",                                    // 26
                              "0 comm_dup",                                      // 27
                              "0 finalize",                                      // 28
                          },
                          fns);
  REQUIRE(recs.size() == 29);
  auto fn = [&](std::size_t i) { return fns.name(recs[i].function); };

  CHECK(recs[0].op == Op::Init);
  CHECK(fn(0) == "init");
  CHECK(recs[0].line == 1);
  CHECK(recs[1].op == Op::Compute);
  CHECK(recs[1].flops == 0.62116);
  CHECK(recs[1].seconds < 0);
  CHECK(recs[2].op == Op::Sleep);
  CHECK(recs[2].seconds == 0.5);

  CHECK(recs[3].op == Op::Isend);
  CHECK(recs[3].peer == 1);
  CHECK(recs[3].tag == 7);
  CHECK(recs[3].bytes == 800);
  CHECK(recs[3].request == 0);
  CHECK(recs[4].op == Op::Irecv);
  CHECK(recs[4].peer == 3);
  CHECK(recs[4].bytes == 800);
  CHECK(recs[4].request == 1);
  CHECK(recs[5].op == Op::Waitall);
  CHECK(recs[5].requests == std::vector<std::int64_t>{0, 1});

  CHECK(recs[6].op == Op::Send);
  CHECK(recs[6].peer == 1);
  CHECK(recs[6].tag == 3);
  CHECK(recs[6].bytes == 40);
  CHECK(recs[6].request == kNoRequest);
  CHECK(recs[7].op == Op::Recv);
  CHECK(recs[7].peer == kAnySource);
  CHECK(recs[7].tag == 3);
  CHECK(recs[7].bytes == 40);
  CHECK(recs[8].op == Op::Ssend);
  CHECK(fn(8) == "Ssend");
  CHECK(recs[8].bytes == 12);
  CHECK(recs[8].tag == 9);

  CHECK(recs[9].op == Op::Sendrecv);
  CHECK(fn(9) == "sendRecv");
  CHECK(recs[9].peer == 1);
  CHECK(recs[9].tag == 0);
  CHECK(recs[9].bytes == 64);
  CHECK(recs[9].src == 3);
  CHECK(recs[9].recv_tag == 0);
  CHECK(recs[9].recv_bytes == 64);

  CHECK(recs[10].op == Op::Barrier);
  CHECK(recs[11].op == Op::Bcast);
  CHECK(recs[11].bytes == 400);
  CHECK(recs[11].root == 1);
  CHECK(recs[12].op == Op::Reduce);
  CHECK(recs[12].bytes == 160);
  CHECK(recs[12].flops == 0);
  CHECK(recs[12].root == 0);
  CHECK(recs[13].op == Op::Allreduce);
  CHECK(recs[13].bytes == 240);
  CHECK(recs[14].op == Op::Alltoall);
  CHECK(recs[14].bytes == 80);
  CHECK(recs[14].recv_bytes == 80);
  CHECK(recs[15].op == Op::Alltoallv);
  CHECK(recs[15].counts == Counts{80, 80, 80, 80});
  CHECK(recs[15].recv_counts == Counts{80, 160, 240, 320});
  CHECK(recs[15].bytes == 0);
  CHECK(recs[16].op == Op::Gather);
  CHECK(recs[16].bytes == 80);
  CHECK(recs[16].recv_bytes == 80);
  CHECK(recs[16].root == 0);
  CHECK(recs[17].op == Op::Gatherv);
  CHECK(recs[17].bytes == 80);
  CHECK(recs[17].recv_counts == Counts{0, 0, 0, 0});
  CHECK(recs[17].root == 2);
  CHECK(recs[18].op == Op::Allgather);
  CHECK(recs[18].bytes == 80);
  CHECK(recs[18].recv_bytes == 80);
  CHECK(recs[19].op == Op::Allgatherv);
  CHECK(recs[19].bytes == 80);
  CHECK(recs[19].recv_counts == Counts{80, 160, 240, 320});
  CHECK(recs[20].op == Op::Scatter);
  CHECK(recs[20].bytes == 80);
  CHECK(recs[20].recv_bytes == 80);
  CHECK(recs[21].op == Op::Scatterv);
  CHECK(recs[21].counts == Counts{0, 0, 0, 0});
  CHECK(recs[21].recv_bytes == 80);
  CHECK(recs[21].root == 1);
  CHECK(recs[22].op == Op::ReduceScatter);
  CHECK(recs[22].recv_counts == Counts{80, 160, 240, 320});
  CHECK(recs[22].flops == 0);
  CHECK(recs[23].op == Op::Scan);
  CHECK(recs[23].bytes == 80);
  CHECK(recs[24].op == Op::Exscan);
  CHECK(recs[24].bytes == 80);
  CHECK(recs[25].op == Op::CommSize);
  CHECK(recs[26].op == Op::CommSplit);
  CHECK(recs[26].comm == kWorldComm);
  CHECK(recs[26].new_comm == kWorldComm);
  CHECK(recs[27].op == Op::CommDup);
  CHECK(recs[28].op == Op::Finalize);
  CHECK(recs[28].line == 29);
}

TEST_CASE("TIT v-collectives seen from the root", "[models][tit]")
{
  auto gv = parse_one("2 gatherv 30 10 20 30 40 2 0 0", 2);
  CHECK(gv.bytes == 240);
  CHECK(gv.recv_counts == Counts{80, 160, 240, 320});
  CHECK(gv.root == 2);
  auto sv = parse_one("1 scatterv 10 20 30 40 20 1 0 0", 1);
  CHECK(sv.counts == Counts{80, 160, 240, 320});
  CHECK(sv.recv_bytes == 160);
  CHECK(sv.root == 1);
  auto a2av = parse_one("3 alltoallv 160 40 40 40 40 100 10 20 30 40 1 6", 3);
  CHECK(a2av.counts == Counts{160, 160, 160, 160});   // MPI_INT
  CHECK(a2av.recv_counts == Counts{10, 20, 30, 40});  // MPI_BYTE
  auto rs = parse_one("0 reducescatter 1 2 3 4 1.5e6 5", 0);
  CHECK(rs.recv_counts == Counts{4, 8, 12, 16});  // MPI_FLOAT
  CHECK(rs.flops == 1.5e6);
  auto two = parse_one("0 reduce 7 100 1 3", 0, 2);
  CHECK(two.bytes == 14);  // MPI_SHORT
  CHECK(two.flops == 100);
  CHECK(two.root == 1);
}

TEST_CASE("TIT default datatype: MPI_BYTE, or MPI_DOUBLE after init with an argument", "[models][tit]")
{
  FunctionTable fns;
  auto tau = parse_lines(0, {"0 init", "0 send 1 3 10", "0 bcast 5", "0 allreduce 4 10"}, fns);
  CHECK(tau[1].bytes == 10);
  CHECK(tau[2].bytes == 5);
  CHECK(tau[2].root == 0);
  CHECK(tau[3].bytes == 4);
  auto mpe = parse_lines(0, {"0 init 1", "0 send 1 3 10", "0 bcast 5"}, fns);
  CHECK(mpe[1].bytes == 80);
  CHECK(mpe[2].bytes == 40);
}

TEST_CASE("TIT requests: ids per rank, FIFO matching, test keeps, wait removes", "[models][tit]")
{
  FunctionTable fns;
  auto recs = parse_lines(1,
                          {
                              "1 isend 2 4 5 0",        // request 0
                              "1 irecv 0 4 5 0",        // request 1
                              "1 isend 2 4 5 0",        // request 2, same key as 0
                              "1 test 0 1 4",           // -> 1, stays pending
                              "1 wait 0 1 4",           // -> 1, removed
                              "1 wait 1 2 4",           // -> 0 (FIFO)
                              "1 irecv -333 -444 3 1",  // request 3: any source, any tag
                              "1 wait -333 1 -444",     // -> 3
                              "1 irecv -333 8 3 1",     // request 4
                              "1 wait 2 1 8",           // -> 4: matched under its actual source
                              "1 ISsend 0 6 1 1",       // request 5
                              "1 isend 0 6 1 1",        // request 6
                              "1 waitAny 2",            // {5, 6}, both stay pending
                              "1 waitall 3",            // {2, 5, 6}
                              "1 waitall 0",            // nothing left
                          },
                          fns);
  REQUIRE(recs.size() == 15);
  CHECK(recs[0].request == 0);
  CHECK(recs[1].request == 1);
  CHECK(recs[2].request == 2);
  CHECK(recs[3].op == Op::Test);
  CHECK(recs[3].request == 1);
  CHECK(recs[4].op == Op::Wait);
  CHECK(recs[4].request == 1);
  CHECK(recs[5].request == 0);
  CHECK(recs[6].peer == kAnySource);
  CHECK(recs[6].tag == kAnyTag);
  CHECK(recs[6].bytes == 12);
  CHECK(recs[7].request == 3);
  CHECK(recs[9].request == 4);
  CHECK(recs[10].op == Op::Issend);
  CHECK(fns.name(recs[10].function) == "ISsend");
  CHECK(recs[10].request == 5);
  CHECK(recs[12].op == Op::Waitany);
  CHECK(recs[12].requests == std::vector<std::int64_t>{5, 6});
  CHECK(recs[13].op == Op::Waitall);
  CHECK(recs[13].requests == std::vector<std::int64_t>{2, 5, 6});
  CHECK(recs[14].requests.empty());

  SECTION("a wait that matches nothing is an error")
  {
    TitLineParser parser(4, 0, "t.txt");
    CallRecord r;
    REQUIRE(parser.parse("0 isend 1 4 5 0", 1, r, fns));
    REQUIRE(parser.parse("0 wait 0 1 4", 2, r, fns));
    CHECK(parser.pending_requests().empty());
    auto e = expect_input_error([&] { parser.parse("0 wait 0 1 4", 3, r, fns); });
    CHECK(e.context().file == "t.txt");
    CHECK(e.context().line == 3);
    CHECK(e.context().rank == 0);
    CHECK(e.reason() == "wait for 0 1 4 matches no isend/irecv or nonblocking collective");
  }
}

TEST_CASE("TIT lines without a call and the free parse function", "[models][tit]")
{
  FunctionTable fns;
  TitLineParser parser(2, 0, "t.txt");
  CallRecord r;
  CHECK_FALSE(parser.parse("", 1, r, fns));
  CHECK_FALSE(parser.parse("   \t ", 2, r, fns));
  CHECK_FALSE(parser.parse("# comment", 3, r, fns));
  CHECK_FALSE(parser.parse("0 location app.c 42", 4, r, fns));
  CHECK_FALSE(parser.parse("0 testall", 5, r, fns));
  CHECK(parser.parse("0\tcompute\t 2e9  ", 6, r, fns));
  CHECK(r.flops == 2e9);

  parse_tit_line("1 recv 0 5 16 0", 2, r, fns, "x.txt", 9, 1);
  CHECK(r.op == Op::Recv);
  CHECK(r.peer == 0);
  CHECK(r.bytes == 128);
  CHECK(r.line == 9);
}

TEST_CASE("malformed TIT lines name the file, line, rank and reason", "[models][tit]")
{
  struct Bad {
    const char* line;
    const char* reason_part;
  };
  const Bad cases[] = {
      {"0 frobnicate 1", "unknown action 'frobnicate'"},
      {"0 send 1 3", "send expects 3 to 4 arguments, got 2"},
      {"0 send 1 3 x 0", "argument 3 (count) 'x' is not a number"},
      {"0 send 1 3 -5 0", "argument 3 (count) '-5' is negative"},
      {"0 send 1 3 2.5 0", "is not an integer"},
      {"0 send 7 3 10 0", "the trace has 4 ranks"},
      {"0 send -1 3 10 0", "(dst) '-1' is negative"},
      {"0 send 1 3 10 77", "unknown SMPI datatype id 77"},
      {"0 send 1 3 10 -1", "derived datatype"},
      {"0 compute", "compute expects 1 argument, got 0"},
      {"0 compute abc", "is not a number"},
      {"0 compute nan", "is not a number"},
      {"0 compute -3", "is negative"},
      {"0 bcast 10 9 0", "root 9 is not a rank"},
      {"0 alltoallv 40 10 10 10 10 100 10 20 30", "alltoallv expects 10 to 12 arguments, got 9"},
      {"0 gatherv 10 1 2 3", "gatherv expects 5 to 8 arguments"},
      {"0 barrier 3", "barrier expects 0 arguments, got 1"},
      {"x send 1 3 10 0", "as the rank"},
      {"0", "missing action"},
      {"1 send 0 3 10 0", "line of rank 1 in the trace of rank 0"},
      {"0 test 1 2", "test expects 3 arguments"},
      {"0 wait 0 2 1", "matches no isend/irecv"},
  };
  for (const auto& c : cases) {
    INFO(c.line);
    FunctionTable fns;
    TitLineParser parser(4, 0, "app.tit");
    CallRecord r;
    auto e = expect_input_error([&] { parser.parse(c.line, 17, r, fns); });
    CHECK(e.context().file == "app.tit");
    CHECK(e.context().line == 17);
    CHECK(e.context().rank == 0);
    CHECK_THAT(e.reason(), Catch::Contains(c.reason_part));
  }
}

TEST_CASE("TIT index of the real SMPI trace", "[models][tit]")
{
  TitTrace trace(source_path(kSmpiIndex));
  CHECK_FALSE(trace.single_file());
  REQUIRE(trace.rank_count() == 4);
  for (int rank = 0; rank < 4; ++rank) {
    auto s    = trace.open(rank);
    auto recs = read_all(*s);
    INFO("rank " << rank);
    CHECK(recs.size() == 63);
    CHECK(recs.front().op == Op::Init);
    CHECK(recs.back().op == Op::Finalize);
    CHECK(recs.back().line == 63);
  }
  auto s    = trace.open(0);
  auto recs = read_all(*s);
  std::vector<CallRecord> calls;
  for (const auto& r : recs)
    if (r.op != Op::Compute)
      calls.push_back(r);
  REQUIRE(calls.size() == 31);
  CHECK(calls[1].op == Op::Isend);
  CHECK(calls[1].bytes == 800);
  CHECK(calls[3].op == Op::Waitall);
  CHECK(calls[3].requests == std::vector<std::int64_t>{0, 1});
  CHECK(calls[6].op == Op::Isend);  // request 2
  CHECK(calls[7].op == Op::Irecv);  // request 3
  CHECK(calls[8].op == Op::Test);
  CHECK(calls[8].request == 3);
  CHECK(calls[9].op == Op::Wait);
  CHECK(calls[9].request == 2);
  CHECK(calls[28].op == Op::Ssend);
  CHECK(calls[29].op == Op::Recv);
  CHECK(calls[29].peer == 3);
  CHECK(s->source() ==
        std::filesystem::path(source_path(kSmpiIndex)).parent_path() / "tr.txt_files" / "1795320316.706557_rank-1.txt");
}

TEST_CASE("TIT single file: split into per-rank spill files, same records as the index", "[models][tit]")
{
  TempDir tmp;
  // Interleave the four real rank files, rank 3 first, so lines of a rank are not contiguous.
  std::vector<std::vector<std::string>> lines(4);
  TitTrace index(source_path(kSmpiIndex));
  const auto dir = std::filesystem::path(source_path(kSmpiIndex)).parent_path() / "tr.txt_files";
  for (int r = 0; r < 4; ++r) {
    std::istringstream in(read_file(dir / ("1795320316.706557_rank-" + std::to_string(r + 1) + ".txt")));
    for (std::string l; std::getline(in, l);)
      lines[r].push_back(l);
  }
  std::string single;
  std::map<std::pair<int, std::size_t>, std::uint64_t> line_of;  // (rank, index in rank) -> line in single
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < 63; ++i)
    for (int r = 3; r >= 0; --r) {
      single += lines[r][i] + "\n";
      line_of[{r, i}] = ++n;
      if (i == 10 && r == 2) {
        single += "\n";
        ++n;
      }
    }
  write_file(tmp / "all.tit", single);
  CHECK(tit_is_single_file(tmp / "all.tit"));
  CHECK_FALSE(tit_is_single_file(source_path(kSmpiIndex)));

  {
    TitTrace trace(tmp / "all.tit", tmp / "scratch");
    CHECK(trace.single_file());
    REQUIRE(trace.rank_count() == 4);
    CHECK(std::filesystem::exists(tmp / "scratch" / "rank-00003.gct"));
    for (int r = 0; r < 4; ++r) {
      auto a = index.open(r);
      auto b = trace.open(r);
      CHECK(b->source() == (tmp / "all.tit").string());
      auto ra = read_all(*a);
      auto rb = read_all(*b);
      INFO("rank " << r);
      CHECK(ra == rb);
      CHECK(a->functions().names() == b->functions().names());
      REQUIRE(rb.size() == 63);
      CHECK(rb[20].line == line_of[{r, 20}]);
    }
  }
  CHECK(std::filesystem::exists(tmp / "scratch"));  // given by the caller: kept

  std::filesystem::path scratch;
  {
    TitTrace trace(tmp / "all.tit");
    scratch = trace.scratch_dir();
    CHECK(std::filesystem::exists(scratch / "rank-00000.gct"));
  }
  CHECK_FALSE(std::filesystem::exists(scratch));  // a temporary: removed
}

TEST_CASE("TIT single file errors", "[models][tit]")
{
  TempDir tmp;
  SECTION("a rank without lines")
  {
    write_file(tmp / "t.tit", "0 init\n2 init\n0 finalize\n2 finalize\n");
    auto e = expect_input_error([&] { TitTrace t(tmp / "t.tit", tmp / "s"); });
    CHECK(e.context().rank == 1);
    CHECK(e.context().file == (tmp / "t.tit").string());
  }
  SECTION("a malformed line")
  {
    write_file(tmp / "t.tit", "0 init\n1 init\n1 send 0 1 10\n0 recv 1 1 x\n");
    auto e = expect_input_error([&] { TitTrace t(tmp / "t.tit", tmp / "s"); });
    CHECK(e.context().file == (tmp / "t.tit").string());
    CHECK(e.context().line == 4);
    CHECK(e.context().rank == 0);
    CHECK_THAT(e.reason(), Catch::Contains("'x' is not a number"));
  }
  SECTION("v-collectives use the rank count of the whole file")
  {
    write_file(tmp / "t.tit", "0 init\n0 allgatherv 1 1 2 3 0 0\n1 init\n2 init\n"
                              "1 allgatherv 2 1 2 3 0 0\n2 allgatherv 3 1 2 3 0 0\n");
    TitTrace t(tmp / "t.tit", tmp / "s");
    REQUIRE(t.rank_count() == 3);
    auto s    = t.open(0);
    auto recs = read_all(*s);
    REQUIRE(recs.size() == 2);
    CHECK(recs[1].recv_counts == Counts{8, 16, 24});
    CHECK(recs[1].line == 2);
  }
}

TEST_CASE("TIT index files: relative and absolute paths, missing files", "[models][tit]")
{
  TempDir tmp;
  write_file(tmp / "ranks" / "r0.txt", "0 init\n0 send 1 0 4 1\n0 finalize\n");
  write_file(tmp / "ranks" / "r1.txt", "1 init\n1 recv 0 0 4 1\n1 finalize\n");

  SECTION("relative and absolute entries, blank lines ignored")
  {
    write_file(tmp / "index.txt", "\nranks/r0.txt\n\n" + (tmp / "ranks" / "r1.txt").string() + "\n\n");
    TitTrace t(tmp / "index.txt");
    REQUIRE(t.rank_count() == 2);
    auto s    = t.open(1);
    auto recs = read_all(*s);
    REQUIRE(recs.size() == 3);
    CHECK(recs[1].op == Op::Recv);
    CHECK(recs[1].bytes == 16);
  }
  SECTION("a missing file names it and its rank")
  {
    write_file(tmp / "index.txt", "ranks/r0.txt\nranks/r9.txt\n");
    auto e = expect_input_error([&] { TitTrace t(tmp / "index.txt"); });
    CHECK(e.context().rank == 1);
    CHECK(e.context().file == (tmp / "index.txt").string());
    CHECK(e.context().line == 2);
    CHECK_THAT(e.reason(), Catch::Contains("r9.txt"));
  }
  SECTION("a rank file holding lines of another rank only")
  {
    // smpirun skips the lines of other ranks; a file with none of its rank's is no trace of that rank.
    write_file(tmp / "index.txt", "ranks/r0.txt\nranks/r0.txt\n");
    TitTrace t(tmp / "index.txt");
    auto s = t.open(1);
    CallRecord r;
    auto e = expect_input_error([&] { s->next(r); });
    CHECK(e.context().rank == 1);
    CHECK(e.context().file == (tmp / "ranks" / "r0.txt").string());
    CHECK_THAT(e.reason(), Catch::Contains("none of its own"));
  }
  SECTION("a missing index")
  {
    auto e = expect_input_error([&] { TitTrace t(tmp / "nope.txt"); });
    CHECK(e.context().file == (tmp / "nope.txt").string());
  }
}

TEST_CASE("a TIT trace converts into a native profile", "[models][tit]")
{
  TempDir tmp;
  TitTrace trace(source_path(kSmpiIndex));
  RunInfo info;
  info.nw     = 1;
  info.origin = "tit-import";
  info.host   = {"node-0", 1e9, {}, {}};
  write_profile(trace, info, tmp / "prof", TraceEncoding::JsonLines);
  ProfileDir prof(tmp / "prof");
  CHECK(prof.info().np == 4);
  CHECK(prof.info().origin == "tit-import");
  for (int r = 0; r < 4; ++r) {
    auto a = trace.open(r);
    auto b = prof.open(r);
    CHECK(read_all(*a) == read_all(*b));
  }
  const std::string rank0 = read_file(tmp / "prof" / "rank-00000.jsonl");
  CHECK(rank0.rfind("{\"op\":\"init\",\"fn\":\"init\"}\n{\"op\":\"compute\",\"fn\":\"compute\",\"flops\":", 0) == 0);
}

TEST_CASE("TIT: smpi/comp-adjustment-file divides compute and sleep by the speedup of the call location",
          "[models][tit]")
{
  TempDir tmp;
  // SMPI's key: previous location, then the current one ("prevfile:prevline:file:line"), base names.
  write_file(tmp / "adjust.csv", "\"Location\",\"Speedup\"\nmain.c:10:main.c:12,2\n"
                                 "main.c:12:kernel.c:20, 4\n\nkernel.c:20:main.c:12,10\n");
  TitReadOptions options;
  read_comp_adjustment_file(tmp / "adjust.csv", options);
  REQUIRE(options.speedup_by_location.size() == 3);
  CHECK(options.speedup_by_location.at("main.c:12:kernel.c:20") == 4);

  const std::vector<std::string> lines = {"0 location main.c 10", "0 init",    "0 compute 1e9",
                                          "0 location main.c 12", "0 compute 1e9",
                                          "0 location src/kernel.c 20", "0 compute 1e9",
                                          "0 location main.c 12", "0 sleep 1", "0 finalize"};
  auto parse = [&](std::shared_ptr<const TitReadOptions> opts) {
    FunctionTable fns;
    return parse_lines(0, lines, fns, 1, std::move(opts));
  };
  auto adjusted = parse(std::make_shared<const TitReadOptions>(options));
  REQUIRE(adjusted.size() == 6);
  CHECK(adjusted[1].flops == 1e9);      // ":0:main.c:10" is not in the file: 1
  CHECK(adjusted[2].flops == 1e9 / 2);  // main.c:10 then main.c:12
  CHECK(adjusted[3].flops == 1e9 / 4);  // main.c:12 then kernel.c:20 (its base name)
  CHECK(adjusted[4].seconds == 1.0 / 10);
  auto plain = parse(nullptr);
  CHECK(plain[3].flops == 1e9);
  CHECK(plain[4].seconds == 1.0);

  SECTION("absolute location paths key on the file as written")
  {
    options.absolute_location_paths = true;
    auto absolute = parse(std::make_shared<const TitReadOptions>(options));
    CHECK(absolute[3].flops == 1e9);  // "main.c:12:src/kernel.c:20" is not in the file
  }
  SECTION("a bad line names the file and line")
  {
    write_file(tmp / "bad.csv", "header\nmain.c:1:main.c:2,0\n");
    TitReadOptions bad;
    auto e = expect_input_error([&] { read_comp_adjustment_file(tmp / "bad.csv", bad); });
    CHECK(e.context().file == (tmp / "bad.csv").string());
    CHECK(e.context().line == 2);
  }
}

TEST_CASE("TIT: a line longer than 256 MiB is an input error, not a buffer grown until memory runs out",
          "[models][tit]")
{
  // A 257 MiB file of NUL bytes and no newline (sparse: it takes no disk), as a binary file or a device
  // copied by mistake would be: the reader stops at its line-length limit and names the file and line.
  TempDir tmp;
  std::filesystem::path file = tmp / "zeros.txt";
  { std::ofstream(file) << ""; }
  std::filesystem::resize_file(file, (std::uintmax_t{257} << 20));
  auto e = expect_input_error([&] { TitTrace t(file, tmp / "s"); });
  CHECK_THAT(e.what(), Catch::Contains("zeros.txt:1: ") && Catch::Contains("a line longer than 256 MiB"));
}
