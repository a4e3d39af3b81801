// `gridcast study run|submit|status|collect`: a sweep of predictions over settings and platform variants,
// on a local pool of processes or as a Slurm job array, merged into results.csv and report.html
// (docs/guides/studies.md). The study itself (file, points, results, pool, report) is gridcast::study.
#include "commands.hpp"
#include "options.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"
#include "gridcast/study/runner.hpp"

#include <boost/program_options.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace gridcast::cli {

namespace {

constexpr const char* kStudyHelp =
    "usage: gridcast study <action> ...\n\n"
    "actions:\n"
    "  run STUDY.json --out DIR [-j N]   run every point without a result on this machine (N at once),\n"
    "                                    then write results.csv and report.html\n"
    "  run --out DIR --task-index I      run point I of DIR/manifest.json (what each Slurm task does)\n"
    "  submit STUDY.json --out DIR       write the manifest and a Slurm job array of the points without a\n"
    "                                    result, and submit it with sbatch\n"
    "  status DIR                        points done, failed and left (and the Slurm jobs still queued)\n"
    "  collect DIR                       merge the results into results.csv and report.html\n\n"
    "`gridcast study <action> --help` explains the options. docs/guides/studies.md describes the study file.\n";

fs::path self_executable()
{
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw InternalError("study: cannot find the gridcast program (/proc/self/exe): " + ec.message());
  return self;
}

/// A lock on the study's folder: a local pool holds it alone (two pools on one folder would run the same
/// points twice), Slurm tasks share it (each runs its own point), and submit shares it for the moment it
/// writes the array (no array of points a local pool is running). Released when the process ends.
class FolderLock {
public:
  enum class Kind { Alone, Shared, SharedWait };
  FolderLock(const fs::path& out, Kind kind, const std::string& action)
  {
    fs::create_directories(out);
    const fs::path file = out / ".lock";
    fd_                 = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw InputError({file.string(), 0, {}, -1}, std::string("cannot open the study's lock: ") + std::strerror(errno));
    const int op = kind == Kind::Alone ? LOCK_EX | LOCK_NB : kind == Kind::Shared ? LOCK_SH | LOCK_NB : LOCK_SH;
    while (::flock(fd_, op) != 0) {
      if (errno == EINTR)
        continue;
      ::close(fd_);
      throw InputError({out.string(), 0, {}, -1},
                       action + ": another `gridcast study run` is running the points of this folder (" +
                           file.string() + " is locked); wait for it, or stop it");
    }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&)            = delete;
  FolderLock& operator=(const FolderLock&) = delete;

private:
  int fd_ = -1;
};

/// Reads and expands the study into its manifest for `out`: every point is checked, nothing is written.
study::Manifest plan(const std::string& file, const fs::path& out)
{
  const study::StudyFile s = study::read_study(file);
  return study::make_manifest(s, study::expand(s), out);
}

void print_collect(const study::CollectSummary& c, const fs::path& out)
{
  for (const std::string& p : c.problems)
    std::cerr << "gridcast: warning: " << p << "\n";
  std::cout << "results: " << c.ok << " predicted, " << c.failed << " failed, " << c.pending << " without a result, of "
            << c.points << " points\n"
            << "wrote " << (out / "results.csv").string() << " and " << (out / "report.html").string() << "\n";
}

int study_run(const std::vector<std::string>& args)
{
  std::string file, out;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  long long task_index = -1;
  bool retry = false, quiet = false;
  po::options_description options("study run options");
  options.add_options()
    ("study", po::value(&file), "the study file (JSON, docs/guides/studies.md); without it, the manifest in --out")
    ("out,o", po::value(&out), "the study's folder: manifest, one folder per point, results.csv, report.html")
    ("jobs,j", po::value(&jobs), "points run at once (default: the number of cores)")
    ("task-index", po::value(&task_index), "run only this point of the manifest (a Slurm array task)")
    ("retry-failed", po::bool_switch(&retry), "run again the points whose result is an error")
    ("quiet,q", po::bool_switch(&quiet), "no line per point on stderr");
  po::positional_options_description positional;
  positional.add("study", 1);
  po::variables_map vm;
  if (not parse("study run", "study run STUDY.json --out DIR [-j N] [--retry-failed] | study run --out DIR --task-index I",
                args, options, positional, vm,
                "Runs every point of the study that has no result in DIR yet, each as its own gridcast process,\n"
                "N at once, platforms first (each generated once). A failed point is recorded with its error and\n"
                "the others go on. Ctrl-C stops the points under way without a result: run again to finish.\n"
                "Once every point has a result, writes DIR/results.csv and DIR/report.html. Exit 1 when a point\n"
                "failed or the run was interrupted."))
    return 0;
  if (out.empty())
    throw UsageError{"--out DIR is required", "study run"};
  if (jobs < 1)
    throw UsageError{"--jobs must be at least 1", "study run"};
  if (vm.count("task-index") && task_index < 0)
    throw UsageError{"--task-index must be 0 or more", "study run"};
  study::Manifest manifest;
  if (not file.empty())
    manifest = plan(file, out);
  else if (not fs::exists(fs::path(out) / "manifest.json"))
    throw UsageError{"give the study file (or --out DIR with the manifest of an earlier run)", "study run"};
  const FolderLock lock(out, vm.count("task-index") ? FolderLock::Kind::SharedWait : FolderLock::Kind::Alone,
                        "study run");
  if (not file.empty())
    study::write_manifest(manifest, out);
  else
    manifest = study::read_manifest(out);

  study::RunOptions ro;
  ro.jobs         = jobs;
  ro.retry_failed = retry;
  ro.progress     = not quiet;
  ro.executable   = self_executable();
  if (vm.count("task-index"))
    ro.task_index = static_cast<std::size_t>(task_index);
  const study::RunSummary s = study::run_points(manifest, out, ro);

  std::cout << "study " << manifest.name << ": " << s.points << (ro.task_index ? " point" : " points") << ", "
            << s.ran << " run now, " << s.already_done << " done before, " << s.failed << " failed";
  if (s.redone > 0)
    std::cout << ", " << s.redone << " result file(s) unreadable and run again";
  std::cout << "\n";
  if (s.interrupted) {
    std::cout << "interrupted: the points under way have no result; `gridcast study run --out " << out
              << "` finishes the others\n";
    return 1;
  }
  if (not ro.task_index) {
    const study::CollectSummary c = study::collect(manifest, out);
    print_collect(c, out);
  }
  return s.failed > 0 ? 1 : 0;
}

int study_submit(const std::vector<std::string>& args)
{
  std::string file, out;
  study::SlurmOptions so;
  bool no_submit = false;
  po::options_description options("study submit options");
  options.add_options()
    ("study", po::value(&file), "the study file (JSON, docs/guides/studies.md)")
    ("out,o", po::value(&out), "the study's folder (on a file system the compute nodes share)")
    ("partition", po::value(&so.partition), "Slurm partition (default: the cluster's)")
    ("time", po::value(&so.time), "time limit of each task, in sbatch's syntax (default: the partition's)")
    ("max-parallel", po::value(&so.max_parallel), "tasks running at once (the array's %K; default: no limit)")
    ("no-submit", po::bool_switch(&no_submit), "write DIR/study.sbatch without running sbatch");
  po::positional_options_description positional;
  positional.add("study", 1);
  po::variables_map vm;
  if (not parse("study submit",
                "study submit STUDY.json --out DIR [--partition P] [--time T] [--max-parallel K] [--no-submit]", args,
                options, positional, vm,
                "Writes DIR/manifest.json and DIR/study.sbatch, a Slurm job array with one task per point that\n"
                "has no result yet (each task: gridcast study run --out DIR --task-index I), and submits it\n"
                "with sbatch. The tasks write the same files as `gridcast study run`; `gridcast study status DIR`\n"
                "follows them and `gridcast study collect DIR` merges them."))
    return 0;
  if (file.empty() || out.empty())
    throw UsageError{"study submit needs the study file and --out DIR", "study submit"};
  if (so.max_parallel < 0)
    throw UsageError{"--max-parallel must be 0 (no limit) or more", "study submit"};
  for (const std::string& text : {out, so.partition, so.time})
    if (text.find_first_of("'\n") != std::string::npos)
      throw UsageError{"quotes and line breaks cannot go into the sbatch script: " + text, "study submit"};
  const study::Manifest manifest = plan(file, out);
  const FolderLock lock(out, FolderLock::Kind::Shared, "study submit");
  study::write_manifest(manifest, out);
  so.executable                  = self_executable();
  std::vector<std::size_t> indices;
  for (const auto& p : manifest.points)
    if (not study::read_result(out, p))
      indices.push_back(p.index);
  if (indices.empty()) {
    std::cout << "every point of " << manifest.name << " has a result: nothing to submit (gridcast study collect "
              << out << ")\n";
    return 0;
  }
  fs::create_directories(fs::path(out) / "slurm");
  const fs::path script = fs::path(out) / "study.sbatch";
  write_file_atomically(script, study::sbatch_script(manifest, out, indices, so), "the sbatch script");
  std::cout << "wrote " << script.string() << ": " << indices.size() << " of " << manifest.points.size()
            << " points as a job array\n";
  if (no_submit)
    return 0;
  const std::string command = "sbatch --parsable '" + script.string() + "' 2>&1";
  FILE* pipe                = popen(command.c_str(), "r");
  if (pipe == nullptr)
    throw InputError({script.string(), 0, {}, -1}, std::string("cannot run sbatch: ") + std::strerror(errno));
  std::string reply;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr)
    reply += buf;
  const int status = pclose(pipe);
  while (not reply.empty() && (reply.back() == '\n' || reply.back() == ' '))
    reply.pop_back();
  if (status != 0 || reply.empty() || reply.find_first_not_of("0123456789;") != std::string::npos)
    throw InputError({script.string(), 0, {}, -1},
                     "sbatch did not take the job array" + (reply.empty() ? std::string() : ": " + reply) +
                         (WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " (is Slurm installed and on PATH?)" : ""));
  const std::string job = reply.substr(0, reply.find(';'));
  {
    FILE* jobs = std::fopen((fs::path(out) / "slurm" / "jobs.txt").c_str(), "a");
    if (jobs != nullptr) {
      std::fprintf(jobs, "%s\n", job.c_str());
      std::fclose(jobs);
    }
  }
  std::cout << "submitted job array " << job << " (gridcast study status " << out << ")\n";
  return 0;
}

