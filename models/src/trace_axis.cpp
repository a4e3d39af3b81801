#include "trace_axis.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include <algorithm>
#include <tuple>

namespace gridcast::models::trace::detail {

namespace {

constexpr int kFree  = -1;  ///< a call that completes requests (wait, waitall): it belongs to the block it is in
constexpr int kOther = -2;  ///< any other call: it ends a run of per-axis calls

/// One call as the scan reads it.
struct ScanCall {
  AxisElem elem;
  int axis = kOther;
  Op op = Op::Compute;
  std::int64_t request = kNoRequest;
  std::vector<std::int64_t> requests;
  std::uint64_t bytes = 0, recv_bytes = 0;
};

/// Consecutive calls whose axes never decrease, split into one block per axis.
struct Block {
  int axis = 0;
  std::size_t begin = 0, end = 0;
};
struct Run {
  std::vector<Block> blocks;
};

bool point_to_point(Op op)
{
  return op == Op::Send || op == Op::Ssend || op == Op::Isend || op == Op::Issend || op == Op::Recv ||
         op == Op::Irecv || op == Op::Sendrecv;
}
bool scan_creates_request(const ScanCall& c)
{
  return c.op == Op::Isend || c.op == Op::Issend || c.op == Op::Irecv ||
         (c.request != kNoRequest && is_collective(c.op));
}

/// The axis of the grid along which every rank field of a point-to-point call is a face neighbour (not
/// the rank itself), with the direction of each; kOther where there is none, or more than one.
void label(ScanCall& c, std::int32_t peer, std::int32_t src, int rank, const std::vector<int>& dims)
{
  if (c.op == Op::Wait || c.op == Op::Waitall) {
    c.axis = kFree;
    return;
  }
  c.axis = kOther;
  if (not point_to_point(c.op) || (peer == kNoRank && src == kNoRank) || (peer != kNoRank && peer < 0) ||
      (src != kNoRank && src < 0))
    return;
  int found = kOther;
  for (int a = 0; a < static_cast<int>(dims.size()); ++a) {
    if (dims[static_cast<std::size_t>(a)] < 2)
      continue;
    const int lo = grid_neighbour(rank, dims, a, -1), hi = grid_neighbour(rank, dims, a, 1);
    auto dir = [&](std::int32_t v) { return v == kNoRank ? 0 : v == lo ? -1 : v == hi ? 1 : 2; };
    const int dp = dir(peer), ds = dir(src);
    if (dp == 2 || ds == 2)
      continue;
    if (found != kOther)
      return;  // a neighbour along two axes: ambiguous
    found          = a;
    c.elem.peer_dir = dp;
    c.elem.src_dir  = ds;
  }
  c.axis = found;
}

/// `a` and `b` are the same calls along an axis of extent class `cls`; directions count only where the
/// axis has more than 2 ranks (on 2, the upper and lower neighbours are one rank).
bool same_calls(const AxisElem* a, const AxisElem* b, std::size_t n, int cls)
{
  for (std::size_t i = 0; i < n; ++i)
    if (a[i].key != b[i].key || (cls == 2 && (a[i].peer_dir != b[i].peer_dir || a[i].src_dir != b[i].src_dir)))
      return false;
  return true;
}

std::vector<AxisElem> elems(const std::vector<ScanCall>& calls, const Block& b)
{
  std::vector<AxisElem> out;
  for (std::size_t i = b.begin; i < b.end; ++i)
    out.push_back(calls[i].elem);
  return out;
}

/// Every call's AxisElem, in order (what same_calls compares).
std::vector<AxisElem> all_elems(const std::vector<ScanCall>& calls)
{
  std::vector<AxisElem> out;
  out.reserve(calls.size());
  for (const ScanCall& c : calls)
    out.push_back(c.elem);
  return out;
}

std::vector<Run> runs_of(const std::vector<ScanCall>& calls)
{
  std::vector<Run> runs;
  Run cur;
  bool in  = false;
  auto close = [&](std::size_t at) {
    if (not in)
      return;
    cur.blocks.back().end = at;
    runs.push_back(std::move(cur));
    cur = Run{};
    in  = false;
  };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const int a = calls[i].axis;
    if (a >= 0) {
      if (in && a >= cur.blocks.back().axis) {
        if (a > cur.blocks.back().axis) {
          cur.blocks.back().end = i;
          cur.blocks.push_back({a, i, 0});
        }
        continue;
      }
      close(i);
      cur.blocks.push_back({a, i, 0});
      in = true;
    } else if (a == kOther) {
      close(i);
    }
  }
  close(calls.size());
  return runs;
}

/// A rank's calls, read through the numbered loops' cuts, labelled on the grid `dims`.
std::vector<ScanCall> read_rank(const ProfileDir& dir, const NumberedScan& numbered, int rank, const std::vector<int>& dims,
                                std::map<CallToken, std::uint32_t>& key_ids, std::vector<CallToken>& keys)
{
  std::vector<ScanCall> out;
  CallStreamPtr s = filter_numbered(dir.open(rank), numbered.cuts(dir.path(), rank));
  CallRecord rec;
  while (s->next(rec)) {
    ScanCall c;
    CallToken t;
    t.function = s->functions().name(rec.function);
    t.op       = rec.op;
    t.tag      = rec.tag;
    t.recv_tag = rec.recv_tag;
    t.comm     = rec.comm;
    auto [it, fresh] = key_ids.emplace(t, static_cast<std::uint32_t>(keys.size()));
    if (fresh)
      keys.push_back(t);
    c.elem.key   = it->second;
    c.op         = rec.op;
    c.request    = rec.request;
    c.requests   = rec.requests;
    c.bytes      = rec.bytes;
    c.recv_bytes = rec.recv_bytes;
    label(c, rec.peer, rec.src, rank, dims);
    out.push_back(std::move(c));
  }
  return out;
}

/// For each call, the number of requests pending just before it (and after the last call, at the end),
/// and for each completion the distances back to the requests it completes, counted in creations.
struct Requests {
  std::vector<std::size_t> pending_before;
  std::vector<std::int64_t> created_before;  ///< creations before each call
  std::map<std::size_t, std::vector<std::int64_t>> ordinals;  ///< completion call -> creation ordinals
};
Requests requests_of(const std::vector<ScanCall>& calls)
{
  Requests r;
  std::map<std::int64_t, std::int64_t> open;  // request -> creation ordinal
  std::int64_t created = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    r.pending_before.push_back(open.size());
    r.created_before.push_back(created);
    const ScanCall& c = calls[i];
    if (scan_creates_request(c)) {
      open[c.request] = created++;
      continue;
    }
    auto complete = [&](std::int64_t q, bool forget) {
      auto it = open.find(q);
      r.ordinals[i].push_back(it == open.end() ? -1 : it->second);
      if (it != open.end() && forget)
        open.erase(it);
    };
    if (c.request != kNoRequest)
      complete(c.request, c.op == Op::Wait);
    for (std::int64_t q : c.requests)
      complete(q, c.op == Op::Waitall);
  }
  r.pending_before.push_back(open.size());
  r.created_before.push_back(created);
  return r;
}

