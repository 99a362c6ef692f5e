#!/usr/bin/env bash
# Benchmark: `compare` and `report` over 10,000 records. Simulated runs
# on tx7 (4 nodes of 2 CPUs) under 4 schedulers, one label each, of 7
# cases (numa02 in 3 placements, numa_test with 2, 4 and 8 tasks, numa01),
# 5 repetitions each and sampled every 0.1 s, so every record has its
# time series; then each record is cloned (a new id and repetition, its
# metrics jittered by a few per cent, its series kept) up to RECORDS
# records in all, 10,000 by default. Times `numalab compare DIR` REPS
# times (median of the wall time, and the CPU time) and `numalab report
# DIR -o r.html` once, with the report's size and its side file's.
# Targets: compare in at most 1 s, the HTML at most 10 MiB. A
# benchmark, not a test: figures are printed, never asserted. The data
# lives in a temporary directory, removed at the end.
#
# Usage: scripts/bench-compare-scale.sh   (RECORDS=N, default 10000;
# REPS=N, default 5; NUMALAB=PATH to time that binary instead of
# building this tree's release binary; DATA=DIR to keep the records in
# DIR/data, made when missing and reused when there, for profiling)
set -euo pipefail
cd "$(dirname "$0")/.."
records=${RECORDS:-10000}
reps=${REPS:-5}
if [ -z "${NUMALAB:-}" ]; then
    cargo build --release -q
fi
numalab=$(realpath "${NUMALAB:-${CARGO_TARGET_DIR:-target}/release/numalab}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=${DATA:+$DATA/data}
data=${data:-$work/data}
if [ ! -d "$data" ]; then
base=$work/base
for sched in linux node-affine node-blind nest; do
    sim=("$numalab" sim --machine tx7 --scheduler "$sched")
    common=(--label "$sched" --runs 5 --interval 0.1 --quiet --results "$base")
    "${sim[@]}" numa02 --threads 4 --bytes 128M --loops 20 \
        --placement default,bind,inverse-bind "${common[@]}" >/dev/null
    "${sim[@]}" numa_test --tasks 2,4,8 --size 200000 "${common[@]}" >/dev/null
    "${sim[@]}" numa01 --bytes 256M --loops 5 "${common[@]}" >/dev/null
done
# Clone: every base record's JSON is written once with placeholders for
# the id, the repetition and the metrics, which each copy fills in.
python3 - "$base" "$data" "$records" <<'PY'
import glob, json, os, random, sys
base, out, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out)
files = sorted(glob.glob(os.path.join(base, "*.json")))
groups = {}
for f in files:
    r = json.load(open(f))
    groups.setdefault((r["label"], r["benchmark"], json.dumps(r["params"], sort_keys=True)), []).append(r)
rng = random.Random(1)
per_group = [total // len(groups) + (i < total % len(groups)) for i in range(len(groups))]
for (key, recs), n in zip(sorted(groups.items()), per_group):
    for i in range(n):
        r = dict(recs[i % len(recs)])
        metrics = {k: dict(m) for k, m in r["metrics"].items()}
        for m in metrics.values():
            v = m["value"] * (1 + rng.gauss(0, 0.03))
            m["value"] = float(round(v)) if float(m["value"]).is_integer() else v
            m["value"] = max(m["value"], 0.0)
        rid = "%s-c%d" % (r["id"], i)
        r["id"], r["repetition"], r["metrics"] = "@ID@", "@REP@", "@METRICS@"
        text = json.dumps(r, indent=2)
        text = text.replace('"@ID@"', json.dumps(rid), 1)
        text = text.replace('"@REP@"', json.dumps({"index": i + 1, "of": n}), 1)
        text = text.replace('"@METRICS@"', json.dumps(metrics), 1)
        with open(os.path.join(out, rid + ".json"), "w") as f:
            f.write(text + "\n")
PY
fi
n=$(find "$data" -name '*.json' | wc -l)
mib=$(du -sm --apparent-size "$data" | cut -f1)
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
measure() { # command... -> "wall cpu" seconds
    local t
    t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>"$work/err"; } 2>&1 ) || { cat "$work/err" >&2; echo "failed: $*" >&2; exit 1; }
    awk '{printf "%s %.3f\n", $1, $2 + $3}' <<<"$t"
}
"$numalab" compare "$data" >/dev/null # the files into the page cache
: >"$work/compare"
for i in $(seq "$reps"); do
    measure "$numalab" compare "$data" >>"$work/compare"
done
cw=$(cut -d' ' -f1 "$work/compare" | median); cc=$(cut -d' ' -f2 "$work/compare" | median)
read -r rw rc < <(measure "$numalab" report "$data" -o "$work/r.html")
size=$(stat -c %s "$work/r.html")
side=0
for f in "$work"/r.runs.csv; do [ -e "$f" ] && side=$((side + $(stat -c %s "$f"))); done
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data: $n records, $mib MiB, 4 labels x 7 cases (simulated on tx7, cloned)"
printf "%-34s %10s %10s %10s\n" "" measured target ratio
printf "%-34s %10.3f %10.3f %10.3f\n" "compare wall (s, median of $reps)" "$cw" 1 "$(echo "scale=4; $cw / 1" | bc)"
printf "%-34s %10.3f\n" "compare cpu (s, median)" "$cc"
printf "%-34s %10.3f %10s\n" "report wall (s)" "$rw" ""
printf "%-34s %10.3f\n" "report cpu (s)" "$rc"
printf "%-34s %10.2f %10.2f %10.3f\n" "report size (MiB)" "$(echo "scale=4; $size / 1048576" | bc)" 10 "$(echo "scale=4; $size / 10485760" | bc)"
printf "%-34s %10.2f\n" "its side file (MiB)" "$(echo "scale=4; $side / 1048576" | bc)"
