# Collective algorithm tests (emulator/src/collectives.cpp).
set(GRIDCAST_COLLECTIVE_TEST_SOURCES emulator/test_collectives.cpp emulator/test_local_copy.cpp)
