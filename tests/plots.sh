#!/bin/sh
# plots.sh: every picture of `cpsim plot` (reports/plot.h) with the binary,
# its data checked against the run's summary or the sweep's tables:
#   - the README's demo sweep (one prompt length): the bar chart of TTFT and
#     peak memory, the TP x SP heat map's winner and margin, the Pareto front;
#   - a sweep with a point out of memory: hatched bar and cell, OOM marks;
#   - a sweep over prompt lengths, shapes, exchanges and min_tokens: TTFT and
#     overlap, the heat maps, the split/copied crossover against split.csv;
#   - two sweeps of other exchange sets: each exchange in the same colour and
#     marker in both; lines that coincide dashed and named together; points
#     out of memory named with their strategy;
#   - 23 strategies (result lines made from the demo's): each its own colour
#     and marker pair, a legend that holds them all;
#   - a run with decode steps and one with overlap (ring): the per-rank
#     breakdown sums to the makespan and agrees with the summary (from
#     trace.json and trace.json.gz alike); the timeline's --step, --window,
#     --ranks and --layers windows, each in files of its own beside the whole
#     run's, their refusals; a run out of memory: the
#     OOM point on the memory picture;
#   - runs with --trace none and --trace steps (and a serving run without a
#     trace): what their outputs draw, the one line naming what is not drawn
#     and --trace full; a failed plot leaves the plots folder as it was;
#   - a serving run (the long/short mix, 5 simulated seconds): the TTFT and
#     TPOT CDFs per class against summary.json's serving figures, the batch
#     picture against steps.csv, the timeline of what the trace holds (--step
#     within its first steps, the refusals past them), the breakdown left out
#     with a note; a mix cut before its first tokens: the requests left out
#     counted in the key; a run that is not serving draws none of these;
#   - every index.html: links that resolve, captions naming the workload and
#     platform, PNG and SVG of every picture.
name=plots
. "${top_srcdir:-.}/tests/testlib.sh"
. "$top_srcdir/tests/plot_checks.sh"
MODEL=qwen3-omni-30b-a3b-thinker
PLAT=h100-sxm-8
MIX="$top_srcdir/workloads/examples/long-short-mix.yaml"

# csv FILE COLUMN WHERE: the column named COLUMN of the rows of a CSV file
# (no quoted commas) for which the awk condition WHERE holds over columns
# named c["name"]
csv() {
    awk -F, -v want="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                          '"$3"' { print $c[want] }' "$1"
}

cat >"$tmp/base.yaml" <<'YAML'
model: qwen3-omni-30b-a3b-thinker
platform: h100-sxm-8
parallel: {tp: 8, sp: 1, kv_storage: by_position, exchange: none, min_tokens: 0}
engine: {graph: eager}
requests:
  - prompt_tokens: 1024
YAML

# ---- the demo sweep: one prompt length ---------------------------------------------
D="$tmp/demo"
"$CPSIM" sweep "$top_srcdir/workloads/sweeps/thinker-cp-demo.yaml" -j 2 --quiet --plots \
    --out "$D" || fail "the demo sweep exited $?"
P="$D/plots"
check_pic "$P" bars 1200 750
check_pic "$P" heatmap-65536 1200 750
[ ! -e "$P/ttft.png" ] || fail "a one-length sweep draws bars, not TTFT against length"
check_index "$P" "sweep thinker-cp-demo:" $MODEL $PLAT
# a bar per point: its TTFT and peak memory those of results.csv
n=0
for i in $(csv "$D/results.csv" index 'NR > 1'); do
    want=$(csv "$D/results.csv" ttft_s "\$c[\"index\"] == $i")
    peak=$(csv "$D/results.csv" peak_bytes_max "\$c[\"index\"] == $i")
    got=$(awk -v i="$i" '!/^#/ && $6 == i { print $2 }' "$P/bars.dat")
    gpk=$(awk -v i="$i" '!/^#/ && $6 == i { printf "%.0f\n", $3 * 1e9 }' "$P/bars.dat")
    near "$want" "$got" || fail "bars.dat: point $i TTFT $got, results.csv $want"
    awk -v a="$peak" -v b="$gpk" 'BEGIN { exit !(a - b < 1e3 && b - a < 1e3) }' ||
        fail "bars.dat: point $i peak $gpk, results.csv $peak"
    n=$((n + 1))
done
[ "$n" -eq 4 ] && [ "$(grep -vc '^#' "$P/bars.dat")" -eq 4 ] || fail "bars.dat: not 4 bars"
# bars of one shape side by side, the groups a bar apart
xs=$(awk '!/^#/ { printf "%s ", $1 }' "$P/bars.dat")
[ "$xs" = "0.0 2.0 3.0 4.0 " ] || fail "bars.dat: x positions $xs"
# the heat map's TP4 x SP2 cell: best.csv's winner, its margin over the
# other exchange from results.csv
best=$(csv "$D/best.csv" ttft_s 'NR > 1')
cell=$(awk '!/^#/ && $4 == 4 && $5 == 2' "$P/heatmap-65536.dat")
set -- $cell
near "$best" "$3" || fail "heat map cell TTFT $3, best.csv $best"
win=$(csv "$D/best.csv" strategy 'NR > 1' | sed 's/.*exchange=//')
[ "$6" = "$win" ] || fail "heat map winner $6, best.csv $win"
next=$(csv "$D/results.csv" ttft_s "\$c[\"parallel.exchange\"] == \"$9\"")
near "$next" "$7" || fail "heat map runner-up $9: $7, results.csv $next"
awk -v m="$8" -v a="$3" -v b="$7" \
    'BEGIN { d = m - 100 * (b / a - 1); exit !(d < 1e-4 && d > -1e-4) }' ||
    fail "heat map margin $8 %"
