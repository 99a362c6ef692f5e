//! Arcangeli's autonuma-benchmark (2012) and the two-halves
//! microbenchmark of the IBS-driven NUMA balancing patches (Bharata B Rao,
//! 2023), with sizes, thread counts and placements chosen for the machine.
//!
//! Every benchmark here is the same machine: one or more processes, each
//! with one anonymous buffer, whose threads zero memory over and over
//! (`memset`, like the original `bzero`):
//!
//! | benchmark             | processes | threads        | each thread zeroes        |
//! |-----------------------|-----------|----------------|---------------------------|
//! | `numa01`              | 2         | ncpus/2 each   | its process's whole buffer|
//! | `numa01_THREAD_ALLOC` | 2         | ncpus/2 each   | its own slice             |
//! | `numa02`              | 1         | ncpus          | its own slice             |
//! | `numa02_SMT`          | 1         | ncpus/2        | its own slice             |
//! | `twohalves`           | 1         | 2 sets, pinned | its own slice of its half |
//!
//! What differs is where threads may run and where the buffer's pages are
//! put before the work starts ([`Placement`]); [`plan`] turns a benchmark,
//! a placement and a topology into one [`ProcPlan`] per process, which is
//! what the process is told (as JSON on its command line).

use crate::args::*;
use crate::metrics;
use crate::registry::Benchmark;
use crate::{sizing, BenchError, Calibration, Case, Resolved};
use numalab_record::convergence::{Capacity, Rule};
use numalab_topology::{human_bytes, Topology};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    Numa01,
    Numa01ThreadAlloc,
    Numa02,
    Numa02Smt,
    TwoHalves,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Numa01,
        Kind::Numa01ThreadAlloc,
        Kind::Numa02,
        Kind::Numa02Smt,
        Kind::TwoHalves,
    ];

    /// The benchmark's name, as in the original suite.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Numa01 => "numa01",
            Kind::Numa01ThreadAlloc => "numa01_THREAD_ALLOC",
            Kind::Numa02 => "numa02",
            Kind::Numa02Smt => "numa02_SMT",
            Kind::TwoHalves => "twohalves",
        }
    }

    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn processes(self) -> u32 {
        match self {
            Kind::Numa01 | Kind::Numa01ThreadAlloc => 2,
            _ => 1,
        }
    }

    /// Every thread works on its process's whole buffer (numa01), rather
    /// than on its own slice.
    pub fn shared(self) -> bool {
        self == Kind::Numa01
    }

    /// The original's memory per process (twohalves: the seed's 16 GB in all).
    pub fn original_bytes(self) -> u64 {
        match self {
            Kind::Numa01 | Kind::Numa01ThreadAlloc => 3 << 30,
            Kind::Numa02 | Kind::Numa02Smt => 1 << 30,
            Kind::TwoHalves => 16 << 30,
        }
    }

    /// The original's loop count (twohalves: the seed does not say).
    pub fn original_loops(self) -> Option<u64> {
        match self {
            Kind::Numa01 => Some(50),
            Kind::Numa01ThreadAlloc => Some(1000),
            Kind::Numa02 | Kind::Numa02Smt => Some(800),
            Kind::TwoHalves => None,
        }
    }

    /// Default threads per process (twohalves: per set, for the set's node).
    pub fn default_threads(self, topo: &Topology) -> u32 {
        let ncpus = topo.cpus.len().max(1) as u32;
        match self {
            Kind::Numa01 | Kind::Numa01ThreadAlloc | Kind::Numa02Smt => (ncpus / 2).max(1),
            Kind::Numa02 => ncpus,
            Kind::TwoHalves => {
                let nodes = cpu_nodes(topo);
                if nodes.len() >= 2 {
                    nodes
                        .iter()
                        .take(2)
                        .map(|n| topo.nodes[n.0].cpus.len() as u32)
                        .min()
                        .unwrap_or(1)
                        .max(1)
                } else {
                    (ncpus / 2).max(1)
                }
            }
        }
    }

    /// Threads in all, given threads per process (or per set).
    pub fn total_threads(self, threads: u32) -> u32 {
        match self {
            Kind::TwoHalves => 2 * threads,
            k => k.processes() * threads,
        }
    }

    /// Buffers of `bytes` per process, or for twohalves `bytes` in all.
    pub fn total_bytes(self, bytes: u64) -> u64 {
        match self {
            Kind::TwoHalves => bytes,
            k => bytes * k.processes() as u64,
        }
    }

    /// What converged means for this benchmark (the criteria are shared
    /// with the simulator, in [`numalab_record::convergence`]).
    pub fn convergence_rule(self) -> Rule {
        match self {
            Kind::Numa01 => Rule::Process,
            Kind::Numa01ThreadAlloc | Kind::Numa02 => Rule::Thread(Capacity::Cpus),
            Kind::Numa02Smt => Rule::Thread(Capacity::Cores),
            Kind::TwoHalves => Rule::Thread(Capacity::Pinned),
        }
    }

    /// How records name thread `t` of process `process` (of `nprocs`),
    /// `threads` per process (twohalves: per set).
    pub fn task_name(self, nprocs: usize, threads: u32, process: u32, t: u32) -> String {
        match self {
            Kind::TwoHalves => format!("set {} thread {}", t / threads.max(1), t % threads.max(1)),
            _ if nprocs > 1 => format!("process {process} thread {t}"),
            _ => format!("thread {t}"),
        }
    }

    /// What the loop count is called: twohalves counts iterations.
    pub fn loops_name(self) -> &'static str {
        if self == Kind::TwoHalves {
            "iterations"
        } else {
            "loops"
        }
    }

    /// What `threads` counts per: a process, or a set (twohalves).
    pub fn thread_unit(self) -> &'static str {
        if self == Kind::TwoHalves {
            "set"
        } else {
            "process"
        }
    }

    /// What `bytes` counts per: a process, or in all (twohalves).
    pub fn bytes_unit(self) -> &'static str {
        if self == Kind::TwoHalves {
            "in all"
        } else {
            "per process"
        }
    }

    /// Every thread zeroes its process's whole buffer once before its
    /// loops: numa01.c's `thread()` begins with `bzero(p_global, SIZE)`
    /// (under NO_BIND_FORCE_SAME_NODE bound to one node, the same for
    /// both processes; the other builds too), then runs its `nr` loops
    /// (50, THREAD_ALLOC 1000) of `bzero(p, THREAD_SIZE)`. numa02.c's
    /// threads do not: its main thread zeroes the buffer (BINDMAP).
    pub fn whole_first(self) -> bool {
        matches!(self, Kind::Numa01 | Kind::Numa01ThreadAlloc)
    }

    /// The whole-buffer pass of [`Kind::whole_first`] in loops of a
    /// thread's own region, the same bytes: 1 for numa01 (its region is
    /// the whole buffer), `threads` for numa01_THREAD_ALLOC (the buffer
    /// is `threads` slices), 0 otherwise.
    pub fn whole_first_loops(self, threads: u32) -> u64 {
        match self {
            Kind::Numa01 => 1,
            Kind::Numa01ThreadAlloc => threads.max(1) as u64,
            _ => 0,
        }
    }

    /// Bytes zeroed by all threads together in one loop.
    pub fn bytes_per_loop(self, bytes: u64, threads: u32) -> u64 {
        match self {
            Kind::Numa01 => 2 * threads as u64 * bytes,
            Kind::Numa01ThreadAlloc => 2 * bytes,
            _ => bytes,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// The original's default: all memory first-touched on the first node
    /// (bound there for the first touch only), then the kernel decides.
    Default,
    /// Each process (numa01*: process p on the p-th half of the nodes) or
    /// thread (numa02*, twohalves) pinned to its ideal nodes, and its
    /// memory bound there: the lower bound.
    Bind,
    /// Memory and threads bound to different nodes, for every process:
    /// every access is remote (numa01*: each process on its half of the
    /// nodes, its memory on the other half).
    InverseBind,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::Default => "default",
            Placement::Bind => "bind",
            Placement::InverseBind => "inverse-bind",
        }
    }
    pub fn from_name(s: &str) -> Option<Placement> {
        [Placement::Default, Placement::Bind, Placement::InverseBind]
            .into_iter()
            .find(|p| p.name() == s)
    }
}

