// Deterministic pseudo-random numbers: the same draws on every platform and standard library (the
// standard distributions are implementation-defined), so that a seed names one output everywhere.
#pragma once

#include <cstdint>

namespace gridcast {

/// SplitMix64's output function (Steele, Lea, Flood 2014): a bijective mix of 64 bits. Used as a hash of
/// a seed with an index (`splitmix64(seed ^ splitmix64(i + 1))`) and as a counter-based generator.
constexpr std::uint64_t splitmix64(std::uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A SplitMix64 generator: `next()` advances the state by the golden-ratio increment and mixes it.
class SplitMix64 {
public:
  explicit constexpr SplitMix64(std::uint64_t seed) : state_(seed) {}
  constexpr std::uint64_t next()
  {
    const std::uint64_t out = splitmix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
    return out;
  }
  /// Uniform in [0, 1) with 53 random bits.
  constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  std::uint64_t state_;
};

}  // namespace gridcast
