// Phase sampling and the estimate (docs/reference/sampling.md; seed 003, section III-C, Eq. 1-5): optimal
// allocation, a simple random sample per phase, the stratified estimator and its standard error.
#include "gridcast/models/sampling.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <cmath>
#include <limits>

namespace gridcast::models::sampling {

namespace {

/// Samples per phase: Eq. 5 needs two; auto takes five, so that s_h is less of a guess.
constexpr std::uint64_t kLeastPerPhase = 2;
constexpr std::uint64_t kLeastPerPhaseAuto = 5;

struct Stratum {
  std::uint64_t units = 0;
  double mean = 0, std = 0;  ///< of the proxy
};

/// Eq. 1: `n` samples over the phases in proportion to N_h * sigma_h (to N_h where no phase's proxy
/// varies), at least `least` and at most N_h each, summing to n (largest remainders).
std::vector<std::uint64_t> allocate(const std::vector<Stratum>& strata, std::uint64_t n, std::uint64_t least)
{
  const std::size_t k = strata.size();
  std::vector<std::uint64_t> out(k);
  std::uint64_t given = 0;
  for (std::size_t h = 0; h < k; ++h) {
    out[h] = std::min(least, strata[h].units);
    given += out[h];
  }
  double weight_sum = 0;
  for (const Stratum& s : strata)
    weight_sum += static_cast<double>(s.units) * s.std;
  const bool by_sigma = weight_sum > 0;
  while (given < n) {
    // Share the rest among the phases that can take more, by their weights.
    double open_weight = 0;
    for (std::size_t h = 0; h < k; ++h)
      if (out[h] < strata[h].units)
        open_weight += by_sigma ? static_cast<double>(strata[h].units) * strata[h].std : static_cast<double>(strata[h].units);
    if (not(open_weight > 0)) {
      // The phases that vary are full; the rest go to the others by size.
      bool any = false;
      for (std::size_t h = 0; h < k && given < n; ++h)
        if (out[h] < strata[h].units) {
          ++out[h];
          ++given;
          any = true;
        }
      if (not any)
        break;
      continue;
    }
    const std::uint64_t rest = n - given;
    std::vector<std::pair<double, std::size_t>> remainders;
    std::uint64_t placed = 0;
    for (std::size_t h = 0; h < k; ++h) {
      if (out[h] >= strata[h].units)
        continue;
      const double w = by_sigma ? static_cast<double>(strata[h].units) * strata[h].std : static_cast<double>(strata[h].units);
      const double share = static_cast<double>(rest) * w / open_weight;
      std::uint64_t whole = std::min<std::uint64_t>(static_cast<std::uint64_t>(share), strata[h].units - out[h]);
      out[h] += whole;
      placed += whole;
      remainders.emplace_back(-(share - std::floor(share)), h);
    }
    std::stable_sort(remainders.begin(), remainders.end());
    for (const auto& [r, h] : remainders)
      if (placed < rest && out[h] < strata[h].units) {
        ++out[h];
        ++placed;
      }
    if (placed == 0)
      break;
    given += placed;
  }
  return out;
}

/// The expected half-width over the expected total with allocation `nh`, the proxy standing in for the
/// units' times (Eq. 3-4).
double expected_relative_half_width(const std::vector<Stratum>& strata, const std::vector<std::uint64_t>& nh, double z)
{
  double total = 0, var = 0;
  for (std::size_t h = 0; h < strata.size(); ++h) {
    const double N = static_cast<double>(strata[h].units), n = static_cast<double>(nh[h]);
    total += N * strata[h].mean;
    if (n > 0)
      var += N * N * (1 - n / N) * strata[h].std * strata[h].std / n;
  }
  return total > 0 ? z * std::sqrt(var) / total : 0.0;
}

/// Per unit: whether it is rare, taken whole (kRareShare, kRareOutlier, kRareBudget). The first `transient`
/// units are taken whole anyway and count in no group.
std::vector<bool> rare_units(const Units& units, const Phases& phases, std::uint64_t transient)
{
  std::vector<bool> rare(units.count, false);
  std::vector<std::size_t> calls;  // the `calls F` columns
  for (std::size_t j = 0; j < units.feature_names.size(); ++j)
    if (units.feature_names[j].rfind("calls ", 0) == 0)
      calls.push_back(j);
  std::map<std::vector<double>, std::vector<std::uint64_t>> groups;
  for (std::uint64_t u = transient; u < units.count; ++u) {
    std::vector<double> signature;
    signature.reserve(calls.size());
    for (std::size_t j : calls)
      signature.push_back(j < units.features[u].size() ? units.features[u][j] : 0.0);
    groups[signature].push_back(u);
  }
  const double n = static_cast<double>(units.count - transient);
  const double budget = kRareBudget * static_cast<double>(units.count);
  std::vector<std::vector<std::uint64_t>> candidates;
  if (groups.size() > 1)
    for (const auto& [signature, members] : groups)
      if (static_cast<double>(members.size()) <= kRareShare * n)
        candidates.push_back(members);
  // Rarest first, then by first appearance: deterministic whatever the map's order.
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() < b.size() : a.front() < b.front();
  });
  std::uint64_t taken = 0;
  for (const std::vector<std::uint64_t>& members : candidates) {
    if (static_cast<double>(taken + members.size()) > budget)
      break;
    for (std::uint64_t u : members)
      rare[u] = true;
    taken += members.size();
  }
  // Then the units whose proxy cost is far above the rest of their phase's, furthest first.
  const std::size_t k = static_cast<std::size_t>(phases.k);
  std::vector<double> sum(k), sum2(k);
  std::vector<std::uint64_t> count(k);
  for (std::uint64_t u = transient; u < units.count; ++u)
    if (not rare[u]) {
      const std::size_t h = static_cast<std::size_t>(phases.of_unit[u]);
      sum[h] += units.proxy_s[u];
      sum2[h] += units.proxy_s[u] * units.proxy_s[u];
      ++count[h];
    }
  std::vector<std::pair<double, std::uint64_t>> outliers;  // (-z, unit)
  for (std::uint64_t u = transient; u < units.count; ++u) {
    const std::size_t h = static_cast<std::size_t>(phases.of_unit[u]);
    if (rare[u] || count[h] < 2)
      continue;
    const double c = static_cast<double>(count[h]), mean = sum[h] / c;
    const double sd = std::sqrt(std::max(0.0, (sum2[h] - c * mean * mean) / (c - 1)));
    if (sd > 0 && units.proxy_s[u] > mean + kRareOutlier * sd)
      outliers.emplace_back(-(units.proxy_s[u] - mean) / sd, u);
  }
  std::sort(outliers.begin(), outliers.end());
  for (const auto& [z, u] : outliers) {
    if (static_cast<double>(taken + 1) > budget)
      break;
    rare[u] = true;
    ++taken;
  }
  return rare;
}

