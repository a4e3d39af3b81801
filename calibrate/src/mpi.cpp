// The MPI part: runs gridcast-mpi-bench under the user's launcher with 2 ranks, reads its raw timings
// line by line (showing progress), computes the statistics and fits the factors.
#include "gridcast/calibrate/measure.hpp"

#include "gridcast/foundation/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <sstream>
#include <sys/wait.h>

namespace gridcast::calibrate {

namespace {

std::string shell_quote(const std::string& s)
{
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string human_bytes(std::uint64_t b)
{
  if (b >= (1u << 20) && b % (1u << 20) == 0)
    return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0)
    return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

}  // namespace

bool parse_mpi_bench_line(const std::string& line, MpiBenchOutput& out, int& planned_steps)
{
  std::istringstream in(line);
  std::string kind;
  in >> kind;
  auto bad = [&](const std::string& why) {
    return InputError({"gridcast-mpi-bench output", 0, "", -1}, why + ": \"" + line + "\"");
  };
  auto read_samples = [&](std::vector<double>& v) {
    double t = 0;
    while (in >> t)
      v.push_back(t);
    if (not in.eof() || v.empty())
      throw bad("expected timings");
  };
  if (kind == "plan") {
    int a = 0, b = 0, x = 0;
    if (not(in >> a >> b))
      throw bad("bad plan line");
    if (not(in >> x))
      x = 0;  // a bench without the exchange curve
    planned_steps = a + b + x;
    return true;
  }
  if (kind == "pingpong") {
    platform::PingPongPoint p;
    int rounds = 0;
    if (not(in >> p.bytes >> rounds))
      throw bad("bad pingpong line");
    std::vector<double> v;
    read_samples(v);
    p.one_way_s = summarize(std::move(v));
    out.pingpong.push_back(p);
    return true;
  }
  if (kind == "exchange") {
    platform::SizedTiming p;
    int rounds = 0;
    if (not(in >> p.bytes >> rounds))
      throw bad("bad exchange line");
    std::vector<double> v;
    read_samples(v);
    p.time_s = summarize(std::move(v));
    out.exchange.push_back(p);
    return true;
  }
  if (kind == "collective") {
    platform::CollectiveTiming c;
    int calls = 0;
    if (not(in >> c.op >> c.np >> c.bytes >> calls))
      throw bad("bad collective line");
    std::vector<double> v;
    read_samples(v);
    for (double& t : v)
      t = std::max(t, 0.0);  // a difference of two timings: noise can make a tiny one negative
    c.time_s = summarize(std::move(v));
    out.collectives.push_back(c);
    return true;
  }
  if (kind == "collectives-method") {
    if (not(in >> out.collectives_method) || not(in >> std::ws).eof())
      throw bad("bad collectives-method line");
    return true;
  }
  if (kind == "done") {
    out.done = true;
    return true;
  }
  return false;
}

namespace {

/// Runs gridcast-mpi-bench with `args` under the launcher, showing progress; the parsed output.
MpiBenchOutput run_mpi_bench(const MpiRunOptions& o, const std::string& args, Progress& progress)
{
  std::string command = o.mpirun + " -np 2 " + shell_quote(o.bench) + args + " 2>&1";
  progress.note("[mpi] " + o.mpirun + " -np 2 gridcast-mpi-bench" + args);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    throw InputError({"--mpirun", 0, "", -1}, "cannot start the launcher: " + command);

  MpiBenchOutput out;
  int planned = 0, seen = 0;
  std::deque<std::string> other;  // the launcher's own messages, shown when it fails
  std::string line;
  char buf[4096];
  std::exception_ptr failure;
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    line += buf;
    if (line.empty() || line.back() != '\n')
      continue;
    line.pop_back();
    try {
      if (parse_mpi_bench_line(line, out, planned)) {
        std::string what;
        if (line.rfind("pingpong", 0) == 0)
          what = "ping-pong " + human_bytes(out.pingpong.back().bytes);
        else if (line.rfind("exchange", 0) == 0)
          what = "exchange " + human_bytes(out.exchange.back().bytes);
        else if (line.rfind("collective ", 0) == 0)  // not the "collectives-method" line
          what = out.collectives.back().op + " " + human_bytes(out.collectives.back().bytes);
        if (not what.empty())
          progress.step("mpi", ++seen, std::max(planned, seen), what);
      } else {
        other.push_back(line);
        if (other.size() > 30)
          other.pop_front();
      }
    } catch (...) {
      if (not failure)
        failure = std::current_exception();
    }
    line.clear();
  }
  int status = pclose(pipe);
  if (failure)
    std::rethrow_exception(failure);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code != 0 || not out.done) {
    std::string text;
    for (const auto& l : other)
      text += "\n  " + l;
    std::string hint = code == 127 ? " (launcher not found: give the right one with --mpirun)"
                                   : " (check --mpirun: as root Open MPI needs --allow-run-as-root; on a machine "
                                     "with fewer cores than ranks, --oversubscribe)";
    throw InputError({"--mpirun", 0, "", -1}, "the MPI benchmark failed with exit code " + std::to_string(code) +
                                                  hint + "; command: " + command + text);
  }
  return out;
}

/// The bench's arguments: sizes, repetitions (collectives get more: their figures are compared within
/// 15%, and one call is short enough for a scheduler slice to move a whole repetition) and duration.
std::string bench_args(const MpiRunOptions& o)
{
  return o.quick ? " --max-bytes 1048576 --repetitions 3 --min-calls 3 --target-s 5e-4"
                 : " --max-bytes 67108864 --repetitions 31 --coll-repetitions 61 --target-s 2e-3";
}

std::string utc_now()
{
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

platform::CollectivesMeasured collectives_measured(const MpiBenchOutput& out, const std::string& date, double load)
{
  // A bench that prints no method line is one from before it (the loop difference).
  return {out.collectives_method.empty() ? platform::kCollectivesLoopDifference : out.collectives_method, date,
          load};
}

double load_average_now()
{
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : 0.0;
}

void warn_disturbed_collectives(const std::vector<platform::CollectiveTiming>& timings, Progress& progress)
{
  std::vector<std::string> bad = disturbed_collectives(timings);
  if (bad.empty())
    return;
  std::string list;
  for (const auto& b : bad)
    list += (list.empty() ? "" : ", ") + b;
  progress.warn("[mpi] warning: " + std::to_string(bad.size()) + " of " + std::to_string(timings.size()) +
                " collective timings have a median more than 20% above their best repetition (" + list +
                "): the machine was busy; measure them again when it is idle with `gridcast calibrate "
                "--only-collectives CALIBRATION.json -o CALIBRATION.json`");
}

void warn_bcasts_off_pingpong(const std::vector<platform::CollectiveTiming>& timings,
                              const std::vector<platform::PingPongPoint>& pingpong, Progress& progress)
{
  std::vector<std::string> off = bcasts_off_pingpong(timings, pingpong);
  if (off.empty())
    return;
  std::string list;
  for (const auto& b : off)
    list += (list.empty() ? "" : ", ") + b;
  progress.warn("[mpi] warning: " + std::to_string(off.size()) +
                " bcast timings at np 2 differ from the ping-pong curve by more than 15% (" + list +
                "); at np 2 a bcast is one message, so the two were measured in different states of the "
                "machine (or one of them was disturbed) and the collectives cannot validate a model "
                "fitted to that curve. Calibrate again, everything at once, on an idle machine");
}

}  // namespace

std::vector<std::string> bcasts_off_pingpong(const std::vector<platform::CollectiveTiming>& timings,
                                             const std::vector<platform::PingPongPoint>& pingpong, double tolerance)
{
  std::vector<std::string> out;
  for (const auto& t : timings) {
    if (t.op != "bcast" || t.np != 2)
      continue;
    auto p = std::find_if(pingpong.begin(), pingpong.end(), [&](const auto& q) { return q.bytes == t.bytes; });
    if (p == pingpong.end() || not(p->one_way_s.median > 0))
      continue;
    double ratio = t.time_s.median / p->one_way_s.median;
    if (std::abs(ratio - 1) > tolerance) {
      char text[32];
      std::snprintf(text, sizeof text, ratio >= 0.1 ? "%.2f" : "%.2g", ratio);  // never "0.00x"
      out.push_back("bcast " + human_bytes(t.bytes) + " (" + text + "x the ping-pong)");
    }
  }
  return out;
}

std::vector<std::string> disturbed_collectives(const std::vector<platform::CollectiveTiming>& timings,
                                               double tolerance)
{
  std::vector<std::string> out;
  for (const auto& t : timings)
    if (t.time_s.min > 0 && t.time_s.median > (1 + tolerance) * t.time_s.min) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2f", t.time_s.median / t.time_s.min);
      out.push_back(t.op + " " + human_bytes(t.bytes) + " (median " + ratio + "x best)");
    }
  return out;
}

