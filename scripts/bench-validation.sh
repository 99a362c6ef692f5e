#!/bin/sh
# The targets of calibrate and validate (docs/validation.md), measured here
# and printed, not asserted: these machines are shared and noisy.
#
#   scripts/bench-validation.sh [OUT_DIR]
#
# 1. calibrate twice in a row: each latency and bandwidth of the second
#    run against the first (target: within 5%);
# 2. validate on this machine with the first file, and in a 2-node guest
#    (target: elapsed and user time within 15%, pages migrated and
#    convergence within 25%, every placement ordering agreeing).
set -eu
out=${1:-numalab-results/bench-validation}
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build --quiet --release --manifest-path "$here/Cargo.toml" --bin numalab
nl="$here/target/release/numalab"
mkdir -p "$out"
"$nl" calibrate --quiet --output "$out/first.toml"
"$nl" calibrate --quiet --output "$out/second.toml"
echo "calibrate twice in a row (second / first - 1; target within 5%):"
for key in local_latency_ns llc_hit_ns cross_llc_ns bandwidth_gbs mlp read_mlp \
    spin_ns randupdt_ns memset_gbs msg_us fork_us exec_us; do
    a=$(sed -n "s/^$key = //p" "$out/first.toml")
    b=$(sed -n "s/^$key = //p" "$out/second.toml")
    [ -n "$a" ] && [ -n "$b" ] || continue
    awk -v k="$key" -v a="$a" -v b="$b" 'BEGIN {
        e = b / a - 1; printf "  %-18s %10s %10s %+7.1f%%  %s\n", k, a, b, 100 * e,
        (e < 0 ? -e : e) <= 0.05 ? "ok" : "OFF" }'
done
echo
echo "validate on this machine:"
"$nl" validate --quiet --machine "$out/first.toml" --results "$out/here" |
    sed -n '/^metric/,$p'
echo
echo "validate in a 2-node guest:"
"$nl" validate --quiet --guest 2x1:512M --results "$out/guest" |
    sed -n '/^metric/,$p'