grep -q "next: $9 +" "$P/plots.gp" || fail "the heat map cell does not name its runner-up"
grep -q 'not in the sweep' "$P/heatmap-65536.dat" || fail "cells left out are not marked"
# the Pareto front: points that fit that no other point beats in both TTFT
# and peak memory, from the least memory to the fastest (best.csv's)
awk '/^# Pareto front/ { on = 1; next } on && NF' "$P/pareto-65536.dat" >"$tmp/front"
awk '/^# Pareto front/ { exit } !/^#/ && NF && $3 == 0' "$P/pareto-65536.dat" >"$tmp/fits"
nf=$(wc -l <"$tmp/front")
[ "$nf" -ge 1 ] || fail "pareto-65536.dat: no front"
check_pic "$P" pareto-65536 1200 $((750 + 14 * (nf + 1)))
awk 'NR == FNR { m[NR] = $1; t[NR] = $2; n = NR; next }
     { for (i = 1; i <= n; i++) if (m[i] <= $1 && t[i] <= $2 && (m[i] < $1 || t[i] < $2)) bad++ }
     END { exit bad > 0 }' "$tmp/fits" "$tmp/front" || fail "a front point is dominated"
awk 'NR == FNR { m[NR] = $1; t[NR] = $2; n = NR; next }
     { dom = 0; for (i = 1; i <= n; i++) if (m[i] <= $1 && t[i] <= $2) dom = 1
       if (!dom) bad++ }
     END { exit bad > 0 }' "$tmp/front" "$tmp/fits" || fail "a point that fits is off the front"
near "$best" "$(tail -1 "$tmp/front" | awk '{ print $2 }')" ||
    fail "the front ends elsewhere than at best.csv's $best s"

# ---- out of memory in a sweep: hatched bars and cells, crossed points ----------------
cat >"$tmp/oom.yaml" <<'YAML'
name: oom
base: base.yaml
set: {requests.0.prompt_tokens: 524288}
grid:
  parallel.tp: [8, 1]
  parallel.sp: [1, 8]
where:
  - parallel.tp * parallel.sp == 8
YAML
"$CPSIM" sweep "$tmp/oom.yaml" -j 2 --quiet --plots --out "$tmp/oomsweep" ||
    fail "the OOM sweep exited $?"
P="$tmp/oomsweep/plots"
check_pic "$P" bars 1200 750
check_pic "$P" heatmap-524288 1200 750
oom=$(csv "$tmp/oomsweep/results.csv" oom '$c["parallel.sp"] == 8')
[ "$oom" = true ] || fail "tp=1 sp=8 at 512K tokens should run out of memory (oom $oom)"
i=$(csv "$tmp/oomsweep/results.csv" index '$c["parallel.sp"] == 8')
[ "$(awk -v i="$i" '!/^#/ && $6 == i { print $4 }' "$P/bars.dat")" = 1 ] ||
    fail "bars.dat: point $i is not marked out of memory"
cell=$(awk '/^# out of memory/ { on = 1; next } /^#/ { on = 0 } on && $4 == 1 && $5 == 8' \
    "$P/heatmap-524288.dat")
[ -n "$cell" ] || fail "heatmap-524288.dat: TP1 x SP8 is not an out-of-memory cell"
sed -n '/^# ---- heatmap-524288$/,/^unset output$/p' "$P/plots.gp" >"$tmp/hm.gp"
grep -q 'fs transparent pattern 4' "$tmp/hm.gp" || fail "the OOM cell is not hatched"
grep -q 'OUT OF MEMORY' "$tmp/hm.gp" || fail "the OOM cell does not say so"
sed -n '/^# ---- bars$/,/^unset output$/p' "$P/plots.gp" >"$tmp/bars.gp"
grep -q 'pattern 4 lc rgb "#cc0000" notitle' "$tmp/bars.gp" || fail "OOM bars are not hatched"
grep -q 'out of memory (hatched)' "$tmp/bars.gp" || fail "the bars' legend lacks the OOM mark"
grep -q 'title "out of memory"' "$P/plots.gp" || fail "the Pareto plot lacks OOM marks"
grep -q 'set label [0-9]* "tp=1 sp=8: out of memory" at ' "$P/plots.gp" ||
    fail "the Pareto plot does not name the strategy out of memory"

# ---- a sweep over prompt lengths: lines, heat maps, crossover --------------------------
cat >"$tmp/len.yaml" <<'YAML'
name: lengths
base: base.yaml
grid:
  parallel.tp: [8, 4]
  parallel.sp: [1, 2]
  parallel.exchange: [none, ring]
  parallel.min_tokens: [0, 1048576]
  requests.0.prompt_tokens: [1024, 4096, 16384]
where:
  - parallel.tp * parallel.sp == 8
  - parallel.sp == 2 || parallel.exchange == none
YAML
S="$tmp/len"
"$CPSIM" sweep "$tmp/len.yaml" -j 2 --quiet --plots --out "$S" || fail "the length sweep exited $?"
P="$S/plots"
for f in ttft overlap heatmap-1024 heatmap-4096 heatmap-16384 crossover; do
    check_pic "$P" $f 1200 750
done
check_pic "$P" heatmap 1200 750
check_index "$P" "sweep lengths:" $MODEL $PLAT
# each strategy its own colour and marker on the TTFT picture
pairs=$(sed -n '/^# ---- ttft$/,/^unset output$/p' "$P/plots.gp" |
    grep -o 'lc rgb "#[0-9a-f]*" pt [0-9]*' | sort)
