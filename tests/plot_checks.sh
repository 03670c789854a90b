# plot_checks.sh: shell functions the plot tests share (sourced by
# tests/sweep.sh, tests/plots.sh and tests/plots_browser.sh); each reports
# through the caller's fail().

# expect_refusal MESSAGE COMMAND...: the command exits 2 saying MESSAGE (its
# output goes to the caller's $tmp/r.out)
expect_refusal() {
    msg=$1; shift
    "$@" >"$tmp/r.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "$*: exited $rc, expected 2"
    grep -qF -- "$msg" "$tmp/r.out" || fail "$*: lacks \"$msg\": $(head -c 300 "$tmp/r.out")"
}

# check_png FILE W H / check_svg FILE W H: the format and the canvas size
check_png() {
    [ -s "$1" ] || { fail "$1 missing"; return; }
    sig=$(od -An -tx1 -N8 "$1" | tr -d ' \n')
    [ "$sig" = 89504e470d0a1a0a ] || fail "$1: not a PNG"
    [ "$(od -An -tx1 -j12 -N4 "$1" | tr -d ' \n')" = 49484452 ] || fail "$1: no IHDR"
    wh=$(od -An -tu1 -j16 -N8 "$1" |
        awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4,
                     $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }')
    [ "$wh" = "$2 $3" ] || fail "$1: $wh, expected $2 $3"
}
check_svg() {
    [ -s "$1" ] || { fail "$1 missing"; return; }
    root=$(tr '\n' ' ' <"$1" | grep -o '<svg[^>]*>' | head -1)
    case $root in
        *"width=\"$2\""*"height=\"$3\""*) ;;
        *) fail "$1: root element $root, expected width $2 height $3" ;;
    esac
    tail -c 20 "$1" | grep -q '</svg>' || fail "$1: not closed"
}
# check_pic DIR NAME W H: NAME.png and NAME.svg of that size, shown and
# linked by DIR/index.html
check_pic() {
    check_png "$1/$2.png" "$3" "$4"
    check_svg "$1/$2.svg" "$3" "$4"
    grep -q "src=\"$2.png\" width=\"$3\" height=\"$4\"" "$1/index.html" ||
        fail "$1/index.html does not show $2.png at $3 x $4"
    grep -q "href=\"$2.svg\"" "$1/index.html" || fail "$1/index.html does not link $2.svg"
}
# near A B: equal to a relative 1e-6 (the data files print 9 digits)
near() {
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a
                                     exit !(d <= 1e-6 * m || d < 1e-12) }'
}
# check_index DIR WORDS...: every link and image of DIR/index.html names a
# file of DIR, every figure has a caption that holds each of WORDS (the
# workload and platform), and links its PNG and its SVG
check_index() {
    d=$1
    shift
    [ -s "$d/index.html" ] || { fail "$d/index.html missing"; return; }
    links=$(grep -o '\(href\|src\)="[^"]*"' "$d/index.html" | sed 's/^[a-z]*="\(.*\)"$/\1/' |
        sort -u)
    [ -n "$links" ] || fail "$d/index.html links nothing"
    for l in $links; do
        case $l in
            */* | *:*) fail "$d/index.html: $l is not a file of the plots folder" ;;
            *) [ -f "$d/$l" ] || fail "$d/index.html: link $l does not resolve" ;;
        esac
    done
    figs=$(grep -c '<figure id=' "$d/index.html")
    caps=$(grep -c '<figcaption>' "$d/index.html")
    [ "$figs" -gt 0 ] && [ "$figs" -eq "$caps" ] ||
        fail "$d/index.html: $figs figures, $caps captions"
    for w in "$@"; do
        n=$(grep '<figcaption>' "$d/index.html" | grep -cF -- "$w")
        [ "$n" -eq "$figs" ] || fail "$d/index.html: $n of $figs captions name $w"
    done
    for f in $(grep -o '<figure id="[^"]*"' "$d/index.html" | sed 's/.*id="\(.*\)"/\1/'); do
        for e in png svg; do
            grep -q "href=\"$f.$e\"" "$d/index.html" || fail "$d/index.html: $f lacks its $e"
        done
    done
}
