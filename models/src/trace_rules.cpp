#include "gridcast/models/trace_rules.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

namespace gridcast::models::trace {

std::vector<int> dims_create(int np, int d)
{
  std::vector<int> dims(static_cast<std::size_t>(d), 1);
  if (np < 1 || d < 1)
    return dims;
  // Prime factors, largest first, each multiplied into the currently smallest dimension.
  std::vector<int> primes;
  int n = np;
  for (int p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      primes.push_back(p);
      n /= p;
    }
  if (n > 1)
    primes.push_back(n);
  std::sort(primes.rbegin(), primes.rend());
  for (int p : primes)
    *std::min_element(dims.begin(), dims.end()) *= p;
  std::sort(dims.rbegin(), dims.rend());
  return dims;
}

std::vector<int> grid_coords(int rank, const std::vector<int>& dims)
{
  std::vector<int> c(dims.size());
  for (std::size_t k = dims.size(); k-- > 0;) {
    c[k] = rank % dims[k];
    rank /= dims[k];
  }
  return c;
}

std::optional<int> grid_neighbour(int rank, const std::vector<int>& d, std::size_t axis, int step, bool periodic)
{
  // Without building the coordinates: axis `axis` has stride prod(d[axis+1..]) in the rank.
  int stride = 1;
  for (std::size_t j = axis + 1; j < d.size(); ++j)
    stride *= d[j];
  const int ck = (rank / stride) % d[axis];
  int v        = ck + step;
  if (periodic)
    v = (v % d[axis] + d[axis]) % d[axis];
  else if (v < 0 || v >= d[axis])
    return std::nullopt;
  return rank + (v - ck) * stride;
}

namespace {

int grid_rank(const std::vector<int>& coords, const std::vector<int>& dims)
{
  int r = 0;
  for (std::size_t k = 0; k < dims.size(); ++k)
    r = r * dims[k] + coords[k];
  return r;
}

/// dims_create(np, d), remembered: fitting evaluates grids at a handful of (np, dims) millions of times,
/// candidates of 2 and 3 dimensions in turn. The reference is valid until the next call.
const std::vector<int>& cached_dims(int np, int d)
{
  struct Cached {
    int np = -1, dims = -1;
    std::vector<int> d;
  };
  thread_local std::array<Cached, 4> cache;
  thread_local std::size_t next_slot = 0;
  for (const Cached& c : cache)
    if (c.np == np && c.dims == d)
      return c.d;
  Cached& slot = cache[next_slot++ % cache.size()];
  slot         = {np, d, dims_create(np, d)};
  return slot.d;
}


const std::vector<std::pair<RankExpr::Kind, std::string_view>>& kind_names()
{
  static const std::vector<std::pair<RankExpr::Kind, std::string_view>> names = {
      {RankExpr::Kind::Any, "any"},         {RankExpr::Kind::Fixed, "fixed"},   {RankExpr::Kind::FromEnd, "from_end"},
      {RankExpr::Kind::Offset, "offset"},   {RankExpr::Kind::Xor, "xor"},       {RankExpr::Kind::XorLoop, "xor_loop"},
      {RankExpr::Kind::Cycle, "cycle"},     {RankExpr::Kind::Rotate, "rotate"}, {RankExpr::Kind::Grid, "grid"},
      {RankExpr::Kind::GridLoop, "grid_loop"},   {RankExpr::Kind::GridCoords, "grid_coords"},
      {RankExpr::Kind::GridOrigin, "grid_origin"}, {RankExpr::Kind::GridOffset, "grid_offset"},
      {RankExpr::Kind::GridTable, "grid_table"},
  };
  return names;
}

/// The rank at the offsets `code` (RankExpr::offset_in) from `rank` in the grid of extents `d`; nullopt
/// off the edge of a non-periodic grid.
std::optional<int> moved_by(int rank, const std::vector<int>& d, int code, bool periodic)
{
  std::vector<int> c = grid_coords(rank, d);
  for (std::size_t k = 0; k < d.size(); ++k) {
    int v = c[k] + RankExpr::offset_in(code, static_cast<int>(k));
    if (periodic)
      v = (v % d[k] + d[k]) % d[k];
    else if (v < 0 || v >= d[k])
      return std::nullopt;
    c[k] = v;
  }
  return grid_rank(c, d);
}

}  // namespace

std::optional<int> RankExpr::eval(int rank, int np, const std::uint64_t* loop, int depth) const
{
  auto loop_index = [&](int lvl) -> std::optional<std::uint64_t> {
    if (lvl < 0 || lvl >= depth)
      return std::nullopt;
    return loop[depth - 1 - lvl];
  };
  switch (kind) {
    case Kind::Any: return -1;
    case Kind::Fixed: return a;
    case Kind::FromEnd: return np - a;
    case Kind::Offset: return ((rank + a) % np + np) % np;
    case Kind::Xor: return rank ^ a;
    case Kind::XorLoop: {
      auto i = loop_index(level);
      if (not i || *i >= 31)
        return std::nullopt;
      return rank ^ (1 << *i);
    }
    case Kind::Cycle: {
      auto i = loop_index(level);
      if (not i || np - a <= 0)
        return std::nullopt;
      return a + static_cast<int>(*i % static_cast<std::uint64_t>(np - a));
    }
    case Kind::Rotate: {
      auto i = loop_index(level);
      if (not i || np <= 0)
        return std::nullopt;
      return static_cast<int>((*i + static_cast<std::uint64_t>(a)) % static_cast<std::uint64_t>(np));
    }
    case Kind::Grid: {
      // Fitting evaluates grids at a handful of (np, dims) millions of times, candidates of 2 and 3
      // dimensions in turn: remember a few grids. Inline, not through cached_dims() and grid_neighbour():
      // the call costs a few percent of `gridcast fit`.
      struct Cached {
        int np = -1, dims = -1;
        std::vector<int> d;
      };
      thread_local std::array<Cached, 4> cache;
      thread_local std::size_t next_slot = 0;
      const std::vector<int>* found = nullptr;
      for (const Cached& c : cache)
        if (c.np == np && c.dims == dims)
          found = &c.d;
      if (found == nullptr) {
        Cached& slot = cache[next_slot++ % cache.size()];
        slot         = {np, dims, dims_create(np, dims)};
        found        = &slot.d;
      }
      const std::vector<int>& d = *found;
      if (rank >= 0 && rank < np && dim >= 0 && static_cast<std::size_t>(dim) < d.size()) {
        // Without building the coordinates: axis `dim` has stride prod(d[dim+1..]) in the rank.
        const auto k = static_cast<std::size_t>(dim);
        int stride = 1;
        for (std::size_t j = k + 1; j < d.size(); ++j)
          stride *= d[j];
        const int ck = (rank / stride) % d[k];
        int v = ck + a;
        if (periodic)
          v = (v % d[k] + d[k]) % d[k];
        else if (v < 0 || v >= d[k])
          return std::nullopt;
        return rank + (v - ck) * stride;
      }
      std::vector<int> c = grid_coords(rank, d);
      auto k = static_cast<std::size_t>(dim);
      int v  = c[k] + a;
      if (periodic)
        v = (v % d[k] + d[k]) % d[k];
      else if (v < 0 || v >= d[k])
        return std::nullopt;
      c[k] = v;
      return grid_rank(c, d);
    }
    case Kind::GridCoords:
    case Kind::GridOrigin: {
      if (dims < 1 || rank < 0 || rank >= np || a <= 0 || a >= (1 << dims))
        return std::nullopt;
      const std::vector<int>& d = cached_dims(np, dims);
      const std::vector<int> c  = grid_coords(rank, d);
      int index = 0, origin = 0;
      for (std::size_t k = 0; k < d.size(); ++k) {
        const bool in_mask = (a >> k & 1) != 0;
        if (in_mask)
          index = index * d[k] + c[k];
        origin = origin * d[k] + (in_mask ? 0 : c[k]);
      }
      return kind == Kind::GridCoords ? index : origin;
    }
    case Kind::GridOffset:
    case Kind::GridTable: {
      if (dims < 1 || rank < 0 || rank >= np)
        return std::nullopt;
      if (kind == Kind::GridOffset)
        return moved_by(rank, cached_dims(np, dims), a, periodic);
      auto i = loop_index(level);
      if (not i || *i >= table.size())
        return std::nullopt;
      return moved_by(rank, cached_dims(np, dims), table[*i], periodic);
    }
    case Kind::GridLoop: {
      auto i = loop_index(level);
      if (not i || block < 1 || dims < 1 || rank < 0 || rank >= np)
        return std::nullopt;
      const std::vector<int>& d = cached_dims(np, dims);
      // The walked axes: every axis, or those of extent > 1 (dims_create's extents do not increase, so
      // those are the first ones; counted rather than assumed, for clarity).
      std::size_t walked = d.size();
      if (not all_axes)
        walked = static_cast<std::size_t>(std::count_if(d.begin(), d.end(), [](int e) { return e > 1; }));
      const std::uint64_t blk   = static_cast<std::uint64_t>(block);
      const std::uint64_t sweep = blk * walked;  // iterations of one sweep over the walked axes
      if (sweep == 0)
        return std::nullopt;
      std::uint64_t j = *i;
      bool back       = false;  // the second half of a there-and-back period: reversed, the other way
      if (there_and_back) {
        j %= 2 * sweep;
        back = j >= sweep;
        if (back)
          j -= sweep;
      }
      std::uint64_t b = j / blk, p = j % blk;
      if (b >= walked)
        return std::nullopt;
      if (reversed != back) {
        b = walked - 1 - b;
        p = blk - 1 - p;
      }
      std::size_t axis = 0;
      for (std::size_t k = 0, seen = 0; k < d.size(); ++k)
        if (all_axes || d[k] > 1) {
          if (seen++ == b) {
            axis = k;
            break;
          }
        }
      const int dir = p % 2 == 0 ? a : -a;
      return grid_neighbour(rank, d, axis, back ? -dir : dir, periodic);
    }
  }
  return std::nullopt;
}

int RankExpr::offset_in(int code, int axis)
{
  for (int k = 0; k < axis; ++k)
    code /= 3;
  return code % 3 - 1;
}

int RankExpr::offsets_code(const std::vector<int>& offsets)
{
  int code = 0;
  for (std::size_t k = offsets.size(); k-- > 0;)
    code = code * 3 + offsets[k] + 1;
  return code;
}

std::string RankExpr::text() const
{
  auto sgn = [](int v) { return v < 0 ? " - " + std::to_string(-v) : " + " + std::to_string(v); };
  switch (kind) {
    case Kind::Any: return "any";
    case Kind::Fixed: return std::to_string(a);
    case Kind::FromEnd: return "Np - " + std::to_string(a);
    case Kind::Offset: return "(r" + sgn(a) + ") mod Np";
    case Kind::Xor: return "r xor " + std::to_string(a);
    case Kind::XorLoop: return "r xor 2^i" + std::to_string(level);
    case Kind::Cycle: return std::to_string(a) + " + i" + std::to_string(level) + " mod (Np - " + std::to_string(a) + ")";
    case Kind::Rotate: return "(i" + std::to_string(level) + " + " + std::to_string(a) + ") mod Np";
    case Kind::Grid:
      return "grid" + std::to_string(dims) + (periodic ? "p" : "") + "(r, dim " + std::to_string(dim) + ", " +
             (a < 0 ? "-" : "+") + std::to_string(std::abs(a)) + ")";
    case Kind::GridOffset:
    case Kind::GridTable: {
      // "grid3p(r, +1 0 -1)": the offset along each axis; "grid2p(r, table i0: +1 0, 0 +1, ...)".
      auto offs = [&](int code) {
        std::string s;
        for (int k = 0; k < dims; ++k) {
          const int o = offset_in(code, k);
          s += std::string(k > 0 ? " " : "") + (o > 0 ? "+1" : o < 0 ? "-1" : "0");
        }
        return s;
      };
      std::string what = kind == Kind::GridOffset ? offs(a) : "table i" + std::to_string(level) + ":";
      for (std::size_t i = 0; kind == Kind::GridTable && i < table.size(); ++i)
        what += std::string(i > 0 ? ", " : " ") + offs(table[i]);
      return "grid" + std::to_string(dims) + (periodic ? "p" : "") + "(r, " + what + ")";
    }
    case Kind::GridLoop:
      // "grid3p(r, axis i0 div 2 of extent > 1, +1 -1)": the direction of each position of the block.
      return "grid" + std::to_string(dims) + (periodic ? "p" : "") + "(r, axis " + (reversed ? "reversed " : "") + "i" +
             std::to_string(level) + (block > 1 ? " div " + std::to_string(block) : "") +
             (all_axes ? "" : " of extent > 1") + ", " + (a < 0 ? "-1" : "+1") + (block > 1 ? (a < 0 ? " +1" : " -1") : "") +
             (there_and_back ? ", there and back" : "") + ")";
    case Kind::GridCoords:
    case Kind::GridOrigin: {
      std::string axes;
      for (int k = 0; k < dims; ++k)
        if ((a >> k & 1) != 0)
          axes += (axes.empty() ? "" : ",") + std::to_string(k);
      return std::string(kind == Kind::GridCoords ? "coords" : "origin") + std::to_string(dims) + "(r, axes " + axes + ")";
    }
  }
  return "?";
}

std::string_view RankExpr::kind_name() const
{
  for (const auto& [k, n] : kind_names())
    if (k == kind)
      return n;
  return "?";
}

std::optional<RankExpr::Kind> RankExpr::kind_from_name(std::string_view name)
{
  for (const auto& [k, n] : kind_names())
    if (n == name)
      return k;
  return std::nullopt;
}

bool same_target(const RankExpr& a, const RankExpr& b)
{
  return a.kind == b.kind && a.a == b.a && a.level == b.level && a.dims == b.dims && a.dim == b.dim &&
         a.block == b.block && a.reversed == b.reversed && a.all_axes == b.all_axes &&
         a.there_and_back == b.there_and_back && a.table == b.table;
}

std::optional<RankExpr> fit_rank_expr(const std::vector<RankObservation>& obs)
{
  auto all = fit_rank_exprs(obs);
  if (all.empty())
    return std::nullopt;
  return all.front();
}

std::vector<RankExpr> rank_expr_candidates(const RankObservation& o0, bool coordinates)
{
  const int depth = static_cast<int>(o0.loop.size());
  std::vector<RankExpr> cands;
  using K = RankExpr::Kind;
  if (o0.value == -1) {
    cands.push_back({K::Any});
    return cands;
  }
  cands.push_back({K::Fixed, o0.value});
  cands.push_back({K::FromEnd, o0.np - o0.value});
  int d = o0.value - o0.rank;
  cands.push_back({K::Offset, d});
  cands.push_back({K::Offset, d > 0 ? d - o0.np : d + o0.np});
  cands.push_back({K::Xor, o0.rank ^ o0.value});
  for (int lvl = 0; lvl < depth; ++lvl) {
    RankExpr x{K::XorLoop};
    x.level = lvl;
    cands.push_back(x);
  }
  for (int lvl = 0; lvl < depth; ++lvl)
    for (int a : {0, 1}) {
      RankExpr c{K::Cycle, a};
      c.level = lvl;
      cands.push_back(c);
    }
  // A role one rank further each iteration, from the rank the first observation implies (Cycle covers
  // a = 0): the root of step s + 1.
  for (int lvl = 0; lvl < depth; ++lvl) {
    const auto np = static_cast<std::int64_t>(o0.np);
    const std::int64_t i = static_cast<std::int64_t>(o0.loop[static_cast<std::size_t>(depth - 1 - lvl)] % static_cast<std::uint64_t>(np));
    const auto a = static_cast<int>(((o0.value - i) % np + np) % np);
    if (a != 0) {
      RankExpr c{K::Rotate, a};
      c.level = lvl;
      cands.push_back(c);
    }
  }
  for (int nd = 1; nd <= 3; ++nd)
    for (bool periodic : {true, false})
      for (int dim = 0; dim < nd; ++dim)
        for (int dir : {-1, 1}) {
          RankExpr g{K::Grid, dir};
          g.dims     = nd;
          g.dim      = dim;
          g.periodic = periodic;
          cands.push_back(g);
        }
  // Diagonal neighbours (after Grid, which wins where a grid's extent of 1 makes them the same rank).
  for (int nd = 2; nd <= 3; ++nd)
    for (bool periodic : {true, false})
      for (int code = 0; code < (nd == 2 ? 9 : 27); ++code) {
        RankExpr g{K::GridOffset, code};
        g.dims     = nd;
        g.periodic = periodic;
        int moved  = 0;
        for (int k = 0; k < nd; ++k)
          moved += g.offset(k) != 0 ? 1 : 0;
        if (moved >= 2)
          cands.push_back(g);
      }
  if (coordinates)
    for (auto kind : {K::GridCoords, K::GridOrigin})
      for (int nd = 1; nd <= 3; ++nd)
        for (int mask = 1; mask < (1 << nd); ++mask) {
          RankExpr g{kind, mask};
          g.dims = nd;
          cands.push_back(g);
        }
  // Last (the fit prefers any other expression that survives): a neighbour whose axis follows the loop
  // index. Grids of 2 and 3 dimensions; 1 has a single axis, which Grid covers with block 1.
  for (int lvl = 0; lvl < depth; ++lvl)
    for (int nd = 2; nd <= 3; ++nd)
      for (bool periodic : {true, false})
        for (int blk : {1, 2})
          for (bool rev : {false, true})
            for (bool all : {false, true})
              for (bool tab : {false, true})
                for (int dir : {-1, 1}) {
                  RankExpr g{K::GridLoop, dir};
                  g.level          = lvl;
                  g.dims           = nd;
                  g.periodic       = periodic;
                  g.block          = blk;
                  g.reversed       = rev;
                  g.all_axes       = all;
                  g.there_and_back = tab;
                  cands.push_back(g);
                }
  // A 1-D grid's single axis walked in blocks of 2: one call site that sends right and then left (two
  // MPI_Sendrecv of a ring or a line of ranks whose calls fold into one loop). Without an axis to walk
  // in turn, block 1 is Grid. The open line first: where both explain every observation, no rank at an
  // end made the call there (it had no neighbour), which a ring would not explain.
  for (int lvl = 0; lvl < depth; ++lvl)
    for (bool periodic : {false, true})
      for (bool rev : {false, true})
        for (bool tab : {false, true})
          for (int dir : {-1, 1}) {
            RankExpr g{K::GridLoop, dir};
            g.level          = lvl;
            g.dims           = 1;
            g.periodic       = periodic;
            g.block          = 2;
            g.reversed       = rev;
            g.there_and_back = tab;
            cands.push_back(g);
          }
  return cands;
}

void filter_rank_exprs(std::vector<RankExpr>& cands, int rank, int np, const std::uint64_t* loop, int depth, int value)
{
  std::erase_if(cands, [&](const RankExpr& e) {
    auto v = e.eval(rank, np, loop, depth);
    return not v || *v != value;
  });
}

std::vector<RankExpr> fit_rank_exprs(const std::vector<RankObservation>& obs)
{
  std::vector<RankExpr> found;
  if (obs.empty())
    return found;
  std::vector<RankExpr> alive = rank_expr_candidates(obs.front());
  for (const RankObservation& o : obs)
    filter_rank_exprs(alive, o.rank, o.np, o.loop.data(), static_cast<int>(o.loop.size()), o.value);
  for (const RankExpr& e : alive)
    if (std::none_of(found.begin(), found.end(), [&](const RankExpr& f) { return same_target(f, e); }))
      found.push_back(e);
  return found;
}

// ---- group rules ------------------------------------------------------------------------------------

namespace {

const std::vector<std::string>& bases()
{
  static const std::vector<std::string> b = {"all",   "parity", "mod3",   "mod4",   "mod5",   "mod6",  "mod7",
                                             "mod8",  "node2",  "node4",  "node8",  "node16", "grid2", "grid3",
                                             "grid2-sides", "grid3-sides"};
  return b;
}

std::string base_class(const std::string& base, int rank, int np)
{
  if (base == "all")
    return "";
  if (base == "parity")
    return "parity=" + std::to_string(rank % 2);
  if (base.rfind("mod", 0) == 0) {
    int k = std::stoi(base.substr(3));
    return base + "=" + std::to_string(rank % k);
  }
  if (base.rfind("node", 0) == 0) {
    int k   = std::stoi(base.substr(4));
    int pos = rank % k;
    // The last node may be partial: its last rank is Np - 1.
    bool last = pos == k - 1 || rank == np - 1;
    return base + "=" + (pos == 0 ? "first" : last ? "last" : "middle");
  }
  int d                = base.rfind("grid2", 0) == 0 ? 2 : 3;
  std::vector<int> dims = dims_create(np, d);
  std::vector<int> c    = grid_coords(rank, dims);
  if (base.size() > 5) {
    // Which side of each axis: what a non-periodic stencil's branches depend on (a rank on the low
    // x face lacks its lower x neighbour, one on the high face its upper one).
    std::string v = base + "=";
    for (std::size_t k = 0; k < dims.size(); ++k) {
      bool lo = c[k] == 0, hi = c[k] == dims[k] - 1;
      v += std::string(k ? "," : "") + (lo && hi ? "both" : lo ? "low" : hi ? "high" : "mid");
    }
    return v;
  }
  int boundary          = 0;
  for (std::size_t k = 0; k < dims.size(); ++k)
    boundary += (c[k] == 0 || c[k] == dims[k] - 1) ? 1 : 0;
  static const char* const names3[] = {"interior", "face", "edge", "corner"};
  static const char* const names2[] = {"interior", "edge", "corner"};
  return base + "=" + (d == 3 ? names3[boundary] : names2[boundary]);
}

}  // namespace

std::string RankClassifier::name() const
{
  std::string n;
  if (first)
    n += "first";
  if (last)
    n += std::string(n.empty() ? "" : "+") + "last";
  if (base != "all" || n.empty())
    n += std::string(n.empty() ? "" : "+") + base;
  return n;
}

std::optional<RankClassifier> RankClassifier::from_name(std::string_view name)
{
  for (const RankClassifier& c : candidates())
    if (c.name() == name)
      return c;
  return std::nullopt;
}

std::string RankClassifier::classify(int rank, int np) const
{
  std::string s;
  if (first)
    s += std::string("first=") + (rank == 0 ? "1" : "0");
  if (last)
    s += std::string(s.empty() ? "" : " ") + "last=" + (rank == np - 1 ? "1" : "0");
  std::string b = base_class(base, rank, np);
  if (not b.empty())
    s += (s.empty() ? "" : " ") + b;
  return s.empty() ? "all" : s;
}

std::vector<RankClassifier> RankClassifier::candidates()
{
  std::vector<RankClassifier> out;
  for (const std::string& b : bases())
    for (auto [f, l] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}})
      out.push_back({b, f, l});
  return out;
}

