# Regenerates every platforms/<name>/platform.xml from platforms/<name>/spec.json, with the
# calibration.json beside it when there is one. Run with cmake -P:
#   -DGRIDCAST=<gridcast program> -DSOURCE_DIR=<repository root> -DMODE=update|check [-DOUT_DIR=<dir>]
# MODE=update rewrites the committed files (the `platforms` build target). MODE=check writes into OUT_DIR
# and fails, naming each platform, when a committed platform.xml differs from what the spec gives now
# (the CTest test "platforms: committed XML up to date").
# The folder list is read when this script runs (a data directory, not a source list), so a new
# platforms/<name>/spec.json is picked up without editing any CMake file.
foreach(var GRIDCAST SOURCE_DIR MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "platforms.cmake: -D${var}=... is required")
  endif()
endforeach()
file(GLOB specs LIST_DIRECTORIES false "${SOURCE_DIR}/platforms/*/spec.json")
list(SORT specs)
if(NOT specs)
  message(FATAL_ERROR "no platforms/*/spec.json under ${SOURCE_DIR}")
endif()
set(stale "")
foreach(spec IN LISTS specs)
  get_filename_component(dir "${spec}" DIRECTORY)
  get_filename_component(name "${dir}" NAME)
  set(args platform "${spec}" --quiet)
  if(EXISTS "${dir}/calibration.json")
    list(APPEND args --calibration "${dir}/calibration.json")
  endif()
  if(MODE STREQUAL "update")
    set(out "${dir}/platform.xml")
  else()
    set(out "${OUT_DIR}/${name}/platform.xml")
    file(MAKE_DIRECTORY "${OUT_DIR}/${name}")
  endif()
  execute_process(COMMAND "${GRIDCAST}" ${args} -o "${out}" RESULT_VARIABLE rc OUTPUT_VARIABLE output
                  ERROR_VARIABLE output)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gridcast platform failed for platforms/${name} (exit ${rc}):\n${output}")
  endif()
  if(MODE STREQUAL "update")
    message(STATUS "platforms/${name}/platform.xml regenerated")
  else()
    execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${dir}/platform.xml" "${out}" RESULT_VARIABLE same)
    if(NOT same EQUAL 0)
      list(APPEND stale "${name}")
    endif()
  endif()
endforeach()
if(stale)
  message(FATAL_ERROR "stale committed platform(s): ${stale}. Regenerate with `cmake --build build --target platforms` "
                      "and commit platforms/*/platform.xml")
endif()
