// The trace fit's reading of the training profiles: the first readings that decide what a token is
// (varying tags and split keys, polling rounds), numbered loops and axis sweeps cut out, then every rank
// read into tokens and folded (RankTrace). Later readings of a rank (read_tokens, open_rank) see the
// same calls through the same cuts. Internal to the models library.
#pragma once

#include "gridcast/models/profile.hpp"
#include "gridcast/models/trace_model.hpp"
#include "trace_axis.hpp"
#include "trace_fit_tokens.hpp"
#include "trace_numbered.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gridcast::models::trace::detail {

/// A rank's rolled trace. The calls themselves are not kept: the fit reads every rank twice, once to
/// fold it and once to collect the parameters of each template position, so memory stays proportional
/// to the rolled traces, not to the number of calls.
struct RankTrace {
  std::vector<RolledNode> rolled;
  std::size_t shape = 0;     ///< index into the distinct shapes
  std::uint64_t calls = 0;
  int group = -1;
  bool exact = false;        ///< its calls match the group's template (else: within the Myers threshold)
  std::vector<std::uint64_t> decisions;  ///< exact members: the iteration count of each loop instance, in order
};

struct LoadedProfile {
  std::filesystem::path path;
  std::string label;  ///< the path as given
  RunInfo info;
  std::set<std::string> functions;
  std::vector<RankTrace> ranks;
};

/// (profile, rank) of a rank being fitted.
using RankRef = std::pair<std::size_t, int>;

/// The training profiles, read and folded, in a deterministic order: by (Np, Nw, path).
class ProfileReader {
public:
  /// Reads and folds every profile. `axis_sweeps`: look for axis sweeps (AxisSweep) and cut them out of
  /// every rank's calls.
  ProfileReader(const std::vector<std::filesystem::path>& paths, const FitOptions& opt, bool axis_sweeps);

  std::vector<LoadedProfile>& profiles() { return profiles_; }
  const std::vector<LoadedProfile>& profiles() const { return profiles_; }
  RankTrace& rank_trace(const RankRef& pr) { return profiles_[pr.first].ranks[static_cast<std::size_t>(pr.second)]; }
  /// Whether this profile's point was recorded often enough for a per-call median (ProfileSeries).
  bool repeated(std::size_t profile) const { return repeated_[profile]; }
  TokenTable& tokens() { return tokens_; }
  const TokenTable& tokens() const { return tokens_; }
  const NumberedScan& numbered() const { return numbered_; }
  const AxisScan& axis() const { return axis_; }

  /// Gives the tokens their model ids (model.tokens); every rolled trace is renumbered by the caller.
  void assign_model_ids(TraceModel& model);
  /// A rank's calls, each numbered loop and axis sweep as its placeholder.
  CallStreamPtr open_rank(const ProfileDir& dir, int rank) const;
  /// A rank's calls as model token ids (a second reading of its file).
  void read_tokens(const RankRef& pr, std::vector<std::uint32_t>& out) const;
  /// Fits the numbered loops, binomial trees and axis sweeps cut out of the calls into `model`.
  void fit_cut_outs(TraceModel& model) const;

private:
  void scan_tags(const std::filesystem::path& path);
  void scan_keys(const std::filesystem::path& path);
  void scan_polls(const std::filesystem::path& path);
  void intern_cut_outs();
  void load(const std::filesystem::path& path);
  void check_same_application() const;
  /// Whether the profiles' function tables differ, and every profile of one Nw has the same one, each
  /// Nw run at two rank counts or more.
  bool functions_follow_nw() const;

  FitOptions opt_;
  NumberedScan numbered_;
  AxisScan axis_;
  TokenTable tokens_;
  std::vector<LoadedProfile> profiles_;
  std::vector<bool> repeated_;  // by profile: its (Nw, Np) has kInstanceProfiles profiles or more
  std::set<std::string> varying_tag_functions_;
  std::set<std::string> recv_tag_differs_;  ///< functions with a sendrecv whose receive tag is not its tag
  std::map<std::tuple<std::string, int, int>, std::set<std::set<std::int32_t>>> tag_sets_;  // (fn, np, rank); np 0: every Np (tags_follow_np)
  std::set<std::string> varying_key_functions_;
  std::set<std::string> varying_color_functions_;
  std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>> rounds_;  // provisional ids
  std::map<PollFollower, std::uint64_t> followers_;                         // provisional ids
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::vector<std::uint32_t>>> leftover_;
};

}  // namespace gridcast::models::trace::detail
