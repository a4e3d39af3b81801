// Errors in three tiers (as in SimGrid): bad user input throws InputError with its context, simulated
// failures are typed exceptions of the emulator, and broken invariants are InternalError (exit code 2).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gridcast {

/// Where a user error points: a file, and optionally a line, a key path and a rank.
struct ErrorContext {
  std::string file;        ///< empty when not tied to a file
  std::uint64_t line = 0;  ///< 1-based; 0 = none
  std::string key;         ///< JSON key path such as "host.speed_flops"; empty = none
  int rank = -1;           ///< -1 = none
};

/// Bad input: a malformed trace, an unknown key, an impossible platform. Exit code 1.
class InputError : public std::runtime_error {
public:
  InputError(ErrorContext context, const std::string& reason);
  const ErrorContext& context() const { return context_; }
  const std::string& reason() const { return reason_; }

private:
  ErrorContext context_;
  std::string reason_;
};

/// A broken invariant of gridcast itself. Exit code 2.
class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

/// Formats "file:line: key 'k': rank r: reason" with the parts that are set.
std::string format_error(const ErrorContext& context, const std::string& reason);

/// Why a file could not be opened, from the errno of the failed open: its text, and for "Too many open
/// files" (a trace of more ranks than the open-file limit) the limit and how to raise it.
std::string open_failure(int errno_value);

}  // namespace gridcast
