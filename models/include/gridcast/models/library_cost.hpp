// What a hooked library call costs, from its arguments (LibraryArgs, recorded by the hook): its work and
// the bytes it works on. The latency model prices such a call at the rate its function reaches on a
// working set of that size (a rate curve per function, measured by `gridcast calibrate`), instead of
// regressing measured durations on (Nw, Np). docs/reference/latency-model.md, "Library calls priced
// from their arguments".
#pragma once

#include "gridcast/models/call.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::models {

/// What a rate curve's work counts: flops (levels 2 and 3, LAPACK) or bytes moved (level 1, whose
/// arithmetic is negligible next to its loads and stores).
enum class WorkUnit { Flops, Bytes };

struct LibraryCost {
  double work = 0;               ///< flops or bytes moved (unit)
  double working_set_bytes = 0;  ///< the operands the call reads and writes, in bytes
  WorkUnit unit = WorkUnit::Flops;
};

/// The kernel a hooked function computes: "dgemm" for dgemm_ and cblas_dgemm; empty for a function
/// whose cost the arguments do not give (not a BLAS/LAPACK routine the hook records arguments of).
std::string_view library_kernel(std::string_view function);

/// Every kernel library_cost() knows, in a fixed order (what `gridcast calibrate` measures a curve of).
const std::vector<std::string>& library_kernels();

/// The cost of one call of `function` with `args`; nullopt when the arguments are not recorded or the
/// function is not a known kernel. Double precision (8 bytes an element). The flop counts are the
/// usual ones (LAPACK Working Note 41): gemm 2mnk, trsm m^2 n (left) or m n^2 (right), syrk n^2 k,
/// gemv and ger 2mn, trsv n^2, getrf m n^2 - n^3/3, getrs 2 n^2 nrhs, potrf n^3/3.
std::optional<LibraryCost> library_cost(std::string_view function, const LibraryArgs& args);

/// One point of a kernel's rate curve: the rate (work per second, in the kernel's unit) on a working
/// set of `working_set_bytes`.
struct KernelRatePoint {
  double working_set_bytes = 0;
  double rate = 0;
};
/// Points in increasing working set, each rate > 0.
using KernelRateCurve = std::vector<KernelRatePoint>;
/// Rate curves by kernel name ("dgemm", "daxpy", ...).
using KernelRates = std::map<std::string, KernelRateCurve>;

/// The rate at `bytes`: linear in log2(bytes) between the points (caches make the rate a function of
/// the size's order of magnitude), the end points' rates outside them. The curve must not be empty.
double kernel_rate_at(const KernelRateCurve& curve, double bytes);

}  // namespace gridcast::models
