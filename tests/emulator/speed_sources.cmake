# The parts that the replay-speed work reshaped (digest of inputs, matching queues, trace reading through
# small buffers), checked against known answers.
set(GRIDCAST_SPEED_TEST_SOURCES emulator/test_speed_parts.cpp)
