// The pool of child processes that runs a study's platforms and points.
#include "gridcast/study/runner.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/study/report.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;

namespace gridcast::study {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_stop(int) { g_stop = 1; }

/// SIGINT and SIGTERM set g_stop for the pool's lifetime (installed without SA_RESTART, so that the wait
/// for children returns), and SIGCHLD has its default action: a SIGCHLD ignored by whoever started gridcast
/// (inherited across exec) would have the kernel reap the points itself, and the pool could not wait for
/// them. The former handlers come back afterwards.
class StopSignals {
public:
  StopSignals()
  {
    g_stop = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    struct sigaction child {};
    child.sa_handler = SIG_DFL;
    sigemptyset(&child.sa_mask);
    sigaction(SIGCHLD, &child, &old_child_);
  }
  ~StopSignals()
  {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGCHLD, &old_child_, nullptr);
  }
  StopSignals(const StopSignals&)            = delete;
  StopSignals& operator=(const StopSignals&) = delete;

private:
  struct sigaction old_int_ {}, old_term_ {}, old_child_ {};
};

/// Starts `executable args...` with stdin from /dev/null and stdout and stderr into `log`.
pid_t spawn(const fs::path& executable, const std::vector<std::string>& args, const fs::path& log)
{
  fs::create_directories(log.parent_path());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<std::string> argv = {"gridcast"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid          = 0;
  const int spawned  = posix_spawn(&pid, executable.c_str(), &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw InternalError("study: cannot start " + executable.string() + ": " + std::strerror(spawned));
  return pid;
}

/// The error of a failed run from its console: gridcast's own error lines, else the last lines.
std::string error_of(const fs::path& log, int status)
{
  std::ifstream in(log);
  std::vector<std::string> lines, errors;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("gridcast: error", 0) == 0 || line.rfind("gridcast: internal error", 0) == 0)
      errors.push_back(line);
    lines.push_back(line);
  }
  if (errors.empty())
    errors.assign(lines.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(lines.size(), 3)), lines.end());
  std::string text;
  for (const auto& e : errors)
    text += (text.empty() ? "" : " / ") + e;
  if (WIFSIGNALED(status))
    text = "killed by signal " + std::to_string(WTERMSIG(status)) + (text.empty() ? "" : ": " + text);
  if (text.size() > 600)
    text = text.substr(0, 597) + "...";
  return text.empty() ? "exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) : text;
}

struct Task {
  bool platform = false;
  std::size_t index = 0;  ///< into manifest.platforms or manifest.points
};

struct Running {
  Task task;
  std::chrono::steady_clock::time_point started;
};

std::string seconds_text(double s)
{
  char buf[32];
  if (s < 90)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  return buf;
}

/// The points this run does: the one of --task-index, or all; less those with a result already (and, unless
/// --retry-failed, those that failed). Counts them in `summary`.
std::vector<std::size_t> points_to_run(const Manifest& m, const fs::path& out, const RunOptions& options,
                                       RunSummary& summary)
{
  std::vector<std::size_t> todo;
  if (options.task_index) {
    if (*options.task_index >= m.points.size())
      throw InputError({(out / "manifest.json").string(), 0, {}, -1},
                       "--task-index " + std::to_string(*options.task_index) + ": the study has " +
                           std::to_string(m.points.size()) + " points (0 to " + std::to_string(m.points.size() - 1) +
                           ")");
    todo.push_back(*options.task_index);
  } else {
    for (std::size_t i = 0; i < m.points.size(); ++i)
      todo.push_back(i);
  }
  summary.points = todo.size();

  std::vector<std::size_t> points;
  for (std::size_t i : todo) {
    std::string problem;
    const auto result = read_result(out, m.points[i], &problem);
    if (not problem.empty()) {
      std::cerr << "study: point " << i << ": " << problem << ": running it again\n";
      ++summary.redone;
    }
    if (result && (result->ok || not options.retry_failed)) {
      ++summary.already_done;
      summary.failed += result->ok ? 0 : 1;
      continue;
    }
    points.push_back(i);
  }
  return points;
}

