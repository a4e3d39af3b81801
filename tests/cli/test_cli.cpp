// The `gridcast` program as a user meets it: help, exit codes, error messages, determinism.
#include "../support.hpp"

#include <catch2/catch.hpp>

#include <array>

#include <cstdlib>

using gridcast::test::read_file;
using gridcast::test::run_gridcast;
using gridcast::test::TempDir;
using gridcast::test::write_file;

namespace {

/// A 4-rank TIT trace (index + per-rank files) with a ring, a wildcard receive and an allreduce.
void write_tit_ring(const TempDir& dir)
{
  std::string index;
  for (int r = 0; r < 4; ++r) {
    int next = (r + 1) % 4;
    int prev = (r + 3) % 4;
    std::string name = "ring_files/rank-" + std::to_string(r) + ".txt";
    index += name + "\n";
    std::string t = std::to_string(r) + " init\n";
    t += std::to_string(r) + " compute 1e6\n";
    t += std::to_string(r) + " isend " + std::to_string(next) + " 7 1000 0\n";
    t += std::to_string(r) + " irecv " + std::to_string(prev) + " 7 1000 0\n";
    t += std::to_string(r) + " waitall 2\n";
    if (r == 0) {
      t += "0 recv -333 9 1 1\n0 recv -333 9 1 1\n0 recv -333 9 1 1\n";
    } else {
      t += std::to_string(r) + " send 0 9 1 1\n";
    }
    t += std::to_string(r) + " allreduce 100 1000 0\n";
    t += std::to_string(r) + " finalize\n";
    write_file(dir / name, t);
  }
  write_file(dir / "ring.txt", index);
  write_file(dir / "platform.xml", gridcast::test::cluster_xml(4));
}

}  // namespace

TEST_CASE("cli: help explains every command", "[cli]")
{
  auto top = run_gridcast("--help");
  REQUIRE(top.exit_code == 0);
  for (const char* cmd : {"replay", "convert", "import", "algorithms"})
    REQUIRE_THAT(top.output, Catch::Contains(cmd));
  auto replay = run_gridcast("replay --help");
  REQUIRE(replay.exit_code == 0);
  for (const char* opt : {"--platform", "--hostfile", "--ranks-per-host", "--out", "--seed", "--cfg"})
    REQUIRE_THAT(replay.output, Catch::Contains(opt));
  REQUIRE(run_gridcast("convert --help").exit_code == 0);
  REQUIRE(run_gridcast("import --help").exit_code == 0);
  REQUIRE(run_gridcast("frobnicate").exit_code == 1);
}

TEST_CASE("cli: predict's help names every collective selector and poll cost replay accepts", "[cli]")
{
  // predict takes the same --cfg keys as replay; its help once listed only mpich|smpi, so a user
  // reading it did not learn about openmpi-4.1 or gridcast/iprobe-cost.
  auto predict = run_gridcast("predict --help");
  REQUIRE(predict.exit_code == 0);
  // The help wraps its lines wherever the column ends: compare without the wrapping.
  std::string text;
  for (std::size_t i = 0; i < predict.output.size(); ++i) {
    if (predict.output[i] == '\n') {
      while (i + 1 < predict.output.size() && predict.output[i + 1] == ' ')
        ++i;
      continue;
    }
    text += predict.output[i];
  }
  for (const char* key : {"gridcast/iprobe-cost", "gridcast/coll-selector:auto|mpich|smpi|openmpi-4.1",
                          "gridcast/coll-local-copy"})
    CHECK_THAT(text, Catch::Contains(key));
}

TEST_CASE("cli: version --help explains the command, a stray argument is a usage error", "[cli]")
{
  // `gridcast version --help` printed the version as if no option had been given.
  auto help = run_gridcast("version --help");
  REQUIRE(help.exit_code == 0);
  CHECK_THAT(help.output, Catch::Contains("usage: gridcast version"));
  auto bad = run_gridcast("version --frobnicate");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("takes no argument"));
  auto plain = run_gridcast("version");
  CHECK(plain.exit_code == 0);
  CHECK_THAT(plain.output, Catch::Contains("SimGrid"));
}

