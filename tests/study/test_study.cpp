// gridcast::study without running anything: the study file's checks (each bad file names its key or point),
// the expansion's order and ids, the manifest and result files read back, results.csv and the sbatch array.
#include "gridcast/study/runner.hpp"
#include "gridcast/study/study.hpp"

#include "../foundation/foundation_support.hpp"

#include <algorithm>
#include <string>

namespace fs = std::filesystem;
using gridcast::InputError;
using gridcast::test::expect_input_error;
using gridcast::test::read_file;
using gridcast::test::TempDir;
using gridcast::test::write_file;
namespace study = gridcast::study;

namespace {

const std::string kSpec = R"({
  "name": "t", "node_kinds": { "n": { "sockets": 1, "cores_per_socket": 2, "core_speed": "1Gf",
    "loopback": { "bandwidth": "10GBps", "latency": "1us" },
    "nics": { "count": 1, "attach": "node", "link": { "bandwidth": "10Gbps", "latency": "5us" } } } },
  "nodes": [ { "kind": "n", "count": 8 } ], "network": { "topology": "star" } })";

/// A study folder: a model file (any bytes: nothing runs it here), the spec and study.json.
fs::path write_study(const TempDir& dir, const std::string& body)
{
  write_file(dir / "model.json", "{\"model\": 1}\n");
  write_file(dir / "spec.json", kSpec);
  write_file(dir / "study.json", "{ \"name\": \"s\", \"predict\": \"model.json\", \"platform\": { \"spec\": "
                                 "\"spec.json\" }, " + body + " }");
  return dir / "study.json";
}

std::string error_of(const TempDir& dir, const std::string& body)
{
  const fs::path file = write_study(dir, body);
  const InputError e  = expect_input_error([&] { study::expand(study::read_study(file)); });
  return std::string(e.what());
}

}  // namespace

TEST_CASE("study: a grid crossed with variants expands in order with ids that follow the inputs only", "[study]")
{
  TempDir dir;
  const std::string body = R"("set": {"nw": 16, "cfg.network/model": "SMPI"},
    "axes": [{"key": "np", "values": [2, 4, 8]}, {"key": "seed", "values": [1, 2]}],
    "variants": [{"name": "base"}, {"name": "fast", "set": {"spec.node_kinds.n.nics.link.bandwidth": "40Gbps"}}])";
  const auto points = study::expand(study::read_study(write_study(dir, body)));
  REQUIRE(points.size() == 12);
  CHECK(points[0].variant == "base");
  CHECK(points[0].settings.np == 2);
  CHECK(points[0].settings.seed == 1);
  CHECK(points[1].settings.seed == 2);  // the last axis varies fastest
  CHECK(points[2].settings.np == 4);
  CHECK(points[6].variant == "fast");
  CHECK(points[6].spec["node_kinds"]["n"]["nics"]["link"]["bandwidth"] == "40Gbps");
  CHECK(points[0].settings.cfg == std::vector<std::pair<std::string, std::string>>{{"network/model", "SMPI"}});
  CHECK(study::point_label(points[7]) == "fast np=2 seed=2");
  // The report compares with the first variant unless the study says otherwise.
  const auto read = study::read_study(dir / "study.json");
  CHECK(read.compare_key == "variant");
  CHECK(read.compare_base == "base");
  // Two variants of the platform, shared by their points.
  CHECK(points[0].platform_id == points[5].platform_id);
  CHECK(points[0].platform_id != points[6].platform_id);

  // The same study elsewhere (another folder, other absolute paths) has the same ids; a changed model not.
  TempDir other;
  const auto moved = study::expand(study::read_study(write_study(other, body)));
  for (std::size_t i = 0; i < points.size(); ++i)
    CHECK(moved[i].id == points[i].id);
  write_file(other / "model.json", "{\"model\": 2}\n");
  CHECK(study::expand(study::read_study(other / "study.json"))[0].id != points[0].id);

  // The manifest reads back as written.
  const auto manifest = study::make_manifest(study::read_study(dir / "study.json"), points, dir / "out");
  study::write_manifest(manifest, dir / "out");
  const auto back = study::read_manifest(dir / "out");
  REQUIRE(back.points.size() == 12);
  CHECK(back.points[7].args == manifest.points[7].args);
  CHECK(back.points[7].coordinates == manifest.points[7].coordinates);
  CHECK(back.platforms.size() == 2);
  CHECK(fs::exists(back.platforms[1].spec));
  const auto& args = manifest.points[7].args;
  CHECK(args[0] == "predict");
  CHECK(std::find(args.begin(), args.end(), "network/model:SMPI") != args.end());
}

