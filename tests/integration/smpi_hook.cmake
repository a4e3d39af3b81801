# gridcast's profiler under SMPI (scripts/smpi-hook.sh, libgridcast-hook-smpi.a): smpi_hook/creations.c,
# linked with the hook, is recorded at 6 and 7 ranks (7: MPI_Cart_create leaves a rank out), twice each,
# and must
#   - give byte-identical profiles both times (the recording is deterministic);
#   - hold the creations and the MPI_PROC_NULL halves that SMPI's time-independent traces lack;
#   - replay with `gridcast replay` (the default selector, SMPI's for a profile SMPI recorded) to the
#     simulated time smpirun printed for the same run, within smpirun's 6 printed digits: gridcast
#     prices MPI_Cart_create, MPI_Cart_sub, MPI_Comm_split and MPI_Comm_dup as SMPI 3.32's code does.
# Needs smpicc/smpirun (libsimgrid-dev).
# Inputs: GRIDCAST=<binary>, GRIDCAST_HOOK_SMPI=<archive> in the environment, -DSOURCE_DIR=<repository root>,
# -DWORK_DIR=<scratch directory>
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
function(must)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "${cmd} exited with ${rc}:\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

set(hook "${SOURCE_DIR}/scripts/smpi-hook.sh")
must("${hook}" build "${WORK_DIR}/creations" "${SOURCE_DIR}/tests/integration/smpi_hook/creations.c")
foreach(np 6 7)
  set(cluster "${WORK_DIR}/cluster-${np}")
  must(python3 "${SOURCE_DIR}/scripts/gen_cluster.py" --hosts ${np} --bw 1.25GBps --lat 5us --backbone-bw 100GBps
       --out-dir "${cluster}")
  foreach(take a b)
    must("${hook}" record ${np} 1 1e9 "${WORK_DIR}/np${np}-${take}" "${cluster}/platform.xml" "${cluster}/hostfile"
         "${WORK_DIR}/creations")
  endforeach()
  file(GLOB files RELATIVE "${WORK_DIR}/np${np}-a" "${WORK_DIR}/np${np}-a/*")
  list(LENGTH files count)
  math(EXPR want "${np} + 1")
  if(NOT count EQUAL want)
    message(FATAL_ERROR "np ${np}: the profile has ${count} files (${files}), not run.json and ${np} rank files")
  endif()
  foreach(f IN LISTS files)
    file(SHA1 "${WORK_DIR}/np${np}-a/${f}" first)
    file(SHA1 "${WORK_DIR}/np${np}-b/${f}" second)
    if(NOT first STREQUAL second)
      message(FATAL_ERROR "np ${np}: ${f} differs between two recordings of the same run")
    endif()
  endforeach()

  must("$ENV{GRIDCAST}" convert "${WORK_DIR}/np${np}-a" --to jsonl --out "${WORK_DIR}/np${np}-jsonl" --force)
  file(READ "${WORK_DIR}/np${np}-jsonl/rank-00000.jsonl" rank0)
  foreach(fn MPI_Cart_create MPI_Cart_sub MPI_Comm_split MPI_Comm_dup)
    if(NOT rank0 MATCHES "\"fn\":\"${fn}\"")
      message(FATAL_ERROR "np ${np}: rank 0's profile has no ${fn} record:\n${rank0}")
    endif()
  endforeach()
  # Rank 0 is an end of the non-periodic axis: its sendrecv receives from MPI_PROC_NULL, so only its send
  # half happens, and the profile keeps it (SMPI's tracer writes no line for such a call).
  if(NOT rank0 MATCHES "\"fn\":\"MPI_Sendrecv\"")
    message(FATAL_ERROR "np ${np}: rank 0's MPI_Sendrecv with MPI_PROC_NULL is not in its profile:\n${rank0}")
  endif()

  file(READ "${WORK_DIR}/np${np}-a.smpi/smpirun.txt" smpirun)
  if(NOT smpirun MATCHES "Simulated time: ([0-9.eE+-]+) seconds")
    message(FATAL_ERROR "np ${np}: no simulated time in smpirun's output:\n${smpirun}")
  endif()
  set(smpi_s "${CMAKE_MATCH_1}")
  must("$ENV{GRIDCAST}" replay "${WORK_DIR}/np${np}-a" --platform "${cluster}/platform.xml"
       --hostfile "${cluster}/hostfile" --no-timeline --out "${WORK_DIR}/replay-${np}")
  if(NOT out MATCHES "makespan: ([0-9.eE+-]+) s")
    message(FATAL_ERROR "np ${np}: no makespan in the replay's output:\n${out}")
  endif()
  set(replay_s "${CMAKE_MATCH_1}")
  # smpirun prints 6 significant digits: the replay must round to the same.
  execute_process(COMMAND python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-6 * b else 1)"
                  "${replay_s}" "${smpi_s}" RESULT_VARIABLE close)
  if(NOT close EQUAL 0)
    message(FATAL_ERROR "np ${np}: gridcast replay gives ${replay_s} s, smpirun ${smpi_s} s")
  endif()
  message(STATUS "np ${np}: smpirun ${smpi_s} s, gridcast replay ${replay_s} s")
endforeach()
