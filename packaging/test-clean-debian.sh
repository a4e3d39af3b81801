#!/usr/bin/env bash
# The .deb on a clean Debian 12, as a user without the build's dependencies gets it: a minimal bookworm
# root made by debootstrap, the package installed there by apt (which must resolve every Depends from
# Debian's archive alone), then the README's prediction run on the installed examples and its makespan
# compared with the README's.
#
#   packaging/test-clean-debian.sh <gridcast_VERSION_ARCH.deb> [ROOT]
#
# Needs root, debootstrap and Debian's archive (network); ROOT (default /var/tmp/gridcast-clean-bookworm)
# is made once and reused: the package is purged again at the end, so the next run starts clean again.
# Not part of the CTest suite (root and network); `package: the .deb installs ...` tests the package's
# contents without them. Exit 0: the installed gridcast printed the README's makespan.
set -euo pipefail

deb="${1:?usage: $0 <gridcast_VERSION_ARCH.deb> [ROOT]}"
root="${2:-/var/tmp/gridcast-clean-bookworm}"
here="$(cd "$(dirname "$0")/.." && pwd)"
[[ -f "$deb" ]] || { echo "test-clean-debian: $deb: no such package" >&2; exit 1; }
[[ $EUID -eq 0 ]] || { echo "test-clean-debian: needs root (debootstrap, chroot)" >&2; exit 1; }

if [[ ! -x "$root/usr/bin/apt-get" ]]; then
  command -v debootstrap > /dev/null || { echo "test-clean-debian: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
  echo "== debootstrap --variant=minbase bookworm $root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2> /dev/null || true' EXIT

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

echo "== apt-get install ./$(basename "$deb") (Depends resolved from Debian's archive)"
cp "$deb" "$root/tmp/gridcast.deb"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends /tmp/gridcast.deb > "$root/tmp/install.log" 2>&1 || {
  tail -30 "$root/tmp/install.log" >&2
  exit 1
}

# The README's prediction (examples/predict-stencil/command) with the installed examples, from /tmp.
args="$(sed -e 's|examples/|/usr/share/gridcast/examples/|g' -e 's|--out [^ ]*|--out /tmp/gc-out|' "$here/examples/predict-stencil/command")"
echo "== gridcast $args"
out="$(in_root sh -c "cd /tmp && rm -rf gc-out && gridcast $args" 2>&1)" || {
  echo "$out" >&2
  exit 1
}
echo "$out"
want="$(grep -m1 -E '^makespan: ' "$here/examples/predict-stencil/expected-output.txt")"
got="$(echo "$out" | grep -m1 -E '^makespan: ' || true)"
in_root apt-get purge -y -qq --autoremove gridcast > /dev/null 2>&1 || true  # and every Depends it pulled in
if [[ "$got" != "$want" ]]; then
  echo "test-clean-debian: the installed gridcast printed '$got', the README's example expects '$want'" >&2
  exit 1
fi
echo "test-clean-debian: OK: $got on a clean Debian 12 ($(cat "$root/etc/debian_version"))"
