// The requests a TIT trace's isends, irecvs and nonblocking collectives create, kept until a wait names
// them: TIT names a request by "src dst tag" (or a collective's SMPI tag), not by an id. Internal to the
// models library (tit.cpp).
#pragma once

#include "gridcast/models/call.hpp"
#include "gridcast/models/tit.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace gridcast::models::detail {

struct RequestKey {
  std::int32_t src, dst, tag;
  bool operator==(const RequestKey&) const = default;
};
struct PendingRequest {
  RequestKey key;
  std::int64_t id;
  std::int32_t nbc_tag = 0;  ///< a nonblocking collective's SMPI tag (tit_nbc_tag); 0: an isend/irecv
};

/// Requests posted and not waited for, in posting order. A few at a time in practice: a linear search
/// beats a map and never allocates once warm.
struct PendingRequests {
  std::int64_t next_request = 0;
  std::vector<PendingRequest> list;

  /// A new request: an isend/irecv's `key`, or a nonblocking collective's SMPI tag `nbc_tag`.
  std::int64_t post(RequestKey key, std::int32_t nbc_tag = 0)
  {
    list.push_back({key, next_request, nbc_tag});
    return next_request++;
  }

  /// The oldest pending isend/irecv matching "src dst tag", or the oldest pending nonblocking collective
  /// whose SMPI tag is `tg`; removed when `remove`.
  std::optional<std::int64_t> find(std::int64_t src, std::int64_t dst, std::int64_t tg, bool remove)
  {
    auto take = [&](std::vector<PendingRequest>::iterator it) {
      std::int64_t id = it->id;
      if (remove)
        list.erase(it);
      return id;
    };
    if (tg < -1 && tg != -444) {  // a collective's tag (below -1, and not MPI_ANY_TAG)
      // MPI_Ialltoallw is written as "ialltoallv" (the per-rank types' sizes folded into the counts), but its
      // request keeps the alltoallw tag, -1021.
      auto matches = [tg](const PendingRequest& p) {
        return p.nbc_tag == tg || (p.nbc_tag == tit_nbc_tag(Op::Alltoallv) && tg == -1021);
      };
      auto it = std::find_if(list.begin(), list.end(), matches);
      if (it != list.end())
        return take(it);
    }
    RequestKey exact{norm(src), norm(dst), norm(tg)};
    // A receive posted with MPI_ANY_SOURCE / MPI_ANY_TAG may be waited for under its actual source or tag.
    RequestKey candidates[] = {exact, {-1, exact.dst, exact.tag}, {exact.src, exact.dst, -1}, {-1, exact.dst, -1}};
    for (const auto& key : candidates) {
      auto it = std::find_if(list.begin(), list.end(),
                             [&key](const PendingRequest& p) { return p.nbc_tag == 0 && p.key == key; });
      if (it != list.end())
        return take(it);
    }
    return std::nullopt;
  }

  /// The ids of the `n_last` most recent pending requests, in posting order; every request is removed when
  /// `remove`.
  void take_last(std::vector<std::int64_t>& out, std::size_t n_last, bool remove)
  {
    out.clear();
    std::size_t skip = list.size() > n_last ? list.size() - n_last : 0;
    for (std::size_t i = skip; i < list.size(); ++i)
      out.push_back(list[i].id);
    if (remove)
      list.clear();
  }

private:
  static std::int32_t norm(std::int64_t v) { return v < 0 ? -1 : static_cast<std::int32_t>(v); }
};

}  // namespace gridcast::models::detail
