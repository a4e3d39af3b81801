// The recording bodies of the point-to-point family, shared by the C wrappers (hook_mpi.cpp) and the
// Fortran ones (hook_fortran_p2p.cpp): each body takes the PMPI call to make, so that a Fortran entry
// records through the very code of its C twin. Internal to the hook.
#pragma once

#include "core.hpp"
#include "comms.hpp"
#include "mpi_record.hpp"
#include "requests.hpp"

#include <mpi.h>

#include <cstdio>
#include <mutex>
#include <unordered_map>

#pragma GCC visibility push(hidden)
namespace gridcast::hook {

inline void fill_p2p(RawRecord& r, const void* buf, int count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm)
{
  r.peer = world_of(comm, peer);
  r.tag = tag;
  r.bytes = type_bytes(count, dt);
  r.comm = comm_id(comm);
  mark_device(r, buf);
}

template <typename Pmpi>
int send_like(Fn fn, Pmpi pmpi, const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  Call c(fn);
  int rc = pmpi(buf, count, dt, dest, tag, comm);
  if (c) {
    fill_p2p(c.r, buf, count, dt, dest, tag, comm);
    c.finish();
  }
  return rc;
}

/// `where`: where the application keeps the request, when not at `request` (Fortran's INTEGER handle).
template <typename Pmpi>
int isend_like(Fn fn, Pmpi pmpi, const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
               MPI_Request* request, Where where = nullptr)
{
  Call c(fn);
  int rc = pmpi(buf, count, dt, dest, tag, comm, request);
  if (c) {
    fill_p2p(c.r, buf, count, dt, dest, tag, comm);
    c.r.request = new_request(*request, where != nullptr ? where : request);
    c.finish();
  }
  return rc;
}

inline void fill_probe(RawRecord& r, int source, int tag, MPI_Comm comm, const MPI_Status* status, bool found)
{
  r.peer = world_of(comm, source);
  r.tag = tag;
  r.comm = comm_id(comm);
  if (found) {
    r.flags |= kFlagOutcome;
    r.src = world_of(comm, status->MPI_SOURCE);
    r.recv_tag = status->MPI_TAG;
    int n = 0;
    PMPI_Get_count(status, MPI_BYTE, &n);
    r.recv_bytes = n < 0 ? 0 : static_cast<std::uint64_t>(n);
  }
}

/// MPI_ERRORS_ARE_FATAL ends the process inside MPI, past atexit: this handler, installed on
/// MPI_COMM_WORLD in its place (communicators created from it inherit it), keeps the records first and
/// then aborts exactly as the default would. An application that sets its own handler replaces it.
inline void fatal_error_handler(MPI_Comm* comm, int* code, ...)
{
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  PMPI_Error_string(*code, text, &len);
  std::fprintf(stderr, "gridcast-hook: MPI error (%s): records kept, aborting as MPI_ERRORS_ARE_FATAL would\n", text);
  on_abort(*code);
  PMPI_Abort(*comm, *code);
}

inline void after_init()
{
  register_comm(MPI_COMM_WORLD);  // id 0
  MPI_Errhandler current;
  PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &current);
  if (current == MPI_ERRORS_ARE_FATAL) {
    MPI_Errhandler mine;
    PMPI_Comm_create_errhandler(fatal_error_handler, &mine);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, mine);
  }
}

/// A process that MPI_Comm_spawn started inherits LD_PRELOAD and the hook's settings, but it is not a rank
/// of the profiled world: its own world rank 0 would overwrite the parent's rank 0 files. It records
/// nothing (the parent's dynamic_process record says that it existed).
inline bool spawned_child()
{
#if GRIDCAST_HOOK_SMPI
  return false;  // SMPI has no dynamic processes (its MPI_Comm_get_parent aborts)
#endif
  MPI_Comm parent = MPI_COMM_NULL;
  PMPI_Comm_get_parent(&parent);
  return parent != MPI_COMM_NULL;
}

