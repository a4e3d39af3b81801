// Reader of SimGrid 3.32 SMPI time-independent traces (TIT). Accepted syntax and mapping: docs/reference/tit.md.
#include "gridcast/models/tit.hpp"

#include "gridcast/foundation/errors.hpp"
#include "gridcast/models/profile.hpp"

#include "io.hpp"
#include "tit_requests.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

namespace fs = std::filesystem;

namespace gridcast::models {

// ---------------------------------------------------------------- datatypes

namespace {

/// SMPI 3.32 datatype ids (Datatype::encode, written as the last arguments of TIT lines) and byte sizes.
/// Measured on this machine (Debian libsimgrid 3.32-2): models/tools/tit_datatypes.cpp sends one element of
/// every predefined datatype with tag 100 + its index under `smpirun -trace-ti`, prints MPI_Type_size() of
/// each, and the id is read from the "send" lines of the trace (see docs/reference/tit.md). The ids are the
/// creation order of SMPI's predefined datatypes; derived datatypes are written as -1 (size unknown).
/// Note SMPI's own sizes for MPI_COMPLEX32 (16) and MPI_INTEGER1 (4); kept as measured, since SMPI's
/// replay uses the same sizes.
struct TitDatatype {
  const char* name;
  std::uint64_t size;
};
constexpr std::array<TitDatatype, 60> kTitDatatypes = {{
    {"MPI_DOUBLE", 8},                    // 0
    {"MPI_INT", 4},                       // 1
    {"MPI_CHAR", 1},                      // 2
    {"MPI_SHORT", 2},                     // 3
    {"MPI_LONG", 8},                      // 4
    {"MPI_FLOAT", 4},                     // 5
    {"MPI_BYTE", 1},                      // 6
    {"MPI_LONG_LONG", 8},                 // 7
    {"MPI_SIGNED_CHAR", 1},               // 8
    {"MPI_UNSIGNED_CHAR", 1},             // 9
    {"MPI_UNSIGNED_SHORT", 2},            // 10
    {"MPI_UNSIGNED", 4},                  // 11
    {"MPI_UNSIGNED_LONG", 8},             // 12
    {"MPI_UNSIGNED_LONG_LONG", 8},        // 13
    {"MPI_LONG_DOUBLE", 16},              // 14
    {"MPI_WCHAR", 4},                     // 15
    {"MPI_C_BOOL", 1},                    // 16
    {"MPI_INT8_T", 1},                    // 17
    {"MPI_INT16_T", 2},                   // 18
    {"MPI_INT32_T", 4},                   // 19
    {"MPI_INT64_T", 8},                   // 20
    {"MPI_UINT8_T", 1},                   // 21
    {"MPI_UINT16_T", 2},                  // 22
    {"MPI_UINT32_T", 4},                  // 23
    {"MPI_UINT64_T", 8},                  // 24
    {"MPI_C_FLOAT_COMPLEX", 8},           // 25
    {"MPI_C_DOUBLE_COMPLEX", 16},         // 26
    {"MPI_C_LONG_DOUBLE_COMPLEX", 32},    // 27
    {"MPI_AINT", 8},                      // 28
    {"MPI_OFFSET", 8},                    // 29
    {"MPI_FLOAT_INT", 8},                 // 30
    {"MPI_LONG_INT", 16},                 // 31
    {"MPI_DOUBLE_INT", 16},               // 32
    {"MPI_SHORT_INT", 8},                 // 33
    {"MPI_2INT", 8},                      // 34
    {"MPI_2FLOAT", 8},                    // 35
    {"MPI_2DOUBLE", 16},                  // 36
    {"MPI_2LONG", 16},                    // 37
    {"MPI_REAL", 4},                      // 38
    {"MPI_REAL4", 4},                     // 39
    {"MPI_REAL8", 8},                     // 40
    {"MPI_REAL16", 16},                   // 41
    {"MPI_COMPLEX8", 8},                  // 42
    {"MPI_COMPLEX16", 16},                // 43
    {"MPI_COMPLEX32", 16},                // 44 (sic, SMPI 3.32)
    {"MPI_INTEGER1", 4},                  // 45 (sic, SMPI 3.32)
    {"MPI_INTEGER2", 2},                  // 46
    {"MPI_INTEGER4", 4},                  // 47
    {"MPI_INTEGER8", 8},                  // 48
    {"MPI_INTEGER16", 16},                // 49
    {"MPI_LONG_DOUBLE_INT", 32},          // 50
    {"MPI_CXX_BOOL", 1},                  // 51
    {"MPI_CXX_FLOAT_COMPLEX", 8},         // 52
    {"MPI_CXX_DOUBLE_COMPLEX", 16},       // 53
    {"MPI_CXX_LONG_DOUBLE_COMPLEX", 32},  // 54
    {"MPI_UB", 0},                        // 55
    {"MPI_LB", 0},                        // 56
    {"MPI_PACKED", 1},                    // 57
    {"MPI_PTR", 8},                       // 58 (SMPI internal)
    {"MPI_COUNT", 8},                     // 59
}};

constexpr std::uint64_t kByteSize   = 1;  // MPI_BYTE: SMPI's replay default ("TAU" traces)
constexpr std::uint64_t kDoubleSize = 8;  // MPI_DOUBLE: the default after "init" with an argument ("MPE")

std::optional<std::uint64_t> datatype_size(std::int64_t id)
{
  if (id < 0 || id >= static_cast<std::int64_t>(kTitDatatypes.size()))
    return std::nullopt;
  return kTitDatatypes[static_cast<std::size_t>(id)].size;
}

std::string datatype_error(std::int64_t id)
{
  if (id == -1)
    return "datatype id -1 (a derived datatype): TIT traces do not record its size";
  return "unknown SMPI datatype id " + std::to_string(id) + " (SMPI 3.32 predefined ids are 0.." +
         std::to_string(kTitDatatypes.size() - 1) + ")";
}

}  // namespace

std::uint64_t tit_datatype_size(int id)
{
  if (auto size = datatype_size(id))
    return *size;
  throw InputError({}, datatype_error(id));
}

// ---------------------------------------------------------------- actions

namespace {

enum class Action : std::uint8_t {
  Init,
  Finalize,
  Compute,
  Sleep,
  Send,
  Ssend,
  Isend,
  Issend,
  Recv,
  Irecv,
  Test,
  Wait,
  Waitall,
  Waitany,
  SendRecv,
  Barrier,
  Bcast,
  Reduce,
  Allreduce,
  Alltoall,
  Alltoallv,
  Gather,
  Gatherv,
  Allgather,
  Allgatherv,
  Scatter,
  Scatterv,
  ReduceScatter,
  Scan,
  Exscan,
  CommSize,
  CommSplit,
  CommDup,
  Location,  // "location <file> <line>": the call location smpi/comp-adjustment-file keys on
  Ignored,   // testall, testany
};

struct ActionName {
  std::string_view name;
  Action action;
  /// The nonblocking collective of `action` (SMPI 3.32 writes MPI_Iallreduce as "iallreduce" with the
  /// arguments of "allreduce"): the record gets a request, completed by a wait/test naming the
  /// collective's tag (tit_nbc_tag).
  bool nonblocking = false;
};
// Spellings accepted, most frequent first. SMPI 3.32 writes "Ssend", "ISsend", "sendRecv" and "waitAny";
// the lower-case forms are accepted too.
constexpr ActionName kActions[] = {
    {"compute", Action::Compute},
    {"isend", Action::Isend},
    {"irecv", Action::Irecv},
    {"wait", Action::Wait},
    {"send", Action::Send},
    {"recv", Action::Recv},
    {"waitall", Action::Waitall},
    {"test", Action::Test},
    {"allreduce", Action::Allreduce},
    {"sendRecv", Action::SendRecv},
    {"sendrecv", Action::SendRecv},
    {"Ssend", Action::Ssend},
    {"ssend", Action::Ssend},
    {"ISsend", Action::Issend},
    {"issend", Action::Issend},
    {"waitAny", Action::Waitany},
    {"waitany", Action::Waitany},
    {"barrier", Action::Barrier},
    {"bcast", Action::Bcast},
    {"reduce", Action::Reduce},
    {"alltoall", Action::Alltoall},
    {"alltoallv", Action::Alltoallv},
    {"gather", Action::Gather},
    {"gatherv", Action::Gatherv},
    {"allgather", Action::Allgather},
    {"allgatherv", Action::Allgatherv},
    {"scatter", Action::Scatter},
    {"scatterv", Action::Scatterv},
    {"reducescatter", Action::ReduceScatter},
    {"scan", Action::Scan},
    {"exscan", Action::Exscan},
    {"sleep", Action::Sleep},
    {"init", Action::Init},
    {"finalize", Action::Finalize},
    {"comm_size", Action::CommSize},
    {"comm_split", Action::CommSplit},
    {"comm_dup", Action::CommDup},
    {"location", Action::Location},
    {"testall", Action::Ignored},
    {"testany", Action::Ignored},
    // Nonblocking collectives, as `smpirun -trace-ti` (SimGrid 3.32) writes them. MPI_Comm_idup is not
    // implemented by SMPI 3.32 (it aborts), so it has no spelling.
    {"iallreduce", Action::Allreduce, true},
    {"ibcast", Action::Bcast, true},
    {"ibarrier", Action::Barrier, true},
    {"ireduce", Action::Reduce, true},
    {"iallgather", Action::Allgather, true},
    {"ialltoall", Action::Alltoall, true},
    {"igather", Action::Gather, true},
    {"iscatter", Action::Scatter, true},
    {"ialltoallv", Action::Alltoallv, true},
    {"iallgatherv", Action::Allgatherv, true},
    {"igatherv", Action::Gatherv, true},
    {"iscatterv", Action::Scatterv, true},
    {"ireducescatter", Action::ReduceScatter, true},
    {"iscan", Action::Scan, true},
    {"iexscan", Action::Exscan, true},
};
constexpr std::size_t kActionSpellings = sizeof kActions / sizeof kActions[0];

/// Index of `name` in kActions, or -1.
int find_action(std::string_view name)
{
  for (std::size_t i = 0; i < kActionSpellings; ++i)
    if (kActions[i].name == name)
      return static_cast<int>(i);
  return -1;
}

bool parse_int(std::string_view s, std::int64_t& out)
{
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

void split_blanks(std::string_view line, std::vector<std::string_view>& tokens)
{
  tokens.clear();
  std::size_t i       = 0;
  const std::size_t n = line.size();
  while (i < n) {
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    if (i == n)
      break;
    std::size_t start = i;
    while (i < n && line[i] != ' ' && line[i] != '\t')
      ++i;
    tokens.push_back(line.substr(start, i - start));
  }
}

}  // namespace

// What the reader of trace files (tit_files.cpp) needs of the line syntax: tit_syntax.hpp.
namespace tit_syntax {

bool parse_integer(std::string_view s, std::int64_t& out)
{
  return parse_int(s, out);
}

void split_tokens(std::string_view line, std::vector<std::string_view>& tokens)
{
  split_blanks(line, tokens);
}

bool is_action_name(std::string_view name)
{
  return find_action(name) >= 0;
}

}  // namespace tit_syntax

std::int32_t tit_nbc_tag(Op op)
{
  // SMPI's COLL_TAG_* (src/smpi/include/private.hpp), measured on this machine with SimGrid 3.32: every one
  // is below -1 and none is MPI_ANY_TAG (-444), so a wait on an isend/irecv is never taken for one.
  switch (op) {
    case Op::Allreduce: return -4446;
    case Op::Bcast: return -3335;
    case Op::Barrier: return -779;
    case Op::Reduce: return -113;
    case Op::Allgather: return -557;
    case Op::Alltoall: return -1113;
    case Op::Gather: return -446;
    case Op::Scatter: return -224;
    case Op::Alltoallv: return -1001;
    case Op::Allgatherv: return -668;
    case Op::Gatherv: return -2224;
    case Op::Scatterv: return -335;
    case Op::ReduceScatter: return -890;
    case Op::Scan:
    case Op::Exscan: return -889;  // shared by SMPI: the oldest pending one of the two is taken
    default: return 0;
  }
}

// ---------------------------------------------------------------- TitLineParser

struct TitLineParser::Impl {
  int np;
  int rank;
  std::string file;
  std::shared_ptr<const TitReadOptions> options;  ///< null: no setting changes costs
  bool skip_other_ranks = false;
  std::uint64_t own_lines = 0, skipped_lines = 0;
  /// The call location as SMPI's replay keeps it (smpi_trace_set_call_location): the current and the
  /// previous `location` line.
  std::string location_file, previous_location_file;
  std::int64_t location_line = 0, previous_location_line = 0;

