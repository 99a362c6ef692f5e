//! The machine model: a documented TOML file (or a built-in preset) that
//! says what the hardware is, validated into a [`Machine`] the engine uses
//! and converted to the shared [`Topology`] for run records.
//!
//! Format (every key is checked; unknown keys are errors):
//!
//! ```toml
//! name = "azusa16"
//! description = "one line"
//! [topology]
//! nodes = 4                 # NUMA nodes with CPUs
//! nodes_per_package = 1     # NUMA nodes per socket (NPS4 = 4); default 1
//! cores_per_node = 4
//! threads_per_core = 1      # SMT threads per core
//! llcs_per_node = 4         # last-level cache groups per node
//! memory_per_node_gib = 4.0
//! distances = [[10, 15], [15, 10]]   # SLIT; default 10 local / 20 remote
//! [memory]
//! local_latency_ns = 200.0  # idle load-to-use latency of local DRAM
//! latency_ns = [[..], ..]   # optional full matrix [cpu node][memory node];
//!                           # default: local_latency_ns * distance / 10
//! bandwidth_gbs = 2.1       # sustainable DRAM bandwidth per node, GB/s
//!                           # (`inf`: unlimited)
//! controllers = "node"      # "node": one memory controller per node with
//!                           # bandwidth_gbs each (default); "single": all
//!                           # nodes' memory behind one controller with
//!                           # bandwidth_gbs in all (an SMP/UMA memory system)
//! read_bandwidth_gbs = 1.8  # the controllers' rate for loads, where not
//!                           # bandwidth_gbs (one queue, each line served at
//!                           # its kind's rate; default: bandwidth_gbs)
//! line_bytes = 64
//! random_mlp = 1            # independent random misses one core overlaps
//!                           # (numa_test's a[ix[i]]; 1: an in-order core)
//! mlp = 8                   # cache misses one core keeps in flight when
//!                           # streaming (shared by its busy SMT siblings)
//! read_mlp = 6              # ... when streaming loads, if not as many
//!                           # (a read sweep; default: mlp)
//! write_mlp = 5             # ... when updating a stream in place (a load
//!                           # and the line's write-back: mem's write
//!                           # sweep; default: read_mlp)
//! tlb_reach_mib = 2.0       # bytes the data TLB maps (entries x page size)
//! tlb_walk_ns = 11.5        # a hardware page walk after a TLB miss; a random
//!                           # access over more than the reach waits for one
//!                           # with probability 1 - reach / range (default 0:
//!                           # no TLB modelled, every preset but the Itaniums)
//! [[bus]]                   # a shared link memory traffic crosses (any number)
//! name = "fsb0"
//! bandwidth_gbs = 2.1       # `inf`: unlimited
//! cpu_nodes = [0]           # it carries the traffic of these nodes' CPUs
//!                           # (default: every node's) ...
//! memory_nodes = [0, 1]     # ... to these nodes' memory (default: every node's)
//! both_ways = false         # true: also memory_nodes' CPUs to cpu_nodes'
//!                           # memory (a link between two groups of nodes)
//! [cache]
//! llc_mib = 4.0             # size of one LLC (the cache the model's accesses get)
//! reported_llc_mib = 8.0    # optional: the LLC's size as sysfs reports it,
//!                           # which the topology carries and benchmarks size
//!                           # their work by (default: llc_mib)
//! llc_hit_ns = 20.0         # LLC hit latency (also the cost of a line moved within an LLC)
//! cross_llc_ns = 100.0      # a line moved between two LLCs of one node
//! [cpu]
//! base_ghz = 0.8            # sustained all-core frequency
//! max_ghz = 0.8             # highest boost with one busy core of a package
//! min_ghz = 0.8             # idle / lowest P-state
//! governor = "performance"  # or "schedutil" (frequency follows PELT utilisation)
//! smt_throughput = 1.0      # speed of one thread while its sibling is busy (compute part)
//! run_at_once = 2           # optional: CPUs that can run at once, when fewer
//!                           # than the machine's (a guest's vCPUs on fewer host
//!                           # CPUs); default: all
//! idle_states = []          # [[exit latency us, target residency us], ...] shallow to deep
//! [kernel]                  # optional: the kernel's settings the file was
//! thp = "madvise"           # measured under; transparent_hugepage/enabled,
//!                           # the simulator's `thp` unless --thp or a
//!                           # configuration sets it (default "always")
//! numa_balancing = 1        # kernel.numa_balancing (0-3): said beside a
//!                           # simulation whose balancer is none
//! [costs]                   # optional, every key optional: per-operation costs
//! spin_ns = 1.8             # measured by `numalab calibrate` (see costs.rs);
//!                           # default: the workload models' estimates
//! [ranges]                  # optional: the range a public source puts a
//! "memory.local_latency_ns" = [131.0, 187.0]  # number in (the file's value
//!                           # inside it); `numalab reproduce` fits within it
//! [sources]                 # parameter name -> where its value comes from
//! "memory.local_latency_ns" = "..."
//! "ranges.memory.local_latency_ns" = "..."  # every range cites its source
//! "costs.spin_ns" = "numalab calibrate on ..."
//! ```

use crate::costs::{Costs, CostsSpec};
use numalab_topology::{Cpu, Llc, Node, Topology};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The physically plausible range of each number of a machine file
/// (key as written, after its table; `memory.latency_ns[i][j]` checks as
/// `memory.latency_ns`, a bus's `bandwidth_gbs` as `bandwidth_gbs`):
/// lowest, highest, unit, and whether `inf` (unlimited) is allowed.
/// Wide enough for any machine from a 2002 Itanium to a 2025 server,
/// narrow enough that no value makes a run crawl or divide by zero.
const RANGES: &[(&str, f64, f64, &str, bool)] = &[
    ("topology.memory_per_node_gib", 0.001, 65536.0, "GiB", false),
    ("memory.local_latency_ns", 1.0, 100_000.0, "ns", false),
    ("memory.latency_ns", 1.0, 100_000.0, "ns", false),
    ("memory.bandwidth_gbs", 0.001, 100_000.0, "GB/s", true),
    ("memory.read_bandwidth_gbs", 0.001, 100_000.0, "GB/s", true),
    ("bandwidth_gbs", 0.001, 100_000.0, "GB/s", true),
    ("memory.mlp", 1.0, 1024.0, "misses in flight", false),
    ("memory.random_mlp", 1.0, 1024.0, "misses in flight", false),
    ("memory.read_mlp", 1.0, 1024.0, "misses in flight", false),
    ("memory.write_mlp", 1.0, 1024.0, "misses in flight", false),
    ("memory.tlb_reach_mib", 0.0, 1e9, "MiB", false),
    ("memory.tlb_walk_ns", 0.0, 100_000.0, "ns", false),
    ("cache.llc_mib", 0.01, 65536.0, "MiB", false),
    ("cache.reported_llc_mib", 0.01, 65536.0, "MiB", false),
    ("cache.llc_hit_ns", 0.1, 10_000.0, "ns", false),
    ("cache.cross_llc_ns", 0.1, 100_000.0, "ns", false),
    ("cpu.base_ghz", 0.001, 100.0, "GHz", false),
    ("cpu.max_ghz", 0.001, 100.0, "GHz", false),
    ("cpu.min_ghz", 0.001, 100.0, "GHz", false),
    (
        "cpu.smt_throughput",
        0.01,
        1.0,
        "(speed of a thread whose sibling is busy)",
        false,
    ),
    ("cpu.run_at_once", 1.0, 1e6, "CPUs", false),
    // Per-operation costs, as measured on a real machine (`[costs]`):
    // from today's fastest cores to an emulated guest tens of times slower.
    ("costs.spin_ns", 0.01, 1000.0, "ns", false),
    ("costs.randupdt_ns", 0.01, 1000.0, "ns", false),
    ("costs.memset_gbs", 0.01, 10_000.0, "GB/s", false),
    ("costs.msg_us", 0.01, 10_000.0, "us", false),
    ("costs.fork_us", 0.1, 1e6, "us", false),
    ("costs.exec_us", 0.1, 1e6, "us", false),
    ("costs.msg_user_share", 0.0, 1.0, "of the CPU time", false),
    ("costs.exec_user_share", 0.0, 1.0, "of the CPU time", false),
    ("costs.process_launch_us", 0.1, 1e6, "us", false),
    ("costs.process_start_us", 0.0, 1e7, "us", false),
    ("costs.process_exit_us", 0.0, 1e7, "us", false),
    ("costs.thread_launch_us", 0.1, 1e6, "us", false),
    ("costs.first_touch_gbs", 0.001, 100_000.0, "GB/s", false),
    ("costs.first_touch_two_gbs", 0.001, 100_000.0, "GB/s", false),
    ("costs.migrate_us_per_mb", 1.0, 1e6, "us", false),
    ("costs.scan_us_per_gb", 1.0, 1e7, "us", false),
    ("costs.read_gbs", 0.01, 10_000.0, "GB/s", false),
    ("costs.write_gbs", 0.01, 10_000.0, "GB/s", false),
];

/// Longest exit latency or target residency of an idle state (us): 1 s.
const IDLE_US_MAX: f64 = 1e6;

