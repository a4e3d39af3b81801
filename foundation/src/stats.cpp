#include "gridcast/foundation/stats.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>

namespace gridcast {

double median(std::vector<double> values)
{
  return summarize_samples(std::move(values)).median;
}

Summary summarize_samples(std::vector<double> values)
{
  if (values.empty())
    throw InternalError("median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  Summary s;
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  s.min    = values.front();
  s.max    = values.back();
  s.count  = static_cast<int>(n);
  return s;
}

}  // namespace gridcast
