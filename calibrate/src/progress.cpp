#include "gridcast/calibrate/progress.hpp"

#include <unistd.h>

namespace gridcast::calibrate {

Progress::Mode Progress::detect(bool quiet)
{
  if (quiet)
    return Mode::Quiet;
  return isatty(STDERR_FILENO) != 0 ? Mode::Terminal : Mode::Lines;
}

void Progress::step(const std::string& part, int i, int n, const std::string& detail)
{
  if (mode_ == Mode::Quiet)
    return;
  std::string text = "[" + part + "] " + std::to_string(i) + "/" + std::to_string(n) + " " + detail;
  if (mode_ == Mode::Lines) {
    out_ << text << '\n' << std::flush;
    return;
  }
  // Terminal: rewrite the line in place (\r, then clear to the end of the line).
  out_ << '\r' << text << "\x1b[K" << std::flush;
  open_line_ = i < n;
  if (not open_line_)
    out_ << '\n' << std::flush;
}

void Progress::note(const std::string& text)
{
  if (mode_ == Mode::Quiet)
    return;
  end_line();
  out_ << text << '\n' << std::flush;
}

void Progress::warn(const std::string& text)
{
  end_line();
  out_ << text << '\n' << std::flush;
}

void Progress::end_line()
{
  if (open_line_)
    out_ << '\n';
  open_line_ = false;
}

}  // namespace gridcast::calibrate
