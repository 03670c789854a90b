#!/bin/sh
# determinism.sh: the same inputs give byte-identical outputs.
set -u
: "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
tmp=$(mktemp -d /tmp/cpsim-det-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for i in 1 2; do
    "$CPSIM" run --quiet --out "$tmp/run$i" --set requests.0.decode_tokens=2 \
        --set requests.1.prompt_tokens=4096 --set requests.1.arrival_s=0.01 || exit 1
done
for f in summary.json trace.json memory.csv; do
    cmp "$tmp/run1/$f" "$tmp/run2/$f" || { echo "FAIL: $f differs between runs"; exit 1; }
done
echo "determinism.sh: outputs identical"
