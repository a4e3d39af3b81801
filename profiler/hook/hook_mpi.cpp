// MPI wrappers of the point-to-point family: every MPI_X calls PMPI_X and records one raw record
// (raw_format.hpp). Init and finalize, sends and receives, probes, waits and tests, persistent requests and
// matched probes. What each records is in p2p_bodies.hpp, shared with the Fortran entry points
// (hook_fortran_p2p.cpp). The collectives and communicator calls are in hook_mpi_collectives.cpp;
// communicators and requests are translated to small per-rank ids by comms.cpp and requests.cpp.
#include "p2p_bodies.hpp"

#include <mpi.h>

using namespace gridcast::hook;

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