struct SigData {
  std::vector<AxisElem> middle;
  bool last_exact = true;  ///< every run's last axis had exactly the middle's calls
  std::map<int, std::vector<std::vector<AxisElem>>> first;  ///< by the first axis' class
};

/// The extent class (1, 2, more) of each axis of a grid.
std::vector<int> classes_of(const std::vector<int>& dims)
{
  std::vector<int> c;
  for (int e : dims)
    c.push_back(AxisSweep::extent_class(e));
  return c;
}

constexpr int kDims = 3;

/// What learning found: the sweeps' signatures, and whether some training grid has an axis of one rank.
struct Learned {
  std::map<std::pair<int, std::vector<std::uint32_t>>, SigData> sigs;
  bool extent_one = false;
};

Learned learn_sweeps(const std::vector<std::filesystem::path>& paths, const NumberedScan& numbered,
                     std::map<CallToken, std::uint32_t>& key_ids, std::vector<CallToken>& keys)
{
  // Learning: runs over all three axes of a grid whose axes all have more than one rank. The middle
  // axis' calls are whole (what precedes and follows a run may continue its first and last axis: the
  // end of a reverse halo exchange along axis 0 just before); the first axis' calls, by class, are the
  // shortest seen there, which every other run of the same middle must end with.
  Learned learned;
  auto& sigs       = learned.sigs;
  bool& extent_one = learned.extent_one;
  for (const auto& path : paths) {
    ProfileDir dir(path);
    const std::vector<int> dims = dims_create(dir.info().np, kDims);
    const std::vector<int> cls  = classes_of(dims);
    if (std::count(cls.begin(), cls.end(), 0) > 0)
      extent_one = true;
    if (std::count(cls.begin(), cls.end(), 0) > 0)
      continue;
    for (int r = 0; r < dir.rank_count(); ++r) {
      const std::vector<ScanCall> calls = read_rank(dir, numbered, r, dims, key_ids, keys);
      const std::vector<AxisElem> es    = all_elems(calls);
      for (const Run& run : runs_of(calls)) {
        if (run.blocks.size() != 3)
          continue;
        const Block& mid = run.blocks[1];
        std::vector<AxisElem> m = elems(calls, mid);
        const Block& last = run.blocks[2];
        if (cls[2] == cls[1] && (last.end - last.begin < m.size() ||
                                 not same_calls(&es[last.begin], m.data(), m.size(), cls[1])))
          continue;
        std::vector<std::uint32_t> mkeys;
        for (const AxisElem& e : m)
          mkeys.push_back(e.key);
        SigData& d = sigs[{cls[1], mkeys}];
        if (d.middle.empty())
          d.middle = m;
        d.last_exact = d.last_exact && cls[2] == cls[1] && last.end - last.begin == m.size();
        d.first[cls[0]].push_back(elems(calls, run.blocks[0]));
      }
    }
  }
  return learned;
}

