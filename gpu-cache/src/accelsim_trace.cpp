// Accel-Sim's tracer output (docs/reference/gpu-memory-traces.md, "Accel-Sim"): kernel-N.traceg files,
// one launch each (a header of "-key = value" lines, then "#BEGIN_TB" ... "#END_TB" blocks of warps'
// instructions), alone or listed by the folder's kernelslist.g. Every instruction is read and checked;
// those without a memory width, or on shared, constant or texture memory, give no access.
#include "trace_io.hpp"

#include <bit>

namespace fs = std::filesystem;

namespace gridcast::gpu_cache::detail {

namespace {

/// Accel-Sim's three ways to write a warp's addresses (its tracer's address_format).
enum class AccelSimAddresses { ListAll = 0, BaseStride = 1, BaseDelta = 2 };

/// A hex number with or without "0x", as the tracer writes masks, PCs and addresses.
std::optional<std::uint64_t> parse_hex(std::string_view text)
{
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  return parse_unsigned(text, 16);
}

class AccelSimReader final : public TraceReader {
public:
  /// `files` is the list file (kernelslist.g) or one .traceg file.
  AccelSimReader(const fs::path& list_or_trace, bool is_list)
  {
    if (is_list) {
      list_.emplace(list_or_trace);
      folder_ = list_or_trace.parent_path();
    } else {
      single_ = list_or_trace;
    }
  }

  bool grouped_by_cta() const override { return true; }

  bool next_kernel(KernelLaunch& launch) override
  {
    if (kernel_) {  // what is left of the current launch is read (and checked) and dropped
      WarpAccess a;
      while (next_access(a)) {
      }
    }
    fs::path file;
    if (not next_file(file))
      return false;
    kernel_.emplace(file);
    read_header();
    launch = launch_;
    return true;
  }

  bool next_access(WarpAccess& access) override
  {
    if (not kernel_ || kernel_done_)
      return false;
    std::string_view line;
    while (kernel_->next(line)) {
      if (line.find_first_not_of(" \t") == std::string_view::npos)
        continue;
      if (line[0] == '#') {
        block_marker(line);
        continue;
      }
      if (not in_block_)
        kernel_->fail("an instruction outside #BEGIN_TB ... #END_TB");
      if (starts_with(line, "thread block = ")) {
        thread_block(line.substr(15));
        continue;
      }
      if (starts_with(line, "warp = ")) {
        start_warp(line.substr(7));
        continue;
      }
      if (starts_with(line, "insts = ")) {
        auto n = parse_unsigned(line.substr(8));
        if (not n || not has_warp_)
          kernel_->fail("bad 'insts = N' (after 'warp = W')");
        insts_left_ = *n;
        continue;
      }
      if (not has_warp_)
        kernel_->fail("an instruction before 'warp = W'");
      if (insts_left_ == 0)
        kernel_->fail("more instructions than 'insts =' announced for warp " + std::to_string(warp_));
      --insts_left_;
      if (instruction(line, access))
        return true;
    }
    if (in_block_)
      kernel_->fail("truncated: the file ends inside a thread block (no #END_TB)");
    kernel_done_ = true;
    return false;
  }

private:
  bool next_file(fs::path& file)
  {
    if (not list_) {
      if (single_.empty())
        return false;
      file = single_;
      single_.clear();
      return true;
    }
    std::string_view line;
    while (list_->next(line)) {
      const std::size_t first = line.find_first_not_of(" \t");
      if (first == std::string_view::npos || starts_with(line, "MemcpyHtoD"))
        continue;
      if (not starts_with(line, "kernel"))
        list_->fail("expected a kernel-N.traceg file name or a MemcpyHtoD line, got '" + std::string(line) + "'");
      file = folder_ / std::string(line.substr(0, line.find_last_not_of(" \t") + 1));
      return true;
    }
    return false;
  }

  std::uint32_t header_u32(std::string_view value, const char* key)
  {
    auto v = parse_unsigned(value);
    if (not v || *v > 0xffffffffu)
      kernel_->fail(std::string("bad -") + key + " '" + std::string(value) + "'");
    return static_cast<std::uint32_t>(*v);
  }

  Dim3 header_dim3(std::string_view value, const char* key)
  {
    Dim3 d;
    if (value.size() < 2 || value.front() != '(' || value.back() != ')' ||
        not parse_dim3(value.substr(1, value.size() - 2), d))
      kernel_->fail(std::string("bad -") + key + " '" + std::string(value) + "' (expected (x,y,z))");
    return d;
  }