/// Where a process's buffer is put before its threads start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemPlan {
    /// Bound to `node` while the main thread zeroes it all (first touch),
    /// then back to the default policy: the pages stay where they are
    /// until NUMA balancing moves them.
    FirstTouchThenDefault { node: u32 },
    /// Each region bound (MPOL_BIND) to its node for the whole run:
    /// `nodes[r]` for region `r` (one region when the buffer is shared,
    /// else one per thread).
    Bound { nodes: Vec<u32> },
    /// The whole buffer bound (MPOL_BIND) to the node set `nodes` for the
    /// whole run, as numa01's HARD_BIND binds a process's memory to half
    /// the nodes (`set_mempolicy` with NODEMASK1 or NODEMASK2). In the
    /// original every thread first touches the buffer at once from CPUs
    /// spread over those nodes, so its pages end up spread over them;
    /// numalab makes that spread deterministic: the first touch is
    /// interleaved over `nodes` (MPOL_INTERLEAVE, see [`interleave`]),
    /// then the buffer is bound to them (pages stay where they are).
    BoundToSet { nodes: Vec<u32> },
}

/// The node an interleaved first touch puts page `page` of a buffer on
/// (the page's index from the start of the buffer; the simulator's pages
/// are its 2 MiB chunks): round robin over `nodes`, the even spread
/// MPOL_INTERLEAVE makes (the kernel's first node depends on the address).
pub fn interleave(nodes: &[u32], page: u64) -> Option<u32> {
    if nodes.is_empty() {
        return None;
    }
    Some(nodes[(page % nodes.len() as u64) as usize])
}

/// What one benchmark process does; sent to it as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcPlan {
    pub process: u32,
    pub bytes: u64,
    pub loops: u64,
    /// Every thread zeroes the whole buffer; otherwise thread `t` zeroes
    /// slice `t` of `threads` equal, page-aligned slices.
    pub shared: bool,
    pub threads: u32,
    /// CPUs the whole process is pinned to before the first touch.
    pub process_cpus: Option<Vec<u32>>,
    /// CPUs each thread is pinned to (empty: none pinned).
    pub thread_cpus: Vec<Option<Vec<u32>>>,
    pub memory: MemPlan,
    /// Before its loops every thread zeroes the process's whole buffer
    /// once (numa01 and numa01_THREAD_ALLOC: numa01.c's `thread()` runs
    /// `bzero(p_global, SIZE)` before `for (i = 0; i < nr; i++)
    /// bzero(p, THREAD_SIZE)`, in every build).
    #[serde(default)]
    pub whole_first: bool,
}

impl ProcPlan {
    /// The regions threads work on: (offset, length) within the buffer.
    pub fn regions(&self, page: u64) -> Vec<(u64, u64)> {
        if self.shared {
            return vec![(0, self.bytes)];
        }
        slices(self.bytes, self.threads, page)
    }

    /// The region thread `t` works on.
    pub fn region_of_thread(&self, t: u32) -> usize {
        if self.shared {
            0
        } else {
            t as usize
        }
    }
}

/// `n` page-aligned slices covering `bytes` (rounded up to pages).
pub fn slices(bytes: u64, n: u32, page: u64) -> Vec<(u64, u64)> {
    let pages = bytes.div_ceil(page);
    let n = n.max(1) as u64;
    (0..n)
        .map(|i| {
            let a = i * pages / n;
            let b = (i + 1) * pages / n;
            (a * page, (b - a) * page)
        })
        .collect()
}

/// The nodes that have CPUs, as (index in `topo.nodes`, id).
pub fn cpu_nodes(topo: &Topology) -> Vec<(usize, u32)> {
    topo.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.cpus.is_empty())
        .map(|(i, n)| (i, n.id))
        .collect()
}

/// The first and the second half of the nodes with CPUs, where numa01's
/// HARD_BIND puts its two processes (the original's preproc.awk: the CPUs
/// of the nodes numbered below half the node count go to the first
/// process, the others to the second, and NODEMASK1 / NODEMASK2 are the
/// same halves). With an odd count the first half has the extra node (the
/// awk's CPU split; its node masks then leave the middle node out, a bug
/// not copied). With one node both halves are that node.
pub fn node_halves(topo: &Topology) -> [Vec<(usize, u32)>; 2] {
    let nodes = cpu_nodes(topo);
    if nodes.len() < 2 {
        return [nodes.clone(), nodes];
    }
    let (a, b) = nodes.split_at(nodes.len().div_ceil(2));
    [a.to_vec(), b.to_vec()]
}