[ "$(echo "$pairs" | wc -l)" -eq 3 ] || fail "ttft: $(echo "$pairs" | wc -l) styles, 3 strategies"
[ "$(echo "$pairs" | uniq -d | wc -l)" -eq 0 ] || fail "ttft: strategies share a style"
# the crossover: split and copied TTFT are the best of results.csv, the
# mark is split.csv's suggested min_tokens
block=$(awk '/^# ring, tp=4 sp=2:/ { on = 1; print; next } /^#/ { on = 0 } on && NF' \
    "$P/crossover.dat")
[ -n "$block" ] || fail "crossover.dat lacks ring at tp=4 sp=2"
sugg=$(csv "$S/split.csv" suggested_min_tokens '$c["exchange"] == "ring"')
echo "$block" | head -1 | grep -q "(suggested min_tokens $sugg)" ||
    fail "crossover.dat: $(echo "$block" | head -1), split.csv suggests $sugg"
grep -q "set arrow 1 from $sugg, graph 0" "$P/plots.gp" || fail "the crossing is not marked"
for L in 1024 4096 16384; do
    row=$(echo "$block" | awk -v L=$L '$1 == L')
    [ -n "$row" ] || { fail "crossover.dat: no row at $L"; continue; }
    set -- $row
    ring="\$c[\"parallel.exchange\"] == \"ring\" && \$c[\"prompt_tokens\"] == $L"
    sp=$(csv "$S/results.csv" ttft_s "$ring && \$c[\"parallel.min_tokens\"] == 0")
    cp=$(csv "$S/results.csv" ttft_s "$ring && \$c[\"parallel.min_tokens\"] == 1048576")
    near "$sp" "$2" || fail "crossover at $L: split $2, results.csv $sp"
    near "$cp" "$3" || fail "crossover at $L: copied $3, results.csv $cp"
done
# the shape x length map: the winner of each length is best.csv's (colour 1)
for L in 1024 4096 16384; do
    best=$(csv "$S/best.csv" ttft_s "\$c[\"prompt_tokens\"] == $L")
    x=$(awk -v L=$L 'BEGIN { print (L == 1024 ? 0 : L == 4096 ? 1 : 2) }')
    got=$(awk -v x=$x '!/^#/ && NF && $1 == x && $10 == 1 { print $3 }' "$P/heatmap.dat")
    near "$best" "$got" || fail "heatmap.dat: the winner at $L is $got s, best.csv $best"
done

# ---- an exchange's style in every sweep; lines that coincide; OOM names ---------------
# two sweeps of other exchange sets: each exchange the same colour and marker
# in both (the fixed table), whatever the others; at SP 1 the exchanges do
# not run, their lines coincide: dashed and named together at their end
for set in "none, ring, ring_kv" "ring, ring_kv"; do
    k=$(echo "$set" | tr -d ', ')
    cat >"$tmp/x-$k.yaml" <<YAML
name: x-$k
base: base.yaml
grid:
  parallel.exchange: [$set]
  requests.0.prompt_tokens: [1024, 2048]
YAML
    "$CPSIM" sweep "$tmp/x-$k.yaml" -j 2 --quiet --plots --out "$tmp/x-$k" ||
        fail "the sweep of $set exited $?"
    for f in ttft pareto-1024; do
        sed -n "/^# ---- $f\$/,/^unset output\$/p" "$tmp/x-$k/plots/plots.gp" |
            grep -o 'rgb "#[0-9a-f]*" pt [0-9]* ps [0-9.]* title "exchange=[a-z_]*"' |
            sed 's/ ps [0-9.]* title / /' >"$tmp/x-$k.$f"
        [ "$(wc -l <"$tmp/x-$k.$f")" -eq "$(echo "$set" | tr ',' '\n' | wc -l)" ] ||
            fail "$f of $set: styles $(cat "$tmp/x-$k.$f")"
    done
done
for f in ttft pareto-1024; do
    for x in ring ring_kv; do
        a=$(grep "\"exchange=$x\"" "$tmp/x-noneringring_kv.$f")
        b=$(grep "\"exchange=$x\"" "$tmp/x-ringring_kv.$f")
        [ -n "$a" ] && [ "$a" = "$b" ] || fail "$f: $x drawn as $a in one sweep, $b in another"
    done
done
gp=$(sed -n '/^# ---- ttft$/,/^unset output$/p' "$tmp/x-noneringring_kv/plots/plots.gp")
echo "$gp" | grep -q 'set label [0-9]* "one line, exchange: none = ring = ring_kv" at 2048,' ||
    fail "ttft: the coinciding lines are not named together at their end"
[ "$(echo "$gp" | grep -c 'with linespoints lw 1.5 dt 2 ')" -eq 2 ] ||
    fail "ttft: not the 2 lines on another's dashed"
echo "$gp" | grep -q 'index 0 using 1:2 with linespoints lw 1.5 lc' ||
    fail "ttft: the first of the coinciding lines is not solid"
# the OOM sweep over two lengths and exchanges: each strategy out of memory
# named on the TTFT and Pareto pictures
more='\n  parallel.exchange: [none, ring]\n  requests.0.prompt_tokens: [262144, 524288]'
{
    sed -e 's/^name: oom$/name: oomx/' -e '/^set:/d' -e "s/^  parallel.sp: .*/&$more/" \
        "$tmp/oom.yaml"
    echo '  - parallel.sp == 8 || parallel.exchange == none'
} >"$tmp/oomx.yaml"
"$CPSIM" sweep "$tmp/oomx.yaml" -j 2 --quiet --plots --out "$tmp/oomx" ||
    fail "the OOM sweep over lengths exited $?"
