// Compute microbenchmarks, one core each: dgemm through the system BLAS, a STREAM triad, a dependent
// scalar loop. Each repetition is timed with steady_clock; rates are work / seconds.
#include "gridcast/calibrate/measure.hpp"

#include "gridcast/models/library_cost.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace gridcast::calibrate {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0)
{
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_s()
{
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Keeps a result alive so that the optimiser cannot drop the loop that computed it.
volatile double g_sink = 0;

/// The figure is a per-core rate, but a threaded system BLAS (OpenBLAS, BLIS, MKL: what Ubuntu and many
/// clusters install behind libblas.so.3) spreads one dgemm over every core: on a 16-core machine the
/// "core speed" came out 7x too high (392 against 45 Gflop/s on a 16-core H100 host). Each library has its own switch; whichever is loaded is set to
/// one thread (looked up at run time, so the reference BLAS, which has none, needs nothing). Process CPU
/// time cannot verify it: OpenBLAS's idle workers spin on every core for a while after start-up.
void single_threaded_blas()
{
  using SetThreads = void (*)(int);
  for (const char* name : {"openblas_set_num_threads", "bli_thread_set_num_threads", "MKL_Set_Num_Threads",
                           "omp_set_num_threads"})
    if (void* f = dlsym(RTLD_DEFAULT, name); f != nullptr)
      reinterpret_cast<SetThreads>(f)(1);
}

}  // namespace

ComputeSizes ComputeSizes::quick()
{
  ComputeSizes s;
  s.dgemm_n            = 128;
  s.dgemm_repetitions  = 3;
  s.triad_elements     = 1u << 20;
  s.triad_repetitions  = 3;
  s.scalar_iterations  = 2'000'000;
  s.scalar_repetitions = 3;
  s.reduction_max_bytes   = 1u << 20;
  s.reduction_repetitions = 3;
  s.memcpy_max_bytes      = 1u << 20;
  s.memcpy_repetitions    = 3;
  s.rate_max_bytes        = 4u << 20;
  s.rate_repetitions      = 3;
  s.library_repetitions   = 2;
  return s;
}

platform::Stat measure_dgemm_flops(int n, int repetitions, const std::function<void()>& after_each)
{
  // C = A*B + C on n x n matrices through the system BLAS: 2n^3 flops a call.
  single_threaded_blas();
  std::vector<double> a(static_cast<std::size_t>(n) * n, 0.5), b(a.size(), 0.25), cm(a.size(), 0.0);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, cm.data(),
              n);  // warm-up: page faults, caches
  std::vector<double> t;
  for (int r = 0; r < repetitions; ++r) {
    auto t0 = Clock::now();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 1.0, cm.data(),
                n);
    t.push_back(seconds_since(t0));
    if (after_each)
      after_each();
  }
  g_sink = cm[0];

  return summarize_rate(t, 2.0 * n * static_cast<double>(n) * n);
}

