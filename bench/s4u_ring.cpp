// gridcast_bench_s4u_ring: the baseline of bench/replay_speed.py. A minimal S4U program doing the same
// activities as a TIT trace, with nothing MPI-specific in between: one actor per rank, `execute` for
// compute, one mailbox per (src, dst, tag) for messages.
//
//   gridcast_bench_s4u_ring PLATFORM.xml HOSTFILE TRACE_INDEX [--cfg=name:value ...]
//   -> "Simulated time: <s> seconds." and "Replayed <n> actions on <np> ranks."
//
// It understands only what the bench traces use (scripts/gen_tit.py ring, ring-blocking, halo3d):
//   init, finalize                   nothing
//   compute F                        this_actor::execute(F)
//   send/isend DST TAG COUNT [DT]    put / put_async of COUNT*sizeof(DT) bytes
//   recv/irecv SRC TAG COUNT [DT]    get / get_async (SRC must be a rank: no wildcards)
//   wait SRC DST TAG, waitall N      wait one pending request / all of them
//   allreduce COUNT FLOPS [DT]       the messages of MPICH's recursive doubling, which gridcast picks
//                                    for short buffers (MPIR_Allreduce_intra_recursive_doubling):
//                                    log2(pof2) exchanges of COUNT*sizeof(DT) bytes with rank ^ mask,
//                                    plus the fold (even ranks below 2*rem hand their buffer to rank + 1
//                                    and get the result back) when np is not a power of two; then
//                                    execute(FLOPS) when FLOPS > 0. (Rabenseifner's algorithm, which
//                                    gridcast picks for long buffers, is not modelled.)
// Anything else is rejected when the trace is read. Messages have no eager/rendezvous distinction and
// no SMPI network factors beyond what --cfg=network/model:SMPI brings, so its makespan is close to,
// not equal to, SMPI's; it exists to time the simulation kernel doing the same number of activities.
//
// Everything is parsed before the simulation starts; each action stores its resolved mailbox, so the
// replay loop does no lookups.

#include <simgrid/s4u.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace sg4 = simgrid::s4u;
namespace fs  = std::filesystem;

