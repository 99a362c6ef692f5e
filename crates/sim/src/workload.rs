//! Workload models of the suite's benchmarks: what tasks exist, what
//! memory they touch first, and what one unit of their work costs.
//!
//! Costs are counted in cycles (scaled by the modelled core frequency) and
//! cache lines (timed by the machine's latencies, bandwidth and memory-level
//! parallelism). The per-operation cycle counts below are estimates from
//! the benchmarks' source code (instructions per loop iteration); they are
//! stated here, not fitted to any seed's result.

use crate::engine::{MemPolicy, MsgGroup, Parent, Region, Task, TaskState, Work, World, NO_NODE};
use numalab_record::convergence::{Capacity, Rule};
use serde_json::json;
use std::collections::{BTreeMap, VecDeque};

/// numa_test (randupdt.c): cycles of one `a[ix[i]] += b[i]` update besides
/// its memory accesses: load ix, load b, load a, add, store, loop (about 6
/// instructions at 1 IPC on an in-order core). Estimate.
pub const RANDUPDT_CYCLES_PER_UPDATE: f64 = 6.0;
/// Bytes streamed per update besides the random `a[j]`: `b[i]` (8) + `ix[i]` (4).
pub const RANDUPDT_STREAM_BYTES: f64 = 12.0;
/// memset-style zeroing: bytes stored per cycle by one core (32-byte
/// stores, one per cycle). Estimate.
pub const MEMSET_BYTES_PER_CYCLE: f64 = 32.0;
/// hackbench: cycles of one write() or read() of a small message on a unix
/// socket, with its share of the wakeup and context switch. Order-of-
/// magnitude estimate (a few microseconds on a 2-3 GHz core); unknown.
pub const MSG_CYCLES: f64 = 6000.0;
/// Bytes a unix stream socket buffers before a writer blocks
/// (net.core.wmem_default = 212992) and the kernel's per-message overhead
/// (sk_buff truesize beyond the payload, about 512 bytes).
pub const SOCKET_BUFFER_BYTES: u64 = 212_992;
pub const SKB_OVERHEAD_BYTES: u64 = 512;
/// Time a launcher takes to start one more process (fork + exec) or
/// thread (clone); launches happen one after the other. Estimates.
pub const PROCESS_LAUNCH_NS: u64 = 1_000_000;
pub const THREAD_LAUNCH_NS: u64 = 50_000;
/// Each launch is delayed by a uniformly random extra of up to this much
/// (a few scheduler ticks: the launcher itself competes for a CPU; for a
/// group started after a `sleep`, the timer's slack). Estimate.
pub const LAUNCH_JITTER_NS: u64 = 4_000_000;

