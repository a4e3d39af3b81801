// The deterministic generator and the order statistics of gridcast::foundation: SplitMix64 against the
// reference outputs of Vigna's splitmix64.c, and the median of odd and even counts.
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/rng.hpp"
#include "gridcast/foundation/stats.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace gridcast;

TEST_CASE("rng: splitmix64 gives the reference outputs", "[foundation][rng]")
{
  // The reference generator from seed 0 outputs splitmix64(0), splitmix64(golden), ...: the mix alone.
  CHECK(splitmix64(0) == 0xe220a8397b1dcdafULL);
  CHECK(splitmix64(0x9e3779b97f4a7c15ULL) == 0x6e789e6aa1b965f4ULL);
  static_assert(splitmix64(0) == 0xe220a8397b1dcdafULL, "usable in constant expressions");
}

TEST_CASE("rng: SplitMix64 from a seed gives the reference sequence, the same every time", "[foundation][rng]")
{
  // The first outputs of splitmix64.c seeded with 1234567.
  const std::vector<std::uint64_t> reference = {6457827717110365317ULL, 3203168211198807973ULL,
                                                9817491932198370423ULL, 4593380528125082431ULL,
                                                16408922859458223821ULL};
  SplitMix64 a(1234567), b(1234567);
  for (std::uint64_t want : reference) {
    CHECK(a.next() == want);
    CHECK(b.next() == want);
  }
  SplitMix64 zero(0);
  CHECK(zero.next() == 0xe220a8397b1dcdafULL);
  CHECK(zero.next() == 0x6e789e6aa1b965f4ULL);
  CHECK(zero.next() == 0x06c45d188009454fULL);
  CHECK(zero.next() == 0xf88bb8a8724c81ecULL);
}

TEST_CASE("rng: uniform draws take the top 53 bits of the next output and stay below 1", "[foundation][rng]")
{
  SplitMix64 g(0);
  CHECK(g.uniform() == 0.8833108082136426);   // 0xe220a8397b1dcdaf >> 11, times 2^-53
  CHECK(g.uniform() == 0.43152799704850997);  // 0x6e789e6aa1b965f4 >> 11, times 2^-53
  for (int i = 0; i < 1000; ++i) {
    const double u = g.uniform();
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
}

TEST_CASE("stats: the median of odd and even counts, in any order", "[foundation][stats]")
{
  CHECK(median({7}) == 7);
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({5, -1, 4, 10, 0}) == 4);
  CHECK(median({4, 1}) == 2.5);
  CHECK(median({10, 2, 8, 4}) == 6);  // the mean of 4 and 8
  CHECK(median({1, 1, 1, 9}) == 1);

  const Summary s = summarize_samples({3, 9, 1, 5});
  CHECK(s.median == 4);
  CHECK(s.min == 1);
  CHECK(s.max == 9);
  CHECK(s.count == 4);
}

TEST_CASE("stats: the median of nothing is an internal error", "[foundation][stats]")
{
  CHECK_THROWS_AS(median({}), InternalError);
  CHECK_THROWS_AS(summarize_samples({}), InternalError);
}
