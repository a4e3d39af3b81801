#!/bin/sh
# Re-records the committed traces: builds ring_halo.c with smpicc and runs it under SMPI with time-independent
# tracing (scripts/record-smpi.sh). The output is the same on every machine: `git diff` after running this
# should be empty.
#
#   ./record.sh            # writes trace/trace.txt and trace/trace.txt_files/
#   NP=4 ./record.sh       # any rank count up to the 8 hosts of platform.xml
set -eu
NP="${NP:-8}"
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../../scripts/record-smpi.sh" trace "$here" ring_halo "$NP"