/// What was decided about placement, for the record and the terminal.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub procs: Vec<ProcPlan>,
    /// Nodes each thread is meant to run on in the bound placements, in
    /// task order (process by process): one node, or for numa01* its
    /// process's half; `None` for the default placement.
    pub ideal_nodes: Vec<Option<Vec<u32>>>,
    /// Why bind or inverse-bind mean less than they say on this machine.
    pub degenerate: Option<String>,
}

/// A machine none of whose NUMA nodes has CPUs: nothing to place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this machine has no NUMA node with CPUs")]
pub struct NoCpuNode;

/// Place `kind` on `topo`: `threads` per process (twohalves: per set),
/// `bytes` per process (twohalves: in all), `loops` per thread.
pub fn plan(
    topo: &Topology,
    kind: Kind,
    placement: Placement,
    threads: u32,
    bytes: u64,
    loops: u64,
) -> Result<Plan, NoCpuNode> {
    let nodes = cpu_nodes(topo);
    if nodes.is_empty() {
        return Err(NoCpuNode);
    }
    let first = nodes[0].1;
    let degenerate = (nodes.len() < 2 && placement != Placement::Default).then(|| {
        format!(
            "{} on a machine with one node with CPUs: the ideal node and the wrong one are both node {first}, so it is only a pinned run",
            placement.name()
        )
    });
    let p = Placing {
        topo,
        nodes,
        placement,
        threads,
        bytes,
        loops,
    };
    let (procs, ideal_nodes) = match kind {
        Kind::Numa01 | Kind::Numa01ThreadAlloc => p.numa01(kind),
        Kind::Numa02 | Kind::Numa02Smt => p.numa02(),
        Kind::TwoHalves => p.twohalves(),
    };
    Ok(Plan {
        procs,
        ideal_nodes,
        degenerate,
    })
}

/// What `plan` places: the machine, its nodes with CPUs, the placement and
/// the sizes.
struct Placing<'a> {
    topo: &'a Topology,
    nodes: Vec<(usize, u32)>,
    placement: Placement,
    threads: u32,
    bytes: u64,
    loops: u64,
}

/// The processes' plans and the nodes each thread is meant to run on.
type Placed = (Vec<ProcPlan>, Vec<Option<Vec<u32>>>);

impl Placing<'_> {
    /// The CPUs of the k-th node with CPUs (round the nodes).
    fn cpus_of(&self, k: usize) -> Vec<u32> {
        self.topo.nodes[self.nodes[k % self.nodes.len()].0]
            .cpus
            .clone()
    }

    /// The id of the k-th node with CPUs (round the nodes).
    fn id_of(&self, k: usize) -> u32 {
        self.nodes[k % self.nodes.len()].1
    }

    /// numa01 and numa01_THREAD_ALLOC: a process per half of the nodes.
    fn numa01(&self, kind: Kind) -> Placed {
        let (topo, placement, threads) = (self.topo, self.placement, self.threads);
        let first = self.id_of(0);
        let mut procs = Vec::new();
        let mut ideal_nodes = Vec::new();
        // As the original's HARD_BIND: process p pinned to the CPUs of
        // the p-th half of the nodes, its memory bound to that half
        // (inverse-bind: to the other half).
        let halves = node_halves(topo);
        let ids = |h: &[(usize, u32)]| h.iter().map(|n| n.1).collect::<Vec<u32>>();
        let cpus = |h: &[(usize, u32)]| {
            h.iter()
                .flat_map(|n| topo.nodes[n.0].cpus.iter().copied())
                .collect::<Vec<u32>>()
        };
        for p in 0..kind.processes() as usize {
            let (own, other) = (&halves[p % 2], &halves[(p + 1) % 2]);
            let (process_cpus, memory, run_on) = match placement {
                Placement::Default => (None, MemPlan::FirstTouchThenDefault { node: first }, None),
                Placement::Bind => (
                    Some(cpus(own)),
                    MemPlan::BoundToSet { nodes: ids(own) },
                    Some(ids(own)),
                ),
                Placement::InverseBind => (
                    Some(cpus(own)),
                    MemPlan::BoundToSet { nodes: ids(other) },
                    Some(ids(own)),
                ),
            };
            ideal_nodes.extend((0..threads).map(|_| run_on.clone()));
            procs.push(ProcPlan {
                process: p as u32,
                bytes: self.bytes,
                loops: self.loops,
                shared: kind.shared(),
                threads,
                process_cpus,
                thread_cpus: vec![None; threads as usize],
                memory,
                whole_first: kind.whole_first(),
            });
        }
        (procs, ideal_nodes)
    }

    /// numa02 and numa02_SMT: one process, its threads split evenly over
    /// the nodes.
    fn numa02(&self) -> Placed {
        let (placement, threads) = (self.placement, self.threads);
        let first = self.id_of(0);
        let cpus_of = |k: usize| self.cpus_of(k);
        let id_of = |k: usize| self.id_of(k);
        // Thread t's ideal node: threads split evenly over the nodes,
        // in order, as HARD_BIND did.
        let n = self.nodes.len();
        let ideal = |t: u32| (t as usize * n) / threads.max(1) as usize;
        let (thread_cpus, memory, run_on) = match placement {
            Placement::Default => (
                vec![None; threads as usize],
                MemPlan::FirstTouchThenDefault { node: first },
                vec![None; threads as usize],
            ),
            Placement::Bind | Placement::InverseBind => {
                // Where thread t runs: its ideal node (bind), or the
                // mirror image's, thread threads-1-t's (inverse-bind:
                // the original's bind((THREADS - 1 - i) / (THREADS /
                // NNODES)), so node k's slices are worked on from node
                // N-1-k, the farthest on machines numbered along their
                // links; with an odd node count the middle node's
                // threads stay local, as in the original).
                let run = |t: u32| match placement {
                    Placement::InverseBind => ideal(threads - 1 - t),
                    _ => ideal(t),
                };
                (
                    (0..threads).map(|t| Some(cpus_of(run(t)))).collect(),
                    MemPlan::Bound {
                        nodes: (0..threads).map(|t| id_of(ideal(t))).collect(),
                    },
                    (0..threads).map(|t| Some(vec![id_of(run(t))])).collect(),
                )
            }
        };
        let ideal_nodes = run_on;
        let procs = vec![ProcPlan {
            process: 0,
            bytes: self.bytes,
            loops: self.loops,
            shared: false,
            threads,
            process_cpus: None,
            thread_cpus,
            memory,
            whole_first: false,
        }];
        (procs, ideal_nodes)
    }

    /// twohalves: two thread sets on the first two nodes with CPUs.
    fn twohalves(&self) -> Placed {
        let (placement, threads) = (self.placement, self.threads);
        let first = self.id_of(0);
        let cpus_of = |k: usize| self.cpus_of(k);
        let id_of = |k: usize| self.id_of(k);
        // Set h runs on node h (the first two nodes with CPUs); thread
        // j of set h works on slice h*threads + j, so each set's slices
        // make up its half of the buffer.
        let total = 2 * threads;
        let set_of = |t: u32| (t / threads) as usize;
        let thread_cpus = (0..total).map(|t| Some(cpus_of(set_of(t)))).collect();
        let memory = match placement {
            Placement::Default => MemPlan::FirstTouchThenDefault { node: first },
            Placement::Bind => MemPlan::Bound {
                nodes: (0..total).map(|t| id_of(set_of(t))).collect(),
            },
            // Each half bound to the other set's node (set 0 runs on
            // the first node with CPUs, set 1 on the second), on any
            // number of nodes.
            Placement::InverseBind => MemPlan::Bound {
                nodes: (0..total).map(|t| id_of(1 - set_of(t))).collect(),
            },
        };
        let ideal_nodes = (0..total).map(|t| Some(vec![id_of(set_of(t))])).collect();
        let procs = vec![ProcPlan {
            process: 0,
            bytes: self.bytes,
            loops: self.loops,
            shared: false,
            threads: total,
            process_cpus: None,
            thread_cpus,
            memory,
            whole_first: false,
        }];
        (procs, ideal_nodes)
    }
}

