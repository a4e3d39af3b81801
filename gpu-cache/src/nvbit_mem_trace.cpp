// NVBit's tools/mem_trace output (docs/reference/gpu-memory-traces.md, "NVBit mem_trace"): a launch line
// per kernel, then one line per warp-level memory instruction with the 32 lanes' addresses, in the order
// the GPU ran them. Both the current form (lines prefixed "MEMTRACE: CTX ...") and the one of NVBit 1.4
// and before ("Kernel ..." and "CTA ..." lines) are read; every other line (NVBit's banner, the
// application's own output) is skipped.
#include "trace_io.hpp"

#include <unordered_map>

namespace fs = std::filesystem;

namespace gridcast::gpu_cache::detail {

namespace {

/// Splits "a - b - c" on " - " (kernel names hold no " - ": a C++ signature has none).
void split_fields(std::string_view text, std::vector<std::string_view>& fields)
{
  fields.clear();
  for (;;) {
    const std::size_t at = text.find(" - ");
    fields.push_back(text.substr(0, at));
    if (at == std::string_view::npos)
      return;
    text.remove_prefix(at + 3);
  }
}

class NvbitReader final : public TraceReader {
public:
  explicit NvbitReader(const fs::path& path) : lines_(path) {}

  bool grouped_by_cta() const override { return false; }

  bool next_kernel(KernelLaunch& launch) override
  {
    for (;;) {
      if (pending_launch_) {
        pending_launch_ = false;
        launch          = launch_;
        return true;
      }
      if (at_end_)
        return false;
      if (read_line(scratch_) && not has_kernel_)
        lines_.fail("a memory access before any kernel launch line");
    }
  }

  bool next_access(WarpAccess& access) override
  {
    if (not has_kernel_ || pending_launch_ || at_end_)
      return false;
    return read_line(access);
  }

private:
  /// Reads on to the next access (true) or launch line / end of the file (false, noted as pending).
  bool read_line(WarpAccess& access)
  {
    std::string_view line;
    while (lines_.next(line)) {
      bool current_form = false;
      if (starts_with(line, "MEMTRACE: ")) {
        line.remove_prefix(10);
        current_form = true;
      }
      split_fields(line, fields_);
      if (current_form) {
        // "CTX 0x... - LAUNCH - ...", "CTX 0x... - grid_launch_id N - CTA ...", or a verbose message
        // ("CTX 0x..., Inspecting ...") that carries no access.
        if (fields_.size() >= 2 && starts_with(fields_[0], "CTX ") && fields_[1] == "LAUNCH") {
          read_launch(2);
          return false;
        }
        if (fields_.size() >= 2 && starts_with(fields_[0], "CTX ") && starts_with(fields_[1], "grid_launch_id ")) {
          if (read_access(2, access))
            return true;
        }
        continue;
      }
      if (starts_with(line, "Kernel ") && fields_.size() >= 2 && starts_with(fields_[1], "grid size ")) {
        read_launch(0);
        return false;
      }
      if (starts_with(line, "CTA ") && fields_.size() >= 2 && starts_with(fields_[1], "warp ")) {
        if (read_access(0, access))
          return true;
      }
    }
    at_end_ = true;
    return false;
  }

  std::uint32_t field_u32(std::string_view value, const char* what)
  {
    auto v = parse_unsigned(value);
    if (not v || *v > 0xffffffffu)
      lines_.fail(std::string("bad ") + what + " '" + std::string(value) + "'");
    return static_cast<std::uint32_t>(*v);
  }

  /// The launch line's fields from `first`: "Kernel pc 0x..", "Kernel name N" (or, in the old form,
  /// "Kernel N"), "grid launch id N", "grid size x,y,z", "block size x,y,z", "nregs N", "shmem N",
  /// "cuda stream id N". Fields this reader does not know are ignored.
  void read_launch(std::size_t first)
  {
    KernelLaunch k;
    k.launch_id    = launches_;
    bool has_grid  = false, has_block = false, has_name = false;
    for (std::size_t i = first; i < fields_.size(); ++i) {
      std::string_view f = fields_[i];
      if (starts_with(f, "Kernel pc ")) {
        continue;
      } else if (starts_with(f, "Kernel name ")) {
        k.name   = f.substr(12);
        has_name = true;
      } else if (first == 0 && i == 0) {
        k.name   = f.substr(std::min<std::size_t>(7, f.size()));  // "Kernel NAME"
        has_name = true;
      } else if (starts_with(f, "grid launch id ")) {
        auto id = parse_unsigned(f.substr(15));
        if (not id)
          lines_.fail("bad grid launch id '" + std::string(f.substr(15)) + "'");
        grid_launch_id_ = *id;
      } else if (starts_with(f, "grid size ")) {
        has_grid = parse_dim3(f.substr(10), k.grid);
        if (not has_grid)
          lines_.fail("bad grid size '" + std::string(f.substr(10)) + "' (expected x,y,z)");
      } else if (starts_with(f, "block size ")) {
        has_block = parse_dim3(f.substr(11), k.block);
        if (not has_block)
          lines_.fail("bad block size '" + std::string(f.substr(11)) + "' (expected x,y,z)");
      } else if (starts_with(f, "nregs ")) {
        k.registers_per_thread = field_u32(f.substr(6), "nregs");
      } else if (starts_with(f, "shmem ")) {
        k.shared_bytes_per_cta = field_u32(f.substr(6), "shmem");
      }
    }
    if (not has_name || not has_grid || not has_block)
      lines_.fail("a kernel launch line needs the kernel name, grid size and block size");
    if (std::string reason = check_launch(k); not reason.empty())
      lines_.fail("kernel '" + k.name + "': " + reason);
    has_grid_launch_id_ = first > 0;
    launch_             = std::move(k);
    has_kernel_         = true;
    pending_launch_     = true;
    warp_index_.clear();
    warps_seen_.clear();
    ++launches_;
  }

