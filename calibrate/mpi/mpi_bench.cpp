// gridcast-mpi-bench: the MPI half of `gridcast calibrate`. Run with 2 ranks under a real MPI launcher
// (mpirun -np 2 gridcast-mpi-bench ...). Rank 0 prints raw timings, one line per size, on stdout:
//
//   plan <pingpong sizes> <collective timings>
//   pingpong <bytes> <round trips per repetition> <one-way s of repetition 1> ... <of repetition R>
//   collective <op> <np> <bytes> <calls per repetition> <s per call, repetition 1> ... <repetition R>
//              (time a call adds to a loop of barriers; see below)
//   done
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
};

[[noreturn]] void usage_error(const std::string& why)
{
  std::fprintf(stderr, "gridcast-mpi-bench: %s\n"
                       "usage: mpirun -np 2 gridcast-mpi-bench [--max-bytes N] [--repetitions R] "
                       "[--target-s SECONDS] [--no-collectives]\n",
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
    else
      usage_error("unknown option " + a);
  }
  if (o.max_bytes < 1 || o.repetitions < 1 || not(o.target_s > 0))
    usage_error("--max-bytes, --repetitions and --target-s must be > 0");
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

  std::vector<std::uint64_t> sizes = pingpong_sizes(o.max_bytes);
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
    std::printf("plan %zu %zu\n", sizes.size(), cases.size());
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

  // A collective is timed as what it adds to a loop of barriers: (barrier + op) x calls minus
  // barrier x calls, per call, on the slowest rank. The barriers keep consecutive calls from
  // overlapping (a root that leaves a bcast early would otherwise start the next one), so the figure
  // is one call's completion time, which an emulator can reproduce with the same loop. Every rank
  // rewrites its send buffer before each call, in both loops: applications send data they have just
  // computed, and an unchanged buffer would stay in the receiver's cache from the previous call
  // (a 64 KiB bcast then runs about twice as fast as the ping-pong's, which always moves fresh data).
  for (const CollectiveCase& c : cases) {
    auto with_op = [&](int n) {
      for (int i = 0; i < n; ++i) {
        std::memset(a.data(), i & 0xff, c.bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        collective(c, np, a.data(), b.data());
      }
    };
    auto barriers = [&](int n) {
      for (int i = 0; i < n; ++i) {
        std::memset(a.data(), i & 0xff, c.bytes);
        MPI_Barrier(MPI_COMM_WORLD);
      }
    };
    with_op(2);
    int calls = calls_for(rank, o.target_s, 10000, with_op);
    for (int r = 0; r < o.repetitions; ++r) {
      double local[2], slowest[2] = {0, 0};
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      with_op(calls);
      local[0] = (MPI_Wtime() - t0) / calls;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      barriers(calls);
      local[1] = (MPI_Wtime() - t0) / calls;
      MPI_Reduce(local, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      reps[r] = slowest[0] - slowest[1];
    }
    if (rank == 0) {
      std::printf("collective %s %d %llu %d", c.op, np, static_cast<unsigned long long>(c.bytes), calls);
      for (double t : reps)
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
