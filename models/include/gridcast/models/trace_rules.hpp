// Rank expressions of the trace-scaling model: a communication's peer (or a collective's root) as a
// function of (rank, Np, loop index), and the rule that maps a rank to its trace group at any Np.
// See docs/reference/trace-model.md.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gridcast::models::trace {

/// MPI_Dims_create(np, d) with every dimension free: the most balanced factorisation, dimensions in
/// non-increasing order (what MPICH, Open MPI and SMPI return).
std::vector<int> dims_create(int np, int d);
/// Row-major coordinates of `rank` in `dims` (MPI_Cart_create without reordering).
std::vector<int> grid_coords(int rank, const std::vector<int>& dims);
/// The neighbour of `rank` at distance `step` along `axis` of the grid `dims` (row-major), or nullopt off
/// the edge of a non-periodic grid. No allocation: it is on the fit's and synthesis' hot paths.
std::optional<int> grid_neighbour(int rank, const std::vector<int>& dims, std::size_t axis, int step, bool periodic);

/// A peer, source or root as an expression of the rank r, the rank count Np and the loop indices
/// (i0 = index in the innermost enclosing loop, i1 in the next one out...).
struct RankExpr {
  enum class Kind : std::uint8_t {
    Any,      ///< MPI_ANY_SOURCE, kept as such
    Fixed,    ///< a
    FromEnd,  ///< Np - a   (a = 1: the last rank)
    Offset,   ///< (r + a) mod Np
    Xor,      ///< r XOR a
    XorLoop,  ///< r XOR 2^i(level)
    Cycle,    ///< a + (i(level) mod (Np - a)): a loop serving ranks a .. Np-1 in turn
    Rotate,   ///< (i(level) + a) mod Np: a role that moves one rank per iteration from rank a (a root of step s + 1)
    Grid,     ///< neighbour of r at distance `a` (+1/-1) along `dim` of the dims_create(Np, `dims`) grid
    /// A neighbour in the dims_create(Np, `dims`) grid whose axis and direction follow the loop index i
    /// (level `level`): one call site addressing every face neighbour in turn, as LAMMPS' CommBrick swaps
    /// do. The loop walks the grid's axes (only those of extent > 1 unless `all_axes`: a code skips the
    /// axes where its neighbour is itself), `block` iterations per axis: axis = axes[i div block], the
    /// direction `a` (+1/-1) at even i mod block and -a at odd. `reversed`: the same sweep walked
    /// backwards (the reverse communication of the halo: the last axis first, the block's positions in
    /// opposite order). `there_and_back`: the loop repeats the sweep and then its reverse, the reverse
    /// going the other way (a halo's forward then reverse communication every step: what was received
    /// from the upper neighbour is sent back to it); the index wraps around every 2 sweeps. Without it,
    /// beyond the last axis the expression has no value.
    GridLoop,
    /// The linear index of r's coordinates along the axes in the bit mask `a` of the dims_create(Np,
    /// `dims`) grid (row-major, as MPI_Cart_create numbers it): with one axis, r's coordinate along it.
    /// What codes pass as the color or key of MPI_Comm_split for row and column communicators, and r's
    /// rank in an MPI_Cart_sub communicator that keeps those axes.
    GridCoords,
    /// r with its coordinates along the axes in the bit mask `a` set to 0: the first rank of r's
    /// sub-grid along those axes (the color the profiler records for MPI_Cart_sub keeping them).
    GridOrigin,
    /// A diagonal neighbour: r's coordinates in the dims_create(Np, `dims`) grid moved by -1, 0 or +1
    /// along each axis, along two axes or more (one axis is Grid): the edge and corner neighbours of a
    /// 9- or 27-point stencil's halo. The offsets are `a`'s base-3 digits, axis 0 first (digit d: offset
    /// d - 1; offset(k)); `periodic` wraps, otherwise the neighbour off an edge has no value.
    GridOffset,
    /// The neighbour at the offsets `table[i]` (each coded as GridOffset's `a`) of the dims_create(Np,
    /// `dims`) grid, i the index of loop `level`: one call site walking a code's table of directions in
    /// turn (`for k: MPI_Irecv(..., nbr[k], ...)` over the 8 or 26 neighbours of a 9- or 27-point halo).
    /// Learned from the observations (RankSeries::grid_table), never a candidate of the first one.
    GridTable,
  };
  RankExpr() = default;
  RankExpr(Kind k, int a_ = 0) : kind(k), a(a_) {}  // NOLINT(google-explicit-constructor): {kind, a}

