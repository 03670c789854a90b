#!/bin/sh
# compare.sh: cpsim compare end to end.  The 4-layer thinker (tests/configs/
# thinker-4l.json) prefilling 2K tokens at TP1 on the H200 preset, held
# against the profiler trace of the same step on one H200
# (tests/traces/trace_prefill_2k_eager.json.gz, engine_checks.py): the
# table, compare.csv (every class of a thinker layer, nothing unmatched),
# the picture with gnuplot, --step on a serving run's decode step, and the
# refusals with exit 2.
name=compare
. "${top_srcdir:-.}/tests/testlib.sh"
src=$(cd "$top_srcdir" && pwd)
cat >"$tmp/p.yaml" <<EOF
model: $src/tests/configs/thinker-4l.json
platform: h200-sxm-8
parallel: {tp: 1}
requests: [{prompt_tokens: 2048}]
EOF
"$CPSIM" run "$tmp/p.yaml" --out "$tmp/run" -q 2>/dev/null || fail "run exited $?"
prof="$src/tests/traces/trace_prefill_2k_eager.json.gz"
"$CPSIM" compare "$tmp/run" "$prof" --out "$tmp/cmp" >"$tmp/out" 2>"$tmp/err" ||
    fail "compare exited $?: $(cat "$tmp/err")"
grep -q '4 layers marked' "$tmp/out" || fail "no layer marks found: $(head -2 "$tmp/out")"
grep -q 'unmatched: 0 kernels' "$tmp/out" || fail "kernels unmatched: $(grep unmatched "$tmp/out")"
csv="$tmp/cmp/compare.csv"
[ "$(head -1 "$csv")" = "scope,class,count_measured,count_cpsim,measured_us,cpsim_us,error_pct" ] ||
    fail "compare.csv header: $(head -1 "$csv")"
for c in gemm moe_gemm attention norm routing elementwise; do
    grep -q "^step,$c,[1-9]" "$csv" || fail "compare.csv: no step row of $c"
    grep -q "^layer,$c," "$csv" || fail "compare.csv: no layer row of $c"
done
# the step rows' measured time adds up to the busy time or more (kernels overlap nothing here)
awk -F, '$1 == "step" && $3 != "" { s += $5 } $2 == "busy" { b = $5 }
    END { exit !(s >= b - 0.01 && s <= b * 1.0001 + 0.01) }' "$csv" ||
    fail "class sums do not make the busy time"
# the GEMM error is the one the table prints
e=$(awk -F, '$1 == "step" && $2 == "gemm" { print $7 }' "$csv")
grep -E "^  gemm .*[+-]$(printf '%.1f' "${e#-}" | sed 's/\./\\./')%" "$tmp/out" >/dev/null ||
    fail "table and csv disagree on gemm ($e)"
if command -v gnuplot >/dev/null 2>&1; then
    "$CPSIM" compare "$tmp/run" "$prof" --out "$tmp/cmp" --plots -q || fail "--plots exited $?"
    [ -s "$tmp/cmp/plots/compare.png" ] && [ -s "$tmp/cmp/plots/index.html" ] ||
        fail "--plots drew no compare.png"
fi
# --emit-profile: the base profile with the trace's GEMM and attention rows; priced from it,
# the same run reproduces the trace's GEMM and attention times
"$CPSIM" compare "$tmp/run" "$prof" --out "$tmp/cmp" --emit-profile "$tmp/prof" >"$tmp/out" \
    2>"$tmp/err" || fail "--emit-profile exited $?: $(cat "$tmp/err")"
grep -q '^emitted .* 3 GEMM rows .* 1 attention rows' "$tmp/out" ||
    fail "emit line: $(grep emitted "$tmp/out")"
[ -s "$tmp/prof/machine.json" ] && [ -s "$tmp/prof/moe.csv" ] || fail "base files not copied"
grep -q '^thinker-4l,qkv_proj,2048,2048,5120,bf16,4,.*,trace trace_prefill_2k_eager.json.gz$' \
    "$tmp/prof/gemm_graph.csv" || fail "no qkv_proj row from the trace"
grep -q ',h200$' "$tmp/prof/gemm_graph.csv" || fail "base rows do not name their source"
[ "$(grep -c '^causal_square,flash_native_gqa,2048,2048,1,32,4,128,' "$tmp/prof/attention.csv")" \
    -eq 1 ] || fail "the base attention row of the trace's shape is not replaced"
"$CPSIM" run "$tmp/p.yaml" --set platform.device.calibration="$tmp/prof" --out "$tmp/run2" -q \
    2>/dev/null || fail "run on the emitted profile exited $?"
"$CPSIM" compare "$tmp/run2" "$prof" --out "$tmp/cmp2" -q || fail "compare 2 exited $?"
for c in gemm:1 attention:2; do
    awk -F, -v c="${c%:*}" -v lim="${c#*:}" '$1 == "step" && $2 == c {
        e = $7 < 0 ? -$7 : $7; found = 1; exit !(e <= lim) } END { if (!found) exit 1 }' \
        "$tmp/cmp2/compare.csv" || fail "${c%:*} after --emit-profile: $(grep "^step,${c%:*}," \
        "$tmp/cmp2/compare.csv")"
