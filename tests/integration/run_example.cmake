# Runs one example folder as a test: the gridcast arguments in examples/<name>/command, from the
# repository root, must print exactly examples/<name>/expected-output.txt (simulated times included:
# the exact match also proves determinism across builds).
# Inputs: -DGRIDCAST=<binary> -DSOURCE_DIR=<repository root> -DEXAMPLE=<name>
file(READ "${SOURCE_DIR}/examples/${EXAMPLE}/command" command)
string(STRIP "${command}" command)
separate_arguments(args UNIX_COMMAND "${command}")
file(REMOVE_RECURSE "${SOURCE_DIR}/out/${EXAMPLE}")
execute_process(COMMAND "${GRIDCAST}" ${args}
                WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE actual ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gridcast ${command} exited with ${rc}:\n${errors}")
endif()
file(READ "${SOURCE_DIR}/examples/${EXAMPLE}/expected-output.txt" expected)
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "output differs from examples/${EXAMPLE}/expected-output.txt\n--- expected\n${expected}--- actual\n${actual}")
endif()
