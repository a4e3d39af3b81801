// MPI wrappers of the point-to-point family: every MPI_X calls PMPI_X and records one raw record
// (raw_format.hpp). Init and finalize, sends and receives, probes, waits and tests, persistent requests and
// matched probes. The collectives and communicator calls are in hook_mpi_collectives.cpp; communicators
// and requests are translated to small per-rank ids by comms.cpp and requests.cpp.
#include "core.hpp"
#include "comms.hpp"
#include "fortran.hpp"
#include "mpi_record.hpp"
#include "requests.hpp"

#include <mpi.h>

#include <cstdio>
#include <mutex>
#include <unordered_map>

using namespace gridcast::hook;

namespace {

void fill_p2p(RawRecord& r, const void* buf, int count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm)
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

void fill_probe(RawRecord& r, int source, int tag, MPI_Comm comm, const MPI_Status* status, bool found)
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
void fatal_error_handler(MPI_Comm* comm, int* code, ...)
{
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  PMPI_Error_string(*code, text, &len);
  std::fprintf(stderr, "gridcast-hook: MPI error (%s): records kept, aborting as MPI_ERRORS_ARE_FATAL would\n", text);
  on_abort(*code);
  PMPI_Abort(*comm, *code);
}

void after_init()
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
bool spawned_child()
{
  MPI_Comm parent = MPI_COMM_NULL;
  PMPI_Comm_get_parent(&parent);
  return parent != MPI_COMM_NULL;
}

}  // namespace

namespace {

/// What both initialisations do once MPI is up: start this rank's recording, and the record of the call
/// (timed from `t0`, before PMPI's own initialisation).
RawRecord init_record(Fn fn, std::int64_t t0)
{
  after_init();
  int rank = 0, size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  on_init(rank, size, t0);
  RawRecord r;
  r.fn             = static_cast<std::uint16_t>(fn);
  r.start_ticks    = t0;
  r.duration_ticks = now_ticks() - t0;
  return r;
}

}  // namespace

