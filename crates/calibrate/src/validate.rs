//! `numalab validate`: the same pinned work on the real kernel and on the
//! simulator with this machine's calibrated file, and how far apart they
//! land, benchmark by benchmark and metric by metric.
//!
//! The work is fixed here ([`set`]), sized from the machine file so a run
//! takes about a second on the machine it describes (the benchmarks NUMA
//! balancing acts on, three: [`BALANCING_RUN_S`]), and written out with
//! every size explicit: the real and the simulated run of a case have the
//! same case key, so they are the same work by construction (a default
//! that each backend would size for itself could differ). It runs as a
//! campaign ([`plan`]): resumable, interleaved, each configuration's
//! runs recorded like any others; the error table ([`errors`]) is then
//! read from the records only.

use numalab_bench::{autonuma, forkexec, mem, numa_test, placement};
use numalab_record::{RunRecord, Status};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What the set is sized from: the machine file's figures.
#[derive(Debug, Clone)]
pub struct Sizing {
    pub nodes: usize,
    pub cpus: usize,
    pub spin_ns: f64,
    pub msg_us: f64,
    pub fork_us: f64,
    pub exec_us: f64,
    /// numa_test's update in cache, and a miss: the local latency over the
    /// misses one core keeps in flight.
    pub randupdt_ns: f64,
    pub miss_ns: f64,
    /// All of one node's CPUs zeroing their memory, GB/s: the controller
    /// rate, at most every CPU's in-cache zeroing rate together.
    pub bandwidth_gbs: f64,
    /// One thread's read and read-modify-write sweeps of memory, GB/s: as
    /// the model streams loads (64 B x `read_mlp` / latency), at most its
    /// in-cache rates (`costs.read_gbs`, `costs.write_gbs`).
    pub read_gbs: f64,
    pub write_gbs: f64,
    /// Bytes of the last-level cache and of a node's memory.
    pub llc_bytes: u64,
    pub node_bytes: u64,
    /// Seconds a run should take on the machine described.
    pub seconds: f64,
}

/// Why a validation set could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// A machine file that is not TOML.
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    /// A machine file without a key `numalab calibrate` writes.
    #[error("no {table}.{key}: not a machine file numalab calibrate wrote")]
    MissingKey {
        table: &'static str,
        key: &'static str,
    },
    /// A benchmark asked for that is not in the set; the set's names.
    #[error("{name:?} is not in the validation set for this machine ({})", .set.join(", "))]
    NotInSet { name: String, set: Vec<String> },
}

impl Sizing {
    /// From a machine file's text (the keys `numalab calibrate` writes).
    pub fn from_machine_file(text: &str, seconds: f64) -> Result<Sizing, SetError> {
        let v: toml::Table = text.parse()?;
        let get = |table: &'static str, key: &'static str| -> Option<f64> {
            let x = v.get(table)?.get(key)?;
            x.as_float().or_else(|| x.as_integer().map(|i| i as f64))
        };
        let need = |table: &'static str, key: &'static str| {
            get(table, key).ok_or(SetError::MissingKey { table, key })
        };
        let nodes = need("topology", "nodes")? as usize;
        let latency = need("memory", "local_latency_ns")?;
        let read_mlp = get("memory", "read_mlp")
            .or(get("memory", "mlp"))
            .unwrap_or(1.0)
            .max(1.0);
        let stream_gbs = 64.0 * read_mlp / latency.max(0.01);
        let in_cache = |key| get("costs", key).unwrap_or(f64::INFINITY);
        let cpus = nodes
            * need("topology", "cores_per_node")? as usize
            * get("topology", "threads_per_core").unwrap_or(1.0) as usize;
        Ok(Sizing {
            nodes,
            cpus,
            spin_ns: need("costs", "spin_ns")?,
            msg_us: need("costs", "msg_us")?,
            fork_us: need("costs", "fork_us")?,
            exec_us: need("costs", "exec_us")?,
            randupdt_ns: need("costs", "randupdt_ns")?,
            miss_ns: latency / get("memory", "mlp").unwrap_or(1.0).max(1.0),
            // The controller rate the queueing model was fitted to is no
            // zeroing rate: where the CPUs together zeroed as fast as each
            // alone (a TCG guest's nodes), the fit runs far above what
            // they can ask of it (234 GB/s for a 2 x 1-CPU guest whose two
            // CPUs zeroed 25.9), and the set ran ten times its seconds.
            // No more than every CPU that runs at once zeroing at its
            // in-cache rate.
            bandwidth_gbs: need("memory", "bandwidth_gbs")?.min(
                get("cpu", "run_at_once")
                    .unwrap_or(cpus as f64)
                    .min(cpus as f64)
                    * get("costs", "memset_gbs").unwrap_or(f64::INFINITY),
            ),
            read_gbs: stream_gbs.min(in_cache("read_gbs")),
            write_gbs: stream_gbs.min(in_cache("write_gbs")),
            llc_bytes: (need("cache", "llc_mib")? * (1u64 << 20) as f64) as u64,
            node_bytes: (need("topology", "memory_per_node_gib")? * (1u64 << 30) as f64) as u64,
            seconds,
        })
    }
}

/// One benchmark of the set, with every size explicit, as a plan's
/// `[[benchmark]]` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub benchmark: &'static str,
    pub keys: Vec<(&'static str, String)>,
}

/// Seconds a run of numa01, numa02 or twohalves takes on a machine of
/// several nodes, at least: three times the kernel's NUMA scan delay.
/// A task's first scan of its memory waits for a scan delay
/// (`sysctl_numa_balancing_scan_delay`, 1000 ms) of its own run time
/// (`init_numa_balancing` starts `numa_scan_period` at it and
/// `task_tick_numa` queues no scan before), and in a process that has
/// just exec'd, for its mm's `numa_next_scan`, which its first
/// `task_numa_work` sets a scan delay ahead; its hinting faults migrate
/// pages as the threads sweep them after. A run of about a second ends
/// as the first faults come in, so whether a buffer moves at all is
/// decided by a tenth of a second either way: in a 2-node guest, of
/// numa02's two 1.3-s runs one migrated its 125 MiB and the other
/// nothing (2026-11-28). Three delays leave the kernel room to act.
pub const BALANCING_RUN_S: f64 = 3.0;

/// The validation set for a machine, restricted to `only` when given.
/// What needs several nodes (placements, NUMA balancing) is left out of a
/// machine with one.
pub fn set(s: &Sizing, only: &[String]) -> Result<Vec<Item>, SetError> {
    let cpus = s.cpus.max(1);
    // Balancing is compared only where there are nodes to move between.
    let t = if s.nodes >= 2 {
        s.seconds.max(BALANCING_RUN_S)
    } else {
        s.seconds
    };
    let mib = numa02_mib(s);
    let numa02_loops = (t * s.bandwidth_gbs * 1e9 / (mib << 20) as f64).clamp(1.0, 1e6) as u64;
    let placements = if s.nodes >= 2 {
        "default,bind,inverse-bind"
    } else {
        "default"
    };
    let mut v = first_items(s, cpus, mib, numa02_loops, placements);
    v.push(numa01(s, t, cpus, mib, placements));
    v.push(numa_test(s, cpus));
    v.extend(mem(s, cpus, mib));
    if s.nodes >= 2 {
        v.push(Item {
            benchmark: autonuma::TWOHALVES.name,
            keys: vec![
                ("threads", (cpus / 2).max(1).to_string()),
                ("bytes", q(&format!("{mib}M"))),
                ("iterations", numa02_loops.to_string()),
                ("placement", q("default")),
            ],
        });
    }
    restrict(v, only)
}

/// A key's value as a quoted string.
fn q(x: &str) -> String {
    format!("{x:?}")
}

