// The study file: strict reading, the settings' checks, and the expansion into points.
#include "gridcast/study/study.hpp"

#include "gridcast/foundation/digest.hpp"
#include "gridcast/foundation/errors.hpp"
#include "gridcast/foundation/json_reader.hpp"
#include "gridcast/platform/spec.hpp"
#include "gridcast/version.hpp"

#include <xbt/base.h>  // before simgrid/version.h, which uses its macros
#include <simgrid/version.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace fs = std::filesystem;

namespace gridcast::study {

namespace {

constexpr const char* kAllowedSettings =
    "np, nw, ranks_per_node, seed, input, gpu_mpi, fast_forward, cfg.<name>, spec.<key path>, tag.<name>";

/// Checks one setting where it is written (`where` is its key path in the study file).
void check_setting(const StudyFile& s, const std::string& key, const nlohmann::json& v, const std::string& where)
{
  auto fail = [&](const std::string& reason) { throw InputError({s.file.string(), 0, where, -1}, reason); };
  auto integer = [&](std::int64_t lo, std::int64_t hi) {
    if (not v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
      fail("expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v.dump());
  };
  const bool predict = s.command == Command::Predict;
  if (key == "np") {
    integer(1, 1 << 30);  // a replay's np must be its trace's (checked on expansion): a path template uses it
  } else if (key == "nw") {
    if (not predict)
      fail("nw: a replay runs the trace at its own size (vary the trace with `input` instead)");
    if (not v.is_number() || not std::isfinite(v.get<double>()) || v.get<double>() <= 0)
      fail("expected a number > 0, got " + v.dump());
  } else if (key == "ranks_per_node") {
    integer(1, 1 << 20);
  } else if (key == "seed") {
    if (not v.is_number_unsigned())
      fail("expected an integer >= 0, got " + v.dump());
  } else if (key == "input") {
    if (not v.is_string() || v.get<std::string>().empty())
      fail("expected the path of a " + std::string(predict ? "model" : "trace") + ", got " + v.dump());
  } else if (key == "gpu_mpi") {
    if (predict)
      fail("gpu_mpi: only a replay takes --gpu-mpi");
    if (v != "hostcopy" && v != "gpudirect")
      fail("expected \"hostcopy\" or \"gpudirect\", got " + v.dump());
  } else if (key == "fast_forward") {
    if (not predict)
      fail("fast_forward: only a prediction fast-forwards");
    if (v != "auto" && v != "off")
      fail("expected \"auto\" or \"off\", got " + v.dump());
  } else if (key.rfind("cfg.", 0) == 0) {
    const std::string name = key.substr(4);
    if (name.empty() || name.find(':') != std::string::npos || name.find(' ') != std::string::npos)
      fail("a --cfg setting needs a name without ':' or spaces after `cfg.`");
    if (not v.is_string() && not v.is_number() && not v.is_boolean())
      fail("expected a string, number or boolean for --cfg " + name + ", got " + v.dump());
  } else if (key.rfind("tag.", 0) == 0) {
    if (key.size() == 4 || key.find_first_of("{}") != std::string::npos)
      fail("a tag needs a name after `tag.`, without braces");
    if (not v.is_string() && not v.is_number())
      fail("expected a string or a number for a tag, got " + v.dump());
  } else if (key.rfind("spec.", 0) == 0) {
    if (s.platform_spec.empty())
      fail("a spec setting needs `platform.spec` (this study runs on a fixed platform XML)");
    if (key.size() == 5 || key.back() == '.' || key.find("..") != std::string::npos)
      fail("expected a key path of the platform spec after `spec.` (spec.network.topology)");
  } else {
    fail("unknown setting (allowed: " + std::string(kAllowedSettings) + ")");
  }
}

std::vector<Setting> read_settings(const StudyFile& s, const JsonObject& obj)
{
  std::vector<Setting> out;
  for (const auto& [key, value] : obj.raw().items()) {
    check_setting(s, key, value, obj.key_path(key));
    out.emplace_back(key, value);
  }
  return out;
}

/// `text` with every {key} replaced by the point's value of that setting ("traces/{tag.app}-{np}").
std::string substitute(const std::string& text, const std::map<std::string, nlohmann::json>& values,
                       const std::function<void(const std::string&)>& fail)
{
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    const std::size_t end = text.find('}', i);
    if (end == std::string::npos)
      fail("`" + text + "`: a `{` without its `}`");
    const std::string key = text.substr(i + 1, end - i - 1);
    const auto v          = values.find(key);
    if (v == values.end())
      fail("`" + text + "` names {" + key + "}, which this point does not set");
    out += value_text(v->second);
    i = end;
  }
  return out;
}

fs::path resolve_path(const StudyFile& s, const std::string& path)
{
  const fs::path p(path);
  return p.is_absolute() ? p : (s.file.parent_path() / p).lexically_normal();
}

/// Sets `value` at the dotted `path` inside `spec` (a number indexes an array, which must have it).
void set_in_spec(nlohmann::json& spec, const std::string& path, const nlohmann::json& value, const std::string& key,
                 const std::string& where, const std::string& file)
{
  nlohmann::json* node = &spec;
  std::size_t from = 0;
  for (;;) {
    const std::size_t dot  = path.find('.', from);
    const std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    const bool last        = dot == std::string::npos;
    if (node->is_array()) {
      char* end        = nullptr;
      const long index = std::strtol(part.c_str(), &end, 10);
      if (part.empty() || *end != '\0' || index < 0 || static_cast<std::size_t>(index) >= node->size())
        throw InputError({file, 0, where, -1}, key + ": `" + part + "` is not an index of the spec's array (" +
                                                   std::to_string(node->size()) + " elements)");
      node = &(*node)[static_cast<std::size_t>(index)];
    } else if (node->is_object()) {
      if (not last && not node->contains(part))
        throw InputError({file, 0, where, -1}, key + ": the platform spec has no `" + part + "` on this path");
      node = &(*node)[part];
    } else {
      throw InputError({file, 0, where, -1}, key + ": `" + part + "` is inside a value, not an object or array");
    }
    if (last)
      break;
    from = dot + 1;
  }
  *node = value;
}

}  // namespace

std::string value_text(const nlohmann::json& value)
{
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", value.get<double>());
    return buf;
  }
  return value.dump();
}

StudyFile read_study(const fs::path& file)
{
  const nlohmann::json j = read_json_file(file, "the study");
  StudyFile s;
  s.file = fs::absolute(file).lexically_normal();
  const JsonObject root(j, file.string());
  root.only({"name", "description", "predict", "replay", "platform", "set", "axes", "variants", "scaling", "compare"});
  s.name = root.string("name");
  if (s.name.empty() || s.name.find_first_of("/\n\"") != std::string::npos)
    root.fail("name", "expected a name without '/', quotes or line breaks");
  if (root.has("scaling")) {
    s.scaling = root.string("scaling");
    if (s.scaling != "strong" && s.scaling != "weak")
      root.fail("scaling", "expected \"strong\" (the work is fixed) or \"weak\" (the work grows with np)");
  }
  if (root.has("description"))
    (void)root.string("description");
  if (root.has("predict") == root.has("replay"))
    root.fail("predict", "give exactly one of `predict` (a model.json) and `replay` (a trace)");
  s.command = root.has("predict") ? Command::Predict : Command::Replay;
  const char* input_key = s.command == Command::Predict ? "predict" : "replay";
  s.input               = resolve_path(s, root.string(input_key));

  const JsonObject platform = root.child("platform");
  platform.only({"spec", "calibration", "xml"});
  if (platform.has("spec") == platform.has("xml"))
    platform.fail("", "give exactly one of `spec` (a platform spec, generated once per variant) and `xml`");
  if (platform.has("spec"))
    s.platform_spec = resolve_path(s, platform.string("spec"));
  else
    s.platform_xml = resolve_path(s, platform.string("xml"));
  if (platform.has("calibration")) {
    if (s.platform_spec.empty())
      platform.fail("calibration", "a calibration goes with `spec` (an XML platform has its figures already)");
    s.calibration = resolve_path(s, platform.string("calibration"));
  }
  for (const fs::path& p : {s.input, s.platform_spec, s.platform_xml, s.calibration})
    if (not p.empty() && not fs::exists(p) && (p != s.input || p.string().find('{') == std::string::npos))
      throw InputError({s.file.string(), 0, {}, -1}, p.string() + ": no such file or directory");

  if (root.has("set"))
    s.base = read_settings(s, root.child("set"));

  if (root.has("axes")) {
    const nlohmann::json& axes = root.array("axes");
    std::set<std::string> keys;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const JsonObject a = root.element("axes", i);
      a.only({"key", "values"});
      Axis axis;
      axis.key = a.string("key");
      if (not keys.insert(axis.key).second)
        a.fail("key", "the axis `" + axis.key + "` is given twice");
      const nlohmann::json& values = a.array("values");
      if (values.empty())
        a.fail("values", "an axis needs at least one value");
      std::set<std::string> seen;
      for (std::size_t k = 0; k < values.size(); ++k) {
        const std::string where = a.key_path("values") + "[" + std::to_string(k) + "]";
        check_setting(s, axis.key, values[k], where);
        if (not seen.insert(values[k].dump()).second)
          throw InputError({s.file.string(), 0, where, -1}, "the value " + values[k].dump() + " is given twice");
        axis.values.push_back(values[k]);
      }
      s.axes.push_back(std::move(axis));
    }
  }
  if (root.has("variants")) {
    const nlohmann::json& variants = root.array("variants");
    if (variants.empty())
      root.fail("variants", "give at least one variant, or leave `variants` out");
    std::set<std::string> names;
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const JsonObject v = root.element("variants", i);
      v.only({"name", "set"});
      Variant variant;
      variant.name = v.string("name");
      if (variant.name.empty() || variant.name.find_first_of(",\n\"") != std::string::npos)
        v.fail("name", "expected a name without commas, quotes or line breaks");
      if (not names.insert(variant.name).second)
        v.fail("name", "the variant `" + variant.name + "` is given twice");
      if (v.has("set"))
        variant.set = read_settings(s, v.child("set"));
      for (const auto& [key, value] : variant.set)
        for (const Axis& axis : s.axes)
          if (axis.key == key)
            v.fail("set." + key, "`" + key + "` is an axis of the grid too: say it in one place");
      s.variants.push_back(std::move(variant));
    }
  }
  if (not s.variants.empty()) {
    s.compare_key  = "variant";
    s.compare_base = s.variants.front().name;
  }
  if (root.has("compare")) {
    const JsonObject c = root.child("compare");
    c.only({"key", "base"});
    s.compare_key = c.string("key");
    const nlohmann::json& base = c.need("base");
    s.compare_base = value_text(base);
    bool known = false;
    if (s.compare_key == "variant") {
      for (const Variant& v : s.variants)
        known = known || v.name == s.compare_base;
    } else {
      bool axis = false;
      for (const Axis& a : s.axes)
        if (a.key == s.compare_key) {
          axis = true;
          for (const auto& v : a.values)
            known = known || value_text(v) == s.compare_base;
        }
      if (not axis)
        c.fail("key", "`" + s.compare_key + "` is not an axis of the grid (nor `variant`)");
    }
    if (not known)
      c.fail("base", base.dump() + " is not one of the values of `" + s.compare_key + "`");
  }
  return s;
}