/// Most threads numalab starts for one run.
pub const MAX_THREADS: u32 = 4096;

/// numa01, numa01_THREAD_ALLOC, numa02, numa02_SMT or twohalves, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    pub kind: Kind,
    pub placement: Placement,
    /// Threads per process (twohalves: per set).
    pub threads: u32,
    /// Bytes per process (twohalves: in all).
    pub bytes: u64,
    /// Loops (twohalves: iterations) per thread.
    pub loops: u64,
}

impl Params {
    /// What the loop count is called: twohalves counts iterations.
    pub fn loops_name(&self) -> &'static str {
        self.kind.loops_name()
    }

    pub(crate) fn key(&self) -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        m.insert("placement".into(), self.placement.name().into());
        m.insert("threads".into(), self.threads.into());
        m.insert("bytes".into(), self.bytes.into());
        m.insert(self.loops_name().into(), self.loops.into());
        m
    }

    /// Bytes zeroed by all threads in the whole run: their loops and,
    /// for numa01*, every thread's first pass over its process's buffer
    /// ([`Kind::whole_first`]).
    pub fn bytes_zeroed(&self) -> u64 {
        let first = match self.kind.whole_first() {
            true => self.kind.total_threads(self.threads) as u64 * self.bytes,
            false => 0,
        };
        self.kind.bytes_per_loop(self.bytes, self.threads) * self.loops + first
    }

    /// The plan of this case on `topo`.
    pub fn plan(&self, topo: &Topology) -> Result<Plan, NoCpuNode> {
        plan(
            topo,
            self.kind,
            self.placement,
            self.threads,
            self.bytes,
            self.loops,
        )
    }
}

/// Loops per thread so that a run takes about `seconds` at `bandwidth`,
/// numa01*'s whole-buffer first pass ([`Kind::whole_first`]) included.
pub fn loops_for(kind: Kind, bytes: u64, threads: u32, bandwidth: f64, seconds: f64) -> u64 {
    let per_loop = kind.bytes_per_loop(bytes, threads) as f64;
    if per_loop <= 0.0 || !bandwidth.is_finite() || bandwidth <= 0.0 {
        return 1;
    }
    let passes = (seconds * bandwidth / per_loop).round() as u64;
    passes
        .saturating_sub(kind.whole_first_loops(threads))
        .clamp(1, 1_000_000)
}

/// The zeroing bandwidth of `workers` threads where a default run puts
/// them: twohalves' two sets pinned to the first two nodes with CPUs, the
/// others' threads free over all of them; the memory first touched on the
/// first.
fn zeroing_bandwidth(kind: Kind, cal: &dyn Calibration, workers: u32, working_set: u64) -> f64 {
    let mut nodes: Vec<u32> = cpu_nodes(&cal.machine().topology)
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    if kind == Kind::TwoHalves {
        nodes.truncate(2);
    }
    let first = nodes.first().copied().unwrap_or(0);
    cal.zeroing_bandwidth_on(workers, working_set, &nodes, first, kind == Kind::TwoHalves)
}

