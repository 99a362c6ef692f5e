//! # numalab-bench: one definition per benchmark
//!
//! A benchmark is defined once, here, and every backend runs that
//! definition: the host ([`numalab-host`]), a QEMU guest (the host backend
//! inside the guest) and the simulator ([`numalab-sim`]). The definition
//! is everything a comparison depends on:
//!
//! - **its arguments** ([`args`]): one clap argument set per benchmark,
//!   flattened into both `numalab run` and `numalab sim`, so every flag has
//!   the same name, meaning and default everywhere; list-valued flags
//!   (`--tasks 4,8,16`, `--threads 2,4`, `--placement default,bind`) are
//!   scans that expand into several cases;
//! - **its resolved parameters** ([`Case`]): the flags with every default
//!   filled in from the machine ([`sizing`], through a backend's
//!   [`Calibration`]), validated before anything runs;
//! - **its case key** ([`Case::params`]): the flat, scalar parameters that
//!   define the work, with the same names and values whichever backend
//!   runs it. Two records with the same benchmark and the same key did the
//!   same work and land in the same row of `compare`. How a backend
//!   realised the case (the CPU list of a placement on this topology, how
//!   residency was measured, the simulator's policies, why a size was
//!   chosen) goes under the record's `backend`, never into the key;
//! - **its metrics** ([`metrics`]): names, units and which direction is
//!   better, one table for every backend;
//! - **its convergence rule** ([`Case::convergence`]), evaluated by
//!   `numalab_record::convergence` on whatever samples the backend took;
//! - **its placement plan** ([`autonuma::plan`], `numalab_topology::placement`):
//!   which node each process binds to and where each thread runs, the same
//!   plan for a real machine and a modelled one.
//!
//! Every benchmark is one entry of the [`registry`], defined in its own
//! module: its name, docs line, argument type (the same clap type parses
//! `numalab run NAME ...`, `numalab sim NAME ...` and a campaign plan's
//! `[[benchmark]]`), how those flags become a [`args::Spec`], and the
//! [`metrics`] its records carry. Every list of benchmarks (the
//! subcommands, [`args::NAMES`], the names a command may not take, the
//! simulator's `--list`, the report's placement family) is derived from
//! the registry, so adding a benchmark means: its module here (arguments,
//! parameters, resolve, key, registry entry), a line in [`registry::ALL`]
//! and a [`registry::Spec`] variant (registry.rs), its [`Case`] variant
//! (here), the host's run function and the simulator's workload model.
//! docs/architecture.md lists the files.
//!
//! [`numalab-host`]: ../numalab_host/index.html
//! [`numalab-sim`]: ../numalab_sim/index.html

#![forbid(unsafe_code)]

pub mod args;
pub mod command;
pub mod metrics;
pub mod registry;
pub mod sizing;

// The benchmarks' modules, `Case` and `Spec` are declared in the
// registry, one place for all that lists the benchmarks, and are named
// from the crate's root as before (`numalab_bench::autonuma`, `Case`).
pub use registry::*;

use numalab_topology::MachineInfo;
use serde_json::Value;
use std::collections::BTreeMap;

/// Why a benchmark cannot be resolved or run as asked: one line naming
/// the flag or the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BenchError(pub String);

impl BenchError {
    pub fn new(msg: impl Into<String>) -> BenchError {
        BenchError(msg.into())
    }
}

impl From<String> for BenchError {
    fn from(s: String) -> BenchError {
        BenchError(s)
    }
}

/// What a backend knows of the machine a benchmark will run on, for the
/// defaults that scale with it. The host measures; the simulator answers
/// from its model.
pub trait Calibration {
    /// The machine as recorded (topology, memory, kernel).
    fn machine(&self) -> &MachineInfo;
    /// Free memory on node `node`, when known.
    fn node_free_bytes(&self, node: u32) -> Option<u64>;
    /// Bytes per second that `threads` threads together zero, over
    /// `working_set` distinct bytes (at cache speed when that fits in the
    /// LLC): the basis of the default loop counts.
    fn zeroing_bandwidth(&self, threads: u32, working_set: u64) -> f64;
    /// As [`Calibration::zeroing_bandwidth`], the threads spread over
    /// `cpu_nodes` (`pinned`: each kept on its node, so the run lasts as
    /// long as the slowest node's share) and the memory on `mem_node`, as
    /// the benchmark places them. The host and the guest measure threads
    /// zeroing local memory (this default); the simulator answers for the
    /// placement, buses and controllers included, so that its runs last
    /// what was asked.
    fn zeroing_bandwidth_on(
        &self,
        threads: u32,
        working_set: u64,
        cpu_nodes: &[u32],
        mem_node: u32,
        pinned: bool,
    ) -> f64 {
        let _ = (cpu_nodes, mem_node, pinned);
        self.zeroing_bandwidth(threads, working_set)
    }
    /// Bytes per second of buffer `threads` threads together sweep as
    /// `op` does (the mem benchmark's loads, read-modify-writes or
    /// zeroing) over `working_set` distinct bytes: the basis of mem's
    /// default loop counts. Loads are not zeroing: one thread of this
    /// project's 2-vCPU EPYC host read memory at 29-31 GB/s where it
    /// zeroed it at 88-90 (docs/benchmarks.md, mem). The default is the zeroing
    /// rate, halved for a read-modify-write (each line crosses the bus
    /// twice), for a backend that cannot measure more.
    fn sweep_bandwidth(&self, op: crate::mem::Op, threads: u32, working_set: u64) -> f64 {
        self.zeroing_bandwidth(threads, working_set) / op.lines_per_line()
    }
    /// As [`Calibration::sweep_bandwidth`], placed as
    /// [`Calibration::zeroing_bandwidth_on`] (a memset is that).
    fn sweep_bandwidth_on(
        &self,
        op: crate::mem::Op,
        threads: u32,
        working_set: u64,
        cpu_nodes: &[u32],
        mem_node: u32,
        pinned: bool,
    ) -> f64 {
        match op {
            crate::mem::Op::Memset => {
                self.zeroing_bandwidth_on(threads, working_set, cpu_nodes, mem_node, pinned)
            }
            _ => self.sweep_bandwidth(op, threads, working_set),
        }
    }
    /// Iterations per second of one spinning task alone on a core: the
    /// basis of spin's default iterations.
    fn spin_rate(&self) -> f64;
    /// Bytes per second one thread first-touches fresh memory at, page
    /// faults included (infinite where that costs nothing): the autonuma
    /// benchmarks' main thread does it before their threads start, inside
    /// the time their runs are sized for.
    fn first_touch_rate(&self) -> f64;
}

/// A scalar parameter value as a person reads it (strings unquoted).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The parameter names whose values differ between `cases` (of the same
/// benchmark or not), in a stable order: the keys a title needs.
pub fn varying_keys(cases: &[Case]) -> Vec<String> {
    let keys: Vec<BTreeMap<String, Value>> = cases.iter().map(Case::params).collect();
    let mut names: Vec<String> = keys.iter().flat_map(|k| k.keys().cloned()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| {
            let first = keys[0].get(n);
            keys.iter().any(|k| k.get(n) != first)
        })
        .collect()
}

/// The cases of one invocation, and how their defaults were chosen (one
/// line each, printed before the runs and kept in every record).
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    pub cases: Vec<Case>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}