namespace {

/// Under a grid-sides rule, the group of an unseen class `cls` from the classes that differ from it only
/// in the side of some axes (never `both`, an axis of one rank, which the rank's own axis is not), where
/// they are in one group; nullopt otherwise. The axes let free are those whose side in `cls` no training
/// class had (the middle of an axis that never had more than 2 ranks), else each axis in turn. `cls` ends
/// with "gridD-sides=s0,s1[,s2]".
std::optional<int> group_along_axes(const std::vector<std::pair<std::string, int>>& classes, const std::string& cls)
{
  const std::size_t eq = cls.rfind('=');
  if (eq == std::string::npos || cls.find("-sides=") == std::string::npos)
    return std::nullopt;
  const std::string prefix = cls.substr(0, eq + 1);
  auto sides_of            = [](const std::string& list) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at <= list.size()) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      out.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
    return out;
  };
  const std::vector<std::string> mine = sides_of(cls.substr(eq + 1));
  std::vector<std::pair<std::vector<std::string>, int>> theirs;  // the training classes of the same prefix
  for (const auto& [c, g] : classes)
    if (c.size() > prefix.size() && c.compare(0, prefix.size(), prefix) == 0) {
      auto s = sides_of(c.substr(prefix.size()));
      if (s.size() == mine.size())
        theirs.emplace_back(std::move(s), g);
    }
  auto unanimous = [&](const std::vector<bool>& free) -> std::optional<int> {
    std::optional<int> group;
    for (const auto& [s, g] : theirs) {
      bool match = true;
      for (std::size_t k = 0; k < mine.size() && match; ++k)
        match = free[k] ? s[k] != "both" : s[k] == mine[k];
      if (not match)
        continue;
      if (group && *group != g)
        return std::nullopt;
      group = g;
    }
    return group;
  };
  std::vector<bool> unseen(mine.size(), false);
  bool any_unseen = false;
  for (std::size_t k = 0; k < mine.size(); ++k) {
    unseen[k] = mine[k] != "both" && std::none_of(theirs.begin(), theirs.end(), [&](const auto& t) { return t.first[k] == mine[k]; });
    any_unseen = any_unseen || unseen[k];
  }
  if (any_unseen)
    return unanimous(unseen);
  for (std::size_t k = 0; k < mine.size(); ++k) {
    if (mine[k] == "both")
      continue;
    std::vector<bool> one(mine.size(), false);
    one[k] = true;
    if (auto g = unanimous(one))
      return g;
  }
  return std::nullopt;
}

}  // namespace