TEST_CASE("cli: profile finds the hook at its build-time path without the fallback beside the program", "[cli]")
{
  // In a build tree the hook also lies at ../lib beside the program, so the fallback would hide a build
  // that forgot to say where the hook is: with it off, only $GRIDCAST_HOOK and the build-time path count.
  ::unsetenv("GRIDCAST_HOOK");
  ::setenv("GRIDCAST_HOOK_FALLBACK", "off", 1);
  auto found = run_gridcast("profile --print-hook");
#ifdef GRIDCAST_TEST_HOOK_PATH
  INFO(found.output);
  CHECK(found.exit_code == 0);
  CHECK(found.output == "hook: " + std::string(GRIDCAST_TEST_HOOK_PATH) + "\nfound by: build-time path\n");
#else
  CHECK(found.exit_code == 1);
  CHECK_THAT(found.output, Catch::Contains("built without MPI"));
#endif
  // $GRIDCAST_HOOK comes first, whatever the build found.
  ::setenv("GRIDCAST_HOOK", "/opt/elsewhere/libgridcast-hook.so", 1);
  auto chosen = run_gridcast("profile --print-hook");
  ::unsetenv("GRIDCAST_HOOK");
  ::unsetenv("GRIDCAST_HOOK_FALLBACK");
  CHECK(chosen.exit_code == 0);
  CHECK(chosen.output == "hook: /opt/elsewhere/libgridcast-hook.so\nfound by: GRIDCAST_HOOK\n");
  auto help = run_gridcast("profile --help");
  CHECK_THAT(help.output, Catch::Contains("--print-hook") && Catch::Contains("GRIDCAST_HOOK_FALLBACK=off"));
}

TEST_CASE("cli: replay prints the makespan and writes deterministic outputs", "[cli]")
{
  TempDir dir;
  write_tit_ring(dir);
  const std::string base = (dir / "ring.txt").string() + " --platform " + (dir / "platform.xml").string();
  auto first = run_gridcast("replay " + base + " --out " + (dir / "a").string());
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  REQUIRE_THAT(first.output, Catch::Contains("makespan: "));
  auto second = run_gridcast("replay " + base + " --out " + (dir / "b").string());
  REQUIRE(second.exit_code == 0);
  const std::string prediction = read_file(dir / "a" / "prediction.json");
  REQUIRE_THAT(prediction, Catch::Contains("\"makespan_s\""));
  REQUIRE_THAT(prediction, Catch::Contains("\"sha1\""));
  REQUIRE(prediction == read_file(dir / "b" / "prediction.json"));
  REQUIRE(read_file(dir / "a" / "timeline.json") == read_file(dir / "b" / "timeline.json"));
  REQUIRE_THAT(read_file(dir / "a" / "timeline.json"), Catch::Contains("\"traceEvents\""));

  // An arrow per message, the messages of the allreduce's algorithm included: as many flow starts and
  // ends as prediction.json counts messages (7 point-to-point ones here, the rest the allreduce's).
  const std::string timeline = read_file(dir / "a" / "timeline.json");
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = timeline.find(what); at != std::string::npos; at = timeline.find(what, at + 1))
      ++n;
    return n;
  };
  const auto at = prediction.find("\"messages\": ");
  REQUIRE(at != std::string::npos);
  const std::size_t messages = std::stoul(prediction.substr(at + 12));
  CHECK(messages > 7);
  CHECK(count("\"ph\":\"s\"") == messages);
  CHECK(count("\"ph\":\"f\"") == messages);
}

