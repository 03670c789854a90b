#!/bin/sh
# bench_sweep.sh (make bench): sweep throughput on
# workloads/sweeps/thinker-sweep.yaml, the 1,120-point sweep (4 TP x SP
# shapes x 4 exchanges x 7 min_tokens x 10 prompt lengths), -j = the number
# of cores (target: at most 4 s for the 1,120 points, issue 31):
#   1. as `cpsim sweep` runs it: points that plan alike share a simulation;
#   2. with --no-share: every point simulated, for the cost of one.
# Prints wall time, points per second, simulations and CPU ms per point.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
tmp=$(mktemp -d /tmp/cpsim-bench-sweep-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# CPU seconds of this shell's finished children from the output of the
# `times` builtin (which must run in this shell, not in a subshell): its
# second line, "XmY.YYYs XmY.YYYs", user and system.
child_cpu_of() {
    sed -n 2p "$1" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, p, "m");
                                     s += p[1] * 60 + p[2] } print s }'
}

# bench NAME SWEEP.yaml [OPTION]: one timed sweep
bench() {
    times >"$tmp/times"
    c0=$(child_cpu_of "$tmp/times")
    t0=$(date +%s.%N)
    "$CPSIM" sweep "$2" ${3:-} --out "$tmp/$1" >/dev/null 2>"$tmp/$1.err"
    t1=$(date +%s.%N)
    sims=$(sed -n 's/.* ran as \([0-9]*\) simulations/\1/p' "$tmp/$1.err")
    times >"$tmp/times"
    c1=$(child_cpu_of "$tmp/times")
    n=$(wc -l <"$tmp/$1/results.jsonl")
    failed=$(grep -c '"status":"failed"' "$tmp/$1/results.jsonl" || true)
    awk -v a="$t0" -v b="$t1" -v n="$n" -v f="$failed" -v name="$1" -v c0="$c0" -v c1="$c1" \
        -v sims="$sims" \
        'BEGIN { w = b - a;
                 printf "%s: %d points (%d failed, %d simulations) in %.1f s wall: ", name, n, f,
                        sims, w;
                 printf "%.1f points/s, %.1f ms CPU per point\n", n / w, 1000 * (c1 - c0) / n }'
}

echo "sweep benchmark on $(nproc) cores (target: the 1,120 points in <= 4 s; issue 31)"
sweep="$top_srcdir/workloads/sweeps/thinker-sweep.yaml"
bench thinker-sweep "$sweep"
bench thinker-sweep-no-share "$sweep" --no-share
