#include "gridcast/calibrate/measure.hpp"

#include "gridcast/models/errors.hpp"

#include <algorithm>

namespace gridcast::calibrate {

platform::Stat summarize(std::vector<double> samples)
{
  if (samples.empty())
    throw InternalError("summarize: no samples");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  platform::Stat s;
  s.median      = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  s.min         = samples.front();
  s.max         = samples.back();
  s.repetitions = static_cast<int>(n);
  return s;
}

platform::Stat summarize_rate(const std::vector<double>& seconds, double work)
{
  std::vector<double> rates;
  rates.reserve(seconds.size());
  for (double t : seconds)
    rates.push_back(t > 0 ? work / t : 0.0);
  return summarize(std::move(rates));
}

}  // namespace gridcast::calibrate
