#!/usr/bin/env bash
# A real single-node Slurm (22.05, Debian 12) on this machine, for the tests that submit job arrays.
#   scripts/slurm-local.sh start|stop|status [--state-dir DIR]     (default DIR: /tmp/gridcast-slurm)
# start writes DIR/slurm.conf, starts munged (if none answers), slurmctld and slurmd, waits until the node
# is idle and prints `export SLURM_CONF=DIR/slurm.conf` as its last stdout line (also written to DIR/env).
# Runs as root. Bounded waits: GRIDCAST_SLURM_TIMEOUT seconds (default 30). Ports: GRIDCAST_SLURMCTLD_PORT
# (6817) and GRIDCAST_SLURMD_PORT (6818). See docs/guides/slurm-local.md.
set -euo pipefail

usage() { echo "usage: $0 start|stop|status [--state-dir DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd="$1"; shift
dir=/tmp/gridcast-slurm
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) [ $# -ge 2 ] || usage; dir="$2"; shift 2 ;;
    --state-dir=*) dir="${1#*=}"; shift ;;
    *) usage ;;
  esac
done
case "$cmd" in start|stop|status) ;; *) usage ;; esac
dir="$(realpath -m -- "$dir")"   # the daemons chdir: the paths in slurm.conf must be absolute
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"
host="$(hostname -s)"
timeout_s="${GRIDCAST_SLURM_TIMEOUT:-30}"
munge_log=/var/log/munge/munged.log

say() { echo "slurm-local: $*"; }
err() { echo "slurm-local: error: $*" >&2; }
show_log() {  # FILE: its tail on stderr
  if [ -r "$1" ]; then echo "---- last lines of $1 ----" >&2; tail -n 25 "$1" >&2; echo "----" >&2
  else echo "(no log $1)" >&2; fi
}
die() {  # REASON [LOG...]: the reason, the logs' tails, exit 1
  local why="$1"; shift; err "$why"
  local f; for f in "$@"; do show_log "$f"; done
  exit 1
}
pid_of() { [ -r "$1" ] && tr -dc '0-9' < "$1" || true; }        # PIDFILE -> pid or ""
alive() {  # PIDFILE, named after its daemon: that daemon runs (a reused pid or a zombie does not count)
  local p st; p="$(pid_of "$1")"; [ -n "$p" ] || return 1
  st="$(cat "/proc/$p/stat" 2>/dev/null)" || return 1
  [[ "$st" == "$p ($(basename "$1" .pid)) "[^Z]* ]]
}
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
node_state() { { timeout 10 sinfo -h -N -n "$host" -o '%T' 2>/dev/null || true; } | head -n 1; }  # "": no answer

# Up and answering: our two daemons alive, sinfo through our SLURM_CONF reports the node responding and usable.
check_up() {
  [ -f "$conf" ] || { why="no $conf (not started)"; return 1; }
  alive "$dir/slurmctld.pid" || { why="slurmctld is not running (pid file $dir/slurmctld.pid)"; return 1; }
  alive "$dir/slurmd.pid" || { why="slurmd is not running (pid file $dir/slurmd.pid)"; return 1; }
  local st; st="$(node_state)"
  [ -n "$st" ] || { why="sinfo does not answer (SLURM_CONF=$conf)"; return 1; }
  case "$st" in
    idle|mixed|allocated|completing) return 0 ;;
    *) why="node $host is '$st'"; return 1 ;;
  esac
}

ensure_munge() {
  if munge_ok; then say "munged already answers"; return 0; fi
  local key=/etc/munge/munge.key
  if [ ! -s "$key" ]; then
    say "creating the munge key $key"
    install -d -o munge -g munge -m 0700 /etc/munge
    if command -v mungekey >/dev/null; then mungekey --create --keyfile="$key"
    else dd if=/dev/urandom of="$key" bs=1024 count=1 status=none; fi
    chown munge:munge "$key"; chmod 0400 "$key"
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/log/munge
  install -d -o munge -g munge -m 0711 /var/lib/munge
  [ "$(stat -c %U /run/munge)" = munge ] || die "/run/munge is not owned by munge"
  say "starting munged"
  runuser -u munge -- /usr/sbin/munged --force >"$dir/munged.start.out" 2>&1 \
    || die "munged did not start: $(cat "$dir/munged.start.out")" "$munge_log"
  local i; for ((i = 0; i < timeout_s * 5; i++)); do munge_ok && break; sleep 0.2; done
  munge_ok || die "munged does not answer after ${timeout_s}s (munge -n | unmunge)" "$munge_log"
  cp /run/munge/munged.pid "$dir/munged.pid" \
    || die "munged wrote no /run/munge/munged.pid" "$munge_log"   # marks munged as ours: stop ends it
}

write_conf() {
  local cpus mem_mb real
  cpus="$(nproc)"
  mem_mb=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 ))
  real=$(( mem_mb - mem_mb / 20 - 256 )); [ "$real" -ge 1 ] || real=1   # a margin of 5% + 256 MB
  mkdir -p "$dir/slurmctld" "$dir/slurmd"
  cat > "$conf.tmp" <<EOF
