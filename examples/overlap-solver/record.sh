#!/bin/sh
# Records one run of overlap_solver.c under SMPI with time-independent tracing, then imports it as a gridcast
# profile directory (binary encoding); see scripts/record-smpi.sh.
#
#   ./record.sh NP NW OUT [ARGS...]   # writes the profile directory OUT (run.json + rank-*.gct);
#                                     # the program runs with arguments NW ARGS...
#   GRIDCAST=path/to/gridcast  # default: gridcast on PATH, else build/bin/gridcast of this checkout
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../../scripts/record-smpi.sh" profile "$here" overlap_solver "$@"