  std::uint64_t default_dt  = kByteSize;
  detail::PendingRequests pending;

  std::vector<std::string_view> tok;
  std::uint64_t line_no = 0;
  std::string_view action_name;

  const FunctionTable* cached_table = nullptr;
  std::array<std::int64_t, kActionSpellings> function_ids{};

  [[noreturn]] void fail(const std::string& reason) const { throw InputError({file, line_no, "", rank}, reason); }

  std::size_t nargs() const { return tok.size() - 2; }
  std::string_view arg(std::size_t i) const { return tok[i + 2]; }

  void expect_args(std::size_t min, std::size_t max) const
  {
    std::size_t n = nargs();
    if (n >= min && n <= max)
      return;
    std::string expected = min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max);
    fail(std::string(action_name) + " expects " + expected + " argument" + (max == 1 ? "" : "s") + ", got " +
         std::to_string(n));
  }

  [[noreturn]] void bad_arg(std::size_t i, const char* what, const char* problem) const
  {
    fail(std::string(action_name) + ": argument " + std::to_string(i + 1) + " (" + what + ") '" + std::string(arg(i)) +
         "' " + problem);
  }

  std::int64_t integer(std::size_t i, const char* what) const
  {
    std::int64_t v;
    if (not parse_int(arg(i), v))
      bad_arg(i, what, "is not an integer");
    return v;
  }

