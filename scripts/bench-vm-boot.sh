#!/usr/bin/env bash
# Boot-to-first-output of a `numalab vm` guest: the time from starting
# `numalab vm` to the first byte of the guest command's output arriving on
# the host, as numalab itself measures it (its last stderr line), for a
# 2-node guest with 2 vCPUs per node running `topology`.
#
#   scripts/bench-vm-boot.sh [RUNS] [-- extra numalab vm flags]
#
# NUMALAB_VM_NO_PVH=1 measures the slower path that boots the compressed
# kernel image as is (see docs/vm.md).
#
# Uses the release binary (built if needed). Not a test: it prints figures.
# The host's load average is printed too: TCG guests share the host's cores,
# so a busy host boots them more slowly.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
shift || true
[[ "${1:-}" == "--" ]] && shift
extra=("$@")
target=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet -p numalab
exe="$target/release/numalab"
spec=(--nodes 2 --cpus-per-node 2 --mem-per-node 512M)
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
echo "host: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $exe ($(du -h "$exe" | cut -f1))"
echo "command: ${NUMALAB_VM_NO_PVH:+NUMALAB_VM_NO_PVH=$NUMALAB_VM_NO_PVH }$exe vm --quiet ${spec[*]} ${extra[*]:-} -- topology"
# One untimed run fills the decompressed-kernel cache.
"$exe" vm --quiet --results "$results" "${spec[@]}" "${extra[@]}" -- topology >/dev/null 2>&1 || true
figures=()
for i in $(seq 1 "$runs"); do
    line=$("$exe" vm --quiet --results "$results" "${spec[@]}" "${extra[@]}" -- topology 2>&1 >/dev/null | tail -1)
    first=$(sed -n 's/.*first output at \([0-9.]*\) s.*/\1/p' <<<"$line")
    if [[ -z "$first" ]]; then
        echo "run $i failed: $line" >&2
        exit 1
    fi
    figures+=("$first")
    echo "run $i: first output at $first s ($line)"
done
printf '%s\n' "${figures[@]}" | sort -n | awk '
    { v[NR] = $1 }
    END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "boot-to-first-output over %d runs: median %.1f s, min %.1f s, max %.1f s\n", NR, m, v[1], v[NR]
    }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
