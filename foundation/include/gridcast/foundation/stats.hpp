// Small order statistics shared by the fit, calibration and the benches' C++ helpers.
#pragma once

#include <vector>

namespace gridcast {

/// The median of `values` (the mean of the two middle values for an even count). Throws InternalError
/// on an empty vector: a median of nothing is a bug of the caller, not a user error.
double median(std::vector<double> values);

/// Median, extremes and count of a set of repeated measurements.
struct Summary {
  double median = 0, min = 0, max = 0;
  int count = 0;
};

/// Summary of `values` (not empty; InternalError otherwise).
Summary summarize_samples(std::vector<double> values);

}  // namespace gridcast
