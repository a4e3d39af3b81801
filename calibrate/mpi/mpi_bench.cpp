// gridcast-mpi-bench: the MPI half of `gridcast calibrate`. Run with 2 ranks under a real MPI launcher
// (mpirun -np 2 gridcast-mpi-bench ...). Rank 0 prints raw timings, one line per size, on stdout:
//
//   plan <pingpong sizes> <collective timings> <exchange sizes>
//   pingpong <bytes> <round trips per repetition> <one-way s of repetition 1> ... <of repetition R>
//   exchange <bytes> <exchanges per repetition> <s per exchange, repetition 1> ... <repetition R>
//              (both ranks MPI_Sendrecv <bytes> to each other at once)
//   collectives-method loop-mean-slowest-rank
//              (names how the collective lines below were measured; see below)
//   collective <op> <np> <bytes> <calls per repetition> <s per call, repetition 1> ... <repetition R>
//              (the slowest rank's mean time per call over a loop of `calls` back-to-back calls)
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
  int min_calls           = 9;            ///< fewest collective calls per repetition (rounded up to even)
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

/// One call of the collective; buffers hold at least `bytes`. A bcast sends `send` from `root`.
void collective(const CollectiveCase& c, int np, int root, char* send, char* recv)
{
  if (std::strcmp(c.op, "allreduce") == 0)
    MPI_Allreduce(send, recv, static_cast<int>(c.bytes / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else if (std::strcmp(c.op, "alltoall") == 0)
    MPI_Alltoall(send, static_cast<int>(c.bytes / np), MPI_BYTE, recv, static_cast<int>(c.bytes / np), MPI_BYTE,
                 MPI_COMM_WORLD);
  else
    MPI_Bcast(send, static_cast<int>(c.bytes), MPI_BYTE, root, MPI_COMM_WORLD);
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

  // A collective is timed as IMB times it (IMB-MPI1 Allreduce, Alltoall, Bcast): after a barrier, each
  // rank times a loop of `calls` back-to-back calls and divides by `calls`; a repetition's figure is the
  // largest of the ranks' means (IMB's t_max: the rank that completes last is what an application
  // waits for). No barrier between the calls: at np 2 each call of an allreduce or alltoall needs the
  // peer's data, and each bcast's receiver is the next one's root (the root alternates, as in IMB), so
  // the loop cannot run ahead of the data; the mean over the loop divides the barrier's exit skew
  // (about a latency, either rank first) by the calls instead of adding it to each, as timing each call
  // between barriers did (this bench before; bench/mpi/percall_probe.c). Buffers as the ping-pong and
  // exchange curves leave them, so that the three are comparable (docs/guides/calibration.md, "Collective
  // timings"): each call sends what the previous one produced on that rank, just written by this
  // rank's own core and not in the peer's cache, into the buffer it sent from last (allreduce and alltoall swap their send and
  // receive buffers after each call; a bcast uses one buffer on both ranks, and its root alternates,
  // so each call re-broadcasts what the last one received). bench/calibration_validation.py emulates
  // this loop and takes the same figure from the emulated timeline.
  if (rank == 0 && not cases.empty()) {
    std::printf("collectives-method loop-mean-slowest-rank\n");
    std::fflush(stdout);
  }
  std::vector<double> coll_reps(static_cast<std::size_t>(o.coll_repetitions));
  for (const CollectiveCase& c : cases) {
    // Zeros: an allreduce that sums its last result keeps adding zeros (no overflow, no subnormals).
    std::memset(a.data(), 0, c.bytes);
    std::memset(b.data(), 0, c.bytes);
    char* x   = a.data();
    char* y   = b.data();
    int root  = 0;
    auto loop = [&](int n) {
      for (int i = 0; i < n; ++i) {
        if (std::strcmp(c.op, "bcast") == 0) {
          collective(c, np, root, x, y);
          root = (root + 1) % np;
        } else {
          collective(c, np, root, x, y);
          std::swap(x, y);
        }
      }
    };
    loop(4);  // warm-up: the algorithm's first use sets up its buffers and connections
    int calls = calls_for(rank, o.target_s, 10000, loop);
    calls     = std::max(calls, o.min_calls);
    if (calls % 2 != 0)  // an even count: every bcast repetition starts from root 0 and the same buffer
      ++calls;
    for (int r = 0; r < o.coll_repetitions; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0    = MPI_Wtime();
      loop(calls);
      double mean  = (MPI_Wtime() - t0) / calls;
      double worst = 0;
      MPI_Reduce(&mean, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      coll_reps[static_cast<std::size_t>(r)] = worst;
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