  /// A count or size: a non-negative integer (an integral floating-point value is accepted too).
  std::uint64_t count(std::size_t i, const char* what) const
  {
    std::string_view s = arg(i);
    std::int64_t v;
    if (parse_int(s, v)) {
      if (v < 0)
        bad_arg(i, what, "is negative");
      return static_cast<std::uint64_t>(v);
    }
    const double d = amount(i, what);
    if (d != std::floor(d) || d > 9007199254740992.0)
      bad_arg(i, what, "is not an integer");
    return static_cast<std::uint64_t>(d);
  }

  /// Flops or seconds: a finite number >= 0.
  double amount(std::size_t i, const char* what) const
  {
    std::string_view s = arg(i);
    double d;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec != std::errc() || p != s.data() + s.size() || not std::isfinite(d))
      bad_arg(i, what, "is not a number");
    if (d < 0)
      bad_arg(i, what, "is negative");
    return d;
  }

  /// A world rank in [0, np); negative values mean any source when `any_ok`.
  std::int32_t peer(std::size_t i, const char* what, bool any_ok) const
  {
    std::int64_t v = integer(i, what);
    if (v < 0) {
      if (any_ok)
        return kAnySource;
      bad_arg(i, what, "is negative");
    }
    if (v >= np)
      fail(std::string(action_name) + ": argument " + std::to_string(i + 1) + " (" + what + ") is rank " +
           std::to_string(v) + ", but the trace has " + std::to_string(np) + " ranks");
    return static_cast<std::int32_t>(v);
  }

