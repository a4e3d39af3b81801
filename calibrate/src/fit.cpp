// Fitting the ping-pong curve into SMPI-style piecewise factors.
//
// SimGrid times one message of n bytes on a route of latency L and bandwidth B as
//   t(n) = L*lf(n) + n / (B*bf(n))
// where lf and bf are the latency and bandwidth factors (SMPI's smpi/lat-factor and smpi/bw-factor).
// With factors constant on a size segment, t is a line a + b*n there; so the curve is cut into
// segments that each fit a line, and every line becomes lf = a/L, bf = 1/(B*b).
#include "gridcast/calibrate/measure.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace gridcast::calibrate {

namespace {

struct Line {
  double a = 0, b = 0;       ///< t = a + b*n
  double max_rel_error = 0;  ///< over the points it was fitted to
};

double time_of(const platform::PingPongPoint& p)
{
  return p.one_way_s.median;
}

/// Line through points [s, e], least squares on relative error (weights 1/t^2), with a > 0 and b > 0 so
/// that both factors exist. `a_floor`/`b_floor`: the smallest intercept and slope allowed.
Line fit_line(const std::vector<platform::PingPongPoint>& p, std::size_t s, std::size_t e, double base_bw_Bps,
              double a_floor, double b_floor)
{
  Line l;
  if (s == e) {
    // One point: keep the base bandwidth and put the rest into the latency.
    double n = static_cast<double>(p[s].bytes), t = time_of(p[s]);
    l.b      = 1.0 / base_bw_Bps;
    l.a      = t - n * l.b;
    if (l.a < a_floor) {
      l.a = std::min(a_floor, t / 2);
      l.b = std::max((t - l.a) / std::max(n, 1.0), b_floor);
    }
  } else {
    double sw = 0, swn = 0, swnn = 0, swt = 0, swnt = 0;
    for (std::size_t i = s; i <= e; ++i) {
      double n = static_cast<double>(p[i].bytes), t = time_of(p[i]), w = 1.0 / (t * t);
      sw += w;
      swn += w * n;
      swnn += w * n * n;
      swt += w * t;
      swnt += w * n * t;
    }
    double det = sw * swnn - swn * swn;
    l.b        = det > 0 ? (sw * swnt - swn * swt) / det : b_floor;
    l.a        = (swt - l.b * swn) / sw;
    if (l.a < a_floor) {  // refit the slope with the intercept held at its floor
      l.a = a_floor;
      l.b = (swnt - l.a * swn) / swnn;
    }
    if (l.b < b_floor) {  // a flat stretch (small sizes): the smallest slope, intercept refitted
      l.b = b_floor;
      l.a = std::max((swt - l.b * swn) / sw, a_floor);
    }
  }
  for (std::size_t i = s; i <= e; ++i) {
    double t = time_of(p[i]), m = l.a + l.b * static_cast<double>(p[i].bytes);
    l.max_rel_error = std::max(l.max_rel_error, std::abs(m - t) / t);
  }
  return l;
}

}  // namespace

std::uint64_t detect_eager_threshold(const std::vector<platform::PingPongPoint>& p)
{
  // The switch to rendezvous adds a handshake: the time jumps above the trend of the smaller sizes.
  // The trend is the smaller of the two slopes before the candidate (a jump just before would inflate
  // one of them). Candidates: rendezvous sizes from 256 B to 1 MiB, where MPI libraries put the switch.
  double best_jump       = 0.15;
  std::uint64_t best     = 0;
  for (std::size_t i = 2; i + 1 < p.size(); ++i) {
    std::uint64_t next = p[i + 1].bytes;
    if (next < 256 || next > (1u << 20))
      continue;
    auto slope = [&](std::size_t j) {
      double dn = static_cast<double>(p[j].bytes) - static_cast<double>(p[j - 1].bytes);
      return std::max(0.0, (time_of(p[j]) - time_of(p[j - 1])) / dn);
    };
    double trend = std::min(slope(i), slope(i - 1));
    double pred  = time_of(p[i]) + trend * (static_cast<double>(next) - static_cast<double>(p[i].bytes));
    double jump  = (time_of(p[i + 1]) - pred) / pred;
    if (jump > best_jump) {
      best_jump = jump;
      best      = next;
    }
  }
  return best;
}