/// What both initialisations do once MPI is up: start this rank's recording, and the record of the call
/// (timed from `t0`, before PMPI's own initialisation).
inline RawRecord init_record(Fn fn, std::int64_t t0)
{
  after_init();
  int rank = 0, size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int length = 0;
  if (PMPI_Get_library_version(library, &length) != MPI_SUCCESS)
    library[0] = '\0';
  on_init(rank, size, t0, library);
  RawRecord r;
  r.fn             = static_cast<std::uint16_t>(fn);
  r.start_ticks    = t0;
  r.duration_ticks = now_ticks() - t0;
  return r;
}

// ------------------------------------------------------------------ init and finalize

/// Where the record of MPI_Init starts, read before the call (`before`). Under SMPI the clock only becomes
/// the simulated one once MPI_Init has made the caller an SMPI process (before, smpi_clock_gettime reads
/// the host's clock): the record starts at its end, where simulated time is 0 for every rank.
inline std::int64_t init_start(std::int64_t before)
{
#if GRIDCAST_HOOK_SMPI
  (void)before;
  return now_ticks();
#else
  return before;
#endif
}

template <typename Pmpi>
int init_body(Pmpi pmpi, int* argc, char*** argv)
{
  std::int64_t t0 = now_ticks();
  int rc = pmpi(argc, argv);
  t0 = init_start(t0);
  if (rc == MPI_SUCCESS && config().enabled && not spawned_child())
    append(init_record(Fn::MPI_Init, t0));
  return rc;
}

template <typename Pmpi>
int init_thread_body(Pmpi pmpi, int* argc, char*** argv, int required, int* provided)
{
  std::int64_t t0 = now_ticks();
  int rc = pmpi(argc, argv, required, provided);
  t0 = init_start(t0);
  if (rc == MPI_SUCCESS && config().enabled && not spawned_child()) {
    RawRecord r = init_record(Fn::MPI_Init_thread, t0);
    r.tag = required;
    r.root = *provided;
    append(r);
  }
  return rc;
}

template <typename Pmpi>
int finalize_body(Pmpi pmpi)
{
  if (recording()) {
    // The trace ends where MPI_Finalize begins: record it, then flush before MPI tears down.
    RawRecord r;
    r.fn = static_cast<std::uint16_t>(Fn::MPI_Finalize);
    r.start_ticks = now_ticks();
    append(r);
    on_finalize(r.start_ticks);
  }
  return pmpi();
}

// ------------------------------------------------------------------ point to point

template <typename Pmpi>
int recv_body(Pmpi pmpi, void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Recv);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = pmpi(buf, count, dt, source, tag, comm, st);
  if (c) {
    fill_p2p(c.r, buf, count, dt, source, tag, comm);
    if (source != MPI_PROC_NULL)
      c.r.src = world_of(comm, st->MPI_SOURCE);  // who actually sent it (differs with MPI_ANY_SOURCE)
    c.finish();
  }
  return rc;
}

template <typename Pmpi>
int irecv_body(Pmpi pmpi, void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request* req,
               Where where = nullptr)
{
  Call c(Fn::MPI_Irecv);
  int rc = pmpi(buf, count, dt, source, tag, comm, req);
  if (c) {
    fill_p2p(c.r, buf, count, dt, source, tag, comm);
    c.r.request = new_request(*req, where != nullptr ? where : req);
    c.finish();
  }
  return rc;
}

template <typename Pmpi>
int sendrecv_body(Pmpi pmpi, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Sendrecv);
  int rc = pmpi(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, status);
  if (c) {
    fill_p2p(c.r, sendbuf, sendcount, sendtype, dest, sendtag, comm);
    c.r.src = world_of(comm, source);
    c.r.recv_tag = recvtag;
    c.r.recv_bytes = type_bytes(recvcount, recvtype);
    c.finish();
  }
  return rc;
}

template <typename Pmpi>
int sendrecv_replace_body(Pmpi pmpi, void* buf, int count, MPI_Datatype dt, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Sendrecv_replace);
  int rc = pmpi(buf, count, dt, dest, sendtag, source, recvtag, comm, status);
  if (c) {
    fill_p2p(c.r, buf, count, dt, dest, sendtag, comm);
    c.r.src = world_of(comm, source);
    c.r.recv_tag = recvtag;
    c.r.recv_bytes = c.r.bytes;
    c.finish();
  }
  return rc;
}

