#!/bin/sh
# Fetches HPL's source from Debian: the `hpcc` source package (HPCC 1.5.0, whose hpl/ folder is HPL 2.0
# with HPCC's driver), the same upstream tarball the installed `hpcc` binary was built from.
# With a deb-src line in APT's sources, `apt-get source hpcc` does it; Debian 12 ships without one, so
# by default the upstream tarball is taken from Debian's pool (deb.debian.org) and checked against the
# SHA-256 of the package's .dsc (hpcc_1.5.0-3.dsc). Unpacks into DIR (default: .cache/hpcc-src of this
# checkout, git-ignored); does nothing when DIR/hpcc-1.5.0/hpl is there already.
#
#   examples/hpl-smpi/fetch-source.sh [DIR]
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.cache/hpcc-src}"
tarball=hpcc_1.5.0.orig.tar.gz
sha256=0a6fef7ab9f3347e549fed65ebb98234feea9ee18aea0c8f59baefbe3cf7ffb8   # Checksums-Sha256 of hpcc_1.5.0-3.dsc
pool=http://deb.debian.org/debian/pool/main/h/hpcc

[ -d "$dir/hpcc-1.5.0/hpl" ] && exit 0
mkdir -p "$dir"
if apt-get source --print-uris hpcc >/dev/null 2>&1; then
  # Only the upstream tarball is used (its SHA-256 is checked below): a mirror missing the Debian
  # patches (hpcc_1.5.0-3.debian.tar.xz) must not stop the build once the tarball has arrived.
  (cd "$dir" && apt-get source --download-only hpcc >/dev/null) || [ -f "$dir/$tarball" ]
else
  if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$dir/$tarball" "$pool/$tarball"
  else wget -q -O "$dir/$tarball" "$pool/$tarball"; fi
fi
echo "$sha256  $dir/$tarball" | sha256sum -c --quiet - || {
  echo "fetch-source: $dir/$tarball does not have the SHA-256 of Debian's hpcc_1.5.0-3.dsc" >&2; exit 1; }
tar -xzf "$dir/$tarball" -C "$dir"
echo "fetch-source: HPL source in $dir/hpcc-1.5.0/hpl"
