#!/usr/bin/env bash
# Benchmark: what the campaign layer adds. The same 100 short simulated
# runs (numa02 on azusa16, about 25 ms each, 100 repetitions), once as `numalab sim ...
# --runs 100` and once as a one-configuration campaign of 100 cells
# (`numalab campaign run`: plan parse, pinning, results scan, order,
# the end's summary), alternating, REPS times each, in fresh results
# directories. Prints the medians of the wall and CPU (user + sys) times
# and their ratios campaign/sim; CPU time is the steadier figure on a
# shared machine. Target: under 1.01. A benchmark, not a test: the ratios
# are printed, never asserted.
#
# Usage: scripts/bench-campaign.sh    (REPS=N, default 9; NUMALAB=PATH to
# time that binary instead of building this tree's release binary)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-9}
if [ -z "${NUMALAB:-}" ]; then
    cargo build --release -q
fi
numalab=$(realpath "${NUMALAB:-${CARGO_TARGET_DIR:-target}/release/numalab}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(numa02 --threads 4 --bytes 64M --loops 200)
cat >"$work/plan.toml" <<PLAN
runs = 100
[[benchmark]]
name = "numa02"
threads = 4
bytes = "64M"
loops = 200
[[config]]
label = "default"
sim = { machine = "azusa16" }
PLAN
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
measure() { # command... -> "wall cpu" seconds
    local t
    t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>&1; } 2>&1 ) || { echo "failed: $*" >&2; exit 1; }
    awk '{printf "%s %.3f\n", $1, $2 + $3}' <<<"$t"
}
: >"$work/sim"; : >"$work/camp"
for i in $(seq "$reps"); do
    rm -rf "$work/r1" "$work/plan-results"
    measure "$numalab" sim --machine azusa16 "${args[@]}" --runs 100 --quiet --results "$work/r1" >>"$work/sim"
    n=$(ls "$work/r1" | wc -l); [ "$n" = 100 ] || { echo "sim wrote $n records" >&2; exit 1; }
    measure "$numalab" campaign run "$work/plan.toml" --quiet >>"$work/camp"
    n=$(ls "$work/plan-results" | wc -l); [ "$n" = 100 ] || { echo "campaign wrote $n records" >&2; exit 1; }
done
sw=$(cut -d' ' -f1 "$work/sim" | median); sc=$(cut -d' ' -f2 "$work/sim" | median)
cw=$(cut -d' ' -f1 "$work/camp" | median); cc=$(cut -d' ' -f2 "$work/camp" | median)
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps alternating runs"
printf "%-44s %8s %8s\n" "100 simulated runs of numa02 on azusa16" "wall(s)" "cpu(s)"
printf "%-44s %8.3f %8.3f\n" "numalab sim ... --runs 100" "$sw" "$sc"
printf "%-44s %8.3f %8.3f\n" "numalab campaign run (100 cells)" "$cw" "$cc"
echo "ratio campaign/sim: wall $(echo "scale=4; $cw / $sw" | bc), cpu $(echo "scale=4; $cc / $sc" | bc)"