  std::int32_t tag(std::size_t i, bool any_ok) const
  {
    std::int64_t v = integer(i, "tag");
    if (v < 0) {
      if (any_ok)
        return kAnyTag;
      bad_arg(i, "tag", "is negative");
    }
    if (v > std::numeric_limits<std::int32_t>::max())
      bad_arg(i, "tag", "is out of range");
    return static_cast<std::int32_t>(v);
  }

  std::int32_t root(std::size_t i) const
  {
    if (i >= nargs())
      return 0;
    std::int64_t v = integer(i, "root");
    if (v < 0 || v >= np)
      fail(std::string(action_name) + ": root " + std::to_string(v) + " is not a rank of the " + std::to_string(np) +
           " ranks");
    return static_cast<std::int32_t>(v);
  }

  /// Size of the datatype in argument `i`, or the default datatype when the line is shorter.
  std::uint64_t datatype(std::size_t i) const
  {
    if (i >= nargs())
      return default_dt;
    std::int64_t id = integer(i, "datatype");
    if (auto size = datatype_size(id))
      return *size;
    fail(std::string(action_name) + ": " + datatype_error(id));
  }

  std::uint64_t bytes(std::uint64_t count, std::uint64_t dt_size) const
  {
    if (dt_size != 0 && count > std::numeric_limits<std::uint64_t>::max() / dt_size)
      fail(std::string(action_name) + ": byte count overflows");
    return count * dt_size;
  }

  /// `n` counts starting at argument `first`, times `dt_size`.
  void counts(std::size_t first, std::size_t n, std::uint64_t dt_size, std::vector<std::uint64_t>& out) const
  {
    out.resize(n);
    for (std::size_t k = 0; k < n; ++k)
      out[k] = bytes(count(first + k, "count"), dt_size);
  }

