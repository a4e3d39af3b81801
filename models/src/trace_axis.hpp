// Axis sweeps (the fit's side; synthesis is in trace_synth.cpp): calls made axis after axis of the
// MPI_Dims_create(Np, 3) grid whose calls along an axis depend on the axis' extent class (LAMMPS'
// CommBrick::exchange). Finding them in the training profiles, cutting them out of each rank's calls and
// fitting their AxisSweep. Internal to the models library. See docs/reference/trace-model.md, "Axis sweeps".
#pragma once

#include "gridcast/models/trace_model.hpp"
#include "trace_numbered.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gridcast::models::trace::detail {

/// One call of a per-axis block as the scan compares them: what it is (an index into AxisScan::keys) and
/// the direction of its peer and source along the block's axis (0: none).
struct AxisElem {
  std::uint32_t key = 0;
  int peer_dir = 0;
  int src_dir  = 0;
  bool operator==(const AxisElem&) const = default;
};

/// Sizes of one block position per (Nw, Np): (sum, observations).
struct AxisSizes {
  std::map<std::pair<double, double>, std::pair<double, std::uint64_t>> bytes, recv_bytes;
  bool any_bytes = false, any_recv_bytes = false;
  std::int64_t request_back = 0;
  std::vector<std::int64_t> requests_back;
  bool requests_seen = false;  ///< request_back and requests_back were set by a first occurrence
};

/// One sweep found in the training profiles: its block per extent class, and what was observed there.
struct AxisKind {
  std::array<std::optional<std::vector<AxisElem>>, 3> blocks;
  std::array<std::vector<AxisSizes>, 3> sizes;  ///< per class, per block position
  std::uint64_t occurrences = 0;
  /// Every run it was learned from ended with the last axis' calls of the sweep (what followed was another
  /// axis): then a grid with two walked axes, whose runs have no middle axis to anchor them, must too.
  bool last_exact = true;
};

struct AxisScan {
  std::vector<CallToken> keys;  ///< what each AxisElem::key is (tags and communicators as recorded)
  std::vector<AxisKind> kinds;
  /// Per profile (as given to the scan), per rank: the sweeps cut out, in stream order (indices in the
  /// stream of the numbered loops' filter).
  std::map<std::filesystem::path, std::vector<std::vector<Cut>>> cuts_of;
  bool empty() const { return kinds.empty(); }
  /// The cuts of rank `rank` of the profile at `path`; nullptr when there are none.
  const std::vector<Cut>* cuts(const std::filesystem::path& path, int rank) const;
};

/// Looks for axis sweeps in the profiles (their calls read through the numbered loops' cuts): a sweep
/// is learned from training grids with three axes of more than one rank, where the middle axis' calls are
/// whole, and kept only where the calls along an axis differ between extent classes (else the plain model
/// expresses them: loop counts that read the grid's shape, grid_loop peers). Every occurrence in every
/// profile is then cut out. Deterministic.
AxisScan scan_axis_sweeps(const std::vector<std::filesystem::path>& paths, const NumberedScan& numbered);

/// The placeholder's function name of sweep `k` ("gridcast:axis-sweep-0"), an Op::Sleep call of no duration.
std::string axis_sweep_placeholder_name(std::size_t k);

/// Fits every sweep of `scan`: `token_of` gives the model token id of a block call, `placeholder_of` that
/// of sweep k's placeholder.
std::vector<AxisSweep> fit_axis_sweeps(const AxisScan& scan, const std::function<std::uint32_t(const CallToken&)>& token_of,
                                       const std::function<std::uint32_t(std::size_t)>& placeholder_of);

/// The neighbour of `rank` along `axis` of the periodic grid `dims`, `dir` (+1/-1) ranks away.
int grid_neighbour(int rank, const std::vector<int>& dims, int axis, int dir);

}  // namespace gridcast::models::trace::detail
