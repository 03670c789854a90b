#!/bin/sh
# faults.sh: what interrupts, kills and concurrent runs leave behind.
#   - Ctrl-C (SIGINT to the process group) during a sweep: exit 130, no
#     point recorded as failed for it; --resume finishes with the results
#     of an uninterrupted sweep (three trials);
#   - SIGINT and SIGTERM during `cpsim run`: exit 128 + signal, a message,
#     no output and no temporary file;
#   - a second sweep on a folder another sweep is writing: refused (exit 2,
#     naming the holder's pid); the first is undisturbed;
#   - a run killed mid-simulation (as a crash) leaves none of the earlier
#     run's outputs in its folder;
#   - a serving run whose write fails names the file and errno;
#   - a run whose write fails keeps no marker (summary.json) beside a mix of
#     old and new files; temporary files of dead processes are removed by
#     the next run, those of live ones are not;
#   - --resume after a calibration table changed is refused;
#   - a sweep none of whose points runs exits 2; --merge with points
#     missing writes what it has and exits 2.
name=faults
. "${top_srcdir:-.}/tests/testlib.sh"

cat >"$tmp/base.yaml" <<'EOF'
model: qwen3-omni-30b-a3b-thinker
platform: h100-sxm-8
parallel: {tp: 8}
requests:
  - prompt_tokens: 1024
# every layer simulated: points slow enough for the interrupts to land
simulation: {fold_layers: false}
EOF
cat >"$tmp/s.yaml" <<'EOF'
name: faults
base: base.yaml
grid:
  parallel.tp: [1, 2, 3, 4, 8]      # 3 does not divide the heads: failed points
  requests.0.prompt_tokens: [1024, 2048, 4096, 8192]
EOF
total=20
failed=4