TEST_CASE("cli: --analysis waits prints the wait states and writes analysis.json and refuses what it does not know",
          "[cli]")
{
  TempDir dir;
  write_tit_ring(dir);
  const std::string base = (dir / "ring.txt").string() + " --platform " + (dir / "platform.xml").string();
  auto run = run_gridcast("replay " + base + " --analysis waits --out " + (dir / "a").string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  // Rank 0 receives from every other rank with a wildcard while they still send: late senders.
  CHECK_THAT(run.output, Catch::Contains("wait states: ") && Catch::Contains("% of the ranks' time") &&
                             Catch::Contains("most: rank "));
  const std::string analysis = read_file(dir / "a" / "analysis.json");
  CHECK_THAT(analysis, Catch::Contains("\"format\": \"gridcast-analysis\"") && Catch::Contains("\"wait_states\""));
  REQUIRE(run_gridcast("replay " + base + " --analysis waits --out " + (dir / "b").string()).exit_code == 0);
  CHECK(analysis == read_file(dir / "b" / "analysis.json"));
  // Without --analysis: no analysis.json, and prediction.json the same bytes.
  REQUIRE(run_gridcast("replay " + base + " --out " + (dir / "c").string()).exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(dir / "c" / "analysis.json"));
  CHECK(read_file(dir / "a" / "prediction.json") == read_file(dir / "c" / "prediction.json"));
  // An analysis gridcast does not do is refused by name, never ignored.
  auto bogus = run_gridcast("replay " + base + " --analysis waits,bogus");
  CHECK(bogus.exit_code == 1);
  CHECK_THAT(bogus.output, Catch::Contains("unknown analysis 'bogus'"));
  // predict: fast-forward would skip iterations whose waits are then missing; asked for, it is refused.
  const std::string model = std::string(GRIDCAST_SOURCE_DIR) + "/examples/predict-stencil/model.json";
  const std::string platform = std::string(GRIDCAST_SOURCE_DIR) + "/examples/stencil3d/platform.xml";
  auto ff = run_gridcast("predict " + model + " --nw 8 --np 4 --platform " + platform +
                         " --analysis waits --fast-forward auto");
  CHECK(ff.exit_code == 1);
  CHECK_THAT(ff.output, Catch::Contains("--fast-forward off"));
  auto predicted = run_gridcast("predict " + model + " --nw 8 --np 4 --platform " + platform + " --analysis waits");
  CHECK(predicted.exit_code == 0);
  CHECK_THAT(predicted.output, Catch::Contains("fast-forward off") && Catch::Contains("wait states: "));
}

namespace {

/// A number after `"key": ` in a JSON text (the first occurrence).
double json_number(const std::string& text, const std::string& key)
{
  const std::string k = "\"" + key + "\": ";
  const std::size_t at = text.find(k);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + k.size()));
}

}  // namespace

TEST_CASE("cli: --analysis critical-path is as long as the makespan on HPL and LAMMPS profiles", "[cli]")
{
  TempDir dir;
  const std::string src = GRIDCAST_SOURCE_DIR;
  REQUIRE(std::system(("tar -xJf " + src + "/examples/hpl-hpcc/hpl-np2.tar.xz -C " + dir.path().string() +
                       " && tar -xJf " + src + "/examples/lammps-lj/profiles.tar.xz -C " + dir.path().string())
                          .c_str()) == 0);
  int n = 0;
  for (const std::string profile : {"hpl-np2/n320", "profiles/np2-atoms4000"}) {
    const std::string out = (dir / ("out" + std::to_string(n++))).string();
    auto run = run_gridcast("replay " + (dir / profile).string() + " --platform " + src +
                            "/platforms/this-machine/platform.xml --ranks-per-host 2 --no-timeline "
                            "--analysis critical-path --out " + out);
    INFO(profile << "\n" << run.output);
    REQUIRE(run.exit_code == 0);
    CHECK_THAT(run.output, Catch::Contains("critical path: ") && Catch::Contains("in functions: compute"));
    const std::string analysis = read_file(std::filesystem::path(out) / "analysis.json");
    const double makespan = json_number(analysis, "makespan_s");
    CHECK(json_number(analysis, "length_s") == Approx(makespan).epsilon(1e-9));
    CHECK(json_number(analysis, "rank_changes") > 0);
  }
}

TEST_CASE("cli: import, convert and replay agree on the makespan", "[cli]")
{
  TempDir dir;
  write_tit_ring(dir);
  const std::string platform = " --platform " + (dir / "platform.xml").string();
  REQUIRE(run_gridcast("import tit " + (dir / "ring.txt").string() + " --nw 1000 --out " + (dir / "bin").string())
              .exit_code == 0);
  REQUIRE(run_gridcast("convert " + (dir / "bin").string() + " --to jsonl --out " + (dir / "json").string())
              .exit_code == 0);
  auto tit = run_gridcast("replay " + (dir / "ring.txt").string() + platform);
  auto bin = run_gridcast("replay " + (dir / "bin").string() + platform);
  auto json = run_gridcast("replay " + (dir / "json").string() + platform);
  REQUIRE(tit.exit_code == 0);
  REQUIRE(bin.exit_code == 0);
  REQUIRE(json.exit_code == 0);
  auto makespan = [](const std::string& out) { return out.substr(0, out.find('\n')); };
  REQUIRE(makespan(tit.output) == makespan(bin.output));
  REQUIRE(makespan(tit.output) == makespan(json.output));
}

