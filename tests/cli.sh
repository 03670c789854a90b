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
expect 2 'did you mean "run"' -- "$CPSIM" rnu
expect 2 "unknown option --plat" -- "$CPSIM" run --plat x
expect 2 "needs a value" -- "$CPSIM" run --set
expect 2 "expected KEY=VALUE" -- "$CPSIM" run --set parallel.tp
expect 2 "validate needs a WORKLOAD.yaml" -- "$CPSIM" validate
expect 0 "Usage: cpsim" -- "$CPSIM" --help
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
expect 0 "" -- "$CPSIM" run --quiet --cfg=network/model:CM02 --log=root.thres:critical --out "$tmp/q"
[ -s "$tmp/q/summary.json" ] || fail "--quiet run wrote no summary"
[ -s "$tmp/stdout" ] && fail "--quiet printed something"

# a raw SimGrid XML platform, given relative to the current directory
(cd "$top_srcdir" && "$CPSIM" run --quiet --platform tests/platforms/raw-ok.xml \
    --set parallel.tp=2 --set requests.0.prompt_tokens=1024 --out "$tmp/raw") ||
    fail "run on a raw SimGrid XML platform"
grep -q '"platform": "raw-ok.xml"' "$tmp/raw/summary.json" || fail "raw platform not in the summary"

# folding identical layers changes nothing in the results
"$CPSIM" run --quiet --set simulation.fold_layers=true --out "$tmp/fold" || fail "folded run"
cmp -s "$tmp/out/summary.json" "$tmp/fold/summary.json" || fail "folded run differs"

expect 0 "resolved" -- "$CPSIM" validate "$top_srcdir/workloads/default.yaml"
expect 0 '"schema": "cpsim.plan/1"' -- "$CPSIM" plan "$top_srcdir/workloads/default.yaml" --json
expect 0 "qkv_proj" -- "$CPSIM" plan "$top_srcdir/workloads/default.yaml"
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
        grep -qF -- "$want" "$tmp/stderr" || echo "FAIL: $f: message lacks \"$want\": $(cat "$tmp/stderr")"
    done | grep FAIL && fails=$((fails + 1))
done
[ "$ncase" -ge 25 ] || fail "bad-input corpus has only $ncase cases"

[ "$fails" -eq 0 ] && echo "cli.sh: all checks passed ($ncase corpus cases)"
[ "$fails" -eq 0 ]
