// `gridcast profile` on small MPI programs (mpirun -np 2, a second or so each): the records the hook
// writes, abnormal ends, the CUDA/NCCL test double, command-line errors and deterministic conversion.
#include "gridcast/models/native.hpp"
#include "gridcast/models/profile.hpp"
#include "gridcast/profiler/profiler.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace gridcast;
using models::CallRecord;
using models::Op;

namespace {

struct Result {
  int code = -1;
  std::string output;  ///< stdout and stderr
};

fs::path scratch(const std::string& name)
{
  fs::path d = fs::temp_directory_path() / ("gridcast-profile-tests-" + std::to_string(getpid()));
  fs::create_directories(d);
  fs::remove_all(d / name);
  return d / name;
}

Result run(const std::string& command)
{
  // Open MPI refuses root unless told; test machines and containers often run as root.
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  fs::path out = scratch("output.txt");
  int status = std::system((command + " > '" + out.string() + "' 2>&1").c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  std::stringstream s;
  s << in.rdbuf();
  r.output = s.str();
  return r;
}

const std::string kMpirun = "mpirun -np 2 --oversubscribe --bind-to none ";

std::string profile(const fs::path& out, const std::string& options, const std::string& app_and_args)
{
  return std::string(GRIDCAST_BIN) + " profile --nw 4 --out '" + out.string() + "' " + options + " -- " + kMpirun +
         app_and_args;
}

struct Named {
  CallRecord r;
  std::string fn;
};

std::vector<Named> read_rank(const fs::path& dir, int rank)
{
  models::ProfileDir prof(dir);
  auto stream = prof.open(rank);
  std::vector<Named> out;
  CallRecord r;
  while (stream->next(r))
    out.push_back({r, stream->functions().name(r.function)});
  return out;
}

/// The calls of a rank without the computation between them and without local MPI calls
/// (MPI_Comm_rank...), which are not what these tests look at.
std::vector<Named> calls(const std::vector<Named>& all)
{
  std::vector<Named> out;
  for (const auto& n : all)
    if (not(n.r.op == Op::Compute && n.fn == "compute") && n.r.op != Op::CommSize)
      out.push_back(n);
  return out;
}

std::string describe(const Named& n)
{
  std::ostringstream s;
  s << models::op_name(n.r.op) << ' ' << n.fn << " peer=" << n.r.peer << " tag=" << n.r.tag << " bytes=" << n.r.bytes
    << " comm=" << n.r.comm << " request=" << n.r.request;
  return s.str();
}

}  // namespace

TEST_CASE("profile: every call of a 2-rank MPI program, peers as world ranks, nested BLAS once", "[profiler][mpi]")
{
  fs::path out = scratch("normal");
  fs::path list = scratch("functions.txt");
  std::ofstream(list) << "# functions to record besides MPI\napp_kernel\ncblas_dgemm\ndgemm_\n";
  Result r = run(profile(out, "--encoding jsonl --functions '" + list.string() + "'", GRIDCAST_MPI_SAMPLE));
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("complete"));

  models::ProfileDir prof(out);
  CHECK(prof.info().np == 2);
  CHECK(prof.info().nw == 4);
  CHECK(prof.info().complete);
  CHECK(prof.info().origin == "profile");
  CHECK(prof.info().host.speed_flops > 0);
  CHECK_THAT(prof.info().command, Catch::Contains("mpirun -np 2"));
  // Each rank's data footprint (peak resident set above MPI_Init's): recorded for both ranks.
  CHECK(prof.info().footprint_bytes.size() == 2);

