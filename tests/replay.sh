#!/bin/sh
# replay.sh: every bundled workload, with its folded layers replayed (the
# default, sim/engine/replay.c), simulated (simulation.replay=false) and
# unrolled (simulation.fold_layers=false).
#   - folded-simulated and unrolled outputs are the same bytes (but for
#     summary.simulation.iterations_*);
#   - replayed outputs agree with them to rounding: every number within
#     1e-9 relative plus one unit of the last printed digit (a nanosecond in
#     trace.json's microseconds and in the CSVs' seconds), except the
#     trace's per-category sums of printed durations (1e-7 relative);
#   - the replay ran (summary.simulation.iterations_replayed > 0) where the
#     layers meet in a collective of every rank;
#   - every rank simulated (simulation.share_tp=false) gives the default
#     run's bytes (but for summary.simulation.tp_ranks_simulated): shared TP
#     ranks (sim/engine/tpshare.c) change nothing on these workloads.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
NUMDIFF="$top_builddir/tests/numdiff"
tmp=$(mktemp -d /tmp/cpsim-replay-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
strip() { grep -v '"iterations_\(simulated\|replayed\)"' "$1"; }
for wl in "$top_srcdir/workloads/default.yaml" "$top_srcdir"/workloads/examples/*.yaml; do
    name=$(basename "$wl" .yaml)
    # a platform file, not a workload
    [ "$name" = platform-mi300x ] && continue
    "$CPSIM" run "$wl" --quiet --out "$tmp/r" 2>/dev/null || fail "$name: replayed run"
    "$CPSIM" run "$wl" --quiet --set simulation.replay=false --out "$tmp/s" 2>/dev/null ||
        fail "$name: simulated run"
    "$CPSIM" run "$wl" --quiet --set simulation.fold_layers=false --out "$tmp/u" 2>/dev/null ||
        fail "$name: unrolled run"
    "$CPSIM" run "$wl" --quiet --set simulation.share_tp=false --out "$tmp/e" 2>/dev/null ||
        fail "$name: every-rank run"
    for f in "$tmp"/r/*; do
        b=$(basename "$f")
        if [ "$b" = summary.json ]; then
            grep -v '"tp_ranks_simulated"' "$f" >"$tmp/r.txt"
            grep -v '"tp_ranks_simulated"' "$tmp/e/$b" >"$tmp/e.txt"
            cmp -s "$tmp/r.txt" "$tmp/e.txt" || fail "$name: shared TP ranks change $b"
        else
            cmp -s "$f" "$tmp/e/$b" || fail "$name: shared TP ranks change $b"
        fi
    done
    for f in "$tmp"/u/*; do
        b=$(basename "$f")
        if [ "$b" = summary.json ]; then
            strip "$f" >"$tmp/u.txt"
            strip "$tmp/s/$b" >"$tmp/s.txt"
            strip "$tmp/r/$b" >"$tmp/r.txt"
            cmp -s "$tmp/u.txt" "$tmp/s.txt" || fail "$name: folded $b differs from unrolled"
            "$NUMDIFF" "$tmp/u.txt" "$tmp/r.txt" 1e-7 1e-9 || fail "$name: replayed $b"
        else
            cmp -s "$f" "$tmp/s/$b" || fail "$name: folded $b differs from unrolled"
            case $b in
            trace.json) abs=1.001e-3 ;; # microseconds, 3 decimals
            *) abs=1.001e-9 ;;          # seconds, 9 decimals
            esac
            "$NUMDIFF" "$f" "$tmp/r/$b" 1e-9 "$abs" || fail "$name: replayed $b"
        fi
    done
    replayed=$(sed -n 's/.*"iterations_replayed": \([0-9]*\).*/\1/p' "$tmp/r/summary.json")
    simulated=$(sed -n 's/.*"iterations_simulated": \([0-9]*\).*/\1/p' "$tmp/r/summary.json")
    echo "$name: layer iterations replayed $replayed, simulated $simulated"
    case $name in
    default | glm5-dsa-cp | dsa-cp)
        [ "$replayed" -gt 0 ] || fail "$name: nothing replayed"
        ;;
    esac
    rm -rf "$tmp/r" "$tmp/s" "$tmp/u" "$tmp/e"
done

