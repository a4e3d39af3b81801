// What a synthesis says about its model's quality: the target's distance from the training range, and
// the console lines listing each approximated template position (model_quality in prediction.json).
#include "gridcast/models/trace_synth.hpp"

#include "trace_synth_quality.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace gridcast::models::trace {

/// The target over the training range, per axis: above the largest, below the smallest, or 1.
void note_extrapolation(const TraceModel& m, const SynthTarget& t, ModelQuality& q)
{
  if (m.training.empty())
    return;
  double nw_lo = m.training[0].nw, nw_hi = nw_lo, np_lo = m.training[0].np, np_hi = np_lo;
  for (const TrainingPoint& p : m.training) {
    nw_lo = std::min(nw_lo, p.nw);
    nw_hi = std::max(nw_hi, p.nw);
    np_lo = std::min<double>(np_lo, p.np);
    np_hi = std::max<double>(np_hi, p.np);
  }
  auto factor = [](double v, double lo, double hi) { return v > hi ? v / hi : v < lo && lo > 0 ? v / lo : 1.0; };
  q.nw_factor = factor(t.nw, nw_lo, nw_hi);
  q.np_factor = factor(t.np, np_lo, np_hi);
  if (not m.size_class.empty())
    q.approximated.push_back({"rule", "size class", m.size_class, 0.0});
}

void print_quality(std::ostream& out, const ModelQuality& q)
{
  if (q.approximated.empty())
    return;  // every position exact: nothing to say (the range warnings say how far the target is)
  for (const ApproximatedPosition& a : q.approximated) {
    std::ostringstream err;
    err << std::setprecision(3) << (a.train_error < 1e-9 ? 0.0 : 100 * a.train_error);  // rounding noise: 0
    out << "approximated: " << a.where << " " << a.field << ": " << a.method << " (training error " << err.str()
        << " %)\n";
  }
  std::ostringstream o;
  o << std::setprecision(4) << "model quality: " << q.exact << " of " << q.positions
    << " template positions exact; target at " << q.nw_factor << "x the training Nw range, " << q.np_factor
    << "x the training Np range\n";
  out << o.str();
}

}  // namespace gridcast::models::trace
