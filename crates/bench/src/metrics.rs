//! Metric names, one table for every benchmark and backend: a real run
//! and a simulated one that measure the same thing call it the same name,
//! with the same unit and the same better direction. Each metric is one
//! constant ([`ELAPSED_S`], ...): backends write it with
//! [`MetricDef::put`] rather than spell its name, and each benchmark's
//! registry entry lists the ones its records carry.

use numalab_record::{Better, Metric};
use std::collections::BTreeMap;

/// One metric: its record name, unit, which direction is better, and what
/// it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    pub name: &'static str,
    pub unit: &'static str,
    pub better: Better,
    pub meaning: &'static str,
}

const fn def(
    name: &'static str,
    unit: &'static str,
    better: Better,
    meaning: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        unit,
        better,
        meaning,
    }
}

/// Wall time from the first task's start to the last task's end.
pub const ELAPSED_S: MetricDef = def(
    "elapsed_s",
    "s",
    Better::Lower,
    "wall time from the first task's start to the last task's end",
);

/// User CPU time of every task.
pub const USER_S: MetricDef = def("user_s", "s", Better::Lower, "user CPU time of every task");

/// System CPU time of every task.
pub const SYS_S: MetricDef = def("sys_s", "s", Better::Lower, "system CPU time of every task");

/// Numa_test: user time per task (numa_test's AverageUserTime).
pub const AVG_USER_S: MetricDef = def(
    "avg_user_s",
    "s",
    Better::Lower,
    "numa_test: user time per task (numa_test's AverageUserTime)",
);

/// The message storm's own time, first message to last exit (H).
pub const HACKBENCH_S: MetricDef = def(
    "hackbench_s",
    "s",
    Better::Lower,
    "the message storm's own time, first message to last exit (H)",
);

/// Forkexec: children forked, run and reaped per second of elapsed time.
pub const CHILDREN_PER_S: MetricDef = def(
    "children_per_s",
    "1/s",
    Better::Higher,
    "forkexec: children forked, run and reaped per second of elapsed time",
);

/// Forkexec: mean time from a child's fork to its reaping by the parent.
pub const CHILD_LATENCY_MS: MetricDef = def(
    "child_latency_ms",
    "ms",
    Better::Lower,
    "forkexec: mean time from a child's fork to its reaping by the parent",
);

/// When the benchmark's convergence rule first held.
pub const CONVERGENCE_S: MetricDef = def(
    "convergence_s",
    "s",
    Better::Lower,
    "when the benchmark's convergence rule first held",
);

/// When every task had started with its memory placed.
pub const STARTED_S: MetricDef = def(
    "started_s",
    "s",
    Better::Lower,
    "when every task had started with its memory placed",
);

/// Bytes zeroed by all threads over the elapsed time.
pub const BANDWIDTH_GBS: MetricDef = def(
    "bandwidth_gbs",
    "GB/s",
    Better::Higher,
    "bytes zeroed by all threads over the elapsed time",
);

/// Mean over threads of the bytes each zeroed over the wall time of its loops.
pub const THREAD_BANDWIDTH_GBS: MetricDef = def(
    "thread_bandwidth_gbs",
    "GB/s",
    Better::Higher,
    "mean over threads of the bytes each zeroed over the wall time of its loops",
);

/// The slowest thread's bytes zeroed over the wall time of its loops.
pub const THREAD_BANDWIDTH_MIN_GBS: MetricDef = def(
    "thread_bandwidth_min_gbs",
    "GB/s",
    Better::Higher,
    "the slowest thread's bytes zeroed over the wall time of its loops",
);

/// Pages migrated by NUMA balancing (vmstat delta).
pub const NUMA_PAGES_MIGRATED: MetricDef = def(
    "numa_pages_migrated",
    "pages",
    Better::Lower,
    "pages migrated by NUMA balancing (vmstat delta)",
);

/// NUMA hinting faults (vmstat delta).
pub const NUMA_HINT_FAULTS: MetricDef = def(
    "numa_hint_faults",
    "faults",
    Better::Lower,
    "NUMA hinting faults (vmstat delta)",
);

/// Hinting faults on a page already on the faulting CPU's node.
pub const NUMA_HINT_FAULTS_LOCAL: MetricDef = def(
    "numa_hint_faults_local",
    "faults",
    Better::Higher,
    "hinting faults on a page already on the faulting CPU's node",
);

/// PTEs marked for NUMA hinting (vmstat delta).
pub const NUMA_PTE_UPDATES: MetricDef = def(
    "numa_pte_updates",
    "ptes",
    Better::Lower,
    "PTEs marked for NUMA hinting (vmstat delta)",
);

/// Pages promoted by memory tiering (vmstat delta).
pub const PGPROMOTE_SUCCESS: MetricDef = def(
    "pgpromote_success",
    "pages",
    Better::Lower,
    "pages promoted by memory tiering (vmstat delta)",
);

/// Pages found worth promoting (vmstat delta).
pub const PGPROMOTE_CANDIDATE: MetricDef = def(
    "pgpromote_candidate",
    "pages",
    Better::Lower,
    "pages found worth promoting (vmstat delta)",
);