for f in ttft pareto-524288; do
    gp=$(sed -n "/^# ---- $f\$/,/^unset output\$/p" "$tmp/oomx/plots/plots.gp")
    for i in $(csv "$tmp/oomx/results.csv" index '$c["oom"] == "true"'); do
        st="tp=$(csv "$tmp/oomx/results.csv" parallel.tp "\$c[\"index\"] == $i")"
        st="$st sp=$(csv "$tmp/oomx/results.csv" parallel.sp "\$c[\"index\"] == $i")"
        st="$st exchange=$(csv "$tmp/oomx/results.csv" parallel.exchange "\$c[\"index\"] == $i")"
        echo "$gp" | grep -q "set label [0-9]* \"$st: out of memory\" at .*tc rgb \"#cc0000\"" ||
            fail "$f: point $i out of memory, its strategy $st not named"
    done
done

# ---- 20 strategies: a style of their own each, a legend that holds them -------------
M="$tmp/many"
mkdir -p "$M"
line=$(head -1 "$D/results.jsonl")
# point_line K PARAMS: the demo's first line as point K with these parameters
point_line() {
    echo "$line" | sed "s/\"index\":0,\"id\":\"[0-9a-f]*\"/\"index\":$1,\"id\":\"$1\"/;
        s/\"params\":{[^}]*}/\"params\":$2/"
}
for k in $(seq 0 19); do
    point_line $k "{\"parallel.exchange\":\"e$((k % 4))\",\"engine.variant\":$((k / 4))}"
done >"$M/results.jsonl"
for k in 20 21 22; do   # and 3 more with one exchange only: a colour and marker each
    point_line $k "{\"engine.variant\":$k}"
done >>"$M/results.jsonl"
"$CPSIM" plot "$M" >/dev/null || fail "plot of 23 strategies exited $?"
gp=$(sed -n '/^# ---- pareto-65536$/,/^unset output$/p' "$M/plots/plots.gp")
pairs=$(echo "$gp" | grep -o 'lc rgb "#[0-9a-f]*" pt [0-9]*' | sort)
[ "$(echo "$pairs" | wc -l)" -eq 23 ] || fail "pareto: $(echo "$pairs" | wc -l) of 23 styles"
[ "$(echo "$pairs" | uniq -d | wc -l)" -eq 0 ] || fail "pareto: strategies share a style"
rows=$(echo "$gp" | grep -o 'maxrows [0-9]*' | head -1 | cut -d' ' -f2)
[ "${rows:-0}" -ge 26 ] || fail "pareto: a legend of ${rows:-no} rows for 26 entries"
# colours by exchange, markers by the rest: e1 keeps one colour
e1=$(echo "$gp" | grep -F 'title "exchange=e1' | grep -o 'lc rgb "#[0-9a-f]*"' | sort -u |
    wc -l)
[ "$e1" -eq 1 ] || fail "pareto: exchange e1 in $e1 colours"

# ---- a run with decode steps -------------------------------------------------------
R="$tmp/run"
# half a node and two decode steps keep the trace small
RUN_SETS="--set parallel.tp=4 --set platform.devices_per_node=4 --set requests.0.decode_tokens=2"
"$CPSIM" run "$tmp/base.yaml" $RUN_SETS --quiet --plots --out "$R" || fail "run exited $?"
check_pic "$R/plots" breakdown 1200 750
check_pic "$R/plots" timeline 1600 900
check_pic "$R/plots" memory 1200 750
check_index "$R/plots" $MODEL $PLAT "base.yaml"
# check_breakdown RUNDIR RANKS...: breakdown.dat against the summary: a row
# sums to the makespan; overlapped, exposed and compute alone are the
# summary's overlap_s, comm_s - overlap_s, compute_s - overlap_s (ms)
check_breakdown() {
    sj="$1/summary.json"
    bd="$1/plots/breakdown.dat"
    shift
    span=$(grep -m1 '"makespan_s"' "$sj" | sed 's/.*: \([0-9.e+-]*\).*/\1/')
    hdr=$(grep '^# rank' "$bd")
    cols='GEMM attention MoE_GEMM MoE_routing memory-bound overlapped_comm exposed_comm idle'
    echo "$hdr" | grep -q "$cols" || fail "$bd columns: $hdr"
    for r in "$@"; do
        # the rank's object in summary.json: its fields, one a line
        fields=$(awk -v r=$r '/"rank": / { on = ($2 == r ",") } on' "$sj")
        get() { echo "$fields" | grep -m1 "\"$1\":" | sed 's/.*: \([0-9.e+-]*\).*/\1/'; }
        row=$(awk -v r=$r '!/^#/ && $1 == r' "$bd")
        echo "$hdr
$row" | awk -v span="$span" -v cs="$(get compute_s)" -v ms="$(get comm_s)" \
            -v os="$(get overlap_s)" '
            NR == 1 { for (i = 3; i <= NF; i++) col[$i] = i - 1; next }
            { tot = 0; for (i = 2; i <= NF; i++) tot += $i
              alone = tot - $col["overlapped_comm"] - $col["exposed_comm"] - $col["idle"]
              e = 1e-6 * span * 1e3
              if ((tot - span * 1e3) ^ 2 > e ^ 2) { print "sum " tot " ms"; bad = 1 }
              if (($col["overlapped_comm"] - os * 1e3) ^ 2 > e ^ 2) { print "overlap"; bad = 1 }
              if (($col["exposed_comm"] - (ms - os) * 1e3) ^ 2 > e ^ 2) { print "exposed"; bad = 1 }
              if ((alone - (cs - os) * 1e3) ^ 2 > e ^ 2) { print "compute " alone; bad = 1 } }
            END { exit bad }' >"$tmp/bd.out" || fail "$bd rank $r: $(cat "$tmp/bd.out")"
    done
}
check_breakdown "$R" 0 1 3
# no communication runs under compute here: each class of rank 0 is the sum
# of its ops' durations on rank 0's compute stream (tid 1) in trace.json, to
# the trace's rounding to the nanosecond (a relative 1e-5)
awk 'FNR == 1 && NR > 1 { f = 2 }
     f != 2 && /"ph":"X"/ && /"tid":1,/ {
         d = $0; sub(/.*"dur":/, "", d); sub(/,.*/, "", d)
         c = $0; sub(/.*"cat":"/, "", c); sub(/".*/, "", c)
         k = "memory-bound"
         if (c ~ /^(gemm|grouped_gemm)$/) k = "GEMM"
         if (c ~ /^(attention|sparse_attention|lse_merge)$/) k = "attention"
         if (c == "indexer" || c == "moe_gemm") k = c == "indexer" ? "indexer" : "MoE_GEMM"
         if (c ~ /^(topk|moe_permute|moe_unpermute)$/) k = "MoE_routing"
         if (c ~ /^(step|all_reduce|all_gather|reduce_scatter|all_to_all|broadcast|hop)$/) k = ""
         if (k != "") sum[k] += d / 1e3
         next }
     f == 2 && /^# rank/ { for (i = 3; i <= NF; i++) col[i - 1] = $i; next }
     f == 2 && !/^#/ && $1 == 0 {
         for (i = 2; i <= NF; i++) if (col[i] in sum) {
             e = sum[col[i]] - $i; if (e < 0) e = -e
             if (e > 1e-5 * sum[col[i]] + 1e-6) {
                 printf "%s %.9f, trace %.9f\n", col[i], $i, sum[col[i]]; bad = 1 }
             n++ }
         if (n < 4) { print "only " n " classes"; bad = 1 } }
     END { exit bad }' "$R/trace.json" "$R/plots/breakdown.dat" >"$tmp/cls.out" ||
    fail "breakdown.dat's classes against trace.json: $(cat "$tmp/cls.out")"