  void post(CallRecord& out, detail::RequestKey key) { out.request = pending.post(key); }

  /// Request of the oldest pending isend/irecv matching "src dst tag", or of the oldest pending nonblocking
  /// collective whose SMPI tag (tit_nbc_tag) is `tag`; removed when `remove`. SMPI writes "wait S S TAG"
  /// for a nonblocking collective, S being the world rank of the actor whose pid is the rank's place in the
  /// communicator (-333, MPI_UNDEFINED, at place 0): S says nothing a replay needs, the tag says which op.
  std::int64_t resolve(bool remove)
  {
    expect_args(3, 3);
    std::int64_t src = integer(0, "src"), dst = integer(1, "dst"), tg = integer(2, "tag");
    if (auto id = pending.find(src, dst, tg, remove))
      return *id;
    fail(std::string(action_name) + " for " + std::string(arg(0)) + " " + std::string(arg(1)) + " " +
         std::string(arg(2)) + " matches no isend/irecv or nonblocking collective");
  }

  std::uint32_t function_id(int spelling, FunctionTable& functions)
  {
    if (cached_table != &functions) {
      cached_table = &functions;
      function_ids.fill(-1);
    }
    auto& id = function_ids[static_cast<std::size_t>(spelling)];
    if (id < 0)
      id = functions.intern(kActions[spelling].name);
    return static_cast<std::uint32_t>(id);
  }

  /// The speedup smpi/comp-adjustment-file gives the current location (1 when it names none).
  double speedup() const
  {
    if (not options || options->speedup_by_location.empty())
      return 1;
    const std::string key = previous_location_file + ':' + std::to_string(previous_location_line) + ':' +
                            location_file + ':' + std::to_string(location_line);
    auto it = options->speedup_by_location.find(key);
    return it == options->speedup_by_location.end() ? 1 : it->second;
  }

  void set_location()
  {
    expect_args(2, 2);
    previous_location_file = std::move(location_file);
    previous_location_line = location_line;
    std::string_view f     = arg(0);
    if (not options->absolute_location_paths)  // SMPI keys on the base name unless told otherwise
      if (auto slash = f.rfind('/'); slash != std::string_view::npos)
        f.remove_prefix(slash + 1);
    location_file = std::string(f);
    location_line = integer(1, "line");
  }

  bool parse(std::string_view line, std::uint64_t number, CallRecord& out, FunctionTable& functions);
  void parse_collective(Action action, CallRecord& out);
};

