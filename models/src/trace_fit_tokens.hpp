// The trace fit's call tokens: what a recorded call is apart from the parameters fitted per position
// (CallToken), numbered first as the profiles are read (provisional ids), then renumbered in sorted order
// for the model (model ids), so that model.json does not depend on which profile came first. Also the
// per-stream cache that turns millions of records into token ids without building a CallToken for each.
// Internal to the models library.
#pragma once

#include "gridcast/models/call.hpp"
#include "gridcast/models/stream.hpp"
#include "gridcast/models/trace_model.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace gridcast::models::trace::detail {

/// A nonblocking collective or MPI_Comm_idup: a collective record with a request.
inline bool nonblocking_collective(const CallRecord& rec) { return rec.request != kNoRequest && is_collective(rec.op); }
inline bool creates_request(Op op) { return op == Op::Isend || op == Op::Irecv || op == Op::Issend; }
/// Whether a call creates a request: requests are numbered by these calls, in order (request_back).
inline bool creates_request(const CallRecord& rec) { return creates_request(rec.op) || nonblocking_collective(rec); }

/// The token of a call inside a numbered loop: its tag is the loop's (first tag + step x k).
CallToken numbered_token(const std::string& function, Op op);
/// The token of a send or receive of a binomial tree.
CallToken tree_token(const std::string& function, Op op, std::int32_t tag);

/// The token ids of one stream's calls, remembered by the call's integer fields and the stream's own
/// function id. Building a CallToken (a copy of the function's name) and searching the fitter's map of
/// tokens (string comparisons) for each of millions of calls was most of `gridcast fit`'s time; a
/// stream has a handful of distinct tokens, so after the first call of each the answer is a hash
/// lookup. `varying(fn)` says whether the function's tags are fitted per position (then the tag is
/// not part of the token, nor of the key).
class StreamTokenCache {
public:
  /// The id for `rec`, from `compute()` the first time this key is seen.
  template <class Varying, class Compute>
  std::uint32_t get(const CallRecord& rec, Varying varying, Compute compute)
  {
    if (rec.function >= varying_.size())
      varying_.resize(rec.function + 1, -1);
    std::int8_t& v = varying_[rec.function];
    if (v < 0)
      v = varying(rec.function) ? 1 : 0;
    const Key k{rec.function, rec.op,  v != 0 ? 0 : rec.tag, rec.recv_tag, rec.comm,
                rec.color,    rec.key, rec.new_comm,          nonblocking_collective(rec)};
    // A direct-mapped front (no bucket chains) answers almost every call; the map keeps every key.
    Slot& slot = front_[KeyHash{}(k) % front_.size()];
    if (slot.used && slot.key == k)
      return slot.id;
    auto it = ids_.find(k);
    const std::uint32_t id = it != ids_.end() ? it->second : ids_.emplace(k, compute()).first->second;
    slot = {k, id, true};
    return id;
  }

private:
  struct Key {
    std::uint32_t function;
    Op op;
    std::int32_t tag, recv_tag, comm, color, key, new_comm;
    bool nonblocking;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const
    {
      auto u = [](std::int32_t x) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)); };
      std::uint64_t h = (std::uint64_t{k.function} << 9 | std::uint64_t{k.nonblocking} << 8 | static_cast<std::uint64_t>(k.op)) ^
                        u(k.tag) << 32;
      h ^= (u(k.recv_tag) ^ u(k.comm) << 16 ^ u(k.color) << 24 ^ u(k.key) << 40 ^ u(k.new_comm) << 48) * 0x9e3779b97f4a7c15ULL;
      h *= 0xff51afd7ed558ccdULL;
      return static_cast<std::size_t>(h ^ (h >> 32));
    }
  };
  struct Slot {
    Key key{};
    std::uint32_t id = 0;
    bool used = false;
  };
  std::vector<std::int8_t> varying_;  ///< by the stream's function id: -1 not looked up yet
  std::unordered_map<Key, std::uint32_t, KeyHash> ids_;
  std::array<Slot, 64> front_{};
};

/// Every token of the training profiles: interned under provisional ids while the profiles are read,
/// then given the model's sorted ids (assign_model_ids). Which functions have their tags or split keys
/// fitted per position (rather than kept in the token) is decided by the first reading and told here.
class TokenTable {
public:
  /// Functions whose tags (split keys) are fitted per position: kVaryingTag (kVaryingKey) in their tokens.
  /// The receive tag of the sendrecvs of the functions in `recv_tag_follows` (some of `tag_functions`)
  /// is kVaryingTag too: the position's tag.
  void set_varying(std::set<std::string> tag_functions, std::set<std::string> key_functions,
                   std::set<std::string> color_functions, std::set<std::string> recv_tag_follows);
  /// The token of `rec`, a call of `function`.
  CallToken make_token(const std::string& function, const CallRecord& rec) const;
  /// For StreamTokenCache: whether the function `fn` of stream `s` has its tags fitted per position.
  auto varying_in(const CallStream& s) const
  {
    return [this, &s](std::uint32_t fn) { return varying_tags_.count(s.functions().name(fn)) > 0; };
  }

  /// The provisional id of `t`, new when first seen.
  std::uint32_t intern(const CallToken& t);
  /// By provisional id: polling tokens, compute bursts a polling construct absorbs, compute calls.
  const std::vector<bool>& poll_tokens() const { return poll_; }
  const std::vector<bool>& burst_tokens() const { return burst_; }
  const std::vector<bool>& work_tokens() const { return work_; }

  /// Sorts the tokens into model.tokens and gives each its model id; `fold` with the provisional
  /// `rounds` and `leftover` becomes the fold options in model ids (roles_of).
  void assign_model_ids(TraceModel& model, const FoldOptions& fold,
                        const std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>>& rounds,
                        const std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::vector<std::uint32_t>>>& leftover);
  /// The model id of a token interned earlier.
  std::uint32_t model_id(const CallToken& t) const { return remap_[ids_.at(t)]; }
  /// The model id of the placeholder call (an Op::Sleep) that stands for a cut-out construct `name`.
  std::uint32_t placeholder_id(const std::string& name) const;
  /// The model id of `rec`'s token; an InputError naming `file` if the fit never saw it (the file changed).
  std::uint32_t model_token(const CallStream& s, const CallRecord& rec, const std::filesystem::path& file, int rank) const;
  /// Provisional token ids (first seen) -> the model's sorted ids, in a rolled trace.
  void renumber(std::vector<RolledNode>& nodes) const;
  /// The polling-construct roles of a rank's calls (model ids), as folding gave them.
  std::vector<std::uint32_t> roles_of(const std::vector<std::uint32_t>& tokens) const;
  /// Whether the model token is a compute burst (not a library call).
  bool burst_model(std::uint32_t token) const { return burst_model_[token]; }

private:
  std::map<CallToken, std::uint32_t> ids_;
  std::vector<CallToken> list_;
  std::vector<bool> poll_;   // by provisional id
  std::vector<bool> burst_;  // by provisional id: compute bursts a polling construct absorbs
  std::vector<bool> work_;   // by provisional id: compute calls (bursts and library functions)
  std::vector<std::uint32_t> remap_;  // provisional id -> model id
  std::vector<bool> burst_model_;     // the same as burst_ by model id
  std::vector<bool> poll_model_;      // polling tokens by model id
  FoldOptions model_fold_;            // the fold options with model ids
  std::set<std::string> varying_tags_;
  std::set<std::string> varying_keys_;
  std::set<std::string> varying_colors_;
  std::set<std::string> recv_tag_follows_;
};

}  // namespace gridcast::models::trace::detail