  /// "grid_launch_id N" (current form), "CTA x,y,z", "warp W", "OPCODE", then the 32 addresses. False
  /// for an instruction the model does not follow (shared, constant, texture memory), checked all the same.
  bool read_access(std::size_t first, WarpAccess& a)
  {
    if (not has_kernel_)
      lines_.fail("a memory access before any kernel launch line");
    std::size_t i = first;
    if (first > 0) {
      auto id = parse_unsigned(fields_[1].substr(15));
      if (not id)
        lines_.fail("bad grid_launch_id '" + std::string(fields_[1].substr(15)) + "'");
      if (has_grid_launch_id_ && *id != grid_launch_id_)
        lines_.fail("an access of grid launch " + std::to_string(*id) + " within launch " +
                    std::to_string(grid_launch_id_) + " ('" + launch_.name +
                    "'): the output interleaves launches; split it into one file a launch first "
                    "(docs/reference/gpu-memory-traces.md)");
    }
    if (fields_.size() < i + 4)
      lines_.fail("truncated: expected CTA x,y,z - warp W - OPCODE - 32 addresses");
    Dim3 cta;
    if (not starts_with(fields_[i], "CTA ") || not parse_dim3(fields_[i].substr(4), cta))
      lines_.fail("bad CTA '" + std::string(fields_[i]) + "' (expected CTA x,y,z)");
    const Dim3& g = launch_.grid;
    if (cta.x >= g.x || cta.y >= g.y || cta.z >= g.z)
      lines_.fail("kernel '" + launch_.name + "': CTA " + std::string(fields_[i].substr(4)) +
                  " is outside the grid " + std::to_string(g.x) + "," + std::to_string(g.y) + "," +
                  std::to_string(g.z));
    a.cta = cta.x + std::uint64_t(g.x) * (cta.y + std::uint64_t(g.y) * cta.z);
    if (not starts_with(fields_[i + 1], "warp "))
      lines_.fail("bad warp '" + std::string(fields_[i + 1]) + "' (expected warp W)");
    const std::uint32_t slot = field_u32(fields_[i + 1].substr(5), "warp");
    const std::string_view opcode = fields_[i + 2];
    const SassOpcode op           = classify_sass(opcode);
    if (op.what == SassOpcode::Class::Unknown)
      lines_.fail("unknown memory instruction '" + std::string(opcode) + "'");
    // The addresses: the rest of the line (a " - " cannot occur in it).
    if (fields_.size() != i + 4)
      lines_.fail("more fields than CTA, warp, opcode and addresses");
    split_words(fields_[i + 3], words_);
    if (words_.size() > kWarpLanes)
      lines_.fail("more than 32 addresses");
    if (words_.size() < kWarpLanes)
      lines_.fail("truncated: " + std::to_string(words_.size()) + " addresses (a warp has 32)");
    a.active_mask = 0;
    for (unsigned lane = 0; lane < kWarpLanes; ++lane) {
      auto address = parse_hex_prefixed(words_[lane]);
      if (not address)
        lines_.fail("bad address '" + std::string(words_[lane]) + "' (expected 0x followed by hex digits)");
      a.address[lane] = *address;
      if (*address != 0)
        a.active_mask |= 1u << lane;
    }
    if (op.what == SassOpcode::Class::Skipped)
      return false;
    if (a.active_mask == 0)
      lines_.fail("no active lane (every address is 0x0)");
    a.warp           = warp_of(a.cta, slot);
    a.sm             = -1;
    a.kind           = op.kind;
    a.bytes_per_lane = op.bytes_per_lane;
    return true;
  }

  /// NVBit reports %warpid, the warp's slot on its SM, not its index in the CTA. A CTA keeps its warps
  /// on the same slots while it runs, so the slots of one CTA are numbered 0, 1, ... as they first
  /// appear. (One entry per warp of the launch, dropped at the next launch: never per access.)
  std::uint32_t warp_of(std::uint64_t cta, std::uint32_t slot)
  {
    auto [it, inserted] = warp_index_.try_emplace({cta, slot}, 0);
    if (inserted) {
      std::uint32_t& used = warps_seen_[cta];
      if (used == warps_per_cta(launch_.block))
        lines_.fail("kernel '" + launch_.name + "': CTA " + std::to_string(cta) + " shows more warps than its " +
                    std::to_string(used) + " (warp slot " + std::to_string(slot) + ")");
      it->second = used++;
    }
    return it->second;
  }

  struct Key {
    std::uint64_t cta;
    std::uint32_t slot;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return std::hash<std::uint64_t>()(k.cta * 64 + k.slot); }
  };

  LineReader lines_;
  std::vector<std::string_view> fields_, words_;
  KernelLaunch launch_;
  bool has_kernel_ = false, pending_launch_ = false, at_end_ = false, has_grid_launch_id_ = false;
  std::uint64_t launches_ = 0, grid_launch_id_ = 0;
  std::unordered_map<Key, std::uint32_t, KeyHash> warp_index_;
  std::unordered_map<std::uint64_t, std::uint32_t> warps_seen_;
  WarpAccess scratch_;
};

}  // namespace

std::unique_ptr<TraceReader> open_nvbit(const fs::path& path)
{
  return std::make_unique<NvbitReader>(path);
}

}  // namespace gridcast::gpu_cache::detail
