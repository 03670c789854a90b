#!/bin/sh
# bench_probe.sh (make bench): cpsim's cost per simulated event against raw
# SimGrid's (tests/bench_probe: a ring of P actors) at P = 8 ... 1,024.
# cpsim's side: the thinker as TP8 x DP(P/8), a 2K-token prefill, every rank
# and every layer simulated (simulation.share_replicas, share_tp and replay false: the
# engine's own cost per event, not the replay's), --trace none; its events are
# the recorded ops plus the point-to-point messages, its time the seconds
# inside simgrid_run.  The probe's events are its communications.
# Then sequence-parallel rings (the probe's own message pattern: each rank
# sends to its successor and receives from its predecessor every hop): the
# 4-layer thinker (tests/configs/thinker-4l.json) as TP8 x SP(P/8) (TP4 x SP2
# at P = 8), a 16K prefill, pass-KV zigzag with ring_overlap, eager, every
# rank and layer simulated; issue 31's target is a ratio <= 1.3 at 1,024.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
PROBE="$top_builddir/tests/bench_probe"
tmp=$(mktemp -d /tmp/cpsim-probe-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
thinker4=$(cd "$top_srcdir" && pwd)/tests/configs/thinker-4l.json
# cpsim_row P PROBE_US KIND: run $tmp/w.yaml, print its row beside the probe's
cpsim_row() {
    "$CPSIM" run "$tmp/w.yaml" --trace none --out "$tmp/out" >"$tmp/table" 2>"$tmp/err"
    line=$(grep 'simulated' "$tmp/table")
    pattern='.*simulated \([0-9]*\) events, \([0-9]*\) messages in \([0-9.]*\) s.*'
    ev=$(echo "$line" | sed "s/$pattern/\\1/")
    msgs=$(echo "$line" | sed "s/$pattern/\\2/")
    sim=$(echo "$line" | sed "s/$pattern/\\3/")
    awk -v p="$1" -v pus="$2" -v e="$ev" -v m="$msgs" -v s="$sim" -v k="$3" 'BEGIN {
        cus = 1e6 * s / (e + m)
        printf "%-4s %6d %14.3f %12.0f %14.3f %12.0f %7.2f\n", k, p, pus, 1e6 / pus, cus,
               1e6 / cus, cus / pus }'
}
printf '%-4s %6s %14s %12s %14s %12s %7s\n' run P probe_us/ev probe_ev/s cpsim_us/ev \
    cpsim_ev/s ratio
for P in 8 64 256 1024; do
    probe=$("$PROBE" "$P")
    pus=$(echo "$probe" | sed 's/.*us_per_comm=\([0-9.]*\).*/\1/')
    dp=$((P / 8))
    cat >"$tmp/w.yaml" <<YAML
model: qwen3-omni-30b-a3b-thinker
platform: {name: h100-sxm-8, nodes: $dp}
parallel: {tp: 8, dp: $dp}
simulation: {share_replicas: false, share_tp: false, replay: false}
requests: [{prompt_tokens: 2048}]
YAML
    cpsim_row "$P" "$pus" DP
    tp=8 sp=$((P / 8))
    [ "$P" -eq 8 ] && tp=4 sp=2
    cat >"$tmp/w.yaml" <<YAML
model: $thinker4
platform: {name: h100-sxm-8, nodes: $dp}
parallel: {tp: $tp, sp: $sp, kv_storage: by_position, exchange: ring_kv, ring_overlap: true,
           split: zigzag}
engine: {graph: eager}
simulation: {share_replicas: false, share_tp: false, replay: false}
requests: [{prompt_tokens: 16384}]
YAML
    cpsim_row "$P" "$pus" SP
done
echo "  target (issue 31): SP ratio <= 1.30 at P = 1024"