template <typename Pmpi>
int probe_body(Pmpi pmpi, int source, int tag, MPI_Comm comm, MPI_Status* status)
{
  Call c(Fn::MPI_Probe);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = pmpi(source, tag, comm, st);
  if (c) {
    fill_probe(c.r, source, tag, comm, st, rc == MPI_SUCCESS);
    c.finish();
  }
  return rc;
}

/// Argument identity of a probe, for folding identical failed ones.
inline PollKey probe_key(Fn fn, int source, int tag, MPI_Comm comm)
{
  return {mix(mix(mix(static_cast<std::uint64_t>(fn), reinterpret_cast<std::uintptr_t>(comm)), static_cast<std::uint32_t>(source)),
              static_cast<std::uint32_t>(tag))};
}

template <typename Pmpi>
[[gnu::noinline]] inline int iprobe_timed(Pmpi pmpi, PollKey key, int source, int tag, MPI_Comm comm, int* flag, MPI_Status* st)
{
  Call c(Fn::MPI_Iprobe, key);
  int rc = pmpi(source, tag, comm, flag, st);
  if (c) {
    bool found = rc == MPI_SUCCESS && *flag;
    if (c.fold_if_repeated(not found))
      return rc;
    fill_probe(c.r, source, tag, comm, st, found);
    c.finish_poll(not found);
  }
  return rc;
}

[[gnu::noinline]] inline int iprobe_untimed_end(PollKey key, int source, int tag, MPI_Comm comm, MPI_Status* st, bool found,
                                                int rc)
{
  Call c(Fn::MPI_Iprobe, key, Call::AfterUntimed{});
  if (not c.fold_if_repeated(not found)) {
    fill_probe(c.r, source, tag, comm, st, found);
    c.finish_poll(not found);
  }
  return rc;
}

// ------------------------------------------------------------------ wait and test

/// A wait or test of one request returned (`done`: it completed): returns its id when `recorded` or when
/// MPI freed it, looked up before forget_request() drops it; a completed persistent request becomes
/// inactive.
inline std::int64_t settle_one(MPI_Request before, MPI_Request* request, bool done, bool recorded, Where where)
{
  const bool freed = before != MPI_REQUEST_NULL && *request == MPI_REQUEST_NULL;
  std::int64_t id = recorded || freed ? request_id(before, where != nullptr ? where : request) : -1;
  if (freed)
    forget_request(before, id);
  else if (done)
    completed_persistent(before);
  return id;
}

template <typename Pmpi>
int wait_body(Pmpi pmpi, MPI_Request* request, MPI_Status* status, Where where = nullptr)
{
  Call c(Fn::MPI_Wait);
  MPI_Request before = *request;
  int rc = pmpi(request, status);
  std::int64_t id = settle_one(before, request, true, static_cast<bool>(c), where);
  if (c) {
    c.r.request = id;
    c.finish();
  }
  return rc;
}

/// MPI_Test after the PMPI call.
inline int test_after(Call& c, MPI_Request before, MPI_Request* request, int* flag, int rc, Where where = nullptr)
{
  if (c && c.fold_if_repeated(not *flag))
    return rc;  // nothing completed: nothing to forget
  std::int64_t id = settle_one(before, request, *flag, static_cast<bool>(c), where);
  if (c) {
    c.r.request = id;
    if (*flag)
      c.r.flags |= kFlagOutcome;
    c.finish_poll(not *flag);
  }
  return rc;
}

[[gnu::noinline]] inline int test_untimed_end(PollKey key, MPI_Request before, MPI_Request* request, int* flag, int rc)
{
  Call c(Fn::MPI_Test, key, Call::AfterUntimed{});
  return test_after(c, before, request, flag, rc);
}

