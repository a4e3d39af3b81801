// The representative trace model (seed paper 000, "3.3 Representative Trace Modeling"): each rank's call
// sequence folded into a rolled trace, ranks clustered into trace groups, a rule mapping ranks to groups
// at any Np, and every loop count, size, peer and compute amount fitted as a function of (Nw, Np).
// Fitted by fit_trace_model() (`gridcast fit`), written as model.json, and expanded lazily by
// SynthSource (trace_synth.hpp). See docs/reference/trace-model.md and docs/reference/model-json.md ("model.json").
#pragma once

#include "gridcast/models/call.hpp"
#include "gridcast/models/latency_model.hpp"
#include "gridcast/models/library_cost.hpp"
#include "gridcast/models/trace_block.hpp"
#include "gridcast/models/trace_formula.hpp"
#include "gridcast/models/trace_rules.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <span>
#include <vector>

namespace gridcast::models::trace {

// ---- folding -----------------------------------------------------------------------------------------

/// A rolled trace: calls, loops with a count, and polling constructs (a run of MPI_Test / *probe calls
/// whose length varies, kept as one node so that it does not break the loop structure around it).
struct RolledNode {
  enum class Kind : std::uint8_t { Call, Loop, Poll };
  Kind kind = Kind::Call;
  std::uint32_t token = 0;  ///< Call, Poll: the call's token (what a call is, apart from its parameters)
  std::uint64_t count = 1;  ///< Loop: iterations (where `counts_vary`, those of its first instance)
  /// Loop: its instances ran different iteration counts (folded by body, FoldOptions::counts_follow_data):
  /// its expansion is not `count` times its body, and a rank's loop counts are read by matching.
  bool counts_vary = false;
  std::vector<RolledNode> body;  ///< Loop
};

/// Whether some loop of `nodes` (at any depth) has instances of different iteration counts.
bool counts_vary(std::span<const RolledNode> nodes);

struct FoldOptions {
  std::size_t max_period = 256;  ///< longest loop body looked for, in (already folded) elements
  /// Fold the repeat that covers the most elements first (then every other run of the same body), instead
  /// of the shortest period first. Shortest-first folds `c c` across the boundary of two iterations of
  /// `c (L c)x2`, a multigrid V-cycle's way up (prolong, then smooth), so that each training size folds
  /// the cycle differently; the fit retries with this where the training sizes disagree
  /// (fit_trace_model). Sequences longer than kCoverageMaxElements fold shortest-first anyway.
  bool by_coverage = false;
  static constexpr std::size_t kCoverageMaxElements = 200000;
  /// Tokens that a polling construct absorbs between two of its polls: the compute bursts a profiler
  /// records between the calls of a polling loop (P burst P burst P is one construct, as P P P is).
  /// Indexed by token; empty: none.
  std::vector<bool> burst_token;
  /// Tokens of compute calls (bursts and compute library functions such as BLAS), indexed by token. A
  /// polling construct absorbs the work a rank does between its polls while it waits (HPL updates its
  /// trailing matrix in chunks between MPI_Iprobe calls): `P (W* P)*`, plus a lead `W*` just before its
  /// first poll when that lead reads as one of the rank's rounds. Empty: bursts only (burst_token).
  std::vector<bool> work_token;
  /// Per call (empty: none): a value that tells apart calls of one token in a first fold (the tags of
  /// functions whose tags are fitted per position, FitOptions::tags_follow_np); each loop body is then
  /// made plain and folded again. A step of rounds tagged by their number, `S0 C S1 C S2 C` twice, folds
  /// as `((S C)x3)x2`, where the plain fold reads one loop of six rounds, which no tag, peer or size
  /// formula of its index explains.
  std::vector<std::int32_t> refine;
  /// Loops of one body are the same loop whatever their iteration count (RolledNode::counts_vary). A
  /// solver that iterates until it converges runs 21, 22, then 21 iterations in three time steps: folded
  /// by body and count, the steps are three different blocks and no loop over the steps forms, and each
  /// training size cuts them elsewhere (no two sizes share a template). Folded by body, the steps are one
  /// loop whose inner count follows the data; the fit reads each instance's count by matching.
  bool counts_follow_data = false;
  std::size_t max_round_calls = 16;  ///< most non-burst compute calls in one round between two polls
  /// Rounds seen in every rank being fitted, by poll token (library calls of one round), added to the
  /// rank's own: a rank whose constructs never had two rounds still has its lead and leftover recognized.
  std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>> round_bodies;
  /// The optional leftover round: after a construct of poll P and the call X right after it (the receive
  /// of what P waited for), a rank that got the message before its rounds were done finishes them with
  /// one more round. Keyed by (P, X): the library calls that follow X when there is no leftover (calls
  /// that some construct of the fitted ranks has after X, and another has after X and a round); a construct
  /// followed by X, a round, then one of these absorbs that round. Empty: no leftover is recognized.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::vector<std::uint32_t>>> leftover_base;
};

/// What follows one polling construct: its poll token, the call X right after it, and the library calls
/// after X up to the next call that is not compute (at most 64).
struct PollFollower {
  std::uint32_t poll = 0;
  std::uint32_t next = 0;
  std::vector<std::uint32_t> after;
  auto operator<=>(const PollFollower&) const = default;
};
/// The followers of every construct of a rank (roles from poll_roles), and the rank's rounds by poll token.
void poll_followers(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask,
                    const std::vector<std::uint32_t>& roles, const FoldOptions& opt, std::vector<PollFollower>& out,
                    std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>>& rounds);
/// The leftover bases (FoldOptions::leftover_base) from the followers of every fitted construct: for each
/// (P, X), what follows X in one construct and what follows X and a round in another (the same code
/// with and without the leftover round). Deterministic.
std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::vector<std::uint32_t>>>
leftover_bases(const std::map<PollFollower, std::uint64_t>& followers,
               const std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>>& rounds);

/// Role of each call in polling constructs: kRoleNormal (not in one), kRoleAbsorbed (inside one), or, for
/// the first call of a construct, the token of the construct's polling call.
inline constexpr std::uint32_t kRoleNormal   = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint32_t kRoleAbsorbed = std::numeric_limits<std::uint32_t>::max() - 1;
/// The roles of a rank's calls (`poll_mask[i]`: call i is a polling call). A construct is a run of polls
/// of one token with only compute calls (FoldOptions::work_token) between two of them, at most
/// max_round_calls of them not bursts, plus the compute just before its first poll when its library calls
/// equal those of a round seen between two polls of that token in this rank (the chunk a rank updates
/// before it first probes). How many rounds it has is the timing's: it is one element of the rolled trace.
std::vector<std::uint32_t> poll_roles(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask,
                                      const FoldOptions& opt);

/// Folds a token sequence into a rolled trace. `is_poll(token)` marks polling calls: a run of them is
/// one Poll node. Tandem repeats are folded shortest period first, leftmost first, then again on the
/// folded sequence until nothing changes, so nested loops fold inside out; a first or last iteration
/// that differs stays outside the loop as it is (peeled). Deterministic.
template <class IsPoll>
std::vector<RolledNode> fold_tokens(const std::vector<std::uint32_t>& tokens, IsPoll is_poll, const FoldOptions& opt = {});

/// The same, with the poll marks given as a vector indexed by token.
std::vector<RolledNode> fold_sequence(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_token,
                                      const FoldOptions& opt = {});

/// The count-free shape of a rolled trace as a token sequence (loops bracketed), for Myers diffs between
/// ranks and for matching template positions across profiles.
std::vector<std::int64_t> shape_of(std::span<const RolledNode> nodes);
/// Number of calls a rolled trace expands to (polling constructs count once).
std::uint64_t expanded_size(const std::vector<RolledNode>& nodes);
/// Edit distance (Myers, via dtl) between two shapes divided by the longer length; 0 for two empties.
double shape_difference(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b);

// ---- the model -----------------------------------------------------------------------------------------

/// CallToken::tag of a function whose tags change from call to call: the tag is then a parameter of each
/// template position (TemplateNode::tag), not part of what the call is.
inline constexpr std::int32_t kVaryingTag = std::numeric_limits<std::int32_t>::min();
/// CallToken::key of a communicator-creating function whose split key differs between the ranks of one
/// profile (`MPI_Cart_create` records each rank's place in the new communicator; `MPI_Comm_split(comm,
/// color, rank)` passes the rank): the key is then a rank expression of each position (TemplateNode::key),
/// so the ranks still share one template.
inline constexpr std::int32_t kVaryingKey = std::numeric_limits<std::int32_t>::min();
/// CallToken::color of a communicator-creating function whose color differs between the ranks of one
/// profile (a row communicator's color is the rank's row; MPI_Cart_sub's is the first rank of its
/// sub-grid): the color is then a rank expression of each position (TemplateNode::color), as kVaryingKey.
inline constexpr std::int32_t kVaryingColor = std::numeric_limits<std::int32_t>::min();

/// What a call is, apart from the parameters fitted per position: its function, its op, and the fields
/// that code writes as constants (tags, communicator, split color and key).
struct CallToken {
  std::string function;
  Op op = Op::Compute;
  std::int32_t tag = 0;
  std::int32_t recv_tag = 0;
  std::int32_t comm = kWorldComm;
  std::int32_t color = 0;
  std::int32_t key = 0;
  std::int32_t new_comm = kWorldComm;
  /// A collective that creates a request (MPI_Iallreduce..., MPI_Comm_idup): synthesis gives it the next
  /// request id, as an isend's, and the wait, test or waitall of the template completes it.
  bool nonblocking = false;
  bool operator==(const CallToken&) const = default;
  bool operator<(const CallToken& o) const;
};

/// How a compute site of a library function is priced from its calls' recorded arguments (instead of
/// regressing its measured work on (Nw, Np)): its mean work per call (the kernel's unit: flops, or bytes
/// moved for level 1) and its work-weighted mean working set are formulas of (Nw, Np), exact where the
/// arguments follow the sizes; a call costs work / rate(working set) seconds on the kernel's rate curve
/// (TraceModel::library_rates), times `scale`, the measured over the priced time of the site's training
/// calls (what the curve misses: the calls' shapes, the caches the application shares). Seconds become
/// flops through TraceModel::library_speed_flops, as measured durations do.
struct LibraryPricing {
  std::string kernel;  ///< "dgemm", "daxpy"... (library_cost.hpp)
  Formula work;        ///< mean work of one call, in the kernel's unit
  Formula working_set_bytes;  ///< mean working set of one call, weighted by the calls' work
  double scale = 1;
};

/// One position of a group's rolled template.
/// A parameter of a template position that no exact expression or plausible formula explains, and
/// what the fit put in its place (docs/reference/model-json.md, "approximated").
struct Approximation {
  std::string field;       ///< "peer", "root", "bytes", "counts", "count"...
  std::string method;      ///< what stands in for an exact expression, and why
  double train_error = 0;  ///< relative: a formula's leave-one-out error, a rank expression's share of missed observations
  bool operator==(const Approximation&) const = default;
};

/// A size that changes geometrically with the index k of one enclosing loop: the position's formula gives
/// its value at k = 0, and iteration k sends that times ratio^k, rounded (a multigrid V-cycle's halo
/// messages, halved per level on the way down, doubled on the way up).
struct IterationScale {
  int level = 0;     ///< the loop: 0 the innermost enclosing one (the rank expressions' i0), 1 the next...
  double ratio = 1;  ///< 1/2, 2, 1/4 or 4
  bool operator==(const IterationScale&) const = default;
};

/// A size that differs by the iteration of one enclosing loop of fixed count, as a table of directions
/// walked by one call site does (a lattice Boltzmann code sends 5 distributions across a face, 1 across an
/// edge): its value at each index of that loop. The position's own formula is their mean (what an index
/// past the table, or a reader that ignores this, uses).
struct IndexedSize {
  int level = 0;                ///< the loop: 0 the innermost enclosing one (the rank expressions' i0)
  std::vector<Formula> values;  ///< by index of that loop, two or more
};

/// A compute site whose work differs consistently between the first rank, the last rank and the others
/// of its trace group (rank 0 computes between its sends while its partner only posts them; a root does
/// the serial part): each role's mean work per call over the mean of all the group's ranks, the median
/// over the training profiles. Synthesis multiplies a rank's calls at the site by its role's factor over
/// the mean factor of the target's ranks, so the site's mean over all ranks stays the regression's (at
/// another Np the first rank's share of the total changes, not the total). A role training never saw
/// (the middle ranks, when every training run had 2 ranks) takes the last rank's: the other non-first
/// ranks are its nearest kind.
struct RoleScale {
  double first = 1, last = 1, middle = 1;
  /// The multiplier of the work of `rank` of `np` (1 for a single rank, or where every factor is 0).
  double of(int rank, int np) const
  {
    if (np <= 1)
      return 1.0;
    const double mean = (first + last + (np - 2) * middle) / np;
    if (not(mean > 0))
      return 1.0;
    return (rank == 0 ? first : rank == np - 1 ? last : middle) / mean;
  }
  bool operator==(const RoleScale&) const = default;
};

struct TemplateNode {
  RolledNode::Kind kind = RolledNode::Kind::Call;
  std::uint32_t token = 0;  ///< Call, Poll: index into TraceModel::tokens
  Formula count;            ///< Loop: iterations; Poll: calls per polling construct (mean, rounded)
  bool nw_dependent = false;  ///< Loop: the count differs between profiles of one Np
  std::vector<TemplateNode> body;