/// A number as written in a file: 1e308, not its 309 digits.
fn num(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-3..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A machine file's number outside its physically plausible range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key} = {}: must be between {} and {} {unit}{}", num(*.value), num(*.lo), num(*.hi), if *.inf { ", or inf (unlimited)" } else { "" })]
pub struct OutOfRange {
    pub key: String,
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    pub unit: &'static str,
    /// Whether `inf` (unlimited) is allowed too.
    pub inf: bool,
}

/// `key = value: must be between LO and HI UNIT`, or Ok.
fn check_range(key: &str, v: f64) -> Result<(), OutOfRange> {
    let base = key.split('[').next().unwrap_or(key);
    let &(_, lo, hi, unit, inf) = RANGES
        .iter()
        .find(|r| r.0 == base)
        .expect("every checked key has a range");
    if (lo..=hi).contains(&v) || (inf && v == f64::INFINITY) {
        return Ok(());
    }
    Err(OutOfRange {
        key: key.to_string(),
        value: v,
        lo,
        hi,
        unit,
        inf,
    })
}

/// Errors in a machine file, one line each.
#[derive(Debug, thiserror::Error)]
#[error("machine file {file}: {msg}")]
pub struct MachineError {
    pub file: String,
    pub msg: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub topology: TopologySpec,
    pub memory: MemorySpec,
    pub cache: CacheSpec,
    pub cpu: CpuSpec,
    /// Shared buses and interconnect links (`[[bus]]` tables).
    #[serde(default)]
    pub bus: Vec<BusSpec>,
    /// The kernel's settings the figures were measured under (`[kernel]`).
    #[serde(default)]
    pub kernel: KernelSpec,
    /// Per-operation costs of the workloads (`[costs]`), every key
    /// optional.
    #[serde(default)]
    pub costs: CostsSpec,
    /// `[ranges]`: for a number of the file (`"memory.mlp" = [1, 4]`), the
    /// range a public source puts it in (cited as `ranges.KEY` in
    /// `[sources]`); a parameter `numalab reproduce` may fit to a seed's
    /// figure stays in it.
    #[serde(default)]
    pub ranges: BTreeMap<String, [f64; 2]>,
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

/// `[kernel]`: the settings of the kernel a calibrated file was measured
/// under, which the simulator takes as its own unless told otherwise.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    /// transparent_hugepage/enabled: `always`, `madvise` or `never`.
    #[serde(default)]
    pub thp: Option<String>,
    /// kernel.numa_balancing: 0 off, 1 on, 2 memory tiering, 3 both.
    #[serde(default)]
    pub numa_balancing: Option<i64>,
}

/// One `[[bus]]` table: a link with its own bandwidth that the memory
/// traffic of some CPUs to some memory crosses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusSpec {
    pub name: String,
    pub bandwidth_gbs: f64,
    #[serde(default)]
    pub cpu_nodes: Option<Vec<i64>>,
    #[serde(default)]
    pub memory_nodes: Option<Vec<i64>>,
    #[serde(default)]
    pub both_ways: bool,
}

/// How memory sits behind controllers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Controllers {
    /// One controller per node (every modern NUMA machine).
    Node,
    /// One controller for all nodes' memory (SMP/UMA).
    Single,
}

fn per_node() -> Controllers {
    Controllers::Node
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    pub nodes: i64,
    #[serde(default = "one")]
    pub nodes_per_package: i64,
    pub cores_per_node: i64,
    #[serde(default = "one")]
    pub threads_per_core: i64,
    #[serde(default = "one")]
    pub llcs_per_node: i64,
    pub memory_per_node_gib: f64,
    #[serde(default)]
    pub distances: Option<Vec<Vec<i64>>>,
}

fn one() -> i64 {
    1
}
/// `memory.line_bytes` when a machine file leaves it out (as the files
/// `numalab calibrate` writes do).
pub const DEFAULT_LINE_BYTES: i64 = 64;

fn default_line() -> i64 {
    DEFAULT_LINE_BYTES
}
fn default_mlp() -> f64 {
    8.0
}
fn default_random_mlp() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    pub local_latency_ns: f64,
    #[serde(default)]
    pub latency_ns: Option<Vec<Vec<f64>>>,
    pub bandwidth_gbs: f64,
    #[serde(default = "default_line")]
    pub line_bytes: i64,
    #[serde(default = "default_mlp")]
    pub mlp: f64,
    /// Independent random misses (numa_test's `a[ix[i]]`) one core
    /// overlaps: 1 (every one waited for, an in-order core; the default,
    /// as every preset) up to what an out-of-order core's miss buffers
    /// hold; `numalab calibrate` measures it.
    #[serde(default = "default_random_mlp")]
    pub random_mlp: f64,
    /// Lines in flight of one core's streamed loads (a read sweep), where
    /// they differ from its streamed stores (`mlp`, a zeroing's): absent,
    /// `mlp`; `numalab calibrate` measures both.
    #[serde(default)]
    pub read_mlp: Option<f64>,
    /// Lines in flight of one core's streamed read-modify-writes (mem's
    /// write sweep: each line loaded, then written back as it leaves),
    /// where they differ from its loads: absent, `read_mlp`. The lines
    /// going back share the core's queues to memory with the loads (one
    /// thread of this project's EPYC host updated memory at 27-28 GB/s
    /// where it read it at 29-36); `numalab calibrate` measures it.
    #[serde(default)]
    pub write_mlp: Option<f64>,
    /// The rate (GB/s) at which a controller carries loads, where it
    /// differs from its rate for stores (`bandwidth_gbs`): a controller
    /// (or the link a node's cores reach it by) serves a line read in
    /// 1 / this and a line written in 1 / `bandwidth_gbs`, one queue for
    /// both. Absent: loads as stores. `numalab calibrate` fits it on
    /// every CPU reading at once, as `bandwidth_gbs` on every CPU zeroing.
    #[serde(default)]
    pub read_bandwidth_gbs: Option<f64>,
    /// Bytes (MiB) the last-level data TLB maps: its entries times the
    /// page size. With `tlb_walk_ns`, a random access over a larger range
    /// misses it with probability 1 - reach / range and waits for a page
    /// walk; 0 (the default): no TLB modelled.
    #[serde(default)]
    pub tlb_reach_mib: f64,
    /// Nanoseconds of one hardware page walk (a TLB miss whose page table
    /// entry is in the caches); 0 (the default): no TLB modelled.
    #[serde(default)]
    pub tlb_walk_ns: f64,
    #[serde(default = "per_node")]
    pub controllers: Controllers,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    pub llc_mib: f64,
    /// The LLC's size as the machine's sysfs reports it, when the cache
    /// the model's accesses get (`llc_mib`, measured by calibrate) is
    /// another: the topology's, so that a benchmark sizes its work here
    /// as it does on the machine (numa_test's default size).
    #[serde(default)]
    pub reported_llc_mib: Option<f64>,
    pub llc_hit_ns: f64,
    pub cross_llc_ns: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Governor {
    Performance,
    Schedutil,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    pub base_ghz: f64,
    pub max_ghz: f64,
    pub min_ghz: f64,
    #[serde(default = "performance")]
    pub governor: Governor,
    #[serde(default = "one_f")]
    pub smt_throughput: f64,
    /// CPUs that can run at once, when fewer than the machine's: a
    /// guest's vCPUs on fewer host CPUs (`numalab calibrate` finds it
    /// from every CPU spinning at once against one alone). None: all.
    #[serde(default)]
    pub run_at_once: Option<u32>,
    /// Idle states below the shallowest, each `[exit_latency_us,
    /// target_residency_us]`, shallow to deep; none: a woken CPU starts
    /// at once.
    #[serde(default)]
    pub idle_states: Vec<Vec<f64>>,
}

fn performance() -> Governor {
    Governor::Performance
}
fn one_f() -> f64 {
    1.0
}

/// A shared bandwidth resource on the path of memory traffic: a node's
/// memory controller, the single controller of an SMP memory system, or a
/// `[[bus]]`. Its contention is computed from the traffic of all the paths
/// it carries (see the engine's `prepare_tick`).
#[derive(Debug, Clone)]
pub struct Resource {
    pub name: String,
    /// Bytes per nanosecond (= GB/s); infinite means unlimited.
    pub bandwidth: f64,
    /// Its queueing delay is counted in units of this idle latency (a
    /// controller's: its node's local latency; a bus's: the smallest idle
    /// latency of the paths it carries).
    pub ref_latency_ns: f64,
    /// The paths it carries, as `cpu node * nnodes + memory node`.
    pub paths: Vec<usize>,
    /// 1 / bandwidth, and the service time of a line over the reference
    /// latency (the engine's per-tick constants).
    pub inv_bandwidth: f64,
    pub wait_per_load: f64,
    /// 1 / the rate at which it carries loads (a controller's
    /// `memory.read_bandwidth_gbs`; else `inv_bandwidth`).
    pub inv_read_bandwidth: f64,
}

impl Resource {
    fn new(
        name: String,
        bandwidth: f64,
        ref_latency_ns: f64,
        paths: Vec<usize>,
        line: f64,
    ) -> Self {
        Resource {
            name,
            bandwidth,
            ref_latency_ns,
            paths,
            inv_bandwidth: 1.0 / bandwidth,
            wait_per_load: line / bandwidth / ref_latency_ns,
            inv_read_bandwidth: 1.0 / bandwidth,
        }
    }

    /// The same, carrying loads at `read` GB/s.
    fn reading_at(mut self, read: Option<f64>) -> Self {
        if let Some(r) = read {
            self.inv_read_bandwidth = 1.0 / r;
        }
        self
    }

