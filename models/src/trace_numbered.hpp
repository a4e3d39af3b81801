// Numbered loops with rotating roles (the fit's side; synthesis is in trace_synth.cpp): finding them in
// the training profiles, cutting them out of each rank's calls, and fitting their NumberedLoop. Internal
// to the models library. See docs/reference/trace-model.md, "Numbered loops with rotating roles".
#pragma once

#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::models::trace::detail {

/// A filtering stream's own function table: the inner stream's ids mapped to its (which may add names).
struct FunctionIds {
  /// `id` of `inner`'s table, as an id of `table`.
  std::uint32_t map(const FunctionTable& inner, std::uint32_t id)
  {
    if (id >= ids.size())
      ids.resize(id + 1, kUnmapped);
    std::uint32_t& ours = ids[id];
    if (ours == kUnmapped)
      ours = table.intern(inner.name(id));
    return ours;
  }
  static constexpr std::uint32_t kUnmapped = ~std::uint32_t{0};
  FunctionTable table;
  std::vector<std::uint32_t> ids;  ///< inner function id -> ours
};

/// One call inside a numbered run, as recorded.
struct NumberedCallObs {
  std::uint64_t k = 0;  ///< the iteration
  std::string function;
  Op op = Op::Send;
  std::int32_t peer = kNoRank;
  std::uint64_t bytes = 0;
  std::uint64_t line = 0;
};

/// A run of a rank's calls that a placeholder call stands in for.
struct Cut {
  std::size_t begin = 0, end = 0;  ///< calls [begin, end) of the rank's stream
  std::string placeholder;         ///< the placeholder's function name
};

/// One binomial tree recognized in a profile (the same for every rank).
struct TreeObs {
  TreeOp::Kind kind = TreeOp::Kind::Bcast;
  int root = 0;
  std::int32_t tag = 0;
  std::uint64_t bytes = 0;
  std::string send_fn, recv_fn;  ///< the functions of its sends and receives (empty: none seen)
};

/// What the fit found in one training profile.
struct NumberedProfile {
  std::filesystem::path path;
  double nw = 0;
  int np    = 0;
  /// Per rank, per loop: the calls [begin, end) of its run (indices in the rank's stream).
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> runs;
  /// Per rank, per loop: the run's calls with their iteration.
  std::vector<std::vector<std::vector<NumberedCallObs>>> calls;
  std::vector<std::int64_t> first_tag;  ///< per loop: the tag of iteration 0 in this profile
  std::vector<std::uint64_t> count;     ///< per loop: iterations (the largest k + 1 of any rank)
  std::vector<std::vector<TreeObs>> trees;  ///< per tree sequence, its trees
  std::vector<std::vector<Cut>> cuts;       ///< per rank: every run replaced, in stream order
};

/// Every profile's numbered loops. A loop is a cluster of the tags of a profile's blocking sends and
/// receives (sorted distinct tags less than `max_gap` apart, at least `min_iterations` of them) whose
/// calls are, in every rank, one contiguous run of non-decreasing tags; the loops must be as many in
/// every profile (else `profiles` is empty and the fit proceeds as without numbered loops).
struct NumberedScan {
  std::vector<NumberedProfile> profiles;
  std::vector<std::int64_t> step;  ///< per loop: the gcd of the differences between its distinct tags
  std::size_t tree_sequences = 0;  ///< per profile as many (NumberedProfile::trees)
  std::size_t loops() const { return step.size(); }
  /// The cuts of rank `rank` of the profile at `path`; nullptr when there are none.
  const std::vector<Cut>* cuts(const std::filesystem::path& path, int rank) const;
};

NumberedScan scan_numbered(const std::vector<std::filesystem::path>& paths, std::size_t min_iterations,
                           std::int64_t max_gap);

/// The placeholder's function name of loop `loop` ("gridcast:numbered-loop-0") and of tree sequence
/// `seq` ("gridcast:tree-sequence-0"). Placeholders are Op::Sleep calls of no duration.
std::string numbered_placeholder_name(std::size_t loop);
std::string tree_placeholder_name(std::size_t seq);

/// `inner` with each cut replaced by one placeholder call (nullptr cuts: `inner` itself).
CallStreamPtr filter_numbered(CallStreamPtr inner, const std::vector<Cut>* cuts);

/// Fits every tree sequence of `scan`: `token_of(function, op, tag)` gives a model token id.
std::vector<TreeSequence> fit_trees(const NumberedScan& scan,
                                    const std::function<std::uint32_t(const std::string&, Op, std::int32_t)>& token_of,
                                    const std::function<std::uint32_t(std::size_t)>& placeholder_of);

/// Fits every loop of `scan`. `token_of(function, op)` gives the model token id of a numbered call
/// (tag kVaryingTag), `placeholder_of(loop)` that of the placeholder; sizes fitted approximately add a
/// line to `warnings`. Throws InputError naming the loop, profiles and ranks where a quantity has no
/// expression.
std::vector<NumberedLoop> fit_numbered(const NumberedScan& scan,
                                       const std::function<std::uint32_t(const std::string&, Op)>& token_of,
                                       const std::function<std::uint32_t(std::size_t)>& placeholder_of,
                                       std::vector<std::string>& warnings);

}  // namespace gridcast::models::trace::detail
