# Runs one example folder as a test: the gridcast arguments in examples/<name>/command, from the
# repository root, must print exactly examples/<name>/expected-output.txt (simulated times included:
# the exact match also proves determinism across builds).
# The command writes its outputs with `--out out/<name>`; the test sends them into WORK_DIR instead (a
# folder of the build tree), so that running the suite writes nothing into the source tree.
# Inputs: -DGRIDCAST=<binary> -DSOURCE_DIR=<repository root> -DEXAMPLE=<name> -DWORK_DIR=<scratch directory>
file(READ "${SOURCE_DIR}/examples/${EXAMPLE}/command" command)
string(STRIP "${command}" command)
separate_arguments(args UNIX_COMMAND "${command}")

set(committed_out "out/${EXAMPLE}")
set(out_dir "${WORK_DIR}/out/${EXAMPLE}")
list(FIND args "${committed_out}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "examples/${EXAMPLE}/command has no argument ${committed_out} to send into the build tree")
endif()
list(REMOVE_AT args ${at})
list(INSERT args ${at} "${out_dir}")
list(FIND args "${committed_out}" again)
if(NOT again EQUAL -1)
  message(FATAL_ERROR "examples/${EXAMPLE}/command names ${committed_out} more than once")
endif()

file(REMOVE_RECURSE "${out_dir}")
execute_process(COMMAND "${GRIDCAST}" ${args}
                WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE actual ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gridcast ${args} exited with ${rc}:\n${errors}")
endif()
if(NOT EXISTS "${out_dir}/prediction.json" AND NOT EXISTS "${out_dir}/results.csv")
  message(FATAL_ERROR "gridcast ${args} wrote no ${out_dir}/prediction.json (nor a study's results.csv)")
endif()
# The program prints where it wrote ("wrote out/<name>/prediction.json ..."): the committed text names the
# path of the committed command, so the build-tree folder is written back as out/<name> before comparing.
string(REPLACE "${out_dir}" "${committed_out}" actual "${actual}")
file(READ "${SOURCE_DIR}/examples/${EXAMPLE}/expected-output.txt" expected)
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "output differs from examples/${EXAMPLE}/expected-output.txt\n--- expected\n${expected}--- actual\n${actual}")
endif()
# A study's example also commits the figures of every point: results.csv must be those bytes.
if(EXISTS "${SOURCE_DIR}/examples/${EXAMPLE}/expected-results.csv")
  file(READ "${SOURCE_DIR}/examples/${EXAMPLE}/expected-results.csv" expected_csv)
  file(READ "${out_dir}/results.csv" actual_csv)
  if(NOT actual_csv STREQUAL expected_csv)
    message(FATAL_ERROR "results.csv differs from examples/${EXAMPLE}/expected-results.csv\n--- expected\n${expected_csv}--- actual\n${actual_csv}")
  endif()
endif()