    /// Its load under `demand` bytes/ns of uncontended traffic, `mem` of
    /// it the memory part (demand-weighted): utilisation rho, the queueing
    /// wait added to a load's latency (in units of the reference latency)
    /// and the throughput cap (the engine's `prepare_tick` explains both).
    /// `read` of the demand is loads, served at the read rate: one queue
    /// whose line takes the mean of the two service times, weighted by
    /// the traffic (with no read rate of its own, as before).
    pub fn load(&self, demand: f64, read: f64, mem: f64) -> (f64, f64, f64) {
        let (rho, service) = if read > 0.0 && self.inv_read_bandwidth != self.inv_bandwidth {
            let rho = (demand - read) * self.inv_bandwidth + read * self.inv_read_bandwidth;
            (
                rho,
                self.wait_per_load * rho / (demand * self.inv_bandwidth),
            )
        } else {
            (demand * self.inv_bandwidth, self.wait_per_load)
        };
        let x = rho.min(0.95);
        let wait = service * x / (1.0 - x);
        let cap = if rho > 1.0 {
            let phi = (mem / demand).max(1e-9);
            (rho - 1.0 + phi) / phi
        } else {
            rho
        };
        (rho, wait, cap)
    }
}

/// A validated machine, with the lookup tables the engine needs.
#[derive(Debug, Clone)]
pub struct Machine {
    pub name: String,
    pub description: String,
    pub topology: Topology,
    pub ncpus: usize,
    pub nnodes: usize,
    pub cpu_node: Vec<usize>,
    pub cpu_core: Vec<usize>,
    pub cpu_llc: Vec<usize>,
    pub cpu_package: Vec<usize>,
    /// CPUs of each core (SMT siblings), of each LLC, of each node.
    pub core_cpus: Vec<Vec<usize>>,
    pub llc_cpus: Vec<Vec<usize>>,
    pub node_cpus: Vec<Vec<usize>>,
    pub npackages: usize,
    pub cores_per_package: usize,
    pub core_package: Vec<usize>,
    pub distances: Vec<Vec<u32>>,
    /// `latency_ns[cpu node][memory node]`, idle.
    pub latency_ns: Vec<Vec<f64>>,
    /// Bytes per nanosecond (= GB/s) of each node's memory controller (of
    /// the single controller, for every node, when there is one).
    pub bandwidth: Vec<f64>,
    /// Memory controllers first (one per node, or one), then the buses.
    pub resources: Vec<Resource>,
    /// For each path (`cpu node * nnodes + memory node`), the resources
    /// its traffic crosses, in the order of `resources`.
    pub path_resources: Vec<Vec<usize>>,
    pub controllers: Controllers,
    pub memory_bytes: Vec<u64>,
    pub line_bytes: f64,
    pub mlp: f64,
    /// Independent random misses a core overlaps (`memory.random_mlp`).
    pub random_mlp: f64,
    /// Streamed loads in flight (`memory.read_mlp`, else `mlp`).
    pub read_mlp: f64,
    /// Streamed read-modify-writes in flight (`memory.write_mlp`, else
    /// `read_mlp`).
    pub write_mlp: f64,
    /// Bytes the data TLB maps and the time of a page walk
    /// (`memory.tlb_reach_mib`, `memory.tlb_walk_ns`; 0: no TLB).
    pub tlb_reach_bytes: f64,
    pub tlb_walk_ns: f64,
    pub llc_bytes: f64,
    pub llc_hit_ns: f64,
    pub cross_llc_ns: f64,
    pub base_ghz: f64,
    pub max_ghz: f64,
    pub min_ghz: f64,
    pub governor: Governor,
    pub smt_throughput: f64,
    /// CPUs that can run at once (`cpu.run_at_once`; `ncpus` unless the
    /// file says fewer): with more busy, each runs that share of the time.
    pub run_at_once: usize,
    /// (exit latency, target residency) in ns, shallow to deep.
    pub idle_states: Vec<(f64, f64)>,
    /// What one operation of the workloads costs (the file's `[costs]`,
    /// converted at `max_ghz`; today's estimates where it gives none).
    pub costs: Costs,
    /// Cited ranges of the file's numbers (`[ranges]`): key, (lowest,
    /// highest); each one's source is `sources["ranges.KEY"]`.
    pub ranges: BTreeMap<String, (f64, f64)>,
    pub sources: BTreeMap<String, String>,
    /// The transparent_hugepage mode the file was measured under
    /// (`kernel.thp`): the simulated kernel's unless set otherwise
    /// ([`crate::SimConfig::thp`]); none in the presets.
    pub thp: Option<String>,
    /// Whether the kernel the file was measured under balanced NUMA
    /// (`kernel.numa_balancing` 1 or 3): `numalab sim` says so beside a
    /// run whose balancer is none; none in the presets.
    pub numa_balancing: Option<bool>,
}

/// Built-in presets: name, one-line summary, TOML text.
pub const PRESETS: &[(&str, &str)] = &[
    ("azusa16", include_str!("../machines/azusa16.toml")),
    ("tx7", include_str!("../machines/tx7.toml")),
    ("ht2", include_str!("../machines/ht2.toml")),
    ("epyc7642", include_str!("../machines/epyc7642.toml")),
    ("genoa2n", include_str!("../machines/genoa2n.toml")),
    ("rome256", include_str!("../machines/rome256.toml")),
];

/// Where each CPU of a regular machine sits, and the Topology of it.
struct Layout {
    ncpus: usize,
    npackages: usize,
    mem_bytes: u64,
    llc_bytes: u64,
    cpu_node: Vec<usize>,
    cpu_core: Vec<usize>,
    cpu_llc: Vec<usize>,
    cpu_package: Vec<usize>,
    core_cpus: Vec<Vec<usize>>,
    llc_cpus: Vec<Vec<usize>>,
    node_cpus: Vec<Vec<usize>>,
    core_package: Vec<usize>,
    topology: Topology,
}

impl MachineFile {
    pub fn parse(file: &str, text: &str) -> Result<MachineFile, MachineError> {
        let m = toml::from_str::<MachineFile>(text).map_err(|e| {
            let mut msg = e.message().replace('\n', " ");
            if let Some(span) = e.span() {
                let line = text[..span.start.min(text.len())].lines().count().max(1);
                msg = format!("line {line}: {msg}");
            }
            MachineError {
                file: file.to_string(),
                msg,
            }
        })?;
        m.check_values_in_ranges(file, text)?;
        Ok(m)
    }

    /// Each `[ranges]` key names a number of the file, within its range.
    fn check_values_in_ranges(&self, file: &str, text: &str) -> Result<(), MachineError> {
        if self.ranges.is_empty() {
            return Ok(());
        }
        let err = |msg: String| MachineError {
            file: file.to_string(),
            msg,
        };
        let table: toml::Value = toml::from_str(text).map_err(|e| err(e.message().into()))?;
        for (key, [lo, hi]) in &self.ranges {
            if lo.partial_cmp(hi) != Some(std::cmp::Ordering::Less) {
                continue; // build says what is wrong with it
            }
            let mut v = Some(&table);
            for part in key.split('.') {
                v = v.and_then(|t| t.get(part));
            }
            let x = match v {
                Some(toml::Value::Float(f)) => *f,
                Some(toml::Value::Integer(i)) => *i as f64,
                _ => {
                    return Err(err(format!(
                        "ranges: {key:?} names no number of the file (write it as section.key, e.g. memory.mlp)"
                    )))
                }
            };
            if !(*lo..=*hi).contains(&x) {
                return Err(err(format!(
                    "{key} = {x} is outside its cited range [{lo}, {hi}] (ranges.{key})"
                )));
            }
        }
        Ok(())
    }

    /// Check every value and build the machine.
    pub fn build(&self, file: &str) -> Result<Machine, MachineError> {
        let err = |msg: String| MachineError {
            file: file.to_string(),
            msg,
        };
        let t = &self.topology;
        self.check_topology(&err)?;
        self.check_values(&err)?;
        let n = t.nodes as usize;
        let distances = self.distances(n, &err)?;
        let latency_ns = self.latencies(n, &distances, &err)?;
        let (resources, path_resources) = self.resources(n, &latency_ns, &err)?;
        let l = self.layout(distances.clone());
        let (mem_bytes, llc_bytes) = (l.mem_bytes, l.llc_bytes);
        let topology = l.topology;
        let cores_per_node = t.cores_per_node as usize;
        topology.validate().map_err(|e| err(e.to_string()))?;
        Ok(Machine {
            name: self.name.clone(),
            description: self.description.clone(),
            topology,
            ncpus: l.ncpus,
            nnodes: n,
            cpu_node: l.cpu_node,
            cpu_core: l.cpu_core,
            cpu_llc: l.cpu_llc,
            cpu_package: l.cpu_package,
            core_cpus: l.core_cpus,
            llc_cpus: l.llc_cpus,
            node_cpus: l.node_cpus,
            npackages: l.npackages,
            cores_per_package: cores_per_node * t.nodes_per_package as usize,
            core_package: l.core_package,
            distances,
            latency_ns,
            bandwidth: vec![self.memory.bandwidth_gbs; n],
            resources,
            path_resources,
            controllers: self.memory.controllers,
            memory_bytes: vec![mem_bytes; n],
            line_bytes: self.memory.line_bytes as f64,
            mlp: self.memory.mlp,
            random_mlp: self.memory.random_mlp,
            read_mlp: self.memory.read_mlp.unwrap_or(self.memory.mlp),
            write_mlp: self
                .memory
                .write_mlp
                .or(self.memory.read_mlp)
                .unwrap_or(self.memory.mlp),
            tlb_reach_bytes: self.memory.tlb_reach_mib * (1u64 << 20) as f64,
            tlb_walk_ns: self.memory.tlb_walk_ns,
            llc_bytes: llc_bytes as f64,
            llc_hit_ns: self.cache.llc_hit_ns,
            cross_llc_ns: self.cache.cross_llc_ns,
            base_ghz: self.cpu.base_ghz,
            max_ghz: self.cpu.max_ghz,
            min_ghz: self.cpu.min_ghz,
            governor: self.cpu.governor,
            smt_throughput: self.cpu.smt_throughput,
            run_at_once: self.run_at_once(l.ncpus, &err)?,
            idle_states: self
                .cpu
                .idle_states
                .iter()
                .map(|st| (st[0] * 1e3, st[1] * 1e3))
                .collect(),
            costs: Costs::new(&self.costs, self.cpu.max_ghz),
            ranges: self.checked_ranges(&err)?,
            sources: self.sources.clone(),
            thp: self.checked_thp(&err)?,
            numa_balancing: match self.kernel.numa_balancing {
                None => None,
                Some(v @ 0..=3) => Some(v & 1 == 1),
                Some(v) => {
                    return Err(err(format!(
                        "kernel.numa_balancing = {v}: must be 0, 1, 2 or 3 (as the sysctl)"
                    )))
                }
            },
        })
    }

