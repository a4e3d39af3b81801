// Progress display on stderr for long measurements: one rewritten line on a terminal, one line per
// step otherwise (logs), nothing when quiet.
#pragma once

#include <ostream>
#include <string>

namespace gridcast::calibrate {

class Progress {
public:
  enum class Mode { Terminal, Lines, Quiet };
  Progress(std::ostream& out, Mode mode) : out_(out), mode_(mode) {}
  /// Terminal when `out` is stderr on a tty, Lines otherwise (or Quiet when `quiet`).
  static Mode detect(bool quiet);

  /// "[part] step i/n: detail"; i == n finishes the part's line on a terminal.
  void step(const std::string& part, int i, int n, const std::string& detail);
  /// A full line (a result, a skipped part), never overwritten.
  void note(const std::string& text);
  /// A warning: shown even when quiet.
  void warn(const std::string& text);

private:
  void end_line();
  std::ostream& out_;
  Mode mode_;
  bool open_line_ = false;
};

}  // namespace gridcast::calibrate
