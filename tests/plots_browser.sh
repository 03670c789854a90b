#!/bin/sh
# plots_browser.sh: the plots' index.html of a run and of a sweep rendered
# in headless Chromium: every image on the page loads at its declared size,
# and every SVG the page links loads as an image.  The page is checked as it
# is, with a script appended to a copy of it beside the original (so that
# its relative links resolve the same) that writes what loaded into the
# DOM, which Chromium prints (--dump-dom).
# Exit 77 (skipped) when Chromium is missing (Debian: chromium, which
# ./quickstart check installs).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
case $CPSIM in /*) ;; *) CPSIM="$PWD/$CPSIM" ;; esac
browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v $b >/dev/null 2>&1; then
        browser=$b
        break
    fi
done
if [ -z "$browser" ]; then
    echo "SKIP: Chromium is not installed (Debian package chromium; ./quickstart check installs it)"
    exit 77
fi
tmp=$(mktemp -d /tmp/cpsim-browser-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$CPSIM" run --quiet --plots --out "$tmp/run" || fail "run exited $?"
"$CPSIM" sweep "$top_srcdir/workloads/sweeps/thinker-cp-demo.yaml" -j 2 --quiet --plots \
    --out "$tmp/demo" || fail "sweep exited $?"

# the check, once the page and its images have loaded: data-check="PNG
# loaded/total SVG loaded/total" and data-bad="the sources that did not"
cat >"$tmp/check.js" <<'JS'
<script>
window.addEventListener("load", function () {
    var imgs = Array.prototype.slice.call(document.images), bad = [], ok = 0;
    imgs.forEach(function (im) {
        if (im.complete && im.naturalWidth == im.getAttribute("width") &&
            im.naturalHeight == im.getAttribute("height"))
            ok++;
        else
            bad.push(im.getAttribute("src") + ":" + im.naturalWidth + "x" + im.naturalHeight);
    });
    var svgs = [];
    document.querySelectorAll("a[href$='.svg']").forEach(function (a) {
        if (svgs.indexOf(a.getAttribute("href")) < 0)
            svgs.push(a.getAttribute("href"));
    });
    Promise.all(svgs.map(function (h) {
        return new Promise(function (done) {
            var im = new Image();
            im.onload = function () { done(im.naturalWidth > 0 ? 1 : (bad.push(h), 0)); };
            im.onerror = function () { bad.push(h); done(0); };
            im.src = h;
        });
    })).then(function (r) {
        var svg_ok = r.reduce(function (a, b) { return a + b; }, 0);
        document.body.setAttribute("data-check", "PNG " + ok + "/" + imgs.length + " SVG " +
                                   svg_ok + "/" + svgs.length);
        document.body.setAttribute("data-bad", bad.join(" "));
    });
});
</script>
JS
for d in "$tmp/run/plots" "$tmp/demo/plots"; do
    [ -s "$d/index.html" ] || { fail "$d/index.html missing"; continue; }
    sed '/<\/body>/{
        r '"$tmp/check.js"'
    }' "$d/index.html" >"$d/browser-check.html"
    n=$(grep -c '<img ' "$d/index.html")
    # a profile of its own: no state shared with another run or user
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$tmp/profile" --virtual-time-budget=10000 \
        --dump-dom "file://$d/browser-check.html" >"$tmp/dom.html" 2>"$tmp/browser.err"
    rc=$?
    [ $rc -eq 0 ] || fail "$browser exited $rc on $d: $(tail -3 "$tmp/browser.err")"
    got=$(grep -o 'data-check="[^"]*"' "$tmp/dom.html")
    [ "$got" = "data-check=\"PNG $n/$n SVG $n/$n\"" ] ||
        fail "$d/index.html in $browser: ${got:-no result} ($(grep -o 'data-bad="[^"]*"' \
            "$tmp/dom.html")), expected $n of $n images of each kind"
done

[ $fails -eq 0 ] || exit 1
exit 0