CollectiveRun measure_collectives(const MpiRunOptions& o, Progress& progress,
                                 const std::vector<platform::PingPongPoint>& pingpong)
{
  const std::string date = utc_now();
  const double load = load_average_now();
  MpiBenchOutput out = run_mpi_bench(o, bench_args(o) + " --only-collectives", progress);
  if (out.collectives.empty())
    throw InputError({o.bench, 0, "", -1}, "the MPI benchmark measured no collectives");
  warn_disturbed_collectives(out.collectives, progress);
  warn_bcasts_off_pingpong(out.collectives, pingpong, progress);
  return {out.collectives, collectives_measured(out, date, load)};
}

platform::NetworkCalibration measure_mpi(const MpiRunOptions& o, Progress& progress)
{
  const std::string date = utc_now();
  const double load = load_average_now();
  MpiBenchOutput out = run_mpi_bench(o, bench_args(o), progress);
  warn_disturbed_collectives(out.collectives, progress);
  warn_bcasts_off_pingpong(out.collectives, out.pingpong, progress);
  // A median far above the best repetition means other work kept taking the cores (each preemption
  // costs a scheduler time slice, milliseconds): say so, the fit follows whatever was measured.
  int disturbed = 0;
  for (const auto& p : out.pingpong)
    disturbed += p.one_way_s.median > 1.5 * p.one_way_s.min ? 1 : 0;
  if (disturbed > 0)
    progress.warn("[mpi] warning: " + std::to_string(disturbed) + " of " + std::to_string(out.pingpong.size()) +
                  " ping-pong sizes have a median above 1.5x their best repetition: the machine was busy, "
                  "calibrate again when it is idle");
  platform::NetworkCalibration n;
  n.launcher              = o.mpirun;
  NetworkModel model      = fit_network_model(out.pingpong, out.exchange);
  const NetworkFit& fit   = model.fit;
  n.latency_s             = fit.latency_s;
  n.bandwidth_Bps         = fit.bandwidth_Bps;
  n.eager_threshold_bytes = fit.eager_threshold_bytes;
  n.lat_factor            = fit.lat_factor;
  n.bw_factor             = fit.bw_factor;
  n.pingpong              = out.pingpong;
  n.collectives           = out.collectives;
  if (not out.collectives.empty())
    n.collectives_measured = collectives_measured(out, date, load);
  n.exchange              = out.exchange;
  n.shared_bandwidth_Bps  = model.shared_bandwidth_Bps;
  n.copy_overhead         = model.copy_overhead;
  return n;
}

}  // namespace gridcast::calibrate