# a ring exchange overlaps hops with attention: the hatched part is there
"$CPSIM" run "$top_srcdir/workloads/examples/sp-ring.yaml" --quiet --plots --out "$tmp/ring" \
    --set 'requests=[{prompt_tokens: 16384}]' --set parallel.min_tokens=0 ||
    fail "ring run exited $?"
check_breakdown "$tmp/ring" 0 4 7
awk '!/^#/ && $1 == 0 { exit !($7 > 1) }' "$tmp/ring/plots/breakdown.dat" ||
    fail "ring: no overlapped communication in breakdown.dat"
check_index "$tmp/ring/plots" $MODEL $PLAT sp-ring.yaml "TP4 SP2"
# the same from trace.json.gz
"$CPSIM" run "$tmp/base.yaml" $RUN_SETS --quiet --trace-gz --out "$tmp/rungz" ||
    fail "run --trace-gz exited $?"
"$CPSIM" plot "$tmp/rungz" >/dev/null || fail "plot of a run with trace.json.gz exited $?"
cmp -s "$R/plots/breakdown.dat" "$tmp/rungz/plots/breakdown.dat" ||
    fail "breakdown.dat differs between trace.json and trace.json.gz"
# the timeline's windows: step 2 (the second decode step) lies after the
# prefill (TTFT); --ranks keeps their rows; --window cuts; --layers alone
# takes the first step
ttft=$(grep -m1 '"ttft_s"' "$R/summary.json" | sed 's/.*: \([0-9.e+-]*\).*/\1/')
tl() { awk -v f="$1" '!/^#/ && NF { if (lo == "" || $1 < lo) lo = $1; if ($2 > hi) hi = $2
                                      if ($3 > row) row = $3 }
                      END { print (f == "lo" ? lo : f == "hi" ? hi : row) }' \
           "$R/plots/${2:-timeline}.dat"; }
"$CPSIM" plot "$R" --step 2 >/dev/null || fail "plot --step 2 exited $?"
awk -v lo="$(tl lo timeline-step2)" -v t="$ttft" 'BEGIN { exit !(lo > t * 1e3) }' ||
    fail "--step 2 starts at $(tl lo timeline-step2) ms, before the TTFT $ttft s"
grep -q 'set title "timeline, step 2\\n' "$R/plots/plots.gp" || fail "--step 2: no title"
"$CPSIM" plot "$R" --ranks 0,2-3 >/dev/null || fail "plot --ranks exited $?"
[ "$(tl row timeline-ranks0_2-3)" -eq 5 ] ||
    fail "--ranks 0,2-3: rows up to $(tl row timeline-ranks0_2-3), expected 6 rows"
grep -q '"r2 compute" 2' "$R/plots/plots.gp" || fail "--ranks 0,2-3: rank 2 not third"
"$CPSIM" plot "$R" --window 1.5:2.5 >/dev/null || fail "plot --window exited $?"
[ "$(tl lo timeline-ms1.5-2.5)" = 1.500000 ] && [ "$(tl hi timeline-ms1.5-2.5)" = 2.500000 ] ||
    fail "--window 1.5:2.5 spans $(tl lo timeline-ms1.5-2.5)-$(tl hi timeline-ms1.5-2.5) ms"
"$CPSIM" plot "$R" --layers 1-1 >/dev/null || fail "plot --layers exited $?"
awk -v hi="$(tl hi timeline-layers1-1)" -v t="$ttft" 'BEGIN { exit !(hi < t * 1e3 / 4) }' ||
    fail "--layers 1-1 should stay in the prefill step, ends at $(tl hi timeline-layers1-1) ms"
# a window has files of its own: the whole run's timeline stays beside it
check_pic "$R/plots" timeline-layers1-1 1600 900
check_pic "$R/plots" timeline 1600 900
span=$(grep -m1 '"makespan_s"' "$R/summary.json" | sed 's/.*: \([0-9.e+-]*\).*/\1/')
awk -v hi="$(tl hi)" -v s="$span" 'BEGIN { d = hi - s * 1e3; exit !(d < 1e-3 && d > -1e-3) }' ||
    fail "--layers 1-1 replaced the whole run's timeline: it ends at $(tl hi) ms, not $span s"