template <typename Pmpi>
[[gnu::noinline]] inline int test_timed(Pmpi pmpi, PollKey key, MPI_Request* request, int* flag, MPI_Status* status,
                                        Where where = nullptr)
{
  MPI_Request before = *request;
  Call c(Fn::MPI_Test, key);
  int rc = pmpi(request, flag, status);
  return test_after(c, before, request, flag, rc, where);
}

// The untimed path is this function's own (see untimed_poll): the rest lives in functions of their own,
// so that this one saves few registers (stores, before Open MPI's barrier).

template <typename Pmpi>
int waitall_body(Pmpi pmpi, int count, MPI_Request requests[], MPI_Status statuses[],
    Where where = nullptr, std::size_t stride = sizeof(MPI_Request))
{
  Call c(Fn::MPI_Waitall);
  RequestIds ids(count, requests, where, stride);
  int rc = pmpi(count, requests, statuses);
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  ids.all_completed(requests);
  if (c)
    c.finish(ExtraKind::Requests, ids.ids, ids.count);
  return rc;
}

template <typename Pmpi>
int testall_body(Pmpi pmpi, int count, MPI_Request requests[], int* flag, MPI_Status statuses[],
    Where where = nullptr, std::size_t stride = sizeof(MPI_Request))
{
  RequestIds ids(count, requests, where, stride);
  Call c(Fn::MPI_Testall, PollKey{ids.key(Fn::MPI_Testall)});
  int rc = pmpi(count, requests, flag, statuses);
  if (c && c.fold_if_repeated(not *flag))
    return rc;  // nothing completed: nothing to forget
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*flag)
    ids.all_completed(requests);
  if (c) {
    if (*flag)
      c.r.flags |= kFlagOutcome;
    c.finish_poll(not *flag, ExtraKind::Requests, ids.ids, ids.count);
  }
  return rc;
}

template <typename Pmpi>
int waitany_body(Pmpi pmpi, int count, MPI_Request requests[], int* index, MPI_Status* status,
    Where where = nullptr, std::size_t stride = sizeof(MPI_Request))
{
  Call c(Fn::MPI_Waitany);
  RequestIds ids(count, requests, where, stride);
  int rc = pmpi(count, requests, index, status);
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*index != MPI_UNDEFINED && *index >= 0)
    ids.completed(requests, static_cast<std::size_t>(*index));
  if (c) {
    if (*index != MPI_UNDEFINED && *index >= 0 && static_cast<std::size_t>(*index) < ids.count) {
      c.r.flags |= kFlagOutcome;
      c.r.request = ids.ids[*index];
    }
    c.finish(ExtraKind::Requests, ids.ids, ids.count);
  }
  return rc;
}

/// MPI_Testany after the PMPI call.
inline int testany_after(Call& c, RequestIds& ids, MPI_Request requests[], int* index, int* flag, int rc)
{
  const bool done = *flag && *index != MPI_UNDEFINED && *index >= 0 && static_cast<std::size_t>(*index) < ids.count;
  if (c && c.fold_if_repeated(not done))
    return rc;  // nothing completed: nothing to forget
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (done)
    ids.completed(requests, static_cast<std::size_t>(*index));
  if (c) {
    if (done) {
      c.r.flags |= kFlagOutcome;
      c.r.request = ids.ids[*index];
    }
    // flag set with MPI_UNDEFINED (no active request) is a poll that found nothing too
    c.finish_poll(not done, ExtraKind::Requests, ids.ids, ids.count);
  }
  return rc;
}

constexpr int kFewRequests = 4;  ///< Testany's untimed path: at most this many requests

[[gnu::noinline]] inline int testany_untimed_end(PollKey key, int count, const MPI_Request* before, MPI_Request requests[],
                                                 int* index, int* flag, int rc)
{
  RequestIds ids(count, before, requests);
  Call c(Fn::MPI_Testany, key, Call::AfterUntimed{});
  return testany_after(c, ids, requests, index, flag, rc);
}