namespace {

enum class Kind : std::uint8_t { Compute, Send, Isend, Recv, Irecv, Wait, Waitall, Allreduce };

struct Action {
  Kind kind;
  int src = -1;  // Wait: request key
  int dst = -1;
  int tag = 0;
  double amount = 0;  // flops (Compute, Allreduce's own compute) or bytes (messages, Allreduce payload)
  sg4::Mailbox* mbox = nullptr;
};

/// MPICH's recursive-doubling allreduce seen from one rank: the fold, the exchanges, the unfold.
struct AllreduceLinks {
  sg4::Mailbox* fold_to = nullptr;      // even rank below 2*rem: hands its buffer to rank + 1, sits out
  sg4::Mailbox* fold_from = nullptr;    // odd rank below 2*rem: takes rank - 1's buffer
  std::vector<std::pair<sg4::Mailbox*, sg4::Mailbox*>> exchanges;  // (to partner, from partner)
  sg4::Mailbox* unfold_to = nullptr;    // odd rank below 2*rem: gives the result back to rank - 1
  sg4::Mailbox* unfold_from = nullptr;  // even rank below 2*rem: gets it from rank + 1
};

struct RankProgram {
  std::vector<Action> actions;
  std::size_t events = 0;  // every trace line, init and finalize included
  bool uses_allreduce = false;
  AllreduceLinks allreduce;
};

constexpr int kFoldTag      = -1;
constexpr int kExchangeTag  = -2;
constexpr int kUnfoldTag    = -3;

/// One mailbox per (src, dst, tag), created while reading the trace; names are never looked up again.
class MailboxTable {
  std::map<std::tuple<int, int, int>, sg4::Mailbox*> boxes_;

public:
  sg4::Mailbox* get(int src, int dst, int tag)
  {
    auto [it, fresh] = boxes_.try_emplace({src, dst, tag}, nullptr);
    if (fresh)
      it->second =
          sg4::Mailbox::by_name(std::to_string(src) + ":" + std::to_string(dst) + ":" + std::to_string(tag));
    return it->second;
  }
};

/// Byte size of the SMPI datatype ids written by `smpirun -trace-ti` (SimGrid 3.32 Datatype::encode).
std::uint64_t datatype_size(const std::string& id, const std::string& where)
{
  static const std::map<std::string, std::uint64_t> sizes = {{"0", 8}, {"1", 4}, {"2", 1}, {"4", 8},
                                                             {"5", 4}, {"6", 1}, {"9", 1}};
  auto it = sizes.find(id);
  if (it == sizes.end())
    throw std::invalid_argument(where + ": unsupported datatype id " + id);
  return it->second;
}

int to_int(const std::string& s, const std::string& where)
{
  try {
    std::size_t used = 0;
    int v            = std::stoi(s, &used);
    if (used == s.size())
      return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(where + ": '" + s + "' is not an integer");
}

double to_double(const std::string& s, const std::string& where)
{
  try {
    std::size_t used = 0;
    double v         = std::stod(s, &used);
    if (used == s.size())
      return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(where + ": '" + s + "' is not a number");
}

RankProgram read_rank(const fs::path& file, int rank, int np, MailboxTable& boxes)
{
  std::ifstream in(file);
  if (not in)
    throw std::invalid_argument("cannot open trace file " + file.string());
  RankProgram prog;
  std::string line;
  std::vector<std::string> tok;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string where = file.string() + ":" + std::to_string(line_no);
    std::istringstream words(line);
    tok.clear();
    for (std::string w; words >> w;)
      tok.push_back(w);
    if (tok.empty())
      continue;
    if (tok.size() < 2 || to_int(tok[0], where) != rank)
      throw std::invalid_argument(where + ": expected '" + std::to_string(rank) + " <action> ...'");
    ++prog.events;
    const std::string& name = tok[1];
    auto need               = [&](std::size_t n) {
      if (tok.size() < n)
        throw std::invalid_argument(where + ": '" + name + "' needs " + std::to_string(n - 2) + " arguments");
    };
    auto peer = [&](const std::string& s) {
      int p = to_int(s, where);
      if (p < 0 || p >= np)
        throw std::invalid_argument(where + ": peer " + s + " is not a rank (wildcards are not supported)");
      return p;
    };
    Action a{};
    if (name == "init" || name == "finalize") {
      continue;
    } else if (name == "compute") {
      need(3);
      a.kind   = Kind::Compute;
      a.amount = to_double(tok[2], where);
    } else if (name == "send" || name == "isend" || name == "recv" || name == "irecv") {
      need(5);
      const bool sending = name == "send" || name == "isend";
      a.kind   = name == "send" ? Kind::Send : name == "isend" ? Kind::Isend : name == "recv" ? Kind::Recv : Kind::Irecv;
      int p    = peer(tok[2]);
      a.tag    = to_int(tok[3], where);
      a.src    = sending ? rank : p;
      a.dst    = sending ? p : rank;
      // No datatype means MPI_BYTE (id 6), SMPI's default when `init` has no argument.
      a.amount = to_double(tok[4], where) * static_cast<double>(datatype_size(tok.size() > 5 ? tok[5] : "6", where));
      a.mbox   = boxes.get(a.src, a.dst, a.tag);
    } else if (name == "wait") {
      need(5);
      a.kind = Kind::Wait;
      a.src  = to_int(tok[2], where);
      a.dst  = to_int(tok[3], where);
      a.tag  = to_int(tok[4], where);
    } else if (name == "waitall") {
      a.kind = Kind::Waitall;
    } else if (name == "allreduce") {
      need(4);
      a.kind   = Kind::Allreduce;
      a.amount = to_double(tok[2], where) * static_cast<double>(datatype_size(tok.size() > 4 ? tok[4] : "6", where));
      double comp = to_double(tok[3], where);
      prog.actions.push_back(a);
      prog.uses_allreduce = true;
      if (comp > 0)
        prog.actions.push_back(Action{Kind::Compute, -1, -1, 0, comp, nullptr});
      continue;
    } else {
      throw std::invalid_argument(where + ": action '" + name + "' is not supported by this minimal replayer");
    }
    prog.actions.push_back(a);
  }
  return prog;
}

AllreduceLinks recursive_doubling(int rank, int np, MailboxTable& boxes)
{
  AllreduceLinks l;
  int pof2 = 1;
  while (pof2 * 2 <= np)
    pof2 *= 2;
  const int rem = np - pof2;
  int newrank = rank - rem;  // ranks from 2*rem on keep going, renumbered
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      l.fold_to     = boxes.get(rank, rank + 1, kFoldTag);
      l.unfold_from = boxes.get(rank + 1, rank, kUnfoldTag);
      return l;
    }
    l.fold_from = boxes.get(rank - 1, rank, kFoldTag);
    l.unfold_to = boxes.get(rank, rank - 1, kUnfoldTag);
    newrank     = rank / 2;
  }
  for (int mask = 1; mask < pof2; mask <<= 1) {
    const int newdst = newrank ^ mask;
    const int dst    = newdst < rem ? newdst * 2 + 1 : newdst + rem;
    l.exchanges.emplace_back(boxes.get(rank, dst, kExchangeTag), boxes.get(dst, rank, kExchangeTag));
  }
  return l;
}

struct Pending {
  sg4::CommPtr comm;
  int src, dst, tag;
};

class RankActor {
  const RankProgram* prog_;
  int payload_ = 0;  // S4U refuses a null payload; every message points here

public:
  explicit RankActor(const RankProgram* prog) : prog_(prog) {}