"$CPSIM" plot "$R" --layers 1-1 --step 1 --ranks 1 >/dev/null || fail "combined options exited $?"
W=timeline-step1-layers1-1-ranks1
awk -v lo="$(tl lo $W)" -v t="$ttft" 'BEGIN { exit !(lo > t * 1e3) }' ||
    fail "--layers 1-1 --step 1 starts at $(tl lo $W) ms"
[ "$(tl row $W)" -eq 1 ] || fail "--ranks 1: rows up to $(tl row $W), expected 2 rows"
expect_refusal "--step 9: the trace has no op in this step" "$CPSIM" plot "$R" --step 9
expect_refusal "--ranks 4: the run has 4 ranks (0-3)" "$CPSIM" plot "$R" --ranks 4
expect_refusal "--ranks 2-1: expected a list" "$CPSIM" plot "$R" --ranks 2-1
expect_refusal "--window 5:1: expected T0:T1" "$CPSIM" plot "$R" --window 5:1
expect_refusal "--window 9000:9001: no op" "$CPSIM" plot "$R" --window 9000:9001
expect_refusal "--step: $D is a sweep folder" "$CPSIM" plot "$D" --step 0
expect_refusal "--ranks: $D is a sweep folder" "$CPSIM" plot "$D" --ranks 0

# ---- runs without the ops of a trace: what their outputs draw -------------------------
# --trace none and --trace steps: the breakdown from summary.json (compute
# alone as one bar, not split by class) and the memory from memory.csv; no
# timeline, said in one line that names --trace full and in index.html
for lvl in none steps; do
    N="$tmp/trace-$lvl"
    "$CPSIM" run "$tmp/base.yaml" $RUN_SETS --trace $lvl --out "$N" >"$tmp/n.out" 2>&1 ||
        fail "run --trace $lvl exited $?: $(cat "$tmp/n.out")"
    [ $lvl = none ] || "$CPSIM" plot "$N" >"$tmp/n.out" 2>&1 ||
        fail "plot after --trace $lvl exited $?: $(cat "$tmp/n.out")"
    [ $lvl = steps ] || "$CPSIM" run "$tmp/base.yaml" $RUN_SETS --trace $lvl --plots \
        --out "$N" >"$tmp/n.out" 2>&1 || fail "run --trace $lvl --plots exited $?: $(cat \
"$tmp/n.out")"
    check_pic "$N/plots" breakdown 1200 750
    check_pic "$N/plots" memory 1200 750
    check_index "$N/plots" $MODEL $PLAT
    [ ! -e "$N/plots/timeline.png" ] || fail "--trace $lvl: a timeline of no ops"
    [ "$(grep -c '^plots: no timeline' "$tmp/n.out")" -eq 1 ] &&
        grep '^plots: no timeline' "$tmp/n.out" | grep -q -- "--trace $lvl.*--trace full" ||
        fail "--trace $lvl: no line naming what is not drawn and --trace full: $(cat "$tmp/n.out")"
    grep -q '<p class="note">timeline: not drawn: .*--trace full' "$N/plots/index.html" ||
        fail "--trace $lvl: index.html does not say why there is no timeline"
    # the one compute bar is the summary's compute_s - overlap_s of the rank
    cs=$(grep -m1 '"compute_s"' "$N/summary.json" | sed 's/.*: \([0-9.e+-]*\).*/\1/')
    os=$(grep -m1 '"overlap_s"' "$N/summary.json" | sed 's/.*: \([0-9.e+-]*\).*/\1/')
    grep -q '^# rank compute overlapped_comm exposed_comm idle$' "$N/plots/breakdown.dat" ||
        fail "--trace $lvl: breakdown.dat columns $(grep '^# rank' "$N/plots/breakdown.dat")"
    got=$(awk '!/^#/ && $1 == 0 { print $2 }' "$N/plots/breakdown.dat")
    near "$(awk -v c="$cs" -v o="$os" 'BEGIN { printf "%.9f", (c - o) * 1e3 }')" "$got" ||
        fail "--trace $lvl: rank 0 computes $got ms alone, summary.json ${cs} - ${os} s"
    # nothing but the run's outputs and the plots folder
    left=$(ls "$N" | tr '\n' ' ')
    case $left in
        "memory.csv plots summary.json "|"memory.csv plots summary.json trace.json ") ;;
        *) fail "--trace $lvl: the run folder holds $left" ;;
    esac
    expect_refusal "--layers: $N has no op to draw a timeline of" "$CPSIM" plot "$N" --layers 1-1
done
"$CPSIM" run "$MIX" --set simulation.duration_s=1 --trace none --plots --out "$tmp/mixnone" \
    >"$tmp/n.out" 2>&1 || fail "the serving mix with --trace none exited $?: $(cat "$tmp/n.out")"
check_pic "$tmp/mixnone/plots" batch 1200 750
check_pic "$tmp/mixnone/plots" ttft-cdf 1200 750
grep -q '^plots: no timeline: the run wrote no trace (--trace none); cpsim run --trace full' \
    "$tmp/n.out" || fail "the serving mix with --trace none: $(cat "$tmp/n.out")"
# a failed plot changes nothing: the plots folder as it was, no folder beside it
snap() { (cd "$1" && cksum $(ls)); }
snap "$R/plots" >"$tmp/before"
expect_refusal "--step 9: the trace has no op in this step" "$CPSIM" plot "$R" --step 9
expect_refusal "gnuplot" env PATH=/nonexistent "$CPSIM" plot "$R"
snap "$R/plots" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "a failed plot changed $R/plots"
[ -z "$(ls -d "$R"/plots.tmp-* 2>/dev/null)" ] || fail "a failed plot left $(ls -d "$R"/plots.*)"
rm -rf "$tmp/trace-none/plots"
expect_refusal "gnuplot" env PATH=/nonexistent "$CPSIM" plot "$tmp/trace-none"
[ "$(ls "$tmp/trace-none" | tr '\n' ' ')" = "memory.csv summary.json " ] ||
    fail "a plot without gnuplot left $(ls "$tmp/trace-none" | tr '\n' ' ')"

