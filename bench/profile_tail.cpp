// gridcast_bench_profile_tail: the last phase of a recorded profile, as a profile of its own.
//
//   gridcast_bench_profile_tail IN_DIR OUT_DIR FUNCTION K
//
// For every rank of IN_DIR, keeps the records from the K-th last call of FUNCTION (inclusive) to the
// end, and writes them with IN_DIR's run.json to OUT_DIR (binary encoding). Prints, per rank, the
// records kept and the seconds they cover (a profile's records cover the rank's whole time, so this is
// the phase's duration on that rank). bench/accuracy/real_size.py uses it to cut HPL out of an HPCC run:
// HPL is HPCC's last test and begins with the three MPI_Comm_split of its process grid.
// Exit 1 on bad input (a rank with fewer than K calls of FUNCTION), as gridcast does.
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

using namespace gridcast::models;
using gridcast::InputError;

int main(int argc, char** argv)
{
  if (argc != 5) {
    std::cerr << "usage: gridcast_bench_profile_tail IN_DIR OUT_DIR FUNCTION K\n";
    return 1;
  }
  try {
    const std::filesystem::path in = argv[1], out = argv[2];
    const std::string function = argv[3];
    const long k               = std::stol(argv[4]);
    if (k < 1)
      throw InputError({}, "K must be at least 1");
    ProfileDir dir(in);
    RunInfo info  = dir.info();
    info.encoding = TraceEncoding::Binary;
    std::filesystem::create_directories(out);
    for (int r = 0; r < dir.rank_count(); ++r) {
      // First reading: how many calls of the function, so that the K-th last is known.
      std::uint64_t calls = 0;
      {
        CallStreamPtr s = dir.open(r);
        CallRecord rec;
        while (s->next(rec))
          calls += s->functions().name(rec.function) == function ? 1 : 0;
      }
      if (calls < static_cast<std::uint64_t>(k))
        throw InputError({dir.rank_path(r).string(), 0, {}, r},
                         "only " + std::to_string(calls) + " call(s) of " + function + ", " + std::to_string(k) +
                             " needed");
      const std::uint64_t first = calls - static_cast<std::uint64_t>(k);  // calls to skip before the cut
      CallStreamPtr s = dir.open(r);
      auto writer     = make_trace_writer(out / rank_file_name(r, info.encoding), info.encoding);
      CallRecord rec;
      std::uint64_t seen = 0, kept = 0, total = 0;
      double seconds = 0;
      bool keeping   = false;
      while (s->next(rec)) {
        ++total;
        if (not keeping && s->functions().name(rec.function) == function && seen++ == first)
          keeping = true;
        if (keeping) {
          writer->write(rec, s->functions());
          ++kept;
          seconds += rec.seconds;
        }
      }
      writer->close();
      std::cout << "rank " << r << ": kept " << kept << " of " << total << " records, " << seconds << " s\n";
    }
    write_run_info(out / "run.json", info);
  } catch (const InputError& e) {
    std::cerr << "gridcast_bench_profile_tail: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gridcast_bench_profile_tail: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
