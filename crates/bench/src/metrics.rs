//! Metric names, one table for every benchmark and backend: a real run
//! and a simulated one that measure the same thing call it the same name,
//! with the same unit and the same better direction.

use numalab_record::{Better, Metric};

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

/// Every metric a benchmark record may carry.
pub const ALL: &[MetricDef] = &[
    def(
        "elapsed_s",
        "s",
        Better::Lower,
        "wall time from the first task's start to the last task's end",
    ),
    def("user_s", "s", Better::Lower, "user CPU time of every task"),
    def("sys_s", "s", Better::Lower, "system CPU time of every task"),
    def(
        "avg_user_s",
        "s",
        Better::Lower,
        "numa_test: user time per task (numa_test's AverageUserTime)",
    ),
    def(
        "hackbench_s",
        "s",
        Better::Lower,
        "the message storm's own time, first message to last exit (H)",
    ),
    def(
        "children_per_s",
        "1/s",
        Better::Higher,
        "forkexec: children forked, run and reaped per second of elapsed time",
    ),
    def(
        "child_latency_ms",
        "ms",
        Better::Lower,
        "forkexec: mean time from a child's fork to its reaping by the parent",
    ),
    def(
        "convergence_s",
        "s",
        Better::Lower,
        "when the benchmark's convergence rule first held",
    ),
    def(
        "started_s",
        "s",
        Better::Lower,
        "when every task had started with its memory placed",
    ),
    def(
        "bandwidth_gbs",
        "GB/s",
        Better::Higher,
        "bytes zeroed by all threads over the elapsed time",
    ),
    def(
        "thread_bandwidth_gbs",
        "GB/s",
        Better::Higher,
        "mean over threads of the bytes each zeroed over the wall time of its loops",
    ),
    def(
        "thread_bandwidth_min_gbs",
        "GB/s",
        Better::Higher,
        "the slowest thread's bytes zeroed over the wall time of its loops",
    ),
    def(
        "numa_pages_migrated",
        "pages",
        Better::Lower,
        "pages migrated by NUMA balancing (vmstat delta)",
    ),
    def(
        "numa_hint_faults",
        "faults",
        Better::Lower,
        "NUMA hinting faults (vmstat delta)",
    ),
    def(
        "numa_hint_faults_local",
        "faults",
        Better::Higher,
        "hinting faults on a page already on the faulting CPU's node",
    ),
    def(
        "numa_pte_updates",
        "ptes",
        Better::Lower,
        "PTEs marked for NUMA hinting (vmstat delta)",
    ),
    def(
        "pgpromote_success",
        "pages",
        Better::Lower,
        "pages promoted by memory tiering (vmstat delta)",
    ),
    def(
        "pgpromote_candidate",
        "pages",
        Better::Lower,
        "pages found worth promoting (vmstat delta)",
    ),
    def(
        "observer_cpu_s",
        "s",
        Better::Lower,
        "CPU time numalab spent observing the run",
    ),
];

/// The /proc/vmstat counters every backend reports, as deltas over a run.
pub const VMSTAT: [&str; 6] = [
    "numa_pages_migrated",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pte_updates",
    "pgpromote_success",
    "pgpromote_candidate",
];

/// The definition of `name`, if it is a known metric.
pub fn find(name: &str) -> Option<&'static MetricDef> {
    ALL.iter().find(|d| d.name == name)
}

/// A metric value with its defined unit and direction.
///
/// # Panics
/// Never for the names in [`ALL`]; an unknown name is a programming error
/// caught by the tests of every backend.
pub fn metric(name: &str, value: f64) -> Metric {
    let d = find(name).unwrap_or_else(|| panic!("metric {name} is not defined in metrics::ALL"));
    Metric::new(value, d.unit, d.better)
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
            assert!(find(v).is_some(), "{v}");
        }
        assert_eq!(metric("user_s", 2.0).unit, "s");
        assert_eq!(metric("bandwidth_gbs", 2.0).better, Better::Higher);
    }
}
