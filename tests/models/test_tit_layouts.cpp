// The TIT layouts `smpirun -replay` reads (docs/reference/tit.md, "Layouts"): a one-line index naming a
// file shared by every rank, an index listing that shared file once per rank, per-rank files holding lines
// of other ranks, index paths relative to the working directory.
#include "models_support.hpp"

#include "gridcast/models/tit.hpp"

#include <unistd.h>

using namespace gridcast;
using namespace gridcast::models;
using namespace gridcast::test;
namespace fs = std::filesystem;

namespace {

/// Three ranks in one file, interleaved as ti-one-file writes them.
const char* const kShared = "0 init\n1 init\n2 init\n"
                            "0 compute 3e8\n1 compute 1e8\n2 compute 2e8\n"
                            "0 send 1 7 200000 6\n1 recv 0 7 200000 6\n"
                            "2 isend 0 8 3000 6\n0 irecv 2 8 3000 6\n0 wait 2 0 8\n2 wait 2 0 8\n"
                            "0 finalize\n1 finalize\n2 finalize\n";

/// Runs the enclosing scope in `dir` (the working directory), restoring the previous one after.
class WorkingDirectory {
public:
  explicit WorkingDirectory(const fs::path& dir) : previous_(fs::current_path()) { fs::current_path(dir); }
  ~WorkingDirectory()
  {
    std::error_code ec;
    fs::current_path(previous_, ec);
  }
  WorkingDirectory(const WorkingDirectory&)            = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

private:
  fs::path previous_;
};

}  // namespace

TEST_CASE("TIT layouts: a one-line index gives its file to every rank, as ti-one-file writes it", "[models][tit]")
{
  TempDir tmp;
  write_file(tmp / "all.txt", kShared);
  write_file(tmp / "index.txt", "all.txt\n");
  TitTrace by_index(tmp / "index.txt");
  TitTrace direct(tmp / "all.txt");
  CHECK(by_index.single_file());
  REQUIRE(by_index.rank_count() == 3);
  CHECK(by_index.input_files() == std::vector<fs::path>{tmp / "index.txt", tmp / "all.txt"});
  CHECK(direct.input_files() == std::vector<fs::path>{tmp / "all.txt"});
  CHECK(by_index.path_base() == TitPathBase::IndexFolder);
  CHECK(direct.path_base() == TitPathBase::None);
  require_same_streams(by_index, direct);
  auto s = by_index.open(1);
  CHECK(s->source() == (tmp / "all.txt").string());  // errors name the file holding the lines
  const auto r1 = read_all(*s);
  REQUIRE(r1.size() == 4);
  CHECK((r1[2].op == Op::Recv && r1[2].bytes == 200000));

  SECTION("an index cannot name another index")
  {
    write_file(tmp / "outer.txt", "index.txt\n");
    auto e = expect_input_error([&] { TitTrace t(tmp / "outer.txt"); });
    CHECK(e.context().file == (tmp / "outer.txt").string());
    CHECK_THAT(e.reason(), Catch::Contains("does not start with a TIT line"));
  }
}

TEST_CASE("TIT layouts: each rank reads its own lines of a file listed for several ranks", "[models][tit]")
{
  TempDir tmp;
  write_file(tmp / "all.txt", kShared);
  write_file(tmp / "index.txt", "all.txt\nall.txt\nall.txt\n");
  TitTrace listed(tmp / "index.txt");
  CHECK_FALSE(listed.single_file());
  REQUIRE(listed.rank_count() == 3);
  TitTrace direct(tmp / "all.txt");
  require_same_streams(listed, direct);

  SECTION("a rank's file with lines of other ranks only is refused, naming the rank")
  {
    write_file(tmp / "r0.txt", "0 init\n0 finalize\n");
    write_file(tmp / "bad.txt", "r0.txt\nr0.txt\n");
    TitTrace bad(tmp / "bad.txt");
    auto s = bad.open(1);
    CHECK(read_all(*bad.open(0)).size() == 2);
    auto e = expect_input_error([&] { read_all(*s); });
    CHECK(e.context().rank == 1);
    CHECK_THAT(e.reason(), Catch::Contains("2 lines of other ranks and none of its own"));
  }
}