/// A smaller memory size where whole loops of the largest thread count
/// at `bytes` cannot fill `seconds` within 5%: one loop takes longer than
/// asked (1,024 threads each zeroing numa01's 3 GiB take 80 s a loop at
/// one node's 40 GB/s), or the loops are so few that rounding their
/// number misses (1.6 loops of 1.8 s for 3 s: 2 make 3.6 s). A run takes
/// `bytes x (1/first touch + loops x k/bandwidth)`, so the size that makes
/// the rounded-up loops last `seconds` is exact. It never goes below
/// [`sizing::LLC_FACTOR`] times the largest LLC, so the work stays in
/// memory. `None` where loops alone meet the duration; else the size and
/// why, for the note.
fn shrink_to_duration(
    kind: Kind,
    bytes: u64,
    threads: &[u32],
    ncpus: usize,
    seconds: f64,
    cal: &dyn Calibration,
) -> Option<(u64, String)> {
    let &t = threads.iter().max()?;
    let workers = kind.total_threads(t).min(ncpus as u32);
    let bw = zeroing_bandwidth(kind, cal, workers, kind.total_bytes(bytes));
    // Seconds per byte of the size: the first touch, once; a loop.
    let touch = 1.0 / cal.first_touch_rate();
    let per_loop = kind.bytes_per_loop(bytes, t) as f64 / bytes as f64 / bw;
    let b = bytes as f64;
    // numa01*'s whole-buffer first pass, in loops ([`Kind::whole_first`]).
    let first = kind.whole_first_loops(t) as f64;
    let loops = (seconds - touch * b) / (per_loop * b) - first;
    if !loops.is_finite() || !per_loop.is_finite() || per_loop <= 0.0 {
        return None;
    }
    if loops >= 1.0 && ((loops.round() + first) / (loops + first) - 1.0).abs() <= 0.05 {
        return None;
    }
    let whole = loops.ceil().max(1.0);
    let llc = cal.machine().topology.max_llc_bytes();
    let floor = (sizing::LLC_FACTOR * llc).max(sizing::MIN_BYTES);
    let mib = 1u64 << 20;
    let want = ((seconds / (touch + (whole + first) * per_loop)) as u64).max(floor);
    let new = (want / mib).max(1) * mib;
    if new >= bytes {
        return None;
    }
    let loop_s = per_loop * b;
    let why = if loops < 1.0 {
        format!("one loop would take {loop_s:.1} s")
    } else {
        format!("{loops:.1} loops of {loop_s:.1} s would fill it, and loops are whole")
    };
    Some((
        new,
        format!(
            "at {} and {workers} threads zeroing at {:.1} GB/s here{}, {why}; sized so that {}{whole} fill about {seconds:.0} s",
            human_bytes(bytes),
            bw / 1e9,
            touch_text(touch * b, seconds),
            match kind.whole_first() {
                true => "every thread's first pass over the whole buffer and ",
                false => "",
            },
        ),
    ))
}

/// ", its first touch N s" where the first touch is a noticeable part of
/// `total` seconds.
fn touch_text(touch_s: f64, total: f64) -> String {
    match touch_s >= 0.05 * total {
        true => format!(", after a first touch of {touch_s:.1} s"),
        false => String::new(),
    }
}

/// The flags of every autonuma benchmark, as [`crate::args`] parsed them.
pub struct Request<'a> {
    pub placement: &'a [Placement],
    pub bytes: Option<u64>,
    pub threads: &'a [u32],
    pub loops: Option<u64>,
    pub duration: f64,
}

/// One case per placement and thread count; the same memory size for
/// every case (so their times compare), loops per thread count.
pub fn resolve(kind: Kind, r: &Request, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
    let machine = cal.machine();
    let topo = &machine.topology;
    let nodes = cpu_nodes(topo);
    if nodes.is_empty() {
        return Err(BenchError::new("this machine has no NUMA node with CPUs"));
    }
    let mut out = Resolved::default();
    let unit = kind.thread_unit();
    let ncpus = topo.cpus.len();
    let word = kind.loops_name();
    if nodes.len() < 2 {
        out.warnings.push("this machine has one NUMA node with CPUs: convergence is trivial here, nothing can migrate, and bind/inverse-bind are only pinned runs".into());
    }
    let threads: Vec<u32> = if r.threads.is_empty() {
        let t = kind.default_threads(topo);
        let why = match kind {
            Kind::Numa02 => format!("one per CPU ({ncpus} CPUs)"),
            Kind::TwoHalves if nodes.len() >= 2 => "the CPUs of a node".to_string(),
            _ => format!("half of the {ncpus} CPUs"),
        };
        out.notes.push(format!("threads: {t} per {unit}: {why}"));
        vec![t]
    } else {
        out.notes.push(format!(
            "threads: {} per {unit} (--threads)",
            r.threads
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
        r.threads.to_vec()
    };
    for &t in &threads {
        let total = kind.total_threads(t);
        if t == 0 || total > MAX_THREADS {
            return Err(BenchError(format!(
                "--threads {t}: {total} threads in all is more than numalab runs at once ({MAX_THREADS})"
            )));
        }
    }
    let max_total = threads
        .iter()
        .map(|&t| kind.total_threads(t))
        .max()
        .unwrap_or(1);
    let first_free = cal.node_free_bytes(nodes[0].1);
    let bytes = match r.bytes {
        Some(b) => {
            sizing::check_autonuma_fits(machine, kind, b, max_total, first_free)?;
            out.notes.push(format!(
                "memory: {} {} (--bytes)",
                human_bytes(b),
                kind.bytes_unit()
            ));
            b
        }
        None => {
            let c = sizing::autonuma_bytes(machine, kind, first_free)?;
            sizing::check_autonuma_fits(machine, kind, c.elements, max_total, first_free)?;
            let bytes = match r.loops {
                None => shrink_to_duration(kind, c.elements, &threads, ncpus, r.duration, cal),
                Some(_) => None,
            };
            match bytes {
                Some((b, why)) => {
                    sizing::check_autonuma_fits(machine, kind, b, max_total, first_free)?;
                    out.notes.push(format!(
                        "memory: {} {}: {why}",
                        human_bytes(b),
                        kind.bytes_unit()
                    ));
                    b
                }
                None => {
                    out.notes.push(format!("memory: {}", c.explanation));
                    out.warnings.extend(c.warning);
                    c.elements
                }
            }
        }
    };
    let mut loops_of = Vec::new();
    for &t in &threads {
        let l = match r.loops {
            Some(l) => l,
            None => {
                let workers = kind.total_threads(t).min(ncpus as u32);
                let bw = zeroing_bandwidth(kind, cal, workers, kind.total_bytes(bytes));
                // The main thread's first touch is part of the run.
                let touch_s = bytes as f64 / cal.first_touch_rate();
                let l = loops_for(kind, bytes, t, bw, (r.duration - touch_s).max(0.0));
                let orig = kind
                    .original_loops()
                    .map(|o| format!("; the original did {o}"))
                    .unwrap_or_default();
                out.notes.push(format!(
                    "{word}: {l} per thread with {t} per {unit}, about {} s at the {:.1} GB/s of {workers} threads zeroing memory here{}{orig}; --{word} to set",
                    r.duration,
                    bw / 1e9,
                    touch_text(touch_s, r.duration),
                ));
                l
            }
        };
        loops_of.push(l);
    }
    if let Some(l) = r.loops {
        out.notes.push(format!("{word}: {l} per thread (--{word})"));
    }
    for (&t, &loops) in threads.iter().zip(&loops_of) {
        for &placement in r.placement {
            let p = Params {
                kind,
                placement,
                threads: t,
                bytes,
                loops,
            };
            // The plan must exist on this machine before anything runs.
            let plan = p.plan(topo).map_err(|e| BenchError(e.to_string()))?;
            if let Some(d) = plan.degenerate {
                if !out.warnings.contains(&d) {
                    out.warnings.push(d);
                }
            }
            out.cases.push(Case::Autonuma(p));
        }
    }
    Ok(out)
}

/// numa01, numa01_THREAD_ALLOC, numa02 and numa02_SMT; twohalves retells
/// them ([`TwoHalvesArgs`]).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct AutonumaArgs {
    /// Placements, one case each: default (memory first touched on the
    /// first node, then the kernel decides), bind (threads and memory on
    /// their ideal nodes), inverse-bind (memory there, threads elsewhere)
    #[arg(long, value_name = "P,...", value_parser = parse_bind_placements, default_value = "default")]
    pub placement: List<Placement>,
    /// Memory per process, e.g. 512M or 3G; default: the original's size
    /// within half the free memory
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = parse_bytes)]
    pub bytes: Option<u64>,
    /// Threads per process, e.g. 2 or 2,4,8 (one case each); default: the
    /// original's, from the CPU count
    #[arg(long, value_name = "N,...", allow_hyphen_values = true, value_parser = parse_threads)]
    pub threads: Option<List<u32>>,
    /// Loops per thread; default: as many as take about --duration seconds
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Seconds a run should take, for the default loop count
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = 20.0, value_parser = parse_seconds)]
    pub duration: f64,
}