NetworkFit fit_network(const std::vector<platform::PingPongPoint>& p, double tolerance)
{
  return fit_network(p, detect_eager_threshold(p), tolerance);
}

NetworkFit fit_network(const std::vector<platform::PingPongPoint>& p, std::uint64_t eager_threshold_bytes,
                       double tolerance)
{
  if (p.size() < 2)
    throw InputError({}, "the ping-pong curve needs at least 2 sizes to fit (got " + std::to_string(p.size()) + ")");
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (not(time_of(p[i]) > 0))
      throw InputError({}, "ping-pong time of " + std::to_string(p[i].bytes) + " bytes is not positive");
    if (i > 0 && p[i].bytes <= p[i - 1].bytes)
      throw InternalError("fit_network: sizes must ascend");
  }
  NetworkFit fit;
  // Base bandwidth: the best effective rate seen (large messages); base latency: the smallest message's
  // time less its transfer. Factors then stay near 1 where the curve follows these figures.
  for (const auto& q : p)
    fit.bandwidth_Bps = std::max(fit.bandwidth_Bps, static_cast<double>(q.bytes) / time_of(q));
  fit.latency_s = time_of(p[0]) - static_cast<double>(p[0].bytes) / fit.bandwidth_Bps;
  if (not(fit.latency_s > 0))
    fit.latency_s = time_of(p[0]) / 2;
  fit.eager_threshold_bytes = eager_threshold_bytes;

  const double a_floor = fit.latency_s * 1e-3;          // lf >= 0.001
  const double b_floor = 1.0 / (fit.bandwidth_Bps * 1e3);  // bf <= 1000
  std::size_t s        = 0;
  while (s < p.size()) {
    std::size_t e = s;
    Line best     = fit_line(p, s, s, fit.bandwidth_Bps, a_floor, b_floor);
    // Grow the segment while its line still fits every point; never across the protocol switch.
    while (e + 1 < p.size() && p[e + 1].bytes != fit.eager_threshold_bytes) {
      Line l = fit_line(p, s, e + 1, fit.bandwidth_Bps, a_floor, b_floor);
      if (l.max_rel_error > tolerance)
        break;
      best = l;
      ++e;
    }
    std::uint64_t from = s == 0 ? 0 : p[s].bytes;
    fit.lat_factor.push_back({from, best.a / fit.latency_s});
    fit.bw_factor.push_back({from, 1.0 / (fit.bandwidth_Bps * best.b)});
    s = e + 1;
  }
  return fit;
}

double model_time_s(const NetworkFit& fit, double bytes)
{
  return fit.latency_s * platform::factor_for(fit.lat_factor, bytes) +
         bytes / (fit.bandwidth_Bps * platform::factor_for(fit.bw_factor, bytes));
}

double fit_shared_bandwidth(const NetworkFit& fit, const std::vector<platform::SizedTiming>& exchange)
{
  return fit_shared_bandwidth(fit, exchange, {});
}

double transfer_share(const NetworkFit& fit, double bytes)
{
  double latency  = fit.latency_s * platform::factor_for(fit.lat_factor, bytes);
  double transfer = bytes / (fit.bandwidth_Bps * platform::factor_for(fit.bw_factor, bytes));
  return transfer / (latency + transfer);
}

