// gridcast-mpi-bench: the MPI half of `gridcast calibrate`. Run with 2 ranks under a real MPI launcher
// (mpirun -np 2 gridcast-mpi-bench ...). Rank 0 prints raw timings, one line per size, on stdout:
//
//   plan <pingpong sizes> <collective timings> <exchange sizes>
//   pingpong <bytes> <round trips per repetition> <one-way s of repetition 1> ... <of repetition R>
//   exchange <bytes> <exchanges per repetition> <s per exchange, repetition 1> ... <repetition R>
//              (both ranks MPI_Sendrecv <bytes> to each other at once)
//   collectives-method median-call-slowest-rank
//              (names how the collective lines below were measured; see below)
//   collective <op> <np> <bytes> <calls per repetition> <s per call, repetition 1> ... <repetition R>
//              (one call's time on the slowest rank, the mean of `calls` calls isolated by barriers)
//   done
//
// With --only-collectives the ping-pong and exchange curves are skipped (plan 0 N 0): `gridcast
// calibrate --only-collectives` refreshes a calibration's collective timings without its fitted model.
//
// and nothing else, so that `gridcast calibrate` (which computes the statistics and fits) can parse it
// while it shows progress. Errors go to stderr with exit code 1.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::uint64_t max_bytes = 64ull << 20;  ///< largest ping-pong size
  int repetitions         = 15;           ///< timed repetitions of each size
  double target_s         = 4e-3;         ///< aimed duration of one repetition (sets the round trips)
  bool collectives        = true;
  bool only_collectives   = false;        ///< skip the ping-pong and exchange curves
  int coll_repetitions    = 0;            ///< repetitions of each collective; 0: as --repetitions
  int min_calls           = 9;            ///< fewest collective calls per repetition (each rank's median)
};