/// The sweep kinds of the learned signatures; none where no sweep differs between extent classes.
std::vector<AxisKind> choose_kinds(const Learned& learned)
{
  std::vector<AxisKind> kinds;
  const bool extent_one = learned.extent_one;
  // Sweeps are kept where some sweep's calls differ between extent classes (else the plain model's loop
  // counts and grid_loop peers express them); then every consistent one is: a sweep the same on every
  // axis (a halo exchange) cut out too keeps its calls from folding into the loops of its neighbours
  // (LAMMPS' borders, whose last Irecv/Send/Wait folded into the reverse exchange after it).
  bool any_differs = false;
  for (const auto& [sig, d] : learned.sigs) {
    AxisKind kind;
    const int c1 = sig.first;
    kind.blocks[static_cast<std::size_t>(c1)] = d.middle;
    bool ok = true, differs = false;
    for (const auto& [c, firsts] : d.first) {
      const std::vector<AxisElem>* shortest = &firsts.front();
      for (const auto& f : firsts)
        if (f.size() < shortest->size())
          shortest = &f;
      const std::vector<AxisElem>& want = c == c1 ? d.middle : *shortest;
      for (const auto& f : firsts)
        ok = ok && f.size() >= want.size() && same_calls(&f[f.size() - want.size()], want.data(), want.size(), c);
      if (c == c1)
        continue;
      kind.blocks[static_cast<std::size_t>(c)] = want;
      std::vector<std::uint32_t> keys;
      for (const AxisElem& e : want)
        keys.push_back(e.key);
      differs = differs || keys != sig.second;
    }
    if (not ok)
      continue;
    any_differs = any_differs || differs;
    kind.last_exact = d.last_exact;
    if (extent_one)
      kind.blocks[0] = std::vector<AxisElem>{};  // nothing is addressed along an axis of one rank
    for (int c = 0; c < 3; ++c)
      if (kind.blocks[static_cast<std::size_t>(c)])
        kind.sizes[static_cast<std::size_t>(c)].resize(kind.blocks[static_cast<std::size_t>(c)]->size());
    kinds.push_back(std::move(kind));
  }
  if (not any_differs)
    kinds.clear();
  return kinds;
}