std::string digest_input(const fs::path& input)
{
  if (not fs::is_directory(input))
    return digest_file(input);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(input))
    if (e.is_regular_file())
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Sha1 h;
  for (const fs::path& f : files) {  // names too: two layouts of the same bytes are not the same trace
    h.add(fs::relative(f, input).generic_string());
    h.add(std::string(1, '\0'));
    h.add_file(f);
  }
  return h.hex();
}

std::string point_label(const Point& point)
{
  std::string label = point.variant;
  for (const auto& [key, value] : point.coordinates) {
    if (not label.empty())
      label += ' ';
    label += key + "=" + value_text(value);
  }
  return label.empty() ? "the point" : label;
}

namespace {

/// The rank count of a replay's trace when it is a profile directory (run.json's np), else 0 (unknown).
int trace_ranks(const fs::path& input)
{
  const fs::path run = input / "run.json";
  if (not fs::is_directory(input) || not fs::exists(run))
    return 0;
  const nlohmann::json j = read_json_file(run, "run.json");
  return j.contains("np") && j["np"].is_number_integer() ? j["np"].get<int>() : 0;
}

}  // namespace

std::vector<Point> expand(const StudyFile& s)
{
  const nlohmann::json base_spec =
      s.platform_spec.empty() ? nlohmann::json() : read_json_file(s.platform_spec, "the platform spec");
  const std::string calibration_digest = s.calibration.empty() ? "" : digest_file(s.calibration);
  const std::string xml_digest         = s.platform_xml.empty() ? "" : digest_file(s.platform_xml);
  std::map<fs::path, std::string> input_digests;
  std::map<fs::path, int> input_ranks;

  std::vector<Variant> variants = s.variants;
  if (variants.empty())
    variants.push_back({});
  std::size_t grid = 1;
  for (const Axis& a : s.axes)
    grid *= a.values.size();
  if (grid * variants.size() > 100000)
    throw InputError({s.file.string(), 0, "axes", -1},
                     "the study has " + std::to_string(grid * variants.size()) + " points, more than 100000");

  std::vector<Point> points;
  std::map<std::string, std::size_t> by_id;
  for (const Variant& variant : variants) {
    for (std::size_t g = 0; g < grid; ++g) {
      Point p;
      p.index   = points.size();
      p.variant = variant.name;
      std::size_t rest = g;
      std::vector<std::size_t> at(s.axes.size());
      for (std::size_t a = s.axes.size(); a-- > 0;) {  // the first axis varies slowest
        at[a] = rest % s.axes[a].values.size();
        rest /= s.axes[a].values.size();
      }
      std::map<std::string, nlohmann::json> values;
      for (const auto& [k, v] : s.base)
        values[k] = v;
      for (const auto& [k, v] : variant.set)
        values[k] = v;
      for (std::size_t a = 0; a < s.axes.size(); ++a) {
        p.coordinates.emplace_back(s.axes[a].key, s.axes[a].values[at[a]]);
        values[s.axes[a].key] = s.axes[a].values[at[a]];
      }
      const std::string where = "point " + std::to_string(p.index) + " (" + point_label(p) + ")";
      auto fail = [&](const std::string& reason) { throw InputError({s.file.string(), 0, {}, -1}, where + ": " + reason); };

      std::string input_text = s.input.string();
      nlohmann::json spec = base_spec;
      for (const auto& [key, v] : values) {
        if (key == "np")
          p.settings.np = v.get<int>();
        else if (key == "nw")
          p.settings.nw = v.get<double>();
        else if (key == "ranks_per_node")
          p.settings.ranks_per_node = v.get<int>();
        else if (key == "seed")
          p.settings.seed = v.get<std::uint64_t>();
        else if (key == "input")
          input_text = v.get<std::string>();
        else if (key == "gpu_mpi")
          p.settings.gpu_mpi = v.get<std::string>();
        else if (key == "fast_forward")
          p.settings.fast_forward = v.get<std::string>();
        else if (key.rfind("tag.", 0) == 0)
          p.settings.tags.emplace_back(key.substr(4), value_text(v));
        else if (key.rfind("cfg.", 0) == 0)
          p.settings.cfg.emplace_back(key.substr(4), value_text(v));
        else  // spec.
          set_in_spec(spec, key.substr(5), v, key, where, s.file.string());
      }
      const fs::path input = resolve_path(s, substitute(input_text, values, fail));
      if (not fs::exists(input))
        fail("input: " + input.string() + ": no such file or directory");
      if (s.command == Command::Predict) {
        if (p.settings.np == 0)
          fail("np is not set (in `set`, a variant or an axis)");
        if (not p.settings.nw)
          fail("nw is not set (in `set`, a variant or an axis)");
      } else {
        if (not input_ranks.count(input))
          input_ranks[input] = trace_ranks(input);
        if (p.settings.np > 0 && input_ranks[input] == 0)
          fail("np: the rank count of " + input.string() +
               " is not known before the run (only a profile directory's run.json says it): leave np out");
        if (p.settings.np > 0 && p.settings.np != input_ranks[input])
          fail("np is " + std::to_string(p.settings.np) + " but the trace " + input.string() + " has " +
               std::to_string(input_ranks[input]) + " ranks");
        if (p.settings.np == 0)
          p.settings.np = input_ranks[input];
      }
      if (not input_digests.count(input))
        input_digests[input] = digest_input(input);

      nlohmann::json platform_inputs;
      if (not s.platform_spec.empty()) {
        platform::PlatformSpec parsed;
        try {
          parsed = platform::spec_from_json(spec, s.platform_spec.string() + " with the changes of " + where);
        } catch (const InputError& e) {
          throw InputError({s.file.string(), 0, e.context().key, -1},
                           where + ": the platform spec with its changes: " + e.reason());
        }
        long long nodes = 0;
        for (const auto& group : parsed.nodes)
          nodes += group.count;
        if (p.settings.np > 0 && static_cast<long long>(p.settings.np) > nodes * p.settings.ranks_per_node)
          fail("the platform has " + std::to_string(nodes) + " nodes, which at " +
               std::to_string(p.settings.ranks_per_node) + " ranks a node hold " +
               std::to_string(nodes * p.settings.ranks_per_node) + " ranks, not " + std::to_string(p.settings.np));
        p.spec          = spec;
        platform_inputs = {{"spec", spec}, {"calibration", calibration_digest}};
      } else {
        platform_inputs = {{"xml", xml_digest}};
      }
      p.platform_id = digest_text(platform_inputs.dump()).substr(0, 12);

      nlohmann::json settings = {{"np", p.settings.np}, {"ranks_per_node", p.settings.ranks_per_node},
                                 {"seed", p.settings.seed}, {"cfg", p.settings.cfg}};
      if (not p.settings.tags.empty())
        settings["tags"] = p.settings.tags;
      if (p.settings.nw)
        settings["nw"] = *p.settings.nw;
      if (not p.settings.gpu_mpi.empty())
        settings["gpu_mpi"] = p.settings.gpu_mpi;
      if (not p.settings.fast_forward.empty())
        settings["fast_forward"] = p.settings.fast_forward;
      // The versions too: a result of another gridcast or SimGrid is not this run's (an upgrade reruns the study).
      const nlohmann::json inputs = {{"gridcast", kVersion},
                                     {"simgrid", std::to_string(SIMGRID_VERSION_MAJOR) + "." +
                                                     std::to_string(SIMGRID_VERSION_MINOR) + "." +
                                                     std::to_string(SIMGRID_VERSION_PATCH)},
                                     {"command", s.command == Command::Predict ? "predict" : "replay"},
                                     {"input", input_digests[input]},
                                     {"platform", platform_inputs},
                                     {"settings", settings}};
      p.digest = digest_text(inputs.dump());
      p.id     = p.digest.substr(0, 12);
      p.input  = input;
      if (auto [it, fresh] = by_id.emplace(p.id, p.index); not fresh)
        fail("the same run as point " + std::to_string(it->second) +
             ": every setting is equal (a variant that changes nothing?)");
      points.push_back(std::move(p));
    }
  }
  return points;
}

}  // namespace gridcast::study
