// Fitted quantities of the trace-scaling model: a loop count, a message size or a compute amount as a
// linear combination of candidate features of (Nw, Np), chosen by leave-one-out cross-validation.
// See docs/reference/trace-model.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::models::trace {

/// The candidate features, in order of simplicity (the order breaks ties between equally good models).
/// Names are what model.json writes ("Nw/Np", "(Nw/Np)^(2/3)", "log2(Np)"...).
std::size_t feature_count();
const std::string& feature_name(std::size_t feature);
std::optional<std::size_t> feature_from_name(std::string_view name);
double feature_value(std::size_t feature, double nw, double np);

/// `v` in the shortest form that reads back as the same double ("8", "0.5", "1e-05"): how model.json's
/// texts write coefficients.
std::string number_text(double v);

/// One training observation of a quantity: its value at one (Nw, Np) point.
struct FitPoint {
  double nw = 0;
  double np = 0;
  double value = 0;
};

struct Term {
  std::size_t feature = 0;
  double coef = 0;
};

/// value(Nw, Np) = sum of coef x feature. `integer` quantities (counts, sizes) are rounded to the nearest
/// integer when evaluated.
struct Formula {
  std::vector<Term> terms;
  bool integer = false;
  /// Leave-one-out error: mean over the training points of |predicted - observed| / max(|observed|, 1),
  /// each point predicted by the model refitted without it (same features), before rounding. Absent with fewer than
  /// (terms + 1) distinct points, where nothing can be left out.
  std::optional<double> cv_error;
  int points = 0;  ///< distinct (Nw, Np) points it was fitted on
  /// Something done every `period` iterations of a loop whose total count is the sum of the terms
  /// (0: a plain formula): the count of whole blocks, floor(total / period), or with `remainder` the
  /// iterations left after them, total mod period. A loop of 2*Nw steps with a reduction every 10th
  /// folds into (steps x10, reduce) x M then steps x T; M and T are these two parts of one total.
  int period = 0;
  bool remainder = false;

  double eval(double nw, double np) const;
  /// "8*Nw^2", "2*Nw*Np - 2*Nw", "3": coefficients in their shortest exact form.
  std::string text() const;
};

/// Fits `points` (several observations at one (Nw, Np) are averaged first). Tries every subset of at
/// most `max_terms` features, keeps the smallest subset with the lowest leave-one-out error (a subset
/// that predicts every left-out point exactly ends the search). Throws InternalError for no points.
Formula fit_formula(const std::vector<FitPoint>& points, bool integer, int max_terms = 3);

/// For measured (noisy) quantities: the simplest subset (fewest terms, then the feature order) whose
/// leave-one-out error is within `relative` x the best error + `absolute` of the best, rather than the
/// best itself. Four noisy points can make a cubic look best; it runs away outside the training range.
/// A single power below 1 of Nw or Nw/Np is not taken where the affine form (1 + Nw, 1 + Nw/Np) is also
/// within the tolerance: it bends like the affine form over the training range and falls below it
/// outside (docs/reference/latency-model.md, "Measured work").
struct Parsimony {
  double relative = 0;
  double absolute = 0;
};
Formula fit_formula(const std::vector<FitPoint>& points, bool integer, int max_terms, Parsimony parsimony);

/// Where a fitted count or size must stay plausible: from the training points up to (nw_hi, np_hi).
struct PlausibleRange {
  double nw_hi = 0;
  double np_hi = 0;
  /// A count of iterations: a formula of Np alone must also give whole numbers (within 1e-6) at 2x, 4x...
  /// the smallest training Np past the largest, where every training value was whole. Counts are also
  /// the only quantities fitted with the feature log2(Nw) (a multigrid's levels).
  bool whole = false;
  /// The dimension count (2 or 3) of the code's process grid, where its point-to-point calls name one
  /// (their peers grid neighbours of that grid only; 0: none, or both): a formula that reads the other
  /// MPI_Dims_create grid's extents gives way to one of the code's own grid that fits the training points
  /// as well. At np 8, 16, 32 the extent dims2[1] (2, 4, 4) is dims3[0] too; at np 64 it is 8 against 4.
  int grid_dims = 0;
};

/// Why `f` is not a plausible model of `points` on `range` (empty: it is): negative where no training
/// value was, not finite, or decreasing (increasing) along Nw or Np where every training series along
/// that axis is non-decreasing (non-increasing) and one moves (along Np, not for a formula of the
/// process grid's shape or extents, which no trend in Np follows). Checked at every training Nw and Np
/// and at geometric steps from the largest to the range's end, unrounded.
std::string implausibility(const Formula& f, const std::vector<FitPoint>& points, PlausibleRange range);

