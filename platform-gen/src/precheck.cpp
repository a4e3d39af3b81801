// Checks of a platform file before SimGrid reads it. SimGrid 3.32 answers several mistakes of a
// hand-written platform with xbt_die (SIGABRT) or a null dereference instead of an exception: a file
// without a zone, a host speed or a link bandwidth of zero, NaN or below zero, a core count below one, a
// routing name it does not know. Each of those is found here first and becomes an InputError naming the
// file, the line and the attribute. Everything else (units, references between elements) stays SimGrid's
// to check: its ParseError is already turned into an InputError by load_platform.
#include "precheck.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/platform/placement.hpp"

#include <tinyxml2.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridcast::platform {

namespace {

bool is_zone(std::string_view name)
{
  return name == "zone" || name == "AS" || name == "cluster" || name == "cabinet";
}

/// What a numeric attribute must satisfy.
enum class Bound { Positive, NonNegative };

struct Checker {
  std::string file;
  /// Hosts that ranks run on: only routes between them are required (a GPU host or an unused one may
  /// have routes to some hosts only).
  const std::set<std::string>* rank_hosts = nullptr;

  [[noreturn]] void fail(const tinyxml2::XMLElement* e, const std::string& key, const std::string& why) const
  {
    throw InputError({file, static_cast<std::uint64_t>(e->GetLineNum()), key, -1}, why);
  }

  /// The number that starts `text` (SimGrid's value syntax is a number then a unit, "1.25GBps"), or
  /// nothing where no number starts it (SimGrid's own parser then says what is wrong).
  static std::optional<double> leading_number(std::string_view text)
  {
    std::string s(text);
    const char* begin = s.c_str();
    char* end         = nullptr;
    const double v    = std::strtod(begin, &end);  // an overflow gives inf, which the bounds refuse
    if (end == begin)
      return std::nullopt;
    return v;
  }

  /// Checks attribute `key` of `e` where present. `list` allows SimGrid's comma-separated lists (a host's
  /// speed per power state, a wifi link's bandwidth per station).
  void number(const tinyxml2::XMLElement* e, const char* key, Bound bound, bool list = false) const
  {
    const char* raw = e->Attribute(key);
    if (raw == nullptr)
      return;
    std::string_view all(raw);
    std::size_t start = 0;
    while (true) {
      std::size_t comma   = list ? all.find(',', start) : std::string_view::npos;
      std::string_view v  = all.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      while (not v.empty() && v.front() == ' ')
        v.remove_prefix(1);
      if (auto x = leading_number(v)) {
        const std::string what = std::string("<") + e->Name() + "> " + key + "=\"" + raw + "\"";
        if (not std::isfinite(*x))
          fail(e, key, what + ": not a finite number");
        if (bound == Bound::Positive && not(*x > 0))
          fail(e, key, what + ": must be greater than zero");
        if (bound == Bound::NonNegative && *x < 0)
          fail(e, key, what + ": must not be negative");
      }
      if (comma == std::string_view::npos)
        break;
      start = comma + 1;
    }
  }

  void core_count(const tinyxml2::XMLElement* e) const
  {
    const char* raw = e->Attribute("core");
    if (raw == nullptr)
      return;
    char* end = nullptr;
    errno     = 0;
    long n    = std::strtol(raw, &end, 10);
    if (end == raw || *end != 0 || errno == ERANGE || n < 1 || n > 1'000'000)
      fail(e, "core", std::string("<") + e->Name() + "> core=\"" + raw + "\": expected a whole number of cores from 1");
  }