std::string GroupRule::unseen_class(int rank, int np) const
{
  std::string cls = classifier.classify(rank, np);
  auto it = std::lower_bound(classes.begin(), classes.end(), cls,
                             [](const auto& p, const std::string& c) { return p.first < c; });
  return it == classes.end() || it->first != cls ? cls : std::string();
}

int GroupRule::group_of(int rank, int np) const
{
  std::string cls = classifier.classify(rank, np);
  auto it = std::lower_bound(classes.begin(), classes.end(), cls,
                             [](const auto& p, const std::string& c) { return p.first < c; });
  if (it == classes.end() || it->first != cls) {
    if (auto g = group_along_axes(classes, cls))
      return *g;
    throw InputError({}, "rank " + std::to_string(rank) + " of " + std::to_string(np) + " is of class '" + cls +
                             "' under the group rule '" + classifier.name() +
                             "', which no training profile had: the model cannot say which trace it runs");
  }
  return it->second;
}

GroupRule infer_group_rule(const std::vector<GroupAssignment>& assignments)
{
  struct Seen {
    int group;
    std::size_t profile;
    int rank;
  };
  std::string conflict;
  for (const RankClassifier& c : RankClassifier::candidates()) {
    std::map<std::string, Seen> table;
    bool ok = true;
    for (std::size_t p = 0; p < assignments.size() && ok; ++p) {
      const GroupAssignment& a = assignments[p];
      for (int r = 0; r < static_cast<int>(a.group_of_rank.size()) && ok; ++r) {
        std::string cls = c.classify(r, a.np);
        auto [it, inserted] = table.emplace(cls, Seen{a.group_of_rank[static_cast<std::size_t>(r)], p, r});
        if (not inserted && it->second.group != a.group_of_rank[static_cast<std::size_t>(r)]) {
          ok = false;
          conflict = "under the most refined rule '" + c.name() + "', rank " + std::to_string(it->second.rank) +
                     " of " + assignments[it->second.profile].profile + " (trace group " +
                     std::to_string(it->second.group) + ") and rank " + std::to_string(r) + " of " + a.profile +
                     " (trace group " + std::to_string(a.group_of_rank[static_cast<std::size_t>(r)]) +
                     ") are both of class '" + cls + "'";
        }
      }
    }
    if (ok) {
      GroupRule rule;
      rule.classifier = c;
      for (const auto& [cls, seen] : table)
        rule.classes.emplace_back(cls, seen.group);
      return rule;
    }
  }
  throw InputError({}, "no rank-to-group rule fits the training profiles: " + conflict +
                           " (candidates: rank 0, last rank, parity, rank mod 3..8, node of 2..16 ranks, "
                           "2-D/3-D grid position, side of each grid axis)");
}