    /// `kernel.thp`, one of the modes the model knows.
    fn checked_thp(
        &self,
        err: &dyn Fn(String) -> MachineError,
    ) -> Result<Option<String>, MachineError> {
        match &self.kernel.thp {
            Some(t) if !crate::THP_MODES.contains(&t.as_str()) => Err(err(format!(
                "kernel.thp = {t:?}: must be {}",
                crate::THP_MODES.join(", ")
            ))),
            t => Ok(t.clone()),
        }
    }

    /// The topology's counts: each at least 1, within the simulator's
    /// size, nodes and cores dividing evenly into packages and LLCs.
    fn check_topology(&self, err: &dyn Fn(String) -> MachineError) -> Result<(), MachineError> {
        let t = &self.topology;
        for (k, v) in [
            ("topology.nodes", t.nodes),
            ("topology.nodes_per_package", t.nodes_per_package),
            ("topology.cores_per_node", t.cores_per_node),
            ("topology.threads_per_core", t.threads_per_core),
            ("topology.llcs_per_node", t.llcs_per_node),
        ] {
            if v < 1 {
                return Err(err(format!(
                    "{k} must be at least 1, got {v} (a machine needs CPUs)"
                )));
            }
        }
        if t.nodes > 64 || t.cores_per_node * t.threads_per_core > 1024 {
            return Err(err(
                "machine too large (at most 64 nodes, 1024 CPUs per node)".into(),
            ));
        }
        if t.cores_per_node % t.llcs_per_node != 0 {
            return Err(err(format!(
                "topology.cores_per_node ({}) must be a multiple of topology.llcs_per_node ({})",
                t.cores_per_node, t.llcs_per_node
            )));
        }
        if t.nodes % t.nodes_per_package != 0 {
            return Err(err(format!(
                "topology.nodes ({}) must be a multiple of topology.nodes_per_package ({})",
                t.nodes, t.nodes_per_package
            )));
        }
        Ok(())
    }

    /// Every number within its physically plausible range, the idle states
    /// from shallow to deep, the frequencies in order, a sane line size.
    fn check_values(&self, err: &dyn Fn(String) -> MachineError) -> Result<(), MachineError> {
        let t = &self.topology;
        // Every value within a physically plausible range, so that a
        // typo or a hostile file cannot make a run crawl to the
        // simulation's time limit (or divide by zero).
        let within = |k: &str, v: f64| -> Result<(), MachineError> {
            check_range(k, v).map_err(|e| err(e.to_string()))
        };
        within("topology.memory_per_node_gib", t.memory_per_node_gib)?;
        within("memory.local_latency_ns", self.memory.local_latency_ns)?;
        within("memory.bandwidth_gbs", self.memory.bandwidth_gbs)?;
        within("memory.mlp", self.memory.mlp)?;
        within("memory.random_mlp", self.memory.random_mlp)?;
        within("memory.tlb_reach_mib", self.memory.tlb_reach_mib)?;
        within("memory.tlb_walk_ns", self.memory.tlb_walk_ns)?;
        if let Some(v) = self.memory.read_mlp {
            within("memory.read_mlp", v)?;
        }
        if let Some(v) = self.memory.write_mlp {
            within("memory.write_mlp", v)?;
        }
        if let Some(v) = self.memory.read_bandwidth_gbs {
            within("memory.read_bandwidth_gbs", v)?;
        }
        within("cache.llc_mib", self.cache.llc_mib)?;
        if let Some(v) = self.cache.reported_llc_mib {
            within("cache.reported_llc_mib", v)?;
        }
        within("cache.llc_hit_ns", self.cache.llc_hit_ns)?;
        within("cache.cross_llc_ns", self.cache.cross_llc_ns)?;
        within("cpu.base_ghz", self.cpu.base_ghz)?;
        within("cpu.max_ghz", self.cpu.max_ghz)?;
        within("cpu.min_ghz", self.cpu.min_ghz)?;
        within("cpu.smt_throughput", self.cpu.smt_throughput)?;
        if let Some(v) = self.cpu.run_at_once {
            within("cpu.run_at_once", v as f64)?;
        }
        for (k, v) in self.costs.entries() {
            if let Some(v) = v {
                within(k, v)?;
            }
        }
        self.check_idle_states(err)?;
        if !(self.cpu.min_ghz <= self.cpu.base_ghz && self.cpu.base_ghz <= self.cpu.max_ghz) {
            return Err(err(format!(
                "cpu frequencies must satisfy min_ghz <= base_ghz <= max_ghz, got {} / {} / {}",
                self.cpu.min_ghz, self.cpu.base_ghz, self.cpu.max_ghz
            )));
        }
        if self.memory.line_bytes < 8 || self.memory.line_bytes > 4096 {
            return Err(err(format!(
                "memory.line_bytes must be between 8 and 4096, got {}",
                self.memory.line_bytes
            )));
        }
        Ok(())
    }

    /// `cpu.run_at_once`, at most the machine's `ncpus` CPUs; all of them
    /// when the file does not say.
    fn run_at_once(
        &self,
        ncpus: usize,
        err: &dyn Fn(String) -> MachineError,
    ) -> Result<usize, MachineError> {
        match self.cpu.run_at_once {
            None => Ok(ncpus),
            Some(v) if v as usize <= ncpus => Ok(v as usize),
            Some(v) => Err(err(format!(
                "cpu.run_at_once = {v}: more than the machine's {ncpus} CPUs"
            ))),
        }
    }

    /// `cpu.idle_states`: pairs of exit latency and target residency (us),
    /// bounded, from shallow to deep.
    fn check_idle_states(&self, err: &dyn Fn(String) -> MachineError) -> Result<(), MachineError> {
        let mut prev = (0.0, 0.0);
        for (i, st) in self.cpu.idle_states.iter().enumerate() {
            let &[exit, residency] = st.as_slice() else {
                return Err(err(format!(
                    "cpu.idle_states[{i}] = {st:?}: [exit latency us, target residency us], two numbers"
                )));
            };
            if !(exit <= IDLE_US_MAX && residency <= IDLE_US_MAX) {
                return Err(err(format!(
                    "cpu.idle_states[{i}] = [{}, {}]: exit latency and residency must be at most {IDLE_US_MAX} us",
                    num(exit),
                    num(residency)
                )));
            }
            if !(exit.is_finite() && residency.is_finite() && exit >= 0.0 && residency >= exit) {
                return Err(err(format!(
                    "cpu.idle_states[{i}] = [{exit}, {residency}]: [exit latency us, target residency us], numbers with the residency at least the exit latency"
                )));
            }
            if exit < prev.0 || residency < prev.1 {
                return Err(err(format!(
                    "cpu.idle_states[{i}] = [{exit}, {residency}]: states go from shallow to deep (latency and residency not below the state before)"
                )));
            }
            prev = (exit, residency);
        }
        Ok(())
    }

    /// The SLIT: the file's (symmetric, 10 on the diagonal, 11-254
    /// elsewhere) or 10/20.
    fn distances(
        &self,
        n: usize,
        err: &dyn Fn(String) -> MachineError,
    ) -> Result<Vec<Vec<u32>>, MachineError> {
        let t = &self.topology;
        Ok(match &t.distances {
            None => (0..n)
                .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
                .collect(),
            Some(d) => {
                if d.len() != n || d.iter().any(|r| r.len() != n) {
                    return Err(err(format!(
                        "topology.distances must be a {n}x{n} matrix (one row per node)"
                    )));
                }
                for i in 0..n {
                    if d[i][i] != 10 {
                        return Err(err(format!(
                            "distances: d({i},{i}) must be 10 (local), got {}",
                            d[i][i]
                        )));
                    }
                    for j in 0..n {
                        if d[i][j] != d[j][i] {
                            return Err(err(format!(
                                "distances are asymmetric: d({i},{j})={} but d({j},{i})={}",
                                d[i][j], d[j][i]
                            )));
                        }
                        if i != j && (d[i][j] <= 10 || d[i][j] > 254) {
                            return Err(err(format!(
                                "distances: d({i},{j})={} must be between 11 and 254",
                                d[i][j]
                            )));
                        }
                    }
                }
                d.iter()
                    .map(|r| r.iter().map(|&x| x as u32).collect())
                    .collect()
            }
        })
    }

