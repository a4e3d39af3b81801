// report.html: the plots (gnuplot, SVG inlined) and the table of a study's points.
#include "gridcast/study/report.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/output_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
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

std::string html(const std::string& text)
{
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// A string for a gnuplot script, between single quotes: gnuplot runs what is between backquotes as a
/// shell command everywhere else, and names come from the study file.
std::string gp(const std::string& text)
{
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "''";
    else
      out += c == '\n' || c == '`' ? ' ' : c;
  }
  return out + "'";
}

/// A label in a data block, which gnuplot reads between double quotes (no substitution happens there).
std::string data_label(const std::string& text)
{
  std::string out = "\"";
  for (char c : text)
    out += c == '"' || c == '\n' || c == '`' || c == '\\' ? ' ' : c;
  return out + "\"";
}

std::string num(double v)
{
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

/// Runs gnuplot on `script` (which writes to `svg`) and returns the SVG element it drew.
std::string run_gnuplot(const std::string& script, const fs::path& dir)
{
  const std::string stem = ".report-" + std::to_string(::getpid());
  const fs::path gp_file = dir / (stem + ".gp"), svg_file = dir / (stem + ".svg"), log = dir / (stem + ".log");
  {
    std::ofstream out(gp_file);
    out << "set output " << gp(svg_file.string()) << "\n" << script;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::string arg0 = "gnuplot", arg1 = gp_file.string();
  char* argv[]     = {arg0.data(), arg1.data(), nullptr};
  pid_t pid        = 0;
  const int rc     = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  std::ifstream logs(log);
  std::stringstream why;
  why << logs.rdbuf();
  std::ifstream in(svg_file);
  std::stringstream svg;
  svg << in.rdbuf();
  std::error_code ec;
  for (const fs::path& f : {gp_file, svg_file, log})
    fs::remove(f, ec);
  if (rc != 0)
    throw InputError({(dir / "report.html").string(), 0, {}, -1},
                     "the report's plots need gnuplot (Debian: apt install gnuplot-nox): " +
                         std::string(std::strerror(rc)));
  const std::string text = svg.str();
  const auto at          = text.find("<svg");
  if (not WIFEXITED(status) || WEXITSTATUS(status) != 0 || at == std::string::npos)
    throw InternalError("gnuplot could not draw a plot of the report: " + why.str());
  return text.substr(at);
}

const char* kTerminal = "set terminal svg size 760,400 font 'DejaVu Sans,11' background rgb 'white'\n"
                        "set grid\nset key outside right top noenhanced\nset tics noenhanced\n";

/// Lines of a plot, in the manifest's order of their first point; each line's colour is its place in that
/// order over the whole study, so that a variant keeps its colour from one plot to the next.
class Series {
public:
  std::vector<std::pair<double, double>>& operator[](const std::string& name)
  {
    for (auto& line : lines_)
      if (line.name == name)
        return line.points;
    lines_.push_back({name, {}});
    return lines_.back().points;
  }
  struct Line {
    std::string name;
    std::vector<std::pair<double, double>> points;
  };
  std::vector<Line>& lines() { return lines_; }
  const std::vector<Line>& lines() const { return lines_; }
  bool empty() const { return lines_.empty(); }

private:
  std::vector<Line> lines_;
};

/// The colour of each line name: its place among every line of the study (gnuplot's linetype k + 1).
using Colours = std::map<std::string, int>;

/// A line plot of `series` against the report's x axis.
std::string line_plot(const std::string& title, const std::string& ylabel, const Series& series, const std::string& xlabel,
                      bool log_x, const std::vector<std::string>& categories, const fs::path& dir, const Colours& colours,
                      bool zero_line = false)
{
  std::ostringstream s;
  if (series.lines().size() > 8)  // the legend under the plot, four names a row, the plot taller for it
    s << "set terminal svg size 760," << 400 + 16 * ((series.lines().size() + 3) / 4)
      << " font 'DejaVu Sans,11' background rgb 'white'\nset grid\nset tics noenhanced\n"
      << "set key outside below horizontal maxcols 4 noenhanced font ',9'\n";
  else
    s << kTerminal;
  s << "set title " << gp(title) << " noenhanced\n"
    << "set xlabel " << gp(xlabel) << " noenhanced\nset ylabel " << gp(ylabel) << " noenhanced\n";
  if (log_x)
    s << "set logscale x 2\n";
  if (not categories.empty()) {
    s << "set xtics (";
    for (std::size_t i = 0; i < categories.size(); ++i)
      s << (i ? ", " : "") << gp(categories[i]) << " " << i;
    s << ")\nset xrange [-0.5:" << categories.size() - 0.5 << "]\n";
  }
  if (zero_line)
    s << "set xzeroaxis lt -1\n";
  // Values over more than a decade and a half (a slow variant beside fast ones): a log scale keeps both readable.
  double lo = 0, hi = 0;
  for (const auto& line : series.lines())
    for (const auto& [x, y] : line.points) {
      lo = lo == 0 ? y : std::min(lo, y);
      hi = std::max(hi, y);
    }
  if (not zero_line && lo > 0 && hi / lo > 30)
    s << "set logscale y\n";
  std::size_t k = 0;
  for (const auto& line : series.lines()) {
    s << "$d" << k++ << " << EOD\n";
    for (const auto& [x, y] : line.points)
      s << num(x) << " " << num(y) << "\n";
    s << "EOD\n";
  }
  s << "plot ";
  k = 0;
  for (const auto& line : series.lines()) {
    // gnuplot has 8 colours: past them, the dash and the point tell the lines apart.
    const auto colour = colours.find(line.name);
    const int c       = (colour == colours.end() ? 1 : colour->second) - 1;
    s << (k ? ", " : "") << "$d" << k << " using 1:2 with linespoints lw 2 lt " << c % 8 + 1 << " dt " << c / 8 % 5 + 1
      << " pt " << (c / 8 % 6) + 5 << " title " << gp(line.name.empty() ? "makespan" : line.name);
    ++k;
  }
  s << "\n";
  return run_gnuplot(s.str(), dir);
}

/// The report's x axis: np when it is swept, else the grid's first axis (its values in the file's order, as
/// categories when they are not numbers).
struct XAxis {
  std::string key;
  std::vector<std::string> categories;
  bool numeric = true;

  double of(const ManifestPoint& p) const
  {
    for (const auto& [k, v] : p.coordinates)
      if (k == key)
        return numeric ? v.get<double>()
                       : static_cast<double>(std::find(categories.begin(), categories.end(), value_text(v)) -
                                             categories.begin());
    return static_cast<double>(p.index);
  }

  /// A line's name: the variant and the coordinates other than the x axis (and than `without`).
  std::string series_of(const ManifestPoint& p, const std::string& without = {}) const
  {
    std::string name = without == "variant" ? std::string() : p.variant;
    for (const auto& [k, v] : p.coordinates)
      if (k != key && k != without)
        name += (name.empty() ? "" : " ") + k + "=" + value_text(v);
    return name;
  }
};

XAxis x_axis(const Manifest& m)
{
  XAxis x;
  for (const std::string& a : m.axes)
    if (a == "np")
      x.key = a;
  if (x.key.empty() && not m.axes.empty())
    x.key = m.axes.front();
  for (const ManifestPoint& p : m.points)
    for (const auto& [k, v] : p.coordinates)
      if (k == x.key) {
        x.numeric = x.numeric && v.is_number();
        if (std::find(x.categories.begin(), x.categories.end(), value_text(v)) == x.categories.end())
          x.categories.push_back(value_text(v));
      }
  if (x.numeric)
    x.categories.clear();
  return x;
}

/// The time per rank, one stacked bar per point.
std::string breakdown_plot(const Manifest& m, const std::vector<std::optional<PointResult>>& results, const fs::path& dir)
{
  std::ostringstream bars;
  bars << kTerminal << "set title \"Mean time per rank\" noenhanced\nset ylabel \"seconds\"\n"
       << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
       << "set boxwidth 0.75\nset xtics rotate by -40 font ',8'\nset key outside right top\n$b << EOD\n";
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    const auto& r = results[i];
    if (r && r->ok) {
      std::string label = m.points[i].variant;
      for (const auto& [k, v] : m.points[i].coordinates)
        label += (label.empty() ? "" : " ") + value_text(v);
      bars << data_label(label.empty() ? std::to_string(i) : label) << " " << num(r->compute_s) << " " << num(r->comm_s)
           << " " << num(r->wait_s) << "\n";
    }
  }
  bars << "EOD\nplot $b using 2:xtic(1) title \"compute\", '' using 3 title \"communication\", "
       << "'' using 4 title \"waiting\"\n";
  return run_gnuplot(bars.str(), dir);
}

/// The table of every point: its coordinates and result, or why it has none.
void write_points_table(std::ostream& page, const Manifest& m, const std::vector<std::optional<PointResult>>& results)
{
  page << "<h2>Points</h2>\n<table>\n<tr><th>#</th><th>id</th>";
  if (not m.variants.empty())
    page << "<th>variant</th>";
  for (const std::string& a : m.axes)
    page << "<th>" << html(a) << "</th>";
  page << "<th>makespan (s)</th><th>compute (s)</th><th>communication (s)</th><th>waiting (s)</th><th>messages</th>"
          "<th>busiest link</th><th>collectives / error</th></tr>\n";
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    const ManifestPoint& p = m.points[i];
    const auto& r          = results[i];
    page << "<tr class=\"" << (not r ? "pending" : r->ok ? "ok" : "failed") << "\"><td>" << p.index
         << "</td><td class=\"t\"><code>" << p.id << "</code></td>";
    if (not m.variants.empty())
      page << "<td class=\"t\">" << html(p.variant) << "</td>";
    for (const auto& [k, v] : p.coordinates)
      page << "<td>" << html(value_text(v)) << "</td>";
    if (not r)
      page << "<td colspan=\"7\" class=\"t\">no result yet</td>";
    else if (not r->ok)
      page << "<td colspan=\"7\" class=\"t\">failed: " << html(r->error) << "</td>";
    else
      page << "<td>" << num(r->makespan_s) << "</td><td>" << num(r->compute_s) << "</td><td>" << num(r->comm_s)
           << "</td><td>" << num(r->wait_s) << "</td><td>" << r->messages << "</td><td class=\"t\">"
           << html(r->busiest_link) << " (" << num(100 * r->busiest_link_utilisation) << " %)</td><td class=\"t\">"
           << html(r->collectives) << "</td>";
    page << "</tr>\n";
  }
  page << "</table>\n";
}

}  // namespace

