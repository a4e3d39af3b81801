// `gridcast diff A B`: what changed between two runs (two prediction.json files, or the --out folders that
// hold them): the makespan, each rank's finish and its compute, communication and waiting time, each
// function's simulated seconds and, where both runs wrote analysis.json, the wait states by kind and the
// critical path by rank and function. The largest changes come first; ties keep a fixed order, so the
// same two files always give the same text.
#include "commands.hpp"
#include "diff.hpp"
#include "options.hpp"

#include "gridcast/foundation/csv.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/foundation/output_file.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace gridcast::cli {

namespace {

/// One named quantity in both runs (absent on one side: 0 there, and said so).
struct Row {
  std::string name;
  double a = 0, b = 0;
  bool in_a = false, in_b = false;
  double delta() const { return b - a; }
  /// Sums of the same terms in another order differ in the last bits: a change is more than 1e-9 of
  /// the larger value.
  bool changed() const { return in_a != in_b || std::fabs(delta()) > 1e-9 * std::max(std::fabs(a), std::fabs(b)); }
};

/// Rows in first-seen order (A's order, then B's new names), so that ties sort the same way every time.
class Table {
public:
  void add(const std::string& name, double value, bool side_b)
  {
    auto [it, created] = index_.try_emplace(name, rows_.size());
    if (created)
      rows_.push_back({name});
    Row& r = rows_[it->second];
    (side_b ? r.b : r.a) += value;
    (side_b ? r.in_b : r.in_a) = true;
  }
  /// The rows, the largest absolute change first (stable: first-seen order among equals).
  std::vector<Row> by_change() const
  {
    std::vector<Row> out = rows_;
    auto size = [](const Row& r) { return r.changed() ? std::fabs(r.delta()) : 0.0; };
    std::stable_sort(out.begin(), out.end(), [&](const Row& x, const Row& y) { return size(x) > size(y); });
    return out;
  }
  bool empty() const { return rows_.empty(); }

private:
  std::vector<Row> rows_;
  std::map<std::string, std::size_t> index_;
};

/// What a run's files say that the comparison uses.
struct Run {
  fs::path prediction, analysis;  ///< analysis: empty when the run wrote none
  double makespan_s = 0;
  std::string command;
  struct Rank {
    int rank = 0;
    double finish_s = 0, compute_s = 0, comm_s = 0, wait_s = 0;
  };
  std::vector<Rank> ranks;
  std::vector<std::pair<std::string, double>> functions;  ///< simulated seconds summed over ranks
  std::vector<std::pair<std::string, double>> wait_kinds, path_ranks, path_functions, path_links;
  bool has_waits = false, has_path = false;
  double path_length_s = 0;
};

fs::path prediction_file(const std::string& arg)
{
  fs::path p(arg);
  if (fs::is_directory(p))
    p /= "prediction.json";
  if (not fs::exists(p))
    throw InputError({p.string(), 0, {}, -1},
                     "no such file: give a prediction.json or the --out folder of a replay or predict run");
  return p;
}

/// ranks.csv of a run whose tables are beside its prediction.json (--tables csv).
std::vector<Run::Rank> read_rank_table(const fs::path& file)
{
  std::ifstream in(file);
  if (not in)
    throw InputError({file.string(), 0, {}, -1}, "cannot open the rank table that prediction.json names");
  std::string line;
  std::getline(in, line);
  if (line != "rank,host,compute_s,comm_s,wait_s,finish_s,calls")
    throw InputError({file.string(), 1, {}, -1}, "not a rank table of gridcast (its header differs)");
  std::vector<Run::Rank> ranks;
  for (std::uint64_t n = 2; std::getline(in, line); ++n) {
    const ErrorContext where{file.string(), n, {}, -1};
    const auto f = csv_fields(line, where);
    if (f.size() != 7)
      throw InputError(where, "expected 7 fields, got " + std::to_string(f.size()));
    auto value = [&](const std::string& text, const char* name) {
      char* end      = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || not std::isfinite(v) || v < 0)
        throw InputError(where, std::string(name) + ": expected a number >= 0, got '" + text + "'");
      return v;
    };
    Run::Rank r;
    r.rank      = static_cast<int>(value(f[0], "rank"));
    r.compute_s = value(f[2], "compute_s");
    r.comm_s    = value(f[3], "comm_s");
    r.wait_s    = value(f[4], "wait_s");
    r.finish_s  = value(f[5], "finish_s");
    ranks.push_back(r);
  }
  return ranks;
}