/// Per profile and rank, the runs cut out as sweeps (cut, kind index); fills the kinds' sizes and
/// request distances and counts their occurrences.
std::map<std::filesystem::path, std::vector<std::vector<std::pair<Cut, std::size_t>>>>
cut_sweeps(const std::vector<std::filesystem::path>& paths, const NumberedScan& numbered,
           std::map<CallToken, std::uint32_t>& key_ids, AxisScan& scan)
{
  // Cutting: in every profile with at least two axes of more than one rank, a run whose blocks are those
  // axes in order, the first ending with the sweep's calls for its class, the middle ones equal to theirs
  // and the last beginning with them; no request pending across its ends.
  std::map<std::filesystem::path, std::vector<std::vector<std::pair<Cut, std::size_t>>>> found;  // cut, kind
  for (const auto& path : paths) {
    ProfileDir dir(path);
    const std::vector<int> dims = dims_create(dir.info().np, kDims);
    const std::vector<int> cls  = classes_of(dims);
    std::vector<int> active;
    for (int a = 0; a < kDims; ++a)
      if (dims[static_cast<std::size_t>(a)] > 1)
        active.push_back(a);
    auto& per_rank = found[path];
    per_rank.resize(static_cast<std::size_t>(dir.rank_count()));
    if (active.size() < 2)
      continue;
    const std::pair<double, double> point{dir.info().nw, static_cast<double>(dir.info().np)};
    for (int r = 0; r < dir.rank_count(); ++r) {
      const std::vector<ScanCall> calls = read_rank(dir, numbered, r, dims, key_ids, scan.keys);
      const std::vector<AxisElem> es    = all_elems(calls);
      const Requests req = requests_of(calls);
      for (const Run& run : runs_of(calls)) {
        if (run.blocks.size() != active.size())
          continue;
        bool axes_match = true;
        for (std::size_t b = 0; b < active.size(); ++b)
          axes_match = axes_match && run.blocks[b].axis == active[b];
        if (not axes_match)
          continue;
        for (std::size_t k = 0; k < scan.kinds.size(); ++k) {
          AxisKind& kind = scan.kinds[k];
          std::size_t begin = 0, end = 0;
          bool match = true;
          // The calls of each block this sweep makes: [from, from + n) of the block.
          std::vector<std::pair<std::size_t, int>> starts;
          for (std::size_t b = 0; b < active.size() && match; ++b) {
            const Block& blk = run.blocks[b];
            const int c      = cls[static_cast<std::size_t>(active[b])];
            const auto& want = kind.blocks[static_cast<std::size_t>(c)];
            if (not want || want->empty()) {
              match = false;
              break;
            }
            const std::size_t n = want->size(), have = blk.end - blk.begin;
            const bool first = b == 0, last = b + 1 == active.size();
            // A middle axis has exactly the sweep's calls; so has the last where every run learned from
            // ended there (a grid of two walked axes has no middle: the sweep's calls for an axis of 2
            // ranks may be the end of one axis' calls and the start of the next's, LAMMPS' borders).
            if (have < n || (not first && not last && have != n) || (last && kind.last_exact && have != n)) {
              match = false;
              break;
            }
            const std::size_t from = first ? blk.end - n : blk.begin;
            if (not same_calls(&es[from], want->data(), n, c))
              match = false;
            if (first)
              begin = from;
            if (last)
              end = from + n;
            starts.emplace_back(from, c);
          }
          if (not match || req.pending_before[begin] != 0 || req.pending_before[end] != 0)
            continue;
          // The requests each completion names, as distances back in creations: the same in every run.
          std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> backs;  // per call of `starts`
          bool same_requests = true;
          for (const auto& [from, c] : starts) {
            const std::vector<AxisSizes>& sizes = kind.sizes[static_cast<std::size_t>(c)];
            for (std::size_t j = 0; j < sizes.size(); ++j) {
              const ScanCall& call = calls[from + j];
              std::vector<std::int64_t> back;
              if (auto it = req.ordinals.find(from + j); it != req.ordinals.end())
                for (std::int64_t o : it->second) {
                  same_requests = same_requests && o >= 0;
                  back.push_back(req.created_before[from + j] - o);
                }
              const std::int64_t one = call.request != kNoRequest && not back.empty() ? back.front() : 0;
              std::vector<std::int64_t> all = call.requests.empty() ? std::vector<std::int64_t>{} : back;
              same_requests = same_requests && (not sizes[j].requests_seen ||
                                                (sizes[j].request_back == one && sizes[j].requests_back == all));
              backs.emplace_back(one, std::move(all));
            }
          }
          if (not same_requests)
            continue;
          std::size_t q = 0;
          for (const auto& [from, c] : starts)
            for (AxisSizes& z : kind.sizes[static_cast<std::size_t>(c)]) {
              z.request_back  = backs[q].first;
              z.requests_back = backs[q].second;
              z.requests_seen = true;
              ++q;
            }
          for (const auto& [from, c] : starts) {
            std::vector<AxisSizes>& sizes = kind.sizes[static_cast<std::size_t>(c)];
            for (std::size_t j = 0; j < sizes.size(); ++j) {
              const ScanCall& call = calls[from + j];
              auto& b = sizes[j].bytes[point];
              b.first += static_cast<double>(call.bytes);
              ++b.second;
              auto& rb = sizes[j].recv_bytes[point];
              rb.first += static_cast<double>(call.recv_bytes);
              ++rb.second;
              sizes[j].any_bytes      = sizes[j].any_bytes || call.bytes != 0;
              sizes[j].any_recv_bytes = sizes[j].any_recv_bytes || call.recv_bytes != 0;
            }
          }
          ++kind.occurrences;
          per_rank[static_cast<std::size_t>(r)].push_back({Cut{begin, end, {}}, k});
          break;
        }
      }
    }
  }
  return found;
}