  auto rank0 = calls(read_rank(out, 0));
  std::vector<std::string> got;
  for (const auto& n : rank0)
    got.push_back(describe(n));
  // Rank 0: ring, nonblocking pair, the reversed split (its rank 0 is world rank 1), collectives,
  // topology, BLAS (cblas_dgemm calls dgemm_ inside: one record), the application function, a send.
  std::vector<std::string> want = {
      "init MPI_Init peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "send MPI_Send peer=1 tag=7 bytes=80 comm=0 request=-1",
      "recv MPI_Recv peer=1 tag=7 bytes=80 comm=0 request=-1",
      "irecv MPI_Irecv peer=1 tag=3 bytes=16 comm=0 request=0",
      "isend MPI_Isend peer=1 tag=3 bytes=16 comm=0 request=1",
      "waitall MPI_Waitall peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "comm_split MPI_Comm_split peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "send MPI_Send peer=1 tag=11 bytes=16 comm=1 request=-1",
      "bcast MPI_Bcast peer=-2 tag=0 bytes=8 comm=0 request=-1",
      "allreduce MPI_Allreduce peer=-2 tag=0 bytes=8 comm=0 request=-1",
      "alltoallv MPI_Alltoallv peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "barrier MPI_Ibarrier peer=-2 tag=0 bytes=0 comm=0 request=2",
      "wait MPI_Wait peer=-2 tag=0 bytes=0 comm=0 request=2",
      "comm_split MPI_Cart_create peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "compute cblas_dgemm peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "compute dgemm_ peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "compute app_kernel peer=-2 tag=0 bytes=0 comm=0 request=-1",
      "send MPI_Send peer=1 tag=21 bytes=24 comm=0 request=-1",
      "finalize MPI_Finalize peer=-2 tag=0 bytes=0 comm=0 request=-1",
  };
  CHECK(got == want);
  REQUIRE(rank0.size() == want.size());
  CHECK(rank0[5].r.requests == std::vector<std::int64_t>{0, 1});
  CHECK(rank0[6].r.color == 5);
  CHECK(rank0[6].r.key == 2);  // size - rank
  CHECK(rank0[6].r.new_comm == 1);
  CHECK(rank0[10].r.counts == std::vector<std::uint64_t>{4, 8});  // (rank + i + 1) ints to rank i
  CHECK(rank0[10].r.recv_counts == std::vector<std::uint64_t>{4, 8});
  CHECK(rank0[13].r.new_comm == 2);

  // Rank 1 polls with MPI_Iprobe until the message arrives: a varying number of probes, the last one
  // finding 24 bytes from world rank 0; then receives from the translated source.
  auto rank1 = calls(read_rank(out, 1));
  std::vector<Named> probes;
  for (const auto& n : rank1)
    if (n.r.op == Op::Probe)
      probes.push_back(n);
  REQUIRE_FALSE(probes.empty());
  CHECK(probes.back().fn == "MPI_Iprobe");
  CHECK(probes.back().r.peer == models::kAnySource);
  CHECK(probes.back().r.src == 0);
  CHECK(probes.back().r.recv_bytes == 24);
  for (std::size_t i = 0; i + 1 < probes.size(); ++i)
    CHECK(probes[i].r.src == models::kNoRank);  // found nothing
  // The receive on the reversed communicator: any source there, on comm 1.
  bool any_on_split = false;
  for (const auto& n : rank1)
    any_on_split = any_on_split || (n.r.op == Op::Recv && n.r.comm == 1 && n.r.peer == models::kAnySource);
  CHECK(any_on_split);

  // Each rank's records account for its whole time from MPI_Init to MPI_Finalize: the summary says so.
  CHECK_THAT(r.output, Catch::Contains("100.00%"));
}

TEST_CASE("profile: two threads calling MPI at once (MPI_THREAD_MULTIPLE) are both recorded", "[profiler][mpi]")
{
  fs::path out = scratch("threads");
  Result r = run(profile(out, "--keep-raw", std::string(GRIDCAST_MPI_SAMPLE) + " threads"));
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(fs::exists(out / "raw" / "rank-0.thread-1.gcraw"));  // one raw file per thread
  for (int rank : {0, 1}) {
    auto all = calls(read_rank(out, rank));
    REQUIRE_FALSE(all.empty());
    CHECK(all.front().fn == "MPI_Init_thread");
    CHECK(all.back().fn == "MPI_Finalize");
    int per_tag[2] = {0, 0};
    for (const auto& n : all)
      if (n.r.op == Op::Sendrecv) {
        REQUIRE((n.r.tag == 0 || n.r.tag == 1));
        ++per_tag[n.r.tag];
        CHECK(n.r.peer == 1 - rank);
        CHECK(n.r.bytes == 8);
      }
    CHECK(per_tag[0] == 50);
    CHECK(per_tag[1] == 50);
  }
}

