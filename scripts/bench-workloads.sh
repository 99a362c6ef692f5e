#!/usr/bin/env bash
# Benchmark: numalab's autonuma workloads against the original pattern.
# For numa01, numa01_THREAD_ALLOC, numa02, numa02_SMT and twohalves, times
# `numalab run BENCH` (the whole command: numalab, its observation at the
# default interval, and its task processes) and scripts/zero-slices.c (the
# original's pattern, compiled here with gcc -O2: the same processes,
# threads, bytes and loops, one first touch, then one memset of each
# thread's slice per loop) side by side, alternating, REPS times each, and
# prints the medians of user and wall time and the ratios numalab/original
# (of the medians, the median of the pairs' ratios, and of the fastest runs).
# Target: user-time ratio <= 1.05 for each workload. Then runs
# scripts/bench-randupdt.sh (numa_test against randupdt.c) unless
# RANDUPDT=0. Ratios are printed, never asserted: this is a benchmark,
# not a test.
#
# Usage: scripts/bench-workloads.sh
#   REPS=N (default 7) runs of each side per workload
#   INTERVAL=S (default auto) numalab's --interval (0: no observation)
#   BYTES1 (default 256M) per process for numa01*; BYTES2 (default 128M)
#   in all for numa02*, twohalves (both over this machine's L3, as the
#   originals' sizes are); LOOPS (default 800, numa02's own) for numa02*
#   and twohalves, LOOPS/4 for numa01* (2 processes of BYTES1: 4x the
#   bytes per loop on a 2-CPU machine)
#   CHUNKS="1M 4M ..." also times numa02's work with each memset split
#   into calls of that size (the cause of numalab's old overhead)
#   NUMALAB=PATH times that numalab binary instead of building this tree's
#   Threads: numa02 one per CPU, the others half as many (twohalves: per
#   set), as numalab's defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-7}
interval=${INTERVAL:-auto}
bytes1=${BYTES1:-256M}
bytes2=${BYTES2:-128M}
loops=${LOOPS:-800}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gcc -O2 -Wall -pthread -o "$work/zero-slices" scripts/zero-slices.c
if [ -z "${NUMALAB:-}" ]; then
    cargo build --release -q
fi
numalab=${NUMALAB:-${CARGO_TARGET_DIR:-target}/release/numalab}

bytes() { # 256M -> bytes
    python3 -c "import sys; s=sys.argv[1]; u={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*u[s[-1]] if s[-1] in u else int(s))" "$1"
}
measure() { # command... -> "user wall" seconds; fails if the command does
    local t
    t=$( { TIMEFORMAT='%U %R'; time "$@" >/dev/null 2>"$work/err"; } 2>&1 ) || {
        echo "failed: $*" >&2
        cat "$work/err" >&2
        return 1
    }
    echo "$t"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

n=$(nproc)
h=$((n / 2 > 0 ? n / 2 : 1))
b1=$(bytes "$bytes1")
b2=$(bytes "$bytes2")
l1=$((loops / 4 > 0 ? loops / 4 : 1))
# name | numalab run arguments | zero-slices PROCS THREADS BYTES LOOPS SHARED
cases=(
    "numa01|numa01 --threads $h --bytes $bytes1 --loops $l1|2 $h $b1 $l1 1"
    "numa01_THREAD_ALLOC|numa01_THREAD_ALLOC --threads $h --bytes $bytes1 --loops $l1|2 $h $b1 $l1 0"
    "numa02|numa02 --threads $n --bytes $bytes2 --loops $loops|1 $n $b2 $loops 0"
    "numa02_SMT|numa02_SMT --threads $h --bytes $bytes2 --loops $loops|1 $h $b2 $loops 0"
    "twohalves|twohalves --threads $h --bytes $bytes2 --iterations $loops|1 $((2 * h)) $b2 $loops 0"
)

echo "host: $n CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$numalab run ... --interval $interval; original pattern: scripts/zero-slices.c (gcc -O2); medians of $reps alternating runs"
echo "user: seconds of user time (median), ratio numalab/original of the medians, pairs: median of the pairs' ratios, min: of the fastest runs; wall: elapsed time, medians"
printf "%-20s %-38s %9s %9s %7s %7s %7s %9s %9s %7s\n" workload "numalab run" orig_user nl_user ratio pairs min orig_wall nl_wall ratio
for c in "${cases[@]}"; do
    IFS='|' read -r name args cargs <<<"$c"
    : >"$work/ou"; : >"$work/nu"; : >"$work/ow"; : >"$work/nw"
    for i in $(seq "$reps"); do
        # Alternate which goes first, so drift favours neither.
        if ((i % 2)); then order=(o n); else order=(n o); fi
        for side in "${order[@]}"; do
            if [ "$side" = o ]; then
                # shellcheck disable=SC2086
                t=$(measure "$work/zero-slices" $cargs)
            else
                rm -rf "$work/res"
                # shellcheck disable=SC2086
                t=$(measure "$numalab" run $args --interval "$interval" --results "$work/res")
            fi
            read -r u w <<<"$t"
            echo "$u" >>"$work/${side}u"
            echo "$w" >>"$work/${side}w"
        done
    done
    ou=$(median <"$work/ou"); nu=$(median <"$work/nu")
    ow=$(median <"$work/ow"); nw=$(median <"$work/nw")
    # The two runs of a pair are back to back and share the machine's
    # other load (which slows memory-bound code): the median of the pairs'
    # ratios is the steadier figure when that load varies.
    pr=$(paste "$work/nu" "$work/ou" | awk '{print $1 / $2}' | median)
    # Other load only ever adds time: the fastest runs are the least
    # disturbed.
    mr=$(echo "$(sort -g "$work/nu" | head -1) / $(sort -g "$work/ou" | head -1)" | bc -l)
    printf "%-20s %-38s %9.3f %9.3f %7.3f %7.3f %7.3f %9.3f %9.3f %7.3f\n" "$name" "${args#"$name" }" \
        "$ou" "$nu" "$(echo "$nu / $ou" | bc -l)" "$pr" "$mr" "$ow" "$nw" "$(echo "$nw / $ow" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ -n "${CHUNKS:-}" ]; then
    # The cause: the same work as numa02 above, each loop's memset split
    # into calls of CHUNK bytes, against one call per slice.
    echo
    echo "numa02's work ($n threads, $bytes2, $loops loops) with each memset split into CHUNK-byte calls:"
    printf "%-10s %9s %9s %7s\n" chunk one_call chunked ratio
    for c in $CHUNKS; do
        cb=$(bytes "$c")
        : >"$work/ou"; : >"$work/cu"
        for i in $(seq "$reps"); do
            if ((i % 2)); then order=(o c); else order=(c o); fi
            for side in "${order[@]}"; do
                if [ "$side" = o ]; then k=0; else k=$cb; fi
                t=$(measure "$work/zero-slices" 1 "$n" "$b2" "$loops" 0 "$k")
                read -r u _ <<<"$t"
                echo "$u" >>"$work/${side}u"
            done
        done
        ou=$(median <"$work/ou"); cu=$(median <"$work/cu")
        printf "%-10s %9.3f %9.3f %7.3f\n" "$c" "$ou" "$cu" "$(echo "$cu / $ou" | bc -l)"
    done
fi

if [ "${RANDUPDT:-1}" != 0 ]; then
    echo
    echo "numa_test task vs randupdt.c (scripts/bench-randupdt.sh):"
    REPS=$reps scripts/bench-randupdt.sh
fi