# Written by scripts/slurm-local.sh: a single-node Slurm for gridcast's tests.
ClusterName=gridcast
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${GRIDCAST_SLURMCTLD_PORT:-6817}
SlurmdPort=${GRIDCAST_SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$dir/slurmctld
SlurmdSpoolDir=$dir/slurmd
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$real State=UNKNOWN
PartitionName=gridcast Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$conf.tmp" "$conf"
  echo "export SLURM_CONF=$conf" > "$dir/env"
}

wait_until() {  # SECONDS COMMAND...: true as soon as COMMAND is, false after SECONDS
  local end=$(( SECONDS + $1 )); shift
  until "$@"; do [ "$SECONDS" -lt "$end" ] || return 1; sleep 0.5; done
}

do_start() {
  [ "$(id -u)" -eq 0 ] || die "start needs root (SlurmUser=root, munged run as munge)"
  local why="" t0
  if check_up; then
    say "already up ($host: $(node_state))"
    echo "export SLURM_CONF=$conf"; return 0
  fi
  mkdir -p "$dir"
  ensure_munge
  if [ -f "$conf" ] && alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid"; then
    say "daemons already running, only waiting for the node"
  else
    # half a cluster (one daemon died): end it, so that both start from the same new slurm.conf
    stop_pid slurmd "$dir/slurmd.pid"; stop_pid slurmctld "$dir/slurmctld.pid"
    write_conf
    say "starting slurmctld"
    slurmctld -f "$conf" >"$dir/slurmctld.start.out" 2>&1 \
      || die "slurmctld did not start: $(cat "$dir/slurmctld.start.out")" "$dir/slurmctld.log"
    t0=$SECONDS
    until [[ "$(timeout 5 scontrol ping 2>/dev/null || true)" == *"is UP"* ]]; do
      alive "$dir/slurmctld.pid" || [ $(( SECONDS - t0 )) -lt 3 ] \
        || die "slurmctld exited" "$dir/slurmctld.log" "$munge_log"
      [ $(( SECONDS - t0 )) -lt "$timeout_s" ] \
        || die "slurmctld does not answer after ${timeout_s}s (scontrol ping)" "$dir/slurmctld.log" "$munge_log"
      sleep 0.5
    done
    say "starting slurmd"
    slurmd -f "$conf" -N "$host" >"$dir/slurmd.start.out" 2>&1 \
      || die "slurmd did not start: $(cat "$dir/slurmd.start.out")" "$dir/slurmd.log"
  fi
  local st=""; t0=$SECONDS
  while :; do
    alive "$dir/slurmctld.pid" || die "slurmctld died" "$dir/slurmctld.log"
    wait_until 5 alive "$dir/slurmd.pid" || die "slurmd died or wrote no pid file" "$dir/slurmd.log"
    st="$(node_state)"
    case "$st" in
      idle|mixed|allocated|completing) break ;;   # the last three: jobs of a cluster that was already up
      down|drained|draining|drain|fail|inval) scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true ;;
    esac
    [ $(( SECONDS - t0 )) -lt "$timeout_s" ] || die "node $host is not idle after ${timeout_s}s (state '${st:-no answer}')" \
      "$dir/slurmctld.log" "$dir/slurmd.log"
    sleep 0.5
  done
  say "up: node $host $st, partition gridcast, $(nproc) CPUs"
  echo "export SLURM_CONF=$conf"
}

stop_pid() {  # NAME PIDFILE: SIGTERM, wait, SIGKILL
  local pf="$2" p; p="$(pid_of "$2")"
  if ! alive "$pf"; then rm -f "$2"; return 0; fi
  say "stopping $1 (pid $p)"
  kill -TERM "$p" 2>/dev/null || true
  if ! wait_until "$timeout_s" eval '! alive "$pf"'; then
    err "$1 (pid $p) ignored SIGTERM for ${timeout_s}s, sending SIGKILL"
    kill -KILL "$p" 2>/dev/null || true
    wait_until 5 eval '! alive "$pf"' || err "$1 (pid $p) is still there"
  fi
  rm -f "$pf"
}

do_stop() {
  if alive "$dir/slurmctld.pid" && [ -f "$conf" ]; then   # no job outlives the cluster
    if [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ]; then
      say "cancelling the jobs still queued"
      timeout 10 scancel --quiet --partition=gridcast 2>/dev/null || true
      wait_until 15 eval '[ -z "$(timeout 5 squeue -h -t R,CG,PD -o %i 2>/dev/null)" ]' || err "jobs still listed"
    fi
  fi
  stop_pid slurmd "$dir/slurmd.pid"
  stop_pid slurmctld "$dir/slurmctld.pid"
  stop_pid munged "$dir/munged.pid"   # only there when start started munged
  say "stopped"
}

do_status() {
  local why=""
  if check_up; then say "up ($host: $(node_state), SLURM_CONF=$conf)"; return 0; fi
  err "down: $why"; return 1
}

case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
esac