namespace {

// ------------------------------------------------------------------ init and finalize

template <typename Pmpi>
int init_body(Pmpi pmpi, int* argc, char*** argv)
{
  std::int64_t t0 = now_ticks();
  int rc = pmpi(argc, argv);
  if (rc == MPI_SUCCESS && config().enabled && not spawned_child())
    append(init_record(Fn::MPI_Init, t0));
  return rc;
}

template <typename Pmpi>
int init_thread_body(Pmpi pmpi, int* argc, char*** argv, int required, int* provided)
{
  std::int64_t t0 = now_ticks();
  int rc = pmpi(argc, argv, required, provided);
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
PollKey probe_key(Fn fn, int source, int tag, MPI_Comm comm)
{
  return {mix(mix(mix(static_cast<std::uint64_t>(fn), reinterpret_cast<std::uintptr_t>(comm)), static_cast<std::uint32_t>(source)),
              static_cast<std::uint32_t>(tag))};
}

template <typename Pmpi>
[[gnu::noinline]] static int iprobe_timed(Pmpi pmpi, PollKey key, int source, int tag, MPI_Comm comm, int* flag, MPI_Status* st)
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

[[gnu::noinline]] static int iprobe_untimed_end(PollKey key, int source, int tag, MPI_Comm comm, MPI_Status* st, bool found,
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
static std::int64_t settle_one(MPI_Request before, MPI_Request* request, bool done, bool recorded, Where where)
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
static int test_after(Call& c, MPI_Request before, MPI_Request* request, int* flag, int rc, Where where = nullptr)
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

[[gnu::noinline]] static int test_untimed_end(PollKey key, MPI_Request before, MPI_Request* request, int* flag, int rc)
{
  Call c(Fn::MPI_Test, key, Call::AfterUntimed{});
  return test_after(c, before, request, flag, rc);
}

template <typename Pmpi>
[[gnu::noinline]] static int test_timed(Pmpi pmpi, PollKey key, MPI_Request* request, int* flag, MPI_Status* status,
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
static int testany_after(Call& c, RequestIds& ids, MPI_Request requests[], int* index, int* flag, int rc)
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

[[gnu::noinline]] static int testany_untimed_end(PollKey key, int count, const MPI_Request* before, MPI_Request requests[],
                                                 int* index, int* flag, int rc)
{
  RequestIds ids(count, before, requests);
  Call c(Fn::MPI_Testany, key, Call::AfterUntimed{});
  return testany_after(c, ids, requests, index, flag, rc);
}

template <typename Pmpi>
[[gnu::noinline]] static int testany_timed(Pmpi pmpi, int count, MPI_Request requests[], int* index, int* flag,
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
static void finish_some(Call& c, const RequestIds& ids, int outcount, const int* indices, bool poll)
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

template <typename Pmpi>
int waitsome_body(Pmpi pmpi, int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[],
    Where where = nullptr, std::size_t stride = sizeof(MPI_Request))
{
  Call c(Fn::MPI_Waitsome);
  RequestIds ids(incount, requests, where, stride);
  int rc = pmpi(incount, requests, outcount, indices, statuses);
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*outcount != MPI_UNDEFINED)
    for (int i = 0; i < *outcount; ++i)
      ids.completed(requests, static_cast<std::size_t>(indices[i]));
  if (c)
    finish_some(c, ids, *outcount, indices, false);
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
  if (c)
    ids.resolve();
  ids.forget_completed(requests);
  if (*outcount != MPI_UNDEFINED)
    for (int i = 0; i < *outcount; ++i)
      ids.completed(requests, static_cast<std::size_t>(indices[i]));
  if (c)
    finish_some(c, ids, *outcount, indices, true);
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

}  // namespace

extern "C" {

int MPI_Init(int* argc, char*** argv)
{
  return init_body(PMPI_Init, argc, argv);
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided)
{
  return init_thread_body(PMPI_Init_thread, argc, argv, required, provided);
}

int MPI_Finalize(void)
{
  return finalize_body(PMPI_Finalize);
}

int MPI_Recv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status* status)
{
  return recv_body(PMPI_Recv, buf, count, dt, source, tag, comm, status);
}

int MPI_Irecv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request* req)
{
  return irecv_body(PMPI_Irecv, buf, count, dt, source, tag, comm, req);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status)
{
  return sendrecv_body(PMPI_Sendrecv, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status);
}

int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype dt, int dest, int sendtag, int source, int recvtag,
                         MPI_Comm comm, MPI_Status* status)
{
  return sendrecv_replace_body(PMPI_Sendrecv_replace, buf, count, dt, dest, sendtag, source, recvtag, comm, status);
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status)
{
  return probe_body(PMPI_Probe, source, tag, comm, status);
}

int MPI_Wait(MPI_Request* request, MPI_Status* status)
{
  return wait_body(PMPI_Wait, request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
  return waitall_body(PMPI_Waitall, count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[])
{
  return testall_body(PMPI_Testall, count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status)
{
  return waitany_body(PMPI_Waitany, count, requests, index, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[])
{
  return waitsome_body(PMPI_Waitsome, incount, requests, outcount, indices, statuses);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[])
{
  return testsome_body(PMPI_Testsome, incount, requests, outcount, indices, statuses);
}

int MPI_Request_free(MPI_Request* request)
{
  return request_free_body(PMPI_Request_free, request);
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
  if (recording()) {
    RawRecord r;
    r.fn = static_cast<std::uint16_t>(Fn::MPI_Abort);
    r.start_ticks = now_ticks();
    r.comm = comm_id(comm);
    r.tag = errorcode;
    append(r);
  }
  on_abort(errorcode);
  return PMPI_Abort(comm, errorcode);
}

int MPI_Send(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Send, PMPI_Send, buf, count, dt, dest, tag, comm);
}

int MPI_Bsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Bsend, PMPI_Bsend, buf, count, dt, dest, tag, comm);
}

int MPI_Rsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Rsend, PMPI_Rsend, buf, count, dt, dest, tag, comm);
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
  return send_like(Fn::MPI_Ssend, PMPI_Ssend, buf, count, dt, dest, tag, comm);
}

int MPI_Isend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Isend, PMPI_Isend, buf, count, dt, dest, tag, comm, req);
}

