# Sourced by the record.sh scripts of the examples that profile a real MPI application of Debian (hpl-hpcc,
# lammps-lj) after they set `here`: the paths and settings every such recording shares.
root=$(cd "$here/../.." && pwd)
gridcast=${GRIDCAST:-$root/build/bin/gridcast}
# The host speed written to run.json (that turns measured seconds into flops) is this machine's
# calibrated dgemm rate, the one platforms/this-machine gives its host back: a replay or a prediction on
# that platform then takes the recorded time. CALIBRATION names another calibration file.
calibration=${CALIBRATION:-$root/platforms/this-machine/calibration.json}
as_root=""
[ "$(id -u)" = 0 ] && as_root="--allow-run-as-root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/profiles"
