// The manifest, each point's result.json and results.csv.
#include "gridcast/study/results.hpp"

#include "gridcast/foundation/csv.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/foundation/output_file.hpp"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using ordered = nlohmann::ordered_json;

namespace gridcast::study {

namespace {

/// The shortest text that reads back as the same double ("32", "0.1").
std::string number_text(double v)
{
  char buf[40];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::string csv_number(double v)
{
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

ordered coordinates_json(const std::vector<Setting>& coordinates)
{
  ordered c = ordered::object();
  for (const auto& [k, v] : coordinates)
    c[k] = v;
  return c;
}

}  // namespace

const ManifestPlatform& Manifest::platform(const std::string& id) const
{
  for (const ManifestPlatform& p : platforms)
    if (p.id == id)
      return p;
  throw InternalError("study manifest: no platform " + id);
}

fs::path point_dir(const fs::path& out, const std::string& id) { return out / "points" / id; }

Manifest make_manifest(const StudyFile& study, const std::vector<Point>& points, const fs::path& out)
{
  Manifest m;
  m.name    = study.name;
  m.command = study.command == Command::Predict ? "predict" : "replay";
  for (const Axis& a : study.axes)
    m.axes.push_back(a.key);
  for (const Variant& v : study.variants)
    m.variants.push_back(v.name);
  m.calibration = study.calibration;
  m.scaling     = study.scaling;
  m.compare_key  = study.compare_key;
  m.compare_base = study.compare_base;
  const fs::path root = fs::absolute(out).lexically_normal();
  for (const Point& p : points) {
    bool known = false;
    for (const ManifestPlatform& mp : m.platforms)
      known = known || mp.id == p.platform_id;
    if (not known) {
      if (study.platform_xml.empty())
        m.platforms.push_back({p.platform_id, root / "platforms" / p.platform_id / "spec.json",
                               root / "platforms" / p.platform_id / "platform.xml", p.spec});
      else
        m.platforms.push_back({p.platform_id, {}, study.platform_xml, nullptr});
    }
    ManifestPoint mp;
    mp.index       = p.index;
    mp.id          = p.id;
    mp.digest      = p.digest;
    mp.variant     = p.variant;
    mp.platform_id = p.platform_id;
    mp.coordinates = p.coordinates;
    mp.np          = p.settings.np;
    const Settings& s = p.settings;
    mp.args = {m.command, p.input.string()};
    if (study.command == Command::Predict) {
      mp.args.insert(mp.args.end(), {"--nw", number_text(*s.nw), "--np", std::to_string(s.np)});
      mp.args.insert(mp.args.end(), {"--platform", m.platform(p.platform_id).xml.string()});
      mp.args.insert(mp.args.end(), {"--ranks-per-host", std::to_string(s.ranks_per_node)});
      if (not s.fast_forward.empty())
        mp.args.insert(mp.args.end(), {"--fast-forward", s.fast_forward});
    } else {
      mp.args.insert(mp.args.end(), {"--platform", m.platform(p.platform_id).xml.string()});
      mp.args.insert(mp.args.end(), {"--ranks-per-node", std::to_string(s.ranks_per_node)});
      if (not s.gpu_mpi.empty())
        mp.args.insert(mp.args.end(), {"--gpu-mpi", s.gpu_mpi});
    }
    mp.args.insert(mp.args.end(), {"--seed", std::to_string(s.seed)});
    for (const auto& [name, value] : s.cfg)
      mp.args.insert(mp.args.end(), {"--cfg", name + ":" + value});
    m.points.push_back(std::move(mp));
  }
  return m;
}

void write_manifest(const Manifest& m, const fs::path& out)
{
  ordered j;
  j["format"]         = "gridcast-study-manifest";
  j["format_version"] = 1;
  j["name"]           = m.name;
  j["command"]        = m.command;
  j["axes"]           = m.axes;
  j["variants"]       = m.variants;
  j["calibration"]    = m.calibration.string();
  j["scaling"]        = m.scaling;
  j["compare"]        = {{"key", m.compare_key}, {"base", m.compare_base}};
  ordered platforms   = ordered::array();
  for (const ManifestPlatform& p : m.platforms)
    platforms.push_back({{"id", p.id}, {"spec", p.spec.string()}, {"xml", p.xml.string()}});
  j["platforms"]  = platforms;
  ordered points  = ordered::array();
  for (const ManifestPoint& p : m.points)
    points.push_back({{"index", p.index},
                      {"id", p.id},
                      {"digest", p.digest},
                      {"variant", p.variant},
                      {"coordinates", coordinates_json(p.coordinates)},
                      {"np", p.np},
                      {"platform", p.platform_id},
                      {"args", p.args}});
  j["points"] = points;
  fs::create_directories(out);
  for (const ManifestPlatform& p : m.platforms)
    if (not p.spec.empty() && not p.spec_content.is_null()) {
      fs::create_directories(p.spec.parent_path());
      write_file_atomically(p.spec, p.spec_content.dump(2) + "\n", "a study platform's spec");
    }
  write_file_atomically(out / "manifest.json", j.dump(1) + "\n", "the study's manifest");
}

Manifest read_manifest(const fs::path& out)
{
  const fs::path file = out / "manifest.json";
  if (not fs::exists(file))
    throw InputError({file.string(), 0, {}, -1},
                     "no manifest: `gridcast study run STUDY.json --out DIR` or `gridcast study submit` writes it");
  const nlohmann::json j = read_json_file(file, "the study's manifest");
  const JsonObject root(j, file.string());
  root.only({"format", "format_version", "name", "command", "axes", "variants", "calibration", "scaling", "compare",
             "platforms", "points"});
  if (root.string("format") != "gridcast-study-manifest" || root.integer("format_version") != 1)
    root.fail("format", "not a gridcast study manifest of format version 1");
  Manifest m;
  m.name        = root.string("name");
  m.command     = root.string("command");
  m.axes        = root.strings("axes");
  m.variants    = root.strings("variants");
  m.calibration = root.string("calibration");
  m.scaling     = root.string("scaling");
  const JsonObject compare = root.child("compare");
  compare.only({"key", "base"});
  m.compare_key  = compare.string("key");
  m.compare_base = compare.string("base");
  for (std::size_t i = 0; i < root.array("platforms").size(); ++i) {
    const JsonObject p = root.element("platforms", i);
    p.only({"id", "spec", "xml"});
    m.platforms.push_back({p.string("id"), p.string("spec"), p.string("xml"), nullptr});
  }
  for (std::size_t i = 0; i < root.array("points").size(); ++i) {
    const JsonObject p = root.element("points", i);
    p.only({"index", "id", "digest", "variant", "coordinates", "np", "platform", "args"});
    ManifestPoint mp;
    mp.index       = static_cast<std::size_t>(p.integer("index", 0));
    mp.id          = p.string("id");
    mp.digest      = p.string("digest");
    mp.variant     = p.string("variant");
    mp.np          = p.int32("np", 0);
    mp.platform_id = p.string("platform");
    mp.args        = p.strings("args");
    for (const std::string& axis : m.axes) {
      const JsonObject c = p.child("coordinates");
      mp.coordinates.emplace_back(axis, c.need(axis));
    }
    if (mp.index != i || mp.args.empty() || mp.id.size() != 12)
      p.fail("", "not the manifest's point " + std::to_string(i));
    (void)m.platform(mp.platform_id);
    m.points.push_back(std::move(mp));
  }
  return m;
}

PointResult result_from_prediction(const ManifestPoint& point, const fs::path& prediction)
{
  const nlohmann::json j = read_json_file(prediction, "the point's prediction.json");
  PointResult r;
  r.id         = point.id;
  r.digest     = point.digest;
  r.ok         = true;
  r.makespan_s = j.at("makespan_s").get<double>();
  r.events     = j.at("events").get<std::uint64_t>();
  r.messages   = j.at("messages").get<std::uint64_t>();
  if (j.contains("ranks_summary")) {  // a run of many ranks: the tables are CSV beside it, the means here
    const auto& s = j["ranks_summary"];
    r.ranks       = s.at("count").get<int>();
    r.compute_s   = s.at("compute_s").at("mean").get<double>();
    r.comm_s      = s.at("comm_s").at("mean").get<double>();
    r.wait_s      = s.at("wait_s").at("mean").get<double>();
  } else {
    const auto& ranks = j.at("ranks");
    r.ranks           = static_cast<int>(ranks.size());
    for (const auto& rank : ranks) {
      r.compute_s += rank.at("compute_s").get<double>();
      r.comm_s += rank.at("comm_s").get<double>();
      r.wait_s += rank.at("wait_s").get<double>();
    }
    if (r.ranks > 0) {
      r.compute_s /= r.ranks;
      r.comm_s /= r.ranks;
      r.wait_s /= r.ranks;
    }
  }
  if (j.contains("links_summary")) {
    r.link_bytes        = j["links_summary"].at("bytes").get<double>();
    const auto& busiest = j["links_summary"].at("busiest");
    if (not busiest.empty()) {
      r.busiest_link             = busiest[0].at("name").get<std::string>();
      r.busiest_link_utilisation = busiest[0].at("utilisation").get<double>();
    }
  }
  const nlohmann::json links       = j.value("links", nlohmann::json::array());
  const nlohmann::json collectives = j.value("collectives", nlohmann::json::object());
  for (const auto& link : links) {
    r.link_bytes += link.at("bytes").get<double>();
    const double u = link.value("utilisation", 0.0);
    if (r.busiest_link.empty() || u > r.busiest_link_utilisation) {
      r.busiest_link             = link.at("name").get<std::string>();
      r.busiest_link_utilisation = u;
    }
  }
  for (const auto& [op, algorithms] : collectives.items())
    for (const auto& [algorithm, calls] : algorithms.items())
      r.collectives += (r.collectives.empty() ? "" : " ") + op + ":" + algorithm + " x" + calls.dump();
  r.fast_forwarded = j.contains("fast_forward") && j["fast_forward"].value("applied", false);
  return r;
}

PointResult failed_result(const ManifestPoint& point, int exit_code, const std::string& error)
{
  PointResult r;
  r.id        = point.id;
  r.digest    = point.digest;
  r.ok        = false;
  r.exit_code = exit_code;
  r.error     = error;
  return r;
}

void write_result(const fs::path& out, const ManifestPoint& point, const PointResult& r)
{
  ordered j;
  j["format"]         = "gridcast-study-point";
  j["format_version"] = 1;
  j["id"]             = r.id;
  j["digest"]         = r.digest;
  j["variant"]        = point.variant;
  j["coordinates"]    = coordinates_json(point.coordinates);
  j["status"]         = r.ok ? "ok" : "failed";
  if (r.ok) {
    j["makespan_s"]               = r.makespan_s;
    j["ranks"]                    = r.ranks;
    j["compute_s"]                = r.compute_s;
    j["comm_s"]                   = r.comm_s;
    j["wait_s"]                   = r.wait_s;
    j["events"]                   = r.events;
    j["messages"]                 = r.messages;
    j["link_bytes"]               = r.link_bytes;
    j["busiest_link"]             = r.busiest_link;
    j["busiest_link_utilisation"] = r.busiest_link_utilisation;
    j["collectives"]              = r.collectives;
    j["fast_forwarded"]           = r.fast_forwarded;
  } else {
    j["exit_code"] = r.exit_code;
    j["error"]     = r.error;
  }
  const fs::path dir = point_dir(out, point.id);
  fs::create_directories(dir);
  write_file_atomically(dir / "result.json", j.dump(1) + "\n", "the point's result");
}

std::optional<PointResult> read_result(const fs::path& out, const ManifestPoint& point, std::string* problem)
{
  const fs::path file = point_dir(out, point.id) / "result.json";
  if (not fs::exists(file))
    return std::nullopt;
  try {
    const nlohmann::json j = read_json_file(file, "the point's result");
    const JsonObject o(j, file.string());
    o.only({"format", "format_version", "id", "digest", "variant", "coordinates", "status", "makespan_s", "ranks",
            "compute_s", "comm_s", "wait_s", "events", "messages", "link_bytes", "busiest_link",
            "busiest_link_utilisation", "collectives", "fast_forwarded", "exit_code", "error"});
    if (o.string("format") != "gridcast-study-point" || o.integer("format_version") != 1)
      o.fail("format", "not a study point's result");
    if (o.string("digest") != point.digest || o.string("id") != point.id)
      o.fail("digest", "the result of another run (its inputs changed)");
    PointResult r;
    r.id     = point.id;
    r.digest = point.digest;
    const std::string status = o.string("status");
    if (status == "ok") {
      r.ok                       = true;
      r.makespan_s               = o.number("makespan_s", JsonObject::Bound::NonNegative);
      r.ranks                    = o.int32("ranks", 0);
      r.compute_s                = o.number("compute_s");
      r.comm_s                   = o.number("comm_s");
      r.wait_s                   = o.number("wait_s");
      r.events                   = o.uint64("events");
      r.messages                 = o.uint64("messages");
      r.link_bytes               = o.number("link_bytes");
      r.busiest_link             = o.string("busiest_link");
      r.busiest_link_utilisation = o.number("busiest_link_utilisation");
      r.collectives              = o.string("collectives");
      r.fast_forwarded           = o.boolean("fast_forwarded");
    } else if (status == "failed") {
      r.exit_code = o.int32("exit_code");
      r.error     = o.string("error");
    } else {
      o.fail("status", "expected \"ok\" or \"failed\"");
    }
    return r;
  } catch (const InputError& e) {
    if (problem != nullptr)
      *problem = e.what();
    return std::nullopt;
  }
}

std::vector<std::optional<PointResult>> read_results(const fs::path& out, const Manifest& manifest,
                                                     std::vector<std::string>* problems)
{
  std::vector<std::optional<PointResult>> results;
  for (const ManifestPoint& p : manifest.points) {
    std::string problem;
    results.push_back(read_result(out, p, &problem));
    if (not problem.empty() && problems != nullptr)
      problems->push_back("point " + std::to_string(p.index) + ": " + problem);
  }
  return results;
}

std::string results_csv(const Manifest& m, const std::vector<std::optional<PointResult>>& results)
{
  std::ostringstream csv;
  csv << "index,id,variant";
  for (const std::string& axis : m.axes)
    csv << ',' << csv_field(axis);
  csv << ",status,makespan_s,ranks,compute_s,comm_s,wait_s,events,messages,link_bytes,busiest_link,"
         "busiest_link_utilisation,collectives,fast_forwarded,digest,error\n";
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    const ManifestPoint& p = m.points[i];
    csv << p.index << ',' << p.id << ',' << csv_field(p.variant);
    for (const auto& [key, value] : p.coordinates)
      csv << ',' << csv_field(value_text(value));
    const auto& r = results[i];
    if (not r) {
      csv << ",pending,,,,,,,,,,,,," << p.digest << ",\n";
      continue;
    }
    if (not r->ok) {
      csv << ",failed,,,,,,,,,,,,," << p.digest << ',' << csv_field(r->error) << '\n';
      continue;
    }
    csv << ",ok," << csv_number(r->makespan_s) << ',' << r->ranks << ',' << csv_number(r->compute_s) << ','
        << csv_number(r->comm_s) << ',' << csv_number(r->wait_s) << ',' << r->events << ',' << r->messages << ','
        << csv_number(r->link_bytes) << ',' << csv_field(r->busiest_link) << ','
        << csv_number(r->busiest_link_utilisation) << ',' << csv_field(r->collectives) << ','
        << (r->fast_forwarded ? "yes" : "no") << ',' << p.digest << ",\n";
  }
  return csv.str();
}

}  // namespace gridcast::study