/// CPU time numalab spent observing the run.
pub const OBSERVER_CPU_S: MetricDef = def(
    "observer_cpu_s",
    "s",
    Better::Lower,
    "CPU time numalab spent observing the run",
);

/// Migrations of the benchmark's tasks between CPUs.
pub const KERNEL_MIGRATIONS: MetricDef = def(
    "kernel_migrations",
    "migrations",
    Better::Lower,
    "migrations of the benchmark's tasks between CPUs (the kernel's nr_migrations of each task; the simulator counts them)",
);

/// Pages NUMA balancing migrated for the benchmark's tasks.
pub const KERNEL_NUMA_PAGES_MIGRATED: MetricDef = def(
    "kernel_numa_pages_migrated",
    "pages",
    Better::Lower,
    "pages NUMA balancing migrated for the benchmark's tasks (each task's numa_pages_migrated)",
);

/// Machine-wide allocations on the intended node (numastat delta).
pub const NUMASTAT_NUMA_HIT: MetricDef = def(
    "numastat_numa_hit",
    "pages",
    Better::Higher,
    "machine-wide allocations on the intended node (numastat delta, every process's)",
);

/// Machine-wide allocations that missed the intended node.
pub const NUMASTAT_NUMA_MISS: MetricDef = def(
    "numastat_numa_miss",
    "pages",
    Better::Lower,
    "machine-wide allocations on another node than intended (numastat delta)",
);

/// Machine-wide allocations local to the allocating CPU.
pub const NUMASTAT_LOCAL_NODE: MetricDef = def(
    "numastat_local_node",
    "pages",
    Better::Higher,
    "machine-wide allocations on the allocating CPU's node (numastat delta)",
);

/// Machine-wide allocations remote to the allocating CPU.
pub const NUMASTAT_OTHER_NODE: MetricDef = def(
    "numastat_other_node",
    "pages",
    Better::Lower,
    "machine-wide allocations on another node than the allocating CPU's (numastat delta)",
);

/// The numastat counters the host reports as metrics (summed over nodes),
/// each with the counter's name in /sys/devices/system/node/nodeN/numastat.
pub const NUMASTAT: [(&str, MetricDef); 4] = [
    ("numa_hit", NUMASTAT_NUMA_HIT),
    ("numa_miss", NUMASTAT_NUMA_MISS),
    ("local_node", NUMASTAT_LOCAL_NODE),
    ("other_node", NUMASTAT_OTHER_NODE),
];

/// The /proc/vmstat counters every backend reports, as deltas over a run.
pub const VMSTAT: [MetricDef; 6] = [
    NUMA_PAGES_MIGRATED,
    NUMA_HINT_FAULTS,
    NUMA_HINT_FAULTS_LOCAL,
    NUMA_PTE_UPDATES,
    PGPROMOTE_SUCCESS,
    PGPROMOTE_CANDIDATE,
];

/// The metrics a run measures itself (not counted by the kernel).
const MEASURED: [MetricDef; 19] = [
    ELAPSED_S,
    USER_S,
    SYS_S,
    AVG_USER_S,
    HACKBENCH_S,
    CHILDREN_PER_S,
    CHILD_LATENCY_MS,
    CONVERGENCE_S,
    STARTED_S,
    BANDWIDTH_GBS,
    THREAD_BANDWIDTH_GBS,
    THREAD_BANDWIDTH_MIN_GBS,
    OBSERVER_CPU_S,
    KERNEL_MIGRATIONS,
    KERNEL_NUMA_PAGES_MIGRATED,
    NUMASTAT_NUMA_HIT,
    NUMASTAT_NUMA_MISS,
    NUMASTAT_LOCAL_NODE,
    NUMASTAT_OTHER_NODE,
];

/// `a` then `b`.
const fn concat<const A: usize, const B: usize, const N: usize>(
    a: [MetricDef; A],
    b: [MetricDef; B],
) -> [MetricDef; N] {
    let mut out = [ELAPSED_S; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < A { a[i] } else { b[i - A] };
        i += 1;
    }
    out
}

/// Every metric a benchmark record may carry.
pub const ALL: &[MetricDef] = &concat::<19, 6, 25>(MEASURED, VMSTAT);

impl MetricDef {
    /// `value` with this metric's unit and direction.
    pub fn value(&self, value: f64) -> Metric {
        Metric::new(value, self.unit, self.better)
    }

    /// Put `value` into a record's metrics under this metric's name.
    pub fn put(&self, metrics: &mut BTreeMap<String, Metric>, value: f64) {
        metrics.insert(self.name.to_string(), self.value(value));
    }
}

/// The definition of `name`, if it is a known metric.
pub fn find(name: &str) -> Option<&'static MetricDef> {
    ALL.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_vmstat_counters_are_defined() {
        let mut names: Vec<&str> = ALL.iter().map(|d| d.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
        for v in VMSTAT {
            assert_eq!(find(v.name), Some(&v), "{}", v.name);
        }
        assert_eq!(USER_S.value(2.0).unit, "s");
        assert_eq!(
            find("bandwidth_gbs").unwrap().value(2.0).better,
            Better::Higher
        );
    }
}