TEST_CASE("cli: import warns about a trace whose receives have no sends, as SMPI writes MPI_PROC_NULL sendrecvs",
          "[cli]")
{
  // A non-periodic line of 3 ranks, as smpirun -trace-ti writes it: the middle rank's two sendrecvs, and no
  // line at all for the ends' sendrecvs with MPI_PROC_NULL on one side.
  TempDir dir;
  auto write = [&](const std::string& index, const std::array<std::string, 3>& middle_and_ends) {
    std::string list;
    for (int r = 0; r < 3; ++r) {
      const std::string name = index + "_files/rank-" + std::to_string(r) + ".txt";
      list += name + "\n";
      write_file(dir / name, std::to_string(r) + " init\n" + middle_and_ends[static_cast<std::size_t>(r)] +
                                 std::to_string(r) + " finalize\n");
    }
    write_file(dir / (index + ".txt"), list);
  };
  write("line", {"", "1 sendRecv 16 2 16 0 0 0\n1 sendRecv 16 0 16 2 0 0\n", ""});
  auto lossy = run_gridcast("import tit '" + (dir / "line.txt").string() + "' --nw 1 --out '" + (dir / "a").string() + "'");
  CHECK(lossy.exit_code == 0);
  CHECK_THAT(lossy.output, Catch::Contains("warning: 2 receive(s) without a send and 2 send(s) without a receive") &&
                               Catch::Contains("first: rank 1 receives from rank 0, tag 0") &&
                               Catch::Contains("rank-1.txt, line 2") && Catch::Contains("MPI_PROC_NULL"));
  // With the ends' halves written (as gridcast's own profiler records them), nothing to say.
  write("whole", {"0 send 1 0 16 0\n0 recv 1 0 16 0\n", "1 sendRecv 16 2 16 0 0 0\n1 sendRecv 16 0 16 2 0 0\n",
                  "2 recv 1 0 16 0\n2 send 1 0 16 0\n"});
  auto whole = run_gridcast("import tit '" + (dir / "whole.txt").string() + "' --nw 1 --out '" + (dir / "b").string() + "'");
  CHECK(whole.exit_code == 0);
  CHECK_THAT(whole.output, not Catch::Contains("warning"));
}

TEST_CASE("cli: import hook refuses a folder of no raw files and a missing host speed", "[cli]")
{
  TempDir dir;
  std::filesystem::create_directories(dir / "raw");
  write_file(dir / "raw" / "notes.txt", "not the hook's\n");
  const std::string raw = "'" + (dir / "raw").string() + "'";
  const std::string out = " --out '" + (dir / "out").string() + "'";
  // Without --host-speed the hook's compute seconds have no flop/s to become work: no default is guessed.
  auto speedless = run_gridcast("import hook " + raw + " --nw 1" + out);
  CHECK(speedless.exit_code == 1);
  CHECK_THAT(speedless.output, Catch::Contains("--host-speed"));
  auto empty = run_gridcast("import hook " + raw + " --nw 1 --host-speed 1e9" + out);
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.output, Catch::Contains((dir / "raw").string()) && Catch::Contains("rank-R.meta"));
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "run.json"));
  auto unknown = run_gridcast("import otf2 " + raw + " --nw 1" + out);
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Catch::Contains("known: tit, hook"));
}