/// numa02's memory in MiB: well beyond the LLC ([`mem::beyond_caches`],
/// calibrate's sweeps too), so it measures memory, not a cache that the
/// machine file might size wrongly, and at most a quarter of a node.
fn numa02_mib(s: &Sizing) -> u64 {
    (mem::beyond_caches(s.llc_bytes).min(s.node_bytes / 4) >> 20).max(16)
}

/// spin, hackbench, forkexec, each sized to take the set's seconds, and
/// numa02 `numa02_loops`.
fn first_items(
    s: &Sizing,
    cpus: usize,
    mib: u64,
    numa02_loops: u64,
    placements: &str,
) -> Vec<Item> {
    let t = s.seconds;
    let spin_iterations = (t * 1e9 / s.spin_ns).max(1e3) as u64;
    // hackbench: 2 x fds^2 x loops operations on `cpus` CPUs.
    let fds = 10u64;
    let loops = ((t * 1e6 * cpus as f64) / (2.0 * (fds * fds) as f64 * s.msg_us)).max(10.0) as u64;
    let children = (t * 1e6 / (s.fork_us + s.exec_us)).clamp(20.0, 100_000.0) as u64;
    // numa02: every thread zeroes its slice `loops` times; all of a
    // node's CPUs together at about its bandwidth.
    vec![
        Item {
            benchmark: placement::SPIN.name,
            keys: vec![
                ("tasks", cpus.to_string()),
                ("placement", q("default")),
                ("iterations", spin_iterations.to_string()),
            ],
        },
        Item {
            benchmark: placement::HACKBENCH.name,
            keys: vec![
                ("groups", "1".into()),
                ("fds", fds.to_string()),
                ("loops", loops.to_string()),
                ("ncpus", cpus.to_string()),
                ("placement", q("default")),
            ],
        },
        Item {
            benchmark: forkexec::BENCHMARK.name,
            keys: vec![
                ("children", children.to_string()),
                ("jobs", "1".into()),
                ("child_iterations", "1".into()),
                ("parent_iterations", "1".into()),
            ],
        },
        Item {
            benchmark: autonuma::NUMA02.name,
            keys: vec![
                ("threads", cpus.to_string()),
                ("bytes", q(&format!("{mib}M"))),
                ("loops", numa02_loops.to_string()),
                ("placement", q(placements)),
            ],
        },
    ]
}

/// numa01: two processes, each of its threads zeroing the whole of its
/// process's buffer every loop, for about `t`; each buffer half of
/// numa02's.
fn numa01(s: &Sizing, t: f64, cpus: usize, mib: u64, placements: &str) -> Item {
    let numa01_threads = (cpus / 2).max(1);
    let numa01_mib = (mib / 2).max(8);
    let numa01_loops = (t * s.bandwidth_gbs * 1e9
        / (2.0 * numa01_threads as f64 * (numa01_mib << 20) as f64))
        .clamp(1.0, 1e6) as u64;
    Item {
        benchmark: autonuma::NUMA01.name,
        keys: vec![
            ("threads", numa01_threads.to_string()),
            ("bytes", q(&format!("{numa01_mib}M"))),
            ("loops", numa01_loops.to_string()),
            ("placement", q(placements)),
        ],
    }
}

/// numa_test: a task per CPU, each 100 passes of random updates over
/// arrays well beyond the LLC (each update a miss, overlapped as the
/// core can), no load peak (a run may end before its 3 s).
fn numa_test(s: &Sizing, cpus: usize) -> Item {
    let t = s.seconds;
    let update_ns = s.randupdt_ns + s.miss_ns;
    // At least 10,000 elements, but a task's arrays (20 bytes an element)
    // in a quarter of the node's memory above all: a machine file may give
    // a node 1 MB.
    let fits = (s.node_bytes / 4 / 20 / cpus.max(1) as u64).max(1) as f64;
    let elements = (t * 1e9 / (numa_test_passes() * update_ns))
        .max(10_000.0)
        .min(fits) as u64;
    Item {
        benchmark: numa_test::BENCHMARK.name,
        keys: vec![
            ("tasks", cpus.to_string()),
            ("size", elements.to_string()),
            ("disturb", q("none")),
        ],
    }
}

/// mem: one thread and every CPU of the first node, reading, writing
/// and zeroing memory of that node (and of the next, on several):
/// each thread its own buffer of numa02's size, within a quarter of
/// the node for all, each count with the loops that take `t`.
fn mem(s: &Sizing, cpus: usize, mib: u64) -> Vec<Item> {
    let t = s.seconds;
    let node_cpus = (cpus / s.nodes.max(1)).max(1);
    let mem_mib = mib.min((s.node_bytes / 4 / node_cpus as u64) >> 20).max(16);
    // One thread streams as the model's latency and misses in flight
    // allow, at most the controller's rate; a node's CPUs together at
    // most the controller's (a read-modify-write moves each line twice).
    // Each sweep its own count: in a TCG guest one thread reads six times
    // slower than it zeroes.
    let bw = s.bandwidth_gbs;
    let ops = [
        ("memset", (64.0 / s.miss_ns.max(0.01)).min(bw), bw),
        ("read", s.read_gbs.min(bw), bw),
        ("write", s.write_gbs.min(bw / 2.0), bw / 2.0),
    ];
    let mut v = Vec::new();
    let counts = std::iter::once(1).chain((node_cpus > 1).then_some(node_cpus));
    for threads in counts {
        for (op, one, all) in ops {
            let gbs = (one * threads as f64).min(all);
            let loops =
                (t * gbs * 1e9 / (threads as f64 * (mem_mib << 20) as f64)).clamp(1.0, 1e6) as u64;
            v.push(Item {
                benchmark: mem::BENCHMARK.name,
                keys: vec![
                    ("op", q(op)),
                    ("threads", threads.to_string()),
                    ("cpu_node", q("0")),
                    ("mem_node", q(if s.nodes >= 2 { "0,1" } else { "0" })),
                    ("bytes", q(&format!("{mem_mib}M"))),
                    ("loops", loops.to_string()),
                ],
            });
        }
    }
    v
}

/// The set restricted to `only` when given: an error naming the set when
/// one of `only` is not in it.
fn restrict(mut v: Vec<Item>, only: &[String]) -> Result<Vec<Item>, SetError> {
    if only.is_empty() {
        return Ok(v);
    }
    let mut names: Vec<&str> = v.iter().map(|i| i.benchmark).collect();
    names.dedup();
    for o in only {
        if !names.contains(&o.as_str()) {
            return Err(SetError::NotInSet {
                name: o.clone(),
                set: names.iter().map(|n| n.to_string()).collect(),
            });
        }
    }
    v.retain(|i| only.iter().any(|o| o == i.benchmark));
    Ok(v)
}

fn numa_test_passes() -> f64 {
    numalab_bench::numa_test::PASSES as f64
}

/// The real side of a validation: this machine, or a guest.
#[derive(Debug, Clone)]
pub enum Real {
    Here,
    /// `guest = {...}` keys of a plan (`numalab vm`'s flags).
    Guest(Vec<(String, String)>),
}

/// Label prefixes of the two sides; a configuration's variant follows.
pub const REAL: &str = "real";
pub const SIM: &str = "sim";
/// The pseudo-metric under which [`errors`] keeps each run's task count
/// (no metric's name starts with `_`).
const TASKS: &str = "__tasks";
/// Pseudo-metric: how finely a run's convergence time is known: 0 when
/// it converged at the sample taken as its tasks started (that moment,
/// exactly), else its sampling interval (its series' longest).
const INTERVAL: &str = "__resolution";

