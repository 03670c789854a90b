# testlib.sh: the set-up the end-to-end shell tests share (sourced after
# setting `name`): $CPSIM, the binary as an absolute path; $tmp, a private
# folder removed at exit; fail MESSAGE, which prints and counts into $fails.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
CPSIM="$top_builddir/cpsim"
case $CPSIM in /*) ;; *) CPSIM="$PWD/$CPSIM" ;; esac
tmp=$(mktemp -d "/tmp/cpsim-$name-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
