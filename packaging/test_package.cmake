# The Debian package as a user gets it: cpack builds it, `dpkg-deb -x` extracts it into WORK_DIR (never the
# source tree, never /usr), and the extracted gridcast must
#  - need nothing from the build tree (no RPATH/RUNPATH into it),
#  - print examples/predict-stencil/expected-output.txt for the README's prediction, run on the installed
#    examples (the paths in that output are the installed ones),
#  - with MPI_APP, profile an MPI run with the installed hook (<exe>/../lib/libgridcast-hook.so).
# `dpkg-deb -I` must list Depends on SimGrid, libelf, tinyxml2 and, with the hook, Open MPI.
# Inputs: -DBUILD_DIR -DSOURCE_DIR -DWORK_DIR -DCPACK -DDPKG_DEB -DREADELF -DVERSION [-DWITH_MPI=ON] [-DMPI_APP=<program>]
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " line "${ARGN}")
    message(FATAL_ERROR "${line} exited with ${rc}:\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(GLOB stale "${BUILD_DIR}/gridcast_*.deb")
if(stale)
  file(REMOVE ${stale})
endif()
execute_process(COMMAND "${CPACK}" -G DEB --config "${BUILD_DIR}/CPackConfig.cmake"
                WORKING_DIRECTORY "${BUILD_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack -G DEB exited with ${rc}:\n${out}\n${err}")
endif()
file(GLOB deb "${BUILD_DIR}/gridcast_${VERSION}_*.deb")
list(LENGTH deb count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one ${BUILD_DIR}/gridcast_${VERSION}_<arch>.deb after cpack, found ${count}:\n${out}")
endif()

run("${DPKG_DEB}" -I "${deb}")
if(NOT run_output MATCHES "\n Depends: ([^\n]+)")
  message(FATAL_ERROR "dpkg-deb -I ${deb} lists no Depends:\n${run_output}")
endif()
set(depends "${CMAKE_MATCH_1}")
set(needed libsimgrid libelf libtinyxml2)
if(WITH_MPI)
  list(APPEND needed libopenmpi)
endif()
foreach(package ${needed})
  if(NOT depends MATCHES "(^|[ ,|])${package}[0-9.a-z-]*([ ,(]|$)")
    message(FATAL_ERROR "the Depends of ${deb} name no ${package}*: ${depends}")
  endif()
endforeach()

set(root "${WORK_DIR}/root")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${root}")
run("${DPKG_DEB}" -x "${deb}" "${root}")
set(gridcast "${root}/usr/bin/gridcast")
set(share "${root}/usr/share/gridcast")
set(installed gridcast gridcast-calibrate-gpu)
if(WITH_MPI)
  list(APPEND installed gridcast-mpi-bench ../lib/libgridcast-hook.so)
endif()
foreach(file ${installed})
  if(NOT EXISTS "${root}/usr/bin/${file}")
    message(FATAL_ERROR "the package has no usr/bin/${file}")
  endif()
  run("${READELF}" -d "${root}/usr/bin/${file}")
  if(run_output MATCHES "R(UN)?PATH[^\n]*${BUILD_DIR}")
    message(FATAL_ERROR "usr/bin/${file} of the package looks for libraries in the build tree:\n${run_output}")
  endif()
endforeach()
foreach(file man/man1/gridcast.1 man/man1/gridcast-predict.1 gridcast/platforms/lassen/spec.json
             gridcast/gpu-data-sheets/h100-80gb-hbm3.json)
  if(NOT EXISTS "${root}/usr/share/${file}")
    message(FATAL_ERROR "the package has no usr/share/${file}")
  endif()
endforeach()

# The README's main command (examples/predict-stencil/command) on the installed examples, from WORK_DIR.
set(model "${share}/examples/predict-stencil/model.json")
set(out_dir "${WORK_DIR}/predict-stencil")
execute_process(COMMAND "${gridcast}" predict "${model}" --nw 32 --np 64
                        --platform "${share}/examples/stencil3d/platform.xml" --out "${out_dir}"
                WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE actual ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the packaged gridcast predict exited with ${rc}:\n${err}")
endif()
file(READ "${SOURCE_DIR}/examples/predict-stencil/expected-output.txt" expected)
if(NOT expected MATCHES "makespan: [0-9.e+-]+ s")
  message(FATAL_ERROR "examples/predict-stencil/expected-output.txt has no makespan line")
endif()
string(REPLACE "examples/predict-stencil/model.json" "${model}" expected "${expected}")
string(REPLACE "out/predict-stencil" "${out_dir}" expected "${expected}")
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "the packaged gridcast's prediction differs from examples/predict-stencil/expected-output.txt"
                      "\n--- expected\n${expected}--- actual\n${actual}")
endif()

# `gridcast profile` preloads the packaged hook. Open MPI refuses root without these.
if(MPI_APP)
  set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
  set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
  unset(ENV{GRIDCAST_HOOK})
  run("${gridcast}" profile --nw 1 --calibration "${share}/platforms/this-machine/calibration.json"
      --out "${WORK_DIR}/profile" -- mpirun -np 2 --oversubscribe --bind-to none "${MPI_APP}")
  if(NOT EXISTS "${WORK_DIR}/profile/run.json")
    message(FATAL_ERROR "the packaged gridcast profile wrote no ${WORK_DIR}/profile/run.json:\n${run_output}")
  endif()
endif()
message(STATUS "${deb}: Depends: ${depends}")
