#!/bin/sh
# Re-records the committed traces: builds pingpong.c with smpicc and runs it under SMPI with time-independent
# tracing (scripts/record-smpi.sh). The output is the same on every machine: `git diff` after running this
# should be empty.
#
#   ./record.sh            # writes trace/trace.txt and trace/trace.txt_files/
set -eu
NP=2
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../../scripts/record-smpi.sh" trace "$here" pingpong "$NP"
