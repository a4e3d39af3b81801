// Fortran entry points of the collectives and communicator calls (fortran.hpp says why the hook needs
// them): the C wrappers' descriptions (the k... lambdas and bodies of collective_bodies.hpp) with the
// Fortran PMPI entry performing the call. A nonblocking one's C request is read from the Fortran handle
// once the call returned.
#include "collective_bodies.hpp"
#include "fortran.hpp"

#include <mpi.h>

using namespace gridcast::hook;

using F = MPI_Fint;

namespace {

/// hooked() with the Fortran entry `call` in place of the C PMPI function.
template <typename Rec, typename Call_, typename... A>
void fortran_hooked(Fn fn, Rec rec, F* ierr, Call_ call, A... c_args)
{
  hooked(fn, fortran(ierr, call, kNothing), rec, c_args...);
}

/// The same for a nonblocking call, whose C request (the last C argument) comes from `req`.
template <typename Rec, typename Call_, typename... A>
void fortran_nonblocking(Fn fn, Rec rec, F* ierr, F* req, Call_ call, A... c_args)
{
  MPI_Request c_req = MPI_REQUEST_NULL;
  hooked(fn, fortran(ierr, call, [&](auto&&...) { c_req = PMPI_Request_f2c(*req); }), rec, c_args..., &c_req);
}

MPI_Comm comm_f(const F* c) { return PMPI_Comm_f2c(*c); }
MPI_Datatype type_f(const F* t) { return PMPI_Type_f2c(*t); }
MPI_Op op_f(const F* o) { return PMPI_Op_f2c(*o); }

}  // namespace

