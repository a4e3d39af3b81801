// Reading a rate curve by working-set size: caches make the rate a function of the size's order of
// magnitude, so between two points it is linear in log2 of the size, and the end points' rates hold
// beyond them. Shared by the host's rate curve (profile.hpp) and the library kernels' (library_cost.hpp).
// Internal to the models library.
#pragma once

#include <cmath>
#include <cstddef>

namespace gridcast::models::detail {

/// The rate of a non-empty `curve` (sizes strictly ascending) at `bytes`; `size_of(point)` and
/// `rate_of(point)` read a point.
template <class Curve, class SizeOf, class RateOf>
double rate_in_log2(const Curve& curve, double bytes, SizeOf size_of, RateOf rate_of)
{
  if (bytes <= size_of(curve.front()))
    return rate_of(curve.front());
  if (bytes >= size_of(curve.back()))
    return rate_of(curve.back());
  std::size_t k = 1;
  while (size_of(curve[k]) < bytes)
    ++k;
  const double x0 = std::log2(size_of(curve[k - 1])), x1 = std::log2(size_of(curve[k]));
  const double t  = (std::log2(bytes) - x0) / (x1 - x0);
  return rate_of(curve[k - 1]) + t * (rate_of(curve[k]) - rate_of(curve[k - 1]));
}

}  // namespace gridcast::models::detail
