#include "trace_numbered.hpp"

#include "gridcast/models/errors.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

namespace gridcast::models::trace::detail {

namespace {

/// The calls a numbered loop is made of: blocking point-to-point calls with a tag of their own (a
/// receive from any tag says nothing about the iteration).
bool numbered_op(const CallRecord& rec)
{
  return (rec.op == Op::Send || rec.op == Op::Ssend || rec.op == Op::Recv) && rec.tag >= 0;
}

/// Clusters of sorted distinct tags less than `max_gap` apart with at least `min_iterations` members:
/// (first tag, last tag) of each.
std::vector<std::pair<std::int64_t, std::int64_t>> tag_clusters(const std::set<std::int64_t>& tags,
                                                                std::size_t min_iterations, std::int64_t max_gap)
{
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  auto it = tags.begin();
  while (it != tags.end()) {
    std::int64_t first = *it, last = *it;
    std::size_t n = 1;
    for (++it; it != tags.end() && *it - last < max_gap; ++it) {
      last = *it;
      ++n;
    }
    if (n >= min_iterations)
      out.emplace_back(first, last);
  }
  return out;
}

/// A placeholder stands for the run it replaces.
class NumberedFilter final : public CallStream {
public:
  NumberedFilter(CallStreamPtr inner, const std::vector<std::pair<std::size_t, std::size_t>>& runs)
      : inner_(std::move(inner)), runs_(runs)
  {
  }
  bool next(CallRecord& out) override
  {
    if (run_ < runs_.size() && index_ == runs_[run_].first) {
      std::uint64_t line = 0;
      while (index_ < runs_[run_].second) {
        if (not inner_->next(rec_))
          throw InputError({inner_->source(), 0, {}, -1},
                           "the trace ends inside numbered loop " + std::to_string(run_) +
                               " (the profile changed while it was being fitted?)");
        if (line == 0)
          line = rec_.line;
        ++index_;
      }
      out          = CallRecord{};
      out.op       = Op::Sleep;
      out.seconds  = 0;
      out.function = functions_.intern(numbered_placeholder_name(run_));
      out.line     = line;
      ++run_;
      return true;
    }
    if (not inner_->next(out))
      return false;
    ++index_;
    if (out.function >= ids_.size())
      ids_.resize(out.function + 1, kUnmapped);
    std::uint32_t& id = ids_[out.function];
    if (id == kUnmapped)
      id = functions_.intern(inner_->functions().name(out.function));
    out.function = id;
    return true;
  }
  const FunctionTable& functions() const override { return functions_; }
  const std::string& source() const override { return inner_->source(); }

private:
  static constexpr std::uint32_t kUnmapped = ~std::uint32_t{0};
  CallStreamPtr inner_;
  const std::vector<std::pair<std::size_t, std::size_t>>& runs_;
  FunctionTable functions_;
  std::vector<std::uint32_t> ids_;  ///< inner function id -> ours
  CallRecord rec_;
  std::size_t index_ = 0;  ///< of the inner stream's next call
  std::size_t run_   = 0;
};

std::string profile_rank(const NumberedProfile& p, int rank)
{
  return "rank " + std::to_string(rank) + " of " + p.path.string();
}

}  // namespace

std::string numbered_placeholder_name(std::size_t loop) { return "gridcast:numbered-loop-" + std::to_string(loop); }

const std::vector<std::pair<std::size_t, std::size_t>>* NumberedScan::runs(const std::filesystem::path& path,
                                                                          int rank) const
{
  for (const NumberedProfile& p : profiles)
    if (p.path == path)
      return &p.runs.at(static_cast<std::size_t>(rank));
  return nullptr;
}

CallStreamPtr filter_numbered(CallStreamPtr inner, const std::vector<std::pair<std::size_t, std::size_t>>* runs)
{
  if (runs == nullptr || runs->empty())
    return inner;
  return std::make_unique<NumberedFilter>(std::move(inner), *runs);
}

NumberedScan scan_numbered(const std::vector<std::filesystem::path>& paths, std::size_t min_iterations,
                           std::int64_t max_gap)
{
  NumberedScan scan;
  if (min_iterations == 0)
    return scan;
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> clusters_of;  // per profile
  std::vector<std::int64_t> step;
  for (const auto& path : paths) {
    if (not is_profile_dir(path))
      return {};  // the fit reports it
    ProfileDir dir(path);
    // First reading: the tags of the blocking point-to-point calls, all ranks together.
    std::set<std::int64_t> tags;
    for (int r = 0; r < dir.rank_count(); ++r) {
      CallStreamPtr s = dir.open(r);
      CallRecord rec;
      while (s->next(rec))
        if (numbered_op(rec))
          tags.insert(rec.tag);
    }
    std::vector<std::pair<std::int64_t, std::int64_t>> clusters = tag_clusters(tags, min_iterations, max_gap);
    // Second reading: in every rank, each cluster's calls must be one contiguous run of numbered calls
    // whose tags never decrease; a cluster that is not is no loop (its calls stay as they are).
    NumberedProfile p;
    p.path = path;
    p.nw   = dir.info().nw;
    p.np   = dir.info().np;
    std::vector<bool> valid(clusters.size(), true);
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> runs(static_cast<std::size_t>(dir.rank_count()));
    std::vector<std::vector<std::vector<std::pair<std::int64_t, NumberedCallObs>>>> calls(runs.size());
    for (int r = 0; r < dir.rank_count(); ++r) {
      auto& rr = runs[static_cast<std::size_t>(r)];
      auto& rc = calls[static_cast<std::size_t>(r)];
      rr.assign(clusters.size(), {0, 0});
      rc.assign(clusters.size(), {});
      std::vector<bool> open(clusters.size(), false), closed(clusters.size(), false);
      CallStreamPtr s = dir.open(r);
      CallRecord rec;
      std::size_t index = 0;
      int current       = -1;  // the cluster whose run the previous call was in
      for (; s->next(rec); ++index) {
        int c = -1;
        if (numbered_op(rec))
          for (std::size_t k = 0; k < clusters.size(); ++k)
            if (rec.tag >= clusters[k].first && rec.tag <= clusters[k].second)
              c = static_cast<int>(k);
        if (current >= 0 && c != current) {
          closed[static_cast<std::size_t>(current)] = true;
          rr[static_cast<std::size_t>(current)].second = index;
        }
        if (c >= 0) {
          auto cu = static_cast<std::size_t>(c);
          if (closed[cu])
            valid[cu] = false;  // a second run of the same cluster
          if (not open[cu]) {
            open[cu]     = true;
            rr[cu].first = index;
          }
          if (not rc[cu].empty() && rec.tag < rc[cu].back().first)
            valid[cu] = false;  // tags that go back: not an iteration count
          rc[cu].push_back({rec.tag, {0, s->functions().name(rec.function), rec.op, rec.peer, rec.bytes, rec.line}});
        }
        current = c;
      }
      if (current >= 0)
        rr[static_cast<std::size_t>(current)].second = index;
      for (std::size_t k = 0; k < clusters.size(); ++k)
        if (not open[k])
          valid[k] = false;  // a rank without calls in it: no place for the loop in its template
    }
    std::vector<std::pair<std::int64_t, std::int64_t>> kept;
    p.runs.assign(runs.size(), {});
    p.calls.assign(runs.size(), {});
    for (std::size_t k = 0; k < clusters.size(); ++k) {
      if (not valid[k])
        continue;
      kept.push_back(clusters[k]);
      for (std::size_t r = 0; r < runs.size(); ++r) {
        p.runs[r].push_back(runs[r][k]);
        std::vector<NumberedCallObs> cs;
        for (auto& [tag, obs] : calls[r][k]) {
          obs.k = static_cast<std::uint64_t>(tag);  // the tag for now: the step is known once every profile is read
          cs.push_back(std::move(obs));
        }
        p.calls[r].push_back(std::move(cs));
      }
    }
    // The step of each loop: the gcd of the differences between its distinct tags.
    std::vector<std::int64_t> st(kept.size(), 0);
    for (std::size_t k = 0; k < kept.size(); ++k) {
      std::int64_t prev = kept[k].first;
      for (auto it = tags.lower_bound(kept[k].first); it != tags.end() && *it <= kept[k].second; ++it) {
        st[k] = std::gcd(st[k], *it - prev);
        prev  = *it;
      }
    }
    if (not scan.profiles.empty() && kept.size() != step.size())
      return {};  // loops that come and go with the size or the rank count: not modelled
    if (scan.profiles.empty())
      step = st;
    for (std::size_t k = 0; k < st.size(); ++k)
      step[k] = std::gcd(step[k], st[k]);
    clusters_of.push_back(kept);
    scan.profiles.push_back(std::move(p));
  }
  if (step.empty())
    return {};
  for (std::int64_t& s : step)
    s = std::max<std::int64_t>(s, 1);
  scan.step = step;
  for (std::size_t i = 0; i < scan.profiles.size(); ++i) {
    NumberedProfile& p = scan.profiles[i];
    for (std::size_t k = 0; k < step.size(); ++k) {
      const std::int64_t first = clusters_of[i][k].first;
      p.first_tag.push_back(first);
      p.count.push_back(static_cast<std::uint64_t>((clusters_of[i][k].second - first) / step[k] + 1));
      for (auto& rank_calls : p.calls)
        for (NumberedCallObs& c : rank_calls[k])
          c.k = static_cast<std::uint64_t>((static_cast<std::int64_t>(c.k) - first) / step[k]);
    }
  }
  return scan;
}

std::vector<NumberedLoop> fit_numbered(const NumberedScan& scan,
                                       const std::function<std::uint32_t(const std::string&, Op)>& token_of,
                                       const std::function<std::uint32_t(std::size_t)>& placeholder_of,
                                       std::vector<std::string>& warnings)
{
  std::vector<NumberedLoop> out;
  for (std::size_t j = 0; j < scan.loops(); ++j) {
    const std::string name = "numbered loop " + std::to_string(j);
    NumberedLoop loop;
    loop.placeholder = placeholder_of(j);
    loop.tag_step    = scan.step[j];
    std::vector<FitPoint> counts, firsts;
    for (const NumberedProfile& p : scan.profiles) {
      counts.push_back({p.nw, static_cast<double>(p.np), static_cast<double>(p.count[j])});
      firsts.push_back({p.nw, static_cast<double>(p.np), static_cast<double>(p.first_tag[j])});
      loop.members.push_back(p.path.string() + ": tags " + std::to_string(p.first_tag[j]) + " + " +
                             std::to_string(loop.tag_step) + "*k, k < " + std::to_string(p.count[j]));
    }
    loop.count     = fit_formula(counts, true);
    loop.first_tag = fit_formula(firsts, true);

    // The variant of every (profile, rank, iteration): its calls' tokens, in order.
    std::map<std::vector<std::uint32_t>, int> ids;
    // The readings of the iteration index the role may use, in the order NumberedLoop::role_index
    // lists them: (from_end, shift).
    const std::vector<std::pair<bool, int>> kReadings = {{false, 0}, {true, 0}, {false, 1}, {true, 1}};
    std::vector<std::vector<RoleObservation>> readings(kReadings.size());
    // Per observation (same order): where its calls are.
    std::vector<std::tuple<std::size_t, int, std::size_t, std::size_t>> where;  // profile, rank, begin, end
    for (std::size_t pi = 0; pi < scan.profiles.size(); ++pi) {
      const NumberedProfile& p = scan.profiles[pi];
      for (int r = 0; r < p.np; ++r) {
        const std::vector<NumberedCallObs>& cs = p.calls[static_cast<std::size_t>(r)][j];
        std::size_t at = 0;
        for (std::uint64_t k = 0; k < p.count[j]; ++k) {
          std::vector<std::uint32_t> key;
          const std::size_t begin = at;
          for (; at < cs.size() && cs[at].k == k; ++at)
            key.push_back(token_of(cs[at].function, cs[at].op));
          auto [it, fresh] = ids.emplace(key, static_cast<int>(ids.size()));
          if (fresh)
            loop.variants.emplace_back(key.size());
          for (std::size_t x = 0; x < kReadings.size(); ++x) {
            NumberedLoop probe;
            probe.from_end = kReadings[x].first;
            probe.shift    = kReadings[x].second;
            readings[x].push_back({r, p.np, probe.role_index(k, p.count[j]), it->second, p.path.string()});
          }
          where.emplace_back(pi, r, begin, at);
        }
      }
    }
    for (const auto& [key, id] : ids)
      for (std::size_t q = 0; q < key.size(); ++q)
        loop.variants[static_cast<std::size_t>(id)][q].token = key[q];
    try {
      auto [rule, reading] = infer_role_rule(readings);
      loop.rule            = rule;
      loop.from_end        = kReadings[reading].first;
      loop.shift           = kReadings[reading].second;
    } catch (const InputError& e) {
      throw InputError({}, name + " (tags " + loop.first_tag.text() + " + " + std::to_string(loop.tag_step) +
                               "*k): " + e.reason() + "; nor with the iterations counted from the last one");
    }

    // Each position of each variant: its peer as a rank expression of (rank, Np, k), its size.
    for (std::size_t v = 0; v < loop.variants.size(); ++v) {
      for (std::size_t q = 0; q < loop.variants[v].size(); ++q) {
        NumberedCall& call = loop.variants[v][q];
        std::vector<RankExpr> alive;
        bool seen = false, any_peer = false;
        std::string sample, failed;
        std::vector<LoopFitPoint> sizes;
        for (std::size_t o = 0; o < where.size(); ++o) {
          if (readings[0][o].variant != static_cast<int>(v))
            continue;
          const auto& [pi, r, begin, end] = where[o];
          const NumberedProfile& p        = scan.profiles[pi];
          const NumberedCallObs& c        = p.calls[static_cast<std::size_t>(r)][j][begin + q];
          sizes.push_back({p.nw, static_cast<double>(p.np), c.k, static_cast<double>(c.bytes)});
          if (c.peer == kNoRank)
            continue;
          any_peer = true;
          const std::vector<std::uint64_t> idx = {c.k};
          if (not seen) {
            alive = rank_expr_candidates({r, p.np, idx, c.peer});
            seen  = true;
          }
          const bool had = not alive.empty();
          filter_rank_exprs(alive, r, p.np, idx.data(), 1, c.peer);
          if (sample.size() < 200)
            sample += (sample.empty() ? "" : ", ") + profile_rank(p, r) + " in iteration " + std::to_string(c.k) +
                      " -> " + std::to_string(c.peer);
          if (had && alive.empty())
            failed = profile_rank(p, r) + " in iteration " + std::to_string(c.k) + " -> " + std::to_string(c.peer);
        }
        if (any_peer) {
          if (alive.empty())
            throw InputError({}, name + ", variant " + std::to_string(v) + " call " + std::to_string(q) +
                                     ": no rank expression of (rank, Np, k) explains its peer (" + sample +
                                     "; first unexplained: " + failed + ")");
          call.peer = alive.front();
        }
        std::string why;
        call.bytes = fit_loop_formula(sizes, true, why);
        if (not call.bytes) {
          // Not affine in k (a pipeline that carries fewer pieces near the end): the most common size
          // of each point, regressed on (Nw, Np); the other iterations are mismatched, and said so.
          std::map<std::pair<double, double>, std::map<double, std::uint64_t>> hist;
          for (const LoopFitPoint& s : sizes)
            ++hist[{s.nw, s.np}][s.value];
          std::vector<FitPoint> modes;
          for (const auto& [key, h] : hist) {
            auto best = std::max_element(h.begin(), h.end(), [](const auto& a, const auto& b) {
              return a.second < b.second;  // ties: the smaller size (the first)
            });
            modes.push_back({key.first, key.second, best->first});
          }
          call.bytes_mode = fit_formula(modes, true);
          warnings.push_back(name + ", variant " + std::to_string(v) + " call " + std::to_string(q) + ": size " +
                             why + "; fitted on the most common size of each training point");
        }
      }
    }
    out.push_back(std::move(loop));
  }
  return out;
}

}  // namespace gridcast::models::trace::detail