int MPI_Ibsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Ibsend, PMPI_Ibsend, buf, count, dt, dest, tag, comm, req);
}

int MPI_Irsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Irsend, PMPI_Irsend, buf, count, dt, dest, tag, comm, req);
}

int MPI_Issend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return isend_like(Fn::MPI_Issend, PMPI_Issend, buf, count, dt, dest, tag, comm, req);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status)
{
  const PollKey key = probe_key(Fn::MPI_Iprobe, source, tag, comm);
  MPI_Status local;  // the source and size of a found message are recorded
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  if (not untimed_poll(static_cast<std::uint16_t>(Fn::MPI_Iprobe), key.key))
    return iprobe_timed(PMPI_Iprobe, key, source, tag, comm, flag, st);
  ++depth();
  int rc = PMPI_Iprobe(source, tag, comm, flag, st);
  bool found = rc == MPI_SUCCESS && *flag;
  if (not found && fold_untimed(static_cast<std::uint16_t>(Fn::MPI_Iprobe), key.key)) {
    --depth();
    return rc;
  }
  return iprobe_untimed_end(key, source, tag, comm, st, found, rc);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status)
{
  MPI_Request before = *request;
  const PollKey key{mix(static_cast<std::uint64_t>(Fn::MPI_Test), reinterpret_cast<std::uintptr_t>(before))};
  if (not untimed_poll(static_cast<std::uint16_t>(Fn::MPI_Test), key.key))
    return test_timed(PMPI_Test, key, request, flag, status);
  ++depth();
  int rc = PMPI_Test(request, flag, status);
  if (not *flag && fold_untimed(static_cast<std::uint16_t>(Fn::MPI_Test), key.key)) {
    --depth();
    return rc;
  }
  return test_untimed_end(key, before, request, flag, rc);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status)
{
  if (count <= 0 || count > kFewRequests || not recording())
    return testany_timed(PMPI_Testany, count, requests, index, flag, status);
  MPI_Request before[kFewRequests];
  for (int i = 0; i < count; ++i)
    before[i] = requests[i];
  const PollKey key{requests_key(Fn::MPI_Testany, static_cast<std::size_t>(count), before)};
  if (not untimed_poll(static_cast<std::uint16_t>(Fn::MPI_Testany), key.key))
    return testany_timed(PMPI_Testany, count, requests, index, flag, status);
  ++depth();
  int rc = PMPI_Testany(count, requests, index, flag, status);
  const bool done = *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < count;
  if (not done && fold_untimed(static_cast<std::uint16_t>(Fn::MPI_Testany), key.key)) {
    --depth();
    return rc;
  }
  return testany_untimed_end(key, count, before, requests, index, flag, rc);
}

/// MPI_Cancel and MPI_Request_free complete no communication but matter to a replay (a cancelled
/// receive's wait returns at once): recorded with the request they name.
int MPI_Cancel(MPI_Request* request)
{
  Call c(Fn::MPI_Cancel);
  std::int64_t id = c ? request_id(*request, request) : -1;
  int rc = PMPI_Cancel(request);
  if (c) {
    c.r.request = id;
    c.finish();
  }
  return rc;
}

}  // extern "C"

namespace {

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
void fill_start(RawRecord& r, MPI_Request handle)
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
std::mutex g_message_mutex;
std::unordered_map<MPI_Message, MatchedMessage> g_messages;

void remember_message(MPI_Message m, MPI_Comm comm, const MPI_Status* st)
{
  MatchedMessage msg{comm_id(comm), world_of(comm, st->MPI_SOURCE), st->MPI_TAG};
  std::lock_guard<std::mutex> lock(g_message_mutex);
  g_messages[m] = msg;
}

MatchedMessage take_message(MPI_Message m)
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
void rec_matched_recv(Call& c, const MatchedMessage& msg, const void* buf, int count, MPI_Datatype dt)
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

}  // namespace