/// Keeps the sweeps that occur somewhere, numbered in order, and their cuts under the new numbers.
void keep_occurring(AxisScan& scan,
                    std::map<std::filesystem::path, std::vector<std::vector<std::pair<Cut, std::size_t>>>>& found)
{
  // Only the sweeps that occur somewhere, numbered in order.
  std::vector<std::size_t> renumber(scan.kinds.size(), 0);
  std::vector<AxisKind> kept;
  for (std::size_t k = 0; k < scan.kinds.size(); ++k)
    if (scan.kinds[k].occurrences > 0) {
      renumber[k] = kept.size();
      kept.push_back(std::move(scan.kinds[k]));
    }
  scan.kinds = std::move(kept);
  if (scan.kinds.empty())
    return;
  for (auto& [path, ranks] : found) {
    auto& out = scan.cuts_of[path];
    for (auto& cuts : ranks) {
      out.emplace_back();
      for (auto& [cut, k] : cuts) {
        cut.placeholder = axis_sweep_placeholder_name(renumber[k]);
        out.back().push_back(cut);
      }
    }
  }
}

}  // namespace

int grid_neighbour(int rank, const std::vector<int>& dims, int axis, int dir)
{
  return *trace::grid_neighbour(rank, dims, static_cast<std::size_t>(axis), dir, true);
}

std::string axis_sweep_placeholder_name(std::size_t k) { return "gridcast:axis-sweep-" + std::to_string(k); }

const std::vector<Cut>* AxisScan::cuts(const std::filesystem::path& path, int rank) const
{
  auto it = cuts_of.find(path);
  if (it == cuts_of.end())
    return nullptr;
  return &it->second.at(static_cast<std::size_t>(rank));
}

AxisScan scan_axis_sweeps(const std::vector<std::filesystem::path>& paths, const NumberedScan& numbered)
{
  AxisScan scan;
  std::map<CallToken, std::uint32_t> key_ids;
  scan.kinds = choose_kinds(learn_sweeps(paths, numbered, key_ids, scan.keys));
  if (scan.kinds.empty())
    return scan;
  auto found = cut_sweeps(paths, numbered, key_ids, scan);
  keep_occurring(scan, found);
  return scan;
}

std::vector<AxisSweep> fit_axis_sweeps(const AxisScan& scan, const std::function<std::uint32_t(const CallToken&)>& token_of,
                                       const std::function<std::uint32_t(std::size_t)>& placeholder_of)
{
  auto fit = [](const std::map<std::pair<double, double>, std::pair<double, std::uint64_t>>& series) {
    std::vector<FitPoint> pts;
    for (const auto& [point, e] : series)
      pts.push_back({point.first, point.second, e.first / static_cast<double>(e.second)});
    return fit_formula(pts, true);
  };
  std::vector<AxisSweep> out;
  for (std::size_t k = 0; k < scan.kinds.size(); ++k) {
    const AxisKind& kind = scan.kinds[k];
    AxisSweep s;
    s.placeholder = placeholder_of(k);
    s.dims        = 3;
    for (std::size_t c = 0; c < 3; ++c) {
      if (not kind.blocks[c])
        continue;
      std::vector<AxisCall> calls;
      for (std::size_t j = 0; j < kind.blocks[c]->size(); ++j) {
        const AxisElem& e     = (*kind.blocks[c])[j];
        const AxisSizes& obs = kind.sizes[c][j];
        AxisCall call;
        call.token    = token_of(scan.keys[e.key]);
        call.peer_dir = e.peer_dir;
        call.src_dir  = e.src_dir;
        if (obs.any_bytes)
          call.bytes = fit(obs.bytes);
        if (obs.any_recv_bytes)
          call.recv_bytes = fit(obs.recv_bytes);
        call.request_back  = obs.request_back;
        call.requests_back = obs.requests_back;
        calls.push_back(std::move(call));
      }
      s.blocks[c] = std::move(calls);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gridcast::models::trace::detail