# a serving run of launch-bound steps (eager decodes and short prefills of
# the thinker at TP8, whose kernels are shorter than their launches): its
# first steps replay the copies that waited for the host's issue
# (sim/engine/replay.c), the rest are evaluated in unison
# (sim/engine/unison.c); the outputs agree with the simulated run's
# (simulation.replay=false: every step on SimGrid in full) as the bundled
# ones do.  150 requests of bench_runs.sh's mix (tests/mix_trace.awk)
awk -v n=150 -v span=60 -f "$top_srcdir/tests/mix_trace.awk" >"$tmp/mix.csv"
cat >"$tmp/mix.yaml" <<'YAML'
model: qwen3-omni-30b-a3b-thinker
platform: h100-sxm-8
precision: bf16
parallel: {tp: 8}
engine: {graph: eager}
requests: [{trace: mix.csv}]
YAML
"$CPSIM" run "$tmp/mix.yaml" --quiet --trace none --out "$tmp/r" 2>/dev/null ||
    fail "serving: replayed run"
"$CPSIM" run "$tmp/mix.yaml" --quiet --trace none --set simulation.replay=false \
    --out "$tmp/s" 2>/dev/null || fail "serving: simulated run"
for b in requests.csv steps.csv memory.csv; do
    "$NUMDIFF" "$tmp/s/$b" "$tmp/r/$b" 1e-9 1.001e-9 || fail "serving: replayed $b"
done
strip "$tmp/s/summary.json" >"$tmp/s.txt"
strip "$tmp/r/summary.json" >"$tmp/r.txt"
"$NUMDIFF" "$tmp/s.txt" "$tmp/r.txt" 1e-7 1e-9 || fail "serving: replayed summary.json"
echo "serving, launch-bound: replayed and in unison as simulated"
rm -rf "$tmp/r" "$tmp/s"

# simulation.replay_tolerance_s on the 16-node striped pass-Q ring with
# ring_overlap at 128K, which comes back to its state every three layers
# only to within 3.4e-11 s (sim/README.md; without overlap it settles into an exact
# cycle and replays without a tolerance): layers whose entry states differ
# by up to the tolerance replay, TTFT within 1e-4 of the exact run's; when
# the exact run came close without replaying, its run line names a
# tolerance that replays some (reports/table.c; the wording is checked in
# check_reports)
cat >"$tmp/passq.yaml" <<'YAML'
model: llama-3.1-405b
platform: {name: h200-sxm-8, nodes: 16}
precision: {weights: bf16, mlp_weights: fp8_rowwise}
parallel: {tp: 8, sp: 16, kv_storage: by_position, exchange: ring, ring_overlap: true}
requests: [{prompt_tokens: 131072}]
YAML
ttft() { sed -n 's/^  "ttft_s": \([0-9.e+-]*\),$/\1/p' "$1/summary.json"; }
iters() { sed -n 's/.*"iterations_replayed": \([0-9]*\).*/\1/p' "$1/summary.json"; }
"$CPSIM" run "$tmp/passq.yaml" --trace none --out "$tmp/q0" >"$tmp/q0.out" ||
    fail "pass-Q exact run"
tol=$(sed -n 's/.*simulation.replay_tolerance_s: \([0-9.e+-]*\) replays some.*/\1/p' \
    "$tmp/q0.out")
hinted=""
if [ -n "$tol" ]; then
    "$CPSIM" run "$tmp/passq.yaml" --quiet --trace none \
        --set simulation.replay_tolerance_s="$tol" --out "$tmp/q2" ||
        fail "pass-Q run within the hinted $tol s"
    [ "$(iters "$tmp/q2")" -gt 0 ] || fail "pass-Q within the hinted $tol s: none replayed"
    hinted="; within the hinted $tol s $(iters "$tmp/q2")"
fi
"$CPSIM" run "$tmp/passq.yaml" --quiet --trace none --set simulation.replay_tolerance_s=1e-6 \
    --out "$tmp/q1" || fail "pass-Q run within 1 us"
[ "$(iters "$tmp/q1")" -ge "$(iters "$tmp/q0")" ] ||
    fail "pass-Q within 1 us: $(iters "$tmp/q1") layers replayed, exact $(iters "$tmp/q0")"
a=$(ttft "$tmp/q0") b=$(ttft "$tmp/q1")
awk -v a="$a" -v b="$b" 'BEGIN { d = (b - a) / a; exit !(d < 1e-4 && d > -1e-4) }' ||
    fail "pass-Q within 1 us: TTFT $b against $a"
echo "pass-Q 16 nodes: exact $(iters "$tmp/q0") layers replayed, TTFT $a s;" \
    "within 1 us $(iters "$tmp/q1"), TTFT $b s$hinted"
echo "replay.sh: ok"