extern "C" {

int MPI_Send_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Send_init, PMPI_Send_init, kPersistentInit<StartKind::Isend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Bsend_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Bsend_init, PMPI_Bsend_init, kPersistentInit<StartKind::Isend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Rsend_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Rsend_init, PMPI_Rsend_init, kPersistentInit<StartKind::Isend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Ssend_init(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Ssend_init, PMPI_Ssend_init, kPersistentInit<StartKind::Issend>, buf, count, dt, dest, tag, comm, req);
}
int MPI_Recv_init(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request* req)
{
  return hooked(Fn::MPI_Recv_init, PMPI_Recv_init, kPersistentInit<StartKind::Irecv>, buf, count, dt, source, tag, comm, req);
}

int MPI_Start(MPI_Request* req)
{
  return start_body(PMPI_Start, req);
}

int MPI_Startall(int count, MPI_Request requests[])
{
  return startall_body(PMPI_Startall, count, requests);
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status)
{
  Call c(Fn::MPI_Mprobe);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = PMPI_Mprobe(source, tag, comm, message, st);
  if (rc == MPI_SUCCESS && config().enabled)
    remember_message(*message, comm, st);
  if (c) {
    fill_probe(c.r, source, tag, comm, st, rc == MPI_SUCCESS);
    c.finish();
  }
  return rc;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status)
{
  Call c(Fn::MPI_Improbe, probe_key(Fn::MPI_Improbe, source, tag, comm));
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = PMPI_Improbe(source, tag, comm, flag, message, st);
  bool found = rc == MPI_SUCCESS && *flag;
  if (found && config().enabled)
    remember_message(*message, comm, st);
  if (c) {
    if (c.fold_if_repeated(not found))
      return rc;
    fill_probe(c.r, source, tag, comm, st, found);
    c.finish_poll(not found);
  }
  return rc;
}

int MPI_Mrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Status* status)
{
  Call c(Fn::MPI_Mrecv);
  MatchedMessage msg = config().enabled ? take_message(*message) : MatchedMessage{};
  int rc = PMPI_Mrecv(buf, count, dt, message, status);
  if (c) {
    rec_matched_recv(c, msg, buf, count, dt);
    c.finish();
  }
  return rc;
}

int MPI_Imrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Request* request)
{
  Call c(Fn::MPI_Imrecv);
  MatchedMessage msg = config().enabled ? take_message(*message) : MatchedMessage{};
  int rc = PMPI_Imrecv(buf, count, dt, message, request);
  if (c) {
    rec_matched_recv(c, msg, buf, count, dt);
    c.r.request = new_request(*request, request);
    c.finish();
  }
  return rc;
}

}  // extern "C"

// ------------------------------------------------------------------ Fortran bindings (fortran.hpp)
// Each converts what the record needs to C, calls the Fortran PMPI entry in place of the C one inside the
// C wrapper's body, and gives that body the C form of what the call returned (requests, statuses,
// flags, 0-based indices).

using F = MPI_Fint;


#define GRIDCAST_SEND(lower, UPPER, FN)                                                                      \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* buf, F* count, F* dt, F* dest, F* tag, F* comm, F* ierr))      \
  void mpi_##lower##_(void* buf, F* count, F* dt, F* dest, F* tag, F* comm, F* ierr)                         \
  {                                                                                                          \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, F*, F*, F*, F*, F*, F*));                                           \
    send_like(Fn::FN, fortran(ierr, [&] { pmpi(buf, count, dt, dest, tag, comm, ierr); }, kNothing),         \
              fortran_buffer(buf), *count, PMPI_Type_f2c(*dt), *dest, *tag, PMPI_Comm_f2c(*comm));           \
  }
GRIDCAST_SEND(send, MPI_SEND, MPI_Send)
GRIDCAST_SEND(bsend, MPI_BSEND, MPI_Bsend)
GRIDCAST_SEND(rsend, MPI_RSEND, MPI_Rsend)
GRIDCAST_SEND(ssend, MPI_SSEND, MPI_Ssend)