/// The platforms the points need that are not generated yet, each once, then the points.
struct Tasks {
  std::vector<Task> platforms, points;
};

Tasks tasks_of(const Manifest& m, const std::vector<std::size_t>& points)
{
  Tasks tasks;
  std::vector<Task>& platform_tasks = tasks.platforms;
  std::vector<Task>& point_tasks = tasks.points;
  std::map<std::string, std::size_t> platform_index;
  for (std::size_t k = 0; k < m.platforms.size(); ++k)
    platform_index[m.platforms[k].id] = k;
  std::vector<bool> queued(m.platforms.size(), false);
  for (std::size_t i : points) {
    const std::size_t k = platform_index.at(m.points[i].platform_id);
    const ManifestPlatform& p = m.platforms[k];
    if (not p.spec.empty() && not fs::exists(p.xml) && not queued[k]) {
      queued[k] = true;
      platform_tasks.push_back({true, k});
    }
    point_tasks.push_back({false, i});
  }
  return tasks;
}

/// One line on stderr per finished point: its result, how long it took and about how long the rest will take.
void print_progress(const ManifestPoint& p, const PointResult& result, double took, const RunSummary& summary,
                    std::size_t finished_points, std::size_t left, double point_seconds, int jobs)
{
  std::cerr << "[" << summary.already_done + finished_points << "/" << summary.points << "] point "
            << p.index << " (" << (p.variant.empty() ? "" : p.variant + " ");
  for (std::size_t c = 0; c < p.coordinates.size(); ++c)
    std::cerr << (c ? " " : "") << p.coordinates[c].first << "=" << value_text(p.coordinates[c].second);
  std::cerr << "): ";
  if (result.ok)
    std::cerr << "makespan " << result.makespan_s << " s";
  else
    std::cerr << "FAILED: " << result.error;
  std::cerr << " (" << seconds_text(took) << ")";
  if (summary.failed > 0)
    std::cerr << ", " << summary.failed << " failed";
  if (left > 0)
    std::cerr << ", about " << seconds_text(point_seconds / finished_points * left / jobs) << " left";
  std::cerr << "\n";
}

}  // namespace