# ---- a run out of memory: the OOM point -----------------------------------------------
O="$tmp/oom"
"$CPSIM" run "$tmp/base.yaml" --set requests.0.prompt_tokens=1048576 --set parallel.tp=2 \
    --set platform.devices_per_node=2 --quiet --plots --out "$O" || fail "OOM run exited $?"
grep -q '"oom": true' "$O/summary.json" || fail "the OOM run fits"
cap=$(grep -m1 '"capacity_bytes"' "$O/summary.json" | sed 's/.*: \([0-9.e+-]*\).*/\1/')
pt=$(awk '/^# out of memory: rank 0,/ { getline; print $2 }' "$O/plots/memory.dat")
awk -v g="${pt:-0}" -v c="$cap" 'BEGIN { exit !(g * 1e9 > c) }' ||
    fail "memory.dat: the OOM point at ${pt:-none} GB, capacity $cap B"
grep -q 'title "out of memory"' "$O/plots/plots.gp" || fail "the memory picture lacks the OOM point"
check_pic "$O/plots" memory 1200 750
check_index "$O/plots" $MODEL $PLAT

# ---- a serving run: TTFT and TPOT CDFs per class, batch composition ---------------------
M="$tmp/mix"
"$CPSIM" run "$MIX" --set simulation.duration_s=5 --quiet --plots --out "$M" ||
    fail "the serving mix exited $?"
P="$M/plots"
for f in ttft-cdf tpot-cdf batch memory; do
    check_pic "$P" $f 1200 750
done
check_pic "$P" timeline 1600 900
check_index "$P" $MODEL $PLAT long-short-mix.yaml "TP4 SP2"
# non-trivial pictures: lines drawn, not an empty frame
for f in ttft-cdf tpot-cdf batch; do
    [ "$(wc -c <"$P/$f.png")" -gt 15000 ] || fail "$f.png: $(wc -c <"$P/$f.png") bytes"
    [ "$(grep -c '<path' "$P/$f.svg")" -gt 20 ] || fail "$f.svg draws next to nothing"
done
grep -q '<p class="note">breakdown: not drawn for a serving run' "$P/index.html" ||
    fail "a serving run's index.html does not say why there is no breakdown"
