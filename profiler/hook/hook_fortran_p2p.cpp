// Fortran entry points of the point-to-point family (fortran.hpp says why the hook needs them).
// Each converts what the record needs to C, calls the Fortran PMPI entry in place of the C one inside the
// C wrapper's body (p2p_bodies.hpp), and gives that body the C form of what the call returned (requests,
// statuses, flags, 0-based indices).
#include "fortran.hpp"
#include "p2p_bodies.hpp"

#include <mpi.h>

using namespace gridcast::hook;

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
template <typename Pmpi>
static void iprobe_impl(Pmpi pmpi, F* source, F* tag, F* comm, F* flag, F* status, F* ierr)
{
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
void mpi_iprobe_(F* source, F* tag, F* comm, F* flag, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(iprobe, (F*, F*, F*, F*, F*, F*));
  iprobe_impl(pmpi, source, tag, comm, flag, status, ierr);
}
GRIDCAST_FORTRAN_F08(iprobe, (F* source, F* tag, F* comm, F* flag, F* status, F* ierr), (F*, F*, F*, F*, F*, F*),
                     iprobe_impl(next, source, tag, comm, flag, status, e))

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
template <typename Pmpi>
static void test_impl(Pmpi pmpi, F* req, F* flag, F* status, F* ierr)
{
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
void mpi_test_(F* req, F* flag, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(test, (F*, F*, F*, F*));
  test_impl(pmpi, req, flag, status, ierr);
}
GRIDCAST_FORTRAN_F08(test, (F* req, F* flag, F* status, F* ierr), (F*, F*, F*, F*),
                     test_impl(next, req, flag, status, e))

GRIDCAST_FORTRAN_NAMES(waitall, MPI_WAITALL, (F* count, F* reqs, F* statuses, F* ierr))
void mpi_waitall_(F* count, F* reqs, F* statuses, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(waitall, (F*, F*, F*, F*));
  FortranRequests r(count, reqs);
  waitall_body(fortran(ierr, [&] { pmpi(count, reqs, statuses, ierr); }, [&](auto&&...) { r.refresh(); }),
               static_cast<int>(r.n), r.c, MPI_STATUSES_IGNORE, reqs, sizeof(F));
}

GRIDCAST_FORTRAN_NAMES(testall, MPI_TESTALL, (F* count, F* reqs, F* flag, F* statuses, F* ierr))
template <typename Pmpi>
static void testall_impl(Pmpi pmpi, F* count, F* reqs, F* flag, F* statuses, F* ierr)
{
  FortranRequests r(count, reqs);
  int c_flag = 0;
  testall_body(fortran(ierr, [&] { pmpi(count, reqs, flag, statuses, ierr); },
                       [&](auto&&...) {
                         r.refresh();
                         c_flag = *flag != 0;
                       }),
               static_cast<int>(r.n), r.c, &c_flag, MPI_STATUSES_IGNORE, reqs, sizeof(F));
}
void mpi_testall_(F* count, F* reqs, F* flag, F* statuses, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(testall, (F*, F*, F*, F*, F*));
  testall_impl(pmpi, count, reqs, flag, statuses, ierr);
}
GRIDCAST_FORTRAN_F08(testall, (F* count, F* reqs, F* flag, F* statuses, F* ierr), (F*, F*, F*, F*, F*),
                     testall_impl(next, count, reqs, flag, statuses, e))

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
template <typename Pmpi>
static void testany_impl(Pmpi pmpi, F* count, F* reqs, F* index, F* flag, F* status, F* ierr)
{
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
void mpi_testany_(F* count, F* reqs, F* index, F* flag, F* status, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(testany, (F*, F*, F*, F*, F*, F*));
  testany_impl(pmpi, count, reqs, index, flag, status, ierr);
}
GRIDCAST_FORTRAN_F08(testany, (F* count, F* reqs, F* index, F* flag, F* status, F* ierr), (F*, F*, F*, F*, F*, F*),
                     testany_impl(next, count, reqs, index, flag, status, e))

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
GRIDCAST_FORTRAN_F08(testsome, (F* count, F* reqs, F* outcount, F* indices, F* statuses, F* ierr), (F*, F*, F*, F*, F*, F*),
                     fortran_some([](auto... a) { return testsome_body(a...); }, next, count, reqs, outcount, indices, statuses, e))

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