Run read_run(const std::string& arg)
{
  Run run;
  run.prediction = prediction_file(arg);
  const std::string file = run.prediction.string();
  const nlohmann::json j = read_json_file(run.prediction, "prediction.json");
  JsonObject root(j, file);
  if (root.string("format") != "gridcast-prediction")
    root.fail("format", "expected \"gridcast-prediction\" (this is not a prediction.json of gridcast replay or predict)");
  if (root.integer("format_version", 1, 1) != 1)
    root.fail("format_version", "expected 1");
  run.command = root.string("command");
  run.makespan_s = root.number("makespan_s", JsonObject::Bound::NonNegative);
  if (root.has("ranks_table")) {  // a run of many ranks: the table is ranks.csv beside it (--tables)
    run.ranks = read_rank_table(run.prediction.parent_path() / root.string("ranks_table"));
  } else {
    const nlohmann::json& ranks = root.need("ranks");
    if (not ranks.is_array())
      root.fail("ranks", "expected an array");
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      JsonObject r(ranks[i], file, "ranks[" + std::to_string(i) + "]");
      Run::Rank x;
      x.rank = static_cast<int>(r.integer("rank", 0, (1 << 30)));
      x.finish_s = r.number("finish_s", JsonObject::Bound::NonNegative);
      x.compute_s = r.number("compute_s", JsonObject::Bound::NonNegative);
      x.comm_s = r.number("comm_s", JsonObject::Bound::NonNegative);
      x.wait_s = r.number("wait_s", JsonObject::Bound::NonNegative);
      run.ranks.push_back(x);
    }
  }
  const nlohmann::json& functions = root.need("functions");
  if (not functions.is_array())
    root.fail("functions", "expected an array");
  for (std::size_t i = 0; i < functions.size(); ++i) {
    JsonObject f(functions[i], file, "functions[" + std::to_string(i) + "]");
    run.functions.emplace_back(f.string("name"), f.number("seconds", JsonObject::Bound::NonNegative));
  }

  // analysis.json beside it, when the run wrote one (--analysis).
  const fs::path analysis = run.prediction.parent_path() / "analysis.json";
  if (fs::exists(analysis)) {
    run.analysis = analysis;
    const std::string afile = analysis.string();
    const nlohmann::json a = read_json_file(analysis, "analysis.json");
    JsonObject aroot(a, afile);
    if (aroot.string("format") != "gridcast-analysis")
      aroot.fail("format", "expected \"gridcast-analysis\"");
    auto pairs = [&](const JsonObject& parent, std::string_view key, std::string_view name_key, bool name_is_rank,
                     std::vector<std::pair<std::string, double>>& out) {
      const nlohmann::json& list = parent.need(key);
      if (not list.is_array())
        parent.fail(key, "expected an array");
      for (std::size_t i = 0; i < list.size(); ++i) {
        JsonObject e(list[i], afile, parent.key_path(key) + "[" + std::to_string(i) + "]");
        const std::string name =
            name_is_rank ? "rank " + std::to_string(e.integer(name_key, 0, (1 << 30))) : e.string(name_key);
        out.emplace_back(name, e.number("seconds", JsonObject::Bound::NonNegative));
      }
    };
    if (aroot.has("wait_states")) {
      JsonObject w(aroot.need("wait_states"), afile, "wait_states");
      pairs(w, "by_kind", "kind", false, run.wait_kinds);
      run.has_waits = true;
    }
    if (aroot.has("critical_path")) {
      JsonObject p(aroot.need("critical_path"), afile, "critical_path");
      run.path_length_s = p.number("length_s", JsonObject::Bound::NonNegative);
      pairs(p, "by_rank", "rank", true, run.path_ranks);
      pairs(p, "by_function", "function", false, run.path_functions);
      if (p.has("by_link"))
        pairs(p, "by_link", "link", false, run.path_links);
      run.has_path = true;
    }
  }
  return run;
}

