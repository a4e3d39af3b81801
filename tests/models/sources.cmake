# Test sources of gridcast::models, included by tests/CMakeLists.txt.
set(GRIDCAST_MODELS_TEST_SOURCES
  models/test_call.cpp
  models/test_profile.cpp
  models/test_native.cpp
  models/test_tit.cpp
  models/test_json_reader.cpp
)