  void routing(const tinyxml2::XMLElement* e) const
  {
    const char* raw = e->Attribute("routing");
    if (raw == nullptr)
      return;
    // SimGrid 3.32's routing names (sg_platf.cpp); anything else dies with "Not a valid model!".
    static constexpr std::array<std::string_view, 12> known{"Full",       "Floyd",    "Dijkstra",         "DijkstraCache",
                                                            "None",       "Vivaldi",  "Cluster",          "ClusterTorus",
                                                            "ClusterFatTree", "ClusterDragonfly", "Star", "Wifi"};
    for (std::string_view k : known)
      if (k == raw)
        return;
    std::string list;
    for (std::string_view k : known)
      list += (list.empty() ? "" : ", ") + std::string(k);
    fail(e, "routing", std::string("<") + e->Name() + "> routing=\"" + raw + "\": unknown routing (known: " + list + ")");
  }

  /// Hosts of a zone routed by its own <route> elements without a route between them: SimGrid 3.32's
  /// release build dereferences the missing route (SIGSEGV) at the first message. Full routing needs a
  /// route for every pair; Floyd and Dijkstra a path of routes (through routers) from every host to every
  /// other, checked as reachability from the first host both ways (linear in the zone's size).
  void routes(const tinyxml2::XMLElement* zone) const
  {
    const std::string_view routing = zone->Attribute("routing") != nullptr ? zone->Attribute("routing") : "";
    const bool full = routing == "Full";
    if (not full && routing != "Floyd" && routing != "Dijkstra" && routing != "DijkstraCache")
      return;
    std::map<std::string, std::size_t> index;  // netpoint id -> vertex
    std::vector<std::string> hosts;
    for (const tinyxml2::XMLElement* c = zone->FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
      const std::string_view n = c->Name();
      const char* id           = c->Attribute("id");
      if (id == nullptr || (n != "host" && n != "router" && not is_zone(n)))
        continue;
      index.emplace(id, index.size());
      if (n == "host")
        if (rank_hosts != nullptr && rank_hosts->count(id) > 0)
          hosts.emplace_back(id);
    }
    if (hosts.size() < 2)
      return;
    std::vector<std::vector<std::size_t>> out(index.size()), in(index.size());
    std::set<std::pair<std::size_t, std::size_t>> direct;
    for (const tinyxml2::XMLElement* r = zone->FirstChildElement("route"); r != nullptr;
         r = r->NextSiblingElement("route")) {
      const char* src = r->Attribute("src");
      const char* dst = r->Attribute("dst");
      if (src == nullptr || dst == nullptr || index.count(src) == 0 || index.count(dst) == 0)
        continue;  // SimGrid names the unknown end itself
      const std::size_t a = index.at(src), b = index.at(dst);
      const char* sym     = r->Attribute("symmetrical");
      const bool both     = sym == nullptr || std::string_view(sym) == "YES" || std::string_view(sym) == "yes";
      out[a].push_back(b), in[b].push_back(a), direct.emplace(a, b);
      if (both)
        out[b].push_back(a), in[a].push_back(b), direct.emplace(b, a);
    }
    auto no_route = [&](const std::string& a, const std::string& b) {
      fail(zone, "route", "zone '" + std::string(zone->Attribute("id") ? zone->Attribute("id") : "") + "' (routing " +
                              std::string(routing) + ") has no route from host '" + a + "' to host '" + b +
                              "': add a <route src=\"" + a + "\" dst=\"" + b + "\"> with its links");
    };
    if (full) {
      for (const auto& a : hosts)
        for (const auto& b : hosts)
          if (a != b && direct.count({index.at(a), index.at(b)}) == 0)
            no_route(a, b);
      return;
    }
    auto reach = [&](const std::vector<std::vector<std::size_t>>& edges) {
      std::vector<char> seen(edges.size(), 0);
      std::vector<std::size_t> todo{index.at(hosts.front())};
      seen[todo.back()] = 1;
      while (not todo.empty()) {
        const std::size_t v = todo.back();
        todo.pop_back();
        for (std::size_t w : edges[v])
          if (not seen[w])
            seen[w] = 1, todo.push_back(w);
      }
      return seen;
    };
    const std::vector<char> from_first = reach(out), to_first = reach(in);
    for (const auto& h : hosts) {
      if (not from_first[index.at(h)])
        no_route(hosts.front(), h);
      if (not to_first[index.at(h)])
        no_route(h, hosts.front());
    }
  }

