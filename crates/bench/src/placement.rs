//! The placement experiments of the NEST evaluation (Chaloyard, 2022):
//! where should a few tasks run? The same work runs on CPU sets derived
//! from the topology (`numalab_topology::placement`: spread, spread-smt,
//! packed, packed-smt; the work update's split, mix, same_ccd, same_ccx),
//! or on a list the user gives, as `taskset -c` would restrict it.
//!
//! - `spin`: N processes each spinning through a fixed number of
//!   iterations of a dependent xorshift chain (pure ALU work: what two SMT
//!   siblings share, what a cache does not help).
//! - `hackbench`: a hackbench message storm (groups, fds, loops, message
//!   size as hackbench's -g -f -l -s) whose every process inherits the set.
//!
//! The case key names the placement, not its CPU list: `packed` on this
//! machine and `packed` on a simulated one are the same experiment on two
//! machines. The list itself is a backend fact, kept in the record's
//! `backend.details.cpus`. A list given with `--cpus` is its own placement
//! (named by the list).

use crate::args::*;
use crate::metrics;
use crate::registry::Benchmark;
use crate::{BenchError, Calibration, Case, Resolved};
use numalab_topology::placement::Placement;
use numalab_topology::{cpulist, Topology};
use serde_json::Value;
use std::collections::BTreeMap;

/// Iterations of one spinning task between two residency readings.
pub const SPIN_CHUNK: u64 = 1 << 20;
/// Cycles one spin iteration takes: three `x ^= x << k` / `x ^= x >> k`
/// steps, each a shift and a dependent xor, six dependent one-cycle ALU
/// operations (from the loop's code; the simulator's cost of an iteration
/// unless its machine file gives `costs.spin_ns`).
pub const SPIN_CYCLES_PER_ITERATION: f64 = 6.0;

/// Where the tasks may run: a placement's name and its CPUs on the
/// machine the case was resolved for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuSet {
    /// `default`, `spread`, ..., or the CPU list given with `--cpus`.
    pub name: String,
    /// `None`: every CPU (no affinity set).
    pub cpus: Option<Vec<u32>>,
}

impl CpuSet {
    pub fn describe(&self) -> String {
        match &self.cpus {
            Some(c) => cpulist::format(c),
            None => "all".into(),
        }
    }

