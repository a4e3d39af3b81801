// Digests of input files (prediction.json's `inputs[]`, the ids of a study's points): SHA-1 over whole
// blocks, read through one buffer. Part of gridcast::foundation (no SimGrid).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast {

/// SHA-1 (FIPS 180-4) over whole 64-byte blocks. Boost's uuid sha1, used before, feeds the compression
/// function one byte at a time (~100 MB/s): digesting the inputs took 6% of a 256-rank replay (4.4 MB of
/// traces). Same digests, block by block, read through a descriptor into one buffer per digest.
class Sha1 {
public:
  /// Adds the bytes of `file`; InputError naming it when it cannot be read.
  void add_file(const std::filesystem::path& file);
  void add(std::string_view bytes) { add(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()); }
  /// The digest as 40 hex digits; the object is spent afterwards.
  std::string hex();

private:
  static constexpr std::size_t kChunkBytes = 1 << 16;
  void add(const unsigned char* data, std::size_t n);
  void compress(const unsigned char* p);

  std::uint32_t h_[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
  unsigned char block_[64] = {};
  std::size_t pending_ = 0;
  std::uint64_t total_bytes_ = 0;
  std::vector<char> buf_;
};

/// SHA-1 of one file's bytes (40 hex digits).
std::string digest_file(const std::filesystem::path& file);
/// SHA-1 of several files' bytes one after the other.
std::string digest_files(const std::vector<std::filesystem::path>& files);
/// SHA-1 of a string.
std::string digest_text(std::string_view text);

}  // namespace gridcast
