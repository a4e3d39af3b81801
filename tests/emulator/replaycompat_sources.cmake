# Replay of what the profiler records from real applications (emulator/src/replay.cpp, p2p.cpp).
set(GRIDCAST_REPLAYCOMPAT_TEST_SOURCES emulator/test_replay_compat.cpp)