  /// "-kernel name = ...", "-grid dim = (x,y,z)", "-block dim = (x,y,z)", "-shmem = N", "-nregs = N",
  /// "-accelsim tracer version = N"; the other keys are recorded by the tracer for the simulator and
  /// ignored here. The header ends at the first line that begins with '#'.
  void read_header()
  {
    KernelLaunch k;
    k.launch_id        = launches_++;
    trace_version_     = 0;
    bool name = false, grid = false, block = false;
    std::string_view line;
    for (;;) {
      if (not kernel_->next(line))
        kernel_->fail("truncated: the file ends in its header (no #BEGIN_TB)");
      if (line.find_first_not_of(" \t") == std::string_view::npos)
        continue;
      if (line[0] == '#')
        break;
      if (line[0] != '-')
        kernel_->fail("expected a '-key = value' header line, got '" + std::string(line.substr(0, 80)) + "'");
      const std::size_t eq = line.find(" = ");
      if (eq == std::string_view::npos)
        kernel_->fail("expected a '-key = value' header line, got '" + std::string(line.substr(0, 80)) + "'");
      const std::string_view key = line.substr(1, eq - 1), value = line.substr(eq + 3);
      if (key == "kernel name") {
        k.name = value;
        name   = true;
      } else if (key == "grid dim") {
        k.grid = header_dim3(value, "grid dim");
        grid   = true;
      } else if (key == "block dim") {
        k.block = header_dim3(value, "block dim");
        block   = true;
      } else if (key == "shmem") {
        k.shared_bytes_per_cta = header_u32(value, "shmem");
      } else if (key == "nregs") {
        k.registers_per_thread = header_u32(value, "nregs");
      } else if (key == "accelsim tracer version") {
        trace_version_ = header_u32(value, "accelsim tracer version");
      }
    }
    if (not name || not grid || not block)
      kernel_->fail("the header needs -kernel name, -grid dim and -block dim");
    if (std::string reason = check_launch(k); not reason.empty())
      kernel_->fail("kernel '" + k.name + "': " + reason);
    launch_      = std::move(k);
    kernel_done_ = false;
    in_block_    = false;
    block_marker(line);
  }

  void block_marker(std::string_view line)
  {
    split_words(line, words_);
    if (words_.empty() || (words_[0] != "#BEGIN_TB" && words_[0] != "#END_TB"))
      return;  // a comment ("#traces format = ...")
    if (words_[0] == "#BEGIN_TB") {
      if (in_block_)
        kernel_->fail("#BEGIN_TB before the previous thread block's #END_TB");
      in_block_  = true;
      has_cta_   = false;
      has_warp_  = false;
      insts_left_ = 0;
      return;
    }
    if (not in_block_)
      kernel_->fail("#END_TB without #BEGIN_TB");
    end_warp();
    in_block_ = false;
  }

  void thread_block(std::string_view value)
  {
    Dim3 v;
    if (not parse_dim3(value, v))
      kernel_->fail("bad 'thread block = x,y,z'");
    const Dim3& g = launch_.grid;
    if (v.x >= g.x || v.y >= g.y || v.z >= g.z)
      kernel_->fail("kernel '" + launch_.name + "': thread block " + std::string(value) + " is outside the grid " +
                    std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z));
    cta_     = v.x + std::uint64_t(g.x) * (v.y + std::uint64_t(g.y) * v.z);
    has_cta_ = true;
  }

  void end_warp()
  {
    if (has_warp_ && insts_left_ != 0)
      kernel_->fail("truncated: warp " + std::to_string(warp_) + " has " + std::to_string(insts_left_) +
                    " fewer instructions than 'insts =' announced");
  }

  void start_warp(std::string_view value)
  {
    if (not has_cta_)
      kernel_->fail("'warp = W' before 'thread block = x,y,z'");
    end_warp();
    auto w = parse_unsigned(value);
    if (not w || *w >= warps_per_cta(launch_.block))
      kernel_->fail("kernel '" + launch_.name + "': warp " + std::string(value) + " is outside a CTA of " +
                    std::to_string(warps_per_cta(launch_.block)) + " warps");
    warp_       = static_cast<std::uint32_t>(*w);
    has_warp_   = true;
    insts_left_ = 0;
  }