std::string percent_of(double delta, double base)
{
  if (base == 0)
    return delta == 0 ? "+0.00 %" : "new";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f %%", 100 * delta / base);
  return buf;
}

/// Prints `t`'s `top` largest changes under `title`, and how many unchanged rows were left out.
void print_table(const std::string& title, const Table& t, std::size_t top, nlohmann::json& out, const char* key)
{
  const std::vector<Row> rows = t.by_change();
  std::printf("\n%s (the largest changes first):\n", title.c_str());
  std::printf("  %-28s %14s %14s %14s %10s\n", "", "A s", "B s", "B - A s", "");
  std::size_t shown = 0, unchanged = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const Row& r : rows) {
    list.push_back({{"name", r.name}, {"a_s", r.a}, {"b_s", r.b}, {"delta_s", r.delta()}, {"in_a", r.in_a},
                    {"in_b", r.in_b}});
    if (not r.changed()) {
      ++unchanged;
      continue;
    }
    if (shown == top)
      continue;
    ++shown;
    const std::string note = not r.in_a ? "none in A" : not r.in_b ? "none in B" : percent_of(r.delta(), r.a);
    std::printf("  %-28s %14.9g %14.9g %+14.9g %10s\n", r.name.c_str(), r.a, r.b, r.delta(), note.c_str());
  }
  const std::size_t changed = rows.size() - unchanged;
  if (changed > shown)
    std::printf("  ... %zu more changed (all of them in --out's JSON)\n", changed - shown);
  if (shown == 0)
    std::printf("  no change\n");
  else if (unchanged > 0)
    std::printf("  %zu unchanged\n", unchanged);
  out[key] = std::move(list);
}

Table table_of(const std::vector<std::pair<std::string, double>>& a, const std::vector<std::pair<std::string, double>>& b)
{
  Table t;
  for (const auto& [name, v] : a)
    t.add(name, v, false);
  for (const auto& [name, v] : b)
    t.add(name, v, true);
  return t;
}

}  // namespace

int run_diff(const std::vector<std::string>& args)
{
  std::vector<std::string> inputs;
  std::string out;
  std::size_t top = 10;
  po::options_description options("options");
  options.add_options()
    ("inputs", po::value(&inputs), "A and B: prediction.json files or the --out folders that hold them")
    ("top", po::value(&top), "rows shown per section (default 10; --out's JSON has them all)")
    ("out,o", po::value(&out), "also write the comparison as JSON to this file");
  po::positional_options_description positional;
  positional.add("inputs", 2);
  po::variables_map vm;
  if (not parse("diff", "diff A B [--top N] [--out FILE]", args, options, positional, vm,
                "Explains the difference between two runs of replay or predict (two prediction.json, or their\n"
                "--out folders): the makespan, each rank's finish time and its compute, communication and\n"
                "waiting time, each function's simulated seconds (summed over ranks) and, where both folders\n"
                "hold analysis.json (--analysis), the wait states by kind and the critical path by rank and\n"
                "function. Rows are in B - A order of size. Exit 1 when a file is missing or not a gridcast\n"
                "result."))
    return 0;
  if (inputs.size() != 2)
    throw UsageError{"diff takes two runs: A and B (prediction.json files or --out folders)", "diff"};
  if (top == 0)
    throw UsageError{"--top must be at least 1", "diff"};
  print_diff(inputs[0], inputs[1], top, out, {}, {});
  return 0;
}