bool TitLineParser::Impl::parse(std::string_view line, std::uint64_t number, CallRecord& out, FunctionTable& functions)
{
  line_no = number;
  split_blanks(line, tok);
  if (tok.empty() || tok[0].front() == '#')
    return false;
  std::int64_t line_rank;
  if (not parse_int(tok[0], line_rank))
    fail("expected '<rank> <action> ...', got '" + std::string(tok[0]) + "' as the rank");
  if (line_rank != rank) {
    if (skip_other_ranks) {
      ++skipped_lines;
      return false;
    }
    fail("line of rank " + std::to_string(line_rank) + " in the trace of rank " + std::to_string(rank));
  }
  ++own_lines;
  if (tok.size() < 2)
    fail("missing action after the rank");
  action_name  = tok[1];
  int spelling = find_action(action_name);
  if (spelling < 0)
    fail("unknown action '" + std::string(action_name) + "'");
  const Action action = kActions[spelling].action;
  if (action == Action::Ignored)
    return false;
  if (action == Action::Location) {
    if (options && not options->speedup_by_location.empty())
      set_location();
    return false;
  }

  out.clear();
  out.line     = number;
  out.function = function_id(spelling, functions);

  switch (action) {
    case Action::Init:
      expect_args(0, 1);
      out.op = Op::Init;
      if (nargs() == 1)  // SMPI's replay: an argument to init makes MPI_DOUBLE the default datatype
        default_dt = kDoubleSize;
      break;
    case Action::Finalize:
    case Action::Barrier:
      expect_args(0, 0);
      out.op = action == Action::Finalize ? Op::Finalize : Op::Barrier;
      break;
    case Action::Compute:
      expect_args(1, 1);
      out.op    = Op::Compute;
      out.flops = amount(0, "flops") / speedup();
      break;
    case Action::Sleep:
      expect_args(1, 1);
      out.op      = Op::Sleep;
      out.seconds = amount(0, "seconds") / speedup();
      break;
    case Action::Send:
    case Action::Ssend:
    case Action::Isend:
    case Action::Issend: {
      expect_args(3, 4);
      out.op    = action == Action::Send    ? Op::Send
                  : action == Action::Ssend ? Op::Ssend
                  : action == Action::Isend ? Op::Isend
                                            : Op::Issend;
      out.peer  = peer(0, "dst", false);
      out.tag   = tag(1, false);
      out.bytes = bytes(count(2, "count"), datatype(3));
      if (action == Action::Isend || action == Action::Issend)
        post(out, {static_cast<std::int32_t>(rank), out.peer, out.tag});
      break;
    }
    case Action::Recv:
    case Action::Irecv:
      expect_args(3, 4);
      out.op    = action == Action::Recv ? Op::Recv : Op::Irecv;
      out.peer  = peer(0, "src", true);
      out.tag   = tag(1, true);
      out.bytes = bytes(count(2, "count"), datatype(3));
      if (action == Action::Irecv)
        post(out, {out.peer, static_cast<std::int32_t>(rank), out.tag});
      break;
    case Action::Test:
      out.op      = Op::Test;
      out.request = resolve(false);  // a test does not complete the request for good: a wait may follow
      break;
    case Action::Wait:
      out.op      = Op::Wait;
      out.request = resolve(true);
      break;
    case Action::Waitall:
      expect_args(0, 1);
      if (nargs() == 1)
        count(0, "count");
      out.op = Op::Waitall;
      pending.take_last(out.requests, pending.list.size(), true);
      break;
    case Action::Waitany: {
      expect_args(0, 1);
      std::uint64_t k = nargs() == 1 ? count(0, "count") : pending.list.size();
      out.op          = Op::Waitany;
      // TIT does not say which request completed: offer the k most recent pending ones and keep them pending
      // (a later wait/waitall on a completed request is a no-op).
      pending.take_last(out.requests, static_cast<std::size_t>(std::min<std::uint64_t>(k, pending.list.size())), false);
      break;
    }
    case Action::SendRecv:
      expect_args(4, 6);
      out.op         = Op::Sendrecv;
      out.peer       = peer(1, "dst", false);
      out.tag        = 0;
      out.bytes      = bytes(count(0, "sendcount"), datatype(4));
      out.src        = peer(3, "src", true);
      out.recv_tag   = 0;
      out.recv_bytes = bytes(count(2, "recvcount"), datatype(5));
      break;
    default:  // the collectives and communicator calls
      parse_collective(action, out);
      break;
    case Action::Location:
    case Action::Ignored:
      return false;
  }
  if (kActions[spelling].nonblocking) {
    out.request = pending.post({0, 0, 0}, tit_nbc_tag(out.op));
  }
  return true;
}