  Kind kind = Kind::Fixed;
  int a = 0;
  int level = 0;           ///< XorLoop, Cycle, Rotate
  int dims = 0;            ///< Grid, GridLoop, GridCoords, GridOrigin, GridOffset: dimension count of the grid
  int dim = 0;             ///< Grid: the axis
  bool periodic = false;   ///< Grid, GridLoop, GridOffset: wraps around
  int block = 0;           ///< GridLoop: iterations per axis (1 or 2)
  bool reversed = false;   ///< GridLoop: the sweep walked from its last iteration to its first
  bool all_axes = false;   ///< GridLoop: axes of extent 1 are walked too (their neighbour is the rank itself)
  bool there_and_back = false;  ///< GridLoop: the sweep, then its reverse in the other direction, repeated
  std::vector<std::uint8_t> table;  ///< GridTable: the offsets code (GridOffset's `a`) of each iteration
  static constexpr std::size_t kMaxTable = 64;  ///< GridTable: longest table (iterations of its loop)

  /// GridOffset: the offset along `axis` (-1, 0 or +1), and `a` for the offsets of each axis.
  int offset(int axis) const { return offset_in(a, axis); }
  static int offset_in(int code, int axis);
  static int offsets_code(const std::vector<int>& offsets);

  /// The value for `rank` of `np`, with `loop` the indices of the enclosing loops, outermost first.
  /// Returns nullopt where the expression has no value (a non-periodic grid neighbour off the edge,
  /// a loop level the call does not have).
  std::optional<int> eval(int rank, int np, const std::uint64_t* loop, int depth) const;
  /// True when the value changes with the loop index (it cannot be computed once per rank).
  bool uses_loop() const
  {
    return kind == Kind::XorLoop || kind == Kind::Cycle || kind == Kind::Rotate || kind == Kind::GridLoop ||
           kind == Kind::GridTable;
  }
  /// "r+1 mod Np", "any", "grid3p(dim 0, +1)", "1 + i0 mod (Np-1)".
  std::string text() const;
  /// A stable name of the kind for model.json ("fixed", "offset", ...), and its inverse.
  std::string_view kind_name() const;
  static std::optional<Kind> kind_from_name(std::string_view name);
};

/// One observation of a rank-valued quantity: at rank `rank` of `np`, inside loops with indices `loop`
/// (outermost first), the value was `value` (-1: any source).
struct RankObservation {
  int rank = 0;
  int np = 0;
  std::vector<std::uint64_t> loop;
  int value = 0;
};

/// The candidate expressions an observation admits, simplest first, each to be checked against every
/// other observation (the constants come from this one: a fixed rank, an offset...). `coordinates`: also
/// the grid coordinates and sub-grid origins (GridCoords, GridOrigin) of every grid of 1 to 3 dimensions,
/// which name communicators (split colors and keys) rather than partners.
std::vector<RankExpr> rank_expr_candidates(const RankObservation& first, bool coordinates = false);
/// Removes from `candidates` those that do not give `value` at (rank, np, loop); then removes duplicates
/// in the sense of same_target() when `dedupe`.
void filter_rank_exprs(std::vector<RankExpr>& candidates, int rank, int np, const std::uint64_t* loop, int depth,
                       int value);

/// Every expression that gives every observation's value, simplest first: in the order of RankExpr::Kind;
/// grids by increasing dimension count, periodic before non-periodic (they differ only where training
/// never crossed an edge), axis by axis, the lower neighbour before the upper (MPI_Cart_shift's order).
/// Empty when none does.
std::vector<RankExpr> fit_rank_exprs(const std::vector<RankObservation>& observations);
/// The first of fit_rank_exprs(), or nullopt.
std::optional<RankExpr> fit_rank_expr(const std::vector<RankObservation>& observations);
/// Same expression up to the periodic flag (grid neighbours that training cannot tell apart). GridLoop
/// expressions are told apart by every field but `periodic`.
bool same_target(const RankExpr& a, const RankExpr& b);

