#include "gridcast/models/library_cost.hpp"

#include "gridcast/foundation/errors.hpp"
#include "log2_interpolation.hpp"

#include <algorithm>
#include <cmath>

namespace gridcast::models {

namespace {

constexpr double kDouble = 8.0;  // bytes an element: the d in dgemm

}  // namespace

const std::vector<std::string>& library_kernels()
{
  static const std::vector<std::string> kKernels = {"dgemm", "dtrsm", "dsyrk",  "dgemv",  "dger",   "dtrsv",
                                                    "dscal", "daxpy", "dcopy",  "ddot",   "idamax", "dswap",
                                                    "dgetrf", "dgetrs", "dpotrf"};
  return kKernels;
}

std::string_view library_kernel(std::string_view function)
{
  std::string_view k = function;
  if (k.starts_with("cblas_"))
    k.remove_prefix(6);
  else if (k.ends_with("_"))
    k.remove_suffix(1);
  else
    return {};  // a Fortran routine ends with '_', a CBLAS one starts with cblas_: anything else is not one
  const auto& all = library_kernels();
  return std::find(all.begin(), all.end(), k) != all.end() ? k : std::string_view{};
}

std::optional<LibraryCost> library_cost(std::string_view function, const LibraryArgs& a)
{
  if (not a.recorded)
    return std::nullopt;
  const std::string_view k = library_kernel(function);
  if (k.empty())
    return std::nullopt;
  const double m = static_cast<double>(std::max<std::int64_t>(a.m, 0));
  const double n = static_cast<double>(std::max<std::int64_t>(a.n, 0));
  const double kk = static_cast<double>(std::max<std::int64_t>(a.k, 0));
  LibraryCost c;
  auto level1 = [&](double vectors, double loads_and_stores) {
    // Bytes moved: every element load and store; the working set: the vectors the call touches.
    c.unit = WorkUnit::Bytes;
    c.work = kDouble * n * loads_and_stores;
    c.working_set_bytes = kDouble * n * vectors;
  };
  if (k == "dgemm") {
    c.work = 2 * m * n * kk;
    c.working_set_bytes = kDouble * (m * kk + kk * n + m * n);
  } else if (k == "dtrsm") {
    const double ka = a.options[2] == 'R' ? n : m;  // A is m x m on the left, n x n on the right
    c.work = ka * m * n;
    c.working_set_bytes = kDouble * (ka * ka / 2 + m * n);
  } else if (k == "dsyrk") {
    c.work = n * n * kk;
    c.working_set_bytes = kDouble * (n * kk + n * n / 2);
  } else if (k == "dgemv" || k == "dger") {
    c.work = 2 * m * n;
    c.working_set_bytes = kDouble * (m * n + m + n);
  } else if (k == "dtrsv") {
    c.work = n * n;
    c.working_set_bytes = kDouble * (n * n / 2 + n);
  } else if (k == "dscal") {
    level1(1, 2);  // x loaded and stored
  } else if (k == "daxpy") {
    level1(2, 3);  // x and y loaded, y stored
  } else if (k == "dcopy") {
    level1(2, 2);  // x loaded, y stored
  } else if (k == "ddot") {
    level1(2, 2);  // x and y loaded
  } else if (k == "idamax") {
    level1(1, 1);  // x loaded
  } else if (k == "dswap") {
    level1(2, 4);  // x and y loaded and stored
  } else if (k == "dgetrf") {
    const double lo = std::min(m, n), hi = std::max(m, n);
    c.work = hi * lo * lo - lo * lo * lo / 3;
    c.working_set_bytes = kDouble * m * n;
  } else if (k == "dgetrs") {
    c.work = 2 * n * n * kk;
    c.working_set_bytes = kDouble * (n * n + n * kk);
  } else if (k == "dpotrf") {
    c.work = n * n * n / 3;
    c.working_set_bytes = kDouble * n * n / 2;
  } else {
    throw InternalError("library_cost: kernel " + std::string(k) + " has no cost formula");
  }
  return c;
}

double kernel_rate_at(const KernelRateCurve& curve, double bytes)
{
  if (curve.empty())
    throw InternalError("kernel_rate_at: empty rate curve");
  return detail::rate_in_log2(curve, bytes, [](const KernelRatePoint& p) { return p.working_set_bytes; },
                              [](const KernelRatePoint& p) { return p.rate; });
}

}  // namespace gridcast::models
