// Known answers for the pieces rewritten for replay speed and memory: the SHA-1 of input files (FIPS
// 180-4 test vectors, across partial blocks and read chunks), the order of the matching queues, and TIT
// traces read through the readers' small buffers (lines that straddle or exceed them).
#include "gridcast/emulator/p2p.hpp"
#include "gridcast/emulator/report.hpp"
#include "gridcast/models/tit.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace gridcast;

namespace {

/// A scratch folder removed at the end of the test.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("gridcast-speed-parts-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& bytes) const
  {
    std::ofstream out(dir / name, std::ios::binary);
    out << bytes;
    return dir / name;
  }
};

emulator::RequestPtr request(int tag)
{
  auto r = std::make_shared<emulator::Request>();
  r->tag = tag;
  return r;
}

std::vector<int> tags(const emulator::RequestQueue& q)
{
  std::vector<int> out;
  for (const auto& r : q)
    out.push_back(r->tag);
  return out;
}

}  // namespace

TEST_CASE("matching queues keep posting order through front and middle removals", "[speed][p2p]")
{
  emulator::RequestQueue q;
  CHECK(q.empty());
  for (int i = 0; i < 100; ++i)
    q.push_back(request(i));
  q.erase(q.begin() + 5);  // middle
  q.erase(q.begin());      // front (0)
  CHECK(q.size() == 98);
  CHECK(q.begin()->get()->tag == 1);
  // Take the front 60 times: crosses the compaction point, order stays.
  for (int i = 0; i < 60; ++i)
    q.erase(q.begin());
  std::vector<int> want;
  for (int i = 62; i < 100; ++i)  // 1-4 and 6-61 were taken
    want.push_back(i);
  CHECK(tags(q) == want);
  q.push_back(request(1000));
  want.push_back(1000);
  CHECK(tags(q) == want);
  while (not q.empty())
    q.erase(q.begin());
  CHECK(q.size() == 0);
  q.push_back(request(7));
  CHECK(tags(q) == std::vector<int>{7});
}

TEST_CASE("TIT traces read through small buffers: lines across and longer than the buffer", "[speed][tit]")
{
  Scratch s;
  // Rank 0: enough short lines to need many refills, then one line of ~20 KB (a v-collective of 4000
  // ranks), then more lines; no newline at the very end.
  const int np = 4000;
  std::string rank0 = "0 init\n";
  for (int i = 0; i < 500; ++i)
    rank0 += "0 compute " + std::to_string(1000 + i) + "\n";
  std::string counts;
  for (int i = 0; i < np; ++i)
    counts += " " + std::to_string(i % 7 + 1);
  rank0 += "0 allgatherv 3" + counts + "\n";
  rank0 += "0 compute 42\n0 finalize";
  s.write("rank0.txt", rank0);
  std::string index = "rank0.txt\n";
  for (int r = 1; r < np; ++r)
    index += "rank0.txt\n";  // the other ranks are never opened here
  s.write("index.txt", index);

  models::TitTrace trace(s.dir / "index.txt");
  REQUIRE(trace.rank_count() == np);
  auto stream = trace.open(0);
  models::CallRecord c;
  int computes = 0;
  double last_flops = 0;
  bool saw_allgatherv = false;
  std::uint64_t lines = 0;
  while (stream->next(c)) {
    lines = c.line;
    if (c.op == models::Op::Compute) {
      ++computes;
      last_flops = c.flops;
    }
    if (c.op == models::Op::Allgatherv) {
      saw_allgatherv = true;
      REQUIRE(c.recv_counts.size() == static_cast<std::size_t>(np));
      CHECK(c.recv_counts[0] == 1);
      CHECK(c.recv_counts[np - 1] == static_cast<std::uint64_t>((np - 1) % 7 + 1));
      CHECK(c.line == 502);
    }
  }
  CHECK(saw_allgatherv);
  CHECK(computes == 501);
  CHECK(last_flops == 42);
  CHECK(lines == 504);  // finalize, without a final newline
}
