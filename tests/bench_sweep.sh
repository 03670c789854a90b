#!/bin/sh
# bench_sweep.sh (make bench): sweep throughput on
# workloads/sweeps/thinker-sweep.yaml, the issue's 1,120-point sweep (4 TP x SP
# shapes x 4 exchanges x 7 min_tokens x 10 prompt lengths), -j = the number
# of cores (issue 31's targets: at most 4 s wall for the 1,120 points, 30 s
# for 10,080):
#   1. as `cpsim sweep` runs it: points that plan alike share a simulation;
#   2. with --no-share: every point simulated, for the cost of one;
#   3. its grid widened 9 times: 21 min_tokens (0, then 1K to 512M
#      doubling) x 30 prompt lengths (each of the ten and 5/4 and 3/2 of it):
#      10,080 points.
# Prints wall time against the goal, points per second, simulations and CPU
# ms per point.
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

# bench NAME SWEEP.yaml OPTION GOAL_S: one timed sweep (OPTION may be "")
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
        -v sims="$sims" -v goal="${4:-}" \
        'BEGIN { w = b - a;
                 printf "%s: %d points (%d failed, %d simulations) in %.1f s wall", name, n, f,
                        sims, w;
                 if (goal != "")
                     printf " (goal <= %s s: %s)", goal, w <= goal ? "met" : "not met";
                 printf ": %.1f points/s, %.1f ms CPU per point\n", n / w, 1000 * (c1 - c0) / n }'
}

# The bench sweep's grid widened 9 times (see the top) into FILE.
wide_sweep() {
    {
        echo "name: thinker-h100-wide"
        echo "base: $(cd "$top_srcdir/workloads/sweeps" && pwd)/thinker-h100.yaml"
        echo "grid:"
        echo "  parallel.tp: [1, 2, 4, 8]"
        echo "  parallel.sp: [1, 2, 4, 8]"
        echo "  parallel.exchange: [ulysses, all_gather, ring, none]"
        echo "  parallel.kv_storage: [by_head, by_position]"
        awk 'BEGIN { printf "  parallel.min_tokens: [0"; for (k = 0; k < 20; k++)
                         printf ", %d", 1024 * 2 ^ k; print "]";
                     printf "  requests.0.prompt_tokens: ["; L = 1024;
                     for (k = 0; k < 10; k++) { printf "%s%d, %d, %d", k ? ", " : "", L,
                                                        L * 5 / 4, L * 3 / 2; L *= 2 }
                     print "]" }'
        echo "where:"
        echo "  - parallel.tp * parallel.sp == 8"
        echo "  - (parallel.exchange == ulysses) == (parallel.kv_storage == by_head)"
    } >"$1"
}

echo "sweep benchmark on $(nproc) cores (targets: 1,120 points <= 4 s, 10,080 <= 30 s; issue 31)"
sweep="$top_srcdir/workloads/sweeps/thinker-sweep.yaml"
bench thinker-sweep "$sweep" "" 4
bench thinker-sweep-no-share "$sweep" --no-share
wide_sweep "$tmp/wide.yaml"
bench thinker-sweep-10080 "$tmp/wide.yaml" "" 30
