// The hook's meta files (rank-R.meta, docs/guides/profiling.md "The raw format"): what the converter needs
// besides a rank's records, read strictly (every key known, every number whole), errors naming the file,
// the line and the key.
#include "gridcast/profiler/profiler.hpp"

#include "gridcast/foundation/errors.hpp"

#include <charconv>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace gridcast::profiler {

RawMeta read_raw_meta(const fs::path& file)
{
  std::ifstream in(file);
  if (not in)
    throw InputError({file.string(), 0, {}, -1}, "cannot read the hook's meta file");
  RawMeta m;
  std::string line;
  std::uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    auto space = line.find(' ');
    std::string key = line.substr(0, space);
    std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    auto number = [&](auto& out) {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
      if (ec != std::errc() || p != value.data() + value.size())
        throw InputError({file.string(), line_no, key, m.rank}, "not an integer: '" + value + "'");
    };
    if (key == "rank") number(m.rank);
    else if (key == "size") number(m.size);
    else if (key == "pid") number(m.pid);
    else if (key == "host") m.host = value;
    else if (key == "init_ticks") number(m.init_ticks);
    else if (key == "end_ticks") number(m.end_ticks);
    else if (key == "threads") number(m.threads);
    else if (key == "ticks_per_s") number(m.ticks_per_s);
    else if (key == "status") m.status = value;
    else if (key == "code") number(m.code);
    else if (key == "init_rss_bytes") number(m.init_rss_bytes);
    else if (key == "peak_rss_bytes") number(m.peak_rss_bytes);
    else if (key == "mpi_library") m.mpi_library = value;
    else if (key == "write_errno") number(m.write_errno);
    else if (key == "records_dropped") number(m.records_dropped);
    else if (not key.empty())
      throw InputError({file.string(), line_no, key, m.rank}, "unknown key in the hook's meta file");
  }
  if (m.rank < 0 || m.size <= 0 || m.rank >= m.size)
    throw InputError({file.string(), 0, {}, m.rank}, "meta file without a valid rank and size");
  // A profiled run is a small one (a laptop, a node, a few nodes); a larger world size is a damaged file,
  // and every rank of it would get a summary (and, without its meta file, an empty trace).
  constexpr int kMaxProfiledRanks = 1 << 20;
  if (m.size > kMaxProfiledRanks)
    throw InputError({file.string(), 0, "size", m.rank},
                     "world size " + std::to_string(m.size) + ": gridcast profile converts runs of at most " +
                         std::to_string(kMaxProfiledRanks) + " ranks");
  if (m.ticks_per_s <= 0)
    throw InputError({file.string(), 0, "ticks_per_s", m.rank}, "meta file without a clock rate");
  return m;
}

}  // namespace gridcast::profiler