/// A message tag that changes from call to call (codes that number their messages): a constant, or
/// a + b x i(level), an affine function of a loop index.
struct TagExpr {
  /// Fixed: a. Loop: a + b*i (i: the index of the loop `level` levels out from the innermost).
  /// LoopFirst: `first` in the loop's first iteration, a + b*i in the others (a first iteration that
  /// differs only in its tags: HPL numbers its first panel's messages apart).
  /// Affine: a + the sum of `terms`, each b times a loop's index counted from its start (i) or from its end
  /// (n - 1 - i, n the loop's count in this instance): a V-cycle tags level l and colour c with 2*l + c,
  /// on the way down 2*i1 + i0, on the way up, from the coarsest level (whose number follows the size)
  /// back to 0, 2*(n1 - 1 - i1) + i0.
  enum class Kind : std::uint8_t { Fixed, Loop, LoopFirst, Affine };
  struct Term {
    int level = 0;          ///< as `level` above
    std::int64_t b = 0;
    bool from_end = false;  ///< n - 1 - i instead of i
    bool operator==(const Term&) const = default;
  };
  Kind kind = Kind::Fixed;
  std::int64_t a = 0;
  std::int64_t b = 0;
  int level = 0;
  std::int64_t first = 0;  ///< LoopFirst
  std::vector<Term> terms;  ///< Affine
  /// `loop`: the enclosing loops' indices, outermost first; `counts`: their iteration counts in this
  /// instance (read by Affine terms counted from the end only).
  std::optional<std::int32_t> eval(const std::uint64_t* loop, const std::uint64_t* counts, int depth) const;
  std::string text() const;  ///< "7", "100 + 1*i0", "0 + 1*i0 + 2*(n1 - 1 - i1)"
};

/// Fits a TagExpr one observation at a time. The constant and the forms in one loop index are fitted as
/// the calls come; the affine forms in several indices from the distinct (indices, counts, tag)
/// observations, kept up to kAffineObservations (beyond, none is fitted: memory stays bounded).
class TagFitter {
public:
  static constexpr std::size_t kAffineObservations = 1024;
  static constexpr std::size_t kAffineDepth        = 5;  ///< deeper positions get no affine form (3^depth candidates)

  /// `loop`: the enclosing loops' indices, outermost first (the same depth at every call); `counts`: their
  /// iteration counts in this instance, in the same order.
  void add(const std::vector<std::uint64_t>& loop, const std::vector<std::uint64_t>& counts, std::int32_t tag);
  bool seen() const { return seen_; }
  /// The constant if the tag never changed, else the first loop level whose index explains every tag,
  /// else one whose index explains every tag but the first iteration's.
  std::optional<TagExpr> result() const;
  /// The affine form of fewest terms (indices from the start before indices from the end, inner levels
  /// first) that explains every tag; asked where neither result() nor a tag constant in each run does.
  std::optional<TagExpr> affine() const;

private:
  void add_first(const std::vector<std::uint64_t>& loop, std::int32_t tag);
  bool seen_ = false;
  bool fixed_ = true;
  std::int32_t v0_ = 0;
  std::vector<std::uint64_t> l0_;
  std::vector<int> state_;  ///< per level (0 = innermost): 0 undetermined, 1 determined, 2 ruled out
  std::vector<std::int64_t> a_, b_;
  // LoopFirst, per level: the tag at index 0, and the affine fit of the other iterations (state as above,
  // anchored at the first observation with a non-zero index).
  std::vector<int> state2_;
  std::vector<std::optional<std::int64_t>> first_;
  std::vector<std::optional<std::pair<std::int64_t, std::int64_t>>> anchor2_;  ///< (index, tag)
  std::vector<std::int64_t> a2_, b2_;
  // Affine: the distinct observations (indices, then counts, then the tag), while they stay few and of one depth.
  std::set<std::vector<std::int64_t>> obs_;
  std::vector<std::int64_t> scratch_;
  bool affine_possible_ = true;
};

// ---- rank-to-group rules ----------------------------------------------------------------------------

/// A candidate classification of ranks: a base feature ("all", "parity", "mod3" ... "mod8",
/// "node2"/"node4"/"node8"/"node16" (first / middle / last rank of a node of k consecutive ranks),
/// "grid2"/"grid3" (corner, edge, face or interior of the dims_create grid), "grid2-sides"/"grid3-sides"
/// (low, mid, high or both ends along each axis)) refined by whether the rank is the first (rank 0)
/// and/or the last (Np - 1).
struct RankClassifier {
  std::string base = "all";
  bool first = false;
  bool last = false;

  /// "all", "first", "first+last+parity", "grid3"...
  std::string name() const;
  static std::optional<RankClassifier> from_name(std::string_view name);
  /// The class of `rank` among `np` ranks, e.g. "first=0 last=1 parity=1" or "grid3=corner".
  std::string classify(int rank, int np) const;
  /// Every candidate, simplest first.
  static std::vector<RankClassifier> candidates();
};

/// Which trace group each rank of one training profile belongs to.
struct GroupAssignment {
  std::string profile;  ///< for error messages
  int np = 0;
  std::vector<int> group_of_rank;
};

