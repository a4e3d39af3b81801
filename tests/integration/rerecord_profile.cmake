# Re-records one committed training profile (examples/predict-stencil/profiles/np4-nw8, recorded by
# examples/stencil3d/record.sh under SMPI) into a scratch directory and requires every file to be
# byte-identical: the recording is deterministic and run.json names no temporary path, so re-running
# an example's record.sh leaves `git diff` empty. Needs smpicc/smpirun (libsimgrid-dev).
# Inputs: GRIDCAST=<binary> in the environment, -DSOURCE_DIR=<repository root>, -DWORK_DIR=<scratch directory>
set(committed "${SOURCE_DIR}/examples/predict-stencil/profiles/np4-nw8")
set(fresh "${WORK_DIR}/np4-nw8")
file(REMOVE_RECURSE "${fresh}")
file(MAKE_DIRECTORY "${WORK_DIR}")
execute_process(COMMAND "${SOURCE_DIR}/examples/stencil3d/record.sh" 4 8 "${fresh}"
                WORKING_DIRECTORY "${WORK_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE errors)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "examples/stencil3d/record.sh 4 8 exited with ${rc}:\n${out}${errors}")
endif()
# The profile of a 4-rank run: run.json and one binary trace per rank.
set(committed_files run.json rank-00000.gct rank-00001.gct rank-00002.gct rank-00003.gct)
foreach(f IN LISTS committed_files)
  if(NOT EXISTS "${fresh}/${f}")
    message(FATAL_ERROR "the re-recorded profile has no ${f}")
  endif()
endforeach()
foreach(f IN LISTS committed_files)
  file(SHA1 "${committed}/${f}" want)
  file(SHA1 "${fresh}/${f}" got)
  if(NOT want STREQUAL got)
    file(READ "${fresh}/${f}" text LIMIT 2000)
    message(FATAL_ERROR "${f} differs from examples/predict-stencil/profiles/np4-nw8/${f}; re-recorded:\n${text}")
  endif()
endforeach()
