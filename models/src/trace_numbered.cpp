#include "trace_numbered.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <cmath>
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
  NumberedFilter(CallStreamPtr inner, const std::vector<Cut>& cuts) : inner_(std::move(inner)), cuts_(cuts) {}
  bool next(CallRecord& out) override
  {
    if (cut_ < cuts_.size() && index_ == cuts_[cut_].begin) {
      std::uint64_t line = 0;
      while (index_ < cuts_[cut_].end) {
        if (not inner_->next(rec_))
          throw InputError({inner_->source(), 0, {}, -1},
                           "the trace ends inside " + cuts_[cut_].placeholder +
                               " (the profile changed while it was being fitted?)");
        if (line == 0)
          line = rec_.line;
        ++index_;
      }
      out          = CallRecord{};
      out.op       = Op::Sleep;
      out.seconds  = 0;
      out.function = functions_.table.intern(cuts_[cut_].placeholder);
      out.line     = line;
      ++cut_;
      return true;
    }
    if (not inner_->next(out))
      return false;
    ++index_;
    out.function = functions_.map(inner_->functions(), out.function);
    return true;
  }
  const FunctionTable& functions() const override { return functions_.table; }
  const std::string& source() const override { return inner_->source(); }

private:
  CallStreamPtr inner_;
  const std::vector<Cut>& cuts_;
  FunctionIds functions_;
  CallRecord rec_;
  std::size_t index_ = 0;  ///< of the inner stream's next call
  std::size_t cut_   = 0;
};

/// A blocking point-to-point call outside the numbered loops, as the tree recognition reads it.
struct P2p {
  std::size_t index = 0;
  bool send = false;
  std::int32_t peer = 0, tag = 0;
  std::uint64_t bytes = 0;
  std::uint32_t function = 0;  ///< into the profile's table of names (profile_trees' `names`)
};

/// Blocking calls kept per profile for the tree recognition; beyond, a profile has no trees (a code with
/// millions of blocking sends would otherwise hold them all in memory; HPL has a few hundred per rank).
constexpr std::size_t kTreeCallBudget = std::size_t{1} << 22;

