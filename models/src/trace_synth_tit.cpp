// The SMPI time-independent trace (TIT) output of any call stream (`gridcast synth --format tit`). The
// action names and argument orders are SMPI's (docs/reference/tit.md).
#include "gridcast/models/trace_synth.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/tit.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace gridcast::models::trace {

namespace {

std::string num(double v)
{
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

// MPI_ANY_SOURCE as SMPI's own value (-555), which `smpirun -replay` matches; its tracer writes -333
// (MPI_UNDEFINED), which the replay does not treat as a wildcard. gridcast reads any negative source as any.
std::int64_t tit_rank(std::int32_t v) { return v == kAnySource ? -555 : v; }
std::int64_t tit_tag(std::int32_t v) { return v == kAnyTag ? -444 : v; }

}  // namespace

void write_tit_rank(CallStream& stream, int rank, int np, std::ostream& out)
{
  struct Key {
    std::int64_t src, dst, tag;
  };
  std::map<std::int64_t, Key> pending;  // requests not yet waited for: bounded by what the program has in flight
  CallRecord r;
  auto counts = [&](const std::vector<std::uint64_t>& v) {
    std::string s;
    for (std::uint64_t c : v)
      s += " " + std::to_string(c);
    return s;
  };
  while (stream.next(r)) {
    out << rank << ' ';
    // A nonblocking collective is written as SMPI 3.32 writes it: its blocking line with an "i" prefix;
    // its wait or test names "S S TAG" (S: world rank of the actor whose pid is the rank's place in
    // MPI_COMM_WORLD, -333 at place 0; TAG: tit_nbc_tag). MPI_Comm_idup has no TIT form (SMPI aborts on it).
    const bool nonblocking = r.request != kNoRequest && is_collective(r.op);
    const char* nb         = nonblocking ? "i" : "";
    if (nonblocking) {
      const std::int32_t tag = tit_nbc_tag(r.op);
      if (tag == 0)
        throw InputError({stream.source(), r.line, {}, rank},
                         "nonblocking op '" + std::string(op_name(r.op)) + "' has no SMPI time-independent trace form");
      const std::int64_t place = rank == 0 ? -333 : rank - 1;
      pending[r.request]       = {place, place, tag};
    }
    switch (r.op) {
      case Op::Init: out << "init"; break;
      case Op::Finalize: out << "finalize"; break;
      case Op::Compute: out << "compute " << num(r.flops); break;
      case Op::Sleep: out << "sleep " << num(r.seconds); break;
      case Op::Send:
      case Op::Ssend:
      case Op::Isend:
      case Op::Issend: {
        const char* a = r.op == Op::Send ? "send" : r.op == Op::Ssend ? "Ssend" : r.op == Op::Isend ? "isend" : "ISsend";
        out << a << ' ' << r.peer << ' ' << r.tag << ' ' << r.bytes << " 6";
        if (r.op == Op::Isend || r.op == Op::Issend)
          pending[r.request] = {rank, r.peer, r.tag};
        break;
      }
      case Op::Recv:
      case Op::Irecv:
        out << (r.op == Op::Recv ? "recv " : "irecv ") << tit_rank(r.peer) << ' ' << tit_tag(r.tag) << ' ' << r.bytes
            << " 6";
        if (r.op == Op::Irecv)
          pending[r.request] = {tit_rank(r.peer), rank, tit_tag(r.tag)};
        break;
      case Op::Wait:
      case Op::Test: {
        auto it = pending.find(r.request);
        if (it == pending.end())
          throw InputError({stream.source(), r.line, {}, rank}, "wait/test of a request that is not pending");
        out << (r.op == Op::Wait ? "wait " : "test ") << it->second.src << ' ' << it->second.dst << ' '
            << it->second.tag;
        if (r.op == Op::Wait)
          pending.erase(it);
        break;
      }
      case Op::Waitall:
        out << "waitall " << r.requests.size();
        pending.clear();  // TIT's waitall completes every pending request
        break;
      case Op::Sendrecv:
        out << "sendRecv " << r.bytes << ' ' << r.peer << ' ' << r.recv_bytes << ' ' << tit_rank(r.src) << " 6 6";
        break;
      case Op::Barrier: out << nb << "barrier"; break;
      case Op::Bcast: out << nb << "bcast " << r.bytes << ' ' << r.root << " 6"; break;
      case Op::Reduce: out << nb << "reduce " << r.bytes << ' ' << num(r.flops) << ' ' << r.root << " 6"; break;
      case Op::Allreduce: out << nb << "allreduce " << r.bytes << ' ' << num(r.flops) << " 6"; break;
      case Op::Scan: out << nb << "scan " << r.bytes << ' ' << num(r.flops) << " 6"; break;
      case Op::Exscan: out << nb << "exscan " << r.bytes << ' ' << num(r.flops) << " 6"; break;
      case Op::Alltoall: out << nb << "alltoall " << r.bytes << ' ' << r.recv_bytes << " 6 6"; break;
      case Op::Allgather: out << nb << "allgather " << r.bytes << ' ' << r.recv_bytes << " 6 6"; break;
      case Op::Gather: out << nb << "gather " << r.bytes << ' ' << r.recv_bytes << ' ' << r.root << " 6 6"; break;
      case Op::Scatter: out << nb << "scatter " << r.bytes << ' ' << r.recv_bytes << ' ' << r.root << " 6 6"; break;
      case Op::Alltoallv: {
        std::uint64_t s = 0, rr = 0;
        for (auto c : r.counts)
          s += c;
        for (auto c : r.recv_counts)
          rr += c;
        out << nb << "alltoallv " << s << counts(r.counts) << ' ' << rr << counts(r.recv_counts) << " 6 6";
        break;
      }
      case Op::Gatherv: out << nb << "gatherv " << r.bytes << counts(r.recv_counts) << ' ' << r.root << " 6 6"; break;
      case Op::Allgatherv: out << nb << "allgatherv " << r.bytes << counts(r.recv_counts) << " 6 6"; break;
      case Op::Scatterv: out << nb << "scatterv" << counts(r.counts) << ' ' << r.recv_bytes << ' ' << r.root << " 6 6"; break;
      case Op::ReduceScatter: out << nb << "reducescatter" << counts(r.recv_counts) << ' ' << num(r.flops) << " 6"; break;
      case Op::CommSize: out << "comm_size " << np; break;
      case Op::CommSplit: out << "comm_split"; break;  // TIT keeps no color: gridcast reads it on world
      case Op::CommDup: out << "comm_dup"; break;
      case Op::Waitany: out << "waitAny " << r.requests.size(); break;  // the n most recent pending requests
      default:
        throw InputError({stream.source(), r.line, {}, rank},
                         "op '" + std::string(op_name(r.op)) + "' has no SMPI time-independent trace form");
    }
    out << '\n';
  }
}

void write_tit(const TraceSource& source, const std::filesystem::path& dir)
{
  std::error_code ec;
  std::filesystem::create_directories(dir / "trace.txt_files", ec);
  if (ec)
    throw InputError({dir.string(), 0, {}, -1}, "cannot create the output directory: " + ec.message());
  std::ofstream index(dir / "trace.txt", std::ios::binary | std::ios::trunc);
  for (int r = 0; r < source.rank_count(); ++r) {
    std::string name = "trace.txt_files/rank-" + std::to_string(r + 1) + ".txt";
    index << name << '\n';
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    CallStreamPtr s = source.open(r);
    write_tit_rank(*s, r, source.rank_count(), out);
    if (not out)
      throw InputError({(dir / name).string(), 0, {}, r}, "error while writing the trace");
  }
  if (not index)
    throw InputError({(dir / "trace.txt").string(), 0, {}, -1}, "error while writing the index");
}
}  // namespace gridcast::models::trace
