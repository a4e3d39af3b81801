# GRIDCAST_FUZZ: builds the libFuzzer harnesses of fuzz/ with clang (a project of its own: the main tree's
# compiler need not be clang) and registers a bounded run of each as a CTest test (label `fuzz`) that fails
# on any finding. Without a clang that links -fsanitize=fuzzer (Debian: clang-14 libclang-rt-14-dev), the
# harnesses are skipped with a note. Guide: docs/guides/fuzzing.md.
find_program(GRIDCAST_FUZZ_CXX NAMES clang++-14 clang++ DOC "clang with libFuzzer, for the fuzz harnesses")
set(GRIDCAST_FUZZ_SECONDS 15 CACHE STRING "Seconds each fuzz harness runs as a test")

set(probe_dir ${CMAKE_BINARY_DIR}/fuzz-probe)
file(WRITE ${probe_dir}/probe.cpp
     "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
set(fuzz_ok FALSE)
if(GRIDCAST_FUZZ_CXX)
  execute_process(COMMAND ${GRIDCAST_FUZZ_CXX} -fsanitize=fuzzer,address,undefined ${probe_dir}/probe.cpp -o ${probe_dir}/probe
                  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(probe_rc EQUAL 0)
    set(fuzz_ok TRUE)
  endif()
endif()
if(NOT fuzz_ok)
  message(STATUS "gridcast: GRIDCAST_FUZZ is on but no clang links -fsanitize=fuzzer (Debian: apt-get install "
                 "clang-14 libclang-rt-14-dev): the fuzz harnesses are skipped")
  return()
endif()

include(ExternalProject)
ExternalProject_Add(gridcast_fuzzers
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/fuzz
  BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz
  CMAKE_ARGS -DCMAKE_CXX_COMPILER=${GRIDCAST_FUZZ_CXX} -DCMAKE_BUILD_TYPE=None
             -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON)  # the inner build decides what is out of date (it follows the sources it compiles)

include(${PROJECT_SOURCE_DIR}/fuzz/harnesses.cmake)
foreach(h IN LISTS GRIDCAST_FUZZ_HARNESSES)
  add_test(NAME "fuzz: ${h}"
           COMMAND ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh --build-dir ${CMAKE_BINARY_DIR} --seconds ${GRIDCAST_FUZZ_SECONDS}
                   --work-dir ${CMAKE_BINARY_DIR}/fuzz-runs ${h})
  set_tests_properties("fuzz: ${h}" PROPERTIES LABELS fuzz TIMEOUT 300)
endforeach()
