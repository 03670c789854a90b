#!/bin/sh
# install.sh: `make install` carries every bundled file the binary needs: the
# installed binary runs the default workload from the installed data alone.
set -u
: "${top_builddir:=.}"
tmp=$(mktemp -d /tmp/cpsim-inst-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$top_builddir" install DESTDIR="$tmp" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
bin=$(find "$tmp" -type f -name cpsim -perm -u+x | head -n 1)
data=$(find "$tmp" -type d -path '*/share/cpsim' | head -n 1)
[ -n "$bin" ] && [ -n "$data" ] || { echo "FAIL: install tree lacks the binary or data"; exit 1; }
CPSIM_DATADIR="$data" "$bin" run --quiet --out "$tmp/out" || { echo "FAIL: installed run"; exit 1; }
[ -s "$tmp/out/summary.json" ] || { echo "FAIL: no summary"; exit 1; }
find "$tmp" -name cpsim.1 | grep -q . || { echo "FAIL: man page not installed"; exit 1; }
echo "install.sh: installed binary runs from installed data"
