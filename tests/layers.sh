#!/bin/sh
# layers.sh: the library's floors (README "Layout of the repository"): a file
# includes its own folder and the floors below it, never one above.
#   base < platforms < models < collectives < workloads < sim/engine < reports
#        < sim/serve < sim/driver < sim/sweep < sim/cli
# and inside models/ (models/README.md): its top files < attn < layers
#        < encoder < exchange < seqpar < build.  A path's floor is the last (the most
#        specific) folder of the list it lies in.
: "${top_srcdir:=.}"
cd "$top_srcdir" || exit 1
floors="base platforms models models/attn models/layers models/encoder models/exchange models/seqpar
models/build collectives workloads sim/engine reports sim/serve sim/driver sim/sweep sim/cli"
floor_of() { # the floor index of a path (folder/...), -1 when not a library floor
    i=0
    found=-1
    for f in $floors; do
        case $1 in "$f"/*) found=$i ;; esac
        i=$((i + 1))
    done
    echo $found
}
bad=0
for src in $(find base platforms models collectives workloads sim reports \
    -name '*.[ch]' | sort); do
    mine=$(floor_of "$src")
    [ "$mine" -ge 0 ] || continue
    for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$src"); do
        theirs=$(floor_of "$inc")
        if [ "$theirs" -gt "$mine" ]; then
            echo "$src includes $inc, a floor above its own"
            bad=$((bad + 1))
        fi
    done
done
if [ "$bad" -gt 0 ]; then
    echo "layers.sh: $bad includes go up"
    exit 1
fi
echo "layers.sh: every include goes down or sideways"
