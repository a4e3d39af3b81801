#include "gridcast/calibrate/measure.hpp"

#include "gridcast/foundation/stats.hpp"

namespace gridcast::calibrate {

platform::Stat summarize(std::vector<double> samples)
{
  const Summary m = summarize_samples(std::move(samples));
  platform::Stat s;
  s.median      = m.median;
  s.min         = m.min;
  s.max         = m.max;
  s.repetitions = m.count;
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