done
"$CPSIM" validate "$tmp/p.yaml" --set platform.device.calibration="$tmp/prof" --accuracy \
    2>/dev/null | grep -q 'thinker-4l qkv_proj M=2048 K=2048 N=5120' ||
    fail "validate --accuracy does not report the emitted rows"
# a serving run's decode step against the decode trace replayed from a graph
cat >"$tmp/d.yaml" <<EOF
model: $src/tests/configs/thinker-4l.json
platform: h200-sxm-8
parallel: {tp: 1}
engine: {graph: captured}
requests: [{count: 8, every_s: 0, prompt_tokens: 1024, decode_tokens: 2}]
EOF
"$CPSIM" run "$tmp/d.yaml" --out "$tmp/dec" -q 2>/dev/null || fail "decode run exited $?"
"$CPSIM" compare "$tmp/dec" "$src/tests/traces/trace_decode_b8_graph.json.gz" --step 1 \
    >"$tmp/out" 2>"$tmp/err" || fail "decode compare exited $?: $(cat "$tmp/err")"
grep -q 'rank 0: 80 ops, 4 layers' "$tmp/out" ||
    fail "step 1 is not one decode step: $(head -1 "$tmp/out")"
# refusals
expect2() { # expect2 WHAT PATTERN ARGS...: exit 2 and PATTERN on stderr
    what=$1 pat=$2
    shift 2
    "$CPSIM" compare "$@" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "$what: exit $rc"
    grep -q -- "$pat" "$tmp/err" || fail "$what: $(cat "$tmp/err")"
}
expect2 "one argument" "needs a run folder and a profile" "$tmp/run"
expect2 "missing profile" "cannot open" "$tmp/run" "$tmp/none.json"
expect2 "no such rank" "no rank 3" "$tmp/run" "$prof" --rank 3
expect2 "no such step" "no op of rank 0 in step 4" "$tmp/run" "$prof" --step 4
"$CPSIM" run "$tmp/p.yaml" --out "$tmp/steps" --trace steps -q 2>/dev/null
expect2 "steps trace" "--trace full" "$tmp/steps" "$prof"
"$CPSIM" run "$tmp/p.yaml" --platform ascend-910b-8 --out "$tmp/asc" -q 2>/dev/null
expect2 "emit from an analytic platform" "names no calibration profile" "$tmp/asc" "$prof" \
    --out "$tmp/asc-cmp" --emit-profile "$tmp/asc-prof"
[ -e "$tmp/asc-cmp" ] || [ -e "$tmp/asc-prof" ] && fail "a refused --emit-profile wrote files"
cp -r "$tmp/prof" "$tmp/own"
"$CPSIM" run "$tmp/p.yaml" --set platform.device.calibration="$tmp/own" --out "$tmp/run3" -q \
    2>/dev/null
expect2 "emit over the run's own profile" "the run's own profile" "$tmp/run3" "$prof" \
    --emit-profile "$tmp/own"
printf '{"traceEvents": [\n {"ph": "X",, }]}\n' >"$tmp/bad.json"
expect2 "malformed profile" "bad.json:2:" "$tmp/run" "$tmp/bad.json"
[ $fails -eq 0 ] && echo "compare.sh: ok"
exit $((fails > 0))