std::vector<platform::SizedTiming> measure_memcpy(std::uint64_t max_bytes, int repetitions, int copiers,
                                                  const std::function<void(std::uint64_t)>& after_each)
{
  // Each copier owns a source and a destination of max_bytes, touched once first (page faults stay out).
  // Per size, copier 0 decides how many copies fill about 1 ms (one trial copy) and all use that count;
  // every repetition rewrites the source (a collective copies data just computed or received), then all
  // copiers start together (a barrier) and the repetition's figure is the slowest copier's mean.
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t b = 1024; b <= max_bytes; b *= 2)
    sizes.push_back(b);
  copiers = std::max(copiers, 1);
  std::vector<std::vector<unsigned char>> src(static_cast<std::size_t>(copiers)), dst(src.size());
  std::vector<double> seconds(src.size());  // each copier's mean of the current repetition
  std::vector<platform::SizedTiming> out;
  std::barrier sync(copiers);
  int passes = 1;
  auto copier = [&](int id) {
    if (copiers > 1) {  // one core each: the figure is what several cores get at once
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(id, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    auto& s = src[static_cast<std::size_t>(id)];
    auto& d = dst[static_cast<std::size_t>(id)];
    s.assign(max_bytes, 1);
    d.assign(max_bytes, 2);
    for (std::uint64_t bytes : sizes) {
      if (id == 0) {
        auto t0 = Clock::now();
        std::memcpy(d.data(), s.data(), bytes);
        passes = std::clamp(static_cast<int>(1e-3 / std::max(seconds_since(t0), 1e-9)), 1, 100000);
      }
      std::vector<double> t;
      for (int r = 0; r < repetitions; ++r) {
        for (std::uint64_t i = 0; i < bytes; i += 64)  // fresh data: one write per cache line
          s[i] = static_cast<unsigned char>(r + i);
        sync.arrive_and_wait();  // also publishes copier 0's `passes`
        auto t0 = Clock::now();
        for (int k = 0; k < passes; ++k) {
          std::memcpy(d.data(), s.data(), bytes);
          asm volatile("" : : "r"(d.data()) : "memory");  // every copy happens
        }
        seconds[static_cast<std::size_t>(id)] = seconds_since(t0) / passes;
        sync.arrive_and_wait();
        if (id == 0)
          t.push_back(*std::max_element(seconds.begin(), seconds.end()));
      }
      if (id == 0) {
        out.push_back({bytes, summarize(std::move(t))});
        if (after_each)
          after_each(bytes);
      }
      sync.arrive_and_wait();  // copier 0 has read `seconds` and set up the next size
    }
  };
  std::vector<std::thread> threads;
  for (int id = 1; id < copiers; ++id)
    threads.emplace_back(copier, id);
  copier(0);
  for (auto& th : threads)
    th.join();
  return out;
}

namespace {

/// Seconds of one call of `once`, `repetitions` times. Timed in the thread's CPU time, not wall time: a
/// curve measured on a shared machine must not read the other processes' share of the core as a slower
/// cache level. Small sizes take microseconds: a repetition repeats the call for about 2 ms.
std::vector<double> cpu_seconds_per_call(const std::function<void()>& once, int repetitions,
                                         const std::function<void()>& after_each)
{
  double t0 = thread_cpu_s();
  once();  // warm-up: page faults, and the operands into whichever cache holds them
  const int passes = std::max(1, static_cast<int>(2e-3 / std::max(thread_cpu_s() - t0, 1e-9)));
  std::vector<double> t;
  for (int r = 0; r < repetitions; ++r) {
    t0 = thread_cpu_s();
    for (int k = 0; k < passes; ++k)
      once();
    t.push_back((thread_cpu_s() - t0) / passes);
    if (after_each)
      after_each();
  }
  return t;
}

}  // namespace

int panel_update_side(std::uint64_t bytes)
{
  // 8 (m^2 + 2*32*m) = bytes: the positive root of m^2 + 64 m - bytes/8.
  const double w = static_cast<double>(bytes) / 8.0;
  const double m = -32.0 + std::sqrt(32.0 * 32.0 + w);
  return std::max(8, static_cast<int>(std::lround(m)));
}

std::vector<platform::SizedRate> measure_rate_by_working_set(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                                             int repetitions, const std::function<void()>& after_each)
{
  single_threaded_blas();
  constexpr int kPanel = 32;  // the width of the panel: HPL's and ScaLAPACK's usual block sizes are 32-256
  std::vector<platform::SizedRate> curve;
  for (std::uint64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const int m = panel_update_side(bytes);
    const auto mm = static_cast<std::size_t>(m);
    // Column-major, leading dimension m, as a Fortran or HPL caller lays its matrices out.
    std::vector<double> a(mm * kPanel, 1e-3), b(kPanel * mm, 1e-3), cm(mm * mm, 0.5);
    auto update = [&] {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, kPanel, -1.0, a.data(), m, b.data(), kPanel,
                  1.0, cm.data(), m);
    };
    const std::vector<double> t = cpu_seconds_per_call(update, repetitions, after_each);
    g_sink = cm[mm / 2];
    const std::uint64_t actual = 8u * (mm * mm + 2u * kPanel * mm);
    if (not curve.empty() && actual <= curve.back().bytes)
      continue;  // two requested sizes rounded to the same side
    curve.push_back({actual, summarize_rate(t, 2.0 * static_cast<double>(m) * m * kPanel)});
  }
  return curve;
}

