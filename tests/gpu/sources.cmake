# Test sources of the GPU emulation (issue 5), included by tests/CMakeLists.txt.
set(GRIDCAST_GPU_TEST_SOURCES
  gpu/test_gpu.cpp
  gpu/test_gpu_platform.cpp
)
