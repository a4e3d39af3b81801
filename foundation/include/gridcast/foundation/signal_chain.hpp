// Passing a signal on to the handler that was installed before ours. Header-only and async-signal-safe: the
// profiler's hook (preloaded into applications, linking nothing of gridcast's) and gridcast's own output files
// both remove what they must and then let the program die of the signal as it would have without them.
#pragma once

#include <csignal>

namespace gridcast {

/// Calls `old` (a handler saved by sigaction before ours) for `sig`, or, where it is the default, restores the
/// default and raises the signal again: the process then ends as the signal would have ended it. An ignored
/// signal stays ignored.
inline void chain_signal(const struct sigaction& old, int sig, siginfo_t* info, void* context)
{
  if ((old.sa_flags & SA_SIGINFO) != 0) {
    if (old.sa_sigaction != nullptr) {
      old.sa_sigaction(sig, info, context);
      return;
    }
  } else if (old.sa_handler == SIG_IGN) {
    return;
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != nullptr) {
    old.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace gridcast