/// A formula chosen as fit_formula chooses, among the plausible ones only: where the best by
/// leave-one-out is implausible on `range`, the next candidates by leave-one-out error (the simpler
/// first on a tie), and where no candidate is plausible the mean of the training points.
struct PlausibleFit {
  Formula formula;
  bool best = true;      ///< the best candidate was plausible (false: a later one, or the mean)
  bool mean = false;     ///< no candidate was: the training points' mean
  std::string rejected;  ///< the best candidate and why it lost, where it did
};
PlausibleFit fit_plausible_formula(const std::vector<FitPoint>& points, bool integer, PlausibleRange range,
                                   int max_terms = 3);

/// The grid-shape features (number of axes of the MPI_Dims_create(Np, 3) or (Np, 2) grid with more than 1
/// or more than 2 ranks: "axes3>1(Np)"...) come last in the feature list, from this index on. fit_formula
/// does not search them; fit_grid_formula does.
std::size_t first_grid_feature();

/// An integer quantity that follows the shape of the process grid (a loop over the axes a code
/// exchanges along: 2 swaps per axis of extent > 1): the simplest of `a*s`, `a + b*s`, `a*s1 + b*s2` (s a
/// grid-shape feature, s1 and s2 those of one grid) that reproduces every point, each point also predicted
/// by the formula refitted without it where the others determine it, and more distinct grid shapes than
/// coefficients. nullopt where none does, or for fewer than 2 points.
std::optional<Formula> fit_grid_formula(const std::vector<FitPoint>& points);

/// A message to a neighbour along `axis` of the MPI_Dims_create(Np, `dims`) grid (dims 2 or 3) in a
/// block decomposition carries the block's face normal to that axis: `c*f` or `a + c*f`, f the product of
/// the block's extents along the other axes (Nw/dims2[1-axis], Nw^2/(dims3[i]*dims3[j])). The formula
/// when it reproduces every point as fit_grid_formula requires; nullopt otherwise. Training grids whose
/// axis always has the same extent cannot tell this face from Nw^2/Np times a constant (a 2x2x2, 4x2x2,
/// 4x4x2 series has dims3[2] = 2 throughout); only the face follows the code to a 8x4x4 grid. Also
/// nullopt where the other axes' extents are the same at every point (then the face is a constant times
/// a power of Nw, and the simpler formula says the same).
std::optional<Formula> fit_face_formula(const std::vector<FitPoint>& points, int dims, int axis);

/// Each point predicted by `f`'s features refitted on the other points (leave-one-out), unrounded; nullopt
/// where the other points cannot determine them. Points at one (Nw, Np) are averaged first, as in
/// fit_formula; the result follows `points` one to one.
std::vector<std::optional<double>> loo_predictions(const Formula& f, const std::vector<FitPoint>& points);


// ---- quantities that change with a loop index ------------------------------------------------------------

/// One observation of a quantity inside a loop: at (Nw, Np), in iteration `k`, the value was `value`.
struct LoopFitPoint {
  double nw = 0;
  double np = 0;
  std::uint64_t k = 0;
  double value = 0;
};

/// value(Nw, Np, k) = base(Nw, Np) + slope(Nw, Np) x k: a message that shrinks by the same amount each
/// iteration (the trailing matrix of a factorization loses one panel per step: HPL's panel broadcast is
/// 8 NB (N - k NB) bytes plus a constant). Rounded when `integer`, like Formula.
struct LoopFormula {
  Formula base;
  Formula slope;
  bool integer = false;
  /// A plateau: value = min(cap, base + slope x k) (a pipeline that carries at most Np - 1 pieces, then
  /// fewer as the work runs out).
  std::optional<Formula> cap;
  /// Iteration 0 apart: its value (the whole vector a pipeline starts with).
  std::optional<Formula> first;
  double eval(double nw, double np, std::uint64_t k) const;
  /// "128*Nw + 136 - 2048*k", "(Nw/Np) + (-8)*k", "min(128*Np - 128, 8*Nw - 128*k); k = 0: 8*Nw".
  std::string text() const;
};

/// Fits value = a + b x k at each (Nw, Np) by least squares, then a and b across the points with
/// fit_formula. A point seen at one iteration only gives its base through the slope fitted on the others.
/// Where that fails, the same with iteration 0 apart, then with a plateau min(cap, a + b k) (the cap the
/// largest value at each point, the line through the values below it), then both; the first shape
/// whose formulas reproduce every observation wins. nullopt (with `why` set, from the plain line) where
/// none does (within 1e-9 relative, or 0.5 for integers), or no point has two distinct iterations.
std::optional<LoopFormula> fit_loop_formula(const std::vector<LoopFitPoint>& points, bool integer, std::string& why,
                                            int max_terms = 3);

}  // namespace gridcast::models::trace
