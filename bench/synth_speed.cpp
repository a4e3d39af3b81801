// Synthesis speed: streams every rank of a trace model at (Nw, Np), as `gridcast predict` will, and
// prints the calls generated, the seconds taken, calls/s and the peak RSS of this process. Driven by
// bench/synth_speed.py, which compares Nw and 100x Nw (RSS must stay flat).
//
//   gridcast_bench_synth_speed model.json NW NP
#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/trace_synth.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv)
{
  if (argc != 4) {
    std::cerr << "usage: gridcast_bench_synth_speed model.json NW NP\n";
    return 1;
  }
  try {
    using namespace gridcast::models;
    auto model = std::make_shared<const trace::TraceModel>(trace::read_model(argv[1]));
    trace::SynthSource source(model, {std::atof(argv[2]), std::atoi(argv[3])});
    auto t0 = std::chrono::steady_clock::now();
    std::uint64_t calls = 0, bytes = 0;
    CallRecord rec;
    for (int r = 0; r < source.rank_count(); ++r) {
      CallStreamPtr s = source.open(r);
      while (s->next(rec)) {
        ++calls;
        bytes += rec.bytes;  // consume the record so the loop is not optimised away
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("{\"calls\": %llu, \"seconds\": %.6f, \"calls_per_s\": %.0f, \"max_rss_kib\": %ld, \"bytes\": %llu}\n",
                static_cast<unsigned long long>(calls), secs, calls / secs, ru.ru_maxrss,
                static_cast<unsigned long long>(bytes));
    return 0;
  } catch (const gridcast::InputError& e) {
    std::cerr << "gridcast_bench_synth_speed: " << e.what() << '\n';
    return 1;
  }
}
