#!/bin/sh
# sweep.sh: `cpsim sweep` and `cpsim plot` end to end with the binary.
#   - a small real sweep (the thinker, TP x prompt length x min_tokens, one
#     bad TP); points that plan alike share one simulation, and give the
#     same results as with --no-share;
#   - the same sweep killed mid-run (SIGKILL) and resumed: no point lost,
#     none twice, results identical to the uninterrupted run;
#   - the same sweep in 3 shards through GNU parallel, merged: identical;
#   - the plots of the sweep and of a run: valid PNG/SVG of the documented
#     sizes, their data files agreeing with results and summary, index.html's
#     links resolving (tests/plots.sh checks each picture in depth);
#   - refusals: existing results without --resume, another sweep's folder,
#     a bad `where`, gnuplot missing.
# Exit 77 (skipped) when GNU parallel is missing and all else passed.
name=sweep
. "${top_srcdir:-.}/tests/testlib.sh"
. "$top_srcdir/tests/plot_checks.sh"

# every layer simulated (no replay), so that the sweep lasts long enough
# (about 0.3 s) for the kill below to land mid-run
cat >"$tmp/base.yaml" <<'EOF'
model: qwen3-omni-30b-a3b-thinker
platform: h100-sxm-8
parallel: {tp: 8}
simulation: {replay: false}
requests:
  - prompt_tokens: 1024
EOF
cat >"$tmp/s.yaml" <<'EOF'
name: small
base: base.yaml
grid:
  parallel.tp: [2, 3, 4, 8]         # 3 does not divide the 32 heads: a failed point
  requests.0.prompt_tokens: [1024, 2048, 4096]
  parallel.min_tokens: [0, 1]       # no SP: the same plan, one simulation
where:
  - parallel.tp != 2 || requests.0.prompt_tokens < 4096
EOF
total=22

# ---- the reference: one process, two jobs --------------------------------------
"$CPSIM" sweep "$tmp/s.yaml" -j 2 --out "$tmp/single" >"$tmp/single.out" 2>"$tmp/single.err" ||
    fail "sweep exited $?: $(cat "$tmp/single.err")"
n=$(wc -l <"$tmp/single/results.jsonl")
[ "$n" -eq $total ] || fail "single run: $n result lines, expected $total"
[ "$(grep -c '"status":"failed"' "$tmp/single/results.jsonl")" -eq 6 ] ||
    fail "the 6 points with tp 3 should fail"
grep -q 'tp = 3 does not divide the 32 attention heads' "$tmp/single/results.jsonl" ||
    fail "a failed point lacks its reason"
grep -q 'best configuration per prompt length' "$tmp/single.out" || fail "no best table printed"
grep -q '^ *1024 .*tp=8' "$tmp/single.out" || fail "tp 8 should be best at 1024 tokens"
for f in results.csv best.csv split.csv sweep.json; do
    [ -s "$tmp/single/$f" ] || fail "sweep did not write $f"
done
[ "$(wc -l <"$tmp/single/results.csv")" -eq $((total + 1)) ] || fail "results.csv rows"
grep -q 'sweep small: 22/22 done, 6 failed' "$tmp/single.err" || fail "no final progress line"
grep -q 'sweep small: 22 points ran as 8 simulations' "$tmp/single.err" ||
    fail "points with equal plans should share: $(grep simulations "$tmp/single.err")"
"$CPSIM" sweep "$tmp/s.yaml" -j 2 --no-share --out "$tmp/unshared" >/dev/null 2>"$tmp/unshared.err"
grep -q 'sweep small: 22 points ran as 16 simulations' "$tmp/unshared.err" ||
    fail "--no-share should simulate every point that plans"
cmp -s "$tmp/single/results.jsonl" "$tmp/unshared/results.jsonl" ||
    fail "shared simulations give other results than --no-share"

# min_tokens on a TP4 x SP2 ring: the parent builds a plan once per class of
# equal split decisions (sim/sweep/sweep_exec.c plan_met) and joins the
# other points of the class to its simulation; a point whose min_tokens
# changes a decision (2,048 tokens split at 0 and 1,024, copied at 4,096
# and 16,384) must get its own, as --no-share gives it
cat >"$tmp/mt.yaml" <<'EOF'
name: mt
base: base.yaml
grid:
  parallel.tp: [4]
  parallel.sp: [2]
  parallel.exchange: [ring]
  parallel.kv_storage: [by_position]
  simulation.replay: [true]
  requests.0.prompt_tokens: [2048, 8192]
  parallel.min_tokens: [0, 1024, 4096, 16384]