impl AutonumaArgs {
    pub fn resolve(&self, kind: Kind, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        let r = crate::autonuma::Request {
            placement: &self.placement,
            bytes: self.bytes,
            threads: self.threads.as_ref().map_or(&[][..], |t| &t.0),
            loops: self.loops,
            duration: self.duration,
        };
        crate::autonuma::resolve(kind, &r, cal)
    }
}

/// The two-halves microbenchmark: [`AutonumaArgs`], told as its own
/// (threads per set, memory in all, `--iterations` for `--loops`, 30 s by
/// default), and printed as its own for the sizes an invocation keeps.
#[derive(Clone)]
pub struct TwoHalvesArgs(pub AutonumaArgs);

impl TwoHalvesArgs {
    /// Autonuma's flags with two-halves' names, words and default.
    fn retell(cmd: clap::Command) -> clap::Command {
        cmd.mut_arg("placement", |a| {
            a.help(
                "Placements, one case each: default (all memory first touched on the first \
                 node), bind (each half on its set's node), inverse-bind (each half on the \
                 other set's node)",
            )
        })
        .mut_arg("bytes", |a| {
            a.help(
                "Memory in all (each set works on half), e.g. 256M; default: the original's \
                 16 GiB within half the free memory",
            )
        })
        .mut_arg("threads", |a| {
            a.help("Threads per set, e.g. 2 or 1,2 (one case each); default: the CPUs of a node")
        })
        .mut_arg("loops", |a| {
            a.long("iterations").help(
                "Passes of each thread over its slice; default: as many as take about \
                 --duration seconds",
            )
        })
        .mut_arg("duration", |a| {
            a.default_value("30")
                .help("Seconds a run should take, for the default iteration count")
        })
    }

    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        self.0.resolve(Kind::TwoHalves, cal)
    }
}

impl clap::Args for TwoHalvesArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        TwoHalvesArgs::retell(AutonumaArgs::augment_args(cmd))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        TwoHalvesArgs::retell(AutonumaArgs::augment_args_for_update(cmd))
    }
}

impl clap::FromArgMatches for TwoHalvesArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        AutonumaArgs::from_arg_matches(m).map(TwoHalvesArgs)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
}

impl std::fmt::Debug for TwoHalvesArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.0;
        f.debug_struct("TwoHalvesArgs")
            .field("placement", &a.placement)
            .field("bytes", &a.bytes)
            .field("threads", &a.threads)
            .field("iterations", &a.loops)
            .field("duration", &a.duration)
            .finish()
    }
}

/// The metrics of every autonuma benchmark's records.
const METRICS: &[metrics::MetricDef] = &[
    metrics::ELAPSED_S,
    metrics::USER_S,
    metrics::SYS_S,
    metrics::STARTED_S,
    metrics::BANDWIDTH_GBS,
    metrics::THREAD_BANDWIDTH_GBS,
    metrics::THREAD_BANDWIDTH_MIN_GBS,
    metrics::CONVERGENCE_S,
    metrics::OBSERVER_CPU_S,
];

/// numa01's registry entry.
pub const NUMA01: Benchmark = original(Kind::Numa01, |m| spec(Kind::Numa01, m), "autonuma-benchmark numa01 (Arcangeli, 2012): 2 processes whose threads all zero their process's buffer");

/// numa01_THREAD_ALLOC's, with numa01's flags.
pub const NUMA01_THREAD_ALLOC: Benchmark = original(
    Kind::Numa01ThreadAlloc,
    |m| spec(Kind::Numa01ThreadAlloc, m),
    "autonuma-benchmark numa01_THREAD_ALLOC: as numa01, each thread zeroing its own slice",
);

/// numa02's.
pub const NUMA02: Benchmark = original(
    Kind::Numa02,
    |m| spec(Kind::Numa02, m),
    "autonuma-benchmark numa02: 1 process, a thread per CPU, each zeroing its own slice",
);

/// numa02_SMT's.
pub const NUMA02_SMT: Benchmark = original(
    Kind::Numa02Smt,
    |m| spec(Kind::Numa02Smt, m),
    "autonuma-benchmark numa02_SMT: numa02 with a thread per core",
);