template <typename Pmpi>
[[gnu::noinline]] inline int testany_timed(Pmpi pmpi, int count, MPI_Request requests[], int* index, int* flag,
                                           MPI_Status* status, Where where = nullptr,
                                           std::size_t stride = sizeof(MPI_Request))
{
  RequestIds ids(count, requests, where, stride);
  Call c(Fn::MPI_Testany, PollKey{ids.key(Fn::MPI_Testany)});
  int rc = pmpi(count, requests, index, flag, status);
  return testany_after(c, ids, requests, index, flag, rc);
}

/// Waitsome/Testsome: the continuation values are every request id, then the ids that completed;
/// `root` holds how many requests there were.
inline void finish_some(Call& c, const RequestIds& ids, int outcount, const int* indices, bool poll)
{
  std::vector<std::int64_t> done;
  if (outcount != MPI_UNDEFINED)
    for (int i = 0; i < outcount; ++i)
      if (indices[i] >= 0 && static_cast<std::size_t>(indices[i]) < ids.count)
        done.push_back(ids.ids[indices[i]]);
  if (not done.empty())
    c.r.flags |= kFlagOutcome;
  c.r.root = static_cast<std::int32_t>(ids.count);
  if (poll)
    c.finish_poll(done.empty(), ExtraKind::Requests, ids.ids, ids.count, done.data(),
                  done.size());
  else
    c.finish(ExtraKind::Requests, ids.ids, ids.count, done.data(), done.size());
}

/// After MPI_Waitsome or MPI_Testsome completed `*outcount` requests: their ids resolved and forgotten, and
/// the record finished (`poll`: a testsome).
inline void settle_some(Call& c, RequestIds& ids, MPI_Request requests[], int outcount, const int* indices, bool poll)
{
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (outcount != MPI_UNDEFINED)
    for (int i = 0; i < outcount; ++i)
      ids.completed(requests, static_cast<std::size_t>(indices[i]));
  if (c)
    finish_some(c, ids, outcount, indices, poll);
}

template <typename Pmpi>
int waitsome_body(Pmpi pmpi, int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[],
    Where where = nullptr, std::size_t stride = sizeof(MPI_Request))
{
  Call c(Fn::MPI_Waitsome);
  RequestIds ids(incount, requests, where, stride);
  int rc = pmpi(incount, requests, outcount, indices, statuses);
  settle_some(c, ids, requests, *outcount, indices, false);
  return rc;
}

template <typename Pmpi>
int testsome_body(Pmpi pmpi, int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[],
    Where where = nullptr, std::size_t stride = sizeof(MPI_Request))
{
  RequestIds ids(incount, requests, where, stride);
  Call c(Fn::MPI_Testsome, PollKey{ids.key(Fn::MPI_Testsome)});
  int rc = pmpi(incount, requests, outcount, indices, statuses);
  bool none = *outcount == MPI_UNDEFINED || *outcount == 0;
  if (c && c.fold_if_repeated(none))
    return rc;  // nothing completed: nothing to forget
  settle_some(c, ids, requests, *outcount, indices, true);
  return rc;
}

template <typename Pmpi>
int request_free_body(Pmpi pmpi, MPI_Request* request, Where where = nullptr)
{
  Call c(Fn::MPI_Request_free);
  MPI_Request before = *request;
  std::int64_t id = request_id(before, where != nullptr ? where : request);
  int rc = pmpi(request);
  if (before != MPI_REQUEST_NULL) {
    forget_request(before, id);
    forget_persistent(before);
  }
  if (c) {
    c.r.request = id;
    c.finish();
  }
  return rc;
}

// Persistent requests: the init call is a local record; what it will do is kept with its handle.
template <typename Buf>
void rec_persistent_init(Call& c, int rc, StartKind kind, Buf buf, int count, MPI_Datatype dt, int peer, int tag,
                         MPI_Comm comm, MPI_Request* req)
{
  c.r.comm = comm_id(comm);
  if (rc == MPI_SUCCESS) {
    PersistentOp op;
    op.kind = kind;
    op.peer = world_of(comm, peer);
    op.tag = tag;
    op.bytes = type_bytes(count, dt);
    op.comm = c.r.comm;
    op.device = buf != nullptr && is_device_memory(buf);
    add_persistent(*req, op);
  }
  c.finish();
}