EOF
"$CPSIM" sweep "$tmp/mt.yaml" -j 2 --out "$tmp/mt" >/dev/null 2>"$tmp/mt.err" ||
    fail "min_tokens sweep exited $?: $(cat "$tmp/mt.err")"
"$CPSIM" sweep "$tmp/mt.yaml" -j 2 --no-share --out "$tmp/mt1" >/dev/null 2>&1 ||
    fail "min_tokens sweep, --no-share"
cmp -s "$tmp/mt/results.jsonl" "$tmp/mt1/results.jsonl" ||
    fail "min_tokens sweep: shared plans give other results than --no-share"
sims=$(sed -n 's/.*8 points ran as \([0-9]*\) simulations/\1/p' "$tmp/mt.err")
[ -n "$sims" ] && [ "$sims" -ge 4 ] && [ "$sims" -lt 8 ] ||
    fail "min_tokens sweep: $(grep simulations "$tmp/mt.err")"

# ---- killed with SIGKILL mid-run, then resumed ---------------------------------
"$CPSIM" sweep "$tmp/s.yaml" -j 1 --out "$tmp/killed" >/dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 2000 ]; do
    lines=$(cat "$tmp/killed/results.jsonl" 2>/dev/null | wc -l)
    [ "$lines" -ge 3 ] && break
    sleep 0.01
    i=$((i + 1))
done
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
before=$(wc -l <"$tmp/killed/results.jsonl")
[ "$before" -ge 3 ] && [ "$before" -lt $total ] ||
    fail "the kill should come mid-run ($before of $total lines)"
sleep 0.3  # the orphaned child finishes and dies on its closed pipe
expect_refusal "add --resume" "$CPSIM" sweep "$tmp/s.yaml" --out "$tmp/killed"
"$CPSIM" sweep "$tmp/s.yaml" -j 2 --resume --out "$tmp/killed" >/dev/null 2>"$tmp/resume.err" ||
    fail "resume exited $?: $(cat "$tmp/resume.err")"
grep -q "$((total - before)) to run" "$tmp/resume.err" ||
    fail "resume should run the $((total - before)) missing points: $(head -1 "$tmp/resume.err")"