GRIDCAST_FORTRAN_NAMES(barrier, MPI_BARRIER, (F* comm, F* ierr))
void mpi_barrier_(F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(barrier, (F*, F*));
  fortran_hooked(Fn::MPI_Barrier, kBarrier, ierr, [&] { pmpi(comm, ierr); }, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(ibarrier, MPI_IBARRIER, (F* comm, F* req, F* ierr))
void mpi_ibarrier_(F* comm, F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(ibarrier, (F*, F*, F*));
  fortran_nonblocking(Fn::MPI_Ibarrier, kBarrier, ierr, req, [&] { pmpi(comm, req, ierr); }, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(bcast, MPI_BCAST, (void* buf, F* count, F* dt, F* root, F* comm, F* ierr))
void mpi_bcast_(void* buf, F* count, F* dt, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(bcast, (void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Bcast, kBcast, ierr, [&] { pmpi(buf, count, dt, root, comm, ierr); }, fortran_buffer(buf), *count,
                 type_f(dt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(ibcast, MPI_IBCAST, (void* buf, F* count, F* dt, F* root, F* comm, F* req, F* ierr))
void mpi_ibcast_(void* buf, F* count, F* dt, F* root, F* comm, F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(ibcast, (void*, F*, F*, F*, F*, F*, F*));
  fortran_nonblocking(Fn::MPI_Ibcast, kBcast, ierr, req, [&] { pmpi(buf, count, dt, root, comm, req, ierr); },
                      fortran_buffer(buf), *count, type_f(dt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(reduce, MPI_REDUCE, (void* sb, void* rb, F* count, F* dt, F* op, F* root, F* comm, F* ierr))
void mpi_reduce_(void* sb, void* rb, F* count, F* dt, F* op, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(reduce, (void*, void*, F*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Reduce, kReduce, ierr, [&] { pmpi(sb, rb, count, dt, op, root, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *count, type_f(dt), op_f(op), *root,
                 comm_f(comm));
}

#define GRIDCAST_REDUCE_ALL(lower, UPPER, FN)                                                                       \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* ierr))              \
  void mpi_##lower##_(void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* ierr)                                 \
  {                                                                                                                 \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, void*, F*, F*, F*, F*, F*));                                               \
    fortran_hooked(Fn::FN, kReduceAll, ierr, [&] { pmpi(sb, rb, count, dt, op, comm, ierr); },                      \
                   static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *count, type_f(dt), op_f(op), \
                   comm_f(comm));                                                                                   \
  }
GRIDCAST_REDUCE_ALL(allreduce, MPI_ALLREDUCE, MPI_Allreduce)
GRIDCAST_REDUCE_ALL(scan, MPI_SCAN, MPI_Scan)
GRIDCAST_REDUCE_ALL(exscan, MPI_EXSCAN, MPI_Exscan)

GRIDCAST_FORTRAN_NAMES(iallreduce, MPI_IALLREDUCE,
                       (void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* req, F* ierr))
void mpi_iallreduce_(void* sb, void* rb, F* count, F* dt, F* op, F* comm, F* req, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(iallreduce, (void*, void*, F*, F*, F*, F*, F*, F*));
  fortran_nonblocking(Fn::MPI_Iallreduce, kReduceAll, ierr, req, [&] { pmpi(sb, rb, count, dt, op, comm, req, ierr); },
                      static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *count, type_f(dt), op_f(op),
                      comm_f(comm));
}

#define GRIDCAST_BLOCKS(lower, UPPER, FN)                                                                           \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* comm, F* ierr))          \
  void mpi_##lower##_(void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* comm, F* ierr)                             \
  {                                                                                                                 \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, F*, F*, void*, F*, F*, F*, F*));                                           \
    fortran_hooked(Fn::FN, kBlocks, ierr, [&] { pmpi(sb, sc, st, rb, rc, rt, comm, ierr); },                        \
                   static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb), *rc, type_f(rt), \
                   comm_f(comm));                                                                                   \
  }
GRIDCAST_BLOCKS(alltoall, MPI_ALLTOALL, MPI_Alltoall)
GRIDCAST_BLOCKS(allgather, MPI_ALLGATHER, MPI_Allgather)

#define GRIDCAST_ROOTED(lower, UPPER, FN, REC)                                                                      \
  GRIDCAST_FORTRAN_NAMES(lower, UPPER, (void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr)) \
  void mpi_##lower##_(void* sb, F* sc, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr)                    \
  {                                                                                                                 \
    GRIDCAST_FORTRAN_PMPI(lower, (void*, F*, F*, void*, F*, F*, F*, F*, F*));                                       \
    fortran_hooked(Fn::FN, REC, ierr, [&] { pmpi(sb, sc, st, rb, rc, rt, root, comm, ierr); },                      \
                   static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb), *rc, type_f(rt), \
                   *root, comm_f(comm));                                                                            \
  }
GRIDCAST_ROOTED(gather, MPI_GATHER, MPI_Gather, kGather)
GRIDCAST_ROOTED(scatter, MPI_SCATTER, MPI_Scatter, kScatter)

GRIDCAST_FORTRAN_NAMES(alltoallv, MPI_ALLTOALLV,
                       (void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr))
void mpi_alltoallv_(void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(alltoallv, (void*, F*, F*, F*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Alltoallv, kAlltoallv, ierr, [&] { pmpi(sb, sc, sd, st, rb, rc, rd, rt, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), static_cast<const int*>(sc), static_cast<const int*>(sd),
                 type_f(st), fortran_buffer(rb), static_cast<const int*>(rc), static_cast<const int*>(rd), type_f(rt),
                 comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(gatherv, MPI_GATHERV,
                       (void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* root, F* comm, F* ierr))
void mpi_gatherv_(void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(gatherv, (void*, F*, F*, void*, F*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Gatherv, kGatherv, ierr, [&] { pmpi(sb, sc, st, rb, rc, rd, rt, root, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb),
                 static_cast<const int*>(rc), static_cast<const int*>(rd), type_f(rt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(allgatherv, MPI_ALLGATHERV,
                       (void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr))
void mpi_allgatherv_(void* sb, F* sc, F* st, void* rb, F* rc, F* rd, F* rt, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(allgatherv, (void*, F*, F*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Allgatherv, kAllgatherv, ierr, [&] { pmpi(sb, sc, st, rb, rc, rd, rt, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), *sc, type_f(st), fortran_buffer(rb),
                 static_cast<const int*>(rc), static_cast<const int*>(rd), type_f(rt), comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(scatterv, MPI_SCATTERV,
                       (void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr))
void mpi_scatterv_(void* sb, F* sc, F* sd, F* st, void* rb, F* rc, F* rt, F* root, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(scatterv, (void*, F*, F*, F*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Scatterv, kScatterv, ierr, [&] { pmpi(sb, sc, sd, st, rb, rc, rt, root, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), static_cast<const int*>(sc), static_cast<const int*>(sd),
                 type_f(st), fortran_buffer(rb), *rc, type_f(rt), *root, comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(reduce_scatter, MPI_REDUCE_SCATTER,
                       (void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr))
void mpi_reduce_scatter_(void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(reduce_scatter, (void*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Reduce_scatter, kReduceScatter, ierr, [&] { pmpi(sb, rb, rc, dt, op, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), static_cast<const int*>(rc), type_f(dt),
                 op_f(op), comm_f(comm));
}

GRIDCAST_FORTRAN_NAMES(reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
                       (void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr))
void mpi_reduce_scatter_block_(void* sb, void* rb, F* rc, F* dt, F* op, F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(reduce_scatter_block, (void*, void*, F*, F*, F*, F*, F*));
  fortran_hooked(Fn::MPI_Reduce_scatter_block, kReduceScatterBlock, ierr, [&] { pmpi(sb, rb, rc, dt, op, comm, ierr); },
                 static_cast<const void*>(fortran_buffer(sb)), fortran_buffer(rb), *rc, type_f(dt), op_f(op), comm_f(comm));
}

// ------------------------------------------------------------------ Fortran: communicators

GRIDCAST_FORTRAN_NAMES(comm_split, MPI_COMM_SPLIT, (F* comm, F* color, F* key, F* newcomm, F* ierr))
void mpi_comm_split_(F* comm, F* color, F* key, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_split, (F*, F*, F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  comm_split_body(fortran(ierr, [&] { pmpi(comm, color, key, newcomm, ierr); },
                          [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
                  comm_f(comm), *color, *key, &c_new);
}

GRIDCAST_FORTRAN_NAMES(comm_dup, MPI_COMM_DUP, (F* comm, F* newcomm, F* ierr))
void mpi_comm_dup_(F* comm, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_dup, (F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  hooked(Fn::MPI_Comm_dup,
         fortran(ierr, [&] { pmpi(comm, newcomm, ierr); }, [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
         kCreation, comm_f(comm), &c_new);
}

GRIDCAST_FORTRAN_NAMES(comm_create, MPI_COMM_CREATE, (F* comm, F* group, F* newcomm, F* ierr))
void mpi_comm_create_(F* comm, F* group, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_create, (F*, F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  hooked(Fn::MPI_Comm_create,
         fortran(ierr, [&] { pmpi(comm, group, newcomm, ierr); }, [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
         kCreation, comm_f(comm), PMPI_Group_f2c(*group), &c_new);
}

GRIDCAST_FORTRAN_NAMES(cart_create, MPI_CART_CREATE,
                       (F* comm, F* ndims, F* dims, F* periods, F* reorder, F* newcomm, F* ierr))
void mpi_cart_create_(F* comm, F* ndims, F* dims, F* periods, F* reorder, F* newcomm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(cart_create, (F*, F*, F*, F*, F*, F*, F*));
  MPI_Comm c_new = MPI_COMM_NULL;
  // periods and reorder are LOGICALs, which the record does not read
  cart_create_body(fortran(ierr, [&] { pmpi(comm, ndims, dims, periods, reorder, newcomm, ierr); },
                           [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
                   comm_f(comm), *ndims, static_cast<const int*>(dims), static_cast<const int*>(nullptr), 0, &c_new);
}

GRIDCAST_FORTRAN_NAMES(comm_free, MPI_COMM_FREE, (F* comm, F* ierr))
void mpi_comm_free_(F* comm, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_free, (F*, F*));
  local_call(Fn::MPI_Comm_free, comm_f(comm), [&] {
    pmpi(comm, ierr);
    return *ierr;
  });
}

GRIDCAST_FORTRAN_NAMES(comm_rank, MPI_COMM_RANK, (F* comm, F* rank, F* ierr))
void mpi_comm_rank_(F* comm, F* rank, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_rank, (F*, F*, F*));
  local_call(Fn::MPI_Comm_rank, comm_f(comm), [&] {
    pmpi(comm, rank, ierr);
    return *ierr;
  });
}

GRIDCAST_FORTRAN_NAMES(comm_size, MPI_COMM_SIZE, (F* comm, F* size, F* ierr))
void mpi_comm_size_(F* comm, F* size, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(comm_size, (F*, F*, F*));
  local_call(Fn::MPI_Comm_size, comm_f(comm), [&] {
    pmpi(comm, size, ierr);
    return *ierr;
  });
}

// ---- local calls: process topologies (recorded as the C wrappers record them, for their time and so
// that a Fortran profile holds the records of its C twin). The group calls (MPI_Comm_group, MPI_Group_*)
// are not wrapped for Fortran: with their records, the fit's merge of CP2K's two ranks into one group
// (ranks whose rolled traces differ by at most --group-threshold) aligned a rank's MPI_Sendrecv with the
// wrong template position and gave both ranks one peer (a deadlock at the target). Until that matching
// checks the peers it aligns, their time stays in the compute around them, as before.

namespace {

/// local_call() with the Fortran entry `call` (which sets *ierr) performing the call.
template <typename Call_>
void fortran_local(Fn fn, MPI_Comm comm, F* ierr, Call_ call)
{
  local_call(fn, comm, [&] {
    call();
    return static_cast<int>(*ierr);
  });
}

}  // namespace

GRIDCAST_FORTRAN_NAMES(cart_coords, MPI_CART_COORDS, (F* comm, F* rank, F* maxdims, F* coords, F* ierr))
void mpi_cart_coords_(F* comm, F* rank, F* maxdims, F* coords, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(cart_coords, (F*, F*, F*, F*, F*));
  fortran_local(Fn::MPI_Cart_coords, comm_f(comm), ierr, [&] { pmpi(comm, rank, maxdims, coords, ierr); });
}

GRIDCAST_FORTRAN_NAMES(cart_rank, MPI_CART_RANK, (F* comm, F* coords, F* rank, F* ierr))
void mpi_cart_rank_(F* comm, F* coords, F* rank, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(cart_rank, (F*, F*, F*, F*));
  fortran_local(Fn::MPI_Cart_rank, comm_f(comm), ierr, [&] { pmpi(comm, coords, rank, ierr); });
}

GRIDCAST_FORTRAN_NAMES(cart_shift, MPI_CART_SHIFT, (F* comm, F* direction, F* disp, F* source, F* dest, F* ierr))
void mpi_cart_shift_(F* comm, F* direction, F* disp, F* source, F* dest, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(cart_shift, (F*, F*, F*, F*, F*, F*));
  fortran_local(Fn::MPI_Cart_shift, comm_f(comm), ierr, [&] { pmpi(comm, direction, disp, source, dest, ierr); });
}

// periods is a LOGICAL array, which neither the call's record nor the hook reads
GRIDCAST_FORTRAN_NAMES(cart_get, MPI_CART_GET, (F* comm, F* maxdims, F* dims, F* periods, F* coords, F* ierr))
void mpi_cart_get_(F* comm, F* maxdims, F* dims, F* periods, F* coords, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(cart_get, (F*, F*, F*, F*, F*, F*));
  fortran_local(Fn::MPI_Cart_get, comm_f(comm), ierr, [&] { pmpi(comm, maxdims, dims, periods, coords, ierr); });
}

GRIDCAST_FORTRAN_NAMES(cartdim_get, MPI_CARTDIM_GET, (F* comm, F* ndims, F* ierr))
void mpi_cartdim_get_(F* comm, F* ndims, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(cartdim_get, (F*, F*, F*));
  fortran_local(Fn::MPI_Cartdim_get, comm_f(comm), ierr, [&] { pmpi(comm, ndims, ierr); });
}

GRIDCAST_FORTRAN_NAMES(dims_create, MPI_DIMS_CREATE, (F* nnodes, F* ndims, F* dims, F* ierr))
void mpi_dims_create_(F* nnodes, F* ndims, F* dims, F* ierr)
{
  GRIDCAST_FORTRAN_PMPI(dims_create, (F*, F*, F*, F*));
  fortran_local(Fn::MPI_Dims_create, MPI_COMM_NULL, ierr, [&] { pmpi(nnodes, ndims, dims, ierr); });
}

// ---- Open MPI's mpi_f08 entries of the calls with LOGICAL arguments. Its mpi_f08 module converts the
// LOGICALs itself and calls the mpif.h PMPI entry (pmpi_cart_create_), past every name above: the hook
// defines the module's own entry too, performs the call through the next definition (Open MPI's), and
// records it as the C wrapper does. Handles are TYPE(MPI_Comm), one INTEGER; `ierror` is OPTIONAL (a null
// pointer when the application left it out: the call then gets ours).

namespace {

template <typename Next>
void cart_create_f08(Next next, F* comm, F* ndims, F* dims, F* periods, F* reorder, F* newcomm, F* e)
{
  MPI_Comm c_new = MPI_COMM_NULL;
  cart_create_body(fortran(e, [&] { next(comm, ndims, dims, periods, reorder, newcomm, e); },
                           [&](auto&&...) { c_new = PMPI_Comm_f2c(*newcomm); }),
                   comm_f(comm), *ndims, static_cast<const int*>(dims), static_cast<const int*>(nullptr), 0, &c_new);
}

}  // namespace

GRIDCAST_FORTRAN_F08(cart_create, (F* comm, F* ndims, F* dims, F* periods, F* reorder, F* newcomm, F* ierr),
                     (F*, F*, F*, F*, F*, F*, F*), cart_create_f08(next, comm, ndims, dims, periods, reorder, newcomm, e))

GRIDCAST_FORTRAN_F08(cart_get, (F* comm, F* maxdims, F* dims, F* periods, F* coords, F* ierr), (F*, F*, F*, F*, F*, F*),
                     fortran_local(Fn::MPI_Cart_get, comm_f(comm), e,
                                   [&] { next(comm, maxdims, dims, periods, coords, e); }))
