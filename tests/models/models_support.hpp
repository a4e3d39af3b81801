// Helpers of the gridcast::models tests.
#pragma once

#include "../foundation/foundation_support.hpp"
#include "../support.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/models/stream.hpp"
#include "gridcast/models/trace_rules.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::test {

/// The face neighbour of `rank` along `axis`, `step` ranks away, in the periodic dims_create(np, 3) grid.
/// Written from the coordinates, independently of the model's rank expressions.
inline int grid3_neighbour(int rank, int np, int axis, int step)
{
  auto d      = models::trace::dims_create(np, 3);
  auto c      = models::trace::grid_coords(rank, d);
  const int e = d[static_cast<std::size_t>(axis)];
  c[static_cast<std::size_t>(axis)] = (c[static_cast<std::size_t>(axis)] + step + e) % e;
  return (c[0] * d[1] + c[1]) * d[2] + c[2];
}

/// Every record of a stream, in order.
inline std::vector<models::CallRecord> read_all(models::CallStream& stream)
{
  std::vector<models::CallRecord> out;
  models::CallRecord r;
  while (stream.next(r))
    out.push_back(r);
  return out;
}

/// Calls of `a` and `b`, rank by rank, must be equal (the records' `line` aside; functions compared by name,
/// since each source interns its own function table).
inline void require_same_streams(const models::TraceSource& a, const models::TraceSource& b)
{
  REQUIRE(a.rank_count() == b.rank_count());
  for (int r = 0; r < a.rank_count(); ++r) {
    auto sa = a.open(r), sb = b.open(r);
    auto ca = read_all(*sa), cb = read_all(*sb);
    INFO("rank " << r << " of " << a.rank_count());
    REQUIRE(ca.size() == cb.size());
    for (std::size_t i = 0; i < ca.size(); ++i) {
      INFO("call " << i);
      CHECK(sa->functions().name(ca[i].function) == sb->functions().name(cb[i].function));
      ca[i].function = cb[i].function = 0;
      CHECK(ca[i] == cb[i]);
    }
  }
}

inline std::string source_path(const std::string& relative)
{
  return std::string(GRIDCAST_SOURCE_DIR) + "/" + relative;
}

/// One rank's calls built in memory by a test's TraceSource: add() appends a call (its function interned in
/// first-use order) for the test to fill; next() hands the calls out in order, each with its 1-based position
/// as its line.
class MemoryStream final : public models::CallStream {
public:
  explicit MemoryStream(std::string source) : source_(std::move(source)) {}
  models::CallRecord& add(models::Op op, const char* function)
  {
    calls_.emplace_back();
    calls_.back().op       = op;
    calls_.back().function = table_.intern(function);
    return calls_.back();
  }
  bool next(models::CallRecord& out) override
  {
    if (next_ == calls_.size())
      return false;
    out      = calls_[next_++];
    out.line = next_;
    return true;
  }
  const models::FunctionTable& functions() const override { return table_; }
  const std::string& source() const override { return source_; }

private:
  std::vector<models::CallRecord> calls_;
  models::FunctionTable table_;
  std::size_t next_ = 0;
  std::string source_;
};

/// Training profiles: `make(nw, np)` (a TraceSource) written as dir/<name>-np<np>-nw<nw> in `encoding` for
/// every np of `nps` and nw of `nws`, in that order; run.json is `info` with np, nw and the encoding set.
template <class Make>
std::vector<std::filesystem::path> write_profile_grid(const std::filesystem::path& dir, const std::string& name,
                                                      std::initializer_list<int> nps, std::initializer_list<int> nws,
                                                      models::TraceEncoding encoding, Make make,
                                                      models::RunInfo info = {})
{
  std::vector<std::filesystem::path> out;
  for (int np : nps)
    for (int nw : nws) {
      info.np       = np;
      info.nw       = nw;
      info.encoding = encoding;
      auto p        = dir / (name + "-np" + std::to_string(np) + "-nw" + std::to_string(nw));
      models::write_profile(make(nw, np), info, p, encoding);
      out.push_back(p);
    }
  return out;
}

}  // namespace gridcast::test
