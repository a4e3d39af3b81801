# Test sources of the platform generator (`gridcast platform`), included by tests/CMakeLists.txt, and the
# test that the committed platforms/*/platform.xml are what their specs give today.
set(GRIDCAST_PLATFORM_TEST_SOURCES
  platform/test_units.cpp
  platform/test_spec.cpp
  platform/test_generator.cpp
  platform/test_platform_cli.cpp
)
add_test(NAME "platforms: committed XML up to date"
         COMMAND ${CMAKE_COMMAND} -DGRIDCAST=$<TARGET_FILE:gridcast> -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DMODE=check
                 -DOUT_DIR=${CMAKE_CURRENT_BINARY_DIR}/platforms -P ${PROJECT_SOURCE_DIR}/cmake/platforms.cmake)
