//! Sizing that scales with the machine: large enough to be bound by memory
//! latency rather than cache, small enough to fit in memory that is free.

use numalab_topology::{human_bytes, MachineInfo};

/// How many times the largest LLC a task's data must exceed to be
/// memory-latency bound (random accesses then miss the LLC most of the time).
pub const LLC_FACTOR: u64 = 8;
/// Share of available memory a run may use in all.
pub const MEMORY_SHARE: f64 = 0.5;

/// Why a benchmark's size was refused or could not be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizingError {
    /// /proc/meminfo has no MemAvailable.
    #[error("cannot tell how much memory is available (/proc/meminfo MemAvailable)")]
    MemoryUnknown,
    /// `--size 0`.
    #[error("--size must be at least 1 element")]
    NoElements,
    /// A `--size` whose bytes overflow.
    #[error("--size {elements}: far more memory than any machine has")]
    Overflow { elements: u64 },
    /// A `--size` that does not fit in the available memory.
    #[error("--size {elements}: {tasks} tasks x {} = {} does not fit in the {} of available memory", human_bytes(*.per_task), human_bytes(*.need), human_bytes(*.available))]
    ElementsDoNotFit {
        elements: u64,
        tasks: u32,
        per_task: u64,
        need: u64,
        available: u64,
    },
    /// Less than [`MIN_BYTES`] for an autonuma benchmark.
    #[error("too little free memory for {kind}: {} available, {} free on the first node", human_bytes(*.available), .first_node_free.map_or("?".into(), human_bytes))]
    TooLittleMemory {
        kind: &'static str,
        available: u64,
        first_node_free: Option<u64>,
    },
    /// `--bytes` giving each thread less than a page.
    #[error("--bytes {}: {threads} threads would get less than a page each", human_bytes(*.bytes))]
    LessThanAPage { bytes: u64, threads: u32 },
    /// `--bytes` that does not fit in the available memory.
    #[error("--bytes {}: {} in all does not fit in the {} of available memory", human_bytes(*.bytes), human_bytes(*.need), human_bytes(*.available))]
    BytesDoNotFit {
        bytes: u64,
        need: u64,
        available: u64,
    },
    /// `--bytes` that does not fit in the first node's free memory.
    #[error("--bytes {}: {} in all does not fit in the {} free on the node the default placement puts it on", human_bytes(*.bytes), human_bytes(*.need), human_bytes(*.free))]
    BytesDoNotFitNode { bytes: u64, need: u64, free: u64 },
}

