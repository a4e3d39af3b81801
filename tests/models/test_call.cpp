// Call records, op names, function tables and error messages.
#include "models_support.hpp"

#include "gridcast/models/call.hpp"

using namespace gridcast;
using namespace gridcast::models;

TEST_CASE("op names round-trip and are lower-case", "[models][call]")
{
  CHECK(op_name(Op::Init) == "init");
  CHECK(op_name(Op::Sendrecv) == "sendrecv");
  CHECK(op_name(Op::ReduceScatter) == "reducescatter");
  CHECK(op_name(Op::CommSplit) == "comm_split");
  CHECK(op_name(Op::GpuFree) == "gpu_free");
  for (int i = 0; i < kOpCount; ++i) {
    auto op = static_cast<Op>(i);
    INFO("op " << i);
    REQUIRE(op_from_name(op_name(op)) == op);
  }
  CHECK_FALSE(op_from_name("Send").has_value());
  CHECK_FALSE(op_from_name("").has_value());
  CHECK_FALSE(op_from_name("allreduce ").has_value());
}

TEST_CASE("point-to-point and collective classes", "[models][call]")
{
  for (Op op : {Op::Send, Op::Ssend, Op::Isend, Op::Issend, Op::Recv, Op::Irecv, Op::Sendrecv, Op::Wait, Op::Waitall,
                Op::Waitany, Op::Test}) {
    CHECK(is_point_to_point(op));
    CHECK_FALSE(is_collective(op));
  }
  for (Op op : {Op::Barrier, Op::Bcast, Op::Allreduce, Op::Alltoallv, Op::ReduceScatter, Op::Exscan, Op::CommSplit,
                Op::CommDup}) {
    CHECK(is_collective(op));
    CHECK_FALSE(is_point_to_point(op));
  }
  for (Op op : {Op::Init, Op::Finalize, Op::Compute, Op::Sleep, Op::CommSize, Op::GpuKernel}) {
    CHECK_FALSE(is_collective(op));
    CHECK_FALSE(is_point_to_point(op));
  }
}

TEST_CASE("CallRecord::clear resets fields and keeps vector capacity", "[models][call]")
{
  CallRecord r;
  r.op      = Op::Alltoallv;
  r.peer    = 3;
  r.seconds = 2.5;
  r.memory  = Memory::Device;
  r.line    = 12;
  r.counts.assign(100, 7);
  r.recv_counts.assign(50, 1);
  r.requests.assign(20, 4);
  const auto cap_counts = r.counts.capacity();
  const auto cap_recv   = r.recv_counts.capacity();
  const auto cap_req    = r.requests.capacity();
  r.clear();
  CHECK(r == CallRecord{});
  CHECK(r.line == 0);
  CHECK(r.counts.empty());
  CHECK(r.counts.capacity() == cap_counts);
  CHECK(r.recv_counts.capacity() == cap_recv);
  CHECK(r.requests.capacity() == cap_req);
}

TEST_CASE("CallRecord equality compares every field but the line", "[models][call]")
{
  CallRecord a;
  a.op         = Op::Send;
  a.peer       = 1;
  a.bytes      = 8;
  CallRecord b = a;
  b.line       = 99;
  CHECK(a == b);
  b.tag = 1;
  CHECK_FALSE(a == b);
  b = a;
  b.recv_counts.push_back(0);
  CHECK_FALSE(a == b);
  b        = a;
  b.memory = Memory::Device;
  CHECK_FALSE(a == b);
  b          = a;
  b.function = 1;
  CHECK_FALSE(a == b);
}

TEST_CASE("FunctionTable gives dense ids in first-seen order", "[models][call]")
{
  FunctionTable t;
  CHECK(t.intern("MPI_Send") == 0);
  CHECK(t.intern("MPI_Recv") == 1);
  CHECK(t.intern("MPI_Send") == 0);
  CHECK(t.intern("dgemm_") == 2);
  CHECK(t.size() == 3);
  CHECK(t.find("MPI_Recv") == std::optional<std::uint32_t>(1));
  CHECK_FALSE(t.find("MPI_Bcast").has_value());
  CHECK(t.name(2) == "dgemm_");
  CHECK(t.names() == std::vector<std::string>{"MPI_Send", "MPI_Recv", "dgemm_"});
  CHECK_THROWS_AS(t.name(3), InternalError);
}

TEST_CASE("format_error includes only the parts that are set", "[models][errors]")
{
  CHECK(format_error({"a.jsonl", 3, "peer", 2}, "bad") == "a.jsonl:3: key 'peer': rank 2: bad");
  CHECK(format_error({"run.json", 0, "host.speed", -1}, "unknown key") == "run.json: key 'host.speed': unknown key");
  CHECK(format_error({"t.txt", 7, "", 0}, "x") == "t.txt:7: rank 0: x");
  CHECK(format_error({}, "plain") == "plain");
  InputError e({"f", 1, "k", 4}, "why");
  CHECK(std::string(e.what()) == "f:1: key 'k': rank 4: why");
  CHECK(e.reason() == "why");
  CHECK(e.context().rank == 4);
}