std::uint64_t transfer_dominated_from(const NetworkFit& fit, const std::vector<std::uint64_t>& sizes)
{
  // Each size's own test (transfer >= 90% of the model's time) rests on the intercept of the segment
  // the size fell into, and the greedy segmentation of a noisy curve can give a short segment a tiny
  // intercept (or a huge one): a full calibration at load 6 fitted the 2-3 KiB segment with a latency
  // factor of 0.26, called 2 KiB transfer-dominated and cut the copy overhead there instead of at
  // 192 KiB. The curve itself turns once, from latency- to transfer-dominated, so the verdicts are fitted
  // with a step: the boundary is the size that leaves the fewest sizes on the wrong side of it (the
  // transfer-dominated ones below, the latency-dominated ones from it on). A short run of wrong verdicts
  // on either side loses against the longer run of right ones around it. Ties go to the smaller size,
  // the first turn, as a test of one size at a time would have it.
  const std::size_t k = sizes.size();
  std::vector<int> dominated(k);
  int dominated_total = 0;
  for (std::size_t i = 0; i < k; ++i) {
    dominated[i] = transfer_share(fit, static_cast<double>(sizes[i])) >= 0.9 ? 1 : 0;
    dominated_total += dominated[i];
  }
  // Boundary at index j (j = k: none): wrong = dominated below j + latency-dominated from j on.
  std::size_t best     = 0;
  int best_wrong       = std::numeric_limits<int>::max();
  int dominated_below  = 0;
  for (std::size_t j = 0; j <= k; ++j) {
    const int latency_from = static_cast<int>(k - j) - (dominated_total - dominated_below);
    const int wrong        = dominated_below + latency_from;
    if (wrong < best_wrong) {
      best_wrong = wrong;
      best       = j;
    }
    if (j < k)
      dominated_below += dominated[j];
  }
  return best < k ? sizes[best] : 0;
}

double fit_shared_bandwidth(const NetworkFit& fit, const std::vector<platform::SizedTiming>& exchange,
                            const std::vector<platform::OverheadPoint>& copy_overhead)
{
  // SimGrid 3.32 applies a flow's bandwidth factor to every link it crosses: a flow of n bytes runs at
  // bf(n) times its share of each link. On the loopback route -- the FATPIPE loopback (B, every flow
  // alone) and the SHARED bus (C, divided) -- a lone flow runs at bf(n)*min(B, C) and each of two
  // opposite flows at bf(n)*min(B, C/2), after the latency L*lf(n). Where an exchange is
  // transfer-dominated (transfer_dominated_from) its measured time gives C/2 = n / ((t - L*lf(n)) * bf(n)).
  std::vector<std::uint64_t> sizes;
  for (const auto& p : exchange)
    sizes.push_back(p.bytes);
  const std::uint64_t from = transfer_dominated_from(fit, sizes);
  std::vector<double> capacities;
  for (const auto& p : exchange) {
    double n        = static_cast<double>(p.bytes);
    double bf       = platform::factor_for(fit.bw_factor, n);
    double latency  = fit.latency_s * platform::factor_for(fit.lat_factor, n);
    double copy     = 2.0 * platform::overhead_for(copy_overhead, n);  // each rank copies both messages
    if (from == 0 || p.bytes < from || not(p.time_s.median > latency + copy))
      continue;
    capacities.push_back(2.0 * n / ((p.time_s.median - latency - copy) * bf));
  }
  if (capacities.empty())
    return 0;
  std::sort(capacities.begin(), capacities.end());
  std::size_t k = capacities.size();
  double median = k % 2 == 1 ? capacities[k / 2] : 0.5 * (capacities[k / 2 - 1] + capacities[k / 2]);
  // Never below B: a lone flow -- the ping-pong -- must keep its calibrated time.
  return std::max(median, fit.bandwidth_Bps);
}