/// How many tasks of the recorded Slurm jobs are still queued or running (-1: no squeue, or no jobs).
long queued_tasks(const fs::path& out)
{
  FILE* f = std::fopen((out / "slurm" / "jobs.txt").c_str(), "r");
  if (f == nullptr)
    return -1;
  std::string ids;
  char buf[64];
  while (std::fscanf(f, "%63s", buf) == 1)
    ids += (ids.empty() ? "" : ",") + std::string(buf);
  std::fclose(f);
  if (ids.empty() || ids.find_first_not_of("0123456789,") != std::string::npos)
    return -1;
  FILE* pipe = popen(("squeue -h -r -j " + ids + " -o %i 2>/dev/null").c_str(), "r");
  if (pipe == nullptr)
    return -1;
  long lines = 0;
  for (int c; (c = std::fgetc(pipe)) != EOF;)
    lines += c == '\n';
  return pclose(pipe) == 0 ? lines : -1;
}

/// The folder of an action that takes only it (status, collect); nullopt when --help was printed.
std::optional<std::string> folder_argument(const std::string& action, const std::vector<std::string>& args,
                                           const std::string& description)
{
  std::string out;
  po::options_description options(action + " options");
  options.add_options()("out,o", po::value(&out), "the study's folder");
  po::positional_options_description positional;
  positional.add("out", 1);
  po::variables_map vm;
  if (not parse(action, action + " DIR", args, options, positional, vm, description))
    return std::nullopt;
  if (out.empty())
    throw UsageError{action + " needs the study's folder", action};
  return out;
}