namespace {

/// The arguments of one call of `kernel` whose operands total about `bytes`, in the shape the kernel is
/// measured in (measure_library_rates), and the buffers it needs (elements of A, x and y).
struct KernelCall {
  models::LibraryArgs args;
  std::size_t a_elems = 0, x_elems = 0, y_elems = 0;
};

KernelCall kernel_call(const std::string& kernel, std::uint64_t bytes)
{
  constexpr int kPanel = 32;
  const double elems = static_cast<double>(bytes) / 8.0;
  KernelCall c;
  models::LibraryArgs& a = c.args;
  a.recorded = true;
  auto at_least = [](double v, std::int64_t lo) { return std::max<std::int64_t>(lo, std::llround(v)); };
  if (kernel == "dgemm" || kernel == "dsyrk") {
    const std::int64_t m = panel_update_side(bytes);  // m^2 + 64 m elements
    a.m = m;
    a.n = m;
    a.k = kPanel;
    c.a_elems = static_cast<std::size_t>(m * kPanel);
    c.x_elems = static_cast<std::size_t>(kPanel * m);
    c.y_elems = static_cast<std::size_t>(m * m);
  } else if (kernel == "dtrsm") {
    a.m = kPanel;  // L11 \ A12: 32 x 32 triangle, 32 x n panel
    a.n = at_least((elems - kPanel * kPanel / 2.0) / kPanel, 8);
    a.options = {'N', '-', 'L', 'L', 'U'};
    c.a_elems = kPanel * kPanel;
    c.y_elems = static_cast<std::size_t>(kPanel * a.n);
  } else if (kernel == "dgemv" || kernel == "dger") {
    const std::int64_t n = at_least(-1.0 + std::sqrt(1.0 + elems), 8);  // n^2 + 2n elements
    a.m = n;
    a.n = n;
    c.a_elems = static_cast<std::size_t>(n * n);
    c.x_elems = c.y_elems = static_cast<std::size_t>(n);
  } else if (kernel == "dtrsv") {
    const std::int64_t n = at_least(-1.0 + std::sqrt(1.0 + 2.0 * elems), 8);  // n^2/2 + n elements
    a.n = n;
    a.options = {'N', '-', '-', 'L', 'U'};
    c.a_elems = static_cast<std::size_t>(n * n);
    c.x_elems = static_cast<std::size_t>(n);
  } else {  // level 1: the working set is the larger side, one or two vectors of n
    const bool two = kernel == "daxpy" || kernel == "ddot" || kernel == "dswap" || kernel == "dcopy";
    a.n = at_least(elems / (two ? 2.0 : 1.0), 64);
    c.x_elems = c.y_elems = static_cast<std::size_t>(a.n);
  }
  const std::int64_t m = std::max<std::int64_t>(a.m, 1);
  a.ld_a = kernel == "dtrsm" ? kPanel : m;
  a.ld_b = kernel == "dgemm" ? kPanel : kernel == "dtrsm" ? kPanel : 0;
  a.ld_c = kernel == "dgemm" || kernel == "dsyrk" ? m : 0;
  a.inc_x = a.inc_y = 1;
  return c;
}

/// One call of `kernel` on the buffers.
void call_kernel(const std::string& kernel, const models::LibraryArgs& a, std::vector<double>& A,
                 std::vector<double>& x, std::vector<double>& y)
{
  const auto m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
  if (kernel == "dgemm")
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, -1.0, A.data(), m, x.data(), k, 1.0, y.data(), m);
  else if (kernel == "dsyrk")
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, k, -1.0, A.data(), n, 1.0, y.data(), n);
  else if (kernel == "dtrsm")
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, m, n, 1.0, A.data(), m, y.data(), m);
  else if (kernel == "dgemv")
    cblas_dgemv(CblasColMajor, CblasNoTrans, m, n, -1.0, A.data(), m, x.data(), 1, 1.0, y.data(), 1);
  else if (kernel == "dger")
    cblas_dger(CblasColMajor, m, n, -1e-9, x.data(), 1, y.data(), 1, A.data(), m);
  else if (kernel == "dtrsv")
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasUnit, n, A.data(), n, x.data(), 1);
  else if (kernel == "dscal")
    cblas_dscal(n, 1.0000001, x.data(), 1);
  else if (kernel == "daxpy")
    cblas_daxpy(n, 1e-9, x.data(), 1, y.data(), 1);
  else if (kernel == "dcopy")
    cblas_dcopy(n, x.data(), 1, y.data(), 1);
  else if (kernel == "ddot")
    g_sink = cblas_ddot(n, x.data(), 1, y.data(), 1);
  else if (kernel == "idamax")
    g_sink = static_cast<double>(cblas_idamax(n, x.data(), 1));
  else if (kernel == "dswap")
    cblas_dswap(n, x.data(), 1, y.data(), 1);
}

