// The Fortran bindings of the hook. Fortran codes call MPI through mpif.h and `use mpi` (mpi_send_, and
// MPICH's and other compilers' namings mpi_send, mpi_send__, MPI_SEND) or, with Open MPI, `use mpi_f08`
// (whose module calls ompi_send_f). Open MPI's Fortran library then calls PMPI_Send directly, so the C
// wrappers never see these calls. The hook defines every one of these names: each converts the Fortran
// handles to C ones for the record, calls the Fortran PMPI entry (pmpi_send_) that performs the call as
// the application asked for it, and records through the very code of the C wrapper (its body, given the
// Fortran call in place of the C PMPI one). Every argument is passed by reference, handles are INTEGERs,
// indices are 1-based, and MPI_IN_PLACE, MPI_BOTTOM and MPI_STATUS(ES)_IGNORE are the addresses of
// Open MPI's common blocks.
#pragma once

#include "core.hpp"
#include "requests.hpp"

#include <mpi.h>

#include <cstddef>
#include <memory>

#pragma GCC visibility push(hidden)
namespace gridcast::hook {

/// The Fortran PMPI entry of `lower` (the MPI name in lower case without its prefix, "send"): pmpi_send_,
/// else pmpi_send__, pmpi_send or PMPI_SEND, whichever the Fortran MPI library has.
void* fortran_pmpi_entry(const char* lower);

/// The next definition of `name` past the hook (Open MPI's mpi_f08 entry mpi_cart_create_f08_, which the
/// hook defines too: see hook_fortran_collectives.cpp).
void* fortran_next_entry(const char* name);

/// `buf` for the C calls the record is made with: Fortran's MPI_IN_PLACE and MPI_BOTTOM become C's.
const void* fortran_buffer(const void* buf);
inline void* fortran_buffer(void* buf) { return const_cast<void*>(fortran_buffer(static_cast<const void*>(buf))); }

bool fortran_status_ignore(const MPI_Fint* status);
bool fortran_statuses_ignore(const MPI_Fint* statuses);

/// A Fortran status for the call (the application's, or one of ours where it passed MPI_STATUS_IGNORE:
/// the record needs the source and size), and its C form once the call returned.
struct FortranStatus {
  explicit FortranStatus(MPI_Fint* user) : f(user == nullptr || fortran_status_ignore(user) ? local : user) {}
  MPI_Status* to_c(MPI_Fint ierr)
  {
    if (ierr == MPI_SUCCESS)
      PMPI_Status_f2c(f, &c);
    return &c;
  }
  MPI_Fint local[sizeof(MPI_Status) / sizeof(MPI_Fint)] = {};
  MPI_Fint* f;
  MPI_Status c{};
};

/// A Fortran request array and its C handles (on the stack when small): made before the call, refreshed
/// from the Fortran array after it (MPI sets completed ones to MPI_REQUEST_NULL).
struct FortranRequests {
  FortranRequests(const MPI_Fint* count, MPI_Fint* handles) : n(*count < 0 ? 0 : static_cast<std::size_t>(*count)), f(handles)
  {
    if (n > kStack)
      heap = std::make_unique<MPI_Request[]>(n);
    c = n <= kStack ? stack : heap.get();
    refresh();
  }
  void refresh()
  {
    for (std::size_t i = 0; i < n; ++i)
      c[i] = PMPI_Request_f2c(f[i]);
  }
  static constexpr std::size_t kStack = 32;
  std::size_t n;
  MPI_Fint* f;
  MPI_Request stack[kStack];
  std::unique_ptr<MPI_Request[]> heap;
  MPI_Request* c;
};


/// The C body's PMPI call, performed by the Fortran entry `call` (which sets `*ierr`); `after` turns what
/// it returned into the C arguments the body reads.
template <typename Call_, typename After>
auto fortran(MPI_Fint* ierr, Call_ call, After after)
{
  return [=](auto&&... c_args) {
    call();
    after(c_args...);
    return static_cast<int>(*ierr);
  };
}
constexpr auto kNothing = [](auto&&...) {};

}  // namespace gridcast::hook
#pragma GCC visibility pop

/// Declares the Fortran entry points of `lower`, all of them the one function mpi_<lower>_ defined right
/// after: Open MPI's and MPICH's namings and Open MPI's ompi_<lower>_f, which its mpi_f08 module calls.
#define GRIDCAST_FORTRAN_NAMES(lower, UPPER, params)                                              \
  extern "C" void mpi_##lower##_ params;                                                          \
  extern "C" void mpi_##lower params __attribute__((alias("mpi_" #lower "_")));                   \
  extern "C" void mpi_##lower##__ params __attribute__((alias("mpi_" #lower "_")));               \
  extern "C" void UPPER params __attribute__((alias("mpi_" #lower "_")));                         \
  extern "C" void ompi_##lower##_f params __attribute__((alias("mpi_" #lower "_")));

/// The Fortran PMPI entry of `lower`, typed as the wrapper's own `params`, resolved once.
#define GRIDCAST_FORTRAN_PMPI(lower, params) \
  static const auto pmpi = reinterpret_cast<void(*) params>(::gridcast::hook::fortran_pmpi_entry(#lower))

/// Defines Open MPI's mpi_f08 entry mpi_<lower>_f08_ of a call its module does not route through
/// ompi_<lower>_f (the calls with LOGICAL arguments: the module converts them and calls pmpi_<lower>_
/// itself, past every other name the hook defines). `params` end with `F* ierr`, which is OPTIONAL (a null
/// pointer when the application left it out); the body is the statement `...`, in which `next` is Open
/// MPI's definition, typed `types`, and `e` the error code to pass it (ierr, or one of ours).
#define GRIDCAST_FORTRAN_F08(lower, params, types, ...)                                            \
  extern "C" void mpi_##lower##_f08_ params                                                        \
  {                                                                                                \
    static const auto next =                                                                       \
        reinterpret_cast<void(*) types>(::gridcast::hook::fortran_next_entry("mpi_" #lower "_f08_")); \
    MPI_Fint own_ierr = MPI_SUCCESS;                                                               \
    MPI_Fint* const e = ierr != nullptr ? ierr : &own_ierr;                                        \
    __VA_ARGS__;                                                                                   \
  }