template <StartKind kind>
constexpr auto kPersistentInit = [](Call& c, int rc, auto buf, int count, MPI_Datatype dt, int peer, int tag,
                                    MPI_Comm comm, MPI_Request* req) {
  rec_persistent_init(c, rc, kind, buf, count, dt, peer, tag, comm, req);
};

/// Fills the isend/irecv record of one started persistent request, giving its handle a fresh id.
inline void fill_start(RawRecord& r, MPI_Request handle)
{
  PersistentOp op;
  const bool known = find_persistent(handle, op);
  r.key = static_cast<std::int32_t>(known ? op.kind : StartKind::Unknown);
  if (not known)
    return;
  r.peer = op.peer;
  r.tag = op.tag;
  r.bytes = op.bytes;
  r.comm = op.comm;
  if (op.device)
    r.flags |= kFlagDeviceMemory;
  r.request = start_persistent(handle);
}

// Matched probes: the message handle remembers where the probe found its message, for MPI_(I)mrecv.
struct MatchedMessage {
  std::int32_t comm = 0;
  std::int32_t src = -2;  ///< world rank (-3: MPI_PROC_NULL)
  std::int32_t tag = 0;
};
inline std::mutex g_message_mutex;
inline std::unordered_map<MPI_Message, MatchedMessage> g_messages;

inline void remember_message(MPI_Message m, MPI_Comm comm, const MPI_Status* st)
{
  MatchedMessage msg{comm_id(comm), world_of(comm, st->MPI_SOURCE), st->MPI_TAG};
  std::lock_guard<std::mutex> lock(g_message_mutex);
  g_messages[m] = msg;
}

inline MatchedMessage take_message(MPI_Message m)
{
  std::lock_guard<std::mutex> lock(g_message_mutex);
  MatchedMessage msg;
  if (auto it = g_messages.find(m); it != g_messages.end()) {
    msg = it->second;
    g_messages.erase(it);
  }
  return msg;
}

/// MPI_Mrecv/MPI_Imrecv: a receive from where the probe found the message (MPI_MESSAGE_NO_PROC: a
/// receive from MPI_PROC_NULL, which returns at once).
inline void rec_matched_recv(Call& c, const MatchedMessage& msg, const void* buf, int count, MPI_Datatype dt)
{
  c.r.peer = msg.src;
  c.r.src = msg.src;
  c.r.tag = msg.tag;
  c.r.comm = msg.comm;
  c.r.bytes = type_bytes(count, dt);
  mark_device(c.r, buf);
}

template <typename Pmpi>
int start_body(Pmpi pmpi, MPI_Request* req)
{
  Call c(Fn::MPI_Start);
  MPI_Request handle = *req;
  int rc = pmpi(req);
  if (c) {
    fill_start(c.r, handle);
    c.finish();
  }
  return rc;
}

/// One record per request started, in order, the call's time shared between them: each is the
/// isend/irecv it performs.
template <typename Pmpi>
int startall_body(Pmpi pmpi, int count, MPI_Request requests[])
{
  Call c(Fn::MPI_Startall);
  std::vector<MPI_Request> handles(requests, requests + (count < 0 ? 0 : count));
  int rc = pmpi(count, requests);
  if (c) {
    std::int64_t end = now_ticks();
    std::int64_t n = static_cast<std::int64_t>(handles.size());
    for (std::int64_t i = 0; i < n; ++i) {
      RawRecord r = c.r;
      std::int64_t from = c.r.start_ticks + (end - c.r.start_ticks) * i / n;
      std::int64_t to = c.r.start_ticks + (end - c.r.start_ticks) * (i + 1) / n;
      r.start_ticks = from;
      r.duration_ticks = to - from;
      fill_start(r, handles[static_cast<std::size_t>(i)]);
      append(r);
    }
  }
  return rc;
}

}  // namespace gridcast::hook
#pragma GCC visibility pop