TEST_CASE("study: bad study files stop before anything runs and name the key or the point", "[study]")
{
  TempDir dir;
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2}, "axes": [{"key": "bandwidth", "values": [1]}])"),
             Catch::Contains("axes[0].values[0]") && Catch::Contains("unknown setting"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1}, "axes": [{"key": "np", "values": []}])"),
             Catch::Contains("axes[0].values") && Catch::Contains("at least one value"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1}, "axes": [{"key": "np", "values": [4, 16]}])"),
             Catch::Contains("point 1 (np=16)") && Catch::Contains("8 nodes") && Catch::Contains("not 16"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1}, "axes": [{"key": "np", "values": [4, 4]}])"),
             Catch::Contains("axes[0].values[1]") && Catch::Contains("given twice"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2}, "axes": [{"key": "spec.nodes.3.count", "values": [2]}])"),
             Catch::Contains("point 0") && Catch::Contains("not an index"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2, "spec.node_kinds.n.nics.link.bandwidth": "fast"})"),
             Catch::Contains("point 0") && Catch::Contains("bandwidth"));
  CHECK_THAT(error_of(dir, R"("axes": [{"key": "np", "values": [2]}])"), Catch::Contains("nw is not set"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2}, "variants": [{"name": "a"}, {"name": "b"}])"),
             Catch::Contains("the same run as point 0"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2, "gpu_mpi": "gpudirect"})"),
             Catch::Contains("set.gpu_mpi") && Catch::Contains("only a replay"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2}, "colour": 1)"), Catch::Contains("colour"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2}, "scaling": "linear")"), Catch::Contains("scaling"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1, "np": 2, "cfg.a:b": 1})"), Catch::Contains("set.cfg.a:b"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1}, "axes": [{"key": "np", "values": [2]}], "compare": {"key": "seed", "base": 1})"),
             Catch::Contains("compare.key") && Catch::Contains("not an axis"));
  CHECK_THAT(error_of(dir, R"("set": {"nw": 1}, "axes": [{"key": "np", "values": [2]}], "compare": {"key": "np", "base": 4})"),
             Catch::Contains("compare.base") && Catch::Contains("not one of the values of `np`"));
}

TEST_CASE("study: a result file cut short or of other inputs is not a result and results.csv quotes its fields", "[study]")
{
  TempDir dir;
  const fs::path file = write_study(dir, R"("set": {"nw": 1}, "axes": [{"key": "np", "values": [2, 4]}])");
  const auto s        = study::read_study(file);
  const auto manifest = study::make_manifest(s, study::expand(s), dir / "out");
  const auto& p0 = manifest.points[0];
  const auto& p1 = manifest.points[1];

  study::PointResult ok;
  ok.id = p0.id;
  ok.digest = p0.digest;
  ok.ok = true;
  ok.makespan_s = 0.25;
  ok.ranks = 2;
  ok.collectives = "allreduce:ring x2";
  study::write_result(dir / "out", p0, ok);
  study::write_result(dir / "out", p1, study::failed_result(p1, 1, "gridcast: error: a, \"quoted\" reason"));
  auto read = study::read_result(dir / "out", p0);
  REQUIRE(read);
  CHECK(read->makespan_s == 0.25);
  const std::string csv = study::results_csv(manifest, study::read_results(dir / "out", manifest));
  CHECK_THAT(csv, Catch::StartsWith("index,id,variant,np,status,makespan_s"));
  CHECK_THAT(csv, Catch::Contains("0," + p0.id + ",,2,ok,0.25,2,"));
  CHECK_THAT(csv, Catch::Contains("\"gridcast: error: a, \"\"quoted\"\" reason\""));

  // Cut short: no result, and the reason is given.
  const fs::path result = study::point_dir(dir / "out", p0.id) / "result.json";
  const std::string whole = read_file(result);
  write_file(result, whole.substr(0, whole.size() / 2));
  std::string problem;
  CHECK_FALSE(study::read_result(dir / "out", p0, &problem));
  CHECK_THAT(problem, Catch::Contains("result.json"));
  // Another point's result in this point's folder.
  write_file(result, read_file(study::point_dir(dir / "out", p1.id) / "result.json"));
  problem.clear();
  CHECK_FALSE(study::read_result(dir / "out", p0, &problem));
  CHECK_THAT(problem, Catch::Contains("another run"));
}

TEST_CASE("study: the sbatch script runs one task per point left as ranges of indices", "[study]")
{
  TempDir dir;
  const fs::path file = write_study(dir, R"("set": {"nw": 1}, "axes": [{"key": "np", "values": [1, 2, 3, 4, 5, 6, 7, 8]}])");
  const auto s        = study::read_study(file);
  const auto manifest = study::make_manifest(s, study::expand(s), dir / "out");
  study::SlurmOptions so;
  so.executable   = "/opt/gridcast/bin/gridcast";
  so.max_parallel = 2;
  so.partition    = "debug";
  const std::string script = study::sbatch_script(manifest, dir / "out", {0, 1, 2, 3, 5, 7}, so);
  CHECK_THAT(script, Catch::Contains("#SBATCH --array=0-3,5,7%2\n"));
  CHECK_THAT(script, Catch::Contains("#SBATCH --partition=debug\n"));
  CHECK_THAT(script, Catch::Contains("'/opt/gridcast/bin/gridcast' study run --out '"));
  CHECK_THAT(script, Catch::Contains("--task-index \"$SLURM_ARRAY_TASK_ID\""));
  CHECK_THAT(script, !Catch::Contains("--time"));
}