#define GRIDCAST_ISEND(lower, UPPER, FN)                                                                     \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* buf, F* count, F* dt, F* dest, F* tag, F* comm, F* req, F* ierr)) \
  void mpi_##lower##_(void* buf, F* count, F* dt, F* dest, F* tag, F* comm, F* req, F* ierr)                 \
  {                                                                                                          \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, F*, F*, F*, F*, F*, F*, F*));                                       \
    MPI_Request c_req = MPI_REQUEST_NULL;                                                                    \
    isend_like(Fn::FN,                                                                                       \
               fortran(ierr, [&] { pmpi(buf, count, dt, dest, tag, comm, req, ierr); },                      \
                       [&](auto&&...) { c_req = PMPI_Request_f2c(*req); }),                                  \
               fortran_buffer(buf), *count, PMPI_Type_f2c(*dt), *dest, *tag, PMPI_Comm_f2c(*comm), &c_req, req); \
  }
GRIDCAST_ISEND(isend, MPI_ISEND, MPI_Isend)
GRIDCAST_ISEND(ibsend, MPI_IBSEND, MPI_Ibsend)
GRIDCAST_ISEND(irsend, MPI_IRSEND, MPI_Irsend)
GRIDCAST_ISEND(issend, MPI_ISSEND, MPI_Issend)

GRIDCAST_FORTRAN_NAMES(recv, MPI_RECV, (void* buf, F* count, F* dt, F* source, F* tag, F* comm, F* status, F* ierr))
void mpi_recv_(void* buf, F* count, F* dt, F* source, F* tag, F* comm, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(recv, (void*, F*, F*, F*, F*, F*, F*, F*));
  FortranStatus st(status);
  recv_body(fortran(ierr, [&] { pmpi(buf, count, dt, source, tag, comm, st.f, ierr); }, [&](auto&&...) { st.to_c(*ierr); }),
            fortran_buffer(buf), *count, PMPI_Type_f2c(*dt), *source, *tag, PMPI_Comm_f2c(*comm), &st.c);
}

GRIDCAST_FORTRAN_NAMES(irecv, MPI_IRECV, (void* buf, F* count, F* dt, F* source, F* tag, F* comm, F* req, F* ierr))
void mpi_irecv_(void* buf, F* count, F* dt, F* source, F* tag, F* comm, F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(irecv, (void*, F*, F*, F*, F*, F*, F*, F*));
  MPI_Request c_req = MPI_REQUEST_NULL;
  irecv_body(fortran(ierr, [&] { pmpi(buf, count, dt, source, tag, comm, req, ierr); },
                     [&](auto&&...) { c_req = PMPI_Request_f2c(*req); }),
             fortran_buffer(buf), *count, PMPI_Type_f2c(*dt), *source, *tag, PMPI_Comm_f2c(*comm), &c_req, req);
}

GRIDCAST_FORTRAN_NAMES(sendrecv, MPI_SENDRECV,
                       (void* sb, F* sc, F* st, F* dest, F* stag, void* rb, F* rc, F* rt, F* source, F* rtag, F* comm,
                        F* status, F* ierr))
void mpi_sendrecv_(void* sb, F* sc, F* st, F* dest, F* stag, void* rb, F* rc, F* rt, F* source, F* rtag, F* comm,
                   F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(sendrecv, (void*, F*, F*, F*, F*, void*, F*, F*, F*, F*, F*, F*, F*));
  sendrecv_body(fortran(ierr, [&] { pmpi(sb, sc, st, dest, stag, rb, rc, rt, source, rtag, comm, status, ierr); }, kNothing),
                fortran_buffer(sb), *sc, PMPI_Type_f2c(*st), *dest, *stag, fortran_buffer(rb), *rc, PMPI_Type_f2c(*rt),
                *source, *rtag, PMPI_Comm_f2c(*comm), MPI_STATUS_IGNORE);
}

GRIDCAST_FORTRAN_NAMES(sendrecv_replace, MPI_SENDRECV_REPLACE,
                       (void* buf, F* count, F* dt, F* dest, F* stag, F* source, F* rtag, F* comm, F* status, F* ierr))
