// InputError and its message format.
#include "gridcast/foundation/errors.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace gridcast {

std::string open_failure(int errno_value)
{
  std::string text = std::strerror(errno_value);
  if (errno_value == EMFILE) {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
      text += " (the limit is " + std::to_string(limit.rlim_cur) +
              " open files, and a replay holds one per rank: raise it with `ulimit -n`, as far as the hard "
              "limit of `ulimit -Hn`, which gridcast already takes)";
  }
  return text;
}

std::string format_error(const ErrorContext& context, const std::string& reason)
{
  std::string out;
  if (not context.file.empty()) {
    out += context.file;
    if (context.line > 0) {
      out += ':';
      out += std::to_string(context.line);
    }
    out += ": ";
  } else if (context.line > 0) {
    out += "line ";
    out += std::to_string(context.line);
    out += ": ";
  }
  if (not context.key.empty()) {
    out += "key '";
    out += context.key;
    out += "': ";
  }
  if (context.rank >= 0) {
    out += "rank ";
    out += std::to_string(context.rank);
    out += ": ";
  }
  out += reason;
  return out;
}

InputError::InputError(ErrorContext context, const std::string& reason)
    : std::runtime_error(format_error(context, reason)), context_(std::move(context)), reason_(reason)
{
}

}  // namespace gridcast