RunSummary run_points(const Manifest& m, const fs::path& out, const RunOptions& options)
{
  RunSummary summary;
  std::vector<std::size_t> points = points_to_run(m, out, options, summary);

  // Platforms the remaining points need and that are not generated yet go first, each once.
  const Tasks tasks = tasks_of(m, points);

  const StopSignals stop_signals;
  std::map<pid_t, Running> running;
  std::map<std::string, std::string> platform_errors;  // id -> why it could not be generated
  std::size_t finished_points = 0;
  double point_seconds = 0;
  const int jobs       = std::max(1, options.jobs);

  auto start = [&](const Task& t) {
    if (t.platform) {
      const ManifestPlatform& p = m.platforms[t.index];
      std::vector<std::string> args = {"platform", p.spec.string(), "-o", p.xml.string(), "--quiet"};
      if (not m.calibration.empty())
        args.insert(args.end(), {"--calibration", m.calibration.string()});
      return spawn(options.executable, args, p.xml.parent_path() / "log.txt");
    }
    const ManifestPoint& p = m.points[t.index];
    const fs::path dir     = point_dir(out, p.id);
    std::error_code ec;
    fs::remove(dir / "result.json", ec);
    fs::remove_all(dir / "run", ec);
    std::vector<std::string> args = p.args;
    args.insert(args.end(), {"--out", (dir / "run").string(), "--no-timeline"});
    return spawn(options.executable, args, dir / "log.txt");
  };

  auto finish = [&](const Running& r, int status) {
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (g_stop && not clean)
      return;  // stopped by the interrupt: no result, so that the next run does it
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
    if (r.task.platform) {
      const ManifestPlatform& p = m.platforms[r.task.index];
      if (not clean)
        platform_errors[p.id] = error_of(p.xml.parent_path() / "log.txt", status);
      return;
    }
    const ManifestPoint& p = m.points[r.task.index];
    const fs::path dir     = point_dir(out, p.id);
    PointResult result;
    if (clean) {
      try {
        result = result_from_prediction(p, dir / "run" / "prediction.json");
      } catch (const std::exception& e) {
        result = failed_result(p, 0, std::string("the run's prediction.json: ") + e.what());
      }
    } else {
      result = failed_result(p, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                             error_of(dir / "log.txt", status));
    }
    write_result(out, p, result);
    ++summary.ran;
    ++finished_points;
    summary.failed += result.ok ? 0 : 1;
    point_seconds += took;
    if (options.progress)
      print_progress(p, result, took, summary, finished_points, points.size() - finished_points, point_seconds, jobs);
  };

  auto reap = [&]() {
    int status      = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR)
        return;
      throw InternalError(std::string("study: waiting for the runs: ") + std::strerror(errno));
    }
    const auto it = running.find(pid);
    if (it == running.end())
      return;
    const Running r = it->second;
    running.erase(it);
    finish(r, status);
  };
  auto pool = [&](const std::vector<Task>& tasks) {
    std::size_t next = 0;
    while (not g_stop && (next < tasks.size() || not running.empty())) {
      while (not g_stop && next < tasks.size() && static_cast<int>(running.size()) < jobs) {
        const Task t = tasks[next++];
        const auto failed = t.platform ? platform_errors.end() : platform_errors.find(m.points[t.index].platform_id);
        if (failed != platform_errors.end()) {  // no run: the point fails with its platform's error
          const ManifestPoint& p = m.points[t.index];
          write_result(out, p, failed_result(p, 1, "the platform could not be generated: " + failed->second));
          ++summary.ran;
          ++finished_points;
          ++summary.failed;
          continue;
        }
        running.emplace(start(t), Running{t, std::chrono::steady_clock::now()});
      }
      if (not running.empty())
        reap();
    }
  };
  pool(tasks.platforms);
  pool(tasks.points);
  if (g_stop) {
    summary.interrupted = true;
    for (const auto& [pid, r] : running)
      kill(pid, SIGTERM);
    while (not running.empty())
      reap();
  }
  return summary;
}

CollectSummary collect(const Manifest& m, const fs::path& out)
{
  CollectSummary c;
  const auto results = read_results(out, m, &c.problems);
  c.points           = m.points.size();
  for (const auto& r : results) {
    if (not r)
      ++c.pending;
    else if (r->ok)
      ++c.ok;
    else
      ++c.failed;
  }
  write_file_atomically(out / "results.csv", results_csv(m, results), "the study's results.csv");
  write_report(m, results, out / "report.html");
  return c;
}

std::string sbatch_script(const Manifest& m, const fs::path& out, const std::vector<std::size_t>& indices,
                          const SlurmOptions& options)
{
  std::string array;
  for (std::size_t k = 0; k < indices.size();) {  // ranges of consecutive indices: 0-11,14,20-23
    std::size_t e = k;
    while (e + 1 < indices.size() && indices[e + 1] == indices[e] + 1)
      ++e;
    array += (array.empty() ? "" : ",") + std::to_string(indices[k]) +
             (e > k ? "-" + std::to_string(indices[e]) : std::string());
    k = e + 1;
  }
  if (options.max_parallel > 0)
    array += "%" + std::to_string(options.max_parallel);
  const fs::path root = fs::absolute(out).lexically_normal();
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# gridcast study `" << m.name << "`: one array task per point (manifest.json), written by gridcast study "
    << "submit.\n"
    << "#SBATCH --job-name=gridcast-" << m.name << "\n"
    << "#SBATCH --array=" << array << "\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --cpus-per-task=1\n"
    << "#SBATCH --output=" << (root / "slurm" / "%A_%a.out").string() << "\n";
  if (not options.partition.empty())
    s << "#SBATCH --partition=" << options.partition << "\n";
  if (not options.time.empty())
    s << "#SBATCH --time=" << options.time << "\n";
  s << "exec '" << options.executable.string() << "' study run --out '" << root.string()
    << "' --task-index \"$SLURM_ARRAY_TASK_ID\"\n";
  return s.str();
}

}  // namespace gridcast::study
