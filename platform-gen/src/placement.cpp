#include "gridcast/platform/placement.hpp"

#include "gridcast/foundation/errors.hpp"

#include "precheck.hpp"

#include <simgrid/Exception.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>

namespace gridcast::platform {

void load_platform(sg4::Engine& engine, const std::filesystem::path& xml)
{
  ErrorContext where{xml.string(), 0, {}, -1};
  if (not std::filesystem::is_regular_file(xml))
    throw InputError(where, "platform file does not exist");
  precheck_platform_xml(xml);
  try {
    engine.load_platform(xml.string());
  } catch (const simgrid::ParseError& e) {
    // SimGrid says "Parse error at FILE:LINE: reason"; keep its line number and reason.
    std::string what = e.what();
    const std::string file = xml.string();
    auto at = what.find(file + ":");
    if (at != std::string::npos) {
      std::size_t pos = at + file.size() + 1;
      std::size_t end = what.find(':', pos);
      std::uint64_t line = 0;
      auto [ptr, ec] = std::from_chars(what.data() + pos, what.data() + (end == std::string::npos ? pos : end), line);
      if (ec == std::errc() && end != std::string::npos) {
        where.line = line;
        std::string reason = what.substr(end + 1);
        reason.erase(0, reason.find_first_not_of(' '));
        throw InputError(where, "SimGrid rejects the platform: " + reason);
      }
    }
    throw InputError(where, "SimGrid rejects the platform: " + what);
  } catch (const std::exception& e) {
    throw InputError(where, std::string("SimGrid rejects the platform: ") + e.what());
  }
}

std::vector<HostfileEntry> read_hostfile(const std::filesystem::path& file)
{
  std::ifstream in(file);
  if (not in)
    throw InputError({file.string(), 0, {}, -1}, "cannot open hostfile");
  std::vector<HostfileEntry> hosts;
  std::string line;
  std::uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    auto hash = line.find('#');
    if (hash != std::string::npos)
      line.erase(hash);
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos)
      continue;
    auto last = line.find_last_not_of(" \t\r");
    std::string entry = line.substr(first, last - first + 1);
    int slots = 1;
    if (auto colon = entry.rfind(':'); colon != std::string::npos) {
      std::string count = entry.substr(colon + 1);
      auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), slots);
      if (ec != std::errc() || ptr != count.data() + count.size() || slots < 1)
        throw InputError({file.string(), line_no, {}, -1}, "bad slot count '" + count + "' (expected name:N, N >= 1)");
      entry.erase(colon);
    }
    if (entry.find_first_of(" \t") != std::string::npos)
      throw InputError({file.string(), line_no, {}, -1}, "one host name per line expected, got '" + entry + "'");
    for (int i = 0; i < slots; ++i)
      hosts.push_back({entry, line_no});
  }
  if (hosts.empty())
    throw InputError({file.string(), 0, {}, -1}, "hostfile lists no host");
  return hosts;
}

bool natural_less(const std::string& a, const std::string& b)
{
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t i2 = i;
      std::size_t j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2])))
        ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2])))
        ++j2;
      // Compare digit runs by value: strip leading zeros, then by length, then lexicographically.
      std::size_t ia = a.find_first_not_of('0', i);
      std::size_t jb = b.find_first_not_of('0', j);
      ia = std::min(ia, i2);
      jb = std::min(jb, j2);
      if (i2 - ia != j2 - jb)
        return i2 - ia < j2 - jb;
      int c = a.compare(ia, i2 - ia, b, jb, j2 - jb);
      if (c != 0)
        return c < 0;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j])
        return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j))
    return (a.size() - i) < (b.size() - j);
  return a < b;
}

std::vector<sg4::Host*> compute_hosts(const sg4::Engine& engine)
{
  std::vector<sg4::Host*> hosts = engine.get_filtered_hosts([](sg4::Host* h) {
    const char* kind = h->get_property("gridcast:kind");
    return kind == nullptr || std::string_view(kind) != "gpu";
  });
  std::sort(hosts.begin(), hosts.end(),
            [](const sg4::Host* a, const sg4::Host* b) { return natural_less(a->get_name(), b->get_name()); });
  return hosts;
}

std::vector<sg4::Host*> place_ranks(const sg4::Engine& engine, int np, const PlacementPolicy& policy)
{
  std::vector<sg4::Host*> out;
  out.reserve(np);
  if (not policy.hostfile.empty()) {
    std::vector<HostfileEntry> names = read_hostfile(policy.hostfile);
    std::vector<sg4::Host*> entries;
    entries.reserve(names.size());
    for (const HostfileEntry& e : names) {
      sg4::Host* h = engine.host_by_name_or_null(e.name);
      if (h == nullptr)
        throw InputError({policy.hostfile.string(), e.line, {}, -1}, "host '" + e.name + "' is not in the platform");
      entries.push_back(h);
    }
    for (int r = 0; r < np; ++r)
      out.push_back(entries[static_cast<std::size_t>(r) % entries.size()]);
    return out;
  }
  if (policy.ranks_per_host < 1)
    throw InputError({}, "--ranks-per-host must be at least 1");
  std::vector<sg4::Host*> hosts = compute_hosts(engine);
  std::size_t needed = (static_cast<std::size_t>(np) + policy.ranks_per_host - 1) / policy.ranks_per_host;
  if (needed > hosts.size())
    throw InputError({}, std::to_string(np) + " ranks at " + std::to_string(policy.ranks_per_host) +
                             " per host need " + std::to_string(needed) + " hosts, the platform has " +
                             std::to_string(hosts.size()));
  for (int r = 0; r < np; ++r)
    out.push_back(hosts[r / policy.ranks_per_host]);
  return out;
}

}  // namespace gridcast::platform
