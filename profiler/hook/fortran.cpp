// Helpers of the Fortran bindings (fortran.hpp).
#include "fortran.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

// Open MPI's Fortran constants: common blocks whose addresses stand for MPI_IN_PLACE and the others. Weak:
// another MPI has none (its Fortran sentinels are then passed through as buffers).
extern "C" {
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_status_ignore_ __attribute__((weak));
extern int mpi_fortran_statuses_ignore_ __attribute__((weak));
}

namespace gridcast::hook {

void* fortran_pmpi_entry(const char* lower)
{
  std::string base = std::string("pmpi_") + lower;
  std::string upper = base;
  for (char& ch : upper)
    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const std::string& name : {base + "_", base + "__", base, upper})
    if (void* f = dlsym(RTLD_NEXT, name.c_str()))
      return f;
  // The application called a Fortran MPI function, yet no Fortran MPI library defines its PMPI entry.
  std::fprintf(stderr, "gridcast-hook: internal error: no Fortran PMPI entry %s_ (nor %s__, %s, %s) in the loaded MPI\n",
               base.c_str(), base.c_str(), base.c_str(), upper.c_str());
  std::_Exit(2);
}

void* fortran_next_entry(const char* name)
{
  if (void* f = dlsym(RTLD_NEXT, name))
    return f;
  std::fprintf(stderr, "gridcast-hook: internal error: no %s in the loaded MPI past the hook\n", name);
  std::_Exit(2);
}

const void* fortran_buffer(const void* buf)
{
  if (&mpi_fortran_in_place_ != nullptr && buf == &mpi_fortran_in_place_)
    return MPI_IN_PLACE;
  if (&mpi_fortran_bottom_ != nullptr && buf == &mpi_fortran_bottom_)
    return MPI_BOTTOM;
  return buf;
}

bool fortran_status_ignore(const MPI_Fint* status)
{
  return &mpi_fortran_status_ignore_ != nullptr && status == &mpi_fortran_status_ignore_;
}

bool fortran_statuses_ignore(const MPI_Fint* statuses)
{
  return &mpi_fortran_statuses_ignore_ != nullptr && statuses == &mpi_fortran_statuses_ignore_;
}

}  // namespace gridcast::hook