void write_report(const Manifest& m, const std::vector<std::optional<PointResult>>& results, const fs::path& file)
{
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const XAxis axis = x_axis(m);
  const std::string& x_key = axis.key;
  auto compared_value = [&](const ManifestPoint& p) {
    if (m.compare_key == "variant")
      return p.variant;
    for (const auto& [k, v] : p.coordinates)
      if (k == m.compare_key)
        return value_text(v);
    return std::string();
  };
  const bool compare = not m.compare_key.empty();
  bool positive = axis.numeric;
  for (const ManifestPoint& p : m.points)
    positive = positive && axis.of(p) > 0;
  const bool log_x        = positive && x_key == "np";
  const std::string xname = x_key.empty() ? "point" : x_key;

  Series makespan, efficiency, against_base;
  std::map<std::string, double> base;  // the base's other coordinates and x -> its makespan
  std::size_t ok = 0, failed = 0, pending = 0;
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    const auto& r = results[i];
    pending += r ? 0 : 1;
    failed += r && not r->ok ? 1 : 0;
    if (not r || not r->ok)
      continue;
    ++ok;
    const ManifestPoint& p = m.points[i];
    makespan[axis.series_of(p)].emplace_back(axis.of(p), r->makespan_s);
    if (compare && compared_value(p) == m.compare_base)
      base[axis.series_of(p, m.compare_key) + "|" + num(axis.of(p))] = r->makespan_s;
  }
  Colours colours;
  for (auto& [name, xy] : makespan.lines()) {
    colours.emplace(name, static_cast<int>(colours.size()) + 1);
    std::sort(xy.begin(), xy.end());
    if (x_key == "np")
      for (const auto& [x, y] : xy)
        efficiency[name].emplace_back(x, m.scaling == "weak" ? 100.0 * xy.front().second / y
                                                             : 100.0 * xy.front().second * xy.front().first / (y * x));
  }
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    const auto& r = results[i];
    const ManifestPoint& p = m.points[i];
    if (not r || not r->ok || not compare || compared_value(p) == m.compare_base)
      continue;
    const auto b = base.find(axis.series_of(p, m.compare_key) + "|" + num(axis.of(p)));
    if (b != base.end() && b->second > 0)
      against_base[axis.series_of(p)].emplace_back(axis.of(p), 100.0 * (r->makespan_s - b->second) / b->second);
  }
  for (auto& [name, xy] : against_base.lines())
    std::sort(xy.begin(), xy.end());

  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>gridcast study "
       << html(m.name) << "</title>\n<style>\n"
       << "body{font-family:'DejaVu Sans',sans-serif;margin:2em;color:#222;max-width:1100px}\n"
       << "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}\n"
       << "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #bbb;padding:3px 6px;text-align:right}\n"
       << "th{background:#eee}td.t{text-align:left}tr.failed td{background:#fde}tr.pending td{color:#888}\n"
       << "figure{margin:1em 0}figcaption{font-size:0.85em;color:#555}\n</style>\n</head>\n<body>\n"
       << "<h1>gridcast study <code>" << html(m.name) << "</code></h1>\n<p>" << m.points.size() << " points ("
       << m.command << "): " << ok << " predicted, " << failed << " failed, " << pending
       << " without a result yet. Times are simulated seconds; compute, communication and waiting are means "
          "over ranks. Written by <code>gridcast study collect</code>.</p>\n";
  if (ok == 0) {
    page << "<p>No point has a result yet: nothing to plot.</p>\n";
  } else {
    page << "<h2>Makespan</h2>\n<figure class=\"plot\" id=\"makespan\">"
         << line_plot("Makespan against " + xname, "makespan (s)", makespan, xname, log_x, axis.categories, dir, colours)
         << "<figcaption>One line per variant and per value of the other axes.</figcaption></figure>\n";
    if (not efficiency.empty())
      page << "<h2>Parallel efficiency</h2>\n<figure class=\"plot\" id=\"efficiency\">"
           << line_plot("Parallel efficiency against np (" + m.scaling + " scaling)", "efficiency (%)", efficiency,
                        "np", log_x, {}, dir, colours)
           << "<figcaption>"
           << (m.scaling == "weak" ? "T(np0) / T(np): the work grows with np (weak scaling, the study's `scaling`)"
                                   : "T(np0) np0 / (T(np) np): the work is fixed (strong scaling, the study's `scaling`)")
           << ", np0 the smallest np of each line; 100 % is perfect scaling.</figcaption></figure>\n";
    if (not against_base.empty()) {
      const std::string base_name =
          m.compare_key == "variant" ? m.compare_base : m.compare_key + "=" + m.compare_base;
      page << "<h2>Against " << html(base_name) << "</h2>\n<figure class=\"plot\" id=\"against-base\">"
           << line_plot("Makespan change against " + base_name, "change (%)", against_base, xname, log_x, axis.categories,
                        dir, colours, true)
           << "<figcaption>(T - T(" << html(base_name) << ")) / T(" << html(base_name)
           << "), against the point that differs only in " << html(m.compare_key)
           << " (the study's <code>compare</code>): below zero is faster.</figcaption></figure>\n";
    }
    page << "<h2>Time per rank</h2>\n<figure class=\"plot\" id=\"breakdown\">" << breakdown_plot(m, results, dir)
         << "<figcaption>Each point's mean compute, communication and waiting time per rank.</figcaption></figure>\n";
  }

  write_points_table(page, m, results);
  page << "</body>\n</html>\n";
  write_file_atomically(file, page.str(), "the study's report");
}

}  // namespace gridcast::study