dups=$(sed 's/.*"id":"\([0-9a-f]*\)".*/\1/' "$tmp/killed/results.jsonl" | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "$dups points recorded twice after --resume"
cmp -s "$tmp/single/results.jsonl" "$tmp/killed/results.jsonl" ||
    fail "killed + resumed results differ from the uninterrupted run"
cmp -s "$tmp/single/results.csv" "$tmp/killed/results.csv" ||
    fail "results.csv differs after resume"
# nothing left: a second resume runs nothing and changes nothing
"$CPSIM" sweep "$tmp/s.yaml" --resume --out "$tmp/killed" >/dev/null 2>"$tmp/resume2.err"
grep -q " 0 to run" "$tmp/resume2.err" || fail "a finished sweep resumed should run nothing"
grep -q "22/22 done, 6 failed" "$tmp/resume2.err" ||
    fail "resumed progress should count old failures"
cmp -s "$tmp/single/results.jsonl" "$tmp/killed/results.jsonl" ||
    fail "second resume changed results"

# another sweep's folder is refused on --resume
sed 's/4096]$/8192]/' "$tmp/s.yaml" >"$tmp/s2.yaml"
expect_refusal "holds another sweep" "$CPSIM" sweep "$tmp/s2.yaml" --resume --out "$tmp/killed"
printf 'base: base.yaml\ngrid: {parallel.tp: [8]}\nwhere:\n  - parallel.tp == = 8\n' \
    >"$tmp/bad.yaml"
expect_refusal "bad.yaml:4:20: where:" "$CPSIM" sweep "$tmp/bad.yaml" --out "$tmp/bad"
expect_refusal "--shard 3/3: I must be in [0, 2]" "$CPSIM" sweep "$tmp/s.yaml" --shard 3/3
# a workload given as the sweep: the message says what it is
expect_refusal "this looks like a workload: run it with cpsim run FILE" \
    "$CPSIM" sweep "$tmp/base.yaml" --out "$tmp/notasweep"

# ---- shards through GNU parallel, merged -----------------------------------------
have_parallel=0
if command -v parallel >/dev/null 2>&1; then
    have_parallel=1
    parallel --will-cite -j 2 "$CPSIM" sweep "$tmp/s.yaml" -j 1 --quiet --shard {}/3 \
        --out "$tmp/shard{}" ::: 0 1 2 || fail "GNU parallel shards exited $?"
    sum=0
    for s in 0 1 2; do
        sum=$((sum + $(wc -l <"$tmp/shard$s/results.jsonl")))
    done
    [ $sum -eq $total ] || fail "shards hold $sum results, expected $total"
    "$CPSIM" sweep --merge "$tmp/shard0" "$tmp/shard1" "$tmp/shard2" --out "$tmp/merged" \
        --plots >"$tmp/merge.out" 2>&1 || fail "merge exited $?: $(cat "$tmp/merge.out")"
    for f in results.jsonl results.csv best.csv split.csv; do
        cmp -s "$tmp/single/$f" "$tmp/merged/$f" || fail "merged $f differs from the single run"
    done
else
    echo "SKIP: GNU parallel is not installed (Debian package parallel)"
    "$CPSIM" plot "$tmp/single" >/dev/null || fail "plot of the sweep exited $?"
    mkdir -p "$tmp/merged" && cp -r "$tmp/single/." "$tmp/merged/"
fi

# ---- plots ---------------------------------------------------------------------------
P="$tmp/merged/plots"
for f in ttft overlap heatmap-1024 heatmap-2048 heatmap-4096; do
    check_pic "$P" $f 1200 750
done
check_index "$P" "sweep small:" qwen3-omni-30b-a3b-thinker h100-sxm-8
# the TTFT drawn for tp=8 at 2048 tokens is the one in results.csv
want=$(awk -F, '$3 == 8 && $4 == 2048 { print $9; exit }' "$tmp/single/results.csv")
got=$(awk '/^# tp=8:/ { on = 1; next } /^#/ { on = 0 } on && $1 == 2048 { print $2 }' \
    "$P/strategies.dat")
near "$want" "$got" ||
    fail "strategies.dat TTFT $got, results.csv $want"
# the heat map cell of tp 8 holds the best TTFT of its prompt length
best=$(awk -F, '$1 == 4096 { print $5 }' "$tmp/single/best.csv")
cell=$(awk '$4 == 8 && $5 == 1 { print $3 }' "$P/heatmap-4096.dat")
near "$best" "$cell" ||
    fail "heatmap cell $cell, best.csv $best"

# a run: timeline and memory
"$CPSIM" run "$tmp/base.yaml" --quiet --out "$tmp/run" || fail "run exited $?"
"$CPSIM" plot "$tmp/run" >/dev/null || fail "plot of a run exited $?"
check_pic "$tmp/run/plots" timeline 1600 900
check_pic "$tmp/run/plots" memory 1200 750
check_pic "$tmp/run/plots" breakdown 1200 750
check_index "$tmp/run/plots" qwen3-omni-30b-a3b-thinker h100-sxm-8
# the memory stack tops out at the summary's peak (GB), the timeline ends
# at the makespan (ms)
peak=$(grep -m1 '"peak_bytes_max"' "$tmp/run/summary.json" | sed 's/.*: \([0-9.e+]*\).*/\1/')
top=$(awk '!/^#/ && NF { if ($NF > m) m = $NF } END { print m }' "$tmp/run/plots/memory.dat")
awk -v p="$peak" -v t="$top" 'BEGIN { d = p / 1e9 - t; exit !(d < 1e-5 && d > -1e-5) }' ||
    fail "memory.dat tops at $top GB, summary peak $peak B"
span=$(grep -m1 '"makespan_s"' "$tmp/run/summary.json" | sed 's/.*: \([0-9.e+-]*\).*/\1/')
end=$(awk '!/^#/ && NF { if ($2 > m) m = $2 } END { print m }' "$tmp/run/plots/timeline.dat")
awk -v s="$span" -v e="$end" 'BEGIN { d = s * 1e3 - e; exit !(d < 1e-3 && d > -1e-3) }' ||
    fail "timeline.dat ends at $end ms, makespan $span s"
"$CPSIM" plot "$tmp/run" --layers 2-3 >/dev/null || fail "plot --layers exited $?"
end2=$(awk '!/^#/ && NF { if ($2 > m) m = $2 } END { print m }' \
    "$tmp/run/plots/timeline-layers2-3.dat")
awk -v a="$end2" -v e="$end" 'BEGIN { exit !(a < e / 4) }' ||
    fail "--layers 2-3 window ends at $end2 ms"
expect_refusal "no op in these layers" "$CPSIM" plot "$tmp/run" --layers 900-901
expect_refusal "gnuplot" env PATH=/nonexistent "$CPSIM" plot "$tmp/run"
expect_refusal "neither a run folder" "$CPSIM" plot "$tmp"

[ $fails -eq 0 ] || exit 1
[ $have_parallel -eq 1 ] || exit 77
exit 0