/// The rank-to-group rule: a classifier and the group of each class seen in training.
struct GroupRule {
  RankClassifier classifier;
  std::vector<std::pair<std::string, int>> classes;  ///< (class, group), sorted by class

  /// The group of `rank` at `np`; throws InputError when the rank's class never occurred in training
  /// (the target is outside what the model can express). Under a grid-sides rule, a class no training
  /// profile had whose place along some axes is new (the middle of an axis that had at most 2 ranks in
  /// every training grid) takes the group of the classes that differ from it only along those axes, where
  /// they all agree (the low and high ends of the axis ran one template: the middle does too); where no
  /// place is new, the same along each single axis in turn.
  int group_of(int rank, int np) const;
  /// The class of `rank` at `np` when no training profile had it (group_of placed it by the grid's
  /// ends), else empty.
  std::string unseen_class(int rank, int np) const;
};

/// The first candidate (simplest first) under which no class holds ranks of two groups. Throws InputError
/// naming two ranks and their profiles in conflict under the most refined candidate when none fits.
GroupRule infer_group_rule(const std::vector<GroupAssignment>& assignments);


// ---- loop-index-relative roles ----------------------------------------------------------------------

/// Where a rank stands in iteration k of a loop whose work rotates over the ranks: a panel of a block-
/// cyclic factorization owned by rank k mod Np (or by grid column k mod Q), a pipeline whose stage 0
/// moves by one rank per step. The rank's virtual rank v among `vnp` ranks is its distance from the
/// iteration's leader; a RankClassifier then classifies v as it classifies ranks for the group rule
/// (v = 0: the owner, v = vnp - 1: the end of a ring...). See docs/reference/trace-model.md, "Rotating roles".
struct LoopRole {
  enum class Kind : std::uint8_t {
    Fixed,       ///< v = r, vnp = Np: the role does not depend on k
    Behind,      ///< v = (r - k) mod Np: rank k mod Np leads iteration k
    Ahead,       ///< v = (r + k) mod Np: rank -k mod Np leads (a ring walked downwards)
    GridBehind,  ///< v = (c[dim] - k) mod dims[dim] on the dims_create(Np, dims) grid, vnp = dims[dim]
    GridAll,     ///< every coordinate c[d] - k mod dims[d]; v the row-major rank of those, vnp = Np
  };
  Kind kind = Kind::Fixed;
  int dims = 0;  ///< GridBehind, GridAll: dimension count of the grid
  int dim  = 0;  ///< GridBehind: the axis

  struct Virtual {
    int rank = 0;
    int np   = 0;
  };
  Virtual virtual_rank(int rank, int np, std::uint64_t k) const;
  /// "fixed", "(r-k) mod Np", "(r+k) mod Np", "(c1-k) mod d1 of grid2", "(c-k) mod d of grid2".
  std::string name() const;
  static std::optional<LoopRole> from_name(std::string_view name);
  /// Every candidate, simplest first: fixed, behind, ahead, then the grid forms by dimension count
  /// (2, 3) and axis.
  static std::vector<LoopRole> candidates();
};

/// One iteration of a rotating loop: rank `rank` of `np` ran variant `variant` (an id of its call
/// sequence in that iteration; the empty sequence is a variant too) in iteration `k`.
struct RoleObservation {
  int rank = 0;
  int np   = 0;
  std::uint64_t k = 0;
  int variant = 0;
  std::string profile;  ///< for error messages
};

/// The variant each (rank, iteration) runs: a role and a classifier of the virtual rank, with the
/// variant of each class seen in training.
struct RoleRule {
  LoopRole role;
  RankClassifier classifier;
  std::vector<std::pair<std::string, int>> classes;  ///< (class of the virtual rank, variant), sorted

  /// Throws InputError when the virtual rank's class never occurred in training.
  int variant_of(int rank, int np, std::uint64_t k) const;
  /// "variant by first+last of (r-k) mod Np".
  std::string text() const;
};

/// The simplest (role, classifier) pair, roles first then classifiers in their candidate order, under
/// which no class of virtual rank holds two variants. Throws InputError naming two observations in
/// conflict under the most refined pair of the simplest role when none fits, or for no observations.
RoleRule infer_role_rule(const std::vector<RoleObservation>& observations);
/// The same over several readings of the same observations, each with its own iteration index (counted
/// from the first or from the last iteration, shifted by one...): the simplest classifier first, then the
/// simplest role, then the first reading. Returns the rule and the index of its reading.
std::pair<RoleRule, std::size_t> infer_role_rule(const std::vector<std::vector<RoleObservation>>& readings);

}  // namespace gridcast::models::trace