TEST_CASE("study: a trace path template picks each point's trace and its np must be the trace's", "[study]")
{
  TempDir dir;
  const auto ranks = gridcast::test::one_message_ranks("8");
  gridcast::test::write_jsonl_profile(dir / "ring-2", ranks);
  gridcast::test::write_jsonl_profile(dir / "ring-4", {ranks[0], ranks[1], ranks[0], ranks[1]});
  gridcast::test::write_jsonl_profile(dir / "halo-2", ranks, 2e9);
  write_file(dir / "spec.json", kSpec);
  auto write = [&](const std::string& replay, const std::string& axes) {
    write_file(dir / "study.json", "{\"name\": \"r\", \"replay\": \"" + replay +
                                       "\", \"platform\": {\"spec\": \"spec.json\"}, \"axes\": [" + axes + "]}");
    return dir / "study.json";
  };
  const auto points = study::expand(study::read_study(
      write("{tag.app}-{np}", R"({"key": "tag.app", "values": ["ring"]}, {"key": "np", "values": [2, 4]})")));
  REQUIRE(points.size() == 2);
  CHECK(points[1].input == dir / "ring-4");
  CHECK(points[1].settings.np == 4);
  CHECK(points[0].settings.tags == std::vector<std::pair<std::string, std::string>>{{"app", "ring"}});
  CHECK(study::point_label(points[1]) == "tag.app=ring np=4");

  // halo-4 does not exist; halo-2 has 2 ranks, not 4; {app} is not a setting of the point.
  auto error = [&](const fs::path& file) {
    return std::string(expect_input_error([&] { study::expand(study::read_study(file)); }).what());
  };
  CHECK_THAT(error(write("{tag.app}-{np}", R"({"key": "tag.app", "values": ["halo"]}, {"key": "np", "values": [4]})")),
             Catch::Contains("point 0 (tag.app=halo np=4)") && Catch::Contains("halo-4: no such file"));
  CHECK_THAT(error(write("halo-2", R"({"key": "np", "values": [4]})")),
             Catch::Contains("np is 4 but the trace") && Catch::Contains("has 2 ranks"));
  CHECK_THAT(error(write("{app}-2", R"({"key": "tag.app", "values": ["ring"]})")),
             Catch::Contains("names {app}, which this point does not set"));
  CHECK_THAT(error(write("ring-2", R"({"key": "nw", "values": [1]})")), Catch::Contains("a replay runs the trace"));
}

TEST_CASE("study: a point's figures come from the summaries of a prediction whose tables are CSV", "[study]")
{
  TempDir dir;
  const fs::path file = write_study(dir, R"("set": {"nw": 1, "np": 2})");
  const auto s        = study::read_study(file);
  const auto manifest = study::make_manifest(s, study::expand(s), dir / "out");
  // Two predictions of the same run, its tables inline and as CSV (--tables csv): the same figures.
  const std::string head = R"({"format": "gridcast-prediction", "makespan_s": 2.5, "events": 10, "messages": 4, )";
  write_file(dir / "json.json", head + R"("ranks": [{"compute_s": 1, "comm_s": 0.5, "wait_s": 0},
    {"compute_s": 2, "comm_s": 0.25, "wait_s": 1}], "links": [{"name": "a", "bytes": 10, "utilisation": 0.5},
    {"name": "b", "bytes": 30, "utilisation": 0.75}]})");
  write_file(dir / "csv.json", head + R"("ranks_table": "ranks.csv", "ranks_summary": {"count": 2,
    "compute_s": {"mean": 1.5}, "comm_s": {"mean": 0.375}, "wait_s": {"mean": 0.5}}, "links_table": "links.csv",
    "links_summary": {"count": 2, "bytes": 40, "busiest": [{"name": "b", "bytes": 30, "utilisation": 0.75}]}})");
  const auto a = study::result_from_prediction(manifest.points[0], dir / "json.json");
  const auto b = study::result_from_prediction(manifest.points[0], dir / "csv.json");
  for (const auto& r : {a, b}) {
    CHECK(r.ranks == 2);
    CHECK(r.compute_s == 1.5);
    CHECK(r.comm_s == 0.375);
    CHECK(r.wait_s == 0.5);
    CHECK(r.link_bytes == 40);
    CHECK(r.busiest_link == "b");
    CHECK(r.busiest_link_utilisation == 0.75);
  }
}