// ---- loop-index-relative roles ----------------------------------------------------------------------

namespace {

int mod(std::int64_t a, int n) { return static_cast<int>(((a % n) + n) % n); }

}  // namespace

LoopRole::Virtual LoopRole::virtual_rank(int rank, int np, std::uint64_t k) const
{
  const auto ki = static_cast<std::int64_t>(k % static_cast<std::uint64_t>(std::max(np, 1)));
  switch (kind) {
  case Kind::Fixed: return {rank, np};
  case Kind::Behind: return {mod(rank - ki, np), np};
  case Kind::Ahead: return {mod(rank + ki, np), np};
  case Kind::GridBehind:
  case Kind::GridAll: {
    std::vector<int> d = dims_create(np, dims);
    std::vector<int> c = grid_coords(rank, d);
    if (kind == Kind::GridBehind) {
      auto n = d[static_cast<std::size_t>(dim)];
      return {mod(c[static_cast<std::size_t>(dim)] - static_cast<std::int64_t>(k % static_cast<std::uint64_t>(n)), n),
              n};
    }
    int v = 0;
    for (std::size_t a = 0; a < d.size(); ++a)
      v = v * d[a] + mod(c[a] - static_cast<std::int64_t>(k % static_cast<std::uint64_t>(d[a])), d[a]);
    return {v, np};
  }
  }
  return {rank, np};
}