  // Call (and Poll) parameters; absent where the op does not use them.
  std::optional<RankExpr> peer, src, root;
  std::optional<TagExpr> tag;  ///< only for functions whose token has kVaryingTag
  /// Instead of `tag`: a tag that is the same in every call of one run but changes with (Nw, Np) (HPL's
  /// last panel message, numbered by the panel count), regressed like a size; it reproduces every
  /// training point exactly.
  std::optional<Formula> tag_formula;
  std::optional<RankExpr> key;  ///< only for functions whose token has kVaryingKey
  std::optional<RankExpr> color;  ///< only for functions whose token has kVaryingColor
  std::optional<Formula> bytes, recv_bytes;
  /// Where present, `bytes` (`recv_bytes`) is the size at iteration 0 of the loop the scale names.
  std::optional<IterationScale> bytes_scale, recv_bytes_scale;
  /// Where present, the size at each index of the loop it names (`bytes` their mean).
  std::optional<IndexedSize> bytes_by_index, recv_bytes_by_index;
  /// Compute calls: the site's mean work in flops (the first step of the latency model; recorded seconds
  /// converted through the recording host's speed). Reduce-like collectives: their reduction flops.
  std::optional<Formula> flops;
  /// Compute calls: present where the first rank, the last and the others do consistently different work
  /// at the site (above); the work of a rank's calls is `flops` times its role's factor.
  std::optional<RoleScale> role_scale;
  /// Where a size or a compute site's work differs between ranks as their blocks of a block decomposition
  /// do (a halo face, a block's work, on a grid the cells do not divide evenly): each rank's own value, in
  /// place of `bytes`, `recv_bytes` or `flops` (still fitted: the mean, for what reads one value per
  /// position). A compute site with `flops_block` has no role factors and no root work.
  std::optional<BlockShare> bytes_block, recv_bytes_block, flops_block;
  /// Compute calls after a collective whose root rotates (a step's root that then works alone): the work
  /// per call of the rank that was the root of the last rooted collective it made, and of the others, as
  /// formulas of (Nw, Np). Present where, in every training profile with both, the root did more than
  /// 1.25 times the others' work (then there is no RoleScale: the rank's role only averages the root's
  /// work); synthesis then uses these, not
  /// `flops`, for the site's calls (times the latency model's ratio).
  struct RootWork {
    Formula root, other;
    bool operator==(const RootWork&) const = default;
  };
  std::optional<RootWork> root_work;
  /// Compute calls of a library function whose every training call carried its arguments, on a host with
  /// a rate curve for its kernel: the site is priced from them, and `flops` (still fitted) is not used.
  std::optional<LibraryPricing> library;
  /// Compute calls of a library function that are regressed instead: why (no arguments recorded, no rate
  /// curve for the kernel); empty otherwise. Not written to model.json (the fit prints it).
  std::string regressed_because;
  /// Poll: the mean total work in flops of the compute a construct absorbed (its rounds and its lead),
  /// present when the constructs held compute library calls (work done while waiting, not the polling
  /// loop's own time). Synthesis emits it as one compute burst before the construct's single poll.
  /// With `absorbed_library`, it is the work of the rest only (the bursts between the polls).
  std::optional<Formula> absorbed_flops;
  /// Poll: where every library call a construct absorbed carried its arguments and has a rate curve, the
  /// absorbed library work priced from them, one entry per kernel (its mean work per construct, not per
  /// call), added to `absorbed_flops` at synthesis; empty otherwise (all of the work is regressed).
  std::vector<LibraryPricing> absorbed_library;
  std::optional<Formula> seconds;  ///< Sleep: idle seconds, which do not scale with the host
  std::optional<Formula> counts, recv_counts;  ///< v-collectives: the count of every other rank
  std::optional<Formula> counts_self, recv_counts_self;  ///< the rank's own entry, where it differs
  /// v-collectives on a communicator other than the world: its size, the length of `counts` and
  /// `recv_counts` (each entry the count; absent: the world's Np entries).
  std::optional<Formula> comm_size;
  /// wait/test: the request created this many requests earlier (1 = the latest); waitall/waitany: one
  /// such distance per request. Requests are numbered 0, 1, 2... in creation order, as TIT imports are.
  std::int64_t request_back = 0;
  std::vector<std::int64_t> requests_back;
  /// Waitall: completes every request still pending (requests_back empty), where the distances differ
  /// between iterations or ranks but the call always completed everything (a halo exchange with as many
  /// neighbours as the rank has: a loop of isends whose count varies).
  bool all_pending = false;
  /// What the fit approximated at this position (empty: every parameter is an exact expression or the
  /// best formula by leave-one-out).
  std::vector<Approximation> approximated;
};

struct TrainingPoint {
  std::string profile;  ///< the profile directory as given to fit
  double nw = 0;
  int np = 0;
  /// The MPI library the profile was recorded with (recorded_mpi_library: "SMPI" for an imported SMPI
  /// trace); empty when unknown. The collective selector's default follows it.
  std::string mpi_library;
};

struct TraceGroup {
  std::vector<TemplateNode> body;
  /// Which ranks of which training profiles ran this trace, as text ("profile 0: ranks 1-3, 5").
  std::vector<std::string> members;
  /// Ranks whose rolled trace is within the 3 % threshold but not identical: represented by the template,
  /// not used to fit it.
  std::uint64_t approximate_members = 0;
};

/// One call of an iteration variant of a numbered loop.
struct NumberedCall {
  std::uint32_t token = 0;       ///< index into TraceModel::tokens: a blocking send or receive
  std::optional<RankExpr> peer;  ///< of (rank, Np, k), k the iteration (loop level 0)
  /// The size: affine in k at every training point (a message that shrinks each iteration), or, where it
  /// is not, `bytes_mode`: the most common size of the position at each point, regressed on (Nw, Np).
  std::optional<LoopFormula> bytes;
  std::optional<Formula> bytes_mode;
};

/// A loop whose iterations the messages number (tag = first_tag + tag_step x k) and whose body depends
/// on the rank's role in the iteration (a panel owned by rank k mod Np, a ring that starts at the owner):
/// tandem-repeat folding cannot see it (a rank's iterations differ), so the fit cuts it out of each rank's
/// calls by its tags, stands a placeholder call in for it (`placeholder`, a token of its own in the
/// groups' templates), and infers which variant of the body each (rank, k) runs with a RoleRule. See
/// docs/reference/trace-model.md, "Numbered loops with rotating roles".
struct NumberedLoop {
  std::uint32_t placeholder = 0;  ///< index into TraceModel::tokens
  Formula count;                  ///< iterations K
  Formula first_tag;              ///< the tag of iteration 0
  std::int64_t tag_step = 1;
  /// The iteration index the role reads: k' = k + shift, or, `from_end`, k' = K - 1 - k + shift (a loop
  /// that walks the panels downwards: a back substitution, its iteration 0 led by the owner of the last
  /// panel). shift is 0 or 1 (a ring whose hop k leaves from the owner of panel K - k, not K - 1 - k).
  bool from_end = false;
  int shift = 0;
  /// k' for iteration k of `count` (k < count).
  std::uint64_t role_index(std::uint64_t k, std::uint64_t count) const
  {
    return (from_end ? count - 1 - k : k) + static_cast<std::uint64_t>(shift);
  }
  RoleRule rule;
  std::vector<std::vector<NumberedCall>> variants;  ///< by variant id (RoleRule::classes)
  std::vector<std::string> members;  ///< the training profiles it was fitted on, as text
};

/// One binomial tree of point-to-point messages: a broadcast or a reduction that the code implements
/// itself (HPL's HPL_broadcast and HPL_reduce), rooted at `root`, every message `bytes` long.
struct TreeOp {
  enum class Kind : std::uint8_t {
    Bcast,   ///< levels from the top: a rank receives from its parent, then sends to its children, farthest first
    Reduce,  ///< levels from the bottom: a rank receives from its children, nearest first, then sends to its parent
  };
  Kind kind = Kind::Bcast;
  /// The root, modulo Np: a fixed rank, or one that moves with the size (the owner of the last panel).
  Formula root;
  std::int32_t tag = 0;
  Formula bytes;
  std::uint32_t send_token = 0, recv_token = 0;  ///< index into TraceModel::tokens
};
/// The calls of rank `rank` of `np` in a binomial tree (HPL's hypercube order; children at distance
/// 2^j that are >= np are skipped): (is_send, peer) in order.
std::vector<std::pair<bool, int>> tree_calls(TreeOp::Kind kind, int root, int rank, int np);

/// A run of consecutive binomial trees (a code's own broadcasts and reductions, whose depth for a rank is
/// the number of trailing zero bits of its distance from the root: a number of rank classes that grows
/// with Np, which no group rule can name). The fit recognizes them from each rank's calls and stands a
/// placeholder call in for the run; synthesis expands each tree for the target's Np.
struct TreeSequence {
  std::uint32_t placeholder = 0;  ///< index into TraceModel::tokens
  std::vector<TreeOp> ops;
  /// Every training Np was a power of two: the trees are then only known there (HPL_reduce folds the
  /// ranks beyond the largest power of two first, which training never showed).
  bool powers_of_two = true;
};

/// One call of an axis sweep's per-axis block: what it is, which neighbour along the block's axis it
/// addresses, its sizes, and the requests it completes.
struct AxisCall {
  std::uint32_t token = 0;  ///< index into TraceModel::tokens
  /// The call's peer (`peer_dir`) and source (`src_dir`): the neighbour along the block's axis in that
  /// direction (+1 up, -1 down, periodic); 0: the call has none. On an axis of 2 ranks both are the same.
  int peer_dir = 0;
  int src_dir  = 0;
  std::optional<Formula> bytes, recv_bytes;
  /// wait: the request created this many requests earlier (1 = the latest); waitall: one per request.
  std::int64_t request_back = 0;
  std::vector<std::int64_t> requests_back;
};

/// Calls made axis after axis of the `MPI_Dims_create(Np, dims)` grid, whose calls along an axis depend on
/// the axis' extent class (1, 2, more than 2): LAMMPS' `CommBrick::exchange` sends and receives once along
/// an axis of 2 ranks, twice along one of more, and not at all along one of 1. Learned on the training
/// grids' axes and applied to every axis of the target's grid. The fit finds it only where the plain
/// model cannot express the training profiles, cuts it out of each rank's calls and stands a placeholder
/// call in for it. See docs/reference/trace-model.md, "Axis sweeps".
struct AxisSweep {
  std::uint32_t placeholder = 0;  ///< index into TraceModel::tokens
  int dims = 3;                   ///< dimension count of the grid
  /// The calls along one axis, by extent class (0: extent 1, 1: extent 2, 2: more than 2); nullopt: no
  /// training grid had an axis of that class (a target that has one is outside the model).
  std::array<std::optional<std::vector<AxisCall>>, 3> blocks;
  /// The extent class of an axis of `extent` ranks: 0, 1 or 2.
  static int extent_class(int extent) { return extent <= 1 ? 0 : extent == 2 ? 1 : 2; }
};

/// One phase of the training profiles' main loop and whether its time moves with the input (InputPhases).
struct InputPhase {
  double share = 0;              ///< of the training input's loop time (its recorded units, slowest rank)
  double mean_s = 0, std_s = 0;  ///< of its units' time at the training input
  std::uint64_t units = 0;       ///< of the training input
  bool sensitive = false;        ///< some other input moved its mean or spread by more than 10 % (Eq. 6)
  /// How many of the other sizes have iterations in this phase (0: it could not be tested, as sensitive).
  std::uint64_t compared_inputs = 0;
  std::vector<std::string> sensitive_functions;  ///< whose work per unit moved by more than 10 %
  std::vector<std::string> distinct;             ///< the features that set the phase apart
};

/// The seed's input-sensitivity test (Algorithm 1, Eq. 6; docs/reference/sampling.md) run by the fit where
/// training profiles at two or more sizes share an Np: the phases of the largest size's main loop, and the
/// other sizes' units classified into them. `predict` warns when a target leans on a sensitive phase tested
/// on fewer than 3 inputs.
struct InputPhases {
  int np = 0;
  double training_nw = 0;           ///< the input the phases were formed on (the largest size at `np`)
  std::vector<double> compared_nw;  ///< the other sizes at `np`, compared with it
  std::string loop;
  std::uint64_t units = 0;          ///< of the training input
  std::vector<InputPhase> phases;
  std::size_t inputs() const { return 1 + compared_nw.size(); }
};

struct TraceModel {
  /// 2: compute work in flops with the latency model (`latency`); 1 had per-position seconds.
  static constexpr int kFormatVersion = 2;
  std::vector<TrainingPoint> training;
  std::vector<CallToken> tokens;
  std::vector<TraceGroup> groups;
  GroupRule rule;
  double group_threshold = 0.03;
  std::vector<std::string> warnings;  ///< quantities fitted approximately (varying where they should not)
  /// Where the training sizes take different code paths (no rank-to-group rule fits every profile):
  /// which sizes the model was fitted on and which it left out (empty: every profile). Synthesis lists
  /// it in model_quality.
  std::string size_class;
  /// The input-sensitivity test of the training profiles' phases; empty where it could not run (no Np with
  /// profiles at two sizes, or no main loop to form phases in: `input_phases_note` says which).
  std::optional<InputPhases> input_phases;
  std::string input_phases_note;  ///< not in model.json: what the fit prints when the test did not run
  /// The latency model of every function with compute calls, by function name.
  std::vector<FunctionLatency> latency;
  const FunctionLatency* latency_of(const std::string& function) const;
  /// Numbered loops, each standing in the templates as its placeholder token (empty: none).
  std::vector<NumberedLoop> numbered;
  /// The numbered loop whose placeholder is `token`, or nullptr.
  const NumberedLoop* numbered_of(std::uint32_t token) const;
  /// Binomial tree sequences, each standing in the templates as its placeholder token (empty: none).
  std::vector<TreeSequence> trees;
  const TreeSequence* tree_of(std::uint32_t token) const;
  /// Axis sweeps, each standing in the templates as its placeholder token (empty: none).
  std::vector<AxisSweep> axis_sweeps;
  const AxisSweep* axis_sweep_of(std::uint32_t token) const;
  /// The rate curves of the recording host's library kernels (its calibration's compute.library_rates,
  /// carried by the profiles), for the sites priced from their arguments; empty: none is.
  KernelRates library_rates;
  /// The recording host's speed: the seconds a priced call costs become flops at it.
  double library_speed_flops = 0;
  /// The work in flops of one call of a site priced from its arguments, at (nw, np).
  double library_flops(const LibraryPricing& pricing, double nw, double np) const;
  /// The work in flops of one polling construct at (nw, np): its regressed `absorbed_flops` plus its
  /// `absorbed_library` priced on the rate curves; 0 for a construct that absorbed no work.
  double absorbed_work(const TemplateNode& poll, double nw, double np) const;
};

struct FitOptions {
  double group_threshold = 0.03;  ///< largest Myers difference (edit distance / length) within a group
  /// A function whose calls use more distinct tags than this in one rank (codes that number their
  /// messages) has its tag fitted per position instead of being part of the token.
  std::size_t varying_tags = 16;
  /// A function whose tag set in a rank changes with Np (the same rank at two training rank counts: a code
  /// that tags each of its log2(Np) rounds with the round's number) also has its tag fitted per position,
  /// and every rank's calls are folded first with those tags told apart (FoldOptions::refine). Tried by
  /// fit_trace_model where the plain reading fails or gives some training rank count trace groups of its own.
  bool tags_follow_np = false;
  /// With tags_follow_np: the calls whose tags are fitted per position are told apart in the first fold
  /// by their message size instead of their tag. A V-cycle tags every level and colour apart
  /// (2*level + colour), so told apart by tag its smoothing sweeps repeat nothing, and folded plain they
  /// are one loop of 2*levels sweeps whose tags and sizes (halved per level) follow no one index; told
  /// apart by size, a level's two colours fold first, and the levels nest around them: tags affine in
  /// two indices (TagExpr::Affine), sizes geometric in the level's. Tried by fit_trace_model where the
  /// training sizes fold into different templates in every other reading.
  bool sizes_nest_loops = false;
  FoldOptions fold;
  ForestOptions forest;
  int variability_bins = 16;  ///< bins of each function's irregular histogram
  /// Numbered loops: a cluster of the tags of a profile's blocking sends and receives (sorted distinct
  /// tags less than `numbered_max_gap` apart, at least `numbered_min_iterations` of them) whose calls
  /// are, in every rank, one contiguous run of non-decreasing tags. 0 iterations: not looked for.
  std::size_t numbered_min_iterations = 8;
  std::int64_t numbered_max_gap = 16;
  /// Axis sweeps (AxisSweep): `Auto` looks for them only when the plain fit fails and the training rank
  /// counts have process grids of different shapes (so every model the plain fit expresses stays as it
  /// is); `Off` never.
  enum class AxisSweeps : std::uint8_t { Auto, Off };
  AxisSweeps axis_sweeps = AxisSweeps::Auto;
  /// Read every rank's calls as the profiling hook records them: one compute call in every gap between two
  /// other calls (of no work where an SMPI trace has none: the code computed nothing there), and a run of
  /// consecutive compute calls of one function (no library arguments, no device time: an SMPI trace's
  /// one per smpi_execute_flops) as one call of their summed work. A role's own work (the owner of a
  /// pivot row scales it, the root of a reduction logs it) then no longer gives the role's ranks calls
  /// the others lack; the emulated time is the same. Tried by fit_trace_model where the plain reading
  /// leaves rank expressions approximated or fails.
  bool computes_between_calls = false;
  /// Give every class of the group rule a group of its own, where the rule put several classes in one
  /// group (their ranks ran one template). A code that exchanges only with the neighbours it has, with one
  /// tag for both directions, makes the same calls at every corner of its grid, to other neighbours: the
  /// low corner sends up, the high one down, and no rank expression of the one group explains both. Tried
  /// by fit_trace_model where the other readings leave rank expressions approximated.
  bool split_by_class = false;
};

/// Fits the model to profile directories (at least two). Throws InputError for profiles that cannot be
/// fitted together (different applications or function sets, incomplete runs, a single profile,
/// quantities no candidate expression explains), naming the profiles and ranks concerned.
TraceModel fit_trace_model(const std::vector<std::filesystem::path>& profiles, const FitOptions& options = {});

/// model.json: deterministic (same model, same bytes), versioned, documented in docs/reference/model-json.md.
nlohmann::ordered_json model_to_json(const TraceModel& model);
/// Strict reader: unknown keys, wrong types and missing fields are InputErrors naming `file` and the key path.
TraceModel model_from_json(const nlohmann::json& j, const std::string& file);
void write_model(const std::filesystem::path& file, const TraceModel& model);
TraceModel read_model(const std::filesystem::path& file);

// ---- template implementation ----------------------------------------------------------------------------

namespace detail {
std::vector<RolledNode> fold_impl(const std::vector<std::uint32_t>& tokens, const std::vector<bool>& poll_mask,
                                  const FoldOptions& opt);
}

template <class IsPoll>
std::vector<RolledNode> fold_tokens(const std::vector<std::uint32_t>& tokens, IsPoll is_poll, const FoldOptions& opt)
{
  std::vector<bool> mask(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i)
    mask[i] = is_poll(tokens[i]);
  return detail::fold_impl(tokens, mask, opt);
}

}  // namespace gridcast::models::trace