    pub(crate) fn details(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([("cpus".to_string(), self.describe().into())])
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpinParams {
    pub tasks: u32,
    pub iterations: u64,
    pub set: CpuSet,
}

impl SpinParams {
    pub(crate) fn key(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([
            ("tasks".to_string(), self.tasks.into()),
            ("iterations".to_string(), self.iterations.into()),
            ("placement".to_string(), self.set.name.clone().into()),
        ])
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HackbenchParams {
    pub groups: u32,
    pub fds: u32,
    pub loops: u32,
    pub size: u32,
    /// CPUs in each named placement's set.
    pub ncpus: u32,
    pub set: CpuSet,
}

impl HackbenchParams {
    pub(crate) fn key(&self) -> BTreeMap<String, Value> {
        let mut m = BTreeMap::from([
            ("groups".to_string(), self.groups.into()),
            ("fds".to_string(), self.fds.into()),
            ("loops".to_string(), self.loops.into()),
            ("size".to_string(), self.size.into()),
            ("placement".to_string(), self.set.name.clone().into()),
        ]);
        if self.set.name != "default" && self.set.name != self.set.describe() {
            m.insert("ncpus".into(), self.ncpus.into());
        }
        m
    }

    /// Processes one storm starts.
    pub fn processes(&self) -> u64 {
        2 * self.groups as u64 * self.fds as u64
    }
}

/// Half the cores: the default set size (and spin's default task count).
pub fn default_k(topo: &Topology) -> usize {
    (topo.core_count() / 2).max(1)
}

/// Check a user's CPU list against the machine.
pub fn check_cpus(topo: &Topology, cpus: &[u32]) -> Result<(), BenchError> {
    if cpus.is_empty() {
        return Err(BenchError::new("--cpus: the list is empty"));
    }
    for c in cpus {
        if topo.cpu(*c).is_none() {
            return Err(BenchError(format!(
                "--cpus: CPU {c} is not on this machine (CPUs {})",
                cpulist::format(&topo.cpus.iter().map(|c| c.id).collect::<Vec<_>>())
            )));
        }
    }
    Ok(())
}

/// The CPU sets to run on, each checked against the machine: an explicit
/// list, the placements asked for, or every placement the machine gives.
pub fn sets(topo: &Topology, w: &Where, k: usize) -> Result<Vec<CpuSet>, BenchError> {
    if let Some(cpus) = &w.cpus {
        check_cpus(topo, cpus)?;
        return Ok(vec![CpuSet {
            name: cpulist::format(cpus),
            cpus: Some(cpus.0.clone()),
        }]);
    }
    let list = w.placement.clone().map(|l| l.0).unwrap_or_else(|| {
        Placement::ALL
            .into_iter()
            .filter(|p| topo.smt() || !matches!(p, Placement::SpreadSmt | Placement::PackedSmt))
            .collect()
    });
    let mut out = Vec::new();
    for p in list {
        let cpus = p
            .cpus(topo, k)
            .map_err(|e| BenchError(format!("--placement {}: {e}", p.name())))?;
        out.push(CpuSet {
            name: p.name().into(),
            cpus,
        });
    }
    Ok(out)
}

fn say_sets(out: &mut Resolved, sets: &[CpuSet]) {
    for s in sets {
        out.notes
            .push(format!("placement {}: CPUs {}", s.name, s.describe()));
    }
}

pub fn resolve_spin(a: &SpinArgs, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
    let topo = &cal.machine().topology;
    let mut out = Resolved::default();
    let tasks = match a.tasks {
        Some(t) => t,
        None => {
            let t = default_k(topo) as u32;
            out.notes
                .push(format!("tasks: {t} (half the {} cores)", topo.core_count()));
            t
        }
    };
    let sets = sets(topo, &a.place, tasks as usize)?;
    say_sets(&mut out, &sets);
    let iterations = match a.iterations {
        Some(n) => n,
        None => {
            let rate = cal.spin_rate();
            let n = ((rate * a.seconds).round() as u64).max(SPIN_CHUNK);
            out.notes.push(format!(
                "iterations: {n} per task, about {} s alone on a core at {:.0} M/s; --iterations to set",
                a.seconds,
                rate / 1e6
            ));
            n
        }
    };
    out.cases = sets
        .into_iter()
        .map(|set| {
            Case::Spin(SpinParams {
                tasks,
                iterations,
                set,
            })
        })
        .collect();
    Ok(out)
}

pub fn resolve_hackbench(a: &HackbenchArgs, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
    let topo = &cal.machine().topology;
    let mut out = Resolved::default();
    let k = a.ncpus.map_or(default_k(topo), |k| k as usize);
    let sets = sets(topo, &a.place, k)?;
    out.notes.push(format!(
        "hackbench: {} groups x {} fds ({} processes), {} loops of {}-byte messages",
        a.groups,
        a.fds,
        2 * a.groups as u64 * a.fds as u64,
        a.loops,
        a.size
    ));
    say_sets(&mut out, &sets);
    out.cases = sets
        .into_iter()
        .map(|set| {
            Case::Hackbench(HackbenchParams {
                groups: a.groups,
                fds: a.fds,
                loops: a.loops,
                size: a.size,
                ncpus: k as u32,
                set,
            })
        })
        .collect();
    Ok(out)
}

/// Where the placement experiments run: named placements, or a list.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct Where {
    /// Placements, one case each: default, spread (split), spread-smt
    /// (mix), packed (same_ccd), packed-smt (same_ccx); default: every one
    /// this machine can give
    #[arg(long, value_name = "P,...", value_parser = parse_placements, conflicts_with = "cpus")]
    pub placement: Option<List<Placement>>,
    /// An explicit CPU list instead, e.g. 0,6,12 or 0-5 (as taskset -c)
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<List<u32>>,
}

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct SpinArgs {
    /// Spinning tasks (processes); default: half the cores
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub tasks: Option<u32>,
    /// Iterations per task; default: as many as take about --seconds
    /// alone on a core
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// Seconds a task should spin alone on a core, for the default iterations
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = 10.0, value_parser = parse_seconds)]
    pub seconds: f64,
    #[command(flatten)]
    pub place: Where,
}

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct HackbenchArgs {
    /// Groups of senders and receivers (hackbench -g)
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub groups: u32,
    /// Senders and receivers per group (hackbench -f)
    #[arg(long, default_value_t = 50, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub fds: u32,
    /// Messages each sender sends to each receiver (hackbench -l)
    #[arg(long, default_value_t = 200, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub loops: u32,
    /// Message size in bytes (hackbench -s)
    #[arg(long, default_value_t = 512, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1048576))]
    pub size: u32,
    /// CPUs in each placement's set; default: half the cores
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub ncpus: Option<u32>,
    #[command(flatten)]
    pub place: Where,
}

/// The registry's entry ([`crate::registry`]).
pub const SPIN: Benchmark = Benchmark::new::<SpinArgs>(
    "spin",
    "Placement experiment (NEST evaluation, 2022): N spinning tasks on CPU sets derived from the topology",
    |m| crate::registry::parse_as(m, crate::args::Spec::Spin),
    &[metrics::ELAPSED_S, metrics::USER_S, metrics::SYS_S],
);

/// The registry's entry ([`crate::registry`]).
pub const HACKBENCH: Benchmark = Benchmark::new::<HackbenchArgs>(
    "hackbench",
    "Placement experiment (NEST evaluation, 2022): a hackbench message storm on CPU sets derived from the topology",
    |m| crate::registry::parse_as(m, crate::args::Spec::Hackbench),
    &[metrics::ELAPSED_S, metrics::USER_S, metrics::SYS_S, metrics::HACKBENCH_S],
);