# lines LINES DIR: wait (up to 20 s) until DIR/results.jsonl has LINES lines
lines() {
    i=0
    while [ $i -lt 400 ]; do
        n=$(cat "$2/results.jsonl" 2>/dev/null | wc -l)
        [ "$n" -ge "$1" ] && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

"$CPSIM" sweep "$tmp/s.yaml" -j 2 --quiet --no-share --out "$tmp/ref" 2>/dev/null ||
    fail "reference sweep exited $?"

# ---- Ctrl-C to the sweep's process group ----------------------------------------------
for trial in 1 2 3; do
    d="$tmp/int$trial"
    setsid "$CPSIM" sweep "$tmp/s.yaml" -j 2 --quiet --no-share --out "$d" 2>"$d.err" &
    pid=$!
    lines $((2 + trial)) "$d" || fail "trial $trial: the sweep did not start"
    kill -INT -- -"$pid" 2>/dev/null || kill -INT "$pid"
    wait "$pid"
    rc=$?
    [ $rc -eq 130 ] || fail "trial $trial: interrupted sweep exited $rc, expected 130"
    grep -q "interrupted (Interrupt)" "$d.err" || fail "trial $trial: $(cat "$d.err")"
    nf=$(grep -c '"status":"failed"' "$d/results.jsonl")
    bad=$(grep '"status":"failed"' "$d/results.jsonl" | grep -vc 'does not divide')
    [ "$bad" -eq 0 ] || fail "trial $trial: $bad points recorded as failed by the interrupt"
    [ "$nf" -le $failed ] || fail "trial $trial: $nf failed points"
    "$CPSIM" sweep "$tmp/s.yaml" -j 2 --quiet --no-share --resume --out "$d" 2>/dev/null ||
        fail "trial $trial: resume exited $?"
    cmp -s "$tmp/ref/results.jsonl" "$d/results.jsonl" ||
        fail "trial $trial: interrupted + resumed results differ from the reference"
done

# ---- a second sweep on a folder in use ------------------------------------------------
"$CPSIM" sweep "$tmp/s.yaml" -j 1 --quiet --no-share --out "$tmp/busy" 2>/dev/null &
pid=$!
lines 1 "$tmp/busy" || fail "the first sweep did not start"
"$CPSIM" sweep "$tmp/s.yaml" -j 1 --quiet --resume --out "$tmp/busy" >"$tmp/busy.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a second sweep on a busy folder exited $rc, expected 2"
grep -q "another cpsim sweep (pid $pid) is writing this folder" "$tmp/busy.out" ||
    fail "busy folder: $(cat "$tmp/busy.out")"
wait "$pid" || fail "the first sweep exited $? after the second was refused"
cmp -s "$tmp/ref/results.jsonl" "$tmp/busy/results.jsonl" ||
    fail "the first sweep's results changed"

# ---- signals during a run --------------------------------------------------------------
# a run of several seconds (72 requests served, every layer simulated)
long="$top_srcdir/workloads/examples/dsa-decode-router.yaml"
for sig in INT:2 TERM:15; do
    num=${sig#*:}
    sig=${sig%:*}
    d="$tmp/run-$sig"
    "$CPSIM" run "$long" --quiet --set simulation.fold_layers=false --out "$d" 2>"$d.err" &
    pid=$!
    sleep 1
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    want=$((128 + num))
    [ $rc -eq $want ] || fail "run stopped by SIG$sig exited $rc, expected $want"
    grep -q "interrupted; no half-written output" "$d.err" || fail "SIG$sig: $(cat "$d.err")"
    grep -q "Backtrace\|backtrace" "$d.err" && fail "SIG$sig: SimGrid's backtrace: $(cat "$d.err")"
    left=$(ls "$d" 2>/dev/null | wc -l)
    [ "$left" -eq 0 ] || fail "SIG$sig: the run left $(ls "$d")"
done

# ---- a run that cannot finish: no other scenario's outputs stay --------------------------
# (SIGKILL cannot be caught, like a crash; the folder held another run's)
d="$tmp/killed-run"
"$CPSIM" run "$tmp/base.yaml" --quiet --out "$d" || fail "run exited $?"
[ -s "$d/summary.json" ] || fail "the first run wrote no summary.json"
"$CPSIM" run "$long" --quiet --set simulation.fold_layers=false --out "$d" 2>/dev/null &
pid=$!
sleep 1
kill -KILL "$pid"
wait "$pid" 2>/dev/null
for f in summary.json trace.json memory.csv; do
    [ -e "$d/$f" ] && fail "a killed run left the earlier scenario's $f"
done

# ---- a failed write, stale temporary files ---------------------------------------------
d="$tmp/out"
"$CPSIM" run "$tmp/base.yaml" --quiet --out "$d" || fail "run exited $?"
touch "$d/summary.json.tmp-999999999-AbCdEf" "$d/trace.json.tmp-$$-AbCdEf"
mv "$d/trace.json" "$d/old-trace.json"
mkdir "$d/trace.json"           # the new trace cannot be renamed into place
"$CPSIM" run "$tmp/base.yaml" --quiet --out "$d" >"$tmp/w.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a failed write exited $rc, expected 2"
grep -q "trace.json: cannot rename output into place" "$tmp/w.out" || fail "$(cat "$tmp/w.out")"
[ -e "$d/summary.json" ] && fail "summary.json (the marker) stayed beside a failed write"
[ -e "$d/summary.json.tmp-999999999-AbCdEf" ] && fail "a dead process's temporary file stayed"
[ -e "$d/trace.json.tmp-$$-AbCdEf" ] || fail "a live process's temporary file was removed"
ls "$d" | grep -v "tmp-$$-" | grep -q "tmp-" && fail "temporary files left: $(ls "$d")"

# ---- a serving run that cannot write its outputs names the file and the cause ------------
# (a file size limit: memory.csv, 0.33 MB with its ranks sharing rows, does not fit 200 blocks)
mix="$top_srcdir/workloads/examples/long-short-mix.yaml"
(ulimit -f 200 && trap '' XFSZ && "$CPSIM" run "$mix" --trace none --quiet --out "$tmp/fsz") \
    >"$tmp/fsz.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a serving run that cannot write exited $rc, expected 2"
grep -q "memory.csv: write failed: File too large" "$tmp/fsz.out" || fail "$(cat "$tmp/fsz.out")"
# the gzip trace, compressed on its writer thread, fails the same way and leaves nothing
(ulimit -f 200 && trap '' XFSZ && "$CPSIM" run "$top_srcdir/workloads/examples/sp-ring.yaml" \
    --trace full --trace-gz --quiet --out "$tmp/fszgz") >"$tmp/fszgz.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a gzip trace that cannot be written exited $rc, expected 2"
grep -q "trace.json.gz: write failed: File too large" "$tmp/fszgz.out" ||
    fail "$(grep -v warning "$tmp/fszgz.out")"
ls "$tmp/fszgz" 2>/dev/null | grep -q . && fail "a failed gzip trace left $(ls "$tmp/fszgz")"

# ---- a table changed between a sweep and its --resume ---------------------------------
# the points done read the old table: refused, not mixed with new points
dd="$tmp/datadir"
mkdir -p "$dd/platforms/calibration"
ln -s "$top_srcdir/models" "$dd/models"
ln -s "$top_srcdir/workloads" "$dd/workloads"
for f in "$top_srcdir"/platforms/*.yaml; do ln -s "$f" "$dd/platforms/"; done
cp -r "$top_srcdir/platforms/calibration/h200" "$dd/platforms/calibration/"
sed 's/h100-sxm-8/h200-sxm-8/' "$tmp/base.yaml" >"$tmp/base200.yaml"
printf 'base: base200.yaml\ngrid: {parallel.tp: [4, 8]}\n' >"$tmp/t.yaml"
CPSIM_DATADIR="$dd" "$CPSIM" sweep "$tmp/t.yaml" --quiet --out "$tmp/tab" 2>/dev/null ||
    fail "the sweep on the copied profile exited $?"
CPSIM_DATADIR="$dd" "$CPSIM" sweep "$tmp/t.yaml" --quiet --resume --out "$tmp/tab" 2>/dev/null ||
    fail "--resume with nothing changed exited $?"
awk -F, -v OFS=, 'NR == 2 { $NF = $NF * 1.5 } { print }' \
    "$top_srcdir/platforms/calibration/h200/gemm.csv" >"$dd/platforms/calibration/h200/gemm.csv"
CPSIM_DATADIR="$dd" "$CPSIM" sweep "$tmp/t.yaml" --quiet --resume --out "$tmp/tab" \
    >"$tmp/tab.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "--resume after a table changed exited $rc, expected 2"
grep -q "2 of the 2 points already done ran on other inputs" "$tmp/tab.out" ||
    fail "$(cat "$tmp/tab.out")"

# ---- sweeps that produce nothing -------------------------------------------------------
printf 'base: base.yaml\ngrid: {parallel.tpp: [1, 2]}\n' >"$tmp/typo.yaml"
"$CPSIM" sweep "$tmp/typo.yaml" --quiet --out "$tmp/typo" >"$tmp/typo.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a sweep with an unknown grid key exited $rc, expected 2"
grep -q 'unknown key "tpp" in parallel' "$tmp/typo.out" || fail "$(cat "$tmp/typo.out")"
printf 'base: base.yaml\ngrid: {parallel.tp: [3, 5]}\n' >"$tmp/none.yaml"
"$CPSIM" sweep "$tmp/none.yaml" --quiet --out "$tmp/none" >"$tmp/none.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a sweep whose every point fails exited $rc, expected 2"
grep -q "every point of the sweep failed (2)" "$tmp/none.out" || fail "$(cat "$tmp/none.out")"
"$CPSIM" sweep "$tmp/s.yaml" --quiet --shard 0/3 --out "$tmp/sh0" 2>/dev/null ||
    fail "shard 0 exited $?"
"$CPSIM" sweep --merge "$tmp/sh0" --quiet --out "$tmp/part" >"$tmp/part.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "--merge with points missing exited $rc, expected 2"
grep -q "points are missing" "$tmp/part.out" || fail "$(cat "$tmp/part.out")"
[ -s "$tmp/part/results.jsonl" ] || fail "--merge with points missing wrote no results"

[ $fails -eq 0 ] && echo "faults.sh: all checks passed"
[ $fails -eq 0 ]