/// The campaign plan: the set on both sides, with NUMA balancing off and
/// on when the machine has several nodes.
pub fn plan(items: &[Item], real: &Real, machine: &str, runs: u32, nodes: usize) -> String {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "# Written by numalab validate: the same work, real and simulated."
    );
    let _ = writeln!(p, "name = \"validate\"\nresults = \".\"\nruns = {runs}\norder = \"interleaved\"\ninterval = \"auto\"");
    for i in items {
        let _ = writeln!(p, "\n[[benchmark]]\nname = {:?}", i.benchmark);
        for (k, v) in &i.keys {
            let _ = writeln!(p, "{k} = {v}");
        }
    }
    let guest = match real {
        Real::Here => String::new(),
        Real::Guest(kv) => format!(
            "guest = {{ {} }}\n",
            kv.iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if nodes >= 2 {
        let _ = writeln!(
            p,
            "\n[[config]]\nlabel = \"{REAL} balancing {{nb}}\"\nmatrix = {{ nb = [0, 1] }}\nsysctl = {{ \"kernel.numa_balancing\" = \"{{nb}}\" }}\n{guest}"
        );
        let _ = writeln!(
            p,
            "[[config]]\nlabel = \"{SIM} balancing 0\"\nsim = {{ machine = {machine:?}, balancer = \"none\" }}\n"
        );
        let _ = writeln!(
            p,
            "[[config]]\nlabel = \"{SIM} balancing 1\"\nsim = {{ machine = {machine:?}, balancer = \"autonuma\" }}"
        );
    } else {
        let _ = writeln!(p, "\n[[config]]\nlabel = \"{REAL}\"\n{guest}");
        let _ = writeln!(
            p,
            "[[config]]\nlabel = \"{SIM}\"\nsim = {{ machine = {machine:?} }}"
        );
    }
    p
}

/// The target error for a metric, as a fraction, if it has one.
pub fn target(metric: &str) -> Option<f64> {
    match metric {
        "elapsed_s" | "user_s" | "cpu_s" => Some(0.15),
        // The pages the benchmark's own tasks had migrated (each task's
        // numa_pages_migrated, /proc/PID/sched): /proc/vmstat's count is
        // the whole machine's, and in a guest other processes' and the
        // benchmark's heap and stack put 3 to 520 pages in it where the
        // tasks' own came to 0 to 5 (2026-11-28).
        "kernel_numa_pages_migrated" | "convergence_s" => Some(0.25),
        _ => None,
    }
}

/// Pages a task of the benchmark may have migrated of its own beyond
/// the model's (whose tasks hold only the benchmark's buffers): in a
/// 2-node guest, with every buffer bound, the tasks' own counters came
/// to 1 to 5 pages for one or two tasks (heap and stack, 2026-11-28).
pub const OWN_PAGES_PER_TASK: f64 = 8.0;

/// The difference within target whatever the error, in the metric's
/// unit, for a case whose real runs had `tasks` tasks and whose runs
/// were sampled every `interval` s (the longer of the two worlds'): for
/// the pages the benchmark's tasks migrated, [`OWN_PAGES_PER_TASK`]
/// each; for the convergence time, one interval, its resolution (a run
/// converged at the first sample where the criterion holds, anywhere
/// since the sample before: in a 2-node guest the kernel's numa01 was
/// converged at its sample at 1.20 s and the model's, not yet at 1.08,
/// at 2.08 s, 2026-11-28), none for runs that converged as their tasks
/// started (a sample taken at that moment: bound placements).
pub fn slack(metric: &str, tasks: f64, interval: f64) -> f64 {
    match metric {
        "kernel_numa_pages_migrated" => OWN_PAGES_PER_TASK * tasks.max(1.0),
        "convergence_s" => interval.max(0.0),
        _ => 0.0,
    }
}

/// Metrics compared, in table order.
pub const METRICS: &[&str] = &[
    "elapsed_s",
    "user_s",
    "sys_s",
    "cpu_s",
    "hackbench_s",
    "children_per_s",
    "bandwidth_gbs",
    "numa_pages_migrated",
    "kernel_numa_pages_migrated",
    "numa_hint_faults",
    "kernel_migrations",
    "convergence_s",
];

/// One metric of one case: real against simulated.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub benchmark: String,
    /// The case key, as `k=v` pairs.
    pub case: String,
    /// The configuration's variant (`balancing 1`), or empty.
    pub variant: String,
    pub metric: String,
    pub real_mean: f64,
    pub real_sd: Option<f64>,
    pub real_runs: usize,
    pub sim_mean: f64,
    pub sim_sd: Option<f64>,
    pub sim_runs: usize,
    /// sim / real - 1.
    pub error: f64,
    pub target: Option<f64>,
    /// A difference within target whatever the error ([`slack`]).
    pub slack: f64,
    pub within: Option<bool>,
}

/// An ordering of placements by elapsed time, real against simulated.
/// Two placements are apart on a side only when their means differ by
/// more than [`TIE`] of the larger and, where both have a spread, by
/// more than chance ([`APART_P`], Welch's t-test): otherwise they are a
/// tie (`=` in `real` and `sim`).
#[derive(Debug, Clone, Serialize)]
pub struct Ordering {
    pub benchmark: String,
    pub variant: String,
    /// Placements from fastest to slowest, `=` joining a tie to the one
    /// before.
    pub real: Vec<String>,
    pub sim: Vec<String>,
    /// `agree`: every pair apart in the real runs is apart in the same
    /// order in the simulated ones; `disagree`: one is not (the other
    /// way round, or a tie); `within noise`: no pair apart in the real
    /// runs, nothing to judge.
    pub verdict: &'static str,
    /// For `disagree`, the first pair that decided it.
    pub why: String,
    pub agree: bool,
}

/// Below this share of the larger mean, two placements are a tie.
pub const TIE: f64 = 0.02;

/// Two placements with at least two runs each are apart only when
/// Welch's two-sided test puts the chance of their difference under
/// equal means below this.
pub const APART_P: f64 = 0.05;

/// (placement, mean, sd, runs) on one side.
type Placed = (String, f64, Option<f64>, usize);

/// -1, 0 (a tie) or 1: how `a` stands to `b` on one side: apart when
/// their means differ by more than [`TIE`] and, with a spread on both
/// sides, by more than chance at [`APART_P`] (Welch's t-test: with two
/// runs a side its one degree of freedom asks a difference of 12.7
/// standard errors, the rough spread of two runs being a poor guide).
fn order_of(a: &Placed, b: &Placed) -> i8 {
    let d = a.1 - b.1;
    if !d.is_finite() || d.abs() <= TIE * a.1.max(b.1) {
        return 0;
    }
    if let (Some(sa), Some(sb)) = (a.2, b.2) {
        let p = numalab_stats::welch_t_from((a.1, sa * sa, a.3), (b.1, sb * sb, b.3)).p_value;
        if p.is_nan() || p >= APART_P {
            return 0;
        }
    }
    if d < 0.0 {
        -1
    } else {
        1
    }
}

/// Placements from fastest to slowest, a tie with the one before marked
/// `=name`.
fn ordered(v: &[Placed]) -> Vec<String> {
    let mut w = v.to_vec();
    w.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut out: Vec<String> = Vec::new();
    for (i, x) in w.iter().enumerate() {
        let tie = i > 0 && order_of(&w[i - 1], x) == 0;
        out.push(if tie {
            format!("={}", x.0)
        } else {
            x.0.clone()
        });
    }
    out
}