/// The arguments of a collective or communicator action (everything parse() does not read itself).
void TitLineParser::Impl::parse_collective(Action action, CallRecord& out)
{
  const auto n = static_cast<std::size_t>(np);
  switch (action) {
    case Action::Bcast:
      expect_args(1, 3);
      out.op    = Op::Bcast;
      out.root  = root(1);
      out.bytes = bytes(count(0, "count"), datatype(2));
      break;
    case Action::Reduce:
      expect_args(2, 4);
      out.op    = Op::Reduce;
      out.flops = amount(1, "comp_flops");
      out.root  = root(2);
      out.bytes = bytes(count(0, "count"), datatype(3));
      break;
    case Action::Allreduce:
    case Action::Scan:
    case Action::Exscan:
      expect_args(2, 3);
      out.op    = action == Action::Allreduce ? Op::Allreduce : action == Action::Scan ? Op::Scan : Op::Exscan;
      out.flops = amount(1, "comp_flops");
      out.bytes = bytes(count(0, "count"), datatype(2));
      break;
    case Action::Alltoall:
    case Action::Allgather:
      expect_args(2, 4);
      out.op         = action == Action::Alltoall ? Op::Alltoall : Op::Allgather;
      out.bytes      = bytes(count(0, "sendcount"), datatype(2));
      out.recv_bytes = bytes(count(1, "recvcount"), datatype(3));
      break;
    case Action::Gather:
    case Action::Scatter:
      expect_args(2, 5);
      out.op         = action == Action::Gather ? Op::Gather : Op::Scatter;
      out.root       = root(2);
      out.bytes      = bytes(count(0, "sendcount"), datatype(3));
      out.recv_bytes = bytes(count(1, "recvcount"), datatype(4));
      break;
    case Action::Alltoallv: {
      // <send_buf_size> <sendcounts x np> <recv_buf_size> <recvcounts x np> [sdt rdt]
      expect_args(2 * n + 2, 2 * n + 4);
      out.op = Op::Alltoallv;
      count(0, "send_buf_size");
      count(n + 1, "recv_buf_size");
      std::uint64_t sdt = datatype(2 * n + 2), rdt = datatype(2 * n + 3);
      counts(1, n, sdt, out.counts);
      counts(n + 2, n, rdt, out.recv_counts);
      break;
    }
    case Action::Gatherv:
    case Action::Allgatherv: {
      // gatherv: <sendcount> <recvcounts x np> [root] [sdt rdt]; allgatherv: the same without the root
      const std::size_t r = action == Action::Gatherv ? 1 : 0;  // the root's slot, which shifts the datatypes
      expect_args(n + 1, n + 3 + r);
      out.op = action == Action::Gatherv ? Op::Gatherv : Op::Allgatherv;
      if (r == 1)
        out.root = root(n + 1);
      out.bytes = bytes(count(0, "sendcount"), datatype(n + 1 + r));
      counts(1, n, datatype(n + 2 + r), out.recv_counts);
      break;
    }
    case Action::Scatterv:
      // <sendcounts x np> <recvcount> [root] [sdt rdt]
      expect_args(n + 1, n + 4);
      out.op   = Op::Scatterv;
      out.root = root(n + 1);
      counts(0, n, datatype(n + 2), out.counts);
      out.recv_bytes = bytes(count(n, "recvcount"), datatype(n + 3));
      break;
    case Action::ReduceScatter:
      // <recvcounts x np> <comp_flops> [dt]
      expect_args(n + 1, n + 2);
      out.op    = Op::ReduceScatter;
      out.flops = amount(n, "comp_flops");
      counts(0, n, datatype(n + 1), out.recv_counts);
      break;
    case Action::CommSize:
      out.op = Op::CommSize;  // arguments, if any, have no simulated effect
      break;
    case Action::CommSplit:
      out.op = Op::CommSplit;  // TIT records no color: a split of world into world (new_comm 0)
      break;
    case Action::CommDup:
      out.op = Op::CommDup;
      break;
    default:
      break;
  }
}

TitLineParser::TitLineParser(int np, int rank, std::string file, std::shared_ptr<const TitReadOptions> options)
    : impl_(std::make_unique<Impl>())
{
  if (np < 1 || rank < 0 || rank >= np)
    throw InternalError("TitLineParser: rank " + std::to_string(rank) + " not in [0, " + std::to_string(np) + ")");
  impl_->np   = np;
  impl_->rank = rank;
  impl_->file    = std::move(file);
  impl_->options = std::move(options);
  impl_->tok.reserve(16);
}
TitLineParser::~TitLineParser()                                   = default;
TitLineParser::TitLineParser(TitLineParser&&) noexcept            = default;
TitLineParser& TitLineParser::operator=(TitLineParser&&) noexcept = default;

bool TitLineParser::parse(std::string_view line, std::uint64_t line_no, CallRecord& out, FunctionTable& functions)
{
  return impl_->parse(line, line_no, out, functions);
}
void TitLineParser::skip_other_ranks()
{
  impl_->skip_other_ranks = true;
}
std::uint64_t TitLineParser::own_lines() const
{
  return impl_->own_lines;
}
std::uint64_t TitLineParser::skipped_lines() const
{
  return impl_->skipped_lines;
}
int TitLineParser::np() const
{
  return impl_->np;
}
int TitLineParser::rank() const
{
  return impl_->rank;
}
std::vector<std::int64_t> TitLineParser::pending_requests() const
{
  std::vector<std::int64_t> ids;
  impl_->pending.take_last(ids, impl_->pending.list.size(), false);
  return ids;
}

void parse_tit_line(std::string_view line, int np, CallRecord& out, FunctionTable& functions, const std::string& file,
                    std::uint64_t line_no, int rank)
{
  TitLineParser parser(np, rank, file);
  if (not parser.parse(line, line_no, out, functions))
    out.clear();
}

}  // namespace gridcast::models