TEST_CASE("profile: CUDA runtime and NCCL calls through a test double", "[profiler][mpi][gpu]")
{
  fs::path out = scratch("gpu");
  Result r = run(profile(out, "--encoding binary", GRIDCAST_GPU_SAMPLE));
  INFO(r.output);
  REQUIRE(r.code == 0);
  auto rank1 = calls(read_rank(out, 1));
  std::vector<std::string> fns;
  for (const auto& n : rank1)
    fns.push_back(n.fn);
  // Launches are named after their kernel: here the symbol of its host stub (the double's
  // cudaFuncGetName knows no name), as the ELF symbol table says it.
  CHECK(fns == std::vector<std::string>{"MPI_Init", "cudaMalloc", "cudaMemcpy", "_ZL11kernel_stubv",
                                        "_ZL11kernel_stubv", "cudaStreamSynchronize", "MPI_Sendrecv", "ncclCommInitRank", "ncclAllReduce",
                                        "ncclSend", "ncclRecv", "cudaMemcpyAsync", "cudaEventRecord",
                                        "cudaStreamWaitEvent", "cudaEventSynchronize", "cudaDeviceSynchronize",
                                        "cudaFree", "MPI_Finalize"});
  REQUIRE(fns.size() == 18);
  const auto& malloc_ = rank1[1].r;
  CHECK(malloc_.op == Op::GpuMalloc);
  CHECK(malloc_.bytes == 4096);
  CHECK(malloc_.device == 1);  // cudaSetDevice(rank)
  CHECK(malloc_.memory == models::Memory::Device);
  CHECK(rank1[2].r.op == Op::GpuMemcpy);
  CHECK(rank1[2].r.tag == 1);  // cudaMemcpyHostToDevice
  CHECK(rank1[2].r.memory == models::Memory::Device);
  CHECK(rank1[3].r.op == Op::GpuKernel);
  CHECK(rank1[3].r.bytes == 8 * 2 * 128);  // threads launched
  CHECK(rank1[3].r.stream == 1);
  CHECK(rank1[4].r.op == Op::GpuKernel);  // __cudaLaunchKernel: one record, not two
  CHECK(rank1[4].r.bytes == 4 * 128);
  CHECK(rank1[4].r.stream == 1);
  CHECK(rank1[5].r.op == Op::GpuSync);
  // The MPI buffer was device memory (cudaPointerGetAttributes of the double says so).
  CHECK(rank1[6].r.op == Op::Sendrecv);
  CHECK(rank1[6].r.memory == models::Memory::Device);
  CHECK(rank1[6].r.bytes == 1024);
  CHECK(rank1[7].r.op == Op::CommDup);
  CHECK(rank1[7].r.new_comm == 65536);
  CHECK(rank1[8].r.op == Op::Allreduce);
  CHECK(rank1[8].r.bytes == 1024);  // 256 floats
  CHECK(rank1[8].r.comm == 65536);
  CHECK(rank1[9].r.op == Op::Send);
  CHECK(rank1[9].r.bytes == 800);  // 100 doubles
  CHECK(rank1[11].r.tag == 2);      // device to host
  CHECK(rank1[11].r.memory == models::Memory::Host);
  // Events: one id (the first event seen is 0); the stream that records it, the one that waits for it.
  CHECK(rank1[12].r.op == Op::GpuSync);
  CHECK(rank1[12].r.request == 0);
  CHECK(rank1[12].r.stream == 1);
  CHECK(rank1[13].r.op == Op::GpuSync);
  CHECK(rank1[13].r.request == 0);
  CHECK(rank1[13].r.stream == 2);
  CHECK(rank1[14].r.op == Op::GpuSync);
  CHECK(rank1[14].r.request == 0);
  CHECK(rank1[16].r.op == Op::GpuFree);
}

TEST_CASE("profile: a kernel launch is named as the CUDA runtime names its kernel", "[profiler][mpi][gpu]")
{
  fs::path out = scratch("gpu-names");
  Result r = run("GRIDCAST_FAKE_KERNEL_NAME=_Z11gemm_kernelPKfS0_Pfi " +
                 profile(out, "--encoding jsonl", GRIDCAST_GPU_SAMPLE));
  INFO(r.output);
  REQUIRE(r.code == 0);
  for (int rank : {0, 1}) {
    int launches = 0;
    for (const auto& n : calls(read_rank(out, rank)))
      if (n.r.op == Op::GpuKernel) {
        CHECK(n.fn == "_Z11gemm_kernelPKfS0_Pfi");
        ++launches;
      }
    CHECK(launches == 2);
  }
}