/// twohalves's: its own flags, the same metrics and placements.
pub const TWOHALVES: Benchmark = Benchmark::new::<crate::args::TwoHalvesArgs>(
    Kind::TwoHalves.name(),
    "The two-halves microbenchmark of IBS-driven NUMA balancing (2023): two thread sets on two nodes, all memory first touched on one",
    |m| crate::registry::parse_as(m, crate::args::Spec::TwoHalves),
    METRICS,
)
.in_placement_family();

/// An entry of autonuma-benchmark (its flags are [`crate::args::AutonumaArgs`]).
const fn original(
    kind: Kind,
    spec: fn(&clap::ArgMatches) -> Result<crate::args::Spec, clap::Error>,
    about: &'static str,
) -> Benchmark {
    Benchmark::new::<crate::args::AutonumaArgs>(kind.name(), about, spec, METRICS)
        .in_placement_family()
}

/// An autonuma benchmark's parsed flags as a [`crate::args::Spec`].
fn spec(kind: Kind, m: &clap::ArgMatches) -> Result<crate::args::Spec, clap::Error> {
    let a = <crate::args::AutonumaArgs as clap::FromArgMatches>::from_arg_matches(m)?;
    Ok(crate::args::Spec::Autonuma(kind, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_nodes() -> Topology {
        Topology::regular(2, 2, 1, 1, 32 << 20, 1 << 30, None).unwrap()
    }

    fn node_of(topo: &Topology, cpus: &[u32]) -> u32 {
        let n = topo.node_of_cpu(cpus[0]).unwrap();
        assert!(cpus.iter().all(|&c| topo.node_of_cpu(c) == Some(n)));
        n
    }

    #[test]
    fn names_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(
            Placement::from_name("inverse-bind"),
            Some(Placement::InverseBind)
        );
    }

    #[test]
    fn slices_cover_the_buffer_page_aligned() {
        let s = slices(10 * 4096 + 1, 3, 4096);
        assert_eq!(
            s,
            vec![(0, 3 * 4096), (3 * 4096, 4 * 4096), (7 * 4096, 4 * 4096)]
        );
        assert_eq!(s.iter().map(|x| x.1).sum::<u64>(), 11 * 4096);
    }

    #[test]
    fn numa01_bind_and_inverse_bind_every_process() {
        let t = two_nodes();
        let b = plan(&t, Kind::Numa01, Placement::Bind, 2, 1 << 20, 3).unwrap();
        assert!(b.degenerate.is_none());
        for (p, pp) in b.procs.iter().enumerate() {
            let run = node_of(&t, pp.process_cpus.as_ref().unwrap());
            assert_eq!(run, p as u32);
            assert_eq!(
                pp.memory,
                MemPlan::BoundToSet {
                    nodes: vec![p as u32]
                }
            );
        }
        let i = plan(&t, Kind::Numa01, Placement::InverseBind, 2, 1 << 20, 3).unwrap();
        // Every process, not only one (the original's INVERSE_BIND bug):
        // each runs on its own node, its memory on the other.
        for (p, pp) in i.procs.iter().enumerate() {
            let run = node_of(&t, pp.process_cpus.as_ref().unwrap());
            let MemPlan::BoundToSet { nodes } = &pp.memory else {
                panic!("bound")
            };
            assert_eq!(run, p as u32);
            assert_eq!(nodes, &vec![1 - p as u32]);
        }
        let ideal: Vec<Option<Vec<u32>>> = [0, 0, 1, 1].map(|n| Some(vec![n])).to_vec();
        assert_eq!(i.ideal_nodes, ideal);
        let d = plan(
            &t,
            Kind::Numa01ThreadAlloc,
            Placement::Default,
            2,
            1 << 20,
            3,
        )
        .unwrap();
        for pp in &d.procs {
            assert_eq!(pp.memory, MemPlan::FirstTouchThenDefault { node: 0 });
            assert!(pp.process_cpus.is_none());
            assert!(!pp.shared);
        }
    }

    /// numa01 on `n` nodes: process 0 on the first half of the nodes,
    /// process 1 on the second, every node used; memory on the same half
    /// (bind) or the other one (inverse-bind).
    fn numa01_halves(n: u32) {
        let t = Topology::regular(n, 2, 1, 1, 32 << 20, 1 << 30, None).unwrap();
        let first: Vec<u32> = (0..n.div_ceil(2)).collect();
        let second: Vec<u32> = (n.div_ceil(2)..n).collect();
        let halves = [first, second];
        for kind in [Kind::Numa01, Kind::Numa01ThreadAlloc] {
            for placement in [Placement::Bind, Placement::InverseBind] {
                let threads = n; // ncpus / 2
                let pl = plan(&t, kind, placement, threads, 1 << 20, 3).unwrap();
                assert!(pl.degenerate.is_none());
                let mut used = Vec::new();
                for (p, pp) in pl.procs.iter().enumerate() {
                    let cpus = pp.process_cpus.as_ref().unwrap();
                    let mut nodes: Vec<u32> =
                        cpus.iter().map(|&c| t.node_of_cpu(c).unwrap()).collect();
                    nodes.dedup();
                    assert_eq!(nodes, halves[p], "{kind:?} {placement:?} process {p}");
                    // Every CPU of its half, none of the other.
                    let want: usize = halves[p]
                        .iter()
                        .map(|&x| t.nodes[x as usize].cpus.len())
                        .sum();
                    assert_eq!(cpus.len(), want);
                    let mem = match placement {
                        Placement::Bind => &halves[p],
                        _ => &halves[1 - p],
                    };
                    assert_eq!(
                        pp.memory,
                        MemPlan::BoundToSet { nodes: mem.clone() },
                        "{kind:?} {placement:?} process {p}"
                    );
                    used.extend(nodes);
                }
                used.sort_unstable();
                assert_eq!(used, (0..n).collect::<Vec<_>>(), "every node runs threads");
                for (k, ideal) in pl.ideal_nodes.iter().enumerate() {
                    assert_eq!(ideal.as_ref(), Some(&halves[k / threads as usize]));
                }
            }
        }
    }

    #[test]
    fn numa01_binds_each_process_to_its_half_of_the_nodes() {
        numa01_halves(4);
        numa01_halves(8);
        // Odd: the first half has the extra node.
        numa01_halves(3);
        let t = Topology::regular(3, 1, 1, 1, 32 << 20, 1 << 30, None).unwrap();
        let h = node_halves(&t);
        assert_eq!(h[0].iter().map(|n| n.1).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(h[1].iter().map(|n| n.1).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn interleave_is_round_robin_over_the_set() {
        let got: Vec<u32> = (0..6).map(|p| interleave(&[4, 5, 6], p).unwrap()).collect();
        assert_eq!(got, vec![4, 5, 6, 4, 5, 6]);
        assert_eq!(interleave(&[], 3), None);
    }

    #[test]
    fn numa02_threads_split_over_nodes() {
        let t = two_nodes();
        let b = plan(&t, Kind::Numa02, Placement::Bind, 4, 1 << 20, 3).unwrap();
        let p = &b.procs[0];
        let runs: Vec<u32> = p
            .thread_cpus
            .iter()
            .map(|c| node_of(&t, c.as_ref().unwrap()))
            .collect();
        assert_eq!(runs, vec![0, 0, 1, 1]);
        assert_eq!(
            p.memory,
            MemPlan::Bound {
                nodes: vec![0, 0, 1, 1]
            }
        );
        let i = plan(&t, Kind::Numa02Smt, Placement::InverseBind, 2, 1 << 20, 3).unwrap();
        let p = &i.procs[0];
        let runs: Vec<u32> = p
            .thread_cpus
            .iter()
            .map(|c| node_of(&t, c.as_ref().unwrap()))
            .collect();
        assert_eq!(runs, vec![1, 0]);
        assert_eq!(p.memory, MemPlan::Bound { nodes: vec![0, 1] });
    }

    #[test]
    fn twohalves_sets_and_halves() {
        let t = two_nodes();
        let d = plan(&t, Kind::TwoHalves, Placement::Default, 2, 1 << 20, 3).unwrap();
        let p = &d.procs[0];
        assert_eq!(p.threads, 4);
        let runs: Vec<u32> = p
            .thread_cpus
            .iter()
            .map(|c| node_of(&t, c.as_ref().unwrap()))
            .collect();
        assert_eq!(runs, vec![0, 0, 1, 1]);
        assert_eq!(p.memory, MemPlan::FirstTouchThenDefault { node: 0 });
        let i = plan(&t, Kind::TwoHalves, Placement::InverseBind, 2, 1 << 20, 3).unwrap();
        assert_eq!(
            i.procs[0].memory,
            MemPlan::Bound {
                nodes: vec![1, 1, 0, 0]
            }
        );
        assert_eq!(Kind::TwoHalves.default_threads(&t), 2);
        // On four nodes the sets run on nodes 0 and 1, and inverse-bind
        // puts each half on the other set's node, not on node 2.
        let t4 = Topology::regular(4, 2, 1, 1, 32 << 20, 1 << 30, None).unwrap();
        let i = plan(&t4, Kind::TwoHalves, Placement::InverseBind, 2, 1 << 20, 3).unwrap();
        let runs: Vec<u32> = i.procs[0]
            .thread_cpus
            .iter()
            .map(|c| node_of(&t4, c.as_ref().unwrap()))
            .collect();
        assert_eq!(runs, vec![0, 0, 1, 1]);
        assert_eq!(
            i.procs[0].memory,
            MemPlan::Bound {
                nodes: vec![1, 1, 0, 0]
            }
        );
    }

    /// numa02 inverse-bind as the original's INVERSE_BIND: thread i runs
    /// on the node of thread THREADS-1-i, so node k's slices are worked on
    /// from node N-1-k (on 8 nodes: 0 from 7, 1 from 6, ...).
    #[test]
    fn numa02_inverse_bind_mirrors_the_nodes() {
        let t = Topology::regular(8, 2, 1, 1, 32 << 20, 1 << 30, None).unwrap();
        let i = plan(&t, Kind::Numa02, Placement::InverseBind, 16, 1 << 20, 3).unwrap();
        let p = &i.procs[0];
        let runs: Vec<u32> = p
            .thread_cpus
            .iter()
            .map(|c| node_of(&t, c.as_ref().unwrap()))
            .collect();
        let MemPlan::Bound { nodes: mem } = &p.memory else {
            panic!("{:?}", p.memory)
        };
        for (t, (&run, &m)) in runs.iter().zip(mem).enumerate() {
            assert_eq!(m, t as u32 / 2, "thread {t}'s slice");
            assert_eq!(run, 7 - m, "thread {t} runs on the mirror node");
        }
    }

    #[test]
    fn loops_scale_with_bandwidth_and_size() {
        // 10 GB/s for 20 s over numa02's 1 GiB per loop: about 186 loops.
        assert_eq!(loops_for(Kind::Numa02, 1 << 30, 8, 10e9, 20.0), 186);
        // numa01: every thread zeroes all of its process's buffer, once
        // before its loops, then loop after loop.
        let l01 = loops_for(Kind::Numa01, 1 << 30, 8, 10e9, 20.0);
        assert_eq!(
            l01,
            (200e9 / (16.0 * (1u64 << 30) as f64)).round() as u64 - 1
        );
        // numa01_THREAD_ALLOC: its first pass over the whole buffer is
        // one loop per slice, 8 loops: 93 passes of 2 GiB in all.
        let lta = loops_for(Kind::Numa01ThreadAlloc, 1 << 30, 8, 10e9, 20.0);
        assert_eq!(
            lta,
            (200e9 / (2.0 * (1u64 << 30) as f64)).round() as u64 - 8
        );
        assert_eq!(loops_for(Kind::Numa02, 1 << 30, 8, 0.0, 20.0), 1);
    }

    #[test]
    fn one_node_placements_degenerate_and_say_so() {
        let t = Topology::regular(1, 2, 1, 1, 32 << 20, 1 << 30, None).unwrap();
        let b = plan(&t, Kind::Numa01, Placement::InverseBind, 1, 1 << 20, 3).unwrap();
        assert!(b.degenerate.unwrap().contains("one node"));
        assert!(plan(&t, Kind::Numa02, Placement::Default, 2, 1 << 20, 3)
            .unwrap()
            .degenerate
            .is_none());
        assert_eq!(Kind::Numa02.default_threads(&t), 2);
        assert_eq!(Kind::Numa01.default_threads(&t), 1);
    }
}
