#!/usr/bin/env bash
# Re-run the simulator experiments (explicit sizes: the seeds' own, 40 Gcycles
# of spinning = 6666666667 iterations of 6 cycles) behind the "Which seed findings the
# simulator reproduces" section of docs/simulator.md and print their
# figures. Uses target/release/numalab (built first), or $NUMALAB.
# Records go to a temporary directory (or $RESULTS).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NUMALAB:-}" ]; then
    cargo build --release --quiet -p numalab
    NUMALAB=${CARGO_TARGET_DIR:-target}/release/numalab
fi
R=${RESULTS:-$(mktemp -d)}
sim() { "$NUMALAB" sim "$@" --results "$R" 2>/dev/null; }
summary() { sed -n '/numa_test summary/,$p'; }
# The end-of-invocation summary (elapsed, pages migrated, convergence).
totals() { sed -n '/summary, label/,$p'; }

echo "# seed 000: numa_test on azusa16, 5 runs"
for s in node-blind 'node-blind[max_pull=1]' node-affine 'node-affine[dynamic=true,initial=false]' linux; do
    echo "## $s"
    sim --machine azusa16 --scheduler "$s" numa_test --tasks 4,8,16,32 --size 1000000 --runs 5 | summary
done

echo "# seed 001: numa_test on tx7, size 2000000, 10 runs"
for s in linux node-blind node-affine; do
    echo "## $s"
    sim --machine tx7 --scheduler "$s" numa_test --tasks 4,8,16,32 --size 2000000 --runs 10 | summary
done

echo "# seed 002: autonuma-benchmark on ht2"
for b in numa01 numa01_THREAD_ALLOC numa02 numa02_SMT; do
    for bal in none autonuma sampling; do
        echo "## $b $bal"
        case $b in numa01) o="--bytes 3G --loops 50";; numa01_THREAD_ALLOC) o="--bytes 3G --loops 1000";; *) o="--bytes 1G --loops 800";; esac
        sim --machine ht2 --scheduler linux --balancer "$bal" "$b" $o --runs 2 | totals
    done
done
for p in bind inverse-bind; do
    echo "## numa01 --placement $p, none"
    sim --machine ht2 --scheduler linux numa01 --bytes 3G --loops 50 --placement "$p" | totals
done

echo "# seed 003: placements on epyc7642"
for p in "split 0,6,12,18,24,32" "mix 0,48,6,54,12,60" "same_ccd 0-5" "same_ccx 0,1,2,48,49,50"; do
    set -- $p
    echo "## spin $1"
    sim --machine epyc7642 --scheduler linux spin --tasks 6 --iterations 6666666667 --cpus "$2" | totals
    echo "## hackbench $1"
    sim --machine epyc7642 --scheduler linux hackbench --groups 15 --fds 50 --loops 200 --size 512 --cpus "$2" | totals
done
for s in linux nest; do
    for n in 2 6 12 24; do
        echo "## spin, $n tasks, $s"
        sim --machine epyc7642 --scheduler "$s" spin --tasks "$n" --iterations 6666666667 --placement default | totals
    done
done

echo "# seed 004: twohalves on genoa2n"
for bal in none autonuma sampling; do
    echo "## $bal"
    sim --machine genoa2n --scheduler linux --balancer "$bal" twohalves --bytes 16G --iterations 400 | totals
done
echo "records: $R"