[[noreturn]] void usage_error(const std::string& why)
{
  std::fprintf(stderr, "gridcast-mpi-bench: %s\n"
                       "usage: mpirun -np 2 gridcast-mpi-bench [--max-bytes N] [--repetitions R] "
                       "[--target-s SECONDS] [--no-collectives | --only-collectives] "
                       "[--coll-repetitions R] [--min-calls N]\n",
               why.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

Options parse(int argc, char** argv)
{
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value    = [&]() -> std::string {
      if (i + 1 >= argc)
        usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--max-bytes")
      o.max_bytes = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--repetitions")
      o.repetitions = std::atoi(value().c_str());
    else if (a == "--target-s")
      o.target_s = std::atof(value().c_str());
    else if (a == "--no-collectives")
      o.collectives = false;
    else if (a == "--only-collectives")
      o.only_collectives = true;
    else if (a == "--coll-repetitions")
      o.coll_repetitions = std::atoi(value().c_str());
    else if (a == "--min-calls")
      o.min_calls = std::atoi(value().c_str());
    else
      usage_error("unknown option " + a);
  }
  if (o.max_bytes < 1 || o.repetitions < 1 || not(o.target_s > 0))
    usage_error("--max-bytes, --repetitions and --target-s must be > 0");
  if (o.coll_repetitions < 0 || o.min_calls < 1)
    usage_error("--coll-repetitions must be >= 0 and --min-calls >= 1");
  if (o.only_collectives && not o.collectives)
    usage_error("--only-collectives and --no-collectives exclude each other");
  if (o.coll_repetitions == 0)
    o.coll_repetitions = o.repetitions;
  return o;
}

/// 1, 2, 3, 4, 6, 8, 12, ...: powers of two and the midpoints between them, up to max_bytes.
std::vector<std::uint64_t> pingpong_sizes(std::uint64_t max_bytes)
{
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t p = 1; p <= max_bytes; p *= 2) {
    sizes.push_back(p);
    if (p >= 2 && p + p / 2 <= max_bytes)
      sizes.push_back(p + p / 2);
  }
  return sizes;
}

/// `rounds` ping-pong round trips between ranks 0 and 1; returns the elapsed seconds on rank 0.
double pingpong(int rank, char* buf, std::uint64_t bytes, int rounds)
{
  const int count = static_cast<int>(bytes);
  double t0       = MPI_Wtime();
  for (int i = 0; i < rounds; ++i) {
    if (rank == 0) {
      MPI_Send(buf, count, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
      MPI_Recv(buf, count, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, count, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, count, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
    }
  }
  return MPI_Wtime() - t0;
}

/// `rounds` exchanges: both ranks send `bytes` to each other at once (MPI_Sendrecv), as the steps of an
/// allreduce or alltoall do; returns the elapsed seconds on rank 0. Each round sends what the previous
/// one received (the two buffers swap), as the ping-pong sends back what it has just received: the
/// data leaves from the sender's cache in both curves, so they differ only by the concurrency.
double exchange(int rank, char* x, char* y, std::uint64_t bytes, int rounds)
{
  const int count = static_cast<int>(bytes);
  const int peer  = 1 - rank;
  double t0       = MPI_Wtime();
  for (int i = 0; i < rounds; ++i) {
    MPI_Sendrecv(x, count, MPI_BYTE, peer, 8, y, count, MPI_BYTE, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::swap(x, y);
  }
  return MPI_Wtime() - t0;
}

/// How many calls of `f` fill target_s, decided by rank 0 from two trial calls and shared with all.
template <class F> int calls_for(int rank, double target_s, int max_calls, F&& f)
{
  double t0 = MPI_Wtime();
  f(2);
  double per_call = (MPI_Wtime() - t0) / 2;
  int calls       = per_call > 0 ? static_cast<int>(std::min<double>(max_calls, target_s / per_call)) : max_calls;
  calls           = std::max(calls, 1);
  MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return calls;
}

struct CollectiveCase {
  const char* op;
  std::uint64_t bytes;  ///< one rank's send buffer
};

/// One call of the collective; buffers hold at least `bytes`.
void collective(const CollectiveCase& c, int np, char* send, char* recv)
{
  if (std::strcmp(c.op, "allreduce") == 0)
    MPI_Allreduce(send, recv, static_cast<int>(c.bytes / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else if (std::strcmp(c.op, "alltoall") == 0)
    MPI_Alltoall(send, static_cast<int>(c.bytes / np), MPI_BYTE, recv, static_cast<int>(c.bytes / np), MPI_BYTE,
                 MPI_COMM_WORLD);
  else
    MPI_Bcast(send, static_cast<int>(c.bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  Options o = parse(argc, argv);
  if (np != 2) {
    if (rank == 0)
      std::fprintf(stderr, "gridcast-mpi-bench: needs exactly 2 ranks (got %d): run it with mpirun -np 2\n", np);
    MPI_Finalize();
    return 1;
  }
  if (o.max_bytes > static_cast<std::uint64_t>(1) << 30)
    usage_error("--max-bytes above 1 GiB");

  std::vector<std::uint64_t> sizes;
  if (not o.only_collectives)
    sizes = pingpong_sizes(o.max_bytes);
  std::vector<CollectiveCase> cases;
  if (o.collectives)
    for (const char* op : {"allreduce", "alltoall", "bcast"})
      for (std::uint64_t b : {std::uint64_t{8}, std::uint64_t{4096}, std::uint64_t{65536}, std::uint64_t{1} << 20,
                              std::uint64_t{16} << 20})
        if (b <= o.max_bytes)
          cases.push_back({op, b});

  // Buffers touched once so that page faults stay out of the timings.
  std::uint64_t buf_bytes = std::max<std::uint64_t>(o.max_bytes, 16);
  std::vector<char> a(buf_bytes, 1), b(buf_bytes, 2);
  if (rank == 0) {
    std::printf("plan %zu %zu %zu\n", sizes.size(), cases.size(), sizes.size());
    std::fflush(stdout);
  }

  std::vector<double> reps(static_cast<std::size_t>(o.repetitions));
  for (std::uint64_t bytes : sizes) {
    pingpong(rank, a.data(), bytes, 3);  // warm-up: connection set-up, registration caches
    int rounds = calls_for(rank, o.target_s, 10000, [&](int n) { pingpong(rank, a.data(), bytes, n); });
    for (int r = 0; r < o.repetitions; ++r)
      reps[r] = pingpong(rank, a.data(), bytes, rounds) / (2.0 * rounds);
    if (rank == 0) {
      std::printf("pingpong %llu %d", static_cast<unsigned long long>(bytes), rounds);
      for (double t : reps)
        std::printf(" %.9e", t);
      std::printf("\n");
      std::fflush(stdout);
    }
  }

  // The exchange curve, same sizes: what two opposite transfers at once cost (fits the capacity that
  // concurrent shared-memory transfers share). Each round sends what the last one received, like the
  // ping-pong, so the two curves differ only by the concurrency.
  for (std::uint64_t bytes : sizes) {
    exchange(rank, a.data(), b.data(), bytes, 3);
    int rounds = calls_for(rank, o.target_s, 10000, [&](int n) { exchange(rank, a.data(), b.data(), bytes, n); });
    for (int r = 0; r < o.repetitions; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      reps[r] = exchange(rank, a.data(), b.data(), bytes, rounds) / rounds;
    }
    if (rank == 0) {
      std::printf("exchange %llu %d", static_cast<unsigned long long>(bytes), rounds);
      for (double t : reps)
        std::printf(" %.9e", t);
      std::printf("\n");
      std::fflush(stdout);
    }
  }

  // A collective is timed per call, as IMB and the OSU benchmarks do: on each rank, the time from
  // leaving a barrier to returning from the call. Each call runs alone: every rank first rewrites its
  // send buffer (applications send data they have just computed; an unchanged buffer would stay in the
  // receiver's cache from the previous call), a barrier fences that write off, and a second barrier
  // starts the timed call. A root that leaves a bcast early then waits in the next fence, not in a
  // buffer write overlapping the receiver's copy (the loop-difference method before, "(barrier + op) x
  // calls minus barrier x calls", had the write inside the timed loop, where it overlapped the op and
  // added its noise to a difference of two large numbers). Each rank takes the median of its `calls`
  // calls, and a repetition reports the slowest rank's median (IMB's t_max, with a median where IMB
  // has a mean): the rank that completes last is what an application waits for, and a median is
  // moved neither by a call the scheduler interrupts (milliseconds on a busy machine, never in an
  // emulation) nor by the barrier's exit skew (at np 2 one rank leaves the barrier about one latency
  // after the other, either one: a maximum per call would add that skew to nearly every call, 0.4-0.5
  // us on 0.4-0.6 us calls here). bench/calibration_validation.py emulates this loop and takes the
  // same figure from the emulated timeline.
  if (rank == 0 && not cases.empty()) {
    std::printf("collectives-method median-call-slowest-rank\n");
    std::fflush(stdout);
  }
  std::vector<double> coll_reps(static_cast<std::size_t>(o.coll_repetitions));
  for (const CollectiveCase& c : cases) {
    std::vector<double> local_s;
    auto timed_calls = [&](int n) {
      local_s.assign(static_cast<std::size_t>(n), 0.0);
      for (int i = 0; i < n; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        std::memset(a.data(), i & 0xff, c.bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        collective(c, np, a.data(), b.data());
        local_s[static_cast<std::size_t>(i)] = MPI_Wtime() - t0;
      }
    };
    timed_calls(3);  // warm-up: the algorithm's first use sets up its buffers and connections
    // Calls per repetition from the fastest of 5 single iterations (fence, write, barrier, call): one
    // interrupted trial must not shrink a repetition to a few calls.
    double best_iteration_s = 1e300;
    for (int k = 0; k < 5; ++k) {
      double t0 = MPI_Wtime();
      timed_calls(1);
      best_iteration_s = std::min(best_iteration_s, MPI_Wtime() - t0);
    }
    // At least min_calls (9; 3 with --quick), so that each rank's median rejects up to 4 interrupted
    // calls even where one call outlasts target_s (16 MiB, or every call on a machine whose cores are
    // taken).
    int calls = std::max(o.min_calls, static_cast<int>(std::min(10000.0, o.target_s / best_iteration_s)));
    MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0; r < o.coll_repetitions; ++r) {
      timed_calls(calls);
      auto mid = local_s.begin() + calls / 2;
      std::nth_element(local_s.begin(), mid, local_s.end());
      double median = *mid;
      if (calls % 2 == 0)  // the mean of the two middle calls, as calibrate's statistics do
        median = (median + *std::max_element(local_s.begin(), mid)) / 2;
      double slowest = 0;
      MPI_Reduce(&median, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      coll_reps[static_cast<std::size_t>(r)] = slowest;
    }
    if (rank == 0) {
      std::printf("collective %s %d %llu %d", c.op, np, static_cast<unsigned long long>(c.bytes), calls);
      for (double t : coll_reps)
        std::printf(" %.9e", t);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::printf("done\n");
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