TEST_CASE("TIT layouts: relative index paths, beside the index first, then in the working directory",
          "[models][tit]")
{
  TempDir tmp;
  write_file(tmp / "traces" / "r0.txt", "0 init\n0 send 1 0 10 6\n0 finalize\n");
  write_file(tmp / "traces" / "r1.txt", "1 init\n1 recv 0 0 10 6\n1 finalize\n");
  WorkingDirectory cwd(tmp.path());

  SECTION("smpirun's split traces: the index in a folder, its paths relative to the working directory")
  {
    write_file(tmp / "sub" / "split_traces", "traces/r0.txt\ntraces/r1.txt\n");
    TitTrace t("sub/split_traces");
    CHECK(t.path_base() == TitPathBase::WorkingDirectory);
    CHECK(tit_path_base_name(t.path_base()) == "working directory");
    CHECK(t.input_files() == std::vector<fs::path>{"sub/split_traces", "traces/r0.txt", "traces/r1.txt"});
    CHECK(read_all(*t.open(1)).size() == 3);
  }
  SECTION("beside the index")
  {
    write_file(tmp / "traces" / "index.txt", "r0.txt\nr1.txt\n");
    TitTrace t(tmp / "traces" / "index.txt");
    CHECK(t.path_base() == TitPathBase::IndexFolder);
    CHECK(tit_path_base_name(t.path_base()) == "index folder");
  }
  SECTION("an index in the working directory: both places are one")
  {
    write_file(tmp / "index.txt", "traces/r0.txt\ntraces/r1.txt\n");
    TitTrace t("index.txt");
    CHECK(t.path_base() == TitPathBase::IndexFolder);
  }
  SECTION("two different files: ambiguous")
  {
    write_file(tmp / "sub" / "traces" / "r0.txt", "0 init\n0 finalize\n");
    write_file(tmp / "sub" / "split_traces", "traces/r0.txt\ntraces/r1.txt\n");
    auto e = expect_input_error([&] { TitTrace t("sub/split_traces"); });
    CHECK(e.context().file == "sub/split_traces");
    CHECK(e.context().line == 1);
    CHECK(e.context().rank == 0);
    CHECK_THAT(e.reason(), Catch::Contains("ambiguous"));
  }
  SECTION("in neither place")
  {
    write_file(tmp / "sub" / "split_traces", "traces/r0.txt\ntraces/r9.txt\n");
    auto e = expect_input_error([&] { TitTrace t("sub/split_traces"); });
    CHECK(e.context().line == 2);
    CHECK(e.context().rank == 1);
    CHECK_THAT(e.reason(), Catch::Contains("looked for beside the index"));
  }
}

TEST_CASE("TIT layouts: a real ti-one-file recording reads as the per-rank recording of the same program",
          "[models][tit]")
{
  // Both recorded from tests/models/data/tit-smpi-4/source.c; the one-file recording without computation.
  TitTrace one_file(source_path("tests/models/data/tit-smpi-4-one-file/tr.txt"));
  TitTrace per_rank(source_path("tests/models/data/tit-smpi-4/tr.txt"));
  CHECK(one_file.single_file());
  REQUIRE(one_file.rank_count() == 4);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    auto a = one_file.open(r), b = per_rank.open(r);
    auto calls = [](CallStream& s) {
      std::vector<std::pair<std::string, CallRecord>> out;
      for (CallRecord c : read_all(s))
        if (c.op != Op::Compute) {
          std::string name(s.functions().name(c.function));
          c.line = c.function = 0;
          out.emplace_back(std::move(name), c);
        }
      return out;
    };
    const auto ca = calls(*a), cb = calls(*b);
    CHECK(ca.size() == 31);
    CHECK(ca == cb);
  }
}