bool in_system_blas(const std::string& kernel)
{
  return kernel != "dgetrf" && kernel != "dgetrs" && kernel != "dpotrf";  // LAPACK, not BLAS
}

}  // namespace

int library_rate_kernels()
{
  return static_cast<int>(std::count_if(models::library_kernels().begin(), models::library_kernels().end(), in_system_blas));
}

std::vector<platform::KernelRateCurve> measure_library_rates(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                                             int repetitions, const std::function<void()>& after_each)
{
  single_threaded_blas();
  std::vector<platform::KernelRateCurve> curves;
  for (const std::string& kernel : models::library_kernels()) {
    if (not in_system_blas(kernel))
      continue;
    platform::KernelRateCurve curve;
    curve.kernel = kernel;
    for (std::uint64_t bytes = min_bytes; bytes <= max_bytes && bytes > 0; bytes *= 2) {
      const KernelCall call = kernel_call(kernel, bytes);
      const std::optional<models::LibraryCost> cost = models::library_cost(kernel + "_", call.args);
      curve.work = cost->unit == models::WorkUnit::Bytes ? "bytes" : "flops";
      // Unit triangles with tiny values off the diagonal: the solves stay finite.
      std::vector<double> A(std::max<std::size_t>(call.a_elems, 1), 1e-3), x(std::max<std::size_t>(call.x_elems, 1), 1.0),
          y(std::max<std::size_t>(call.y_elems, 1), 0.5);
      const std::vector<double> t =
          cpu_seconds_per_call([&] { call_kernel(kernel, call.args, A, x, y); }, repetitions, {});
      g_sink = y[y.size() / 2] + x[x.size() / 2];
      const auto actual = static_cast<std::uint64_t>(std::llround(cost->working_set_bytes));
      if (not curve.points.empty() && actual <= curve.points.back().bytes)
        continue;  // two requested sizes rounded to the same shape
      curve.points.push_back({actual, summarize_rate(t, cost->work)});
    }
    if (after_each)
      after_each();
    curves.push_back(std::move(curve));
  }
  return curves;
}

