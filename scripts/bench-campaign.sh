#!/usr/bin/env bash
# Benchmark: what the campaign layer adds. The same 100 short simulated
# runs (numa02 on azusa16, 100 repetitions), once as `numalab sim ...
# --runs 100` and once as a one-configuration campaign of 100 cells
# (`numalab campaign run`: plan parse, pinning, results scan, order,
# the end's summary), alternating, REPS times each, in fresh results
# directories. Prints the medians of the wall times and their ratio
# campaign/sim. Target: under 1.01. A benchmark, not a test: the ratio
# is printed, never asserted.
#
# Usage: scripts/bench-campaign.sh    (REPS=N, default 7; NUMALAB=PATH to
# time that binary instead of building this tree's release binary)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-7}
if [ -z "${NUMALAB:-}" ]; then
    cargo build --release -q
fi
numalab=$(realpath "${NUMALAB:-${CARGO_TARGET_DIR:-target}/release/numalab}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(numa02 --threads 4 --bytes 64M --loops 20)
cat >"$work/plan.toml" <<PLAN
runs = 100
[[benchmark]]
name = "numa02"
threads = 4
bytes = "64M"
loops = 20
[[config]]
label = "default"
sim = { machine = "azusa16" }
PLAN
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
: >"$work/sim"; : >"$work/camp"
for i in $(seq "$reps"); do
    rm -rf "$work/r1" "$work/plan-results"
    t=$(now); "$numalab" sim --machine azusa16 "${args[@]}" --runs 100 --quiet --results "$work/r1" >/dev/null
    echo "$(now) - $t" | bc >>"$work/sim"
    n=$(ls "$work/r1" | wc -l); [ "$n" = 100 ] || { echo "sim wrote $n records" >&2; exit 1; }
    t=$(now); "$numalab" campaign run "$work/plan.toml" --quiet >/dev/null
    echo "$(now) - $t" | bc >>"$work/camp"
    n=$(ls "$work/plan-results" | wc -l); [ "$n" = 100 ] || { echo "campaign wrote $n records" >&2; exit 1; }
done
s=$(median <"$work/sim"); c=$(median <"$work/camp")
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps alternating runs"
printf "%-44s %8s\n" "100 simulated runs of numa02 on azusa16" "wall(s)"
printf "%-44s %8.3f\n" "numalab sim ... --runs 100" "$s"
printf "%-44s %8.3f\n" "numalab campaign run (100 cells)" "$c"
echo "ratio campaign/sim: $(echo "scale=4; $c / $s" | bc)"