  /// routes() of every zone below `e`.
  void zone_routes(const tinyxml2::XMLElement* e) const
  {
    const std::string_view name = e->Name();
    if (name == "zone" || name == "AS")
      routes(e);
    for (const tinyxml2::XMLElement* c = e->FirstChildElement(); c != nullptr; c = c->NextSiblingElement())
      zone_routes(c);
  }

  void element(const tinyxml2::XMLElement* e) const
  {
    const std::string_view name = e->Name();
    if (name == "host") {
      number(e, "speed", Bound::Positive, true);
      core_count(e);
    } else if (name == "cluster" || name == "cabinet") {
      number(e, "speed", Bound::Positive, true);
      core_count(e);
      number(e, "bw", Bound::Positive);
      number(e, "lat", Bound::NonNegative);
      number(e, "bb_bw", Bound::Positive);
      number(e, "bb_lat", Bound::NonNegative);
      number(e, "loopback_bw", Bound::Positive);
      number(e, "loopback_lat", Bound::NonNegative);
      number(e, "limiter_link", Bound::Positive);
    } else if (name == "link" || name == "backbone") {
      number(e, "bandwidth", Bound::Positive, true);
      number(e, "latency", Bound::NonNegative);
    } else if (name == "peer") {
      number(e, "speed", Bound::Positive, true);
      number(e, "bw_in", Bound::Positive);
      number(e, "bw_out", Bound::Positive);
      number(e, "lat", Bound::NonNegative);
    } else if (name == "zone" || name == "AS") {
      routing(e);
    }
    for (const tinyxml2::XMLElement* c = e->FirstChildElement(); c != nullptr; c = c->NextSiblingElement())
      element(c);
  }
};

}  // namespace

void check_rank_routes(const std::filesystem::path& xml, const std::vector<sg4::Host*>& rank_hosts)
{
  std::set<std::string> names;
  for (const sg4::Host* h : rank_hosts)
    names.insert(h->get_name());
  if (names.size() < 2)
    return;
  tinyxml2::XMLDocument doc;
  if (doc.LoadFile(xml.c_str()) != tinyxml2::XML_SUCCESS || doc.RootElement() == nullptr)
    return;  // precheck_platform_xml has said so already
  const Checker check{xml.string(), &names};
  check.zone_routes(doc.RootElement());
}

void precheck_platform_xml(const std::filesystem::path& xml)
{
  const Checker check{xml.string()};
  tinyxml2::XMLDocument doc;
  if (doc.LoadFile(xml.c_str()) != tinyxml2::XML_SUCCESS) {
    const char* why = doc.ErrorStr();
    throw InputError({check.file, static_cast<std::uint64_t>(std::max(doc.ErrorLineNum(), 0)), {}, -1},
                     std::string("not a well-formed XML platform: ") + (why != nullptr ? why : "unreadable"));
  }
  const tinyxml2::XMLElement* root = doc.RootElement();
  if (root == nullptr || std::string_view(root->Name()) != "platform")
    throw InputError({check.file, root != nullptr ? static_cast<std::uint64_t>(root->GetLineNum()) : 0, {}, -1},
                     "the root element must be <platform>");
  bool has_zone = false;
  for (const tinyxml2::XMLElement* c = root->FirstChildElement(); c != nullptr; c = c->NextSiblingElement())
    has_zone = has_zone || is_zone(c->Name());
  if (not has_zone)
    throw InputError({check.file, static_cast<std::uint64_t>(root->GetLineNum()), {}, -1},
                     "the platform has no zone: its hosts and links go inside a <zone> (or a <cluster>)");
  check.element(root);
}

}  // namespace gridcast::platform
