// find_recorded_loop: the main loop of a rank's recorded calls, from the fold the trace model uses.
#include "gridcast/models/recorded_loop.hpp"

#include <catch2/catch.hpp>

using gridcast::models::find_recorded_loop;

TEST_CASE("recorded loop: the top-level loop covering the most calls, where it starts and its body", "[models]")
{
  // a b (c d e) x5 f: starts at call 2, 3 calls an iteration
  std::vector<std::uint32_t> t = {0, 1};
  for (int i = 0; i < 5; ++i)
    t.insert(t.end(), {2, 3, 4});
  t.push_back(5);
  auto loop = find_recorded_loop(t);
  CHECK(loop.first_call == 2);
  CHECK(loop.body_calls == 3);
  CHECK(loop.iterations == 5);

  // (a (b c) x3) x4 after a prologue of 2: the outer loop, 7 calls an iteration
  t = {9, 8};
  for (int i = 0; i < 4; ++i) {
    t.push_back(0);
    for (int j = 0; j < 3; ++j)
      t.insert(t.end(), {1, 2});
  }
  loop = find_recorded_loop(t);
  CHECK(loop.first_call == 2);
  CHECK(loop.body_calls == 7);
  CHECK(loop.iterations == 4);

  // two top-level loops: the one with more calls, not the first
  t = {0, 0, 0, 1, 2, 1, 2, 1, 2, 1, 2};
  loop = find_recorded_loop(t);
  CHECK(loop.first_call == 3);
  CHECK(loop.body_calls == 2);
  CHECK(loop.iterations == 4);

  // nothing repeats
  CHECK(find_recorded_loop({0, 1, 2, 3}).iterations == 0);
  CHECK(find_recorded_loop({}).iterations == 0);
}
