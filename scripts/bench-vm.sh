#!/usr/bin/env bash
# What a `numalab vm` guest with the host's filesystem as its root costs:
#
# 1. boot-to-first-output of `numalab vm --nodes 2 --cpus-per-node 2 --
#    topology` with the 9p root (`--rootfs host`), as numalab measures it
#    (its last stderr line), RUNS times; the initramfs-only guest once
#    beside it for comparison;
# 2. `make -j2` of a small C project (20 files) on the host and in a 2-node,
#    2-vCPU guest building the same tree from a --share'd directory, each
#    three times with `make clean` before every build (numalab run command
#    --runs 3 --prepare 'make clean'), side by side in one run.
#
#   scripts/bench-vm.sh [RUNS]
#
# NUMALAB=path/to/numalab uses that binary; by default the release build
# (built if needed). Not a test: it prints figures. The load average is
# printed too: TCG guests share the host's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
if [[ -n "${NUMALAB:-}" ]]; then
    exe=$NUMALAB
else
    target=${CARGO_TARGET_DIR:-target}
    cargo build --release --quiet -p numalab
    exe="$target/release/numalab"
fi
exe=$(realpath "$exe")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
spec=(--nodes 2 --cpus-per-node 2 --mem-per-node 512M)
echo "host: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $exe ($(du -h "$exe" | cut -f1))"

first_output() { # prints the figure of one run, or fails with its last line
    local line first
    line=$("$exe" vm --quiet --results "$work/res" "${spec[@]}" "$@" -- topology 2>&1 >/dev/null | tail -1)
    first=$(sed -n 's/.*first output at \([0-9.]*\) s.*/\1/p' <<<"$line")
    if [[ -z "$first" ]]; then
        echo "failed: $line" >&2
        return 1
    fi
    echo "$first"
}

echo
echo "## boot-to-first-output"
echo "command: $exe vm --quiet ${spec[*]} --rootfs host -- topology"
# One untimed run fills the decompressed-kernel cache.
first_output --rootfs host >/dev/null || true
figures=()
for i in $(seq 1 "$runs"); do
    f=$(first_output --rootfs host)
    figures+=("$f")
    echo "run $i: first output at $f s"
done
printf '%s\n' "${figures[@]}" | sort -n | awk '
    { v[NR] = $1 }
    END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "9p root: boot-to-first-output over %d runs: median %.1f s, min %.1f s, max %.1f s\n", NR, m, v[1], v[NR]
    }'
echo "initramfs only (--rootfs initramfs), once: first output at $(first_output --rootfs initramfs) s"

echo
echo "## make -j2 of a 20-file C project, host vs guest"
proj="$work/proj"
mkdir -p "$proj"
objs=()
main='#include <stdio.h>'$'\n'
for i in $(seq 0 18); do
    cat >"$proj/f$i.c" <<EOF
#include <string.h>
#include <stdlib.h>
struct item$i { int key; double value; char name[32]; };
static int cmp$i(const void *a, const void *b) {
    const struct item$i *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}
double f$i(int n) {
    struct item$i *v = calloc((size_t)n, sizeof *v);
    double s = 0;
    for (int j = 0; j < n; j++) { v[j].key = (j * 7919 + $i) % n; v[j].value = j * 0.5; memset(v[j].name, 'a' + j % 26, 31); }
    qsort(v, (size_t)n, sizeof *v, cmp$i);
    for (int j = 0; j < n; j++) s += v[j].value * v[j].key;
    free(v);
    return s;
}
EOF
    main+="double f$i(int);"$'\n'
    objs+=("f$i.o")
done
main+='int main(void) { double s = 0;'$'\n'
for i in $(seq 0 18); do main+="  s += f$i(1000);"$'\n'; done
main+='  printf("%f\n", s); return 0; }'$'\n'
printf '%s' "$main" >"$proj/main.c"
objs+=(main.o)
printf 'prog: %s\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -g -c -o $@ $<\nclean:\n\trm -f prog *.o\n' "${objs[*]}" >"$proj/Makefile"

elapsed() { # mean elapsed_s of the records in $1
    jq -s '[.[].metrics.elapsed_s.value] | (add / length)' "$1"/*.json
}
cd "$proj"
echo "host:  $exe run command --runs 3 --prepare 'make clean' -- make -j2"
"$exe" run command --runs 3 --prepare 'make clean' --results "$work/host" -- make -j2 >/dev/null 2>&1
echo "guest: $exe vm --quiet ${spec[*]} --share $proj -- run command --runs 3 --prepare 'make clean' -- make -j2"
t0=$(date +%s.%N)
"$exe" vm --quiet "${spec[@]}" --share "$proj" --results "$work/guest" \
    -- run command --runs 3 --prepare 'make clean' -- make -j2 >/dev/null 2>&1
t1=$(date +%s.%N)
h=$(elapsed "$work/host")
g=$(elapsed "$work/guest")
awk -v h="$h" -v g="$g" -v w="$(echo "$t1 - $t0" | bc)" 'BEGIN {
    printf "make -j2, mean of 3 builds: host %.2f s, guest (TCG, 9p share) %.2f s: %.0fx; the whole guest invocation (boot, 3 builds, power-off) %.1f s\n", h, g, g / h, w
}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
