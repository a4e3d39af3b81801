// Quantities that differ between ranks as their blocks of a block decomposition do: a global grid of
// cells split over the MPI_Dims_create grid in blocks, the first (cells mod ranks) blocks along an axis
// one cell larger. A halo message carries the block's face, a compute site works on the block, and
// both then differ by a cell between ranks wherever the grid does not divide. See
// docs/reference/trace-model.md, "Sizes that differ between ranks as their blocks do".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::models::trace {

/// Block `i` of `cells` split over `blocks`: cells / blocks, plus one for the first cells mod blocks.
constexpr std::int64_t block_extent(std::int64_t cells, std::int64_t blocks, std::int64_t i)
{
  return cells / blocks + (i < cells % blocks ? 1 : 0);
}

/// value(r) = coef x the product over `axes` of rank r's block extent along the axis: a global extent of
/// round(cells_per_nw x Nw) cells split over that axis of the MPI_Dims_create(Np, dims) grid (dims 1:
/// the ranks in a line, r's coordinate r itself). Rounded to a whole number for an `integer` quantity.
struct BlockShare {
  struct Axis {
    int axis = 0;
    double cells_per_nw = 0;
    bool operator==(const Axis&) const = default;
  };
  int dims = 1;
  std::vector<Axis> axes;  ///< in increasing axis order, no axis twice
  double coef = 0;
  bool integer = false;

  /// At `nw` for the rank at `coords` of the grid `grid` (dims_create(Np, dims), grid_coords(r, grid)).
  double eval(double nw, const std::vector<int>& grid, const std::vector<int>& coords) const;
  /// "288*block(8*Nw, dims2[1])": the axes' factors, dims1[0] the rank line.
  std::string text() const;
  bool operator==(const BlockShare&) const = default;
};

/// One rank's value of a quantity at a training point: the same in every call the rank made at that
/// template position (a rank whose calls took several values gives no such point).
struct RankFitPoint {
  double nw = 0;
  int np = 0;
  int rank = 0;
  double value = 0;
};

/// The BlockShare that reproduces every point (integers within 0.5, others within 1e-5 relative: SMPI's
/// 6 significant digits), the simplest first: the rank line before a 2-D grid before a 3-D one, fewer
/// axes first. Each axis' global extent is read from ranks that differ only along that axis: where their
/// values differ, the larger is (q + 1) / q times the smaller, q the small block, and which coordinates
/// have the large one says how many cells are left over. An axis whose blocks never differ in training
/// cannot be read, and no share over it is tried. nullopt where the values never differ between ranks
/// of a point, or no share reproduces them.
std::optional<BlockShare> fit_block_share(const std::vector<RankFitPoint>& points, bool integer);

}  // namespace gridcast::models::trace