/// The verdict of an ordering (see [`Ordering::verdict`]) and, for a
/// disagreement, the pair that decided it.
fn ordering_verdict(real: &[Placed], sim: &[Placed]) -> (&'static str, String) {
    let mut judged = false;
    for i in 0..real.len() {
        for j in i + 1..real.len() {
            let r = order_of(&real[i], &real[j]);
            if r == 0 {
                continue;
            }
            judged = true;
            let s = order_of(&sim[i], &sim[j]);
            if s != r {
                let (a, b) = if r < 0 { (i, j) } else { (j, i) };
                let said = if s == 0 { "a tie" } else { "the other way" };
                return (
                    "disagree",
                    format!(
                        "{} < {} in the real runs, {said} simulated",
                        real[a].0, real[b].0
                    ),
                );
            }
        }
    }
    (if judged { "agree" } else { "within noise" }, String::new())
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Errors {
    pub rows: Vec<Row>,
    pub orderings: Vec<Ordering>,
    /// The rows that measure the machine itself against its file: how far
    /// it ran from the speed it was calibrated at.
    pub reference: Vec<Reference>,
}

/// A row that tests one of the machine file's own figures with no model
/// rule between them (spin: `costs.spin_ns`; one thread zeroing its own
/// node's memory: that node's one-thread memset; one thread reading it:
/// that node's one-thread read, which sets `memory.read_mlp`; every CPU
/// of the node zeroing it at once: the node's all-CPU memset, which
/// sets `memory.bandwidth_gbs`; loads and stores apart, since a host's
/// other tenants can slow one and not the other): its error is the
/// machine's drift since calibrate, which every row that leans on the
/// same resource inherits (a shared host's memory under another
/// tenant's load).
#[derive(Debug, Clone, Serialize)]
pub struct Reference {
    /// `CPU`, `memory loads`, `memory stores`, [`NODE_STORES`] or
    /// [`NODE_LOADS`].
    pub resource: &'static str,
    pub benchmark: String,
    pub case: String,
    pub variant: String,
    /// The elapsed time's error, sim / real - 1.
    pub error: f64,
}

/// The reference of every CPU of a node zeroing its memory at once
/// (`memory.bandwidth_gbs` is fitted to it): on a shared host it moves
/// with where the virtual CPUs run while one thread's rate holds still.
const NODE_STORES: &str = "memory stores of a node's CPUs";

/// The reference of every CPU of a node reading its memory at once
/// (`memory.read_bandwidth_gbs` is fitted to it where loads did not
/// scale; else it tests their scaling, which the file says they do).
const NODE_LOADS: &str = "memory loads of a node's CPUs";

/// Beyond this, a reference row says the machine ran at another speed
/// than when it was calibrated.
pub const DRIFT: f64 = 0.10;

/// The reference rows among `rows` (elapsed time of spin, and of mem's
/// one-thread memset and read of its own node's memory).
fn references(rows: &[Row]) -> Vec<Reference> {
    let kv = |case: &str, k: &str| {
        case.split_whitespace()
            .find_map(|p| p.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    rows.iter()
        .filter(|r| r.metric == "elapsed_s")
        .filter_map(|r| {
            let own_node = kv(&r.case, "cpu_node") == kv(&r.case, "mem_node");
            let one = kv(&r.case, "threads").as_deref() == Some("1");
            let resource = match (r.benchmark.as_str(), kv(&r.case, "op").as_deref()) {
                ("spin", _) => "CPU",
                ("mem", Some("memset")) if own_node && one => "memory stores",
                ("mem", Some("read")) if own_node && one => "memory loads",
                // The set's other count is every CPU of the node, whose
                // zeroing together the controller rate is fitted to.
                ("mem", Some("memset")) if own_node => NODE_STORES,
                ("mem", Some("read")) if own_node => NODE_LOADS,
                _ => return None,
            };
            Some(Reference {
                resource,
                benchmark: r.benchmark.clone(),
                case: r.case.clone(),
                variant: r.variant.clone(),
                error: r.error,
            })
        })
        .collect()
}

/// Mean and sample standard deviation (numalab-stats' summary); a
/// sample with a non-finite value gives NaN, shown as such.
fn mean_sd(v: &[f64]) -> (f64, Option<f64>) {
    match numalab_stats::Summary::of(v) {
        Ok(s) => (s.mean, s.stddev),
        Err(_) => (f64::NAN, None),
    }
}

fn case_text(r: &RunRecord) -> String {
    r.params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            v => format!("{k}={v}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Split a label into its side and variant: `real balancing 1` ->
/// (`real`, `balancing 1`).
fn side(label: &str) -> Option<(&str, &str)> {
    for s in [REAL, SIM] {
        if let Some(rest) = label.strip_prefix(s) {
            if rest.is_empty() || rest.starts_with(' ') {
                return Some((s, rest.trim()));
            }
        }
    }
    None
}

/// What one run adds to its side of a case: its metrics, CPU time,
/// and the pseudo-metrics its rows are judged by (its task count, its
/// convergence time's resolution).
fn values_of(r: &RunRecord) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = r
        .metrics
        .iter()
        .map(|(m, x)| (m.clone(), x.value))
        .collect();
    v.push((TASKS.into(), r.tasks.len() as f64));
    let at_start = match (r.metrics.get("convergence_s"), r.metrics.get("started_s")) {
        (Some(c), Some(s)) => (c.value - s.value).abs() < 1e-9,
        _ => false,
    };
    v.push((
        INTERVAL.into(),
        if at_start { 0.0 } else { r.series.interval_s },
    ));
    // CPU time whoever it is accounted to: the simulator charges kernel
    // work it does not model (first touches) as user time.
    if let (Some(u), Some(s)) = (r.metrics.get("user_s"), r.metrics.get("sys_s")) {
        v.push(("cpu_s".into(), u.value + s.value));
    }
    v
}

/// The error table from a validation's records (successful runs only).
pub fn errors(records: &[RunRecord]) -> Errors {
    // (benchmark, case, variant) -> side -> metric -> values
    type Sides = BTreeMap<String, BTreeMap<String, Vec<f64>>>;
    let mut g: BTreeMap<(String, String, String), Sides> = BTreeMap::new();
    for r in records.iter().filter(|r| r.outcome.status == Status::Ok) {
        let Some((s, variant)) = side(&r.label) else {
            continue;
        };
        let e = g
            .entry((r.benchmark.clone(), case_text(r), variant.to_string()))
            .or_default()
            .entry(s.to_string())
            .or_default();
        for (m, v) in values_of(r) {
            e.entry(m).or_default().push(v);
        }
    }
    let mut out = Errors::default();
    for ((benchmark, case, variant), sides) in &g {
        let (Some(real), Some(sim)) = (sides.get(REAL), sides.get(SIM)) else {
            continue;
        };
        for &m in METRICS {
            let (Some(rv), Some(sv)) = (real.get(m), sim.get(m)) else {
                continue;
            };
            let (rm, rsd) = mean_sd(rv);
            let (sm, ssd) = mean_sd(sv);
            let error = if rm != 0.0 {
                sm / rm - 1.0
            } else if sm == 0.0 {
                0.0
            } else {
                f64::INFINITY
            };
            let target = target(m);
            let interval = [real, sim]
                .iter()
                .filter_map(|side| side.get(INTERVAL).map(|v| mean_sd(v).0))
                .fold(0.0, f64::max);
            let slack = slack(m, real.get(TASKS).map_or(1.0, |t| mean_sd(t).0), interval);
            out.rows.push(Row {
                benchmark: benchmark.clone(),
                case: case.clone(),
                variant: variant.clone(),
                metric: m.to_string(),
                real_mean: rm,
                real_sd: rsd,
                real_runs: rv.len(),
                sim_mean: sm,
                sim_sd: ssd,
                sim_runs: sv.len(),
                error,
                target,
                slack,
                within: target.map(|t| error.abs() <= t || (sm - rm).abs() <= slack),
            });
        }
    }
    out.reference = references(&out.rows);
    // Orderings of placements by elapsed time, per benchmark and variant.
    // (benchmark, variant) -> the placements, real and simulated
    let mut by: BTreeMap<(String, String), (Vec<Placed>, Vec<Placed>)> = BTreeMap::new();
    for r in out.rows.iter().filter(|r| r.metric == "elapsed_s") {
        if let Some(p) = r
            .case
            .split(' ')
            .find_map(|kv| kv.strip_prefix("placement="))
        {
            let e = by
                .entry((r.benchmark.clone(), r.variant.clone()))
                .or_default();
            e.0.push((p.to_string(), r.real_mean, r.real_sd, r.real_runs));
            e.1.push((p.to_string(), r.sim_mean, r.sim_sd, r.sim_runs));
        }
    }
    for ((benchmark, variant), (real, sim)) in by {
        if real.len() < 2 {
            continue;
        }
        let (verdict, why) = ordering_verdict(&real, &sim);
        out.orderings.push(Ordering {
            benchmark,
            variant,
            real: ordered(&real),
            sim: ordered(&sim),
            verdict,
            why,
            agree: verdict == "agree",
        });
    }
    out
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e5 {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A row's real runs spread so widely (standard deviation over this
/// share of their mean) that its error says as much about the machine as
/// about the model: the table marks such a row when it is off (`*`). In
/// a 2-node TCG guest numa_test's runs took 1.7 and 3.6 s of the same
/// work (docs/validation.md).
pub const UNSTEADY_CV: f64 = 0.25;

impl Row {
    /// Whether its real runs spread beyond [`UNSTEADY_CV`].
    pub fn unsteady(&self) -> bool {
        self.real_sd
            .is_some_and(|sd| self.real_mean > 0.0 && sd / self.real_mean > UNSTEADY_CV)
    }
}

/// The table, in 80 columns: a heading per case, a line per metric.
pub fn render(e: &Errors) -> String {
    let mut t = String::new();
    let mut last = (String::new(), String::new(), String::new());
    let _ = writeln!(
        t,
        "{:<28} {:>16} {:>10} {:>9}  target",
        "metric", "real mean (sd)", "simulated", "error"
    );
    for r in &e.rows {
        let key = (r.benchmark.clone(), r.case.clone(), r.variant.clone());
        if key != last {
            let head = if r.variant.is_empty() {
                format!("{}  {}", r.benchmark, r.case)
            } else {
                format!("{}  {}  [{}]", r.benchmark, r.case, r.variant)
            };
            for l in numalab_linux::out::wrap(&head, 80) {
                let _ = writeln!(t, "{l}");
            }
            last = key;
        }
        let real = match r.real_sd {
            Some(sd) => format!("{} ({})", num(r.real_mean), num(sd)),
            None => num(r.real_mean),
        };
        let verdict = match (r.target, r.within) {
            (Some(tg), Some(true)) if r.error.abs() > tg && r.metric == "convergence_s" => {
                format!("ok (≤{:.1} s)", r.slack)
            }
            (Some(tg), Some(true)) if r.error.abs() > tg => format!("ok (≤{:.0})", r.slack),
            (Some(tg), Some(true)) => format!("ok (±{:.0}%)", tg * 100.0),
            (Some(tg), _) if r.unsteady() => format!("OFF (±{:.0}%)*", tg * 100.0),
            (Some(tg), _) => format!("OFF (±{:.0}%)", tg * 100.0),
            _ => String::new(),
        };
        let _ = writeln!(
            t,
            "  {:<26} {:>16} {:>10} {:>+8.1}%  {}",
            r.metric,
            real,
            num(r.sim_mean),
            100.0 * r.error,
            verdict
        );
    }
    let chain = |v: &[String]| {
        v.iter()
            .enumerate()
            .map(|(i, p)| match (i, p.strip_prefix('=')) {
                (_, Some(p)) => format!(" = {p}"),
                (0, None) => p.clone(),
                (_, None) => format!(" < {p}"),
            })
            .collect::<String>()
    };
    for o in &e.orderings {
        let line = format!(
            "ordering {}{}: real {}, simulated {}: {}",
            o.benchmark,
            variant_suffix(&o.variant),
            chain(&o.real),
            chain(&o.sim),
            if o.verdict == "disagree" {
                format!("DISAGREE ({})", o.why)
            } else {
                o.verdict.to_string()
            }
        );
        for l in numalab_linux::out::wrap(&line, 80) {
            let _ = writeln!(t, "{l}");
        }
    }
    render_counts(e, &mut t);
    render_reference(e, &mut t);
    t
}

/// The count of rows within target and of orderings agreeing, and how
/// many of the rows off have unsteady real runs ([`UNSTEADY_CV`]).
fn render_counts(e: &Errors, t: &mut String) {
    let judged: Vec<&Row> = e.rows.iter().filter(|r| r.within.is_some()).collect();
    let ok = judged.iter().filter(|r| r.within == Some(true)).count();
    let noise = e
        .orderings
        .iter()
        .filter(|o| o.verdict == "within noise")
        .count();
    let orderings = if e.orderings.is_empty() {
        // One node: bind, default and inverse-bind are one placement.
        "no placement orderings (they need several nodes)".to_string()
    } else {
        format!(
            "orderings agreeing: {} of {}{}",
            e.orderings.iter().filter(|o| o.agree).count(),
            e.orderings.len() - noise,
            match noise {
                0 => String::new(),
                n => format!(
                    " ({n} more with every real placement within noise of the others: nothing to judge)"
                ),
            }
        )
    };
    let summary = format!(
        "within target: {ok} of {} (elapsed, user and CPU time ±15%; pages the benchmark's tasks migrated ±25%, or {OWN_PAGES_PER_TASK} a task; convergence ±25%, or one sampling interval); {orderings}",
        judged.len(),
    );
    for l in numalab_linux::out::wrap(&summary, 80) {
        let _ = writeln!(t, "{l}");
    }
    let off = judged.iter().filter(|r| r.within == Some(false)).count();
    let unsteady = judged
        .iter()
        .filter(|r| r.within == Some(false) && r.unsteady())
        .count();
    if unsteady > 0 {
        let line = format!(
            "* real runs spreading beyond {:.0}% of their mean (sd), in {unsteady} of the {off} row{} off: the machine moved under them as much as the model may be off; run them again with more --runs",
            100.0 * UNSTEADY_CV,
            if off == 1 { "" } else { "s" }
        );
        for l in numalab_linux::out::wrap(&line, 80) {
            let _ = writeln!(t, "{l}");
        }
    }
}

/// `" [balancing 1]"`, or nothing without a variant.
fn variant_suffix(v: &str) -> String {
    if v.is_empty() {
        String::new()
    } else {
        format!(" [{v}]")
    }
}

/// The last line: the machine against its own file ([`Reference`]).
fn render_reference(e: &Errors, t: &mut String) {
    if e.reference.is_empty() {
        return;
    }
    let each: Vec<String> = e
        .reference
        .iter()
        .map(|x| {
            format!(
                "{} ({}{}) {:+.1}%",
                x.resource,
                x.benchmark,
                variant_suffix(&x.variant),
                100.0 * x.error
            )
        })
        .collect();
    let mut drifted: Vec<&str> = e
        .reference
        .iter()
        .filter(|x| x.error.abs() > DRIFT)
        .map(|x| x.resource)
        .collect();
    // Each resource once, whatever the rows' order.
    drifted.sort_unstable();
    drifted.dedup();
    let mut line = format!(
        "the machine against its file (elapsed error of rows with no model rule between them): {}",
        each.join(", ")
    );
    if !drifted.is_empty() {
        line.push_str(&format!(
            "; beyond ±{:.0}%: its {} ran at another speed than when calibrated, and every row that leans on it inherits that; calibrate again when the machine is quiet",
            100.0 * DRIFT,
            drifted.join(" and ")
        ));
    }
    for l in numalab_linux::out::wrap(&line, 80) {
        let _ = writeln!(t, "{l}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::example_record;

    fn sizing(nodes: usize) -> Sizing {
        Sizing {
            nodes,
            cpus: 2 * nodes,
            spin_ns: 2.0,
            msg_us: 1.0,
            fork_us: 100.0,
            exec_us: 400.0,
            randupdt_ns: 3.0,
            miss_ns: 12.0,
            bandwidth_gbs: 6.4,
            read_gbs: 4.0,
            write_gbs: 3.0,
            llc_bytes: 16 << 20,
            node_bytes: 4 << 30,
            seconds: 1.0,
        }
    }

    fn keys(items: &[Item], b: &str) -> BTreeMap<&'static str, String> {
        items
            .iter()
            .find(|i| i.benchmark == b)
            .unwrap_or_else(|| panic!("{b} not in the set"))
            .keys
            .iter()
            .cloned()
            .collect()
    }

    /// The zeroing rate the set is sized by is the controller's, but no
    /// more than every CPU zeroing at its in-cache rate: a 2 x 1-CPU TCG
    /// guest's file fitted its controllers at 234 GB/s (its two CPUs
    /// zeroed as fast together as each alone), and numa01 ran 11.5 s of
    /// its 1.
    #[test]
    fn the_zeroing_rate_is_at_most_every_cpu_at_its_in_cache_rate() {
        let file = |bw: f64| {
            format!(
                "[topology]\nnodes = 2\ncores_per_node = 1\nmemory_per_node_gib = 0.5\n\
                 [memory]\nlocal_latency_ns = 90\nbandwidth_gbs = {bw}\nmlp = 1020\n\
                 [cache]\nllc_mib = 16\n\
                 [costs]\nspin_ns = 2\nmsg_us = 1\nfork_us = 100\nexec_us = 400\n\
                 randupdt_ns = 3\nmemset_gbs = 13.1\n"
            )
        };
        let s = Sizing::from_machine_file(&file(234.0), 1.0).unwrap();
        assert!((s.bandwidth_gbs - 26.2).abs() < 1e-9, "{}", s.bandwidth_gbs);
        let s = Sizing::from_machine_file(&file(20.0), 1.0).unwrap();
        assert_eq!(s.bandwidth_gbs, 20.0);
        // Of those CPUs, the ones that run at once.
        let one = file(234.0).replace("[cache]", "[cpu]\nrun_at_once = 1\n[cache]");
        let s = Sizing::from_machine_file(&one, 1.0).unwrap();
        assert!((s.bandwidth_gbs - 13.1).abs() < 1e-9, "{}", s.bandwidth_gbs);
    }

    #[test]
    fn the_set_is_sized_from_the_machine_file_to_take_its_seconds() {
        let s = sizing(1);
        let items = set(&s, &[]).unwrap();
        let names: Vec<_> = items.iter().map(|i| i.benchmark).collect();
        assert_eq!(
            names,
            [
                "spin",
                "hackbench",
                "forkexec",
                "numa02",
                "numa01",
                "numa_test",
                "mem",
                "mem",
                "mem",
                "mem",
                "mem",
                "mem"
            ]
        );
        // 1 s of 100 passes at 15 ns an update.
        assert_eq!(keys(&items, "numa_test")["size"], "666666");
        assert_eq!(keys(&items, "numa_test")["tasks"], "2");
        // mem: 1 and 2 threads of node 0 on its memory, 256 MiB each, 1 s,
        // each sweep its own count. One thread zeroes at 64 B / 12 ns = 5.3
        // GB/s (19 loops), reads at 4 (14), reads and writes back at 3
        // (11); both zero and read at the controller's 6.4 GB/s (11) and
        // write back at half of it (5).
        let mems: Vec<(String, String, String)> = items
            .iter()
            .filter(|i| i.benchmark == "mem")
            .map(|i| {
                let k: BTreeMap<&str, String> = i.keys.iter().cloned().collect();
                (k["op"].clone(), k["threads"].clone(), k["loops"].clone())
            })
            .collect();
        let want = [
            ("memset", 1, 19),
            ("read", 1, 14),
            ("write", 1, 11),
            ("memset", 2, 11),
            ("read", 2, 11),
            ("write", 2, 5),
        ];
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(o, t, l)| (format!("\"{o}\""), t.to_string(), l.to_string()))
            .collect();
        assert_eq!(mems, want);
        let mems: Vec<BTreeMap<&str, String>> = items
            .iter()
            .filter(|i| i.benchmark == "mem")
            .map(|i| i.keys.iter().cloned().collect())
            .collect();
        assert_eq!(mems[0]["mem_node"], "\"0\"");
        // 1 s at 2 ns an iteration.
        assert_eq!(keys(&items, "spin")["iterations"], "500000000");
        // 2 CPUs x 1 s of 1-us operations, 2 x 10 x 10 of them a loop.
        assert_eq!(keys(&items, "hackbench")["loops"], "10000");
        // 1 s of 500-us children.
        assert_eq!(keys(&items, "forkexec")["children"], "2000");
        // 6.4 GB/s over 256 MiB (4 LLCs, at least 256 MiB): 23 loops.
        assert_eq!(keys(&items, "numa02")["bytes"], "\"256M\"");
        assert_eq!(keys(&items, "numa02")["loops"], "23");
        // numa01: two processes of 1 thread, each zeroing its 128 MiB.
        assert_eq!(keys(&items, "numa01")["threads"], "1");
        assert_eq!(keys(&items, "numa01")["bytes"], "\"128M\"");
        assert_eq!(keys(&items, "numa01")["loops"], "23");
        // A quarter of a small node, at most.
        let small = Sizing {
            node_bytes: 512 << 20,
            ..sizing(1)
        };
        assert_eq!(
            keys(&set(&small, &[]).unwrap(), "numa02")["bytes"],
            "\"128M\""
        );
        assert_eq!(keys(&items, "numa02")["placement"], "\"default\"");
        // Two nodes: placements, and the two halves.
        let items = set(&sizing(2), &[]).unwrap();
        assert_eq!(
            keys(&items, "numa02")["placement"],
            "\"default,bind,inverse-bind\""
        );
        assert!(items.iter().any(|i| i.benchmark == "twohalves"));
        assert_eq!(keys(&items, "mem")["mem_node"], "\"0,1\"");
        // ... whose balanced benchmarks run three scan delays (3 s at 6.4
        // GB/s over 256 MiB: 71 loops; numa01's two threads a process
        // over 128 MiB: 35), the others the set's second.
        assert_eq!(keys(&items, "numa02")["loops"], "71");
        assert_eq!(keys(&items, "numa01")["loops"], "35");
        assert_eq!(keys(&items, "twohalves")["iterations"], "71");
        assert_eq!(keys(&items, "spin")["iterations"], "500000000");
        // Asked for longer than that, every run takes what was asked.
        let long = Sizing {
            seconds: 6.0,
            ..sizing(2)
        };
        assert_eq!(keys(&set(&long, &[]).unwrap(), "numa02")["loops"], "143");
    }

    /// A machine file may give a node very little memory (1 MB is within
    /// its range): the set still sizes numa_test to fit, without a panic.
    #[test]
    fn a_node_of_one_megabyte_still_gets_a_set() {
        let mut s = sizing(1);
        s.node_bytes = 1 << 20;
        let items = set(&s, &["numa_test".into()]).unwrap();
        let size: u64 = keys(&items, "numa_test")["size"].parse().unwrap();
        assert!((1..10_000).contains(&size), "{size}");
    }

    #[test]
    fn a_benchmark_outside_the_set_is_refused() {
        let e = set(&sizing(1), &["numa02_SMT".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"numa02_SMT\" is not in the validation set"),
            "{e}"
        );
        assert!(
            e.contains("spin, hackbench, forkexec, numa02, numa01, numa_test, mem"),
            "{e}"
        );
        let only = set(&sizing(1), &["spin".into()]).unwrap();
        assert_eq!(only.len(), 1);
    }

    #[test]
    fn the_plan_has_both_sides_and_balancing_where_there_are_nodes() {
        let one = plan(&set(&sizing(1), &[]).unwrap(), &Real::Here, "m.toml", 3, 1);
        assert!(one.contains("label = \"real\""), "{one}");
        assert!(one.contains("sim = { machine = \"m.toml\" }"), "{one}");
        assert!(!one.contains("numa_balancing"), "{one}");
        let two = plan(&set(&sizing(2), &[]).unwrap(), &Real::Here, "m.toml", 3, 2);
        assert!(two.contains("matrix = { nb = [0, 1] }"), "{two}");
        assert!(two.contains("balancer = \"autonuma\""), "{two}");
        assert!(two.contains("balancer = \"none\""), "{two}");
        let v: toml::Table = two.parse().unwrap();
        assert_eq!(v["benchmark"].as_array().unwrap().len(), 13);
    }

    #[test]
    fn errors_pair_real_and_simulated_runs_of_the_same_case() {
        let mut recs = vec![
            example_record("spin", "real", 1, 1.0),
            example_record("spin", "real", 2, 1.2),
            example_record("spin", "sim", 1, 1.21),
            // Another case: no simulated twin, so not in the table.
            example_record("numa02", "real", 1, 3.0),
        ];
        recs[3].params.insert("bytes".into(), 1.into());
        let e = errors(&recs);
        let el = e.rows.iter().find(|r| r.metric == "elapsed_s").unwrap();
        // elapsed, user and CPU time (user + sys).
        assert_eq!(e.rows.len(), 2, "{:?}", e.rows);
        assert!((el.real_mean - 1.1).abs() < 1e-12);
        assert!((el.error - 0.1).abs() < 1e-9, "{}", el.error);
        assert_eq!(el.within, Some(true));
        assert_eq!((el.real_runs, el.sim_runs), (2, 1));
        let t = render(&e);
        assert!(t.contains("ok (±15%)"), "{t}");
        assert!(t.contains("within target: 2 of 2"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        // With system time, CPU time (user + sys) is compared too.
        let mut with_sys = recs.clone();
        for r in &mut with_sys {
            r.metrics
                .insert("sys_s".into(), numalab_record::Metric::seconds(0.5));
        }
        let cpu = errors(&with_sys);
        let c = cpu.rows.iter().find(|r| r.metric == "cpu_s").unwrap();
        assert!((c.real_mean - (1.1 * 1.9 + 0.5)).abs() < 1e-9, "{c:?}");
        // 30% off is off.
        recs[2].metrics.get_mut("elapsed_s").unwrap().value = 1.43;
        let e = errors(&recs);
        let el = e.rows.iter().find(|r| r.metric == "elapsed_s").unwrap();
        assert_eq!(el.within, Some(false));
        let t = render(&e);
        assert!(t.contains("OFF (±15%)\n"), "{t}");
        assert!(!t.contains("* "), "{t}");
        // Real runs of 1.0 and 0.4 s (sd 0.42 of 0.7): off, and marked.
        recs[1].metrics.get_mut("elapsed_s").unwrap().value = 0.4;
        let e = errors(&recs);
        let el = e.rows.iter().find(|r| r.metric == "elapsed_s").unwrap();
        assert!(el.unsteady() && el.within == Some(false), "{el:?}");
        let t = render(&e);
        assert!(t.contains("OFF (±15%)*\n"), "{t}");
        assert!(
            t.contains(
                "* real runs spreading beyond 25% of their mean (sd), in 1 of the 1 row off"
            ),
            "{t}"
        );
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
    }

    /// The row of `metric` (of the one case of `e`).
    fn row_of(e: &Errors, metric: &str) -> Row {
        e.rows.iter().find(|r| r.metric == metric).unwrap().clone()
    }

    /// Pages migrated are judged as the benchmark's own tasks counted
    /// them, within a few pages a task of heap and stack the model does
    /// not hold; /proc/vmstat's machine-wide count is shown, not judged.
    #[test]
    fn pages_migrated_are_the_tasks_own_within_a_few_of_their_own() {
        let pages = |label: &str, vmstat: f64, own: f64| {
            let mut r = example_record("numa02", label, 1, 3.0);
            for (m, v) in [
                ("numa_pages_migrated", vmstat),
                ("kernel_numa_pages_migrated", own),
            ] {
                r.metrics.insert(
                    m.into(),
                    numalab_record::Metric::new(v, "pages", numalab_record::Better::Lower),
                );
            }
            r
        };
        let row = |real: (f64, f64), sim: f64| {
            let e = errors(&[pages("real", real.0, real.1), pages("sim", sim, sim)]);
            let vm = e.rows.iter().find(|r| r.metric == "numa_pages_migrated");
            assert_eq!(vm.and_then(|r| r.within), None, "vmstat's is not judged");
            (row_of(&e, "kernel_numa_pages_migrated"), render(&e))
        };
        // Two tasks: 16 pages of their own within target.
        let (r, t) = row((522.0, 3.0), 0.0);
        assert_eq!((r.slack, r.within), (16.0, Some(true)), "{r:?}");
        assert!(t.contains("-100.0%  ok (≤16)"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        // More than that, and more than 25%: off.
        assert_eq!(row((522.0, 3.0), 40.0).0.within, Some(false));
        // A buffer's migration: judged by its error.
        let (r, t) = row((15700.0, 15636.0), 15872.0);
        assert_eq!(r.within, Some(true));
        assert!(t.contains("+1.5%  ok (±25%)"), "{t}");
        assert_eq!(row((15700.0, 15636.0), 10000.0).0.within, Some(false));
    }

    /// A convergence time is known to its sampling interval: a
    /// difference within one interval (the longer of the two worlds') is
    /// within target whatever its share, a larger one is judged by its
    /// error.
    #[test]
    fn convergence_is_judged_to_its_sampling_interval() {
        let conv = |label: &str, at: f64, interval: f64| {
            let mut r = example_record("numa01", label, 1, 3.0);
            r.metrics.insert(
                "convergence_s".into(),
                numalab_record::Metric::new(at, "s", numalab_record::Better::Lower),
            );
            r.series.interval_s = interval;
            r
        };
        let row = |real: (f64, f64), sim: (f64, f64)| {
            let e = errors(&[conv("real", real.0, real.1), conv("sim", sim.0, sim.1)]);
            (row_of(&e, "convergence_s"), render(&e))
        };
        // Converged at the real run's sample at 1.20 s and at the model's
        // at 2.08 s, both sampled every second: within one interval.
        let (r, t) = row((1.2, 1.03), (2.08, 1.0));
        assert_eq!((r.slack, r.within), (1.03, Some(true)), "{r:?}");
        assert!(t.contains("+73.3%  ok (≤1.0 s)"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        // Sampled every 0.25 s, the same times are apart.
        assert_eq!(row((1.2, 0.25), (2.08, 0.25)).0.within, Some(false));
        // Converged as the tasks started (a bound placement): that
        // moment exactly, judged by its error alone.
        let started = |mut r: numalab_record::RunRecord, at: f64| {
            r.metrics.insert(
                "started_s".into(),
                numalab_record::Metric::new(at, "s", numalab_record::Better::Lower),
            );
            r
        };
        let e = errors(&[
            started(conv("real", 0.132, 1.0), 0.132),
            started(conv("sim", 0.078, 1.0), 0.078),
        ]);
        let r = e.rows.iter().find(|r| r.metric == "convergence_s").unwrap();
        assert_eq!((r.slack, r.within), (0.0, Some(false)), "{r:?}");
        // Long convergences are judged by their error.
        assert_eq!(row((20.0, 1.0), (23.0, 1.0)).0.within, Some(true));
        assert_eq!(row((20.0, 1.0), (27.0, 1.0)).0.within, Some(false));
    }

    /// spin and one thread's memset and read of its own node test the
    /// file's own figures: their errors are reported as the machine's
    /// drift, loads apart from stores, named beyond 10%; so is a node's
    /// CPUs zeroing its memory together (the controller rate is fitted
    /// to it), and its CPUs reading it together (the rate for loads is
    /// fitted to it where they did not scale); a remote memset or a
    /// read-modify-write are not references.
    #[test]
    fn reference_rows_say_how_far_the_machine_drifted_from_its_file() {
        let mut recs = Vec::new();
        for (b, case, real, sim) in [
            ("spin", "", 1.0, 1.01),
            ("mem", "memset 0 0 1", 2.0, 1.5),
            ("mem", "read 0 0 1", 2.0, 2.1),
            ("mem", "memset 0 1 1", 2.0, 1.0),
            ("mem", "memset 0 0 2", 2.0, 1.0),
            ("mem", "read 0 0 2", 2.0, 1.9),
            ("mem", "write 0 0 1", 2.0, 1.0),
        ] {
            for (side, v) in [("real", real), ("sim", sim)] {
                let mut r = example_record(b, side, 1, v);
                if let [op, c, m, t] = case.split(' ').collect::<Vec<_>>()[..] {
                    r.params.insert("op".into(), op.into());
                    r.params
                        .insert("cpu_node".into(), c.parse::<u32>().unwrap().into());
                    r.params
                        .insert("mem_node".into(), m.parse::<u32>().unwrap().into());
                    r.params
                        .insert("threads".into(), t.parse::<u32>().unwrap().into());
                }
                recs.push(r);
            }
        }
        let e = errors(&recs);
        let mut got: Vec<(&str, f64)> = e.reference.iter().map(|x| (x.resource, x.error)).collect();
        got.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[0].0, "CPU");
        assert_eq!(got[1].0, "memory loads");
        assert!((got[1].1 - 0.05).abs() < 1e-9, "{got:?}");
        assert_eq!(got[2].0, NODE_LOADS);
        assert!((got[2].1 + 0.05).abs() < 1e-9, "{got:?}");
        assert_eq!(got[3].0, "memory stores");
        assert!((got[3].1 + 0.25).abs() < 1e-9, "{got:?}");
        assert_eq!(got[4].0, NODE_STORES);
        assert!((got[4].1 + 0.5).abs() < 1e-9, "{got:?}");
        let t = render(&e);
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat(&t).contains(
                "its memory stores and memory stores of a node's CPUs ran at another speed"
            ),
            "{t}"
        );
        assert!(
            flat(&t).contains("memory stores of a node's CPUs (mem) -50.0%"),
            "{t}"
        );
        // No placements compared: said so, not "0 of 0".
        assert!(
            flat(&t).contains("no placement orderings (they need several nodes)"),
            "{t}"
        );
        assert!(flat(&t).contains("memory loads (mem) +5.0%"), "{t}");
        assert!(
            flat(&t).contains("memory loads of a node's CPUs (mem) -5.0%"),
            "{t}"
        );
        assert!(!flat(&t).contains("CPU ran at"), "{t}");
        assert!(!flat(&t).contains("loads ran at"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        // Within 10%: said, not flagged.
        let steady: Vec<_> = recs.into_iter().filter(|r| r.benchmark == "spin").collect();
        let t = render(&errors(&steady));
        assert!(
            flat(&t).contains("CPU (spin) +1.0%") && !flat(&t).contains("another speed"),
            "{t}"
        );
    }

    #[test]
    fn orderings_of_placements_are_compared() {
        let mut recs = Vec::new();
        for (p, real, sim) in [
            ("bind", 1.0, 1.1),
            ("default", 2.0, 1.9),
            ("inverse-bind", 3.0, 1.5),
        ] {
            for (side, v) in [("real", real), ("sim", sim)] {
                let mut r = example_record("numa02", side, 1, v);
                r.params.insert("placement".into(), p.into());
                recs.push(r);
            }
        }
        let e = errors(&recs);
        assert_eq!(e.orderings.len(), 1);
        let o = &e.orderings[0];
        assert_eq!(o.real, ["bind", "default", "inverse-bind"]);
        assert_eq!(o.sim, ["bind", "inverse-bind", "default"]);
        assert!(!o.agree);
        assert!(render(&e).contains("DISAGREE"));
    }

    /// Placements closer than their runs' spread (or 2%) are a tie: a
    /// real order the model does not have is a disagreement, a model's
    /// order the real runs cannot tell apart is not judged, and a case
    /// whose real placements are all within noise is left out of the
    /// count and said so.
    #[test]
    fn placements_within_noise_are_ties() {
        let recs = |real: [[f64; 2]; 3], sim: [f64; 3]| {
            let mut out = Vec::new();
            for (k, p) in ["bind", "default", "inverse-bind"].iter().enumerate() {
                for (run, &rv) in real[k].iter().enumerate() {
                    for (side, v) in [("real", rv), ("sim", sim[k])] {
                        let mut r = example_record("numa02", side, run as u32 + 1, v);
                        r.params.insert("placement".into(), (*p).into());
                        out.push(r);
                    }
                }
            }
            out
        };
        let verdict = |real, sim| {
            let e = errors(&recs(real, sim));
            let o = &e.orderings[0];
            (o.verdict, o.real.clone(), o.sim.clone(), render(&e))
        };
        // bind and default within 2%, inverse-bind apart: the model
        // agrees by having inverse-bind slowest, whatever it says of the
        // tie; it disagrees by tying inverse-bind too.
        let real = [[1.0, 1.02], [1.01, 1.03], [1.5, 1.52]];
        let (v, r, s, _) = verdict(real, [1.0, 1.2, 1.4]);
        assert_eq!(v, "agree");
        assert_eq!(r, ["bind", "=default", "inverse-bind"]);
        assert_eq!(s, ["bind", "default", "inverse-bind"]);
        let (v, _, s, t) = verdict(real, [1.14, 1.14, 1.141]);
        assert_eq!(v, "disagree");
        assert_eq!(s, ["bind", "=default", "=inverse-bind"]);
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat(&t).contains(
                "simulated bind = default = inverse-bind: DISAGREE (bind < inverse-bind \
                 in the real runs, a tie simulated)"
            ),
            "{t}"
        );
        // Two runs each, 0.46 and 0.41 apart at spreads of 0.07 and
        // 0.014: Welch's test (t = 9 and 8 on about one degree of freedom,
        // p 0.06-0.08) cannot tell them apart, where the spreads' sum
        // (0.085) did.
        let (v, _, _, _) = verdict([[1.0, 1.1], [1.05, 1.15], [1.5, 1.52]], [1.0, 1.2, 1.4]);
        assert_eq!(v, "within noise");
        // Every real placement within noise: nothing to judge.
        let (v, _, _, t) = verdict([[1.0, 1.2], [1.1, 1.05], [1.15, 1.0]], [1.0, 1.5, 2.0]);
        assert_eq!(v, "within noise");
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(
                "orderings agreeing: 0 of 0 (1 more with every real placement within noise"
            ),
            "{t}"
        );
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
    }
}