  /// "[tb_x tb_y tb_z warp (before version 3)] PC mask dest_num [dests] opcode src_num [srcs] mem_width
  /// [address_format addresses]": true for an access the model follows.
  bool instruction(std::string_view line, WarpAccess& a)
  {
    split_words(line, words_);
    std::size_t i = trace_version_ < 3 ? 4 : 0;
    auto need = [&](std::size_t n) {
      if (words_.size() < i + n)
        kernel_->fail("truncated instruction line");
    };
    need(3);
    if (not parse_hex(words_[i]))
      kernel_->fail("bad PC '" + std::string(words_[i]) + "'");
    auto mask = parse_hex(words_[i + 1]);
    if (not mask || *mask > 0xffffffffu)
      kernel_->fail("bad active mask '" + std::string(words_[i + 1]) + "'");
    auto dests = parse_unsigned(words_[i + 2]);
    if (not dests || *dests > 32)
      kernel_->fail("bad destination register count '" + std::string(words_[i + 2]) + "'");
    i += 3 + *dests;
    need(2);
    const std::string_view opcode = words_[i];
    auto srcs                     = parse_unsigned(words_[i + 1]);
    if (not srcs || *srcs > 32)
      kernel_->fail("bad source register count '" + std::string(words_[i + 1]) + "'");
    i += 2 + *srcs;
    need(1);
    auto width = parse_unsigned(words_[i]);
    if (not width)
      kernel_->fail("bad memory width '" + std::string(words_[i]) + "'");
    ++i;
    if (*width == 0) {  // not a memory instruction
      if (words_.size() != i)
        kernel_->fail("text after an instruction without memory width");
      return false;
    }
    const SassOpcode op = classify_sass(opcode);
    if (op.what == SassOpcode::Class::Unknown)
      kernel_->fail("unknown memory instruction '" + std::string(opcode) + "'");
    a.active_mask = static_cast<std::uint32_t>(*mask);
    const int active = std::popcount(a.active_mask);
    need(1);
    auto format = parse_unsigned(words_[i++]);
    if (not format || *format > 2)
      kernel_->fail("bad address format '" + std::string(words_[i - 1]) + "' (0 list, 1 base+stride, 2 base+deltas)");
    std::size_t expected = 0;
    switch (static_cast<AccelSimAddresses>(*format)) {
      case AccelSimAddresses::ListAll: expected = active; break;
      case AccelSimAddresses::BaseStride: expected = active == 0 ? 0 : 2; break;
      case AccelSimAddresses::BaseDelta: expected = active == 0 ? 0 : active; break;
    }
    if (words_.size() - i > expected)
      kernel_->fail(expected == 32 || words_.size() - i > 32 ? "more than 32 addresses"
                                                              : "more address fields than the mask's " +
                                                                    std::to_string(active) + " active lanes need");
    if (words_.size() - i < expected)
      kernel_->fail("truncated: fewer address fields than the mask's " + std::to_string(active) + " active lanes need");
    if (active == 0)
      return false;  // a warp whose lanes were all predicated off: no access
    auto hex_address = [&](std::size_t at) {
      auto v = parse_hex(words_[at]);
      if (not v)
        kernel_->fail("bad address '" + std::string(words_[at]) + "'");
      return *v;
    };
    auto signed_field = [&](std::size_t at) {
      auto v = parse_signed(words_[at]);
      if (not v)
        kernel_->fail("bad stride or delta '" + std::string(words_[at]) + "'");
      return static_cast<std::uint64_t>(*v);
    };
    std::uint32_t m = a.active_mask;
    switch (static_cast<AccelSimAddresses>(*format)) {
      case AccelSimAddresses::ListAll:
        for (; m != 0; m &= m - 1)
          a.address[std::countr_zero(m)] = hex_address(i++);
        break;
      case AccelSimAddresses::BaseStride: {
        std::uint64_t address = hex_address(i);
        const std::uint64_t stride = signed_field(i + 1);
        for (; m != 0; m &= m - 1, address += stride)
          a.address[std::countr_zero(m)] = address;
        break;
      }
      case AccelSimAddresses::BaseDelta: {
        std::uint64_t address = hex_address(i++);
        a.address[std::countr_zero(m)] = address;
        for (m &= m - 1; m != 0; m &= m - 1) {
          address += signed_field(i++);
          a.address[std::countr_zero(m)] = address;
        }
        break;
      }
    }
    if (op.what == SassOpcode::Class::Skipped)
      return false;
    a.cta            = cta_;
    a.warp           = warp_;
    a.sm             = -1;
    a.kind           = op.kind;
    a.bytes_per_lane = op.bytes_per_lane;
    return true;
  }

  std::optional<LineReader> list_;
  fs::path folder_, single_;
  std::optional<LineReader> kernel_;
  KernelLaunch launch_;
  std::uint64_t launches_ = 0;
  std::uint32_t trace_version_ = 0;
  bool kernel_done_ = false, in_block_ = false, has_cta_ = false, has_warp_ = false;
  std::uint64_t cta_ = 0, insts_left_ = 0;
  std::uint32_t warp_ = 0;
  std::vector<std::string_view> words_;
};

}  // namespace

std::unique_ptr<TraceReader> open_accelsim(const fs::path& path)
{
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path list = path / "kernelslist.g";
    if (not fs::exists(list, ec))
      throw InputError({path.string(), 0, {}, -1},
                       "a folder without kernelslist.g (Accel-Sim's list of kernel-N.traceg files)");
    return std::make_unique<AccelSimReader>(list, true);
  }
  return std::make_unique<AccelSimReader>(path, path.filename() == "kernelslist.g");
}

}  // namespace gridcast::gpu_cache::detail
