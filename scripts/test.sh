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
# numalab's sched_ext schedulers (--features scx): clang for the BPF
# programs, libelf and zlib headers and pkg-config for libbpf.
command -v clang-19 >/dev/null 2>&1 || need+=(clang-19)
[ -f /usr/include/gelf.h ] || need+=(libelf-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v make >/dev/null 2>&1 || need+=(make)
# scx_simple, the kernel's example scheduler (scripts/build-scx-simple.sh).
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
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
# The house rule on function length (docs/architecture.md): none over 150
# lines, at most 15 over 100 (the rule, met since issue 26's splits).
python3 scripts/long-functions.py --list 0 --at-most 15

# The guest kernels the tests boot by name (docs/vm.md): Debian's 7.3
# with sched_ext, fetched once into numalab's cache (about 120 MiB, apt
# with a private configuration, verified; nothing installed on the
# host); at once when it is there. The tests then fail, rather than skip,
# if it is missing. Its vmlinux.h is what numalab's sched_ext schedulers
# are compiled against, so this comes first: built without them the first
# time, and with them once the header is cached, so that the test build
# below compiles numalab once, not twice (about half a minute of a 2-core
# machine, docs/benchmarks.md).
scx_first=()
if [ -n "${NUMALAB_VMLINUX_H:-}" ] ||
    compgen -G "${XDG_CACHE_HOME:-$HOME/.cache}/numalab/kernels/*/vmlinux-*.h" >/dev/null; then
    scx_first=(--features numalab/scx)
fi
cargo run --locked -q -p numalab "${scx_first[@]}" -- vm --kernel debian-7.3 --fetch-only
if [ "${NUMALAB_SKIP_VM_TESTS:-0}" = 0 ]; then
    export NUMALAB_REQUIRE_KERNELS=1
fi
# scx_simple from that kernel's own source, for the --scx-exec test (about
# a minute and 170 MB of download the first time, cached after).
NUMALAB_SCX_SIMPLE=$(scripts/build-scx-simple.sh)
export NUMALAB_SCX_SIMPLE

# Everything with the sched_ext schedulers built (tests/scx.rs loads
# them in guests; they must run, not skip).
cargo clippy --workspace --all-targets --locked --features numalab/scx -- -D warnings
cargo clippy --locked -p numalab -- -D warnings
export NUMALAB_REQUIRE_SCX=1

# tests/trace.rs checks wakeup latency against perf's record of the
# same run; perf is installed above, so it must run, not skip.
export NUMALAB_REQUIRE_PERF=1
# Every test: the three binaries that boot guests in one lane, every
# other test binary and the doctests in a second beside it (scripts/
# run-tests.py says why; the two cores were half idle through each boot).
scripts/run-tests.py --locked --features numalab/scx
