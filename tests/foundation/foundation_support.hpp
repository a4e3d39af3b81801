// Test helpers that need nothing beyond gridcast::foundation (its error types), for the tests of every component.
#pragma once

#include "../support.hpp"

#include "gridcast/foundation/errors.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>

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

}  // namespace gridcast::test
