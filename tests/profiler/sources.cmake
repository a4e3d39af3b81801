# Tests of the profiler (gridcast::profiler, libgridcast-hook.so, `gridcast profile`), included by
# tests/CMakeLists.txt. The runs of real MPI programs need MPI and the hook; without them only the unit
# tests are built.
set(GRIDCAST_PROFILER_TEST_SOURCES profiler/test_profiler_units.cpp)

set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI COMPONENTS CXX QUIET)
find_package(BLAS QUIET)
if(MPI_CXX_FOUND AND BLAS_FOUND AND TARGET gridcast_hook)
  # The sample programs get the hook preloaded, so they are never sanitized (see profiler/hook).
  add_library(gridcast_fake_gpu SHARED profiler/apps/fake_gpu.cpp)
  add_executable(gridcast_mpi_sample profiler/apps/mpi_sample.cpp)
  target_compile_options(gridcast_mpi_sample PRIVATE -finstrument-functions)
  find_package(Threads REQUIRED)
  target_link_libraries(gridcast_mpi_sample PRIVATE MPI::MPI_CXX BLAS::BLAS Threads::Threads)
  add_executable(gridcast_mpi_families profiler/apps/mpi_families.cpp)
  target_link_libraries(gridcast_mpi_families PRIVATE MPI::MPI_CXX)
  add_executable(gridcast_mpi_spawn profiler/apps/mpi_spawn.cpp)
  target_link_libraries(gridcast_mpi_spawn PRIVATE MPI::MPI_CXX)
  add_executable(gridcast_gpu_sample profiler/apps/gpu_sample.cpp)
  target_link_libraries(gridcast_gpu_sample PRIVATE MPI::MPI_CXX gridcast_fake_gpu)
  foreach(t gridcast_fake_gpu gridcast_mpi_sample gridcast_gpu_sample gridcast_mpi_families gridcast_mpi_spawn)
    target_compile_options(${t} PRIVATE -fno-sanitize=all)
    target_link_options(${t} PRIVATE -fno-sanitize=all)
  endforeach()
  list(APPEND GRIDCAST_PROFILER_TEST_SOURCES profiler/test_profile_runs.cpp profiler/test_profile_families.cpp
    profiler/test_profile_spawn.cpp)
  set_source_files_properties(profiler/test_profile_runs.cpp PROPERTIES COMPILE_DEFINITIONS
    "GRIDCAST_MPI_SAMPLE=\"$<TARGET_FILE:gridcast_mpi_sample>\";GRIDCAST_GPU_SAMPLE=\"$<TARGET_FILE:gridcast_gpu_sample>\"")
  set_source_files_properties(profiler/test_profile_families.cpp PROPERTIES COMPILE_DEFINITIONS
    "GRIDCAST_MPI_FAMILIES=\"$<TARGET_FILE:gridcast_mpi_families>\"")
  set_source_files_properties(profiler/test_profile_spawn.cpp PROPERTIES COMPILE_DEFINITIONS
    "GRIDCAST_MPI_SPAWN=\"$<TARGET_FILE:gridcast_mpi_spawn>\"")
  cmake_language(DEFER CALL add_dependencies gridcast_tests gridcast_mpi_sample gridcast_gpu_sample gridcast_mpi_families gridcast_mpi_spawn gridcast_hook)
endif()
# tests/cli checks that `gridcast profile` finds the hook where it was built (the fallback beside the program
# would hide a build that does not say where).
if(TARGET gridcast_hook)
  set_property(SOURCE cli/test_cli.cpp APPEND PROPERTY COMPILE_DEFINITIONS
    GRIDCAST_TEST_HOOK_PATH="$<TARGET_FILE:gridcast_hook>")
endif()
cmake_language(DEFER CALL target_link_libraries gridcast_tests PRIVATE gridcast::profiler)