void mpi_sendrecv_replace_(void* buf, F* count, F* dt, F* dest, F* stag, F* source, F* rtag, F* comm, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(sendrecv_replace, (void*, F*, F*, F*, F*, F*, F*, F*, F*, F*));
  sendrecv_replace_body(fortran(ierr, [&] { pmpi(buf, count, dt, dest, stag, source, rtag, comm, status, ierr); }, kNothing),
                        fortran_buffer(buf), *count, PMPI_Type_f2c(*dt), *dest, *stag, *source, *rtag,
                        PMPI_Comm_f2c(*comm), MPI_STATUS_IGNORE);
}

GRIDCAST_FORTRAN_NAMES(probe, MPI_PROBE, (F* source, F* tag, F* comm, F* status, F* ierr))
void mpi_probe_(F* source, F* tag, F* comm, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(probe, (F*, F*, F*, F*, F*));
  FortranStatus st(status);
  probe_body(fortran(ierr, [&] { pmpi(source, tag, comm, st.f, ierr); }, [&](auto&&...) { st.to_c(*ierr); }), *source,
             *tag, PMPI_Comm_f2c(*comm), &st.c);
}

GRIDCAST_FORTRAN_NAMES(iprobe, MPI_IPROBE, (F* source, F* tag, F* comm, F* flag, F* status, F* ierr))
void mpi_iprobe_(F* source, F* tag, F* comm, F* flag, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(iprobe, (F*, F*, F*, F*, F*, F*));
  FortranStatus st(status);
  int c_flag = 0;
  MPI_Comm comm_c = PMPI_Comm_f2c(*comm);
  iprobe_timed(fortran(ierr, [&] { pmpi(source, tag, comm, flag, st.f, ierr); },
                       [&](auto&&...) {
                         c_flag = *flag != 0;
                         if (c_flag)
                           st.to_c(*ierr);
                       }),
               probe_key(Fn::MPI_Iprobe, *source, *tag, comm_c), *source, *tag, comm_c, &c_flag, &st.c);
}

// ------------------------------------------------------------------ Fortran: wait and test

GRIDCAST_FORTRAN_NAMES(wait, MPI_WAIT, (F* req, F* status, F* ierr))
void mpi_wait_(F* req, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(wait, (F*, F*, F*));
  MPI_Request c_req = PMPI_Request_f2c(*req);
  wait_body(fortran(ierr, [&] { pmpi(req, status, ierr); }, [&](auto&&...) { c_req = PMPI_Request_f2c(*req); }),
            &c_req, MPI_STATUS_IGNORE, req);
}

GRIDCAST_FORTRAN_NAMES(test, MPI_TEST, (F* req, F* flag, F* status, F* ierr))
void mpi_test_(F* req, F* flag, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(test, (F*, F*, F*, F*));
  MPI_Request c_req = PMPI_Request_f2c(*req);
  int c_flag = 0;
  const PollKey key{mix(static_cast<std::uint64_t>(Fn::MPI_Test), reinterpret_cast<std::uintptr_t>(c_req))};
  test_timed(fortran(ierr, [&] { pmpi(req, flag, status, ierr); },
                     [&](auto&&...) {
                       c_req = PMPI_Request_f2c(*req);
                       c_flag = *flag != 0;
                     }),
             key, &c_req, &c_flag, MPI_STATUS_IGNORE, req);
}

GRIDCAST_FORTRAN_NAMES(waitall, MPI_WAITALL, (F* count, F* reqs, F* statuses, F* ierr))
void mpi_waitall_(F* count, F* reqs, F* statuses, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(waitall, (F*, F*, F*, F*));
  FortranRequests r(count, reqs);
  waitall_body(fortran(ierr, [&] { pmpi(count, reqs, statuses, ierr); }, [&](auto&&...) { r.refresh(); }),
               static_cast<int>(r.n), r.c, MPI_STATUSES_IGNORE, reqs, sizeof(F));
}