int study_status(const std::vector<std::string>& args)
{
  const auto folder = folder_argument(
      "study status", args,
      "Counts the points with a result, the failed ones (with their errors) and those left, and the\n"
      "tasks of the study's Slurm jobs still queued or running. Exit 0 when every point has a result.");
  if (not folder)
    return 0;
  const std::string& out = *folder;
  const study::Manifest m = study::read_manifest(out);
  std::vector<std::string> problems;
  const auto results = study::read_results(out, m, &problems);
  std::size_t ok = 0, failed = 0, pending = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (not results[i]) {
      ++pending;
    } else if (not results[i]->ok) {
      ++failed;
      std::cout << "failed: point " << i << " (" << m.points[i].id << "): " << results[i]->error << "\n";
    } else {
      ++ok;
    }
  }
  for (const std::string& p : problems)
    std::cout << "unreadable: " << p << "\n";
  std::cout << "study " << m.name << ": " << m.points.size() << " points, " << ok << " done, " << failed << " failed, "
            << pending << " left\n";
  const long queued = queued_tasks(out);
  if (queued >= 0)
    std::cout << "slurm: " << queued << " task(s) of the study's jobs queued or running\n";
  return pending == 0 ? 0 : 1;
}

int study_collect(const std::vector<std::string>& args)
{
  const auto folder = folder_argument(
      "study collect", args,
      "Merges the results of every point into DIR/results.csv (one row per point, in the manifest's\n"
      "order) and DIR/report.html (plots and the table). Points without a result are listed as\n"
      "pending, and the exit code is then 1.");
  if (not folder)
    return 0;
  const std::string& out = *folder;
  const study::Manifest m       = study::read_manifest(out);
  const study::CollectSummary c = study::collect(m, out);
  print_collect(c, out);
  return c.pending == 0 ? 0 : 1;
}

}  // namespace

int run_study(const std::vector<std::string>& args)
{
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kStudyHelp;
    return args.empty() ? 1 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "run")
    return study_run(rest);
  if (args[0] == "submit")
    return study_submit(rest);
  if (args[0] == "status")
    return study_status(rest);
  if (args[0] == "collect")
    return study_collect(rest);
  throw UsageError{"unknown study action `" + args[0] + "` (run, submit, status, collect)", "study"};
}

}  // namespace gridcast::cli
