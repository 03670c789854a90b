#!/bin/sh
# bench_probe.sh (make bench): cpsim's cost per simulated event against raw
# SimGrid's (tests/bench_probe: a ring of P actors) at P = 8 ... 1,024.
# cpsim's side: the thinker as TP8 x DP(P/8), a 2K-token prefill, every rank
# and every layer simulated (simulation.share_replicas and replay false: the
# engine's own cost per event, not the replay's), --trace none; its events are
# the recorded ops plus the point-to-point messages, its time the seconds
# inside simgrid_run.  The probe's events are its communications.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
PROBE="$top_builddir/tests/bench_probe"
tmp=$(mktemp -d /tmp/cpsim-probe-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
printf '%6s %14s %12s %14s %12s %7s\n' P probe_us/ev probe_ev/s cpsim_us/ev cpsim_ev/s ratio
for P in 8 64 256 1024; do
    probe=$("$PROBE" "$P")
    pus=$(echo "$probe" | sed 's/.*us_per_comm=\([0-9.]*\).*/\1/')
    dp=$((P / 8))
    cat >"$tmp/w.yaml" <<YAML
model: qwen3-omni-30b-a3b-thinker
platform: {name: h100-sxm-8, nodes: $dp}
parallel: {tp: 8, dp: $dp}
simulation: {share_replicas: false, replay: false}
requests: [{prompt_tokens: 2048}]
YAML
    "$CPSIM" run "$tmp/w.yaml" --trace none --out "$tmp/out" >"$tmp/table"
    line=$(grep 'simulated' "$tmp/table")
    pattern='.*simulated \([0-9]*\) events, \([0-9]*\) messages in \([0-9.]*\) s.*'
    ev=$(echo "$line" | sed "s/$pattern/\\1/")
    msgs=$(echo "$line" | sed "s/$pattern/\\2/")
    sim=$(echo "$line" | sed "s/$pattern/\\3/")
    awk -v p="$P" -v pus="$pus" -v e="$ev" -v m="$msgs" -v s="$sim" 'BEGIN {
        cus = 1e6 * s / (e + m)
        printf "%6d %14.3f %12.0f %14.3f %12.0f %7.2f\n", p, pus, 1e6 / pus, cus, 1e6 / cus,
               cus / pus }'
done