/// The binomial trees of one profile: per rank, the maximal runs of consecutive same-tag blocking calls
/// outside the numbered loops. Every rank must have as many runs; run q of every rank is parsed jointly,
/// tree after tree: the (kind, root) whose calls come next in every rank, with one size (the root is
/// whoever the calls say: a tree rooted elsewhere gives some rank other calls). Else there are none
/// (`ok` false).
std::vector<std::vector<TreeObs>> profile_trees(const std::vector<std::vector<P2p>>& p2p, int np,
                                                const FunctionTable& names,
                                                std::vector<std::vector<std::pair<std::size_t, std::size_t>>>& runs,
                                                bool& ok)
{
  ok = true;
  std::vector<std::vector<TreeObs>> seqs;
  runs.assign(p2p.size(), {});
  // Each rank's runs: [begin, end) into its p2p list.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> spans(p2p.size());
  for (std::size_t r = 0; r < p2p.size(); ++r) {
    const auto& calls = p2p[r];
    for (std::size_t i = 0; i < calls.size();) {
      std::size_t j = i + 1;
      while (j < calls.size() && calls[j].index == calls[j - 1].index + 1 && calls[j].tag == calls[i].tag)
        ++j;
      spans[r].emplace_back(i, j);
      i = j;
    }
    if (spans[r].size() != spans[0].size() || np <= 1) {
      ok = false;
      return {};
    }
  }
  std::vector<std::size_t> at(p2p.size());
  for (std::size_t q = 0; q < spans[0].size(); ++q) {
    std::vector<TreeObs> seq;
    for (std::size_t r = 0; r < p2p.size(); ++r)
      at[r] = spans[r][q].first;
    auto done = [&] {
      for (std::size_t r = 0; r < p2p.size(); ++r)
        if (at[r] < spans[r][q].second)
          return false;
      return true;
    };
    while (not done()) {
      bool found = false;
      for (TreeOp::Kind kind : {TreeOp::Kind::Bcast, TreeOp::Kind::Reduce}) {
        for (int root = 0; root < np && not found; ++root) {
          std::optional<std::uint64_t> bytes;
          std::optional<std::int32_t> tag;
          bool fits = true;
          for (std::size_t r = 0; r < p2p.size() && fits; ++r) {
            const auto want = tree_calls(kind, root, static_cast<int>(r), np);
            if (at[r] + want.size() > spans[r][q].second) {
              fits = false;
              break;
            }
            for (std::size_t i = 0; i < want.size() && fits; ++i) {
              const P2p& c = p2p[r][at[r] + i];
              fits = c.send == want[i].first && c.peer == want[i].second && (not bytes || c.bytes == *bytes) &&
                     (not tag || c.tag == *tag);
              bytes = c.bytes;
              tag   = c.tag;
            }
          }
          if (not fits || not bytes)
            continue;
          TreeObs t{kind, root, *tag, *bytes, {}, {}};
          for (std::size_t r = 0; r < p2p.size(); ++r) {
            const auto want = tree_calls(kind, root, static_cast<int>(r), np);
            for (std::size_t i = 0; i < want.size(); ++i) {
              const P2p& c = p2p[r][at[r] + i];
              (c.send ? t.send_fn : t.recv_fn) = names.name(c.function);
            }
            at[r] += want.size();
          }
          seq.push_back(std::move(t));
          found = true;
        }
        if (found)
          break;
      }
      if (not found) {
        ok = false;
        return {};
      }
    }
    for (std::size_t r = 0; r < p2p.size(); ++r)
      runs[r].emplace_back(p2p[r][spans[r][q].first].index, p2p[r][spans[r][q].second - 1].index + 1);
    seqs.push_back(std::move(seq));
  }
  return seqs;
}

std::string profile_rank(const NumberedProfile& p, int rank)
{
  return "rank " + std::to_string(rank) + " of " + p.path.string();
}

}  // namespace

std::string numbered_placeholder_name(std::size_t loop) { return "gridcast:numbered-loop-" + std::to_string(loop); }
std::string tree_placeholder_name(std::size_t seq) { return "gridcast:tree-sequence-" + std::to_string(seq); }

const std::vector<Cut>* NumberedScan::cuts(const std::filesystem::path& path, int rank) const
{
  for (const NumberedProfile& p : profiles)
    if (p.path == path)
      return &p.cuts.at(static_cast<std::size_t>(rank));
  return nullptr;
}

CallStreamPtr filter_numbered(CallStreamPtr inner, const std::vector<Cut>* cuts)
{
  if (cuts == nullptr || cuts->empty())
    return inner;
  return std::make_unique<NumberedFilter>(std::move(inner), *cuts);
}