TEST_CASE("profile: bad command lines exit 1 with a clear message", "[profiler][mpi]")
{
  std::string bin = GRIDCAST_BIN;
  fs::path out = scratch("bad");
  auto r = run(bin + " profile --nw 1 --out '" + out.string() + "'");
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("no command after `--`"));
  r = run(bin + " profile --nw 1 --out '" + out.string() + "' --");
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("no command after `--`"));
  r = run(bin + " profile --nw 1 --out '" + out.string() + "' -- " + kMpirun + "/bin/true");
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("/bin/true") && Catch::Contains("not dynamically linked to an MPI library"));
  r = run(bin + " profile --nw 1 --out /proc/gridcast-no-such-dir -- " + kMpirun + GRIDCAST_MPI_SAMPLE);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("/proc/gridcast-no-such-dir") && Catch::Contains("output directory"));
  fs::path list = scratch("bad-list.txt");
  std::ofstream(list) << "dgemm_\nnot a symbol!\n";
  r = run(bin + " profile --nw 1 --out '" + out.string() + "' --functions '" + list.string() + "' -- " + kMpirun +
          GRIDCAST_MPI_SAMPLE);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("bad-list.txt:2"));
  // A symbol that neither the hook, the application nor the libraries it needs define: exit 1 before the
  // run, naming the file, the line and the symbol.
  std::ofstream(list) << "# known: wrapped, the application's own, libc's\ndgemm_\napp_kernel\nmalloc\n"
                         "no_such_function\nnor_this_one\n";
  r = run(bin + " profile --nw 1 --out '" + out.string() + "' --functions '" + list.string() + "' -- " + kMpirun +
          GRIDCAST_MPI_SAMPLE);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("bad-list.txt:5") && Catch::Contains("unknown symbol 'no_such_function'") &&
                           Catch::Contains("'nor_this_one' (line 6)"));
  CHECK_FALSE(fs::exists(out / "run.json"));  // nothing ran
  r = run(bin + " profile --out '" + out.string() + "' -- " + kMpirun + GRIDCAST_MPI_SAMPLE);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("--nw VALUE is required"));
  for (const std::string wait : {"-1", "nan"}) {
    r = run(bin + " profile --nw 1 --kill-wait " + wait + " --out '" + out.string() + "' -- " + kMpirun +
            GRIDCAST_MPI_SAMPLE);
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Catch::Contains("--kill-wait must be >= 0 seconds"));
  }
  r = run(bin + " profile --help");
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("--functions") && Catch::Contains("--discover") &&
                           Catch::Contains("--kill-wait"));
}

TEST_CASE("profile: converting the same raw files twice gives identical profiles", "[profiler][mpi]")
{
  fs::path out = scratch("keep");
  Result r = run(profile(out, "--keep-raw", GRIDCAST_MPI_SAMPLE));
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(fs::is_directory(out / "raw"));
  models::RunInfo info;
  info.nw = 4;
  info.command = "sample";
  info.date = "2026-01-01T00:00:00Z";
  info.host = {"node", 1e9, {}, {}};
  for (auto enc : {models::TraceEncoding::Binary, models::TraceEncoding::JsonLines}) {
    info.encoding = enc;
    fs::path a = scratch("conv-a"), b = scratch("conv-b");
    profiler::convert_raw(out / "raw", info, a);
    auto result = profiler::convert_raw(out / "raw", info, b);
    CHECK(result.all_finalized);
    for (const char* f : {"run.json", "rank-00000", "rank-00001"}) {
      std::string name = f;
      if (name != "run.json")
        name = models::rank_file_name(name.back() - '0', enc);
      std::ifstream fa(a / name, std::ios::binary), fb(b / name, std::ios::binary);
      std::stringstream sa, sb;
      sa << fa.rdbuf();
      sb << fb.rdbuf();
      CHECK(sa.str().size() > 0);
      CHECK(sa.str() == sb.str());
    }
  }
}

TEST_CASE("profile: --discover ranks the functions and writes a list", "[profiler][mpi]")
{
  fs::path list = scratch("discovered.txt");
  Result r = run(std::string(GRIDCAST_BIN) + " profile --discover --out '" + list.string() + "' -- " + kMpirun +
                 GRIDCAST_MPI_SAMPLE);
  INFO(r.output);
  REQUIRE(r.code == 0);
  auto names = profiler::read_function_list(list);
  REQUIRE_FALSE(names.empty());
  // MPI_Init dominates this tiny program; the rest depends on timing, but the list must read back.
  CHECK(std::find(names.begin(), names.end(), "MPI_Init") != names.end());
  CHECK_THAT(r.output, Catch::Contains("function list written to"));
}
