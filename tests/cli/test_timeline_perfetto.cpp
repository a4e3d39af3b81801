// --timeline-format perfetto: timeline.pftrace in Perfetto's protobuf format, read back with the schema it
// was written with (emulator/proto/perfetto_trace.proto) and compared event for event with timeline.json
// of the same run: the same tracks, slices, waits, critical path, message arrows and rank summaries.
#include "../support.hpp"

#include "proto/perfetto_trace.pb.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
namespace pf = gridcast::perfetto;

namespace {

const std::string kPerfettoExample = std::string(GRIDCAST_SOURCE_DIR) + "/examples/wait-states/";

std::string replay_critical_path_to(const std::filesystem::path& out, const std::string& extra)
{
  return "replay " + kPerfettoExample + "profile --platform " + kPerfettoExample +
         "platform.xml --analysis critical-path --out " + out.string() + " " + extra;
}

struct Slice {
  std::string name, category;
  long long begin_ns = 0;
  bool operator==(const Slice& o) const
  {
    return name == o.name && category == o.category && std::llabs(begin_ns - o.begin_ns) <= 1;
  }
};

struct Timeline {
  std::map<long long, std::string> tracks;          ///< tid -> name
  std::map<long long, std::vector<Slice>> slices;   ///< tid -> its slices, in the file's order
  std::vector<long long> flows_out, flows_in;       ///< message ids (JSON's)
  std::map<long long, std::uint64_t> summary_calls;  ///< tid -> the calls argument of its summary
};

Timeline from_json(const std::string& text)
{
  Timeline t;
  const auto doc = nlohmann::json::parse(text);
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name")
      t.tracks[e["tid"]] = e["args"]["name"];
    else if (ph == "X") {
      const long long tid = e["tid"];
      const std::string cat = e.value("cat", "");
      t.slices[tid].push_back({e["name"], cat, std::llround(e["ts"].get<double>() * 1e3)});
      if (cat == "summary")
        t.summary_calls[tid] = e["args"]["calls"];
    } else if (ph == "s")
      t.flows_out.push_back(e["id"]);
    else if (ph == "f")
      t.flows_in.push_back(e["id"]);
  }
  return t;
}

Timeline from_perfetto(const std::string& bytes)
{
  pf::Trace trace;
  REQUIRE(trace.ParseFromString(bytes));
  Timeline t;
  REQUIRE(trace.packet_size() > 0);
  CHECK(trace.packet(0).sequence_flags() == 1);
  std::map<long long, int> open;  // tid -> slices begun and not ended
  for (const pf::TracePacket& p : trace.packet()) {
    CHECK(p.trusted_packet_sequence_id() == 1);
    if (p.has_track_descriptor()) {
      const auto& d = p.track_descriptor();
      if (d.uuid() == 1)
        CHECK(d.name() == "gridcast replay");
      else {
        CHECK(d.parent_uuid() == 1);
        t.tracks[static_cast<long long>(d.uuid()) - 2] = d.name();
      }
      continue;
    }
    REQUIRE(p.has_track_event());
    const auto& e   = p.track_event();
    const long long tid = static_cast<long long>(e.track_uuid()) - 2;
    switch (e.type()) {
    case pf::TrackEvent::TYPE_SLICE_BEGIN: {
      ++open[tid];
      const std::string cat = e.categories_size() > 0 ? e.categories(0) : "";
      t.slices[tid].push_back({e.name(), cat, static_cast<long long>(p.timestamp())});
      if (cat == "summary")
        for (const auto& a : e.debug_annotations())
          if (a.name() == "calls")
            t.summary_calls[tid] = a.uint_value();
      break;
    }
    case pf::TrackEvent::TYPE_SLICE_END:
      CHECK(open[tid]-- > 0);
      CHECK(p.timestamp() >= static_cast<std::uint64_t>(t.slices[tid].back().begin_ns));
      break;
    case pf::TrackEvent::TYPE_INSTANT:
      CHECK(e.name() == "message");
      for (auto id : e.flow_ids())
        t.flows_out.push_back(static_cast<long long>(id) - 1);
      for (auto id : e.terminating_flow_ids())
        t.flows_in.push_back(static_cast<long long>(id) - 1);
      break;
    default:
      FAIL("unexpected track event type " << e.type());
    }
  }
  for (const auto& [tid, n] : open)
    CHECK(n == 0);
  return t;
}

void check_same(const Timeline& json, const Timeline& perfetto)
{
  CHECK(perfetto.tracks == json.tracks);
  CHECK(perfetto.slices == json.slices);
  CHECK(perfetto.flows_out == json.flows_out);
  CHECK(perfetto.flows_in == json.flows_in);
  CHECK(perfetto.summary_calls == json.summary_calls);
}

}  // namespace

TEST_CASE("cli: --timeline-format perfetto writes the timeline's events as Perfetto protobuf packets", "[cli]")
{
  TempDir dir;
  for (const std::string ranks : {"all", "1-2"}) {
    INFO("--timeline-ranks " << ranks);
    const auto json = dir / ("json-" + ranks), proto = dir / ("proto-" + ranks);
    auto a = run_gridcast(replay_critical_path_to(json, "--timeline-ranks " + ranks));
    auto b = run_gridcast(replay_critical_path_to(proto, "--timeline-ranks " + ranks + " --timeline-format perfetto"));
    INFO(a.output << b.output);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    CHECK_THAT(b.output, Catch::Contains("timeline.pftrace"));
    CHECK_FALSE(std::filesystem::exists(proto / "timeline.json"));
    // What was predicted does not change with the format.
    CHECK(read_file(json / "prediction.json") == read_file(proto / "prediction.json"));
    const Timeline from_j = from_json(read_file(json / "timeline.json"));
    const Timeline from_p = from_perfetto(read_file(proto / "timeline.pftrace"));
    CHECK_FALSE(from_j.flows_out.empty());
    CHECK(from_j.slices.size() > 4);  // the ranks' and the critical path's tracks
    check_same(from_j, from_p);
    if (ranks != "all")
      CHECK(from_p.summary_calls.size() == 2);
  }
  // The same inputs give the same bytes.
  REQUIRE(run_gridcast(replay_critical_path_to(dir / "again", "--timeline-ranks all --timeline-format perfetto"))
              .exit_code == 0);
  CHECK(read_file(dir / "again" / "timeline.pftrace") == read_file(dir / "proto-all" / "timeline.pftrace"));

  auto bad = run_gridcast(replay_critical_path_to(dir / "bad", "--timeline-format protobuf"));
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("--timeline-format protobuf: expected json or perfetto"));
}
