// From 32 lanes' own access sequences to the warp's memory instructions, as the hardware issues them
// for code without data-dependent repetition of one site across lanes: the k-th execution of a static
// access site by each lane is one warp instruction (a lane that executes it fewer times is inactive in
// the later ones), and the instructions come in the order of their earliest position in any lane's
// sequence (ties by site). Host code only; gen_traces.cpp and the tests use it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gcbench {

/// One access of one thread, as the host accessor reports it.
struct LaneAccess {
  std::uint64_t address = 0;
  std::uint8_t site = 0, kind = 0, bytes = 0;
};

/// One warp-level instruction: the active lanes and their addresses.
struct WarpInstruction {
  std::uint8_t site = 0, kind = 0, bytes = 0;
  std::uint32_t active_mask = 0;
  std::array<std::uint64_t, 32> address{};
  std::size_t first_position = 0;  ///< the smallest position of this instruction in any lane's sequence
};

/// Groups lanes[0..31]'s sequences (empty = the lane did not run or accessed nothing) into `out`
/// (cleared first). Throws std::logic_error when one site has two kinds or sizes (a body bug).
inline void group_warp(const std::vector<LaneAccess>* const lanes[32], std::vector<WarpInstruction>& out) {
  out.clear();
  // The common case: every lane that accessed anything ran the same site sequence.
  const std::vector<LaneAccess>* reference = nullptr;
  bool uniform = true;
  for (int l = 0; l < 32 && uniform; ++l) {
    const std::vector<LaneAccess>& seq = *lanes[l];
    if (seq.empty()) continue;
    if (!reference) {
      reference = &seq;
      continue;
    }
    if (seq.size() != reference->size()) uniform = false;
    for (std::size_t p = 0; uniform && p < seq.size(); ++p)
      if (seq[p].site != (*reference)[p].site) uniform = false;
  }
  if (!reference) return;
  auto add_lane = [](WarpInstruction& w, int lane, const LaneAccess& a) {
    if (w.active_mask == 0) {
      w.site = a.site;
      w.kind = a.kind;
      w.bytes = a.bytes;
    } else if (w.kind != a.kind || w.bytes != a.bytes) {
      throw std::logic_error("access site " + std::to_string(a.site) + " has two kinds or sizes");
    }
    w.active_mask |= 1u << lane;
    w.address[lane] = a.address;
  };
  if (uniform) {
    out.resize(reference->size());
    for (std::size_t p = 0; p < out.size(); ++p) out[p].first_position = p;
    for (int l = 0; l < 32; ++l)
      for (std::size_t p = 0; p < lanes[l]->size(); ++p) add_lane(out[p], l, (*lanes[l])[p]);
    return;
  }
  std::map<std::pair<std::uint8_t, std::uint64_t>, std::size_t> index;  // (site, occurrence) -> out
  for (int l = 0; l < 32; ++l) {
    std::map<std::uint8_t, std::uint64_t> occurrences;
    const std::vector<LaneAccess>& seq = *lanes[l];
    for (std::size_t p = 0; p < seq.size(); ++p) {
      const auto key = std::make_pair(seq[p].site, occurrences[seq[p].site]++);
      auto [it, fresh] = index.emplace(key, out.size());
      if (fresh) {
        out.emplace_back();
        out.back().first_position = p;
      }
      WarpInstruction& w = out[it->second];
      w.first_position = std::min(w.first_position, p);
      add_lane(w, l, seq[p]);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const WarpInstruction& x, const WarpInstruction& y) {
    return x.first_position != y.first_position ? x.first_position < y.first_position : x.site < y.site;
  });
}

}  // namespace gcbench