std::string LoopRole::name() const
{
  switch (kind) {
  case Kind::Fixed: return "fixed";
  case Kind::Behind: return "(r-k) mod Np";
  case Kind::Ahead: return "(r+k) mod Np";
  case Kind::GridBehind:
    return "(c" + std::to_string(dim) + "-k) mod d" + std::to_string(dim) + " of grid" + std::to_string(dims);
  case Kind::GridAll: return "(c-k) mod d of grid" + std::to_string(dims);
  }
  return "fixed";
}

std::optional<LoopRole> LoopRole::from_name(std::string_view name)
{
  for (const LoopRole& r : candidates())
    if (r.name() == name)
      return r;
  return std::nullopt;
}

std::vector<LoopRole> LoopRole::candidates()
{
  std::vector<LoopRole> out = {{Kind::Fixed}, {Kind::Behind}, {Kind::Ahead}};
  for (int d : {2, 3}) {
    for (int a = 0; a < d; ++a)
      out.push_back({Kind::GridBehind, d, a});
    out.push_back({Kind::GridAll, d, 0});
  }
  return out;
}

int RoleRule::variant_of(int rank, int np, std::uint64_t k) const
{
  LoopRole::Virtual v = role.virtual_rank(rank, np, k);
  std::string cls     = classifier.classify(v.rank, v.np);
  auto it = std::lower_bound(classes.begin(), classes.end(), cls,
                             [](const auto& p, const std::string& c) { return p.first < c; });
  if (it == classes.end() || it->first != cls)
    throw InputError({}, "rank " + std::to_string(rank) + " of " + std::to_string(np) + " in iteration " +
                             std::to_string(k) + " is of class '" + cls + "' under the role rule '" + text() +
                             "', which no training profile had: the model cannot say which calls it makes there");
  return it->second;
}

