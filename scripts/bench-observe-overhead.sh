#!/usr/bin/env bash
# Benchmark: the cost of observation. Runs the same autonuma workload with
# observation at the default interval (--interval 1) and with observation
# off (--interval 0), alternating, PAIRS times, and prints each run's
# elapsed time, the medians and their ratio (observed / unobserved).
# Target: ratio <= 1.01.
#
# Usage: scripts/bench-observe-overhead.sh [numalab run arguments...]
#   default: numa01 --bytes 512M --loops 12
#   PAIRS=N (default 5) pairs of runs.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${PAIRS:-5}
args=("$@")
if ((${#args[@]} == 0)); then
    args=(numa01 --bytes 512M --loops 12)
fi
cargo build --release -q
numalab=${CARGO_TARGET_DIR:-target}/release/numalab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

elapsed() { # results dir -> elapsed_s of its only record
    python3 - "$1" <<'PY'
import glob, json, sys
(f,) = glob.glob(sys.argv[1] + "/*.json")
r = json.load(open(f))
assert r["outcome"]["status"] == "ok", r["outcome"]
print(r["metrics"]["elapsed_s"]["value"])
PY
}

on=()
off=()
printf '%-5s %-10s %10s\n' pair interval elapsed_s
for i in $(seq 1 "$pairs"); do
    # Alternate which goes first, so drift favours neither.
    if ((i % 2)); then order=(1 0); else order=(0 1); fi
    for iv in "${order[@]}"; do
        d="$work/$i-$iv"
        "$numalab" run "${args[@]}" --interval "$iv" --results "$d" >/dev/null 2>&1
        e=$(elapsed "$d")
        printf '%-5s %-10s %10.3f\n' "$i" "$iv" "$e"
        if [ "$iv" = 1 ]; then on+=("$e"); else off+=("$e"); fi
    done
done
python3 - "${on[*]}" "${off[*]}" <<'PY'
import statistics, sys
on = [float(x) for x in sys.argv[1].split()]
off = [float(x) for x in sys.argv[2].split()]
mo, mf = statistics.median(on), statistics.median(off)
print(f"median elapsed: observed (--interval 1) {mo:.3f} s, unobserved (--interval 0) {mf:.3f} s")
print(f"ratio observed/unobserved: {mo / mf:.4f} ({(mo / mf - 1) * 100:+.2f}%)")
PY