/// The phases' strata: their units in loop order (neither transient nor rare) and the proxy's mean and spread.
/// A phase whose units are all transient has nothing left to sample: it is dropped, and `plan`'s phases are
/// renumbered over the ones kept (`plan.formed` says which phase each was).
struct Strata {
  std::vector<Stratum> strata;
  std::vector<std::vector<std::uint64_t>> members;
};

Strata form_strata(const Units& units, const std::vector<bool>& rare, std::size_t k, Plan& plan)
{
  Strata out;
  std::vector<Stratum>& strata = out.strata;
  std::vector<std::vector<std::uint64_t>>& members = out.members;
  strata.resize(k);
  members.resize(k);
  for (std::uint64_t u = plan.transient; u < units.count; ++u) {
    if (rare[u])
      continue;
    const std::size_t h = static_cast<std::size_t>(plan.phase[u]);
    members[h].push_back(u);
    strata[h].mean += units.proxy_s[u];
  }
  for (std::size_t h = k; h-- > 0;)
    if (members[h].empty()) {
      members.erase(members.begin() + static_cast<std::ptrdiff_t>(h));
      strata.erase(strata.begin() + static_cast<std::ptrdiff_t>(h));
    }
  const std::size_t kept = members.size();
  std::vector<int> renumber(k, -1);
  for (std::size_t h = 0; h < kept; ++h) {
    plan.formed.push_back(plan.phase[members[h].front()]);
    renumber[static_cast<std::size_t>(plan.formed.back())] = static_cast<int>(h);
  }
  for (std::uint64_t u = plan.transient; u < units.count; ++u)
    if (not rare[u])
      plan.phase[u] = renumber[static_cast<std::size_t>(plan.phase[u])];
  for (std::size_t h = 0; h < kept; ++h) {
    strata[h].units = members[h].size();
    strata[h].mean /= static_cast<double>(strata[h].units);
    for (std::uint64_t u : members[h])
      strata[h].std += (units.proxy_s[u] - strata[h].mean) * (units.proxy_s[u] - strata[h].mean);
    strata[h].std = strata[h].units > 1 ? std::sqrt(strata[h].std / static_cast<double>(strata[h].units - 1)) : 0.0;
  }
  return out;
}