TEST_CASE("cli: bad input is exit code 1 with the file, line and rank", "[cli]")
{
  TempDir dir;
  write_tit_ring(dir);
  const std::string platform = " --platform " + (dir / "platform.xml").string();

  SECTION("unknown action")
  {
    write_file(dir / "ring_files/rank-2.txt", "2 init\n2 frobnicate 3\n");
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + platform);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("rank-2.txt:2"));
    REQUIRE_THAT(r.output, Catch::Contains("rank 2"));
  }
  SECTION("malformed arguments")
  {
    write_file(dir / "ring_files/rank-1.txt", "1 init\n1 send zero 9 1 1\n");
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + platform);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("rank-1.txt:2"));
  }
  SECTION("missing per-rank file")
  {
    std::filesystem::remove(dir / "ring_files/rank-3.txt");
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + platform);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("rank-3.txt"));
  }
  SECTION("unknown host in the hostfile")
  {
    write_file(dir / "hosts", "node-0\nnode-1\nnowhere\n");
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + platform + " --hostfile " + (dir / "hosts").string());
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("hosts:3"));
    REQUIRE_THAT(r.output, Catch::Contains("nowhere"));
  }
  SECTION("a platform SimGrid rejects")
  {
    write_file(dir / "bad.xml", "<?xml version='1.0'?>\n<platform version=\"4.1\">\n  <host id=\"a\" speed=\"fast\"/>\n</platform>\n");
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + " --platform " + (dir / "bad.xml").string());
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("bad.xml"));
  }
  SECTION("not enough hosts")
  {
    write_file(dir / "small.xml", gridcast::test::cluster_xml(2));
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + " --platform " + (dir / "small.xml").string());
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("need 4 hosts"));
  }
  SECTION("unknown gridcast setting")
  {
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + platform + " --cfg gridcast/nonsense:1");
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("gridcast/nonsense"));
  }
  SECTION("unknown collective algorithm")
  {
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + platform + " --cfg gridcast/coll/allreduce:magic");
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("magic"));
  }
  SECTION("a receive never matched")
  {
    write_file(dir / "ring_files/rank-3.txt", "3 init\n3 recv 1 42 8 1\n3 finalize\n");
    auto r = run_gridcast("replay " + (dir / "ring.txt").string() + platform);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("blocked"));
    REQUIRE_THAT(r.output, Catch::Contains("rank 3"));
    REQUIRE_THAT(r.output, Catch::Contains("rank-3.txt:2"));
    REQUIRE_THAT(r.output, Catch::Contains("tag 42"));
  }
}

TEST_CASE("cli: one tool, with -o/--out and -q/--quiet everywhere, `help CMD`, and a bare command showing its help", "[cli]")
{
  for (const char* cmd : {"profile", "import", "convert", "fit", "synth", "replay", "predict", "platform", "calibrate"}) {
    INFO(cmd);
    auto help = run_gridcast(std::string(cmd) + " --help");
    REQUIRE(help.exit_code == 0);
    CHECK_THAT(help.output, Catch::Contains("-o [ --out ]"));
    CHECK_THAT(help.output, not Catch::Contains("--output"));
    // `gridcast help CMD` is the same text.
    auto via_help = run_gridcast(std::string("help ") + cmd);
    CHECK(via_help.exit_code == 0);
    CHECK(via_help.output == help.output);
    // Given nothing, a command that needs inputs prints its whole help and exits 1 (not "'--x' is required").
    auto bare = run_gridcast(cmd);
    CHECK(bare.exit_code == 1);
    CHECK_THAT(bare.output, Catch::StartsWith("usage: gridcast " + std::string(cmd)));
  }
  for (const char* cmd : {"platform", "calibrate"}) {
    INFO(cmd);
    CHECK_THAT(run_gridcast(std::string(cmd) + " --help").output, Catch::Contains("-q [ --quiet ]"));
  }
  CHECK(run_gridcast("algorithms").exit_code == 0);
  CHECK(run_gridcast("version").exit_code == 0);
  CHECK(run_gridcast("help no-such-command").exit_code == 1);
}

