# Test sources of the calibration (calibration.json, `gridcast calibrate`, factors in the emulator),
# included by tests/CMakeLists.txt.
set(GRIDCAST_CALIBRATE_TEST_SOURCES
  calibrate/test_calibration_json.cpp
  calibrate/test_factors.cpp
  calibrate/test_calibrate.cpp
  calibrate/test_shared_memory.cpp
  calibrate/test_copy_overhead.cpp
  calibrate/test_collectives_measured.cpp
  calibrate/test_openmpi_selection.cpp
)
