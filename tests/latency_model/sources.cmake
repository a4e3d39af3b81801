# Test sources of the latency model and `gridcast predict`, included by tests/CMakeLists.txt.
set(GRIDCAST_LATENCY_MODEL_TEST_SOURCES
  latency_model/test_latency_model.cpp
  latency_model/test_fast_forward.cpp
)
