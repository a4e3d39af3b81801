// Loading a SimGrid platform and placing MPI ranks on its hosts.
#pragma once

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gridcast::platform {

namespace sg4 = simgrid::s4u;

/// Loads `xml` into `engine`. A file SimGrid rejects becomes an InputError naming the file, the line
/// (when SimGrid gives one) and SimGrid's reason.
void load_platform(sg4::Engine& engine, const std::filesystem::path& xml);

struct HostfileEntry {
  std::string name;
  std::uint64_t line = 0;  ///< 1-based line in the hostfile
};

/// Reads an smpirun-style hostfile: one host name per line, optionally "name:N" for N slots (expanded
/// to N consecutive lines); blank lines and '#' comments ignored.
std::vector<HostfileEntry> read_hostfile(const std::filesystem::path& file);

/// How ranks map to hosts.
struct PlacementPolicy {
  std::filesystem::path hostfile;  ///< when set: rank i on entry (i mod entries), like smpirun
  int ranks_per_host = 1;          ///< otherwise: K consecutive ranks per host, hosts in natural order
};

/// The hosts that can run ranks (CPU hosts; GPU hosts carry the property gridcast:kind=gpu), in natural
/// name order (node-2 before node-10).
std::vector<sg4::Host*> compute_hosts(const sg4::Engine& engine);

/// Host of every rank. Errors (unknown host in the hostfile, not enough hosts) are InputErrors naming
/// the file and line.
std::vector<sg4::Host*> place_ranks(const sg4::Engine& engine, int np, const PlacementPolicy& policy);

/// Throws InputError (file, line of the zone) where two hosts that ranks run on share a zone routed by its
/// own <route> elements (Full, Floyd, Dijkstra) without a route between them: SimGrid 3.32's release build
/// dereferences the missing route at their first message (SIGSEGV).
void check_rank_routes(const std::filesystem::path& xml, const std::vector<sg4::Host*>& rank_hosts);

/// Natural ("version") ordering of names: digit runs compare by value.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace gridcast::platform