TEST_CASE("cli: a trace of more ranks than the soft open-file limit replays, and past the hard one the error says so",
          "[cli]")
{
  TempDir dir;
  const int ranks = 64;
  std::string index;
  for (int r = 0; r < ranks; ++r) {
    const std::string name = "r" + std::to_string(r) + ".txt";
    write_file(dir / name, std::to_string(r) + " init\n" + std::to_string(r) + " compute 1e6\n" + std::to_string(r) +
                               " finalize\n");
    index += name + "\n";
  }
  write_file(dir / "index.txt", index);
  write_file(dir / "cluster.xml", gridcast::test::cluster_xml(ranks));
  const std::string replay = std::string(GRIDCAST_BIN) + " replay '" + (dir / "index.txt").string() + "' --platform '" +
                             (dir / "cluster.xml").string() + "' 2>&1";
  auto run_sh = [](const std::string& script) {
    gridcast::test::RunResult r;
    FILE* pipe = popen(("sh -c \"" + script + "\"").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
      r.output.append(buf, n);
    const int status = pclose(pipe);
    r.exit_code      = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
  };
  // A soft limit below the rank count: gridcast takes the hard limit and replays.
  auto soft = run_sh("ulimit -Sn 40 && " + replay);
  INFO(soft.output);
  CHECK(soft.exit_code == 0);
  CHECK_THAT(soft.output, Catch::Contains("ranks: 64"));
#ifdef GRIDCAST_SANITIZED
  // Under the sanitizers the next run cannot be checked: at the open-file limit, UBSan's vptr check finds no
  // free descriptor for the pipe it probes memory with, and reports the unwinding of the failed open as an
  // invalid object (a false report; the Release run of this test checks the message).
  return;
#endif
  // A hard limit below it: exit 1, the limit named, and how to raise it.
  auto hard = run_sh("ulimit -Sn 40 && ulimit -Hn 40 && " + replay);  // soft first: never above hard
  INFO(hard.output);
  CHECK(hard.exit_code == 1);
  CHECK_THAT(hard.output, Catch::Contains("Too many open files") && Catch::Contains("the limit is 40") &&
                              Catch::Contains("ulimit -n"));
}

TEST_CASE("cli: sends never received are a warning and a count in prediction.json, at no quadratic cost", "[cli]")
{
  TempDir dir;
  std::string r0 = "0 init\n";
  for (int i = 0; i < 20000; ++i)
    r0 += "0 send 1 " + std::to_string(i % 3) + " 100\n";
  write_file(dir / "r0.txt", r0 + "0 finalize\n");
  write_file(dir / "r1.txt", "1 init\n1 recv 0 0 100\n1 compute 1e6\n1 finalize\n");
  write_file(dir / "index.txt", "r0.txt\nr1.txt\n");
  write_file(dir / "cluster.xml", gridcast::test::cluster_xml(2));
  auto r = run_gridcast("replay '" + (dir / "index.txt").string() + "' --platform '" + (dir / "cluster.xml").string() +
                        "' --no-timeline --out '" + (dir / "out").string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("messages: 1"));
  CHECK_THAT(r.output, Catch::Contains("warning: 19999 send(s) never received") &&
                           Catch::Contains("first: rank 0 to rank 1, tag 1, 100 B"));
  const std::string prediction = read_file(dir / "out" / "prediction.json");
  CHECK_THAT(prediction, Catch::Contains("\"unmatched_sends\": 19999"));
}

TEST_CASE("cli: --out that holds a trace is refused without --force, replaced whole with it", "[cli]")
{
  TempDir dir;
  const std::string eight = std::string(GRIDCAST_SOURCE_DIR) + "/examples/ring-halo/trace/trace.txt";
  write_tit_ring(dir);  // 4 ranks: dir/ring.txt
  const std::string out = (dir / "prof").string();
  REQUIRE(run_gridcast("import tit '" + eight + "' --nw 1 --out '" + out + "'").exit_code == 0);
  REQUIRE(std::filesystem::exists(dir / "prof" / "rank-00007.gct"));

  // Again into it: refused, and the earlier profile is left as it was.
  auto again = run_gridcast("import tit '" + (dir / "ring.txt").string() + "' --nw 1 --out '" + out + "'");
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Catch::Contains(out) && Catch::Contains("already holds a trace") && Catch::Contains("--force"));
  CHECK(std::filesystem::exists(dir / "prof" / "rank-00007.gct"));

  // With --force: the new profile of 4 ranks, and none of the old ranks' files.
  auto forced = run_gridcast("import tit '" + (dir / "ring.txt").string() + "' --nw 1 --out '" + out + "' --force");
  INFO(forced.output);
  REQUIRE(forced.exit_code == 0);
  CHECK(std::filesystem::exists(dir / "prof" / "rank-00003.gct"));
  CHECK_FALSE(std::filesystem::exists(dir / "prof" / "rank-00004.gct"));
  CHECK_FALSE(std::filesystem::exists(dir / "prof" / "rank-00007.gct"));
  CHECK_THAT(read_file(dir / "prof" / "run.json"), Catch::Contains("\"np\": 4"));

  // The same rule for convert and synth; a directory of someone else's files is never written into.
  CHECK(run_gridcast("convert '" + out + "' --to jsonl --out '" + out + "'").exit_code == 1);
  write_file(dir / "notes" / "mine.txt", "not a trace\n");
  auto foreign = run_gridcast("convert '" + out + "' --to jsonl --out '" + (dir / "notes").string() + "' --force");
  CHECK(foreign.exit_code == 1);
  CHECK_THAT(foreign.output, Catch::Contains("holds no trace gridcast wrote"));
  CHECK(read_file(dir / "notes" / "mine.txt") == "not a trace\n");
}