std::string RoleRule::text() const { return "variant by " + classifier.name() + " of " + role.name(); }

RoleRule infer_role_rule(const std::vector<RoleObservation>& observations)
{
  return infer_role_rule(std::vector<std::vector<RoleObservation>>{observations}).first;
}

std::pair<RoleRule, std::size_t> infer_role_rule(const std::vector<std::vector<RoleObservation>>& readings)
{
  if (readings.empty() || readings.front().empty())
    throw InputError({}, "a rotating loop without iterations: no role rule to infer");
  for (const auto& observations : readings)
    for (const RoleObservation& o : observations)
      if (o.np <= 0 || o.rank < 0 || o.rank >= o.np)
        throw InternalError("infer_role_rule: rank " + std::to_string(o.rank) + " outside 0.." + std::to_string(o.np - 1));
  std::string conflict;
  // Classifiers outermost: a simple class of a rotated rank (the owner, the end of the ring) under any
  // role or reading explains more than a refined class under the first one.
  for (const RankClassifier& c : RankClassifier::candidates())
    for (const LoopRole& role : LoopRole::candidates())
      for (std::size_t reading = 0; reading < readings.size(); ++reading) {
        std::map<std::string, const RoleObservation*> table;
        bool ok = true;
        for (const RoleObservation& o : readings[reading]) {
          LoopRole::Virtual v = role.virtual_rank(o.rank, o.np, o.k);
          std::string cls     = c.classify(v.rank, v.np);
          auto [it, inserted] = table.emplace(cls, &o);
          if (not inserted && it->second->variant != o.variant) {
            ok = false;
            // The message shows the most refined classifier of the first rotating role in the first
            // reading (the one a reader expects to fit): later candidates overwrite earlier ones.
            if (conflict.empty() || (role.kind == LoopRole::Kind::Behind && reading == 0))
              conflict = "under '" + c.name() + " of " + role.name() + "', rank " + std::to_string(it->second->rank) +
                         " of " + it->second->profile + " in iteration " + std::to_string(it->second->k) +
                         " (variant " + std::to_string(it->second->variant) + ") and rank " + std::to_string(o.rank) +
                         " of " + o.profile + " in iteration " + std::to_string(o.k) + " (variant " +
                         std::to_string(o.variant) + ") are both of class '" + cls + "'";
            break;
          }
        }
        if (ok) {
          RoleRule rule{role, c, {}};
          for (const auto& [cls, o] : table)
            rule.classes.emplace_back(cls, o->variant);
          return {rule, reading};
        }
      }
  throw InputError({}, "no role rule explains which calls each rank makes in each iteration of the numbered loop: " +
                           conflict +
                           " (roles: fixed, (r-k) mod Np, (r+k) mod Np, grid coordinates minus k; classes of the "
                           "virtual rank as for the group rule)");
}

}  // namespace gridcast::models::trace
