//! The numa_test task: Focht's `randupdt` (seed 000), random indirect
//! updates `a[ix[i]] += b[i]` over a random index vector, 100 passes, each
//! pass followed by `b[k] = a[k]` as in the original so the passes cannot
//! be folded away. 20 bytes per element (two doubles and an int), one task
//! per process.
//!
//! Node residency is measured by the task itself: every
//! [`CHUNK`] updates it reads its CPU (`sched_getcpu`, via rseq/vDSO) and
//! its thread CPU time (`CLOCK_THREAD_CPUTIME_ID`), and charges the CPU
//! time since the previous reading to the CPU seen at that previous
//! reading. Resolution is one chunk (well under a millisecond to a few
//! milliseconds of work); the overhead is two cheap calls per 65536 updates.

use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;

/// Updates between two residency readings.
pub const CHUNK: usize = 1 << 16;
/// Passes over the index vector, as in the seed.
pub const PASSES: u32 = 100;
/// Bytes per element: `a[i]` and `b[i]` (f64) and `ix[i]` (i32).
pub const BYTES_PER_ELEMENT: u64 = 20;

/// What a task reports to the parent on its last stdout line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskReport {
    pub initial_cpu: u32,
    /// CPU time in nanoseconds charged to each CPU id.
    pub cpu_time_ns: BTreeMap<u32, u64>,
    pub readings: u64,
    pub passes: u32,
    pub elements: u64,
    /// Sum of `a`, to show the work was done (and keep it observable).
    pub checksum: f64,
}

pub(crate) fn thread_cpu_ns() -> u64 {
    numalab_linux::clock::thread_cpu().as_nanos() as u64
}

/// CPU time charged to the CPU a thread was seen on, reading by reading.
pub(crate) struct Residency {
    pub(crate) last_cpu: u32,
    last_ns: u64,
    pub(crate) per_cpu: BTreeMap<u32, u64>,
    pub(crate) readings: u64,
}

impl Residency {
    pub(crate) fn start() -> Residency {
        Residency {
            last_cpu: numalab_linux::numa::current_cpu().unwrap_or(0),
            last_ns: thread_cpu_ns(),
            per_cpu: BTreeMap::new(),
            readings: 0,
        }
    }
    #[inline]
    pub(crate) fn tick(&mut self) {
        let now = thread_cpu_ns();
        *self.per_cpu.entry(self.last_cpu).or_insert(0) += now - self.last_ns;
        self.last_ns = now;
        self.last_cpu = numalab_linux::numa::current_cpu().unwrap_or(self.last_cpu);
        self.readings += 1;
    }
}

/// Run one task: `elements` elements, `passes` passes. Progress is written
/// to `progress` as one line `pass K` after each pass; the caller prints
/// the returned report.
pub fn run_task(elements: usize, passes: u32, seed: u64, progress: &mut dyn Write) -> TaskReport {
    let mut res = Residency::start();
    let initial_cpu = res.last_cpu;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut a = vec![0.0f64; elements];
    let mut b: Vec<f64> = (0..elements).map(|i| i as f64).collect();
    // Random indices in [0, elements). (The seed's formula could produce
    // `elements` itself, one past the end; numalab keeps them in range.)
    let ix: Vec<u32> = (0..elements)
        .map(|_| ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * elements as f64) as u32)
        .collect();
    debug_assert!(ix.iter().all(|&j| (j as usize) < elements));
    res.tick();
    for k in 0..passes as usize {
        let mut start = 0;
        while start < elements {
            let end = (start + CHUNK).min(elements);
            // Every ix value is < elements = a.len() by construction
            // above: the index check of `a` is never taken.
            for (&j, &bi) in ix[start..end].iter().zip(&b[start..end]) {
                a[j as usize] += bi;
            }
            res.tick();
            start = end;
        }
        if k < elements {
            b[k] = a[k];
        }
        let _ = writeln!(progress, "pass {}", k + 1);
        let _ = progress.flush();
    }
    res.tick();
    TaskReport {
        initial_cpu,
        cpu_time_ns: res.per_cpu,
        readings: res.readings,
        passes,
        elements: elements as u64,
        checksum: a.iter().sum(),
    }
}

/// Entry point of the hidden `numalab __task randupdt ELEMENTS SEED`
/// process: progress lines, then `done <json>` on stdout.
pub fn task_main(args: &[String]) -> i32 {
    let parse = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok());
    let (Some(elements), Some(seed)) = (parse(0), parse(1)) else {
        numalab_linux::errln!("numalab: internal: usage: __task randupdt ELEMENTS SEED [PASSES]");
        return 2;
    };
    let passes = parse(2).map(|p| p as u32).unwrap_or(PASSES);
    // numa_test's tasks are numbered from 1 (the seed is the number).
    numalab_linux::child::set_task_name(&format!("nt-task-{seed}"));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let report = run_task(elements as usize, passes, seed, &mut out);
    let _ = writeln!(
        out,
        "done {}",
        serde_json::to_string(&report).expect("report serialises")
    );
    let _ = out.flush();
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn does_all_passes_and_charges_all_time() {
        let mut progress = Vec::new();
        let r = run_task(200_000, 5, 7, &mut progress);
        assert_eq!(r.passes, 5);
        assert_eq!(String::from_utf8(progress).unwrap().lines().count(), 5);
        // every update adds b[i] >= 0 once per pass: the sum is large
        assert!(r.checksum > 0.0);
        assert!(r.readings >= 5 * (200_000 / CHUNK as u64));
        let charged: u64 = r.cpu_time_ns.values().sum();
        assert!(charged > 0);
        let allowed = numalab_linux::numa::get_affinity(0).unwrap();
        assert!(r.cpu_time_ns.keys().all(|c| allowed.contains(c)));
    }

    #[test]
    fn same_seed_same_work() {
        let a = run_task(10_000, 2, 3, &mut Vec::new());
        let b = run_task(10_000, 2, 3, &mut Vec::new());
        let c = run_task(10_000, 2, 4, &mut Vec::new());
        assert_eq!(a.checksum, b.checksum);
        assert_ne!(a.checksum, c.checksum);
    }
}
