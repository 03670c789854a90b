#!/bin/sh
# cli.sh: the cpsim binary end to end — exit codes, messages, outputs, and the
# bad-input corpus (tests/bad) through `cpsim validate`.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
tmp=$(mktemp -d /tmp/cpsim-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE SUBSTRING -- command...
expect() {
    code=$1; want=$2; shift 3
    "$@" >"$tmp/stdout" 2>"$tmp/stderr"
    got=$?
    [ "$got" -eq "$code" ] || fail "$* exited $got, expected $code: $(head -c 300 "$tmp/stderr")"
    if [ -n "$want" ] && ! grep -qF -- "$want" "$tmp/stdout" "$tmp/stderr"; then
        fail "$*: output lacks \"$want\": $(head -c 300 "$tmp/stderr")"
    fi
}

expect 2 "missing command" -- "$CPSIM"
# no arguments: every command listed (on stderr), exit 2
for c in run validate plan memory sweep plot; do
    grep -q "^  $c " "$tmp/stderr" || fail "cpsim without arguments does not list $c"
done
grep -qF "Try 'cpsim --help'." "$tmp/stderr" || fail "cpsim without arguments: no hint"
expect 2 'did you mean "run"' -- "$CPSIM" rnu
expect 2 "unknown option --plat" -- "$CPSIM" run --plat x
expect 2 "needs a value" -- "$CPSIM" run --set
expect 2 "expected KEY=VALUE" -- "$CPSIM" run --set parallel.tp
expect 2 "validate needs a WORKLOAD.yaml" -- "$CPSIM" validate
expect 0 "Usage: cpsim" -- "$CPSIM" --help
for c in run validate plan memory sweep plot; do
    expect 0 "Usage: cpsim $c" -- "$CPSIM" $c --help
done
expect 0 "--shard I/N" -- "$CPSIM" sweep --help
expect 0 "--quant FILE" -- "$CPSIM" memory -h
grep -q -- "--out" "$tmp/stdout" && fail "cpsim memory --help lists --out"
expect 0 "Usage: cpsim sweep" -- "$CPSIM" sweep --bogus --help

# an option's value is never the next option; joined with '=' it is taken as written
expect 2 "option --out needs a value, got the option --quiet" -- "$CPSIM" run --out --quiet
expect 2 "option -j needs a value, got the option --list" -- "$CPSIM" sweep x.yaml -j --list
expect 2 "option --platform needs a value, got the option --set" -- \
    "$CPSIM" validate "$top_srcdir/workloads/default.yaml" --platform --set parallel.tp=4
expect 2 "option --out needs a value (DIR)" -- "$CPSIM" run --out
expect 2 "option --quiet takes no value" -- "$CPSIM" run --quiet=yes
# a command refuses another command's option and says which take it
expect 2 "plan does not take --out; it is an option of run, sweep and compare" -- \
    "$CPSIM" plan "$top_srcdir/workloads/default.yaml" --out "$tmp/p"
expect 2 "run does not take --quant; it is an option of memory" -- "$CPSIM" run --quant q.json
expect 2 "memory does not take -j; it is an option of sweep" -- \
    "$CPSIM" memory "$top_srcdir/workloads/default.yaml" -j 2
expect 2 "sweep does not take --cfg; it is an option of run" -- \
    "$CPSIM" sweep x.yaml --cfg=network/model:CM02
expect 2 "plot does not take --set" -- "$CPSIM" plot "$tmp" --set parallel.tp=2
grep -qF "Try 'cpsim plot --help'." "$tmp/stderr" || fail "a refusal lacks its hint"
expect 2 'unknown option --jsno (did you mean "--json"?)' -- "$CPSIM" plan x.yaml --jsno
expect 2 'did you mean "--quant", an option of memory?' -- "$CPSIM" run --qaunt q.json
expect 2 "option --cfg takes its value as --cfg=KEY:VALUE" -- "$CPSIM" run --cfg network/model:CM02
expect 2 "validate --json goes with --accuracy" -- \
    "$CPSIM" validate "$top_srcdir/workloads/default.yaml" --json
expect 2 "--resume does not apply" -- "$CPSIM" sweep --merge "$tmp" --out "$tmp/m" --resume
# every command's options are accepted by that command (here: parsed, then refused for input)
expect 2 "nope.yaml" -- "$CPSIM" memory "$tmp/nope.yaml" --platform h100-sxm-8 --set parallel.tp=2 \
    --quant=q.json --json
expect 2 "nope.yaml" -- "$CPSIM" plan --platform=h100-sxm-8 "$tmp/nope.yaml" --json
expect 0 "cpsim 0" -- "$CPSIM" sweep --version
expect 0 "cpsim" -- "$CPSIM" --version
expect 2 "nope.yaml" -- "$CPSIM" validate "$tmp/nope.yaml"
expect 2 "parallel.tp" -- "$CPSIM" run --set parallel.tp=3 --out "$tmp/x"
[ -e "$tmp/x" ] && fail "a refused run created its output directory"

# the default workload: table on stdout, three files
expect 0 "TTFT" -- "$CPSIM" run --out "$tmp/out"
for f in summary.json trace.json memory.csv; do
    [ -s "$tmp/out/$f" ] || fail "run did not write $f"
done
grep -q '"schema": "cpsim.summary/1"' "$tmp/out/summary.json" || fail "summary schema"
grep -q '"oom": false' "$tmp/out/summary.json" || fail "default workload should fit"
ls "$tmp/out" | grep -q tmp && fail "temporary files left in the output directory"

# OOM is a verdict (exit 0), not an error
expect 0 "OUT OF MEMORY" -- "$CPSIM" run --set platform.device.hbm_bytes=4e9 --out "$tmp/oom"
grep -q '"oom": true' "$tmp/oom/summary.json" || fail "OOM verdict missing from summary"

# SimGrid's options pass through
expect 0 "" -- "$CPSIM" run --quiet --cfg=maxmin/precision:1e-9 --log=root.thres:critical \
    --out "$tmp/q"
# --trace-gz: the trace as gzip, the same events; the plain one of an
# earlier run goes
"$CPSIM" run --quiet --out "$tmp/gz" || fail "run exited $?"
cp "$tmp/gz/trace.json" "$tmp/plain-trace.json"
"$CPSIM" run --quiet --trace-gz --out "$tmp/gz" || fail "run --trace-gz exited $?"
[ -e "$tmp/gz/trace.json" ] && fail "--trace-gz left the plain trace.json of the run before"
gzip -dc "$tmp/gz/trace.json.gz" | cmp -s - "$tmp/plain-trace.json" ||
    fail "trace.json.gz does not hold the plain run's trace"
# --trace steps | none, --trace-ranks, --trace-layers: what the trace holds
"$CPSIM" run --quiet --trace steps --out "$tmp/tsteps" || fail "run --trace steps exited $?"
nx=$(grep -c '"ph":"X"' "$tmp/tsteps/trace.json")
[ "$nx" -eq 8 ] || fail "--trace steps: $nx spans, expected 8 (8 ranks x 1 step)"
grep -q '"selection":{"trace":"steps"}' "$tmp/tsteps/trace.json" || fail "--trace steps unsaid"
"$CPSIM" run --quiet --trace-ranks 3,5-6 --trace-layers 2-2 --out "$tmp/tsel" ||
    fail "run --trace-ranks exited $?"
tids='"tid":\(10\|11\|12\|16\|17\|18\|19\|20\|21\),' # ranks 3, 5, 6: 1 + 3 r + stream
bad=$(grep '"ph":"X"' "$tmp/tsel/trace.json" | grep -vc "$tids")
[ "$bad" -eq 0 ] || fail "--trace-ranks 3,5-6: $bad events on other ranks"
layers=$(grep -o '"layer":-\?[0-9]*' "$tmp/tsel/trace.json" | sort -u | tr '\n' ' ')
[ "$layers" = '"layer":-1 "layer":2 ' ] || fail "--trace-layers 2-2: layers $layers"
cmp -s "$tmp/tsel/summary.json" "$tmp/tsteps/summary.json" ||
    fail "the trace's selection changed the summary"
"$CPSIM" run --quiet --trace none --out "$tmp/tsteps" || fail "run --trace none exited $?"
[ -e "$tmp/tsteps/trace.json" ] && fail "--trace none left the trace of the run before"
expect 2 "--trace-ranks 9: the run has 8 ranks (0-7)" -- "$CPSIM" run --trace-ranks 9 \
    --out "$tmp/tsteps"
expect 2 "--trace detailed: expected full, steps or none" -- "$CPSIM" run --trace detailed
# a layout that leaves devices idle says so
expect 0 "warning: parallel: tp*sp*dp = 4 uses 4 of the 8 devices of platform h100-sxm-8" -- \
    "$CPSIM" validate "$top_srcdir/workloads/default.yaml" --set parallel.tp=4
# SimGrid items are checked here: SimGrid itself aborts on a bad one
expect 2 "cpsim sets network/model itself" -- "$CPSIM" run --cfg=network/model:LV08
expect 2 "tracing is not among the SimGrid items cpsim passes on" -- "$CPSIM" run --cfg=tracing:yes
expect 2 "network/optim takes Full|Lazy, got \"Fast\"" -- "$CPSIM" run --cfg=network/optim:Fast
expect 2 "network/weight-S takes a number >= 0" -- "$CPSIM" run --cfg=network/weight-S:-1
expect 2 "--log=root.thres:loud: cpsim passes on SimGrid thresholds" -- \
    "$CPSIM" run --log=root.thres:loud
[ -s "$tmp/q/summary.json" ] || fail "--quiet run wrote no summary"
[ -s "$tmp/stdout" ] && fail "--quiet printed something"

# a raw SimGrid XML platform, given relative to the current directory
(cd "$top_srcdir" && "$CPSIM" run --quiet --platform tests/platforms/raw-ok.xml \
    --set parallel.tp=2 --set requests.0.prompt_tokens=1024 --out "$tmp/raw") ||
    fail "run on a raw SimGrid XML platform"
grep -q '"platform": "raw-ok.xml"' "$tmp/raw/summary.json" || fail "raw platform not in the summary"
# the same platform with its devices slowed to a quarter from 0.1 ms on
# (SimGrid speed profiles, read relative to the current directory): the
# kernels must run as execs that the profile slows, never as waits of their
# time at full speed (sim/engine/alone.c), so the prompt takes far longer
mkdir "$tmp/slow"
for h in a-gpu2 a-gpu10 b-gpu2 b-gpu10; do
    printf '0 1.0\n0.0001 0.25\n' >"$tmp/slow/$h.prof"
done
pat='\(<host id="\([ab]-gpu[0-9]*\)" speed="100Tf"\)>'
sed "s|$pat|\\1 speed_file=\"\\2.prof\">|" "$top_srcdir/tests/platforms/raw-ok.xml" \
    >"$tmp/slow/raw-slow.xml"
(cd "$tmp/slow" && "$CPSIM" run --quiet --platform raw-slow.xml --set parallel.tp=2 \
    --set requests.0.prompt_tokens=1024 --out "$tmp/rawslow") || fail "run on a slowed platform"
t_raw=$(sed -n 's/.*"ttft_s": \([0-9.e+-]*\).*/\1/p' "$tmp/raw/summary.json" | head -1)
t_slow=$(sed -n 's/.*"ttft_s": \([0-9.e+-]*\).*/\1/p' "$tmp/rawslow/summary.json" | head -1)
awk -v a="$t_raw" -v b="$t_slow" 'BEGIN { exit !(b > 2 * a) }' ||
    fail "speed profiles ignored: TTFT $t_slow s slowed against $t_raw s"

# independent DP replicas simulated once and copied: the same bytes as
# simulating every rank (issue 13 part 2); four TP8 replicas on four nodes,
# and two TP4 replicas inside one node (switch ports of their own)
cat >"$tmp/dp.yaml" <<'YAML'
model: qwen3-omni-30b-a3b-thinker
platform: {name: h100-sxm-8, nodes: 4}
parallel: {tp: 8, dp: 4}
requests: [{prompt_tokens: 4096, decode_tokens: 2}]
YAML
for lay in "" "--set parallel.tp=4 --set parallel.dp=2"; do
    # shellcheck disable=SC2086
    "$CPSIM" run "$tmp/dp.yaml" --quiet $lay --out "$tmp/dp-share" || fail "dp run ($lay)"
    # shellcheck disable=SC2086
    "$CPSIM" run "$tmp/dp.yaml" --quiet $lay --set simulation.share_replicas=false \
        --out "$tmp/dp-all" || fail "dp run, every rank ($lay)"
    grep -q '"replicas_simulated": 1,\?$' "$tmp/dp-share/summary.json" ||
        fail "dp replicas not shared ($lay)"
    for f in trace.json memory.csv; do
        cmp -s "$tmp/dp-share/$f" "$tmp/dp-all/$f" || fail "shared dp replicas: $f differs ($lay)"
    done
    sed '/replicas_simulated/d' "$tmp/dp-share/summary.json" >"$tmp/dp-a"
    sed '/replicas_simulated/d' "$tmp/dp-all/summary.json" >"$tmp/dp-b"
    cmp -s "$tmp/dp-a" "$tmp/dp-b" || fail "shared dp replicas: summary differs ($lay)"
done

# parallel.ring_select: simulate runs both rings and keeps the faster: its
# makespan is the smaller one, and the run matches the winner run alone
cat >"$tmp/rs.yaml" <<'YAML'
model: llama-3.1-70b
platform: {name: h200-sxm-8, nodes: 2}
precision: {weights: fp8}
parallel: {tp: 8, sp: 2, kv_storage: by_position, exchange: ring, ring_select: simulate}
requests: [{prompt_tokens: 8192, cached_tokens: 24576}]
YAML
"$CPSIM" run "$tmp/rs.yaml" --quiet --trace none --out "$tmp/rs" || fail "ring_select simulate"
num() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$tmp/rs/summary.json" | head -1; }
picked=$(sed -n 's/.*"picked": "\([a-z_]*\)".*/\1/p' "$tmp/rs/summary.json")
awk -v m="$(num makespan_s)" -v kv="$(num pass_kv_makespan_s)" -v q="$(num pass_q_makespan_s)" \
    'BEGIN { b = kv < q ? kv : q; exit !(m == b && kv > 0 && q > 0) }' ||
    fail "ring_select simulate: makespan $(num makespan_s) is not the faster ring's"
grep -q "\"ring\": \"$picked\"" "$tmp/rs/summary.json" ||
    fail "ring_select simulate: the request does not say it ran $picked"

# folding identical layers changes nothing in the results
"$CPSIM" run --quiet --set simulation.fold_layers=true --out "$tmp/fold" || fail "folded run"
cmp -s "$tmp/out/summary.json" "$tmp/fold/summary.json" || fail "folded run differs"

expect 0 "resolved" -- "$CPSIM" validate "$top_srcdir/workloads/default.yaml"
expect 0 '"schema": "cpsim.plan/1"' -- "$CPSIM" plan "$top_srcdir/workloads/default.yaml" --json
expect 0 "qkv_proj" -- "$CPSIM" plan "$top_srcdir/workloads/default.yaml"
# the listing has every layer unless the workload asks for the folded form
"$CPSIM" plan "$top_srcdir/workloads/default.yaml" --json | grep -q '"regions"' &&
    fail "cpsim plan --json: folded without simulation.fold_layers"
"$CPSIM" plan "$top_srcdir/workloads/default.yaml" --json --set simulation.fold_layers=true |
    grep -q '"regions"' || fail "cpsim plan --json: not folded with simulation.fold_layers"
touch "$tmp/afile"
expect 2 "not a directory" -- "$CPSIM" run --out "$tmp/afile" --quiet

# the bad-input corpus: every case exits as it says, with its message
ncase=0
for f in "$top_srcdir"/tests/bad/*.yaml; do
    ncase=$((ncase + 1))
    code=$(sed -n 's/^# expect-exit: *//p' "$f" | head -n 1)
    set --
    while IFS= read -r s; do [ -n "$s" ] && set -- "$@" --set "$s"; done <<EOT
$(sed -n 's/^# set: *//p' "$f")
EOT
    "$CPSIM" validate "$f" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
    got=$?
    [ "$got" -eq "${code:-2}" ] || fail "$f: exit $got, expected ${code:-2}: $(cat "$tmp/stderr")"
    [ "$got" -ge 128 ] && fail "$f: crashed with signal $((got - 128))"
    sed -n 's/^# expect: *//p' "$f" | while IFS= read -r want; do
        grep -qF -- "$want" "$tmp/stderr" ||
            echo "FAIL: $f: message lacks \"$want\": $(cat "$tmp/stderr")"
    done | grep FAIL && fails=$((fails + 1))
done
[ "$ncase" -ge 25 ] || fail "bad-input corpus has only $ncase cases"

# calibration tables that would change answers without a word are refused:
# a copy of the h200 profile in a data directory of its own, spoilt a table
# at a time
dd="$tmp/datadir"
mkdir -p "$dd/platforms/calibration"
ln -s "$top_srcdir/models" "$dd/models"
ln -s "$top_srcdir/workloads" "$dd/workloads"
for f in "$top_srcdir"/platforms/*.yaml; do ln -s "$f" "$dd/platforms/"; done
prof="$dd/platforms/calibration/h200"
spoil() { # TABLE MESSAGE AWK-PROGRAM: rewrite TABLE.csv, expect MESSAGE, restore
    rm -rf "$prof" && cp -r "$top_srcdir/platforms/calibration/h200" "$prof"
    awk -F, -v OFS=, "$3" "$top_srcdir/platforms/calibration/h200/$1.csv" >"$prof/$1.csv"
    expect 2 "$2" -- env CPSIM_DATADIR="$dd" "$CPSIM" run --quiet --platform h200-sxm-8 \
        --out "$tmp/spoilt"
    # validate reads every table run reads
    expect 2 "$2" -- env CPSIM_DATADIR="$dd" "$CPSIM" validate --platform h200-sxm-8 \
        "$top_srcdir/workloads/default.yaml"
}
spoil nccl "nccl.csv has no data rows" 'NR == 1'
spoil nccl "nccl.csv:2:32: time_us: expected a number in (0, 1e9], got 1e+308" \
    'NR == 2 { $7 = "1e308" } { print }'
spoil overlap "overlap.csv has no data rows" 'NR == 1'
spoil overlap "overlap.csv:3:26: expected a number in (0, 1e+06], got -31" \
    'NR == 3 { $3 = "-31" } { print }'
spoil gemm "gemm.csv has no data rows" 'NR == 1'

# ---- a calibration profile as a folder of the user's, by path ------------------
# the preset's copy naming a copy of its profile beside it (relative to the
# platform file) gives the preset's answer
mkdir -p "$tmp/mine"
cp -r "$top_srcdir/platforms/calibration/h200" "$tmp/mine/prof"
sed 's/^  calibration: h200/  calibration: .\/prof/' "$top_srcdir/platforms/h200-sxm-8.yaml" \
    >"$tmp/mine/h200-mine.yaml"
grep -q 'calibration: ./prof' "$tmp/mine/h200-mine.yaml" || fail "the preset copy names no ./prof"
expect 0 "" -- "$CPSIM" run --quiet --platform "$tmp/mine/h200-mine.yaml" --out "$tmp/mine/o1"
expect 0 "" -- "$CPSIM" run --quiet --platform h200-sxm-8 --out "$tmp/mine/o2"
[ "$(grep '"ttft_s"' "$tmp/mine/o1/summary.json" | head -1)" = \
  "$(grep '"ttft_s"' "$tmp/mine/o2/summary.json" | head -1)" ] ||
    fail "a profile by path priced otherwise than the bundled one"
rm "$tmp/mine/prof/machine.json"
expect 2 "prof/machine.json" -- "$CPSIM" run --quiet --platform "$tmp/mine/h200-mine.yaml" \
    --out "$tmp/mine/o3"

# ---- messages of bad bytes and long paths ------------------------------------
# a byte that is not UTF-8 is written as \xNN, never echoed raw
expect 2 'unknown key "t\xe9" in parallel' -- "$CPSIM" validate \
    "$top_srcdir/workloads/default.yaml" --set "$(printf 'parallel.t\351=3')"
grep -q "$(printf '\351')" "$tmp/stderr" && fail "a raw non-UTF-8 byte in a message"
# an --out too long for the files inside it: refused whole, nothing made, the
# reason kept in the message
long="$tmp/$(printf '%0300d' 0)"
expect 2 "a folder name of 300 bytes; a name takes at most 255" -- \
    "$CPSIM" run --quiet --out "$long/x"
[ -e "$long" ] && fail "a refused --out left folders"
longer="$tmp/$(printf '%0200d/' $(seq 1 20))"
expect 2 "bytes; cpsim writes into folders of 1 to 3840 bytes" -- \
    "$CPSIM" run --quiet --out "$longer"
[ -e "$tmp/$(printf '%0200d' 1)" ] && fail "a refused --out left folders"

# ---- large runs and the command line's conventions (issue 28 part 7) ----------
# cpsim help [COMMAND] is --help, byte for byte
"$CPSIM" help >"$tmp/h1" && "$CPSIM" --help >"$tmp/h2" && cmp -s "$tmp/h1" "$tmp/h2" ||
    fail "cpsim help differs from cpsim --help"
for c in run validate plan memory sweep plot; do
    "$CPSIM" help $c >"$tmp/h1" && "$CPSIM" $c --help >"$tmp/h2" && cmp -s "$tmp/h1" "$tmp/h2" ||
        fail "cpsim help $c differs from cpsim $c --help"
done
expect 2 'unknown command "rnu" (did you mean "run"?)' -- "$CPSIM" help rnu
# -o DIR is --out DIR; "--" ends the options, so a workload may begin with '-'
mkdir -p "$tmp/dash"
cp "$top_srcdir/workloads/default.yaml" "$tmp/dash/-weird.yaml"
in_dash() { # the command line "$@" run in $tmp/dash
    sh -c 'cd "$1" && shift && exec "$@"' sh "$tmp/dash" "$@"
}
expect 0 "" -- in_dash "$CPSIM" run -q -o o1 -- -weird.yaml
for f in summary.json trace.json memory.csv; do
    [ -s "$tmp/dash/o1/$f" ] || fail "run -o o1 -- -weird.yaml did not write $f"
done
expect 2 "unknown option -w" -- in_dash "$CPSIM" run -q -o o2 -weird.yaml
expect 2 'unexpected argument "-q"' -- in_dash "$CPSIM" run -o o2 -- -weird.yaml -q
[ -e "$tmp/dash/o2" ] && fail "a refused run created its output directory"
# "-": the workload from standard input, the same outputs as from its file
"$CPSIM" run -q -o "$tmp/dash/o3" - <"$top_srcdir/workloads/default.yaml" ||
    fail "run - (standard input) failed"
"$CPSIM" run -q -o "$tmp/dash/o4" "$top_srcdir/workloads/default.yaml" || fail "run failed"
for f in trace.json memory.csv; do
    cmp -s "$tmp/dash/o3/$f" "$tmp/dash/o4/$f" || fail "run - wrote another $f than its file"
done
grep -q '"workload": "<stdin>"' "$tmp/dash/o3/summary.json" || fail "run -: workload unnamed"
grep -v '"workload"' "$tmp/dash/o3/summary.json" >"$tmp/s3"
grep -v '"workload"' "$tmp/dash/o4/summary.json" >"$tmp/s4"
cmp -s "$tmp/s3" "$tmp/s4" || fail "run - gave another summary than its file"
printf 'model: qwen3-omni-30b-a3b-thinker\nparallel:\n  tq: 8\n' >"$tmp/dash/bad.yaml"
expect 2 '<stdin>:3:3: unknown key "tq" in parallel' -- \
    sh -c 'exec "$1" validate - <"$2"' sh "$CPSIM" "$tmp/dash/bad.yaml"
# the rank table: the 8 identical ranks of the default run fold into one row,
# --all-ranks prints each
"$CPSIM" run -o "$tmp/dash/o5" >"$tmp/t1" || fail "run failed"
grep -q '^ 0-7 .*  (8 identical)$' "$tmp/t1" || fail "8 ranks not folded: $(cat "$tmp/t1")"
[ "$(grep -c '^ *[0-9][0-9-]* *[0-9]*\.[0-9]\{4\} ' "$tmp/t1")" -eq 1 ] ||
    fail "the folded table has more than one rank row"
"$CPSIM" run --all-ranks -o "$tmp/dash/o5" >"$tmp/t2" || fail "run --all-ranks failed"
for r in 0 1 2 3 4 5 6 7; do
    grep -q "^   $r  *[0-9]*\.[0-9]\{4\} " "$tmp/t2" || fail "--all-ranks: no row of rank $r"
done
grep -q identical "$tmp/t2" && fail "--all-ranks folded rows"
# memory.csv: the 8 alike ranks share their rows (ranks 0-7), --all-ranks writes each rank's
[ "$(tail -n +2 "$tmp/dash/o5/memory.csv" | cut -d, -f1 | sort -u | tr '\n' ' ')" = \
    "0 1 2 3 4 5 6 7 " ] || fail "--all-ranks: memory.csv lacks a rank's rows"
"$CPSIM" run -o "$tmp/dash/o6" -q 2>/dev/null || fail "run failed"
[ "$(tail -n +2 "$tmp/dash/o6/memory.csv" | awk -F, '{print $1 "/" $NF}' | sort -u)" = "0/0-7" ] ||
    fail "memory.csv rows not shared: $(sed -n 2p "$tmp/dash/o6/memory.csv")"
each=$(($(wc -l <"$tmp/dash/o5/memory.csv") - 1))
shared=$(($(wc -l <"$tmp/dash/o6/memory.csv") - 1))
[ "$each" -eq $((8 * shared)) ] ||
    fail "shared memory.csv is not an eighth of the per-rank one"
# the default trace by size: under a bound the full trace passes, the steps
# trace, said on the console and in the summary; --trace full restores every
# event, and the estimate is within 10 % of the full trace's bytes
CPSIM_TRACE_AUTO_MB=1 "$CPSIM" run -o "$tmp/dash/o6" >"$tmp/t3" || fail "run (bound 1 MB) failed"
grep -q '^trace: .* events would write ~[0-9]* MB (more than 1 MB); wrote step-level detail' \
    "$tmp/t3" || fail "the steps trace chosen by size is unsaid: $(cat "$tmp/t3")"
grep -q '(use --trace full for every event)' "$tmp/t3" || fail "the flag that restores is unnamed"
grep -q '"selection":{"trace":"steps"}' "$tmp/dash/o6/trace.json" || fail "not the steps trace"
grep -q '"chosen": "by size"' "$tmp/dash/o6/summary.json" || fail "summary: no trace_detail"
grep -q '"trace: .*wrote step-level detail' "$tmp/dash/o6/summary.json" || fail "no warning"
CPSIM_TRACE_AUTO_MB=1 "$CPSIM" run -q --trace full -o "$tmp/dash/o7" || fail "--trace full"
cmp -s "$tmp/dash/o7/trace.json" "$tmp/dash/o4/trace.json" || fail "--trace full: not every event"
grep -q trace_detail "$tmp/dash/o7/summary.json" && fail "--trace full: a trace_detail"
grep -q trace_detail "$tmp/dash/o4/summary.json" && fail "under 64 MB: a trace_detail"
est=$(sed -n 's/.*"full_bytes_estimate": \([0-9.e+]*\).*/\1/p' "$tmp/dash/o6/summary.json")
size=$(wc -c <"$tmp/dash/o7/trace.json")
awk -v e="$est" -v s="$size" 'BEGIN { exit !(e > 0.9 * s && e < 1.1 * s) }' ||
    fail "trace estimate $est bytes against $size written"
# --trace-layers alone asks for ops, --plots draws the timeline from them: full
CPSIM_TRACE_AUTO_MB=1 expect 0 "" -- "$CPSIM" run -q --trace-layers 2-3 -o "$tmp/dash/o10"
grep -q '"selection":{"trace":"full","layers":"2-3"}' "$tmp/dash/o10/trace.json" ||
    fail "--trace-layers without --trace: not the full trace"
if command -v gnuplot >/dev/null 2>&1; then
    CPSIM_TRACE_AUTO_MB=1 expect 0 "" -- "$CPSIM" run -q --plots -o "$tmp/dash/o11"
    grep -q '"selection"' "$tmp/dash/o11/trace.json" && fail "--plots: not the full trace"
fi
CPSIM_TRACE_AUTO_MB=1 expect 0 "" -- "$CPSIM" run -q -o "$tmp/dash/o8"
[ -s "$tmp/stdout" ] && fail "--quiet printed the trace line"
CPSIM_TRACE_AUTO_MB=lots expect 2 "CPSIM_TRACE_AUTO_MB=lots: expected" -- \
    "$CPSIM" run -q -o "$tmp/dash/o9"
[ -e "$tmp/dash/o9" ] && fail "a refused bound created the output directory"

[ "$fails" -eq 0 ] && echo "cli.sh: all checks passed ($ncase corpus cases)"
[ "$fails" -eq 0 ]