! grep -q '<figure id="breakdown"' "$P/index.html" || fail "a serving run draws a breakdown"
# sv NAME FIELD: summary.json's serving.FIELD (NAME all) or serving.by_name.NAME.FIELD
sv() {
    awk -v n="$1" -v f="\"$2\":" '/"serving": \{/ { on = n == "all" }
        /"by_name": \{/ { on = 0 } n != "all" && $1 == "\"" n "\":" { on = 1 }
        on && $1 == f { sub(/,$/, "", $2); print $2; exit }' "$M/summary.json"
}
# cdf FILE LINE P: the P-quantile of that line's values in FILE (sorted), linear
# between the closest ranks as the summary takes it; cdfn FILE LINE: how many
# values it draws, its last fraction
cdf() {
    awk -v c="$2" -v p="$3" '/^# / { on = index($0, "# " c ": ") == 1; if (on) n = 0; next }
        on && NF == 2 && $2 > 0 { v[++n] = $1 }
        END { h = p * (n - 1); k = int(h); if (k >= n - 1) { print v[n]; exit }
              printf "%.10g\n", v[k + 1] + (h - k) * (v[k + 2] - v[k + 1]) }' "$1"
}
cdfn() {
    awk -v c="$2" '/^# / { on = index($0, "# " c ": ") == 1; next }
        on && NF == 2 && $2 > 0 { n++; last = $2 } END { print n + 0, last }' "$1"
}
for c in short all; do
    [ "$(cdfn "$P/ttft-cdf.dat" $c | cut -d' ' -f2)" = 1 ] || fail "ttft-cdf.dat: $c ends below 1"
    for q in 50 99; do
        for m in ttft tpot; do
            want=$(sv $c ${m}_p${q}_s)
            got=$(cdf "$P/$m-cdf.dat" $c 0.$q)
            near "$want" "$got" || fail "$m-cdf.dat: $c p$q $got, summary.json $want"
        done
    done
done
# requests.csv: a row per request; the short class's largest itl_max_s is
# its stall_max_s, its TTFT column matches summary.json's requests
[ "$(($(wc -l <"$M/requests.csv") - 1))" -eq "$(sv all requests)" ] ||
    fail "requests.csv: $(wc -l <"$M/requests.csv") lines for $(sv all requests) requests"
got=$(awk -F, 'NR > 1 && $2 == "short" && $11 != "" && $11 > m { m = $11 } END { print m }' \
    "$M/requests.csv")
near "$(sv short stall_max_s)" "$got" ||
    fail "requests.csv: short itl_max_s up to $got, stall_max_s $(sv short stall_max_s)"
got=$(awk -F, 'NR == 2 { print $9 }' "$M/requests.csv")
want=$(awk '/"requests": \[/ { on = 1 } on && $1 == "\"ttft_s\":" { sub(/,$/, "", $2); print $2
        exit }' "$M/summary.json")
near "$want" "$got" || fail "requests.csv: request 0 TTFT $got, summary.json $want"
# every request with a first token on the TTFT lines; the finished ones with
# decode tokens on the TPOT lines, the others counted in the key
reqs=$(sv all requests)
nulls=$(grep -c '"ttft_s": null' "$M/summary.json")
[ "$(cdfn "$P/ttft-cdf.dat" all | cut -d' ' -f1)" -eq $((reqs - nulls)) ] ||
    fail "ttft-cdf.dat: the all line is not the $((reqs - nulls)) requests with a first token"
[ "$(cdfn "$P/ttft-cdf.dat" long | cut -d' ' -f1)" -eq "$(sv long requests)" ] ||
    fail "ttft-cdf.dat: the long line lacks long requests"
[ "$(cdfn "$P/tpot-cdf.dat" short | cut -d' ' -f1)" -eq "$(sv short finished)" ] ||
    fail "tpot-cdf.dat: the short line is not its $(sv short finished) finished requests"
unf=$(($(sv short requests) - $(sv short finished)))
[ $unf -gt 0 ] || fail "the 5 s mix should leave short requests unfinished"
key="short: $(sv short finished) of $(sv short requests) requests, .* ($unf unfinished)"
grep -q "title \"$key\"" "$P/plots.gp" ||
    fail "the TPOT key does not count the $unf unfinished short requests"
# the long prompts have no decode tokens: named in the TPOT key, no line
grep -q "keyentry .* title \"long: none of $(sv long requests) requests ($(sv long finished) \
without decode tokens)\"" "$P/plots.gp" || fail "the TPOT key does not name the long class"
grep -q 'set logscale x 10' "$P/plots.gp" || fail "the CDFs lack their log x axis"
# the batch picture: two rows per step of steps.csv, their requests and tokens
awk -F, 'NR > 1 { n++; r += $5 + $6; if ($7 > t) t = $7 } END { print n, r, t }' \
    "$M/steps.csv" >"$tmp/steps.want"
awk '!/^#/ && NF == 4 && $4 != "NaN" { n++; r += $3; if ($4 > t) t = $4 }
     END { print n / 2, r / 2, t }' "$P/batch.dat" >"$tmp/steps.got"
cmp -s "$tmp/steps.want" "$tmp/steps.got" ||
    fail "batch.dat: steps, requests, largest step $(cat "$tmp/steps.got"), steps.csv $(cat \
"$tmp/steps.want")"
grep -q 'axes x1y2' "$P/plots.gp" || fail "the batch picture lacks tokens on the right axis"
# the timeline shows what the trace holds: the ops of the first 8 steps
# (their spans from steps.csv, ms); --step picks one of them, refuses others
step_t() { awk -F, -v s="$1" -v c="$2" 'NR > 1 && $1 == s { printf "%.6f\n", $c * 1e3 }' \
               "$M/steps.csv"; }
tlm() { awk -v f="$1" '!/^#/ && NF { if (lo == "" || $1 < lo) lo = $1; if ($2 > hi) hi = $2 }
                       END { print (f == "lo" ? lo : hi) }' "$P/${2:-timeline}.dat"; }
awk -v hi="$(tlm hi)" -v end="$(step_t 7 4)" 'BEGIN { exit !(hi <= end + 1e-3) }' ||
    fail "the serving timeline ends at $(tlm hi) ms, after step 7 ($(step_t 7 4) ms)"
grep -q 'A serving trace holds every op of the first 8 steps' "$P/index.html" ||
    fail "the serving timeline's caption does not say what the trace holds"
"$CPSIM" plot "$M" --step 3 >/dev/null || fail "plot --step 3 of the serving run exited $?"
awk -v lo="$(tlm lo timeline-step3)" -v hi="$(tlm hi timeline-step3)" -v a="$(step_t 3 3)" \
    -v b="$(step_t 3 4)" 'BEGIN { exit !(lo >= a - 1e-3 && hi <= b + 1e-3 && hi > lo) }' ||
    fail "--step 3 of the serving run spans $(tlm lo timeline-step3)-$(tlm hi timeline-step3) \
ms, steps.csv $(step_t 3 3)-$(step_t 3 4)"
expect_refusal "--step 20: the trace of this serving run holds the ops of steps 0-7 only" \
    "$CPSIM" plot "$M" --step 20
# the serving trace's ops carry their kernel classes and layers, as a run's do
"$CPSIM" plot "$M" --layers 1-2 >/dev/null || fail "plot --layers of the serving run exited $?"
grep -q '"cat":"gemm"' "$M/trace.json" || fail "the serving trace's ops lack kernel classes"
# cut at 0.3 s: the long prompt's step (0.46 s) ends the run, the short
# prompts waited behind it: the requests without a first token in the key
"$CPSIM" run "$MIX" --set simulation.duration_s=0.3 --quiet --plots --out "$tmp/mixcut" ||
    fail "the cut mix exited $?"
nulls=$(grep -c '"ttft_s": null' "$tmp/mixcut/summary.json")
[ "$nulls" -gt 0 ] || fail "the mix cut at 0.3 s should leave requests without a first token"
grep -q "title \"all: .* of .* requests, .* ($nulls without a first token)\"" \
    "$tmp/mixcut/plots/plots.gp" || fail "the TTFT key does not count $nulls without a first token"
grep -q '<p class="note">tpot-cdf: not drawn: no finished request has decode tokens' \
    "$tmp/mixcut/plots/index.html" || fail "the cut mix does not say why there is no TPOT"
check_index "$tmp/mixcut/plots" $MODEL $PLAT
# a run that is not serving: none of these
for f in ttft-cdf tpot-cdf batch; do
    [ ! -e "$R/plots/$f.png" ] && [ ! -e "$R/plots/$f.dat" ] || fail "$R draws $f"
    ! grep -q "$f" "$R/plots/index.html" || fail "$R/plots/index.html names $f"
done
! grep -q 'class="note"' "$R/plots/index.html" || fail "a run that is not serving has notes"

[ $fails -eq 0 ] || exit 1
exit 0
