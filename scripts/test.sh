#!/usr/bin/env bash
# numalab's whole test suite: formatting, lints, and every test, including
# the ones that boot QEMU guests and render the HTML report in Chromium.
# Installs the Debian packages those tests need when they are missing
# (the Slurm test's scripts/slurm-cluster.sh installs slurmctld, slurmd,
# slurm-client and munge itself, without starting Debian's own daemons,
# and starts and stops its throwaway cluster), and fetches the guest
# kernels the tests boot by name into numalab's cache.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
compgen -G "/boot/vmlinuz-*" >/dev/null || need+=(linux-image-amd64)
command -v numastat >/dev/null 2>&1 || need+=(numactl)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
command -v depmod >/dev/null 2>&1 || need+=(kmod)
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)
if ((${#need[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: the tests need Debian packages: ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    echo "scripts/test.sh: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

# The guest kernels the tests boot by name (docs/vm.md): Debian's 7.3
# with sched_ext, fetched once into numalab's cache (about 120 MiB, apt
# with a private configuration, verified; nothing installed on the
# host); at once when it is there. The tests then fail, rather than skip,
# if it is missing.
if [ "${NUMALAB_SKIP_VM_TESTS:-0}" = 0 ]; then
    cargo run --locked -q -p numalab -- vm --kernel debian-7.3 --fetch-only
    export NUMALAB_REQUIRE_KERNELS=1
fi

# tests/trace.rs checks wakeup latency against perf's record of the
# same run; perf is installed above, so it must run, not skip.
export NUMALAB_REQUIRE_PERF=1
cargo test --workspace --locked
