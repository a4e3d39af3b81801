# SMPI's message envelope and its nonblocking-collective algorithms (emulator/src/p2p.cpp, collectives.cpp),
# pinned against times that smpirun 3.32 gives for the same programs.
set(GRIDCAST_NBC_TEST_SOURCES emulator/test_envelope.cpp emulator/test_nbc.cpp)