namespace {

/// The second reading of one profile: per rank, each tag cluster's run of calls (begin, end) and its
/// calls by tag; the blocking point-to-point calls with their cluster (-1: none), for the tree search;
/// which clusters are loops (one contiguous run per rank, tags never decreasing).
struct ClusterReading {
  std::vector<bool> valid;
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> runs;
  std::vector<std::vector<std::vector<std::pair<std::int64_t, NumberedCallObs>>>> calls;
  std::vector<std::vector<std::pair<int, P2p>>> p2p;
  FunctionTable names;
  std::size_t kept_calls = 0;
};

ClusterReading read_clusters(const ProfileDir& dir, const std::vector<std::pair<std::int64_t, std::int64_t>>& clusters)
{
  ClusterReading cr;
  auto& valid      = cr.valid;
  auto& runs       = cr.runs;
  auto& calls      = cr.calls;
  auto& p2p        = cr.p2p;
  auto& names      = cr.names;
  auto& kept_calls = cr.kept_calls;
  valid.assign(clusters.size(), true);
  runs.resize(static_cast<std::size_t>(dir.rank_count()));
  calls.resize(runs.size());
  p2p.resize(runs.size());
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
      if (numbered_op(rec)) {
        for (std::size_t k = 0; k < clusters.size(); ++k)
          if (rec.tag >= clusters[k].first && rec.tag <= clusters[k].second)
            c = static_cast<int>(k);
        if (rec.op != Op::Ssend && kept_calls++ < kTreeCallBudget)  // trees of standard sends and receives
          p2p[static_cast<std::size_t>(r)].push_back(
              {c, {index, rec.op == Op::Send, rec.peer, rec.tag, rec.bytes,
                   names.intern(s->functions().name(rec.function))}});
      }
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
  return cr;
}

/// After every profile is read: tree sequences kept only where every profile has the same trees, loops
/// dropped where they come and go, each loop's step and counts, and the cuts each profile's streams get.
NumberedScan finish_scan(NumberedScan scan, std::vector<std::int64_t> step, bool loops_agree,
                         const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>& clusters_of,
                         const std::vector<std::vector<std::vector<std::pair<std::size_t, std::size_t>>>>& tree_runs_of)
{
  // Tree sequences: as many in every profile, the same trees (kind, tag) in each; sizes may differ.
  bool trees_agree = true;
  for (const NumberedProfile& p : scan.profiles) {
    const auto& ref = scan.profiles.front().trees;
    trees_agree = trees_agree && p.trees.size() == ref.size();
    for (std::size_t q = 0; trees_agree && q < ref.size(); ++q) {
      trees_agree = p.trees[q].size() == ref[q].size();
      for (std::size_t t = 0; trees_agree && t < ref[q].size(); ++t)
        trees_agree = p.trees[q][t].kind == ref[q][t].kind && p.trees[q][t].tag == ref[q][t].tag;
    }
  }
  if (not trees_agree)
    for (NumberedProfile& p : scan.profiles)
      p.trees.clear();
  scan.tree_sequences = scan.profiles.empty() ? 0 : scan.profiles.front().trees.size();
  if (not loops_agree) {
    step.clear();
    for (NumberedProfile& p : scan.profiles) {
      p.runs.assign(p.runs.size(), {});
      p.calls.assign(p.calls.size(), {});
    }
  }
  if (step.empty() && scan.tree_sequences == 0)
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
    // What the placeholders replace, in stream order.
    p.cuts.assign(p.runs.size(), {});
    for (std::size_t r = 0; r < p.runs.size(); ++r) {
      for (std::size_t k = 0; k < p.runs[r].size(); ++k)
        p.cuts[r].push_back({p.runs[r][k].first, p.runs[r][k].second, numbered_placeholder_name(k)});
      if (scan.tree_sequences > 0)
        for (std::size_t q = 0; q < tree_runs_of[i][r].size(); ++q)
          p.cuts[r].push_back({tree_runs_of[i][r][q].first, tree_runs_of[i][r][q].second, tree_placeholder_name(q)});
      std::sort(p.cuts[r].begin(), p.cuts[r].end(), [](const Cut& a, const Cut& b) { return a.begin < b.begin; });
    }
  }
  return scan;
}

}  // namespace