/// `--sample auto`: the smallest total whose expected half-width is within the margin, allocated by Eq. 1; in a
/// second pass, from the first pass's observed spread and at least the first pass's count per phase.
std::vector<std::uint64_t> size_automatic(const std::vector<Stratum>& strata, std::uint64_t sampleable,
                                          const Request& request, Plan& plan)
{
  const std::size_t kept = strata.size();
  const Request::Observed* observed = request.observed ? &*request.observed : nullptr;
  // Before any sample the degrees of freedom are unknown: z. A second pass knows the first's sample size,
  // and its interval will use Student's t: the quantile at the first pass's n - (phases) degrees of freedom,
  // so that the size it asks for is not the first pass's again when z would call it enough.
  double z = z_of(request.confidence);
  if (observed) {
    std::uint64_t first = 0;
    for (std::uint64_t n : observed->sampled)
      first += n;
    z = t_of(request.confidence, static_cast<double>(std::max<std::uint64_t>(first, kept + 1) - kept));
  }
  std::uint64_t n = 0;
  for (const Stratum& s : strata)
    n += std::min(kLeastPerPhaseAuto, s.units);
  // Double, then bisect: the smallest total whose expected half-width is within the margin.
  std::uint64_t lo = n, hi = n;
  while (hi < sampleable && expected_relative_half_width(strata, allocate(strata, hi, kLeastPerPhaseAuto), z) > request.margin)
    hi = std::min<std::uint64_t>(sampleable, hi * 2);
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (expected_relative_half_width(strata, allocate(strata, mid, kLeastPerPhaseAuto), z) > request.margin)
      lo = mid + 1;
    else
      hi = mid;
  }
  std::vector<std::uint64_t> nh = allocate(strata, lo, kLeastPerPhaseAuto);
  if (observed) {
    std::uint64_t first = 0, total = 0;
    for (std::size_t h = 0; h < kept; ++h) {
      nh[h] = std::min(strata[h].units, std::max(nh[h], observed->sampled[h]));
      first += observed->sampled[h];
      total += nh[h];
    }
    std::ostringstream o;
    o.precision(3);
    o << "auto, second pass: the first pass's " << first << " units gave a half-width of "
      << 100 * observed->half_width_relative << " %, over the margin of " << 100 * request.margin << " %; "
      << total << " units from the spread of their emulated times per phase";
    plan.note = o.str();
  } else {
    plan.note = "auto: " + std::to_string(lo) + " units expected to give a half-width within " +
                std::to_string(request.margin * 100).substr(0, 4) + " % (the allocation's cost proxy per phase)";
  }
  return nh;
}

/// `--sample N`: N units allocated by Eq. 1, raised to two per phase.
std::vector<std::uint64_t> size_fixed(const std::vector<Stratum>& strata, std::uint64_t sampleable,
                                      const Request& request, Plan& plan)
{
  std::uint64_t least = 0;
  for (const Stratum& s : strata)
    least += std::min(kLeastPerPhase, s.units);
  std::uint64_t n = std::min<std::uint64_t>(*request.size, sampleable);
  if (n < least) {
    plan.note = "--sample " + std::to_string(*request.size) + " raised to " + std::to_string(least) + ": " +
                std::to_string(kLeastPerPhase) + " per phase";
    n = least;
  }
  return allocate(strata, n, kLeastPerPhase);
}

