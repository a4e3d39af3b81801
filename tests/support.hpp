// Small helpers shared by the tests: a temporary directory that cleans up, file writers, and a runner
// for the gridcast program.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace gridcast::test {

class TempDir {
public:
  TempDir()
  {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("gridcast-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir()
  {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& file, const std::string& text)
{
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << text;
}

inline std::string read_file(const std::filesystem::path& file)
{
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Command line for a test's own SimGrid engine: thread contexts in sanitized builds (see CMakeLists.txt).
struct EngineArgs {
  int argc = 0;
  std::vector<char*> argv;
  EngineArgs()
  {
    static char name[] = "gridcast-test";
    argv.push_back(name);
#ifdef GRIDCAST_SANITIZED
    static char threads[] = "--cfg=contexts/factory:thread";
    argv.push_back(threads);
#endif
    argc = static_cast<int>(argv.size());
    argv.push_back(nullptr);
  }
};

/// A cluster of `n` hosts named node-0..node-(n-1): private SHARED links of `bw`/`lat`, no backbone, so a
/// message between two nodes crosses two links (latency 2*lat).
inline std::string cluster_xml(int n, const std::string& speed = "1Gf", const std::string& bw = "1GBps",
                               const std::string& lat = "10us")
{
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n  <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-" +
         std::to_string(n - 1) + "\" speed=\"" + speed + "\" bw=\"" + bw + "\" lat=\"" + lat +
         "\" sharing_policy=\"SHARED\"/>\n</platform>\n";
}

/// JSON-lines texts of two ranks (for write_jsonl_profile): rank 0 sends `bytes` to rank 1 with tag 0, after
/// `compute_s` seconds of compute when given; rank 1 receives them.
inline std::vector<std::string> one_message_ranks(const std::string& bytes, const std::string& compute_s = "")
{
  const std::string init = "{\"op\":\"init\",\"fn\":\"MPI_Init\"}\n";
  const std::string finalize = "{\"op\":\"finalize\",\"fn\":\"MPI_Finalize\"}\n";
  const std::string compute =
      compute_s.empty() ? "" : "{\"op\":\"compute\",\"fn\":\"compute\",\"seconds\":" + compute_s + "}\n";
  return {init + compute + "{\"op\":\"send\",\"fn\":\"MPI_Send\",\"peer\":1,\"tag\":0,\"bytes\":" + bytes + "}\n" +
              finalize,
          init + "{\"op\":\"recv\",\"fn\":\"MPI_Recv\",\"peer\":0,\"tag\":0,\"bytes\":" + bytes + "}\n" + finalize};
}

/// Writes a JSON-lines profile directory: run.json plus one rank file per entry of `ranks`.
inline void write_jsonl_profile(const std::filesystem::path& dir, const std::vector<std::string>& ranks,
                                double speed_flops = 1e9, int nw = 1)
{
  write_file(dir / "run.json", "{\"format\":\"gridcast-profile\",\"format_version\":1,\"np\":" +
                                   std::to_string(ranks.size()) +
                                   ",\"nw\":" + std::to_string(nw) + ",\"command\":\"test\",\"host\":{\"name\":\"test\",\"speed_flops\":" +
                                   std::to_string(speed_flops) + "},\"date\":\"2026-01-01\",\"encoding\":\"jsonl\","
                                   "\"complete\":true,\"origin\":\"test\",\"units\":{\"time\":\"s\",\"work\":\"flop\","
                                   "\"size\":\"B\"}}\n");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "rank-%05zu.jsonl", r);
    write_file(dir / name, ranks[r]);
  }
}

struct RunResult {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
};

/// Runs a shell command line, its stdout and stderr together.
inline RunResult run_command(const std::string& command)
{
  const std::string cmd = command + " 2>&1";
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr)
    return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
    r.output.append(buf, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// Runs the gridcast program with `args` (shell-quoted by the caller where needed), in the working
/// directory `cwd` when given.
inline RunResult run_gridcast(const std::string& args, const std::filesystem::path& cwd = {})
{
  return run_command((cwd.empty() ? "" : "cd '" + cwd.string() + "' && ") + std::string(GRIDCAST_BIN) + " " + args);
}

}  // namespace gridcast::test