NumberedScan scan_numbered(const std::vector<std::filesystem::path>& paths, std::size_t min_iterations,
                           std::int64_t max_gap)
{
  NumberedScan scan;
  if (min_iterations == 0)
    return scan;
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> clusters_of;  // per profile
  std::vector<std::vector<std::vector<std::pair<std::size_t, std::size_t>>>> tree_runs_of;  // per profile, rank
  bool loops_agree = true;
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
    ClusterReading cr = read_clusters(dir, clusters);
    auto& valid      = cr.valid;
    auto& runs       = cr.runs;
    auto& calls      = cr.calls;
    auto& p2p        = cr.p2p;
    auto& names      = cr.names;
    const std::size_t kept_calls = cr.kept_calls;
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
    // Binomial trees among the blocking calls outside the loops.
    {
      std::vector<std::vector<P2p>> outside(p2p.size());
      for (std::size_t r = 0; r < p2p.size(); ++r)
        for (auto& [c, call] : p2p[r])
          if (c < 0 || not valid[static_cast<std::size_t>(c)])
            outside[r].push_back(std::move(call));
      bool ok = kept_calls <= kTreeCallBudget;
      std::vector<std::vector<std::pair<std::size_t, std::size_t>>> tree_runs;
      if (ok)
        p.trees = profile_trees(outside, p.np, names, tree_runs, ok);
      if (not ok)
        p.trees.clear();
      tree_runs_of.push_back(ok ? tree_runs : decltype(tree_runs)(p2p.size()));
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
      loops_agree = false;  // loops that come and go with the size or the rank count: not modelled
    if (scan.profiles.empty())
      step = st;
    for (std::size_t k = 0; k < st.size(); ++k)
      step[k] = std::gcd(step[k], st[k]);
    clusters_of.push_back(kept);
    scan.profiles.push_back(std::move(p));
  }
  return finish_scan(std::move(scan), std::move(step), loops_agree, clusters_of, tree_runs_of);
}

namespace {

/// A tree's root as a formula of (Nw, Np) taken modulo Np: the observed roots as they are (a fixed
/// rank), else lifted by multiples of Np onto a line in Nw (the owner of panel Nw / nb of a block-cyclic
/// distribution, HPL's root of the back substitution's last broadcast).
Formula fit_root(const std::vector<FitPoint>& roots, std::size_t seq, std::size_t tree)
{
  auto reproduces = [&](const Formula& f) {
    for (const FitPoint& p : roots) {
      const auto np = static_cast<std::int64_t>(p.np);
      const auto v  = static_cast<std::int64_t>(std::llround(f.eval(p.nw, p.np)));
      if (((v % np) + np) % np != static_cast<std::int64_t>(p.value))
        return false;
    }
    return true;
  };
  Formula f = fit_formula(roots, true);
  if (reproduces(f) && (not f.cv_error || *f.cv_error == 0))
    return f;
  // Lifted: the roots are a + b Nw reduced modulo Np (a tree rooted at the owner of panel Nw / nb). Two
  // points of different Nw and their lifts root + m Np (m < 64) give (a, b); the pair that reproduces
  // every point, with the smallest |a| (then |b|), is taken, regressed again for its text.
  std::optional<std::pair<double, double>> best;
  const FitPoint& p0 = roots.front();
  for (const FitPoint& p1 : roots) {
    if (p1.nw == p0.nw)
      continue;
    for (int m0 = 0; m0 < 64; ++m0)
      for (int m1 = 0; m1 < 64; ++m1) {
        const double v0 = p0.value + m0 * p0.np, v1 = p1.value + m1 * p1.np;
        const double slope = (v1 - v0) / (p1.nw - p0.nw), icpt = v0 - slope * p0.nw;
        if (slope <= 0)
          continue;
        bool all = true;
        for (const FitPoint& p : roots) {
          const double v = icpt + slope * p.nw;
          const auto np  = static_cast<std::int64_t>(p.np);
          const auto vi  = static_cast<std::int64_t>(std::llround(v));
          all = all && std::abs(v - static_cast<double>(vi)) < 1e-9 && ((vi % np) + np) % np == static_cast<std::int64_t>(p.value);
        }
        if (all && (not best || std::make_pair(std::abs(icpt), slope) < std::make_pair(std::abs(best->second), best->first)))
          best = std::make_pair(slope, icpt);
      }
    break;  // the first other size decides; every point is checked anyway
  }
  if (best) {
    std::vector<FitPoint> lifted = roots;
    for (FitPoint& p : lifted)
      p.value = best->second + best->first * p.nw;
    Formula g = fit_formula(lifted, true);
    if (reproduces(g))
      return g;
  }
  throw InputError({}, "tree sequence " + std::to_string(seq) + ", tree " + std::to_string(tree) +
                           ": no formula of (Nw, Np) modulo Np gives its root at every training point");
}

}  // namespace