/// Draws n_h units in each phase and marks them sampled; every other unit is skipped.
void draw_sample(const Strata& s, const std::vector<std::uint64_t>& nh, std::uint64_t count, std::uint64_t seed,
                 Plan& plan)
{
  const std::size_t kept = s.members.size();
  plan.role.assign(count, Plan::Skipped);
  plan.phase_units.resize(kept);
  plan.phase_sampled = nh;
  for (std::size_t h = 0; h < kept; ++h) {
    plan.phase_units[h] = s.strata[h].units;
    // One unit drawn at random from each of n_h contiguous blocks of the phase's units, in loop order (the
    // phase's units split as evenly as they go): a stratified sample along the loop, so that a phase whose
    // time drifts with the iteration (messages that grow, refinement) is sampled over its whole length.
    SplitMix64 rng(splitmix64(seed ^ (0x9e37'79b9'7f4a'7c15ULL * (h + 1))));
    const std::vector<std::uint64_t>& m = s.members[h];  // ascending
    const std::uint64_t M = m.size(), n = nh[h];
    for (std::uint64_t b = 0; b < n; ++b) {
      const std::uint64_t from = b * M / n, to = (b + 1) * M / n;
      plan.role[m[from + rng.next() % (to - from)]] = Plan::Sampled;
    }
  }
}

/// The transient units and the units with rare calls: one more stratum each, taken whole.
void add_whole_strata(const std::vector<bool>& rare, Plan& plan)
{
  if (plan.transient > 0) {
    for (std::uint64_t u = 0; u < plan.transient; ++u) {
      plan.phase[u] = plan.phases;
      plan.role[u] = Plan::Sampled;
    }
    plan.phase_units.push_back(plan.transient);
    plan.phase_sampled.push_back(plan.transient);
    plan.formed.push_back(Plan::kTransientStratum);
    ++plan.phases;
  }
  if (plan.rare > 0) {
    for (std::uint64_t u = 0; u < rare.size(); ++u)
      if (rare[u]) {
        plan.phase[u] = plan.phases;
        plan.role[u] = Plan::Sampled;
      }
    plan.phase_units.push_back(plan.rare);
    plan.phase_sampled.push_back(plan.rare);
    plan.formed.push_back(Plan::kRareStratum);
    ++plan.phases;
  }
}

/// The unit before each sampled one is emulated as its warm-up, so that the sampled unit starts with the
/// skew the ranks carry into it. A window between collectives gets one or two: a window is a piece of the
/// program's period, and the skew the ranks bring into it depends on which pieces came before, so that a
/// skip can leave a pattern one piece settles with its sign flipped and two do not (varying-solver in
/// docs/reference/sampling.md: always one warm-up, every sampled window came out short of the full run's
/// by 0.01 %, a bias the interval does not count). The sampled windows of each phase take one and two
/// in turn, in loop order, from a random start: what the warm-up's length changes is then a spread
/// between them that the successive differences see, and it cancels in the phase's mean. A loop's
/// iteration holds the whole period; one warm-up suffices there.
void mark_warm_ups(UnitKind kind, std::uint64_t count, std::uint64_t seed, Plan& plan)
{
  SplitMix64 warm(splitmix64(seed ^ 0x5741'524d'5550'0000ULL));  // "WARMUP"
  const bool one_or_two = kind == UnitKind::Windows;
  std::vector<std::uint8_t> two(static_cast<std::size_t>(plan.phases));
  for (std::uint8_t& t : two)
    t = static_cast<std::uint8_t>(warm.next() & 1);
  for (std::uint64_t u = 1; u < count; ++u)
    if (plan.role[u] == Plan::Sampled && plan.role[u - 1] == Plan::Skipped) {
      plan.role[u - 1] = Plan::WarmUp;
      if (not one_or_two)
        continue;
      std::uint8_t& t = two[static_cast<std::size_t>(plan.phase[u])];
      if (t != 0 && u >= 2 && plan.role[u - 2] == Plan::Skipped)
        plan.role[u - 2] = Plan::WarmUp;
      t ^= 1;
    }
}

}  // namespace

double z_of(double confidence)
{
  if (not(confidence > 0 && confidence < 1))
    throw InternalError("z_of: confidence outside (0, 1)");
  return boost::math::quantile(boost::math::normal(), 0.5 + confidence / 2);
}

double t_of(double confidence, double degrees_of_freedom)
{
  if (not(degrees_of_freedom > 0))
    throw InternalError("t_of: degrees of freedom <= 0");
  if (std::isinf(degrees_of_freedom))
    return z_of(confidence);
  return boost::math::quantile(boost::math::students_t(degrees_of_freedom), 0.5 + confidence / 2);
}

Plan plan_sample(const Units& units, const Phases& phases, const Request& request)
{
  if (units.count == 0 || phases.of_unit.size() != units.count)
    throw InternalError("plan_sample: no units, or phases of other units");
  Plan plan;
  plan.loop_iterations = units.loop_iterations;
  plan.phase = phases.of_unit;
  plan.phases = phases.k;
  plan.confidence = request.confidence;
  plan.margin = request.margin;
  plan.automatic = not request.size.has_value();
  plan.transient = std::min<std::uint64_t>(kTransientUnits, units.count / 4);
  const std::vector<bool> rare = rare_units(units, phases, plan.transient);
  plan.rare = static_cast<std::uint64_t>(std::count(rare.begin(), rare.end(), true));
  Strata s = form_strata(units, rare, static_cast<std::size_t>(phases.k), plan);
  const std::size_t kept = s.members.size();
  const Request::Observed* observed = request.observed ? &*request.observed : nullptr;
  if (observed && (observed->mean_s.size() != kept || observed->std_s.size() != kept || observed->sampled.size() != kept))
    throw InternalError("plan_sample: the first pass has " + std::to_string(observed->mean_s.size()) +
                        " strata, this plan " + std::to_string(kept));
  if (observed)
    for (std::size_t h = 0; h < kept; ++h) {
      s.strata[h].mean = observed->mean_s[h];
      s.strata[h].std = observed->std_s[h];
    }
  const std::uint64_t sampleable = units.count - plan.transient - plan.rare;
  const std::vector<std::uint64_t> nh = plan.automatic ? size_automatic(s.strata, sampleable, request, plan)
                                                       : size_fixed(s.strata, sampleable, request, plan);
  draw_sample(s, nh, units.count, request.seed, plan);
  plan.phases = static_cast<int>(kept);
  add_whole_strata(rare, plan);
  mark_warm_ups(units.kind, units.count, request.seed, plan);
  return plan;
}

Estimate estimate_total(const Plan& plan, const std::vector<double>& values)
{
  Estimate e;
  e.phases.resize(static_cast<std::size_t>(plan.phases));
  std::vector<double> sum(e.phases.size()), sum2(e.phases.size());
  for (std::size_t u = 0; u < plan.role.size(); ++u) {
    PhaseEstimate& p = e.phases[static_cast<std::size_t>(plan.phase[u])];
    ++p.units;
    if (plan.role[u] != Plan::Sampled)
      continue;
    ++p.sampled;
    sum[static_cast<std::size_t>(plan.phase[u])] += values.at(u);
  }
  double var = 0, df_denominator = 0;
  for (std::size_t h = 0; h < e.phases.size(); ++h) {
    PhaseEstimate& p = e.phases[h];
    if (p.sampled == 0)
      throw InternalError("estimate_total: phase " + std::to_string(h) + " has no sampled unit");
    p.mean = sum[h] / static_cast<double>(p.sampled);
    // Eq. 5's spread, by successive differences of the sampled units in loop order (Wolter's estimator for
    // a sample of one unit per contiguous block): s^2 = sum (y_i - y_{i-1})^2 / (2 (n - 1)). Without a drift
    // along the loop it estimates what Eq. 5 does; with one it leaves the drift out, as the blocks do.
    bool first = true;
    double previous = 0;
    for (std::size_t u = 0; u < plan.role.size(); ++u)
      if (plan.role[u] == Plan::Sampled && static_cast<std::size_t>(plan.phase[u]) == h) {
        if (not first)
          sum2[h] += (values[u] - previous) * (values[u] - previous);
        previous = values[u];
        first = false;
      }
    p.std = p.sampled > 1 ? std::sqrt(sum2[h] / (2.0 * static_cast<double>(p.sampled - 1))) : 0.0;
    const double N = static_cast<double>(p.units), n = static_cast<double>(p.sampled);
    e.total += N * p.mean;
    // Eq. 4 times N: the standard error of the total, with the finite-population correction.
    const double part = N * N * (1 - n / N) * p.std * p.std / n;
    var += part;
    if (part > 0)
      df_denominator += part * part / (n - 1);
  }
  e.standard_error = std::sqrt(var);
  // Satterthwaite: (sum of the phases' variance terms)^2 over the sum of each squared over its n_h - 1.
  e.degrees_of_freedom = df_denominator > 0 ? var * var / df_denominator : std::numeric_limits<double>::infinity();
  e.half_width = t_of(plan.confidence, e.degrees_of_freedom) * e.standard_error;
  return e;
}

}  // namespace gridcast::models::sampling