/// Stagger the start of tasks launched together, with seeded jitter: the
/// run-to-run variation of real launches (and the only randomness of a
/// run without a NUMA balancer).
fn launch_times(w: &mut World, meta: &mut Meta) {
    let mut count: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for t in 0..w.tasks.len() {
        let base = w.tasks[t].start_ns;
        let k = count.entry(base).or_insert(0);
        let step = if w.tasks[t].exec {
            PROCESS_LAUNCH_NS
        } else {
            THREAD_LAUNCH_NS
        };
        let jitter = crate::engine::rand_below(&mut w.rng, LAUNCH_JITTER_NS);
        w.tasks[t].start_ns = base + *k * step + jitter;
        *k += 1;
        // A thread starts after the thread that creates it.
        if let Parent::Task(p) = w.tasks[t].parent {
            let after = w.tasks[p].start_ns + step;
            w.tasks[t].start_ns = w.tasks[t].start_ns.max(after);
        }
    }
    if let Some(&first) = meta.disturb_tasks.first() {
        meta.disturb_start_ns = meta.disturb_start_ns.min(w.tasks[first].start_ns);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disturb {
    Messaging,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoVariant {
    Numa01,
    Numa01ThreadAlloc,
    Numa02,
    Numa02Smt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindMode {
    Default,
    Bind,
    InverseBind,
}

impl BindMode {
    pub fn name(&self) -> &'static str {
        match self {
            BindMode::Default => "default",
            BindMode::Bind => "bind",
            BindMode::InverseBind => "inverse-bind",
        }
    }
    pub fn parse(s: &str) -> Result<BindMode, String> {
        match s {
            "default" => Ok(BindMode::Default),
            "bind" => Ok(BindMode::Bind),
            "inverse-bind" => Ok(BindMode::InverseBind),
            _ => Err(format!(
                "unknown placement {s:?} (valid: default, bind, inverse-bind)"
            )),
        }
    }
}

/// A benchmark and its parameters.
#[derive(Debug, Clone)]
pub enum Bench {
    NumaTest {
        tasks: u32,
        size: u64,
        disturb: Disturb,
    },
    Autonuma {
        variant: AutoVariant,
        placement: BindMode,
        threads: Option<u32>,
        bytes: Option<u64>,
        loops: Option<u64>,
    },
    TwoHalves {
        threads_per_set: Option<u32>,
        bytes: u64,
        iterations: u64,
    },
    Spin {
        tasks: u32,
        gcycles: u64,
        cpus: Option<Vec<u32>>,
    },
    Hackbench {
        groups: u32,
        fds: u32,
        loops: u32,
        size: u32,
        cpus: Option<Vec<u32>>,
    },
}

/// What the record needs to know besides the world.
#[derive(Debug, Clone)]
pub struct Meta {
    pub benchmark: String,
    pub params: BTreeMap<String, serde_json::Value>,
    pub processes: Vec<String>,
    /// Tasks that make up the benchmark proper (records' `tasks`).
    pub main_tasks: Vec<usize>,
    /// Disturbance (numa_test's hackbench) tasks and start time.
    pub disturb_tasks: Vec<usize>,
    pub disturb_start_ns: u64,
    /// The convergence criterion real runs of this benchmark are judged
    /// by (`None`: real runs record no convergence, nor does the sim).
    pub convergence: Option<Rule>,
    /// The region each main task works on (its slice, or its process's
    /// shared buffer), as real runs observe it for `task_memory_bytes`;
    /// empty for benchmarks whose real runs do not observe it.
    pub task_regions: Vec<usize>,
    /// When every main task had started with its memory placed (set by
    /// the run; the real runs' `started_s`).
    pub started_ns: Option<u64>,
}

pub(crate) fn add_region(w: &mut World, process: usize, bytes: u64) -> usize {
    let cb = w.mem.chunk_bytes;
    let len = bytes.div_ceil(cb).max(1) as usize;
    let first = w.mem.node.len();
    let r = w.mem.regions.len();
    w.mem.node.extend(std::iter::repeat_n(NO_NODE, len));
    w.mem.region_of.extend(std::iter::repeat_n(r as u32, len));
    w.mem.last_node.extend(std::iter::repeat_n(NO_NODE, len));
    w.mem.last_task.extend(std::iter::repeat_n(u32::MAX, len));
    w.mem.marked.extend(std::iter::repeat_n(false, len));
    while w.mem.proc_node.len() <= process {
        w.mem.proc_node.push(vec![0; w.m.nnodes]);
    }
    w.mem.regions.push(Region {
        process,
        first,
        len,
        per_node: vec![0; w.m.nnodes],
        touched: 0,
        accessors: Vec::new(),
        marked: Vec::new(),
        version: 0,
    });
    r
}

pub(crate) fn prefault(w: &mut World, r: usize, node: usize) {
    let reg = &w.mem.regions[r];
    let (first, len) = (reg.first, reg.len);
    for c in first..first + len {
        w.mem.allocate(&w.m, c, node);
    }
}

fn mask_of_node(w: &mut World, node: usize) -> usize {
    let mask: Vec<bool> = (0..w.m.ncpus).map(|c| w.m.cpu_node[c] == node).collect();
    add_mask(w, mask)
}

fn add_mask(w: &mut World, mask: Vec<bool>) -> usize {
    if let Some(i) = w.masks.iter().position(|m| *m == mask) {
        return i;
    }
    w.masks.push(mask);
    w.masks.len() - 1
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn add_task(
    w: &mut World,
    name: String,
    process: usize,
    work: Work,
    expected: u64,
    parent: Parent,
    exec: bool,
    start_ns: u64,
    main: bool,
) -> usize {
    let id = w.tasks.len();
    // Every process has a row of memory per node, even one that never
    // maps any (spinning tasks): balancers index them by process.
    while w.mem.proc_node.len() <= process {
        w.mem.proc_node.push(vec![0; w.m.nnodes]);
    }
    if let Work::Compute { access, .. } = &work {
        for &(r, _) in access {
            w.mem.regions[r].accessors.push(id);
        }
    }
    w.tasks.push(Task {
        name,
        process,
        state: TaskState::NotStarted,
        cpu: 0,
        initial_node: None,
        placed: false,
        affinity: None,
        mem_policy: MemPolicy::Local,
        exec,
        parent,
        start_ns,
        end_ns: None,
        main,
        last_ran: 0,
        node_time: vec![0; w.m.nnodes],
        user_ns: 0.0,
        sys_ns: 0.0,
        sys_debt: 0.0,
        cold_debt: 0.0,
        progress: 0.0,
        work_expected: expected,
        work,
        migrations: 0,
        preferred_node: None,
        frac: Vec::new(),
        frac_key: u64::MAX,
    });
    id
}

fn stream_work(w: &World, r: usize, bytes: f64, init: bool) -> Work {
    let reg = &w.mem.regions[r];
    Work::Compute {
        init: if init {
            (reg.first..reg.first + reg.len).collect()
        } else {
            VecDeque::new()
        },
        init_credit: 0.0,
        cycles: bytes / MEMSET_BYTES_PER_CYCLE,
        rand_lines: 0.0,
        stream_lines: bytes / w.m.line_bytes,
        wss_bytes: bytes,
        access: vec![(r, 1.0)],
    }
}

/// Messaging tasks (hackbench) of `groups` groups; returns their ids.
#[allow(clippy::too_many_arguments)]
fn add_hackbench(
    w: &mut World,
    process: usize,
    groups: u32,
    fds: u32,
    loops: u32,
    size: u32,
    start_ns: u64,
    main: bool,
    affinity: Option<usize>,
) -> Vec<usize> {
    let mut ids = Vec::new();
    let per_socket = (SOCKET_BUFFER_BYTES / (size as u64 + SKB_OVERHEAD_BYTES)).max(1);
    let lines = (size as f64 / 64.0).ceil() + 2.0;
    for g in 0..groups {
        let gi = w.groups.len();
        w.groups.push(MsgGroup {
            pending: vec![0; fds as usize],
            capacity: per_socket,
            cycles: MSG_CYCLES,
            lines,
            blocked_senders: vec![Vec::new(); fds as usize],
            receivers: Vec::new(),
            receiver_blocked: vec![false; fds as usize],
            llc_members: vec![0; w.m.llc_count()],
            members: 0,
        });
        let msgs = fds as u64 * loops as u64;
        for (role, sender) in [("receiver", false), ("sender", true)] {
            for i in 0..fds {
                let id = add_task(
                    w,
                    format!("hackbench g{g} {role} {i}"),
                    process,
                    Work::Message {
                        group: gi,
                        sender,
                        // Receivers read their own socket; sender i starts
                        // writing at socket 0 like hackbench's loop.
                        slot: if sender { 0 } else { i as usize },
                        remaining: msgs,
                        credit: 0.0,
                    },
                    msgs,
                    Parent::Cpu(0),
                    false,
                    start_ns,
                    main,
                );
                w.tasks[id].affinity = affinity;
                if !sender {
                    w.groups[gi].receivers.push(id);
                }
                ids.push(id);
            }
        }
    }
    ids
}

fn cpu_mask(w: &mut World, cpus: &Option<Vec<u32>>) -> Result<Option<usize>, String> {
    match cpus {
        None => Ok(None),
        Some(list) => {
            let mut mask = vec![false; w.m.ncpus];
            for &c in list {
                if c as usize >= w.m.ncpus {
                    return Err(format!(
                        "CPU {c} is not on this machine (it has CPUs 0-{})",
                        w.m.ncpus - 1
                    ));
                }
                mask[c as usize] = true;
            }
            Ok(Some(add_mask(w, mask)))
        }
    }
}

impl Bench {
    pub fn name(&self) -> &'static str {
        match self {
            Bench::NumaTest { .. } => "numa_test",
            Bench::Autonuma { variant, .. } => match variant {
                AutoVariant::Numa01 => "numa01",
                AutoVariant::Numa01ThreadAlloc => "numa01_THREAD_ALLOC",
                AutoVariant::Numa02 => "numa02",
                AutoVariant::Numa02Smt => "numa02_SMT",
            },
            Bench::TwoHalves { .. } => "twohalves",
            Bench::Spin { .. } => "spin",
            Bench::Hackbench { .. } => "hackbench",
        }
    }

    /// Create the tasks and memory of this benchmark in `w`.
    pub fn populate(&self, w: &mut World) -> Result<Meta, String> {
        let ncpus = w.m.ncpus as u32;
        let nnodes = w.m.nnodes;
        let mut params = BTreeMap::new();
        let mut meta = Meta {
            benchmark: self.name().to_string(),
            params: BTreeMap::new(),
            processes: Vec::new(),
            main_tasks: Vec::new(),
            disturb_tasks: Vec::new(),
            disturb_start_ns: 0,
            convergence: None,
            task_regions: Vec::new(),
            started_ns: None,
        };
        match self {
            Bench::NumaTest {
                tasks,
                size,
                disturb,
            } => {
                if *tasks == 0 || *size == 0 {
                    return Err("numa_test needs at least 1 task and size > 0".into());
                }
                params.insert("tasks".into(), json!(tasks));
                params.insert("size".into(), json!(size));
                params.insert(
                    "disturb".into(),
                    json!(match disturb {
                        Disturb::Messaging => "messaging",
                        Disturb::None => "none",
                    }),
                );
                let n = *size as f64;
                for i in 0..*tasks as usize {
                    let p = meta.processes.len();
                    meta.processes.push(format!("randupdt {}", i + 1));
                    // a (8n) + b (8n) + ix (4n) bytes, as randupdt.c allocates.
                    let r = add_region(w, p, 20 * size);
                    let reg = &w.mem.regions[r];
                    let work = Work::Compute {
                        init: (reg.first..reg.first + reg.len).collect(),
                        init_credit: 0.0,
                        cycles: n * RANDUPDT_CYCLES_PER_UPDATE,
                        rand_lines: n,
                        stream_lines: n * RANDUPDT_STREAM_BYTES / w.m.line_bytes,
                        wss_bytes: 8.0 * n,
                        access: vec![(r, 1.0)],
                    };
                    let id = add_task(
                        w,
                        format!("randupdt {}", i + 1),
                        p,
                        work,
                        100,
                        Parent::Cpu(0),
                        true,
                        0,
                        true,
                    );
                    meta.main_tasks.push(id);
                }
                if *disturb == Disturb::Messaging {
                    let p = meta.processes.len();
                    meta.processes.push("hackbench 20".into());
                    let _ = add_region(w, p, 1);
                    meta.disturb_start_ns = 3_000_000_000;
                    meta.disturb_tasks =
                        add_hackbench(w, p, 20, 20, 100, 100, meta.disturb_start_ns, false, None);
                }
            }
            Bench::Autonuma {
                variant,
                placement,
                threads,
                bytes,
                loops,
            } => {
                // As real runs (numalab_workloads' Kind::convergence_rule);
                // on a one-node machine it is trivial, as there.
                meta.convergence = Some(match variant {
                    AutoVariant::Numa01 => Rule::Process,
                    AutoVariant::Numa01ThreadAlloc | AutoVariant::Numa02 => {
                        Rule::Thread(Capacity::Cpus)
                    }
                    AutoVariant::Numa02Smt => Rule::Thread(Capacity::Cores),
                });
                // Every variant's memory is first touched before the
                // threads work on it: on the first node by default (the
                // original's default build binds the first touch of the
                // whole buffer to one node, numa01_THREAD_ALLOC included;
                // ANCHORS.md), on the ideal or the wrong node when bound.
                let (procs, def_threads, def_bytes, def_loops, shared) = match variant {
                    AutoVariant::Numa01 => (2u32, (ncpus / 2).max(1), 3u64 << 30, 50u64, true),
                    AutoVariant::Numa01ThreadAlloc => (2, (ncpus / 2).max(1), 3 << 30, 1000, false),
                    AutoVariant::Numa02 => (1, ncpus, 1 << 30, 800, false),
                    AutoVariant::Numa02Smt => (1, (ncpus / 2).max(1), 1 << 30, 800, false),
                };
                let threads = threads.unwrap_or(def_threads).max(1);
                let bytes = bytes.unwrap_or(def_bytes).max(1);
                let loops = loops.unwrap_or(def_loops).max(1);
                params.insert("threads".into(), json!(threads));
                params.insert("processes".into(), json!(procs));
                params.insert("bytes_per_process".into(), json!(bytes));
                params.insert("placement".into(), json!(placement.name()));
                params.insert("loops".into(), json!(loops));
                let total_threads = procs * threads;
                for p in 0..procs as usize {
                    let pi = meta.processes.len();
                    meta.processes
                        .push(format!("{} process {}", self.name(), p + 1));
                    // The ideal node of a thread: processes (numa01) or
                    // thread ranks (numa02) spread evenly over the nodes.
                    let ideal = |i: u32| -> usize {
                        if procs > 1 {
                            p % nnodes
                        } else {
                            (i as usize * nnodes) / threads as usize
                        }
                    };
                    let wrong = |n: usize| (n + 1) % nnodes;
                    let shared_region = shared.then(|| add_region(w, pi, bytes));
                    if let Some(r) = shared_region {
                        let node = match placement {
                            BindMode::Default => 0,
                            BindMode::Bind => ideal(0),
                            BindMode::InverseBind => wrong(ideal(0)),
                        };
                        prefault(w, r, node);
                    }
                    let slice = (bytes / threads as u64).max(1);
                    for i in 0..threads {
                        let r = match shared_region {
                            Some(r) => r,
                            None => {
                                let r = add_region(w, pi, slice);
                                let node = match placement {
                                    BindMode::Default => 0,
                                    BindMode::Bind => ideal(i),
                                    BindMode::InverseBind => wrong(ideal(i)),
                                };
                                prefault(w, r, node);
                                r
                            }
                        };
                        let region_bytes = w.mem.regions[r].len as f64 * w.mem.chunk_bytes as f64;
                        let work = stream_work(
                            w,
                            r,
                            region_bytes.min(if shared { bytes as f64 } else { slice as f64 }),
                            false,
                        );
                        let parent = if i == 0 {
                            Parent::Cpu(0)
                        } else {
                            Parent::Task(*meta.main_tasks.last().expect("main thread"))
                        };
                        let id = add_task(
                            w,
                            format!("{} p{} t{}", self.name(), p + 1, i),
                            pi,
                            work,
                            loops,
                            parent,
                            i == 0,
                            0,
                            true,
                        );
                        meta.task_regions.push(r);
                        if *placement != BindMode::Default {
                            let node = ideal(i);
                            w.tasks[id].affinity = Some(mask_of_node(w, node));
                        }
                        meta.main_tasks.push(id);
                    }
                }
                let _ = total_threads;
            }
            Bench::TwoHalves {
                threads_per_set,
                bytes,
                iterations,
            } => {
                if nnodes < 2 {
                    return Err("twohalves needs a machine with at least 2 nodes".into());
                }
                meta.convergence = Some(Rule::Thread(Capacity::Pinned));
                let tps = threads_per_set
                    .unwrap_or((w.m.node_cpus[0].len() as u32).max(1))
                    .max(1);
                params.insert("threads_per_set".into(), json!(tps));
                params.insert("bytes".into(), json!(bytes));
                params.insert("iterations".into(), json!(iterations));
                meta.processes.push("twohalves".into());
                let slice = (bytes / 2 / tps as u64).max(1);
                for set in 0..2usize {
                    let mask = mask_of_node(w, set);
                    for i in 0..tps {
                        let r = add_region(w, 0, slice);
                        prefault(w, r, 0);
                        let work = stream_work(w, r, slice as f64, false);
                        let parent = match meta.main_tasks.first() {
                            Some(&m) => Parent::Task(m),
                            None => Parent::Cpu(0),
                        };
                        let id = add_task(
                            w,
                            format!("twohalves set{set} t{i}"),
                            0,
                            work,
                            *iterations,
                            parent,
                            meta.main_tasks.is_empty(),
                            0,
                            true,
                        );
                        w.tasks[id].affinity = Some(mask);
                        meta.main_tasks.push(id);
                        meta.task_regions.push(r);
                    }
                }
            }
            Bench::Spin {
                tasks,
                gcycles,
                cpus,
            } => {
                params.insert("tasks".into(), json!(tasks));
                params.insert("gcycles".into(), json!(gcycles));
                if let Some(c) = cpus {
                    params.insert("cpus".into(), json!(numalab_topology::cpulist::format(c)));
                }
                let mask = cpu_mask(w, cpus)?;
                for i in 0..*tasks as usize {
                    let p = meta.processes.len();
                    meta.processes.push(format!("spin {}", i + 1));
                    let id = add_task(
                        w,
                        format!("spin {}", i + 1),
                        p,
                        Work::Compute {
                            init: VecDeque::new(),
                            init_credit: 0.0,
                            cycles: 1e9,
                            rand_lines: 0.0,
                            stream_lines: 0.0,
                            wss_bytes: 0.0,
                            access: Vec::new(),
                        },
                        (*gcycles).max(1),
                        Parent::Cpu(0),
                        true,
                        0,
                        true,
                    );
                    w.tasks[id].affinity = mask;
                    meta.main_tasks.push(id);
                }
                let _ = add_region(w, 0, 1);
            }
            Bench::Hackbench {
                groups,
                fds,
                loops,
                size,
                cpus,
            } => {
                params.insert("groups".into(), json!(groups));
                params.insert("fds".into(), json!(fds));
                params.insert("loops".into(), json!(loops));
                params.insert("size".into(), json!(size));
                if let Some(c) = cpus {
                    params.insert("cpus".into(), json!(numalab_topology::cpulist::format(c)));
                }
                let mask = cpu_mask(w, cpus)?;
                meta.processes.push("hackbench".into());
                let _ = add_region(w, 0, 1);
                meta.main_tasks = add_hackbench(w, 0, *groups, *fds, *loops, *size, 0, true, mask);
            }
        }
        meta.params = params;
        let need = w.mem.node.len() as u64 * w.mem.chunk_bytes;
        let have: u64 = w.m.memory_bytes.iter().sum();
        if need > have {
            return Err(format!(
                "{} needs {} of memory but machine {} has {}",
                self.name(),
                numalab_topology::human_bytes(need),
                w.m.name,
                numalab_topology::human_bytes(have)
            ));
        }
        launch_times(w, &mut meta);
        Ok(meta)
    }
}
