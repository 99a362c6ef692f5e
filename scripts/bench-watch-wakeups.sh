#!/usr/bin/env bash
# numalab's own wakeups during a run: voluntary context switches of the
# numalab process (all its threads) per second, between 1.5 and 3.5 s
# into a run with --interval 0, for each binary given, alternated.
#
#   scripts/bench-watch-wakeups.sh OLD_NUMALAB NEW_NUMALAB
#
# (docs/autonuma.md, "numalab's own wakeups during a run").
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 NUMALAB [NUMALAB...]" >&2; exit 2; }
switches() {
    cat /proc/"$1"/task/*/status 2>/dev/null |
        awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}
measure() {
    local dir
    dir=$(mktemp -d)
    # shellcheck disable=SC2086
    "$1" run $2 --interval 0 --runs 1 --results "$dir" >/dev/null 2>&1 &
    local p=$! a b
    sleep 1.5
    a=$(switches $p)
    sleep 2
    b=$(switches $p)
    wait $p || { echo "$1 run $2 failed" >&2; exit 1; }
    rm -rf "$dir"
    echo $(((b - a) / 2))
}
for w in "spin --seconds 5 --placement default" \
         "mem --duration 5 --op memset --threads 1" \
         "numa_test --tasks 2 --size 20000000" \
         "numa02 --duration 5"; do
    line="$w |"
    for round in 1 2; do
        for bin in "$@"; do
            line+=" $(measure "$bin" "$w")"
        done
    done
    echo "$line"
done
