#!/usr/bin/env bash
# Benchmark: numalab's numa_test task against the seed's own randupdt.c
# (seed 000, extracted from the seed document at run time, never
# committed), compiled with gcc -O3; same element count, one task, user
# time measured side by side, alternating, in one run.
# Usage: scripts/bench-randupdt.sh [ELEMENTS ...]   (default: 1000000 13421773)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${NUMALAB_SEEDS:-../shared/seeds}
reps=${REPS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$seeds/000_bd749e49b9e263b2.txt" "$work/randupdt.c" <<'PY'
import binascii, bz2, re, sys
text = open(sys.argv[1], encoding="latin-1").read()
block = re.search(r"begin 644 randupdt\.c\.bz2\n(.*?)\nend", text, re.S).group(1)
data = b""
for line in block.split("\n"):
    if line in ("", "`"):
        continue
    n = (((ord(line[0]) - 32) & 63) * 4 + 5) // 3
    data += binascii.a2b_uu(line[:n])
open(sys.argv[2], "wb").write(bz2.decompress(data))
PY
gcc -O3 -w -o "$work/randupdt" "$work/randupdt.c"
cargo build --release -q
numalab=target/release/numalab

utime() { # command... -> user seconds
    local t
    t=$( { /usr/bin/env TIMEFORMAT=%U bash -c 'time "$@" >/dev/null 2>&1' _ "$@"; } 2>&1 )
    echo "$t"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 13421773)
printf "%-10s %5s %12s %12s %8s\n" elements reps "original(s)" "numalab(s)" ratio
for n in "${sizes[@]}"; do
    : >"$work/o"; : >"$work/n"
    for _ in $(seq "$reps"); do
        utime "$work/randupdt" "$n" >>"$work/o"
        utime "$numalab" __task randupdt "$n" 1 >>"$work/n"
    done
    o=$(median <"$work/o"); m=$(median <"$work/n")
    printf "%-10s %5s %12.3f %12.3f %8.3f\n" "$n" "$reps" "$o" "$m" "$(echo "$m / $o" | bc -l)"
done
