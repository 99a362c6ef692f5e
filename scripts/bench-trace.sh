#!/usr/bin/env bash
# Benchmark: what --trace costs. The same runs with and without --trace,
# alternating, REPS times each: numa_test with one task per CPU (its
# elapsed time, from the record), and a fork-heavy command (500 runs of
# /bin/true from a shell loop; its elapsed time). Prints the medians and
# the ratios traced/untraced. Targets: at most 1.02 for numa_test, 1.10
# for the fork-heavy command. A benchmark, not a test: ratios are
# printed, never asserted.
#
# Usage: scripts/bench-trace.sh   (REPS=N, default 7; SIZE=elements per
# numa_test task, default 2000000; NUMALAB=PATH to time that binary
# instead of building this tree's release binary)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-7}
size=${SIZE:-2000000}
if [ -z "${NUMALAB:-}" ]; then
    cargo build --release -q
fi
numalab=$(realpath "${NUMALAB:-${CARGO_TARGET_DIR:-target}/release/numalab}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=$(nproc)
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
elapsed() { # results dir -> elapsed_s of its one record
    python3 -c "import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1]+'/*.json')[0]))['metrics']['elapsed_s']['value'])" "$1"
}
one() { # name trace-flag benchmark args...
    local name=$1 flag=$2 bench=$3; shift 3
    rm -rf "$work/r"
    "$numalab" run "$bench" $flag --quiet --results "$work/r" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    elapsed "$work/r" >>"$work/$name"
}
for i in $(seq "$reps"); do
    one nt_plain "" numa_test --tasks "$n" --size "$size" --disturb none
    one nt_trace --trace numa_test --tasks "$n" --size "$size" --disturb none
    one fk_plain "" command -- sh -c 'for i in $(seq 500); do /bin/true; done'
    one fk_trace --trace command -- sh -c 'for i in $(seq 500); do /bin/true; done'
done
echo "host: $n CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps alternating runs"
printf "%-42s %10s %10s %7s\n" workload "plain(s)" "traced(s)" ratio
for w in "nt:numa_test --tasks $n --size $size --disturb none" "fk:command: 500 x /bin/true from sh"; do
    k=${w%%:*}; label=${w#*:}
    p=$(median <"$work/${k}_plain"); t=$(median <"$work/${k}_trace")
    printf "%-42s %10.3f %10.3f %7.3f\n" "$label" "$p" "$t" "$(echo "scale=4; $t / $p" | bc)"
done
