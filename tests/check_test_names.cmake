# Fails when a TEST_CASE name holds a ';': Catch2 2's CMake discovery splits such a name into two CTest
# tests that match no case, so the case never runs and both halves "pass".
# Inputs: -DTESTS_DIR=<the tests folder>
file(GLOB_RECURSE sources "${TESTS_DIR}/*.cpp")
set(bad "")
foreach(f IN LISTS sources)
  file(STRINGS "${f}" lines REGEX "TEST_CASE\\(\"[^\"]*;")
  if(lines)
    string(APPEND bad "${f}\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test names with ';' (CTest would never run them):\n${bad}")
endif()
