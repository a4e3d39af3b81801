// Helpers of the gridcast::models tests.
#pragma once

#include "../support.hpp"

#include "gridcast/models/errors.hpp"
#include "gridcast/models/stream.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace gridcast::test {

/// Runs `f`, which must throw InputError, and returns the error for inspection.
template <class F> InputError expect_input_error(F&& f)
{
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  throw std::logic_error("unreachable");
}

/// Every record of a stream, in order.
inline std::vector<models::CallRecord> read_all(models::CallStream& stream)
{
  std::vector<models::CallRecord> out;
  models::CallRecord r;
  while (stream.next(r))
    out.push_back(r);
  return out;
}

inline std::string source_path(const std::string& relative)
{
  return std::string(GRIDCAST_SOURCE_DIR) + "/" + relative;
}

}  // namespace gridcast::test
