#!/bin/sh
# install.sh: `make install` carries every bundled file the binary needs: the
# installed binary runs the default workload from the installed data alone;
# the README's documented paths (workloads/examples/..., workloads/sweeps/...)
# work from another directory through the installed data; the README, the
# license and the man page are installed.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=$(mktemp -d /tmp/cpsim-inst-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
make -s -C "$top_builddir" install DESTDIR="$tmp/root" >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; exit 1; }
bin=$(find "$tmp/root" -type f -name cpsim -perm -u+x | head -n 1)
data=$(find "$tmp/root" -type d -path '*/share/cpsim' | head -n 1)
[ -n "$bin" ] && [ -n "$data" ] || { echo "FAIL: install tree lacks the binary or data"; exit 1; }
CPSIM_DATADIR="$data"
export CPSIM_DATADIR
"$bin" run --quiet --out "$tmp/out" || fail "installed run"
[ -s "$tmp/out/summary.json" ] || fail "no summary"
find "$tmp/root" -name cpsim.1 | grep -q . || fail "man page not installed"
for f in README.md LICENSE docs/timeline-default.png; do
    find "$tmp/root" -path "*/share/doc/cpsim/$f" | grep -q . || fail "$f not installed in docdir"
done

# every workload, example and sweep of the source tree is installed
for f in $(cd "$top_srcdir" && find workloads models/configs platforms -type f \
               \( -name '*.yaml' -o -name '*.json' -o -name '*.csv' \) | sort); do
    [ -f "$data/$f" ] || fail "$f is not installed (add it to nobase_dist_pkgdata_DATA)"
done

# the README's paths, from a directory that holds none of them
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
"$bin" run workloads/examples/sp-ring.yaml --quiet --out "$tmp/ring" \
    --set requests.0.prompt_tokens=8192 --set requests.1.decode_tokens=2 ||
    fail "installed run of workloads/examples/sp-ring.yaml"
grep -q "\"workload\": \"$data/workloads/examples/sp-ring.yaml\"" "$tmp/ring/summary.json" ||
    fail "sp-ring.yaml was not taken from the installed data"
"$bin" validate --platform workloads/examples/platform-mi300x.yaml \
    workloads/examples/sp-ulysses.yaml >/dev/null || fail "installed --platform example path"
"$bin" sweep workloads/sweeps/thinker-sweep.yaml --list >"$tmp/list" ||
    fail "installed sweep --list of workloads/sweeps/thinker-sweep.yaml"
[ "$(wc -l <"$tmp/list")" -eq 1120 ] ||
    fail "thinker-sweep lists $(wc -l <"$tmp/list") points, not 1120"
"$bin" sweep workloads/sweeps/glm51-dsa-cp-sweep.yaml --list >/dev/null ||
    fail "installed sweep --list of workloads/sweeps/glm51-dsa-cp-sweep.yaml"
[ -e "$tmp/elsewhere/out" ] && fail "--list wrote an output folder"
"$bin" validate workloads/examples/nope.yaml >/dev/null 2>"$tmp/err" && fail "a missing file ran"
grep -q "workloads/examples/nope.yaml" "$tmp/err" ||
    fail "a missing file is not named: $(cat "$tmp/err")"

[ "$fails" -eq 0 ] &&
    echo "install.sh: installed binary runs from installed data, documented paths resolve"
[ "$fails" -eq 0 ]
