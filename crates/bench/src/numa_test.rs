//! Focht's numa_test (LKML, October 2002): N tasks of random indirect
//! updates (`a[ix[i]] += b[i]`, randupdt.c) run in parallel as separate
//! processes, with a hackbench message storm started 3 s in as a load
//! peak that disturbs their placement. Reported per task: % of time per
//! node, the node it started on and the node it ran on most (iSched,
//! MSched) and user time; per run: elapsed, total and average user time,
//! and the storm's own time H.

use crate::args::*;
use crate::metrics;
use crate::registry::Benchmark;
use crate::{sizing, BenchError, Calibration, Case, Resolved};
use serde_json::Value;
use std::collections::BTreeMap;

/// Bytes per element: `a` (8) + `b` (8) + `ix` (4), as randupdt.c allocates.
pub const BYTES_PER_ELEMENT: u64 = 20;
/// Passes each task makes over its arrays (randupdt.c's loop count).
pub const PASSES: u32 = 100;
/// The original's elements per task.
pub const SEED_ELEMENTS: u64 = 1_000_000;
/// The load peak: `hackbench 20` (20 groups of 20 senders and 20
/// receivers, 100 messages of 100 bytes), 3 s after the start.
pub const PEAK_AT_S: f64 = 3.0;
pub const PEAK_GROUPS: u32 = 20;
pub const PEAK_FDS: u32 = 20;
pub const PEAK_LOOPS: u32 = 100;
pub const PEAK_SIZE: u32 = 100;
/// Most tasks numalab starts for one run.
pub const MAX_TASKS: u32 = 4096;

/// The load peak 3 s after the start.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Disturb {
    /// A hackbench message storm, as the original's `dispatch` harness ran
    Messaging,
    /// None
    None,
}

impl Disturb {
    pub fn name(self) -> &'static str {
        match self {
            Disturb::Messaging => "messaging",
            Disturb::None => "none",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Params {
    pub tasks: u32,
    /// Elements per task.
    pub size: u64,
    pub passes: u32,
    pub disturb: Disturb,
    /// Seconds after the start the load peak begins.
    pub peak_at_s: f64,
}

impl Params {
    pub fn new(tasks: u32, size: u64, disturb: Disturb) -> Params {
        Params {
            tasks,
            size,
            passes: PASSES,
            disturb,
            // Tests may move the peak earlier (NUMALAB_NUMA_TEST_PEAK_AT)
            // so that a short run still sees it; the record says when.
            peak_at_s: std::env::var("NUMALAB_NUMA_TEST_PEAK_AT")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .unwrap_or(PEAK_AT_S),
        }
    }

    pub fn bytes_per_task(&self) -> u64 {
        self.size * BYTES_PER_ELEMENT
    }

    pub(crate) fn key(&self) -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        m.insert("tasks".into(), self.tasks.into());
        m.insert("size".into(), self.size.into());
        m.insert("passes".into(), self.passes.into());
        m.insert("disturb".into(), self.disturb.name().into());
        if self.disturb == Disturb::Messaging {
            m.insert("peak_at_s".into(), self.peak_at_s.into());
        }
        m
    }
}

/// One case per task count, all with the same size (chosen for the
/// largest count, so every count does the same work per task).
pub fn resolve(a: &NumaTestArgs, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
    let machine = cal.machine();
    let max_tasks = a.tasks.iter().copied().max().unwrap_or(1);
    let mut out = Resolved::default();
    let size = match a.size {
        Some(e) => {
            sizing::check_fits(machine, max_tasks, e, BYTES_PER_ELEMENT)?;
            out.notes
                .push(format!("size: {e} elements per task (--size)"));
            e
        }
        None => {
            let c = sizing::numa_test_elements(machine, max_tasks, BYTES_PER_ELEMENT)?;
            out.notes.push(format!("size: {}", c.explanation));
            out.warnings.extend(c.warning);
            c.elements
        }
    };
    out.cases = a
        .tasks
        .iter()
        .map(|&n| Case::NumaTest(Params::new(n, size, a.disturb)))
        .collect();
    Ok(out)
}

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct NumaTestArgs {
    /// Task counts to run, e.g. 4,8,16 (one case each)
    #[arg(long, value_name = "N,...", allow_hyphen_values = true, value_parser = parse_tasks, default_value = "4")]
    pub tasks: List<u32>,
    /// Elements per task (20 bytes each; the original used 1000000);
    /// default: 8x the largest LLC, within half the free memory
    #[arg(long, value_name = "ELEMENTS", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub size: Option<u64>,
    /// The load peak 3 s after the start
    #[arg(long, value_enum, default_value_t = Disturb::Messaging)]
    pub disturb: Disturb,
}

/// The registry's entry ([`crate::registry`]).
pub const BENCHMARK: Benchmark = Benchmark::new::<NumaTestArgs>(
    "numa_test",
    "Focht's numa_test (LKML, 2002): N tasks of random indirect updates, a hackbench load peak 3 s in",
    |m| crate::registry::parse_as(m, crate::args::Spec::NumaTest),
    &[metrics::ELAPSED_S, metrics::USER_S, metrics::SYS_S, metrics::AVG_USER_S, metrics::HACKBENCH_S],
);