  void operator()()
  {
    std::vector<Pending> pending;
    std::vector<sg4::CommPtr> batch;
    std::vector<std::unique_ptr<void*>> slots;  // irecv destinations, alive until waited
    for (const Action& a : prog_->actions) {
      switch (a.kind) {
        case Kind::Compute:
          sg4::this_actor::execute(a.amount);
          break;
        case Kind::Send:
          a.mbox->put(&payload_, static_cast<std::uint64_t>(a.amount));
          break;
        case Kind::Recv:
          a.mbox->get<void>();
          break;
        case Kind::Isend:
          pending.push_back({a.mbox->put_async(&payload_, static_cast<std::uint64_t>(a.amount)), a.src, a.dst, a.tag});
          break;
        case Kind::Irecv:
          slots.push_back(std::make_unique<void*>(nullptr));
          pending.push_back({a.mbox->get_async<void>(slots.back().get()), a.src, a.dst, a.tag});
          break;
        case Kind::Wait:
          for (auto it = pending.begin(); it != pending.end(); ++it)
            if (it->src == a.src && it->dst == a.dst && it->tag == a.tag) {
              it->comm->wait();
              pending.erase(it);
              break;
            }
          break;
        case Kind::Waitall:
          batch.clear();
          for (auto const& p : pending)
            batch.push_back(p.comm);
          sg4::Comm::wait_all(batch);
          pending.clear();
          slots.clear();
          break;
        case Kind::Allreduce:
          allreduce(static_cast<std::uint64_t>(a.amount));
          break;
      }
    }
    for (auto const& p : pending)  // like MPI_Finalize: nothing may stay in flight
      p.comm->wait();
  }

private:
  void allreduce(std::uint64_t bytes)
  {
    const AllreduceLinks& l = prog_->allreduce;
    if (l.fold_to != nullptr) {
      l.fold_to->put(&payload_, bytes);
      l.unfold_from->get<void>();
      return;
    }
    if (l.fold_from != nullptr)
      l.fold_from->get<void>();
    void* slot = nullptr;
    for (auto const& [to, from] : l.exchanges) {  // MPIC_Sendrecv: receive posted first, then both waited
      sg4::CommPtr r = from->get_async<void>(&slot);
      sg4::CommPtr s = to->put_async(&payload_, bytes);
      r->wait();
      s->wait();
    }
    if (l.unfold_to != nullptr)
      l.unfold_to->put(&payload_, bytes);
  }
};

std::vector<std::string> read_hostfile(const fs::path& file)
{
  std::ifstream in(file);
  if (not in)
    throw std::invalid_argument("cannot open hostfile " + file.string());
  std::vector<std::string> hosts;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string name;
    if (not(words >> name))
      continue;
    int count = 1;  // "host:K" means K consecutive ranks, as smpirun accepts
    if (auto colon = name.find(':'); colon != std::string::npos) {
      count = to_int(name.substr(colon + 1), file.string());
      name.resize(colon);
    }
    hosts.insert(hosts.end(), static_cast<std::size_t>(count), name);
  }
  return hosts;
}

std::vector<fs::path> read_index(const fs::path& index)
{
  std::ifstream in(index);
  if (not in)
    throw std::invalid_argument("cannot open trace index " + index.string());
  std::vector<fs::path> files;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string entry;
    if (not(words >> entry))
      continue;
    fs::path p(entry);
    if (p.is_relative()) {  // relative to the index's folder, else (as smpirun does) to the cwd
      fs::path beside = index.parent_path() / p;
      p               = fs::exists(beside) ? beside : p;
    }
    files.push_back(p);
  }
  if (files.empty())
    throw std::invalid_argument(index.string() + " lists no trace file");
  return files;
}

int run(int argc, char** argv)
{
  sg4::Engine engine(&argc, argv);  // consumes --cfg= and --log=
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml HOSTFILE TRACE_INDEX [--cfg=name:value ...]\n", argv[0]);
    return 2;
  }
  engine.load_platform(argv[1]);
  const std::vector<std::string> hosts = read_hostfile(argv[2]);
  const std::vector<fs::path> files    = read_index(argv[3]);
  const int np                         = static_cast<int>(files.size());
  if (hosts.size() < files.size())
    throw std::invalid_argument("the hostfile has " + std::to_string(hosts.size()) + " slots for " +
                                std::to_string(np) + " ranks");

  MailboxTable boxes;
  std::vector<RankProgram> programs;
  programs.reserve(files.size());
  std::size_t events = 0;
  for (int rank = 0; rank < np; ++rank) {
    programs.push_back(read_rank(files[static_cast<std::size_t>(rank)], rank, np, boxes));
    events += programs.back().events;
  }
  for (int rank = 0; rank < np; ++rank) {
    RankProgram& prog = programs[static_cast<std::size_t>(rank)];
    if (prog.uses_allreduce)
      prog.allreduce = recursive_doubling(rank, np, boxes);
    sg4::Host* host = engine.host_by_name(hosts[static_cast<std::size_t>(rank)]);
    sg4::Actor::create(std::to_string(rank), host, RankActor(&prog));
  }
  engine.run();
  std::printf("Simulated time: %.9g seconds.\n", sg4::Engine::get_clock());
  std::printf("Replayed %zu actions on %d ranks.\n", events, np);
  return 0;
}

}  // namespace

int main(int argc, char** argv)
{
  try {
    return run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "gridcast_bench_s4u_ring: %s\n", e.what());
    return 1;
  }
}
