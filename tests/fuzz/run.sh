#!/bin/sh
# run.sh: build the libFuzzer targets of tests/fuzz and run each for
# FUZZ_SECONDS (make fuzz; clang with ASan and UBSan).
#
#   tests/fuzz/run.sh SRCDIR BUILDDIR SECONDS [TARGET...]
#
# The library sources are compiled again with clang into BUILDDIR/fuzz/obj;
# each target's corpus grows in BUILDDIR/fuzz/corpus/TARGET, seeded from the
# project's own inputs (examples, presets, the bad-input corpus); a crash,
# leak or hang is kept in BUILDDIR/fuzz/crashes/TARGET and fails the run.
# Prints per target: executions, CPU seconds, corpus size, findings.
set -u
src=$1; build=$2; seconds=$3; shift 3
targets=${*:-"workload config quant sweep where platform xml csv trace machine"}
# the engine: libFuzzer (clang) by default; AFL++ with FUZZ_ENGINE=afl (Debian:
# apt-get install afl++), whose afl-clang-fast builds the same targets
# (-fsanitize=fuzzer links its libFuzzer-compatible driver)
engine=${FUZZ_ENGINE:-libfuzzer}
case $engine in
libfuzzer) CC=${FUZZ_CC:-clang} ;;
afl) CC=${FUZZ_CC:-afl-clang-fast} ;;
*) echo "make fuzz: FUZZ_ENGINE is libfuzzer or afl, not $engine" >&2; exit 2 ;;
esac
command -v "$CC" >/dev/null 2>&1 ||
    { echo "make fuzz: needs $CC (Debian: apt-get install clang, or afl++)" >&2; exit 1; }
[ "$engine" != afl ] || command -v afl-fuzz >/dev/null 2>&1 ||
    { echo "make fuzz: FUZZ_ENGINE=afl needs afl-fuzz (Debian: afl++)" >&2; exit 1; }
f="$build/fuzz"
mkdir -p "$f/obj" "$f/seed"
flags="-g -O1 -std=c11 -D_GNU_SOURCE -I$src -DCP_SRCDIR=\"$src\" -DCP_PKGDATADIR=\"$src\"
  -DPACKAGE_VERSION=\"${CP_VERSION:-fuzz}\"
  $(pkg-config --cflags simgrid jansson yaml-0.1 zlib)
  -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
flags=$(echo $flags)
libs="$(pkg-config --libs simgrid jansson yaml-0.1 zlib) -lm"

# the library, once per make fuzz (two compilers at a time)
sources=$(sed -n '/^libcpsim_a_SOURCES/,/^$/p' "$src/Makefile.am" | tr ' \\\t' '\n\n\n' |
    grep '\.c$')
echo "fuzz: compiling $(echo "$sources" | wc -l) library sources with $CC"
rm -f "$f"/obj/*.o
n=0
for s in $sources; do
    $CC $flags -fsanitize=fuzzer-no-link -c "$src/$s" -o "$f/obj/$(echo "$s" | tr / _).o" &
    n=$((n + 1))
    [ $((n % 2)) -ne 0 ] || wait
done
wait
[ "$(ls "$f"/obj/*.o | wc -l)" -eq "$n" ] || { echo "make fuzz: compilation failed" >&2; exit 1; }

# seeds: the project's inputs of each kind
seed() {
    d="$f/seed/$1"; shift
    rm -rf "$d"; mkdir -p "$d"
    for s in "$@"; do [ -f "$s" ] && cp "$s" "$d/"; done
}
seed workload "$src"/workloads/default.yaml "$src"/workloads/examples/*.yaml "$src"/tests/bad/*.yaml
seed config "$src"/models/configs/*.json "$src"/tests/configs/*.json "$src"/tests/bad/configs/*
seed sweep "$src"/workloads/sweeps/*.yaml
seed where "$src"/tests/fuzz/seeds/where/*
seed platform "$src"/platforms/*.yaml "$src"/workloads/examples/platform-*.yaml
seed xml "$src"/tests/platforms/*.xml
seed csv "$src"/platforms/calibration/*/*.csv
seed trace "$src"/tests/fuzz/seeds/trace/*
seed machine "$src"/platforms/calibration/*/machine.json
seed quant
sh "$src/tests/quant/dsa-w8a8-description.sh" 4 1 4 1 >"$f/seed/quant/glm-small.json"

status=0
printf '%-10s %12s %8s %8s %s\n' target executions cpu_s corpus findings
for t in $targets; do
    "$CC" $flags -fsanitize=fuzzer "$src/tests/fuzz/fuzz_$t.c" "$src/tests/fuzz/fuzz_main.c" \
        "$f"/obj/*.o $libs -o "$f/fuzz_$t" || exit 1
    mkdir -p "$f/corpus/$t" "$f/crashes/$t"
    log="$f/$t.log"
    if [ "$engine" = afl ]; then
        # afl-fuzz keeps its queue and crashes under its own folder
        AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
            /usr/bin/time -f '%U %S' -o "$f/$t.time" afl-fuzz -V "$seconds" -t 10000 \
            -m none -i "$f/seed/$t" -o "$f/afl/$t" -- "$f/fuzz_$t" >"$log" 2>&1
        rc=$?
        st="$f/afl/$t/default/fuzzer_stats"
        echo "stat::number_of_executed_units: $(sed -n 's/^execs_done *: *//p' "$st")" >>"$log"
        cp "$f/afl/$t"/default/crashes/id* "$f/crashes/$t/" 2>/dev/null
        cp "$f/afl/$t"/default/queue/id* "$f/corpus/$t/" 2>/dev/null
    else
        /usr/bin/time -f '%U %S' -o "$f/$t.time" "$f/fuzz_$t" -max_total_time="$seconds" \
            -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
            -artifact_prefix="$f/crashes/$t/" "$f/corpus/$t" "$f/seed/$t" >"$log" 2>&1
        rc=$?
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cpu=$(awk '{ printf "%.0f", $1 + $2 }' "$f/$t.time" 2>/dev/null)
    corpus=$(ls "$f/corpus/$t" | wc -l)
    found=$(ls "$f/crashes/$t" | wc -l)
    printf '%-10s %12s %8s %8s %s\n' "$t" "${runs:-?}" "${cpu:-?}" "$corpus" "$found"
    if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
        status=1
        echo "fuzz: $t: exit $rc; see $log and $f/crashes/$t/" >&2
        grep -m 3 -E "ERROR|SUMMARY|runtime error" "$log" >&2
    fi
done
exit $status
