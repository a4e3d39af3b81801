// The trace fit's token table: interning, the sorted model ids, and the fold options in model ids.
#include "trace_fit_tokens.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>

namespace gridcast::models::trace {

bool CallToken::operator<(const CallToken& o) const
{
  return std::tie(function, op, tag, recv_tag, comm, color, key, new_comm, nonblocking) <
         std::tie(o.function, o.op, o.tag, o.recv_tag, o.comm, o.color, o.key, o.new_comm, o.nonblocking);
}

namespace detail {

namespace {

bool is_polling(const CallToken& t)
{
  if (t.op == Op::Test)
    return true;
  std::string f = t.function;
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return f.find("probe") != std::string::npos;
}

/// A compute burst the profiler recorded between hooked calls (not a hooked library function).
bool is_burst(const CallToken& t) { return t.op == Op::Compute && t.function == "compute"; }

}  // namespace

CallToken numbered_token(const std::string& function, Op op)
{
  CallToken t;
  t.function = function;
  t.op       = op;
  t.tag      = kVaryingTag;
  return t;
}

CallToken tree_token(const std::string& function, Op op, std::int32_t tag)
{
  CallToken t;
  t.function = function;
  t.op       = op;
  t.tag      = tag;
  return t;
}

void TokenTable::set_varying(std::set<std::string> tag_functions, std::set<std::string> key_functions,
                             std::set<std::string> color_functions, std::set<std::string> recv_tag_follows)
{
  recv_tag_follows_ = std::move(recv_tag_follows);
  varying_tags_   = std::move(tag_functions);
  varying_keys_   = std::move(key_functions);
  varying_colors_ = std::move(color_functions);
}

CallToken TokenTable::make_token(const std::string& function, const CallRecord& rec) const
{
  CallToken t{function, rec.op, rec.tag, rec.recv_tag, rec.comm, rec.color, rec.key, rec.new_comm, nonblocking_collective(rec)};
  // What a probe or test found (the tag of the message it matched) is its result, not what it is: the
  // successful poll of a construct is the same call as the failed ones before it.
  if (rec.op == Op::Test || rec.op == Op::Probe)
    t.recv_tag = 0;
  if (varying_tags_.count(function) > 0) {
    t.tag = kVaryingTag;
    // A sendrecv of a tag fitted per position receives with that tag (a symmetric exchange): kept in the
    // token, each round's receive tag would still make a token of its own.
    if (rec.op == Op::Sendrecv && recv_tag_follows_.count(function) > 0)
      t.recv_tag = kVaryingTag;
  }
  if (rec.op == Op::CommSplit && varying_keys_.count(function) > 0)
    t.key = kVaryingKey;
  // A color below 0 (MPI_UNDEFINED: no communicator) stays in the token: those ranks make another call.
  if (rec.op == Op::CommSplit && rec.color >= 0 && varying_colors_.count(function) > 0)
    t.color = kVaryingColor;
  return t;
}

std::uint32_t TokenTable::intern(const CallToken& t)
{
  auto [it, inserted] = ids_.emplace(t, static_cast<std::uint32_t>(list_.size()));
  if (inserted) {
    list_.push_back(t);
    poll_.push_back(is_polling(t));
    burst_.push_back(is_burst(t));
    work_.push_back(t.op == Op::Compute);
  }
  return it->second;
}

void TokenTable::assign_model_ids(
    TraceModel& model, const FoldOptions& fold, const std::map<std::uint32_t, std::set<std::vector<std::uint32_t>>>& rounds,
    const std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::vector<std::uint32_t>>>& leftover)
{
  // Tokens in sorted order so that model.json does not depend on which profile came first.
  remap_.assign(list_.size(), 0);
  std::vector<std::uint32_t> order(list_.size());
  for (std::uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return list_[a] < list_[b]; });
  for (std::uint32_t i = 0; i < order.size(); ++i) {
    remap_[order[i]] = i;
    model.tokens.push_back(list_[order[i]]);
  }
  burst_model_.assign(remap_.size(), false);
  model_fold_ = fold;
  model_fold_.burst_token.assign(remap_.size(), false);
  model_fold_.work_token.assign(remap_.size(), false);
  poll_model_.assign(remap_.size(), false);
  for (std::size_t i = 0; i < remap_.size(); ++i) {
    burst_model_[remap_[i]]            = burst_[i];
    model_fold_.burst_token[remap_[i]] = burst_[i];
    model_fold_.work_token[remap_[i]]  = work_[i];
    poll_model_[remap_[i]]             = poll_[i];
  }
  auto renumbered = [&](const std::vector<std::uint32_t>& calls) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t t : calls)
      out.push_back(remap_[t]);
    return out;
  };
  for (const auto& [poll, bodies] : rounds)
    for (const auto& body : bodies)
      model_fold_.round_bodies[remap_[poll]].insert(renumbered(body));
  for (const auto& [key, bases] : leftover)
    for (const auto& after : bases)
      model_fold_.leftover_base[{remap_[key.first], remap_[key.second]}].insert(renumbered(after));
}

std::uint32_t TokenTable::placeholder_id(const std::string& name) const
{
  CallRecord rec;
  rec.op = Op::Sleep;
  return model_id(make_token(name, rec));
}

std::uint32_t TokenTable::model_token(const CallStream& s, const CallRecord& rec, const std::filesystem::path& file,
                                      int rank) const
{
  auto it = ids_.find(make_token(s.functions().name(rec.function), rec));
  if (it == ids_.end())
    throw InputError({file.string(), rec.line, {}, rank}, "the trace changed while it was being fitted");
  return remap_[it->second];
}

void TokenTable::renumber(std::vector<RolledNode>& nodes) const
{
  for (RolledNode& n : nodes) {
    n.token = remap_[n.token];
    renumber(n.body);
  }
}

std::vector<std::uint32_t> TokenTable::roles_of(const std::vector<std::uint32_t>& tokens) const
{
  std::vector<bool> mask(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i)
    mask[i] = poll_model_[tokens[i]];
  return poll_roles(tokens, mask, model_fold_);
}

}  // namespace detail
}  // namespace gridcast::models::trace
