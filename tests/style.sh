#!/bin/sh
# style.sh: the house rules every C file and script keeps (README "Layout"):
# lines of at most 100 columns, spaces not tabs in C, no trailing blanks, no
# CR, a final newline.  Fails naming file:line.  (No .clang-format: the tree
# is not in any formatter's style, and nothing would enforce one.)
set -u
: "${top_srcdir:=.}"
cd "$top_srcdir" || exit 1
files=$(find collectives models platforms reports sim tests workloads \
    -name '*.[ch]' -o -name '*.sh' | grep -v '/\.' | sort)
[ -n "$files" ] || { echo "style.sh: no sources found under $top_srcdir"; exit 1; }
bad=$(awk '
    length($0) > 100          { print FILENAME ":" FNR ": " length($0) " columns" }
    /\r/                      { print FILENAME ":" FNR ": a carriage return" }
    /[ \t]$/                  { print FILENAME ":" FNR ": trailing blanks" }
    FILENAME ~ /\.[ch]$/ && /\t/ { print FILENAME ":" FNR ": a tab" }
' $files)
for f in $files; do
    [ -s "$f" ] && [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" != '\n' ] &&
        bad="$bad
$f: no final newline"
done
if [ -n "$(echo "$bad" | tr -d '\n')" ]; then
    echo "$bad" | sed '/^$/d' | head -40
    echo "style.sh: $(echo "$bad" | sed '/^$/d' | wc -l) lines break the house rules"
    exit 1
fi
echo "style.sh: $(echo "$files" | wc -l) files keep the house rules"
