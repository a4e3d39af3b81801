# Test sources of the trace-scaling model (gridcast fit / synth), included by tests/CMakeLists.txt.
set(GRIDCAST_TRACE_MODEL_TEST_SOURCES
  trace_model/test_trace_model.cpp
  trace_model/test_numbered_loops.cpp
  trace_model/test_nonblocking_collectives.cpp
  trace_model/test_grid_loop.cpp
  trace_model/test_axis_sweep.cpp
)
