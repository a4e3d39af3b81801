#include "what_if.hpp"

#include "commands.hpp"
#include "diff.hpp"

#include "gridcast/foundation/errors.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <set>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;

namespace gridcast::cli {

namespace {

constexpr const char* kGrammar =
    "expected compute:FUNC*F, rank:R compute*F, link:NAME bw*F or link:NAME lat*F (F a number > 0)";

[[noreturn]] void bad(const std::string& expression, const std::string& command, const std::string& why)
{
  throw UsageError{"--what-if '" + expression + "': " + why, command};
}

double factor_of(std::string_view text, const std::string& expression, const std::string& command)
{
  double f = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
  if (ec != std::errc() || p != text.data() + text.size())
    bad(expression, command, "'" + std::string(text) + "' is not a number; " + kGrammar);
  if (not std::isfinite(f) || f <= 0)
    bad(expression, command, "the factor must be a finite number > 0, not " + std::string(text));
  return f;
}

/// Splits "HEAD:REST" at the first ':' (HEAD one of compute, rank, link).
std::pair<std::string, std::string> split_kind(const std::string& e)
{
  const auto colon = e.find(':');
  if (colon == std::string::npos)
    return {{}, {}};
  return {e.substr(0, colon), e.substr(colon + 1)};
}

/// A rank's stream with the compute changes applied: a compute record's work (its flops, or its
/// seconds when it gives none) times the factors that apply to its function and rank.
class WhatIfStream final : public models::ForwardingStream {
public:
  WhatIfStream(models::CallStreamPtr inner, WhatIf& what_if, int rank)
      : ForwardingStream(std::move(inner)), what_if_(what_if), rank_(rank)
  {
  }
  bool next(models::CallRecord& out) override
  {
    if (not inner_->next(out))
      return false;
    if (out.op == models::Op::Compute) {
      const double f = factor(out.function);
      if (f != 1) {
        out.flops *= f;
        if (out.seconds > 0)
          out.seconds *= f;
      }
    }
    return true;
  }

private:
  double factor(std::uint32_t function)
  {
    // Names are resolved once per function id; the matches are counted per call.
    if (function >= resolved_.size())
      resolved_.resize(function + 1);
    auto& changes = resolved_[function];
    if (not changes) {
      changes.emplace();
      const std::string& name = inner_->functions().name(function);
      for (std::size_t i = 0; i < what_if_.compute.size(); ++i) {
        const auto& c = what_if_.compute[i];
        if ((c.rank < 0 || c.rank == rank_) && (c.function.empty() || c.function == name))
          changes->push_back(i);
      }
    }
    double f = 1;
    for (std::size_t i : *changes) {
      f *= what_if_.compute[i].factor;
      ++what_if_.compute[i].matched;
    }
    return f;
  }
  WhatIf& what_if_;
  int rank_;
  std::vector<std::optional<std::vector<std::size_t>>> resolved_;
};

class WhatIfSource final : public models::TraceSource {
public:
  WhatIfSource(const models::TraceSource& inner, WhatIf& what_if) : inner_(inner), what_if_(what_if) {}
  int rank_count() const override { return inner_.rank_count(); }
  SteadyLoop steady_loop() const override { return inner_.steady_loop(); }
  models::CallStreamPtr open(int rank) const override
  {
    return std::make_unique<WhatIfStream>(inner_.open(rank), what_if_, rank);
  }

private:
  const models::TraceSource& inner_;
  WhatIf& what_if_;
};

bool takes_value(const std::string& a, const char* name)
{
  return a == name;
}

bool attached(const std::string& a, const char* name)
{
  const std::string prefix = std::string(name) + "=";
  return a.rfind(prefix, 0) == 0;
}

}  // namespace

WhatIf parse_what_if(const std::vector<std::string>& expressions, const std::string& command)
{
  WhatIf w;
  std::set<std::string> seen;
  for (const std::string& e : expressions) {
    if (not seen.insert(e).second)
      bad(e, command, "given twice");
    w.expressions.push_back(e);
    auto [kind, rest] = split_kind(e);
    if (kind == "compute") {
      const auto star = rest.rfind('*');
      if (star == std::string::npos || star == 0)
        bad(e, command, kGrammar);
      w.compute.push_back({e, rest.substr(0, star), -1, factor_of(std::string_view(rest).substr(star + 1), e, command)});
    } else if (kind == "rank") {
      const auto space = rest.find(' ');
      if (space == std::string::npos || rest.compare(space + 1, 8, "compute*") != 0)
        bad(e, command, kGrammar);
      int rank = -1;
      auto [p, ec] = std::from_chars(rest.data(), rest.data() + space, rank);
      if (ec != std::errc() || p != rest.data() + space || rank < 0)
        bad(e, command, "'" + rest.substr(0, space) + "' is not a rank (an integer >= 0)");
      w.compute.push_back({e, {}, rank, factor_of(std::string_view(rest).substr(space + 9), e, command)});
    } else if (kind == "link") {
      const auto space = rest.rfind(' ');
      if (space == std::string::npos || space == 0)
        bad(e, command, kGrammar);
      const std::string what = rest.substr(space + 1);
      emulator::ReplayOptions::LinkScale s;
      s.expression = e;
      s.link = rest.substr(0, space);
      if (what.rfind("bw*", 0) == 0)
        s.bandwidth_factor = factor_of(std::string_view(what).substr(3), e, command);
      else if (what.rfind("lat*", 0) == 0)
        s.latency_factor = factor_of(std::string_view(what).substr(4), e, command);
      else
        bad(e, command, kGrammar);
      w.links.push_back(s);
    } else {
      bad(e, command, kGrammar);
    }
  }
  return w;
}

std::unique_ptr<models::TraceSource> what_if_source(const models::TraceSource& inner, WhatIf& what_if)
{
  for (const auto& c : what_if.compute)
    if (c.rank >= inner.rank_count())
      throw InputError({"--what-if", 0, c.expression, c.rank},
                       "the run has " + std::to_string(inner.rank_count()) + " ranks (0 to " +
                           std::to_string(inner.rank_count() - 1) + ")");
  return std::make_unique<WhatIfSource>(inner, what_if);
}

void check_what_if_matched(const WhatIf& what_if)
{
  for (const auto& c : what_if.compute)
    if (c.matched == 0)
      throw InputError({"--what-if", 0, c.expression, c.rank},
                       c.function.empty() ? "the rank made no compute call"
                                          : "no compute call is named '" + c.function +
                                                "' (prediction.json's functions[] lists the run's functions; "
                                                "`compute` is the time between calls)");
}

std::string with_critical_path(const std::string& analysis)
{
  if (analysis.empty())
    return "critical-path";
  std::stringstream s(analysis);
  std::string item;
  while (std::getline(s, item, ','))
    if (item == "critical-path")
      return analysis;
  return analysis + ",critical-path";
}

void start_what_if(const WhatIf& what_if, std::optional<WhatIfRun>& run, std::string& out, std::string& analysis)
{
  if (what_if.empty())
    return;
  run.emplace(out);
  analysis = with_critical_path(analysis);
  out = run->out_dir().string();
}

void WhatIfRun::finish(const std::string& command, const WhatIf& what_if, const std::vector<std::string>& args,
                       const std::string& analysis)
{
  check_what_if_matched(what_if);  // the changes matched what the run has: now the run without them
  run_baseline(command, args, analysis);
}

WhatIfRun::WhatIfRun(const std::string& out)
{
  if (out.empty()) {
    char pattern[] = "/tmp/gridcast-what-if-XXXXXX";
    if (mkdtemp(pattern) == nullptr)
      throw InputError({"/tmp", 0, {}, -1}, "cannot create a temporary folder for --what-if's runs");
    temp_ = pattern;
    out_ = temp_ / "what-if";
    baseline_ = temp_ / "baseline";
  } else {
    out_ = out;
    baseline_ = out_ / "baseline";
  }
}

WhatIfRun::~WhatIfRun()
{
  if (not temp_.empty()) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
}

void WhatIfRun::run_baseline(const std::string& command, const std::vector<std::string>& args,
                             const std::string& analysis)
{
  std::vector<std::string> argv = {"gridcast", command};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (takes_value(a, "--what-if") || takes_value(a, "--out") || takes_value(a, "-o") || takes_value(a, "--analysis")) {
      ++i;  // and its value
      continue;
    }
    if (attached(a, "--what-if") || attached(a, "--out") || attached(a, "--analysis") || a == "--no-timeline" ||
        (a.rfind("-o", 0) == 0 && a.size() > 2 && a[2] != '-'))
      continue;
    argv.push_back(a);
  }
  for (const char* extra : {"--no-timeline", "--out"})
    argv.emplace_back(extra);
  argv.push_back(baseline_.string());
  argv.emplace_back("--analysis");
  argv.push_back(analysis);

  fs::create_directories(baseline_);
  const fs::path errors = baseline_ / ".stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> cargv;
  for (auto& a : argv)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw InternalError("--what-if: cannot start the run without the changes: " + std::string(std::strerror(spawned)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::ifstream in(errors);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove(errors);
  if (not WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError({baseline_.string(), 0, {}, -1},
                     "--what-if: the run without the changes failed (" +
                         (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("a signal")) +
                         "): " + text.str());
}

void WhatIfRun::report(const WhatIf& what_if) const
{
  std::cout << "\nwhat-if";
  for (const auto& e : what_if.expressions)
    std::cout << " '" << e << "'";
  std::cout << ": against the same run without " << (what_if.expressions.size() == 1 ? "it" : "them");
  if (not temporary())
    std::cout << " (" << baseline_.string() << ")";
  std::cout << ":\n";
  std::cout.flush();
  print_diff(baseline_.string(), out_.string(), 5, {}, temporary() ? "the run without" : baseline_.string(),
             temporary() ? "the run with the changes" : out_.string());
}

}  // namespace gridcast::cli
