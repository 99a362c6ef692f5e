#!/usr/bin/env bash
# Benchmark: the cost of observation. Runs the same autonuma workload with
# observation at the default interval (--interval auto: 1 s, stretched to
# 100x a sample's CPU time) and with observation off (--interval 0),
# alternating, PAIRS times, and prints each run's
# elapsed time, the medians and their ratio (observed / unobserved), and
# numalab's own CPU time during observed runs as a share of the
# benchmark's CPU time (the record's observer_cpu_s: an upper bound on the
# CPU the observation takes from the benchmark, unaffected by other load).
# Target: ratio <= 1.01.
#
# Usage: scripts/bench-observe-overhead.sh [numalab run arguments...]
#   default: numa01 --bytes 512M --loops 300
#   PAIRS=N (default 5) pairs of runs.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${PAIRS:-5}
args=("$@")
if ((${#args[@]} == 0)); then
    args=(numa01 --bytes 512M --loops 300)
fi
cargo build --release -q
numalab=${CARGO_TARGET_DIR:-target}/release/numalab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

elapsed() { # results dir -> "elapsed_s observer_cpu_share" of its only record
    python3 - "$1" <<'PY'
import glob, json, sys
(f,) = glob.glob(sys.argv[1] + "/*.json")
r = json.load(open(f))
assert r["outcome"]["status"] == "ok", r["outcome"]
m = {k: v["value"] for k, v in r["metrics"].items()}
share = m.get("observer_cpu_s", 0) / (m["user_s"] + m["sys_s"])
print(m["elapsed_s"], share, round(r["series"]["interval_s"], 2))
PY
}

on=()
off=()
shares=()
printf '%-5s %-10s %10s %14s %12s\n' pair interval elapsed_s observer_cpu longest_iv_s
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$pairs"); do
    # Alternate which goes first, so drift favours neither.
    if ((i % 2)); then order=(auto 0); else order=(0 auto); fi
    for iv in "${order[@]}"; do
        d="$work/$i-$iv"
        "$numalab" run "${args[@]}" --interval "$iv" --results "$d" >/dev/null 2>&1
        read -r e share iv_used < <(elapsed "$d")
        printf '%-5s %-10s %10.3f %13.3f%% %12s\n' "$i" "$iv" "$e" "$(python3 -c "print($share*100)")" "$iv_used"
        if [ "$iv" = auto ]; then on+=("$e"); shares+=("$share"); else off+=("$e"); fi
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${on[*]}" "${off[*]}" "${shares[*]}" <<'PY'
import statistics, sys
on = [float(x) for x in sys.argv[1].split()]
off = [float(x) for x in sys.argv[2].split()]
sh = [float(x) for x in sys.argv[3].split()]
mo, mf = statistics.median(on), statistics.median(off)
print(f"median elapsed: observed (--interval auto) {mo:.3f} s, unobserved (--interval 0) {mf:.3f} s")
print(f"ratio observed/unobserved: {mo / mf:.4f} ({(mo / mf - 1) * 100:+.2f}%)")
# The two runs of a pair are back to back, so they share more of the
# machine's state (other load, the host's) than runs far apart.
pr = statistics.median(a / b for a, b in zip(on, off))
print(f"median of the pairs' ratios: {pr:.4f} ({(pr - 1) * 100:+.2f}%)")
print(f"numalab's own CPU time while observing, as a share of the benchmark's: median {statistics.median(sh) * 100:.2f}%")
PY