std::vector<TreeSequence> fit_trees(const NumberedScan& scan,
                                    const std::function<std::uint32_t(const std::string&, Op, std::int32_t)>& token_of,
                                    const std::function<std::uint32_t(std::size_t)>& placeholder_of)
{
  std::vector<TreeSequence> out;
  for (std::size_t q = 0; q < scan.tree_sequences; ++q) {
    TreeSequence seq;
    seq.placeholder = placeholder_of(q);
    const auto& ref = scan.profiles.front().trees[q];
    for (std::size_t t = 0; t < ref.size(); ++t) {
      TreeOp op;
      op.kind = ref[t].kind;
      op.tag  = ref[t].tag;
      std::vector<FitPoint> sizes, roots;
      std::string send_fn, recv_fn;
      for (const NumberedProfile& p : scan.profiles) {
        const TreeObs& o = p.trees[q][t];
        sizes.push_back({p.nw, static_cast<double>(p.np), static_cast<double>(o.bytes)});
        roots.push_back({p.nw, static_cast<double>(p.np), static_cast<double>(o.root)});
        if (send_fn.empty())
          send_fn = o.send_fn;
        if (recv_fn.empty())
          recv_fn = o.recv_fn;
      }
      if (send_fn.empty() || recv_fn.empty())
        throw InternalError("fit_trees: a tree without sends or receives");
      op.bytes      = fit_formula(sizes, true);
      op.root       = fit_root(roots, q, t);
      op.send_token = token_of(send_fn, Op::Send, op.tag);
      op.recv_token = token_of(recv_fn, Op::Recv, op.tag);
      seq.ops.push_back(std::move(op));
    }
    for (const NumberedProfile& p : scan.profiles)
      seq.powers_of_two = seq.powers_of_two && (p.np & (p.np - 1)) == 0;
    out.push_back(std::move(seq));
  }
  return out;
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

namespace gridcast::models::trace {

std::vector<std::pair<bool, int>> tree_calls(TreeOp::Kind kind, int root, int rank, int np)
{
  std::vector<std::pair<bool, int>> out;
  if (np <= 1)
    return out;
  const int dist = ((rank - root) % np + np) % np;
  auto world     = [&](int d) { return (root + d) % np; };
  if (kind == TreeOp::Kind::Bcast) {
    // HPL_broadcast: from the top level down; a rank receives at the level of its lowest set bit, then
    // sends at every level below it.
    int top = 1;
    while (top * 2 < np)
      top *= 2;
    for (int ip2 = top; ip2 >= 1; ip2 /= 2) {
      if ((dist & (2 * ip2 - 1) & ~ip2) != 0)
        continue;  // a lower bit set: this rank is not in the tree at this level yet
      const int partner = dist ^ ip2;
      if ((dist & ip2) != 0)
        out.emplace_back(false, world(partner));
      else if (partner < np)
        out.emplace_back(true, world(partner));
    }
    return out;
  }
  // HPL_reduce (Np a power of two): from the bottom level up; a rank receives from a child at every level
  // below its lowest set bit, then sends to its parent and is done.
  int mask = 0;
  for (int ip2 = 1; ip2 < np; ip2 *= 2) {
    if ((dist & mask) == 0) {
      const int partner = dist ^ ip2;
      if ((dist & ip2) != 0)
        out.emplace_back(true, world(partner));
      else if (partner < np)
        out.emplace_back(false, world(partner));
    }
    mask ^= ip2;
  }
  return out;
}

}  // namespace gridcast::models::trace