platform::ComputeCalibration measure_compute(const ComputeSizes& sizes, Progress& progress)
{
  platform::ComputeCalibration c;
  std::vector<std::uint64_t> reduction_sizes;
  for (std::uint64_t b = 1024; b <= sizes.reduction_max_bytes; b *= 4)
    reduction_sizes.push_back(b);
  int memcpy_sizes = 0;
  for (std::uint64_t b = 1024; b <= sizes.memcpy_max_bytes; b *= 2)
    ++memcpy_sizes;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int rate_points = 0;
  for (std::uint64_t b = sizes.rate_min_bytes; b <= sizes.rate_max_bytes && b > 0; b *= 2)
    ++rate_points;
  const int total = sizes.dgemm_repetitions + sizes.triad_repetitions + sizes.scalar_repetitions +
                    static_cast<int>(reduction_sizes.size()) * sizes.reduction_repetitions +
                    memcpy_sizes * (cores > 1 ? 2 : 1) + rate_points * sizes.rate_repetitions +
                    (rate_points > 0 ? library_rate_kernels() : 0);
  int done        = 0;

  c.dgemm_flops = measure_dgemm_flops(sizes.dgemm_n, sizes.dgemm_repetitions, [&] {
    progress.step("compute", ++done, total, "dgemm n=" + std::to_string(sizes.dgemm_n));
  });
  {  // STREAM triad: a = b + s*c, 24 bytes an element (two loads, one store), as STREAM counts them.
    const std::size_t n = sizes.triad_elements;
    std::vector<double> a(n, 0.0), b(n, 1.0), cv(n, 2.0);
    const double s = 3.0;
    for (std::size_t i = 0; i < n; ++i)
      a[i] = b[i] + s * cv[i];  // warm-up
    std::vector<double> t;
    for (int r = 0; r < sizes.triad_repetitions; ++r) {
      auto t0 = Clock::now();
      for (std::size_t i = 0; i < n; ++i)
        a[i] = b[i] + s * cv[i];
      t.push_back(seconds_since(t0));
      g_sink = a[n / 2];
      progress.step("compute", ++done, total, "triad " + std::to_string(n * 24 >> 20) + " MiB");
    }
    c.stream_triad_Bps = summarize_rate(t, 24.0 * static_cast<double>(n));
  }
  {  // Scalar: x = x*m + k, each iteration depends on the previous one, so nothing overlaps or vectorizes.
    volatile double m0 = 0.999999, k0 = 1e-7, x0 = 1.0;
    const double m = m0, k = k0;
    std::vector<double> t;
    for (int r = 0; r < sizes.scalar_repetitions; ++r) {
      double x = x0;
      auto t0  = Clock::now();
      for (std::uint64_t i = 0; i < sizes.scalar_iterations; ++i)
        x = x * m + k;
      t.push_back(seconds_since(t0));
      g_sink = x;
      progress.step("compute", ++done, total, "scalar loop");
    }
    c.scalar_flops = summarize_rate(t, 2.0 * static_cast<double>(sizes.scalar_iterations));
  }
  {  // Reduction: a[i] += b[i] over `bytes` of doubles, what MPI_SUM does to a received buffer (24 bytes
     // of traffic an element, like the triad). Both buffers are written just before, as a collective's
     // data has just been computed or received: a buffer that fits a cache is summed at cache speed,
     // a large one at memory speed. A repetition sums as many times as fill about 1 ms.
    std::vector<double> a(sizes.reduction_max_bytes / 8, 1.0), b(a.size(), 2.0);
    for (std::uint64_t bytes : reduction_sizes) {
      const std::size_t n = bytes / 8;
      auto sum_once       = [&] {
        for (std::size_t i = 0; i < n; ++i)
          a[i] += b[i];
      };
      auto t0 = Clock::now();
      sum_once();
      int passes = std::max(1, static_cast<int>(1e-3 / std::max(seconds_since(t0), 1e-9)));
      std::vector<double> t;
      for (int r = 0; r < sizes.reduction_repetitions; ++r) {
        for (std::size_t i = 0; i < n; ++i)  // fresh data, as a collective gets
          b[i] = static_cast<double>(i & 7);
        t0 = Clock::now();
        for (int k = 0; k < passes; ++k)
          sum_once();
        t.push_back(seconds_since(t0) / passes);
        g_sink = a[n / 2];
        progress.step("compute", ++done, total, "reduction " + std::to_string(bytes >> 10) + " KiB");
      }
      c.reduction.push_back({bytes, summarize(std::move(t))});
    }
  }
  // memcpy on one core, then on every core at once: the local copies of collectives (docs/reference/collectives.md).
  c.memcpy = measure_memcpy(sizes.memcpy_max_bytes, sizes.memcpy_repetitions, 1, [&](std::uint64_t b) {
    progress.step("compute", ++done, total, "memcpy " + std::to_string(b >> 10) + " KiB");
  });
  if (cores > 1)
    c.memcpy_all_cores = measure_memcpy(sizes.memcpy_max_bytes, sizes.memcpy_repetitions, cores, [&](std::uint64_t b) {
      progress.step("compute", ++done, total, "memcpy x" + std::to_string(cores) + " " + std::to_string(b >> 10) + " KiB");
    });
  if (rate_points > 0)
    c.rate_by_working_set = measure_rate_by_working_set(sizes.rate_min_bytes, sizes.rate_max_bytes,
                                                        sizes.rate_repetitions, [&] {
                                                          progress.step("compute", ++done, total, "rate by working set");
                                                        });
  if (rate_points > 0)
    c.library_rates = measure_library_rates(sizes.rate_min_bytes, std::min<std::uint64_t>(sizes.rate_max_bytes, 64u << 20),
                                            sizes.library_repetitions, [&] {
                                              progress.step("compute", ++done, total, "library rates by working set");
                                            });
  // The platform's core speed: the dgemm rate (docs/reference/calibration-json.md says why).
  c.core_speed_flops = c.dgemm_flops.median;
  return c;
}

}  // namespace gridcast::calibrate