impl From<SizingError> for crate::BenchError {
    fn from(e: SizingError) -> crate::BenchError {
        crate::BenchError(e.to_string())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub elements: u64,
    pub explanation: String,
    pub warning: Option<String>,
}

/// Pick the numa_test element count for up to `max_tasks` concurrent tasks.
pub fn numa_test_elements(
    machine: &MachineInfo,
    max_tasks: u32,
    bytes_per_element: u64,
) -> Result<Choice, SizingError> {
    let llc = machine.topology.max_llc_bytes();
    let seed_size = 1_000_000u64;
    let latency_bound = (LLC_FACTOR * llc).div_ceil(bytes_per_element);
    let want = seed_size.max(latency_bound);
    let avail = machine.memory_available_bytes.unwrap_or(0);
    let cap = ((avail as f64 * MEMORY_SHARE) as u64) / (bytes_per_element * max_tasks as u64);
    if cap == 0 {
        return Err(SizingError::MemoryUnknown);
    }
    let elements = want.min(cap);
    let per_task = elements * bytes_per_element;
    let mut explanation = format!(
        "{elements} elements per task ({} per task, {} for {max_tasks} tasks): ",
        human_bytes(per_task),
        human_bytes(per_task * max_tasks as u64)
    );
    let mut warning = None;
    if elements == want {
        explanation += &format!(
            "{}x the largest LLC ({}) so that random updates miss the cache; the seed used 1,000,000",
            LLC_FACTOR,
            human_bytes(llc)
        );
    } else {
        explanation += &format!("limited by {} of available memory", human_bytes(avail));
        if elements < latency_bound {
            warning = Some(format!(
                "per-task data ({}) is less than {}x the LLC ({}): results may be cache-bound",
                human_bytes(per_task),
                LLC_FACTOR,
                human_bytes(llc)
            ));
        }
    }
    Ok(Choice {
        elements,
        explanation,
        warning,
    })
}

/// Refuse an explicit size that cannot fit, before anything is allocated.
pub fn check_fits(
    machine: &MachineInfo,
    max_tasks: u32,
    elements: u64,
    bytes_per_element: u64,
) -> Result<(), SizingError> {
    if elements == 0 {
        return Err(SizingError::NoElements);
    }
    let need = elements
        .checked_mul(bytes_per_element)
        .and_then(|b| b.checked_mul(max_tasks as u64))
        .ok_or(SizingError::Overflow { elements })?;
    let avail = machine.memory_available_bytes.unwrap_or(u64::MAX);
    if need > avail {
        return Err(SizingError::ElementsDoNotFit {
            elements,
            tasks: max_tasks,
            per_task: elements * bytes_per_element,
            need,
            available: avail,
        });
    }
    Ok(())
}

/// Share of the first node's free memory a default-placement run may put
/// there (all of the benchmark's memory starts on that node).
pub const NODE_SHARE: f64 = 0.5;

/// Least memory per thread's slice: one page is meaningless, a few MiB
/// make a loop long enough to be timed and sampled.
pub const MIN_BYTES: u64 = 1 << 20;

/// Memory per process (twohalves: in all) for an autonuma benchmark:
/// the original's size, scaled down to fit [`MEMORY_SHARE`] of the
/// available memory and [`NODE_SHARE`] of the free memory of the node
/// where the default placement first-touches it all (`first_node_free`).
/// The same size serves every placement, so their times compare.
pub fn autonuma_bytes(
    machine: &MachineInfo,
    kind: crate::autonuma::Kind,
    first_node_free: Option<u64>,
) -> Result<Choice, SizingError> {
    let parts = kind.total_bytes(1);
    let avail = machine
        .memory_available_bytes
        .ok_or(SizingError::MemoryUnknown)?;
    let orig = kind.original_bytes();
    let by_avail = (avail as f64 * MEMORY_SHARE) as u64 / parts;
    let by_node = first_node_free.map(|f| (f as f64 * NODE_SHARE) as u64 / parts);
    let cap = by_node.map_or(by_avail, |n| n.min(by_avail));
    // Whole MiB, so sizes read well and slices stay page-aligned.
    let bytes = orig.min(cap) / (1 << 20) * (1 << 20);
    if bytes < MIN_BYTES {
        return Err(SizingError::TooLittleMemory {
            kind: kind.name(),
            available: avail,
            first_node_free,
        });
    }
    let unit = match (kind, parts) {
        (crate::autonuma::Kind::TwoHalves, _) => "in all".to_string(),
        (_, 1) => "for the one process".to_string(),
        (_, n) => format!("per process, {n} processes"),
    };
    let mut explanation = format!("{} {unit}: ", human_bytes(bytes));
    if bytes == orig {
        explanation += "the original's size";
    } else {
        explanation += &format!(
            "the original's {} scaled down to fit half of the {} available{}",
            human_bytes(orig),
            human_bytes(avail),
            first_node_free.map_or(String::new(), |f| format!(
                " and half of the {} free on the node the memory starts on",
                human_bytes(f)
            ))
        );
    }
    let llc = machine.topology.max_llc_bytes();
    let warning = (llc > 0 && bytes < LLC_FACTOR * llc).then(|| {
        format!(
            "{} is less than {LLC_FACTOR}x the largest LLC ({}): part of the work may be served from cache",
            human_bytes(bytes),
            human_bytes(llc)
        )
    });
    Ok(Choice {
        elements: bytes,
        explanation,
        warning,
    })
}

/// Refuse an explicit autonuma size that cannot fit or cannot be split,
/// before anything is allocated.
pub fn check_autonuma_fits(
    machine: &MachineInfo,
    kind: crate::autonuma::Kind,
    bytes: u64,
    total_threads: u32,
    first_node_free: Option<u64>,
) -> Result<(), SizingError> {
    let per_slice = if kind.shared() {
        bytes
    } else {
        kind.total_bytes(bytes) / total_threads.max(1) as u64
    };
    if per_slice < numalab_linux::numa::page_size() as u64 {
        return Err(SizingError::LessThanAPage {
            bytes,
            threads: total_threads,
        });
    }
    let need = kind.total_bytes(bytes);
    let avail = machine.memory_available_bytes.unwrap_or(u64::MAX);
    if need > avail {
        return Err(SizingError::BytesDoNotFit {
            bytes,
            need,
            available: avail,
        });
    }
    if let Some(free) = first_node_free {
        if need > free {
            return Err(SizingError::BytesDoNotFitNode { bytes, need, free });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(llc: u64, avail: u64) -> MachineInfo {
        let mut m = numalab_record::example_record("x", "y", 1, 1.0).machine;
        m.topology = numalab_topology::Topology::regular(1, 2, 1, 1, llc, 1 << 34, None).unwrap();
        m.memory_available_bytes = Some(avail);
        m
    }

    #[test]
    fn scales_with_the_llc() {
        let c = numa_test_elements(&machine(32 << 20, 20 << 30), 4, 20).unwrap();
        assert_eq!(c.elements, (LLC_FACTOR * (32u64 << 20)).div_ceil(20));
        assert!(c.warning.is_none());
        let small = numa_test_elements(&machine(1 << 20, 20 << 30), 4, 20).unwrap();
        assert_eq!(small.elements, 1_000_000, "never below the seed's size");
    }

    #[test]
    fn limited_by_memory_with_a_warning() {
        let c = numa_test_elements(&machine(480 << 20, 4 << 30), 16, 20).unwrap();
        assert!(c.elements * 20 * 16 <= 2 << 30);
        assert!(c.explanation.contains("limited by"));
        assert!(c.warning.unwrap().contains("cache-bound"));
    }

    #[test]
    fn autonuma_sizes_scale_down_to_fit() {
        use crate::autonuma::Kind;
        let big = machine(32 << 20, 64 << 30);
        let c = autonuma_bytes(&big, Kind::Numa01, Some(60 << 30)).unwrap();
        assert_eq!(c.elements, 3 << 30);
        assert!(c.explanation.contains("original's size"));
        // A 2 x 1 GiB guest: the first node's free memory decides.
        let guest = machine(32 << 20, 1700 << 20);
        let c = autonuma_bytes(&guest, Kind::Numa01, Some(800 << 20)).unwrap();
        assert_eq!(c.elements, 200 << 20);
        assert!(c.explanation.contains("scaled down"), "{}", c.explanation);
        let c = autonuma_bytes(&guest, Kind::TwoHalves, Some(800 << 20)).unwrap();
        assert_eq!(c.elements, 400 << 20);
        assert!(c.warning.is_none());
        let tiny = machine(32 << 20, 1 << 20);
        assert!(autonuma_bytes(&tiny, Kind::Numa02, None)
            .unwrap_err()
            .to_string()
            .contains("too little"));
    }

    #[test]
    fn autonuma_refuses_what_does_not_fit() {
        use crate::autonuma::Kind;
        let m = machine(32 << 20, 1 << 30);
        assert!(check_autonuma_fits(&m, Kind::Numa01, 256 << 20, 2, Some(600 << 20)).is_ok());
        let e = check_autonuma_fits(&m, Kind::Numa01, 768 << 20, 2, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("available memory"), "{e}");
        let e = check_autonuma_fits(&m, Kind::Numa01, 400 << 20, 2, Some(600 << 20))
            .unwrap_err()
            .to_string();
        assert!(e.contains("free on the node"), "{e}");
        let e = check_autonuma_fits(&m, Kind::Numa02, 8192, 4, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("less than a page"), "{e}");
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let m = machine(32 << 20, 1 << 30);
        assert!(check_fits(&m, 2, 1000, 20).is_ok());
        let e = check_fits(&m, 2, 100_000_000, 20).unwrap_err().to_string();
        assert!(e.contains("does not fit"), "{e}");
        assert!(check_fits(&m, 2, 0, 20).is_err());
        assert!(check_fits(&m, 2, u64::MAX / 2, 20)
            .unwrap_err()
            .to_string()
            .contains("far more"));
    }
}