GRIDCAST_FORTRAN_NAMES(testall, MPI_TESTALL, (F* count, F* reqs, F* flag, F* statuses, F* ierr))
void mpi_testall_(F* count, F* reqs, F* flag, F* statuses, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(testall, (F*, F*, F*, F*, F*));
  FortranRequests r(count, reqs);
  int c_flag = 0;
  testall_body(fortran(ierr, [&] { pmpi(count, reqs, flag, statuses, ierr); },
                       [&](auto&&...) {
                         r.refresh();
                         c_flag = *flag != 0;
                       }),
               static_cast<int>(r.n), r.c, &c_flag, MPI_STATUSES_IGNORE, reqs, sizeof(F));
}

/// Fortran's index of one completed request (1-based) as C's.
static int c_index(F index)
{
  return index == MPI_UNDEFINED ? MPI_UNDEFINED : index - 1;
}

GRIDCAST_FORTRAN_NAMES(waitany, MPI_WAITANY, (F* count, F* reqs, F* index, F* status, F* ierr))
void mpi_waitany_(F* count, F* reqs, F* index, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(waitany, (F*, F*, F*, F*, F*));
  FortranRequests r(count, reqs);
  int c_idx = MPI_UNDEFINED;
  waitany_body(fortran(ierr, [&] { pmpi(count, reqs, index, status, ierr); },
                       [&](auto&&...) {
                         r.refresh();
                         c_idx = c_index(*index);
                       }),
               static_cast<int>(r.n), r.c, &c_idx, MPI_STATUS_IGNORE, reqs, sizeof(F));
}

GRIDCAST_FORTRAN_NAMES(testany, MPI_TESTANY, (F* count, F* reqs, F* index, F* flag, F* status, F* ierr))
void mpi_testany_(F* count, F* reqs, F* index, F* flag, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(testany, (F*, F*, F*, F*, F*, F*));
  FortranRequests r(count, reqs);
  int c_idx = MPI_UNDEFINED, c_flag = 0;
  testany_timed(fortran(ierr, [&] { pmpi(count, reqs, index, flag, status, ierr); },
                        [&](auto&&...) {
                          r.refresh();
                          c_idx = c_index(*index);
                          c_flag = *flag != 0;
                        }),
                static_cast<int>(r.n), r.c, &c_idx, &c_flag, MPI_STATUS_IGNORE, reqs, sizeof(F));
}

/// Waitsome and Testsome: Fortran's 1-based indices as C's.
template <typename Pmpi, typename Body>
static void fortran_some(Body body, Pmpi pmpi, F* count, F* reqs, F* outcount, F* indices, F* statuses, F* ierr)
{
  FortranRequests r(count, reqs);
  std::vector<int> c_indices(r.n);
  int c_out = 0;
  body(fortran(ierr, [&] { pmpi(count, reqs, outcount, indices, statuses, ierr); },
               [&](auto&&...) {
                 r.refresh();
                 c_out = *outcount;
                 if (c_out != MPI_UNDEFINED)
                   for (int i = 0; i < c_out && static_cast<std::size_t>(i) < r.n; ++i)
                     c_indices[static_cast<std::size_t>(i)] = indices[i] - 1;
               }),
       static_cast<int>(r.n), r.c, &c_out, c_indices.data(), MPI_STATUSES_IGNORE, reqs, sizeof(F));
}

GRIDCAST_FORTRAN_NAMES(waitsome, MPI_WAITSOME, (F* count, F* reqs, F* outcount, F* indices, F* statuses, F* ierr))
void mpi_waitsome_(F* count, F* reqs, F* outcount, F* indices, F* statuses, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(waitsome, (F*, F*, F*, F*, F*, F*));
  fortran_some([](auto... a) { return waitsome_body(a...); }, pmpi, count, reqs, outcount, indices, statuses, ierr);
}

GRIDCAST_FORTRAN_NAMES(testsome, MPI_TESTSOME, (F* count, F* reqs, F* outcount, F* indices, F* statuses, F* ierr))
void mpi_testsome_(F* count, F* reqs, F* outcount, F* indices, F* statuses, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(testsome, (F*, F*, F*, F*, F*, F*));
  fortran_some([](auto... a) { return testsome_body(a...); }, pmpi, count, reqs, outcount, indices, statuses, ierr);
}