std::vector<platform::OverheadPoint> fit_copy_overhead(const NetworkFit& base,
                                                       const std::vector<platform::PingPongPoint>& pingpong,
                                                       const std::vector<platform::SizedTiming>& exchange,
                                                       double shared_bandwidth_Bps)
{
  // The sizes both curves have; the overhead is 0 from the first size of the transfer-dominated tail on.
  std::vector<std::pair<const platform::SizedTiming*, const platform::PingPongPoint*>> both;
  std::vector<std::uint64_t> sizes;
  for (const auto& e : exchange) {
    auto it = std::find_if(pingpong.begin(), pingpong.end(), [&](const auto& q) { return q.bytes == e.bytes; });
    if (it == pingpong.end())
      continue;
    both.push_back({&e, &*it});
    sizes.push_back(e.bytes);
  }
  const std::uint64_t end_bytes = transfer_dominated_from(base, sizes);  // 0: none
  // The raw overhead at every size below it. The emulator also slows each of two opposite transfers on
  // the shared bus (C/2 each where a lone one gets B): that part of exchange - ping-pong is the bus's,
  // not the cores', and is taken off (else the emulated exchange pays it twice).
  const double B       = base.bandwidth_Bps;
  const double per_two = shared_bandwidth_Bps > 0 ? std::min(B, shared_bandwidth_Bps / 2) : B;
  std::vector<platform::OverheadPoint> raw;
  std::vector<double> one_way;
  for (const auto& [e, q] : both) {
    if (end_bytes > 0 && e->bytes >= end_bytes)
      break;
    double n   = static_cast<double>(e->bytes);
    double bf  = platform::factor_for(base.bw_factor, n);
    double bus = n / bf * (1.0 / per_two - 1.0 / B);
    raw.push_back({e->bytes, std::max(0.0, e->time_s.median - q->one_way_s.median - bus)});
    one_way.push_back(q->one_way_s.median);
  }
  std::vector<platform::OverheadPoint> out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    std::vector<double> w;
    for (std::size_t j = i == 0 ? 0 : i - 1; j <= std::min(i + 1, raw.size() - 1); ++j)
      w.push_back(raw[j].time_s);
    std::sort(w.begin(), w.end());
    // Of two neighbours (the ends) the smaller: an overhead is never made up from one noisy size.
    double smoothed = w.size() == 3 ? w[1] : w[0];
    out.push_back({raw[i].bytes, std::min(smoothed, 0.5 * one_way[i])});
  }
  if (end_bytes > 0 && not out.empty())
    out.push_back({end_bytes, 0.0});
  bool any = std::any_of(out.begin(), out.end(), [](const auto& q) { return q.time_s > 0; });
  return any ? out : std::vector<platform::OverheadPoint>{};
}

NetworkModel fit_network_model(const std::vector<platform::PingPongPoint>& pingpong,
                               const std::vector<platform::SizedTiming>& exchange, double tolerance)
{
  NetworkModel m;
  NetworkFit base = fit_network(pingpong, tolerance);
  // The shared capacity comes from the transfer-dominated sizes, where there is no overhead: fitted
  // first on the plain fit, it tells the overhead fit which part of the exchange's extra time the
  // bus already accounts for; it is fitted again below on the final factors.
  const double bus_Bps = exchange.empty() ? 0.0 : fit_shared_bandwidth(base, exchange);
  m.copy_overhead      = fit_copy_overhead(base, pingpong, exchange, bus_Bps);
  if (m.copy_overhead.empty()) {
    m.fit = base;
  } else {
    // The emulator adds o(n) to every one-way time: the factors model what is left. The protocol switch
    // stays where the measured curve shows it.
    std::vector<platform::PingPongPoint> network_part = pingpong;
    for (auto& q : network_part) {
      double o = platform::overhead_for(m.copy_overhead, static_cast<double>(q.bytes));
      q.one_way_s.median -= o;
      q.one_way_s.min -= o;
      q.one_way_s.max -= o;
    }
    m.fit = fit_network(network_part, base.eager_threshold_bytes, tolerance);
  }
  if (not exchange.empty())
    m.shared_bandwidth_Bps = fit_shared_bandwidth(m.fit, exchange, m.copy_overhead);
  return m;
}

void refit_network(platform::NetworkCalibration& n)
{
  NetworkModel m          = fit_network_model(n.pingpong, n.exchange);
  n.latency_s             = m.fit.latency_s;
  n.bandwidth_Bps         = m.fit.bandwidth_Bps;
  n.eager_threshold_bytes = m.fit.eager_threshold_bytes;
  n.lat_factor            = m.fit.lat_factor;
  n.bw_factor             = m.fit.bw_factor;
  n.shared_bandwidth_Bps  = m.shared_bandwidth_Bps;
  n.copy_overhead         = m.copy_overhead;
}

}  // namespace gridcast::calibrate