void print_diff(const std::string& a_path, const std::string& b_path, std::size_t top, const std::string& out,
                const std::string& a_label, const std::string& b_label)
{
  const Run a = read_run(a_path), b = read_run(b_path);

  nlohmann::json report;
  report["format"] = "gridcast-diff";
  report["format_version"] = 1;
  report["a"] = a.prediction.string();
  report["b"] = b.prediction.string();
  const double delta = b.makespan_s - a.makespan_s;
  report["makespan_s"] = {{"a", a.makespan_s}, {"b", b.makespan_s}, {"delta", delta}};
  std::printf("A: %s (%s)\nB: %s (%s)\n", a_label.empty() ? a.prediction.string().c_str() : a_label.c_str(),
              a.command.c_str(), b_label.empty() ? b.prediction.string().c_str() : b_label.c_str(), b.command.c_str());
  std::printf("makespan: %.10g s -> %.10g s: %+.6g s (%s)\n", a.makespan_s, b.makespan_s, delta,
              percent_of(delta, a.makespan_s).c_str());

  Table finish, totals;
  double sums[2][3] = {{0, 0, 0}, {0, 0, 0}};
  for (const Run* r : {&a, &b})
    for (const auto& x : r->ranks) {
      finish.add("rank " + std::to_string(x.rank), x.finish_s, r == &b);
      sums[r == &b][0] += x.compute_s;
      sums[r == &b][1] += x.comm_s;
      sums[r == &b][2] += x.wait_s;
    }
  const char* names[3] = {"compute", "communication", "waiting"};
  for (int side = 0; side < 2; ++side)
    for (int k = 0; k < 3; ++k)
      totals.add(names[k], sums[side][k], side == 1);
  print_table("time summed over ranks", totals, top, report, "totals");
  print_table("finish time per rank", finish, top, report, "ranks");
  print_table("functions, simulated seconds summed over ranks", table_of(a.functions, b.functions), top, report,
              "functions");

  if (a.has_waits && b.has_waits) {
    print_table("wait states by kind", table_of(a.wait_kinds, b.wait_kinds), top, report, "wait_states");
  } else if (a.has_waits || b.has_waits) {
    std::printf("\nwait states: only %s has them (run both with --analysis waits to compare)\n",
                a.has_waits ? "A" : "B");
  }
  if (a.has_path && b.has_path) {
    // Where the path mostly runs, before and after: the rank that decides the end may have changed.
    auto main_rank = [](const Run& r) {
      std::pair<std::string, double> best{"no rank", 0};
      for (const auto& p : r.path_ranks)
        if (p.second > best.second)
          best = p;
      return best;
    };
    const auto [ra, sa] = main_rank(a);
    const auto [rb, sb] = main_rank(b);
    std::printf("\ncritical path: %.10g s -> %.10g s, mostly on %s (%.1f %%) -> %s (%.1f %%)%s\n", a.path_length_s,
                b.path_length_s, ra.c_str(), a.path_length_s > 0 ? 100 * sa / a.path_length_s : 0.0, rb.c_str(),
                b.path_length_s > 0 ? 100 * sb / b.path_length_s : 0.0, ra == rb ? "" : ": the path moved");
    print_table("critical path by rank", table_of(a.path_ranks, b.path_ranks), top, report, "critical_path_ranks");
    print_table("critical path by function", table_of(a.path_functions, b.path_functions), top, report,
                "critical_path_functions");
    if (not a.path_links.empty() || not b.path_links.empty())
      print_table("critical path over links (point-to-point calls, by their route's bottleneck)",
                  table_of(a.path_links, b.path_links), top, report, "critical_path_links");
  } else if (a.has_path || b.has_path) {
    std::printf("\ncritical path: only %s has one (run both with --analysis critical-path to compare)\n",
                a.has_path ? "A" : "B");
  }
  if (not out.empty()) {
    write_file_atomically(out, report.dump(2) + "\n", "the comparison");
    std::printf("\nwrote %s\n", out.c_str());
  }
}

}  // namespace gridcast::cli
