// Progress on stderr for long runs of predict and replay, when stderr is a terminal (a pipe or a log file
// gets none): the first report after 3 s of wall-clock time, then every 5 s, with the rate and an
// estimate of the time left. Wall-clock time decides only whether to print,
// never what the outputs hold.
#pragma once

#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace gridcast::cli {

class Progress {
public:
  /// `command` names the report ("predict"). With `total_calls` > 0 the share done is calls pulled of
  /// that total (a synthesized run knows it); with 0 it is the bytes the trace's streams consumed of
  /// their files (add_total_bytes, add_read_bytes), which is what a recorded trace knows up front.
  Progress(std::string command, std::uint64_t total_calls)
      : command_(std::move(command)), total_calls_(total_calls), start_(Clock::now()), last_(start_),
        terminal_(isatty(STDERR_FILENO) == 1)
  {
  }
  void add_total_bytes(std::uint64_t bytes) { total_bytes_ += bytes; }
  void add_read_bytes(std::uint64_t bytes) { read_bytes_ += bytes; }

  /// One call pulled by the emulator (all ranks together); the clock is read every 4096 calls.
  void tick()
  {
    if ((++done_ & 4095) != 0 || not terminal_)
      return;
    auto now = Clock::now();
    if (now - last_ < (printed_ ? kEvery : kFirst))
      return;
    last_    = now;
    printed_ = true;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (total_calls_ > 0) {
      const double share = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_calls_));
      // The remaining calls at the rate so far: fast-forward skips iterations, so this is an upper bound.
      std::fprintf(stderr,
                   "gridcast %s: %5.1f%% of %llu calls, simulated time %.6g s, %.0f s elapsed, %.3g calls/s, about %.0f s "
                   "left\n",
                   command_.c_str(), 100 * share, static_cast<unsigned long long>(total_calls_),
                   simgrid::s4u::Engine::get_clock(), elapsed, static_cast<double>(done_) / elapsed, eta(share, elapsed));
    } else if (total_bytes_ > 0) {
      const double share = std::min(1.0, static_cast<double>(read_bytes_) / static_cast<double>(total_bytes_));
      std::fprintf(stderr, "gridcast %s: %5.1f%% of the trace read (%llu calls), simulated time %.6g s, %.0f s elapsed, "
                           "about %.0f s left\n",
                   command_.c_str(), 100 * share, static_cast<unsigned long long>(done_),
                   simgrid::s4u::Engine::get_clock(), elapsed, eta(share, elapsed));
    } else {
      std::fprintf(stderr, "gridcast %s: %llu calls, simulated time %.6g s, %.0f s elapsed\n", command_.c_str(),
                   static_cast<unsigned long long>(done_), simgrid::s4u::Engine::get_clock(), elapsed);
    }
  }

private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kFirst{3};
  static constexpr std::chrono::seconds kEvery{5};
  static double eta(double share, double elapsed) { return share > 0 ? elapsed * (1 - share) / share : 0; }
  std::string command_;
  std::uint64_t total_calls_;
  std::uint64_t total_bytes_ = 0, read_bytes_ = 0;
  std::uint64_t done_ = 0;
  Clock::time_point start_, last_;
  bool printed_ = false;
  bool terminal_;
};

}  // namespace gridcast::cli