    /// The latency matrix: the file's, each within range, or the local
    /// latency scaled by the distances.
    fn latencies(
        &self,
        n: usize,
        distances: &[Vec<u32>],
        err: &dyn Fn(String) -> MachineError,
    ) -> Result<Vec<Vec<f64>>, MachineError> {
        Ok(match &self.memory.latency_ns {
            None => (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| self.memory.local_latency_ns * distances[i][j] as f64 / 10.0)
                        .collect()
                })
                .collect(),
            Some(l) => {
                if l.len() != n || l.iter().any(|r| r.len() != n) {
                    return Err(err(format!(
                        "memory.latency_ns must be a {n}x{n} matrix (one row per node)"
                    )));
                }
                for (i, row) in l.iter().enumerate() {
                    for (j, &v) in row.iter().enumerate() {
                        check_range(&format!("memory.latency_ns[{i}][{j}]"), v)
                            .map_err(|e| err(e.to_string()))?;
                    }
                }
                l.clone()
            }
        })
    }

    /// CPUs numbered as Linux does on x86 (first threads of all cores,
    /// then the second threads), grouped by core, LLC and node, and the
    /// one Topology type of them.
    fn layout(&self, distances: Vec<Vec<u32>>) -> Layout {
        let t = &self.topology;
        let n = t.nodes as usize;
        let cores_per_node = t.cores_per_node as usize;
        let threads = t.threads_per_core as usize;
        let llcs_per_node = t.llcs_per_node as usize;
        let ncores = n * cores_per_node;
        let ncpus = ncores * threads;
        let cores_per_llc = cores_per_node / llcs_per_node;
        let npackages = n / t.nodes_per_package as usize;
        let mem_bytes = (t.memory_per_node_gib * (1u64 << 30) as f64) as u64;
        let llc_bytes = (self.cache.llc_mib * (1u64 << 20) as f64) as u64;
        let reported_llc_bytes = self
            .cache
            .reported_llc_mib
            .map_or(llc_bytes, |m| (m * (1u64 << 20) as f64) as u64);

        // Linux's usual x86 numbering: first threads of all cores, then the
        // second threads (cpu i and i + ncores are siblings).
        let mut cpu_node = vec![0; ncpus];
        let mut cpu_core = vec![0; ncpus];
        let mut cpu_llc = vec![0; ncpus];
        let mut cpu_package = vec![0; ncpus];
        for th in 0..threads {
            for core in 0..ncores {
                let id = th * ncores + core;
                cpu_node[id] = core / cores_per_node;
                cpu_core[id] = core;
                cpu_llc[id] = core / cores_per_llc;
                cpu_package[id] = cpu_node[id] / t.nodes_per_package as usize;
            }
        }
        let group = |key: &Vec<usize>, count: usize| -> Vec<Vec<usize>> {
            let mut g = vec![Vec::new(); count];
            for (cpu, &k) in key.iter().enumerate() {
                g[k].push(cpu);
            }
            g
        };
        let core_cpus = group(&cpu_core, ncores);
        let llc_cpus = group(&cpu_llc, n * llcs_per_node);
        let node_cpus = group(&cpu_node, n);
        let core_package = (0..ncores)
            .map(|c| (c / cores_per_node) / t.nodes_per_package as usize)
            .collect();

        let topology = Topology {
            nodes: node_cpus
                .iter()
                .enumerate()
                .map(|(i, c)| Node {
                    id: i as u32,
                    cpus: c.iter().map(|&x| x as u32).collect(),
                    memory_bytes: mem_bytes,
                })
                .collect(),
            cpus: (0..ncpus)
                .map(|id| Cpu {
                    id: id as u32,
                    node: cpu_node[id] as u32,
                    package: cpu_package[id] as u32,
                    core: cpu_core[id] as u32,
                    llc: Some(cpu_llc[id] as u32),
                })
                .collect(),
            llcs: llc_cpus
                .iter()
                .enumerate()
                .map(|(i, c)| Llc {
                    id: i as u32,
                    level: 3,
                    size_bytes: reported_llc_bytes,
                    cpus: c.iter().map(|&x| x as u32).collect(),
                })
                .collect(),
            distances,
        };
        Layout {
            ncpus,
            npackages,
            mem_bytes,
            llc_bytes,
            cpu_node,
            cpu_core,
            cpu_llc,
            cpu_package,
            core_cpus,
            llc_cpus,
            node_cpus,
            core_package,
            topology,
        }
    }

    /// `[ranges]`, each finite, lowest below highest, with its source.
    fn checked_ranges(
        &self,
        err: &dyn Fn(String) -> MachineError,
    ) -> Result<BTreeMap<String, (f64, f64)>, MachineError> {
        let mut out = BTreeMap::new();
        for (key, [lo, hi]) in &self.ranges {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(err(format!(
                    "ranges: {key} = [{lo}, {hi}]: write [lowest, highest], lowest below highest"
                )));
            }
            if self
                .sources
                .get(&format!("ranges.{key}"))
                .is_none_or(|s| s.trim().is_empty())
            {
                return Err(err(format!(
                    "ranges: {key} has no source: cite where the range comes from as \"ranges.{key}\" in [sources]"
                )));
            }
            out.insert(key.clone(), (*lo, *hi));
        }
        Ok(out)
    }
}

impl MachineFile {
    /// The memory controllers and the `[[bus]]` tables as resources, and
    /// the resources each path crosses.
    #[allow(clippy::type_complexity)]
    fn resources(
        &self,
        n: usize,
        latency_ns: &[Vec<f64>],
        err: &dyn Fn(String) -> MachineError,
    ) -> Result<(Vec<Resource>, Vec<Vec<usize>>), MachineError> {
        let all: Vec<usize> = (0..n).collect();
        let line = self.memory.line_bytes as f64;
        let min_latency = |paths: &[usize]| {
            paths
                .iter()
                .map(|&p| latency_ns[p / n][p % n])
                .fold(f64::INFINITY, f64::min)
        };
        let mut resources = Vec::new();
        match self.memory.controllers {
            Controllers::Node => {
                for node in 0..n {
                    resources.push(
                        Resource::new(
                            format!("memory controller of node {node}"),
                            self.memory.bandwidth_gbs,
                            latency_ns[node][node],
                            (0..n).map(|c| c * n + node).collect(),
                            line,
                        )
                        .reading_at(self.memory.read_bandwidth_gbs),
                    );
                }
            }
            Controllers::Single => {
                let paths: Vec<usize> = (0..n * n).collect();
                let reference = min_latency(&paths);
                resources.push(
                    Resource::new(
                        "memory controller".into(),
                        self.memory.bandwidth_gbs,
                        reference,
                        paths,
                        line,
                    )
                    .reading_at(self.memory.read_bandwidth_gbs),
                );
            }
        }
        if self.bus.len() > 1024 {
            return Err(err(format!(
                "too many [[bus]] tables ({}, at most 1024)",
                self.bus.len()
            )));
        }
        for (i, b) in self.bus.iter().enumerate() {
            if b.name.trim().is_empty() {
                return Err(err(format!("bus {}: name must not be empty", i + 1)));
            }
            if self.bus[..i].iter().any(|o| o.name == b.name) {
                return Err(err(format!("bus {:?} is declared twice", b.name)));
            }
            check_range("bandwidth_gbs", b.bandwidth_gbs)
                .map_err(|m| err(format!("bus {:?}: {m}", b.name)))?;
            let nodes = |key: &str, v: &Option<Vec<i64>>| -> Result<Vec<usize>, MachineError> {
                let Some(v) = v else { return Ok(all.clone()) };
                if v.is_empty() {
                    return Err(err(format!(
                        "bus {:?}: {key} is empty (leave it out for every node)",
                        b.name
                    )));
                }
                let mut out = Vec::new();
                for &x in v {
                    if x < 0 || x as usize >= n {
                        return Err(err(format!(
                            "bus {:?}: unknown node {x} in {key} (nodes are 0..{})",
                            b.name,
                            n - 1
                        )));
                    }
                    if out.contains(&(x as usize)) {
                        return Err(err(format!(
                            "bus {:?}: node {x} appears twice in {key}",
                            b.name
                        )));
                    }
                    out.push(x as usize);
                }
                Ok(out)
            };
            let cpu = nodes("cpu_nodes", &b.cpu_nodes)?;
            let mem = nodes("memory_nodes", &b.memory_nodes)?;
            let mut paths: Vec<usize> = Vec::new();
            for &c in &cpu {
                for &m in &mem {
                    paths.push(c * n + m);
                    if b.both_ways {
                        paths.push(m * n + c);
                    }
                }
            }
            paths.sort_unstable();
            paths.dedup();
            let reference = min_latency(&paths);
            resources.push(Resource::new(
                format!("bus {}", b.name),
                b.bandwidth_gbs,
                reference,
                paths,
                line,
            ));
        }
        let mut path_resources = vec![Vec::new(); n * n];
        for (i, r) in resources.iter().enumerate() {
            for &p in &r.paths {
                path_resources[p].push(i);
            }
        }
        Ok((resources, path_resources))
    }
}

