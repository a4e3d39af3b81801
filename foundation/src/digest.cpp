#include "gridcast/foundation/digest.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace gridcast {

namespace {
std::uint32_t rol(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
}  // namespace

void Sha1::add_file(const std::filesystem::path& file)
{
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw InputError({file.string(), 0, {}, -1}, "cannot read the file to digest it");
  if (buf_.empty())
    buf_.resize(kChunkBytes);
  for (;;) {
    ssize_t got = ::read(fd, buf_.data(), buf_.size());
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      ::close(fd);
      throw InputError({file.string(), 0, {}, -1}, "cannot read the file to digest it");
    }
    if (got == 0)
      break;
    add(reinterpret_cast<const unsigned char*>(buf_.data()), static_cast<std::size_t>(got));
  }
  ::close(fd);
}

std::string Sha1::hex()
{
  const std::uint64_t bits = total_bytes_ * 8;
  static constexpr unsigned char kPad[64] = {0x80};
  add(kPad, 1 + (119 - total_bytes_ % 64) % 64);  // up to 56 mod 64
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
  add(length, 8);
  char out[41];
  for (int i = 0; i < 5; ++i)
    std::snprintf(out + 8 * i, 9, "%08x", static_cast<unsigned>(h_[i]));
  return std::string(out, 40);
}

void Sha1::add(const unsigned char* data, std::size_t n)
{
  total_bytes_ += n;
  if (pending_ > 0) {  // complete the partial block first
    std::size_t take = std::min(n, 64 - pending_);
    std::memcpy(block_ + pending_, data, take);
    pending_ += take;
    data += take;
    n -= take;
    if (pending_ < 64)
      return;
    compress(block_);
    pending_ = 0;
  }
  for (; n >= 64; data += 64, n -= 64)
    compress(data);
  std::memcpy(block_, data, n);
  pending_ = n;
}

void Sha1::compress(const unsigned char* p)
{
  std::uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = std::uint32_t{p[4 * i]} << 24 | std::uint32_t{p[4 * i + 1]} << 16 | std::uint32_t{p[4 * i + 2]} << 8 |
           std::uint32_t{p[4 * i + 3]};
  for (int i = 16; i < 80; ++i)
    w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
  auto step = [&](std::uint32_t f, std::uint32_t k, std::uint32_t wi) {
    std::uint32_t t = rol(a, 5) + f + e + k + wi;
    e = d;
    d = c;
    c = rol(b, 30);
    b = a;
    a = t;
  };
  for (int i = 0; i < 20; ++i)
    step((b & c) | (~b & d), 0x5a827999u, w[i]);
  for (int i = 20; i < 40; ++i)
    step(b ^ c ^ d, 0x6ed9eba1u, w[i]);
  for (int i = 40; i < 60; ++i)
    step((b & c) | (b & d) | (c & d), 0x8f1bbcdcu, w[i]);
  for (int i = 60; i < 80; ++i)
    step(b ^ c ^ d, 0xca62c1d6u, w[i]);
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
}

std::string digest_file(const std::filesystem::path& file)
{
  Sha1 h;
  h.add_file(file);
  return h.hex();
}

std::string digest_files(const std::vector<std::filesystem::path>& files)
{
  Sha1 h;
  for (const auto& f : files)
    h.add_file(f);
  return h.hex();
}

std::string digest_text(std::string_view text)
{
  Sha1 h;
  h.add(text);
  return h.hex();
}

}  // namespace gridcast