GRIDCAST_FORTRAN_NAMES(request_free, MPI_REQUEST_FREE, (F* req, F* ierr))
void mpi_request_free_(F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(request_free, (F*, F*));
  MPI_Request c_req = PMPI_Request_f2c(*req);
  request_free_body(fortran(ierr, [&] { pmpi(req, ierr); }, [&](auto&&...) { c_req = PMPI_Request_f2c(*req); }), &c_req,
                    req);
}

// ------------------------------------------------------------------ Fortran: init, finalize, persistent

GRIDCAST_FORTRAN_NAMES(init, MPI_INIT, (F* ierr))
void mpi_init_(F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(init, (F*));
  init_body(fortran(ierr, [&] { pmpi(ierr); }, kNothing), nullptr, nullptr);
}

GRIDCAST_FORTRAN_NAMES(init_thread, MPI_INIT_THREAD, (F* required, F* provided, F* ierr))
void mpi_init_thread_(F* required, F* provided, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(init_thread, (F*, F*, F*));
  int c_provided = 0;
  init_thread_body(fortran(ierr, [&] { pmpi(required, provided, ierr); }, [&](auto&&...) { c_provided = *provided; }),
                   nullptr, nullptr, *required, &c_provided);
}

GRIDCAST_FORTRAN_NAMES(finalize, MPI_FINALIZE, (F* ierr))
void mpi_finalize_(F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(finalize, (F*));
  finalize_body(fortran(ierr, [&] { pmpi(ierr); }, kNothing));
}

#define GRIDCAST_PERSISTENT(lower, UPPER, FN, KIND)                                                            \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* buf, F* count, F* dt, F* peer, F* tag, F* comm, F* req, F* ierr)) \
  void mpi_##lower##_(void* buf, F* count, F* dt, F* peer, F* tag, F* comm, F* req, F* ierr)                   \
  {                                                                                                            \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, F*, F*, F*, F*, F*, F*, F*));                                         \
    MPI_Request c_req = MPI_REQUEST_NULL;                                                                      \
    hooked(Fn::FN,                                                                                             \
           fortran(ierr, [&] { pmpi(buf, count, dt, peer, tag, comm, req, ierr); },                            \
                   [&](auto&&...) { c_req = PMPI_Request_f2c(*req); }),                                        \
           kPersistentInit<StartKind::KIND>, fortran_buffer(buf), *count, PMPI_Type_f2c(*dt), *peer, *tag,     \
           PMPI_Comm_f2c(*comm), &c_req);                                                                      \
  }
GRIDCAST_PERSISTENT(send_init, MPI_SEND_INIT, MPI_Send_init, Isend)
GRIDCAST_PERSISTENT(bsend_init, MPI_BSEND_INIT, MPI_Bsend_init, Isend)
GRIDCAST_PERSISTENT(rsend_init, MPI_RSEND_INIT, MPI_Rsend_init, Isend)
GRIDCAST_PERSISTENT(ssend_init, MPI_SSEND_INIT, MPI_Ssend_init, Issend)
GRIDCAST_PERSISTENT(recv_init, MPI_RECV_INIT, MPI_Recv_init, Irecv)

GRIDCAST_FORTRAN_NAMES(start, MPI_START, (F* req, F* ierr))
void mpi_start_(F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(start, (F*, F*));
  MPI_Request c_req = PMPI_Request_f2c(*req);
  start_body(fortran(ierr, [&] { pmpi(req, ierr); }, kNothing), &c_req);
}

GRIDCAST_FORTRAN_NAMES(startall, MPI_STARTALL, (F* count, F* reqs, F* ierr))
void mpi_startall_(F* count, F* reqs, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(startall, (F*, F*, F*));
  FortranRequests r(count, reqs);
  startall_body(fortran(ierr, [&] { pmpi(count, reqs, ierr); }, kNothing), static_cast<int>(r.n), r.c);
}