impl Machine {
    /// A preset by name, `host`, or a path to a machine file.
    /// `NAME[section.key=value,...]` overrides keys of the file (see
    /// [`crate::overrides`]).
    pub fn load(spec: &str) -> Result<Machine, MachineError> {
        if let Some((base, sets)) = crate::overrides::split(spec)? {
            return crate::overrides::load(&base, &sets, spec);
        }
        if let Some((name, text)) = PRESETS.iter().find(|(n, _)| *n == spec) {
            return MachineFile::parse(name, text)?.build(name);
        }
        if spec == "host" {
            return Machine::host(Path::new("/sys"));
        }
        let path = Path::new(spec);
        if !path.exists() {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
            return Err(MachineError {
                file: spec.to_string(),
                msg: format!(
                    "no such file and no such preset (presets: {}, host)",
                    names.join(", ")
                ),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| MachineError {
            file: spec.to_string(),
            msg: e.to_string(),
        })?;
        MachineFile::parse(spec, &text)?.build(spec)
    }

    /// This machine's topology from sysfs, with generic memory and CPU
    /// parameters (the real latencies of the host are not measured here;
    /// the record says so). Irregular topologies are approximated by the
    /// regular machine with the same node count, cores and SMT width.
    pub fn host(sys: &Path) -> Result<Machine, MachineError> {
        let err = |msg: String| MachineError {
            file: "host".into(),
            msg,
        };
        let topo = Topology::from_sysfs(sys).map_err(|e| err(e.to_string()))?;
        let regular = RegularTopology::of(&topo);
        let text = format!(
            "name = \"host\"\n\
             description = \"this machine's topology from sysfs; memory and CPU parameters are generic defaults, not measured\"\n\
             {}\
             [memory]\nlocal_latency_ns = 90.0\nbandwidth_gbs = 20.0\nmlp = 10\n\
             [cache]\nllc_mib = {llc}\nllc_hit_ns = 12.0\ncross_llc_ns = 60.0\n\
             [cpu]\nbase_ghz = 2.5\nmax_ghz = 2.5\nmin_ghz = 1.0\nsmt_throughput = 0.65\n\
             [sources]\n\"all\" = \"topology: /sys/devices/system; every other value is a generic default (not measured on this host; numalab calibrate measures them)\"\n",
            regular.toml(),
            llc = (topo.max_llc_bytes().max(1 << 20)) as f64 / (1u64 << 20) as f64,
        );
        let mut m = MachineFile::parse("host", &text)?.build("host")?;
        if regular.distances.len() != regular.nodes {
            return Err(err("could not read node distances".into()));
        }
        m.description = format!("{} ({})", m.description, topo.summary());
        Ok(m)
    }

    /// One line per preset for `numalab sim --list`.
    pub fn preset_lines() -> Vec<(String, String)> {
        PRESETS
            .iter()
            .map(|(name, text)| {
                let d = MachineFile::parse(name, text)
                    .map(|f| f.description)
                    .unwrap_or_else(|e| e.to_string());
                (name.to_string(), d)
            })
            .chain(std::iter::once((
                "host".to_string(),
                "this machine's topology from sysfs, generic latencies".to_string(),
            )))
            .collect()
    }

    pub fn llc_count(&self) -> usize {
        self.llc_cpus.len()
    }

    /// Cost of moving one cache line between the LLCs of two CPUs.
    pub fn transfer_ns(&self, llc_a: usize, llc_b: usize) -> f64 {
        if llc_a == llc_b {
            return self.llc_hit_ns;
        }
        let na = self.llc_cpus[llc_a][0];
        let nb = self.llc_cpus[llc_b][0];
        let (na, nb) = (self.cpu_node[na], self.cpu_node[nb]);
        if na == nb {
            self.cross_llc_ns
        } else {
            self.cross_llc_ns.max(self.latency_ns[na][nb])
        }
    }
}

/// The regular machine (every node alike) the simulator models for a
/// real topology: the same number of CPU nodes, cores and SMT width;
/// LLCs per node when they divide the cores, else one; each node the
/// size of the largest (1 GiB when sysfs gives none); memory-only nodes
/// left out.
#[derive(Debug, Clone, PartialEq)]
pub struct RegularTopology {
    pub nodes: usize,
    pub cores_per_node: usize,
    pub threads: usize,
    pub llcs_per_node: usize,
    pub memory_per_node_gib: f64,
    /// Between the CPU nodes, in node order.
    pub distances: Vec<Vec<i64>>,
}

impl RegularTopology {
    pub fn of(topo: &Topology) -> RegularTopology {
        let cpu_nodes: Vec<_> = topo.cpu_nodes().collect();
        let nodes = cpu_nodes.len().max(1);
        let threads = topo.threads_per_core().max(1);
        let cores = topo.core_count().max(1);
        let cores_per_node = (cores / nodes).max(1);
        let llcs_per_node = {
            let l = (topo.llcs.len() / nodes).max(1);
            if cores_per_node.is_multiple_of(l) {
                l
            } else {
                1
            }
        };
        // The largest node as it is: a file that gave a guest's 512 MiB
        // nodes 1 GiB sized validate's buffers to half a node, not a
        // quarter. 1 GiB only where sysfs gives no node's size.
        let mem = topo
            .nodes
            .iter()
            .map(|n| n.memory_bytes)
            .max()
            .filter(|&b| b > 0)
            .unwrap_or(1 << 30);
        let idx: Vec<usize> = cpu_nodes
            .iter()
            .filter_map(|n| topo.node_index(n.id))
            .collect();
        let distances = idx
            .iter()
            .map(|&i| idx.iter().map(|&j| topo.distances[i][j] as i64).collect())
            .collect();
        RegularTopology {
            nodes,
            cores_per_node,
            threads,
            llcs_per_node,
            memory_per_node_gib: mem as f64 / (1u64 << 30) as f64,
            distances,
        }
    }

    /// The `[topology]` table of a machine file.
    pub fn toml(&self) -> String {
        format!(
            "[topology]\nnodes = {}\ncores_per_node = {}\nthreads_per_core = {}\n\
             llcs_per_node = {}\nmemory_per_node_gib = {}\ndistances = {:?}\n",
            self.nodes,
            self.cores_per_node,
            self.threads,
            self.llcs_per_node,
            self.memory_per_node_gib,
            self.distances
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node is described at its own size: a 2 x 512 MiB guest's file
    /// says 0.5 GiB (it said 1, so validate sized its buffers to half a
    /// node); 1 GiB stands in only where sysfs gives no size.
    #[test]
    fn a_small_nodes_size_is_kept() {
        let t = |mem| numalab_topology::Topology::regular(2, 1, 1, 1, 8 << 20, mem, None).unwrap();
        assert_eq!(RegularTopology::of(&t(512 << 20)).memory_per_node_gib, 0.5);
        assert_eq!(RegularTopology::of(&t(0)).memory_per_node_gib, 1.0);
        assert_eq!(RegularTopology::of(&t(3 << 30)).memory_per_node_gib, 3.0);
    }

    const OK: &str = r#"
name = "t"
[topology]
nodes = 2
cores_per_node = 2
threads_per_core = 2
memory_per_node_gib = 1
distances = [[10, 20], [20, 10]]
[memory]
local_latency_ns = 100
bandwidth_gbs = 10
[cache]
llc_mib = 8
llc_hit_ns = 10
cross_llc_ns = 50
[cpu]
base_ghz = 2
max_ghz = 3
min_ghz = 1
"#;

    fn bus(name: &str, gbs: &str, extra: &str) -> String {
        format!("[[bus]]\nname = \"{name}\"\nbandwidth_gbs = {gbs}\n{extra}\n")
    }

    fn build(text: &str) -> Result<Machine, MachineError> {
        MachineFile::parse("x.toml", text)?.build("x.toml")
    }

    /// A `[ranges]` entry is a cited range of one of the file's numbers:
    /// the number inside it, a source beside it, lowest below highest.
    #[test]
    fn ranges_are_cited_and_hold_the_files_value() {
        let with =
            |range: &str, source: &str| format!("{OK}\n[ranges]\n{range}\n[sources]\n{source}\n");
        let cite = "\"ranges.memory.local_latency_ns\" = \"a data sheet\"";
        let m = build(&with("\"memory.local_latency_ns\" = [50, 200]", cite)).unwrap();
        assert_eq!(m.ranges["memory.local_latency_ns"], (50.0, 200.0));
        for (text, want) in [
            (
                with("\"memory.local_latency_ns\" = [150, 200]", cite),
                "outside its cited range",
            ),
            (
                with("\"memory.local_latency_ns\" = [50, 200]", ""),
                "has no source",
            ),
            (
                with("\"memory.local_latency_ns\" = [200, 50]", cite),
                "lowest below highest",
            ),
            (
                with(
                    "\"memory.latencyy\" = [50, 200]",
                    "\"ranges.memory.latencyy\" = \"x\"",
                ),
                "names no number",
            ),
        ] {
            let e = build(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn presets_are_valid() {
        for (name, _) in PRESETS {
            let m = Machine::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert!(m.ncpus > 0);
            assert!(!m.sources.is_empty(), "{name} cites no sources");
        }
    }

    /// Every preset of more than one node says what joins its nodes: a
    /// `[[bus]]` on some path between two nodes, with its source, or an
    /// `interconnect` source saying why none is declared.
    #[test]
    fn every_multi_node_preset_declares_its_links_or_says_why_not() {
        for (name, _) in PRESETS {
            let m = Machine::load(name).unwrap();
            if m.nnodes < 2 {
                continue;
            }
            let n = m.nnodes;
            let link = m
                .resources
                .iter()
                .filter(|r| r.name.starts_with("bus "))
                .any(|r| r.paths.iter().any(|&p| p / n != p % n));
            let why = m.sources.get("interconnect");
            assert!(
                why.is_some(),
                "{name}: no \"interconnect\" source says what joins its nodes"
            );
            if link {
                assert!(m.sources.contains_key("bus.bandwidth_gbs"), "{name}");
            } else {
                assert!(why.unwrap().contains("no bus"), "{name}: {why:?}");
            }
        }
    }

    #[test]
    fn host_machines_come_from_sysfs_trees() {
        let fx =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topology/tests/fixtures");
        let m = Machine::host(&fx.join("azusa-4node-16cpu")).unwrap();
        assert_eq!((m.nnodes, m.ncpus), (4, 16));
        let t = Topology::from_sysfs(&fx.join("azusa-4node-16cpu")).unwrap();
        assert_eq!(m.distances, t.distances);
        let m = Machine::host(&fx.join("2socket-smt-4llc")).unwrap();
        assert_eq!(m.nnodes, 2);
        assert_eq!(m.core_cpus[0].len(), 2, "SMT siblings kept");
        assert!(m.description.contains("not measured"));
        // A memory-only node (CXL, tiering) is left out: the model's nodes have CPUs.
        let t = Topology::from_sysfs(&fx.join("memory-only-node")).unwrap();
        let m = Machine::host(&fx.join("memory-only-node")).unwrap();
        assert_eq!(m.nnodes, t.cpu_nodes().count());
    }

    /// `kernel.thp` is kept for the simulator; a mode the model does not
    /// know is a one-line error naming the modes.
    #[test]
    fn the_kernels_thp_mode_is_kept_and_checked() {
        assert_eq!(build(OK).unwrap().thp, None);
        let m = build(&format!("{OK}[kernel]\nthp = \"madvise\"\n")).unwrap();
        assert_eq!(m.thp.as_deref(), Some("madvise"));
        let e = build(&format!("{OK}[kernel]\nthp = \"sometimes\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kernel.thp = \"sometimes\": must be always, madvise, never"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let m = build(&format!("{OK}[kernel]\nnuma_balancing = 3\n")).unwrap();
        assert_eq!(m.numa_balancing, Some(true));
        let m = build(&format!("{OK}[kernel]\nnuma_balancing = 2\n")).unwrap();
        assert_eq!(m.numa_balancing, Some(false));
        assert_eq!(build(OK).unwrap().numa_balancing, None);
        let e = build(&format!("{OK}[kernel]\nnuma_balancing = 7\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kernel.numa_balancing = 7: must be 0, 1, 2 or 3"),
            "{e}"
        );
    }

    #[test]
    fn good_file_builds() {
        let m = build(OK).unwrap();
        assert_eq!(m.ncpus, 8);
        assert_eq!(m.core_cpus[0], vec![0, 4]);
        assert_eq!(m.latency_ns[0][1], 200.0);
    }

    #[test]
    fn errors_are_one_line_and_name_the_problem() {
        let cases = [
            (
                OK.replace("[[10, 20], [20, 10]]", "[[10, 20], [21, 10]]"),
                "distances are asymmetric: d(0,1)=20 but d(1,0)=21",
            ),
            (
                OK.replace("cores_per_node = 2", "cores_per_node = 0"),
                "cores_per_node must be at least 1",
            ),
            (
                OK.replace("local_latency_ns = 100", "local_latency_ns = -5"),
                "memory.local_latency_ns = -5: must be between 1 and 100000 ns",
            ),
            (
                OK.replace("llc_hit_ns = 10", "llc_hit_ns = 10\nfoo = 1"),
                "unknown field `foo`",
            ),
            (
                OK.replace("max_ghz = 3", "max_ghz = 3\nidle_states = [[400, 100]]"),
                "cpu.idle_states[0] = [400, 100]: [exit latency us, target residency us]",
            ),
            (
                OK.replace(
                    "max_ghz = 3",
                    "max_ghz = 3\nidle_states = [[400, 800], [1, 2]]",
                ),
                "cpu.idle_states[1] = [1, 2]: states go from shallow to deep",
            ),
            (
                OK.replace("max_ghz = 3", "max_ghz = 3\nidle_states = [[400]]"),
                "cpu.idle_states[0] = [400.0]: [exit latency us, target residency us], two numbers",
            ),
            (
                OK.replace("bandwidth_gbs = 10", "bandwidth_gbs = 0"),
                "memory.bandwidth_gbs = 0: must be between 0.001 and 100000 GB/s, or inf (unlimited)",
            ),
            (
                OK.replace(
                    "bandwidth_gbs = 10",
                    "bandwidth_gbs = 10\nread_bandwidth_gbs = -3",
                ),
                "memory.read_bandwidth_gbs = -3: must be between 0.001 and 100000 GB/s, or inf (unlimited)",
            ),
            (
                format!("{OK}{}", bus("fsb", "1", "cpu_nodes = [2]")),
                "bus \"fsb\": unknown node 2 in cpu_nodes (nodes are 0..1)",
            ),
            (
                format!("{OK}{}", bus("fsb", "1", "memory_nodes = [-1]")),
                "bus \"fsb\": unknown node -1 in memory_nodes",
            ),
            (
                format!("{OK}{}", bus("fsb", "0", "")),
                "bus \"fsb\": bandwidth_gbs = 0: must be between 0.001 and 100000 GB/s, or inf",
            ),
            (
                format!("{OK}{}", bus("fsb", "nan", "")),
                "bus \"fsb\": bandwidth_gbs = NaN: must be between",
            ),
            (
                format!("{OK}{}", bus("fsb", "1", "cpu_nodes = []")),
                "bus \"fsb\": cpu_nodes is empty",
            ),
            (
                format!("{OK}{}", bus("fsb", "1", "cpu_nodes = [1, 1]")),
                "bus \"fsb\": node 1 appears twice in cpu_nodes",
            ),
            (
                format!("{OK}{}{}", bus("a", "1", ""), bus("a", "2", "")),
                "bus \"a\" is declared twice",
            ),
            (
                format!("{OK}{}", bus(" ", "1", "")),
                "bus 1: name must not be empty",
            ),
            (
                format!("{OK}{}", bus("a", "1", "nodes = [0]")),
                "unknown field `nodes`",
            ),
            (
                OK.replace(
                    "bandwidth_gbs = 10",
                    "bandwidth_gbs = 10\ncontrollers = \"two\"",
                ),
                "unknown variant `two`",
            ),
        ];
        for (text, want) in cases {
            let e = build(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} does not contain {want:?}");
            assert!(!e.contains('\n'), "{e:?} is not one line");
            assert!(e.starts_with("machine file x.toml: "), "{e}");
        }
    }

    /// Each number of a machine file is checked against its physical
    /// range before anything runs, in one line naming the key, the value
    /// and the rule (issue 23: `local_latency_ns = 1e308` ran to the
    /// simulation's 3600 s limit).
    #[test]
    fn machine_file_values_are_checked_against_physical_ranges() {
        let e = build(&OK.replace("local_latency_ns = 100", "local_latency_ns = 1e308"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "machine file x.toml: memory.local_latency_ns = 1e308: must be between 1 and 100000 ns"
        );
        for (from, to, key) in [
            ("memory_per_node_gib = 1", "memory_per_node_gib = 1e9", "topology.memory_per_node_gib = 1e9"),
            ("bandwidth_gbs = 10", "bandwidth_gbs = 1e-9", "memory.bandwidth_gbs = 1e-9"),
            ("llc_mib = 8", "llc_mib = 0.0", "cache.llc_mib = 0"),
            ("llc_hit_ns = 10", "llc_hit_ns = 1e5", "cache.llc_hit_ns = 100000"),
            ("cross_llc_ns = 50", "cross_llc_ns = inf", "cache.cross_llc_ns = inf"),
            ("base_ghz = 2", "base_ghz = 1000", "cpu.base_ghz = 1000"),
            ("max_ghz = 3", "max_ghz = 3\nsmt_throughput = 0", "cpu.smt_throughput = 0"),
            ("max_ghz = 3", "max_ghz = 3\nsmt_throughput = 1.5", "cpu.smt_throughput = 1.5"),
            ("bandwidth_gbs = 10", "bandwidth_gbs = 10\nmlp = 0.5", "memory.mlp = 0.5"),
            (
                "bandwidth_gbs = 10",
                "bandwidth_gbs = 10\nlatency_ns = [[100, 1e300], [200, 100]]",
                "memory.latency_ns[0][1] = 1e300",
            ),
            (
                "max_ghz = 3",
                "max_ghz = 3\nidle_states = [[1, 1e300]]",
                "cpu.idle_states[0] = [1, 1e300]: exit latency and residency must be at most 1000000 us",
            ),
        ] {
            let text = OK.replace(from, to);
            assert_ne!(text, OK);
            let e = build(&text).unwrap_err().to_string();
            assert!(e.contains(key), "{e:?} does not name {key:?}");
            assert!(!e.contains('\n'), "{e:?}");
        }
        // Unlimited bandwidth stays allowed, and the presets pass.
        build(&OK.replace("bandwidth_gbs = 10", "bandwidth_gbs = inf")).unwrap();
    }

    /// Without `[costs]` (every preset) a machine's costs are the
    /// workload models' constants, so runs are what they were before
    /// machine files could give costs.
    #[test]
    fn without_costs_a_machine_has_the_workload_constants() {
        use crate::workload::*;
        let want = Costs {
            spin_cycles: numalab_bench::placement::SPIN_CYCLES_PER_ITERATION,
            randupdt_cycles: RANDUPDT_CYCLES_PER_UPDATE,
            memset_bytes_per_cycle: MEMSET_BYTES_PER_CYCLE,
            msg_cycles: MSG_CYCLES,
            fork_cycles: FORK_CYCLES,
            exec_cycles: EXEC_CYCLES,
            msg_user_share: 0.0,
            exec_user_share: 1.0,
            process_launch_ns: PROCESS_LAUNCH_NS,
            process_start_ns: 0,
            process_exit_ns: 0,
            thread_launch_ns: THREAD_LAUNCH_NS,
            first_touch_bytes_per_ns: f64::INFINITY,
            first_touch_contention: 0.0,
            migrate_us_per_mb: None,
            scan_us_per_gb: None,
            read_bytes_per_cycle: None,
            write_bytes_per_cycle: None,
        };
        assert_eq!(Costs::DEFAULT, want);
        assert_eq!(build(OK).unwrap().costs, want);
        assert_eq!(build(&format!("{OK}[costs]\n")).unwrap().costs, want);
        for (name, _) in PRESETS {
            assert_eq!(Machine::load(name).unwrap().costs, want, "{name}");
        }
        assert_eq!(Machine::load("genoa2n[memory.mlp=12]").unwrap().costs, want);
    }

    /// `[costs]` values, measured times on a real machine, become cycles
    /// at `cpu.max_ghz` (3 GHz here); keys left out keep their defaults;
    /// a record states them back in the file's units.
    #[test]
    fn costs_from_the_file_are_converted_at_the_maximum_frequency() {
        let text = format!(
            "{OK}[costs]\nspin_ns = 4\nrandupdt_ns = 1.5\nmemset_gbs = 48\nmsg_us = 3\n\
             fork_us = 100\nexec_us = 200\nmsg_user_share = 0.08\nexec_user_share = 0.7\n\
             process_launch_us = 2500\nprocess_start_us = 40000\nprocess_exit_us = 15000\n\
             thread_launch_us = 12.5\n\
             first_touch_gbs = 2.5\nfirst_touch_two_gbs = 2\nmigrate_us_per_mb = 300\nscan_us_per_gb = 900\nread_gbs = 60\nwrite_gbs = 30\n"
        );
        let c = build(&text).unwrap().costs;
        assert_eq!(
            c,
            Costs {
                spin_cycles: 12.0,
                randupdt_cycles: 4.5,
                memset_bytes_per_cycle: 16.0,
                msg_cycles: 9000.0,
                fork_cycles: 300_000.0,
                exec_cycles: 600_000.0,
                msg_user_share: 0.08,
                exec_user_share: 0.7,
                process_launch_ns: 2_500_000,
                process_start_ns: 40_000_000,
                process_exit_ns: 15_000_000,
                thread_launch_ns: 12_500,
                first_touch_bytes_per_ns: 2.5,
                first_touch_contention: 0.25,
                migrate_us_per_mb: Some(300.0),
                scan_us_per_gb: Some(900.0),
                read_bytes_per_cycle: Some(20.0),
                write_bytes_per_cycle: Some(10.0),
            }
        );
        assert_eq!(c.first_touch_ns(5_000_000), 2_000_000);
        // Two at once each at 2 GB/s, three at 2.5 / 1.5.
        assert_eq!(c.first_touch_ns_among(5_000_000, 2), 2_500_000);
        assert_eq!(c.first_touch_ns_among(5_000_000, 3), 3_000_000);
        // Two at once no slower than one (a real machine's faults on two
        // nodes): no contention.
        let free = build(&format!(
            "{OK}[costs]\nfirst_touch_gbs = 2.5\nfirst_touch_two_gbs = 2.6\n"
        ))
        .unwrap()
        .costs;
        assert_eq!(free.first_touch_contention, 0.0);
        assert_eq!(free.first_touch_ns_among(5_000_000, 4), 2_000_000);
        assert_eq!(Costs::DEFAULT.first_touch_ns(1 << 40), 0);
        let f = c.as_file(3.0);
        for (k, v) in [
            ("spin_ns", 4.0),
            ("randupdt_ns", 1.5),
            ("memset_gbs", 48.0),
            ("msg_us", 3.0),
            ("fork_us", 100.0),
            ("exec_us", 200.0),
            ("msg_user_share", 0.08),
            ("exec_user_share", 0.7),
            ("process_launch_us", 2500.0),
            ("process_start_us", 40000.0),
            ("process_exit_us", 15000.0),
            ("thread_launch_us", 12.5),
            ("first_touch_gbs", 2.5),
            ("first_touch_two_gbs", 2.0),
            ("migrate_us_per_mb", 300.0),
            ("scan_us_per_gb", 900.0),
            ("read_gbs", 60.0),
            ("write_gbs", 30.0),
        ] {
            assert!((f[k] - v).abs() < 1e-9 * v, "{k}: {} vs {v}", f[k]);
        }
        assert_eq!(f.len(), 18);
        // Not timed, so not stated.
        let d = Costs::DEFAULT.as_file(3.0);
        for k in ["first_touch_gbs", "process_start_us", "process_exit_us"] {
            assert!(!d.contains_key(k), "{k}");
        }
        // One key: the others keep their defaults.
        let c = build(&format!("{OK}[costs]\nfork_us = 10\n"))
            .unwrap()
            .costs;
        assert_eq!(c.fork_cycles, 30_000.0);
        assert_eq!(
            Costs {
                fork_cycles: Costs::DEFAULT.fork_cycles,
                ..c
            },
            Costs::DEFAULT
        );
        // Overrides reach `[costs]` like any table.
        let m = Machine::load("epyc7642[costs.spin_ns=2]").unwrap();
        assert!((m.costs.spin_cycles - 6.6).abs() < 1e-12);
    }

    /// A bad cost is the file's one-line error naming the key, the value
    /// and its range; an unknown key in `[costs]` is refused.
    #[test]
    fn bad_costs_are_one_line_errors_naming_the_key() {
        for (costs, want) in [
            (
                "spin_ns = 0",
                "costs.spin_ns = 0: must be between 0.01 and 1000 ns",
            ),
            (
                "spin_ns = 1e12",
                "costs.spin_ns = 1e12: must be between 0.01 and 1000 ns",
            ),
            ("spin_ns = -1", "costs.spin_ns = -1: must be between"),
            ("spin_ns = nan", "costs.spin_ns = NaN: must be between"),
            (
                "randupdt_ns = inf",
                "costs.randupdt_ns = inf: must be between 0.01 and 1000 ns",
            ),
            (
                "memset_gbs = 0",
                "costs.memset_gbs = 0: must be between 0.01 and 10000 GB/s",
            ),
            (
                "msg_us = 1e9",
                "costs.msg_us = 1e9: must be between 0.01 and 10000 us",
            ),
            (
                "fork_us = 0",
                "costs.fork_us = 0: must be between 0.1 and 1e6 us",
            ),
            (
                "exec_us = 1e300",
                "costs.exec_us = 1e300: must be between 0.1 and 1e6 us",
            ),
            (
                "process_launch_us = 0",
                "costs.process_launch_us = 0: must be between 0.1 and 1e6 us",
            ),
            (
                "thread_launch_us = 1e7",
                "costs.thread_launch_us = 1e7: must be between 0.1 and 1e6 us",
            ),
            (
                "spin = 1",
                "unknown field `spin`, expected one of `spin_ns`",
            ),
            (
                "spin_ns = \"fast\"",
                "invalid type: string \"fast\", expected f64",
            ),
        ] {
            let e = build(&format!("{OK}[costs]\n{costs}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{costs}: {e:?} does not contain {want:?}");
            assert!(!e.contains('\n'), "{e:?} is not one line");
            assert!(e.starts_with("machine file x.toml: "), "{e}");
        }
        let e = Machine::load("genoa2n[costs.spin_ns=0]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("costs.spin_ns = 0: must be between"), "{e}");
        let e = Machine::load("genoa2n[costs.spinns=1]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `spinns`"), "{e}");
    }

    #[test]
    fn buses_and_controllers_become_resources_on_the_paths_they_carry() {
        // Per node: one controller per node, each path crosses its memory's.
        let m = build(OK).unwrap();
        assert_eq!(m.resources.len(), 2);
        assert_eq!(m.path_resources, vec![vec![0], vec![1], vec![0], vec![1]]);
        assert_eq!(m.resources[1].paths, vec![1, 3]);
        assert_eq!(m.resources[1].ref_latency_ns, 100.0);
        // A front-side bus per node carries its CPUs' traffic to any memory;
        // a link between the two nodes carries only remote traffic.
        let text = format!(
            "{OK}{}{}{}",
            bus("fsb0", "2", "cpu_nodes = [0]"),
            bus("fsb1", "inf", "cpu_nodes = [1]"),
            bus(
                "link",
                "3",
                "cpu_nodes = [0]\nmemory_nodes = [1]\nboth_ways = true"
            )
        );
        let m = build(&text).unwrap();
        assert_eq!(m.resources.len(), 5);
        assert_eq!(m.resources[2].name, "bus fsb0");
        assert_eq!(m.resources[2].paths, vec![0, 1]);
        assert_eq!(m.resources[3].bandwidth, f64::INFINITY);
        assert_eq!(m.resources[4].paths, vec![1, 2]);
        assert_eq!(m.resources[4].ref_latency_ns, 200.0);
        assert_eq!(
            m.path_resources,
            vec![vec![0, 2], vec![1, 2, 4], vec![0, 3, 4], vec![1, 3]]
        );
        // A single memory system: one controller every path crosses.
        let m = build(&OK.replace(
            "bandwidth_gbs = 10",
            "bandwidth_gbs = 10\ncontrollers = \"single\"",
        ))
        .unwrap();
        assert_eq!(m.resources.len(), 1);
        assert_eq!(m.resources[0].paths, vec![0, 1, 2, 3]);
        assert!(m.path_resources.iter().all(|r| r == &vec![0]));
    }
}
