#!/bin/sh
# bench.sh (make bench): simulator speed.
#   1. the default workload, end to end (load, plan, simulate, write): median
#      wall time of 7 runs and simulated events per second;
#   2. the 64-rank ring all-gather storm (tests/bench_collectives).
# Figures are medians: machines here are noisy.
set -eu
: "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
tmp=$(mktemp -d /tmp/cpsim-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
runs=7
: >"$tmp/times"
i=0
while [ $i -lt $runs ]; do
    t0=$(date +%s.%N)
    "$CPSIM" run --out "$tmp/out" >"$tmp/table"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }' >>"$tmp/times"
    i=$((i + 1))
done
median=$(sort -g "$tmp/times" | sed -n "$(((runs + 1) / 2))p")
line=$(grep 'simulated' "$tmp/table")
pattern='.*simulated \([0-9]*\) events, \([0-9]*\) messages in \([0-9.]*\) s.*'
events=$(echo "$line" | sed "s/$pattern/\\1/")
msgs=$(echo "$line" | sed "s/$pattern/\\2/")
sim=$(echo "$line" | sed "s/$pattern/\\3/")
printf 'default workload: median wall %.3f s over %d runs (target < 0.5 s)\n' "$median" "$runs"
rate=$(awk -v e="$events" -v m="$msgs" -v s="$sim" 'BEGIN { print (e + m) / s }')
printf '  last run: %s events + %s messages simulated in %s s of simgrid_run (%.0f events/s)\n' \
    "$events" "$msgs" "$sim" "$rate"
"$top_builddir/tests/bench_collectives"
