//! `node-affine`: Erich Focht's node affine NUMA scheduler (seeds 000 and
//! 001, as ANCHORS.md summarises it).
//!
//! - Every task has a homenode. With `initial=true` it is chosen at exec by
//!   node-aware initial balancing (the node with the fewest tasks homed on
//!   it, then the least loaded CPU there) and, with `alloc=home`, the
//!   task's memory is allocated there.
//! - Within a node it behaves like the O(1) scheduler (`node-blind`
//!   restricted to the node).
//! - Cross-node balancing runs less often (`node_ms`), and for an idle CPU
//!   only after a delay that grows with node distance (`delay_ms` per 10
//!   units of distance beyond local). Remote nodes are weighted by their
//!   load plus `bonus` for each task homed on the stealer's node, and such
//!   tasks are stolen first; an idle CPU pulls a task of its own node back
//!   home even if it is running elsewhere (through the migration thread).
//! - `dynamic=true`: the homenode follows the node holding most of the
//!   task's memory (re-evaluated every `node_ms`). `initial=false` skips
//!   initial balancing: a new task starts on its parent's CPU. Seed 000's F
//!   is `node-affine[dynamic=true,initial=false]`.

use super::{least_loaded, pick_queued, O1_SLICE_MS};
use crate::engine::{CpuId, MemPolicy, Placement, Scheduler, TaskId, TaskState, World};
use crate::machine::Machine;
use crate::params::Params;

pub struct NodeAffine {
    dynamic: bool,
    initial: bool,
    alloc_home: bool,
    bonus: f64,
    busy_ns: u64,
    idle_ns: u64,
    node_ns: u64,
    delay_ns: f64,
    slice_ns: u64,
    home: Vec<Option<usize>>,
    next: Vec<u64>,
    next_node: Vec<u64>,
    next_dynamic: u64,
}

/// `node-affine`'s parameters, as written (numalab-scx's `node-affine`
/// reads them with this function too, so both worlds take one spec text).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeAffineParams {
    pub dynamic: bool,
    pub initial: bool,
    pub alloc_home: bool,
    pub bonus: f64,
    pub busy_ms: f64,
    pub idle_ms: f64,
    pub node_ms: f64,
    pub delay_ms: f64,
    pub slice_ms: f64,
}

impl NodeAffineParams {
    pub fn read(p: &mut Params) -> Result<NodeAffineParams, crate::params::ParamError> {
        Ok(NodeAffineParams {
            dynamic: p.bool(
                "dynamic",
                false,
                "homenode = node with most of the task's memory",
            )?,
            initial: p.bool("initial", true, "node-aware initial balancing at exec")?,
            alloc_home: p.bool("alloc_home", true, "allocate memory on the homenode")?,
            bonus: p.f64(
                "bonus",
                1.0,
                "weight bonus per task homed on the stealer's node",
            )?,
            busy_ms: p.f64("busy_ms", 200.0, "intra-node balance interval, busy CPU")?,
            idle_ms: p.f64("idle_ms", 1.0, "intra-node balance interval, idle CPU")?,
            node_ms: p.f64("node_ms", 400.0, "cross-node balance interval, busy CPU")?,
            delay_ms: p.f64(
                "delay_ms",
                2.0,
                "idle delay before a remote steal, per 10 distance units",
            )?,
            slice_ms: p.f64("slice_ms", O1_SLICE_MS as f64, "time slice")?,
        })
    }
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Scheduler>, crate::params::ParamError> {
    let NodeAffineParams {
        dynamic,
        initial,
        alloc_home,
        bonus,
        busy_ms,
        idle_ms,
        node_ms,
        delay_ms,
        slice_ms,
    } = NodeAffineParams::read(p)?;
    Ok(Box::new(NodeAffine {
        dynamic,
        initial,
        alloc_home: alloc_home && !dynamic,
        bonus,
        busy_ns: (busy_ms * 1e6) as u64,
        idle_ns: (idle_ms * 1e6).max(1.0) as u64,
        node_ns: (node_ms * 1e6) as u64,
        delay_ns: delay_ms * 1e6,
        slice_ns: (slice_ms * 1e6).max(1e5) as u64,
        home: Vec::new(),
        next: vec![0; m.ncpus],
        next_node: vec![0; m.ncpus],
        next_dynamic: 0,
    }))
}

impl NodeAffine {
    fn home(&self, t: TaskId) -> Option<usize> {
        self.home.get(t).copied().flatten()
    }

    fn set_home(&mut self, t: TaskId, n: usize) {
        if self.home.len() <= t {
            self.home.resize(t + 1, None);
        }
        self.home[t] = Some(n);
    }

    fn homed_on(&self, w: &World, node: usize) -> usize {
        self.home
            .iter()
            .enumerate()
            .filter(|(t, h)| **h == Some(node) && !w.tasks[*t].is_done())
            .count()
    }

    /// O(1) balancing among the CPUs of one node.
    fn balance_node(&mut self, w: &mut World, cpu: CpuId) {
        let node = w.node_of(cpu);
        let this = w.nr_running(cpu);
        let mut busiest = None;
        let mut max = 0;
        for &c in &w.m.node_cpus[node] {
            let nr = w.nr_running(c);
            if c != cpu && nr > max {
                max = nr;
                busiest = Some(c);
            }
        }
        let Some(b) = busiest else { return };
        if max < this + 2 {
            return;
        }
        for _ in 0..((max - this) / 2).max(1) {
            let Some(t) = pick_queued(w, b, cpu, |t| self.home(t) == Some(node)) else {
                break;
            };
            w.migrate(t, cpu);
        }
    }

    /// Cross-node steal for `cpu`; `idle_for` is how long it has been idle.
    fn balance_remote(&mut self, w: &mut World, cpu: CpuId, idle_for: Option<u64>) {
        let node = w.node_of(cpu);
        let ncpu_here = w.m.node_cpus[node].len() as f64;
        let load_here = w.node_nr_running(node) as f64 / ncpu_here;
        let this = w.nr_running(cpu);
        let mut best: Option<(f64, usize)> = None;
        for x in 0..w.m.nnodes {
            if x == node || w.m.node_cpus[x].is_empty() {
                continue;
            }
            if let Some(idle) = idle_for {
                let d = w.m.distances[node][x] as f64;
                if (idle as f64) < self.delay_ns * (d - 10.0) / 10.0 {
                    continue;
                }
            }
            let ncpu_x = w.m.node_cpus[x].len() as f64;
            let load_x = w.node_nr_running(x) as f64 / ncpu_x;
            let own = w.m.node_cpus[x]
                .iter()
                .flat_map(|&c| w.cpus[c].curr.iter().chain(w.cpus[c].queue.iter()))
                .filter(|&&t| self.home(t) == Some(node))
                .count() as f64;
            let weight = load_x - load_here + self.bonus * own / ncpu_x;
            if best.is_none_or(|b| weight > b.0) {
                best = Some((weight, x));
            }
        }
        let Some((weight, x)) = best else { return };
        // Own tasks first: queued, or (when this CPU is idle) running.
        let mut own_pick = None;
        let mut other_pick = None;
        let mut src_nr = 0;
        for &c in &w.m.node_cpus[x] {
            let nr = w.nr_running(c);
            for &t in w.cpus[c].queue.iter().rev() {
                if !w.allowed(t, cpu) || w.tasks[t].state != TaskState::Runnable {
                    continue;
                }
                if self.home(t) == Some(node) && own_pick.is_none() {
                    own_pick = Some(t);
                } else if other_pick.is_none() || nr > src_nr {
                    other_pick = Some(t);
                    src_nr = nr;
                }
            }
            if this == 0 && own_pick.is_none() {
                if let Some(t) = w.cpus[c].curr {
                    if self.home(t) == Some(node) && w.allowed(t, cpu) {
                        own_pick = Some(t);
                    }
                }
            }
        }
        if let Some(t) = own_pick {
            w.migrate(t, cpu);
            return;
        }
        // Foreign tasks only to fix a real imbalance: the remote node has a
        // queue at least two longer than ours.
        if weight >= 1.0 / ncpu_here && src_nr >= this + 2 {
            if let Some(t) = other_pick {
                w.migrate(t, cpu);
            }
        }
    }

    fn update_dynamic(&mut self, w: &World) {
        for t in 0..w.tasks.len() {
            if w.tasks[t].is_done() || w.tasks[t].state == TaskState::NotStarted {
                continue;
            }
            let mem = w.task_memory_nodes(t);
            let total: f64 = mem.iter().sum();
            if total <= 0.0 {
                continue;
            }
            let mut best = self.home(t).unwrap_or(0);
            for (n, &b) in mem.iter().enumerate() {
                if b > mem[best] {
                    best = n;
                }
            }
            self.set_home(t, best);
        }
    }
}

impl Scheduler for NodeAffine {
    fn select_cpu(&mut self, w: &mut World, t: TaskId, why: Placement) -> CpuId {
        match why {
            Placement::New { parent_cpu, exec } => {
                if self.initial && exec {
                    // Node-aware initial balancing: fewest homed tasks per CPU.
                    let mut best: Option<(f64, usize, usize)> = None;
                    for n in 0..w.m.nnodes {
                        let cpus = &w.m.node_cpus[n];
                        if cpus.is_empty() || !cpus.iter().any(|&c| w.allowed(t, c)) {
                            continue;
                        }
                        let key = (
                            self.homed_on(w, n) as f64 / cpus.len() as f64,
                            w.node_nr_running(n),
                            n,
                        );
                        if best.is_none_or(|b| {
                            key.0 < b.0 || (key.0 == b.0 && (key.1, key.2) < (b.1, b.2))
                        }) {
                            best = Some(key);
                        }
                    }
                    let node = best.map(|b| b.2).unwrap_or(0);
                    self.set_home(t, node);
                    if self.alloc_home && w.tasks[t].mem_policy == MemPolicy::Local {
                        w.tasks[t].mem_policy = MemPolicy::Node(node);
                    }
                    return least_loaded(w, t, &w.m.node_cpus[node].clone()).unwrap_or(parent_cpu);
                }
                let c = if w.allowed(t, parent_cpu) {
                    parent_cpu
                } else {
                    least_loaded(w, t, &(0..w.m.ncpus).collect::<Vec<_>>()).unwrap_or(0)
                };
                if self.home(t).is_none() {
                    self.set_home(t, w.node_of(c));
                }
                c
            }
            Placement::Wake { .. } => {
                let prev = w.tasks[t].cpu;
                if w.allowed(t, prev) {
                    prev
                } else {
                    least_loaded(w, t, &(0..w.m.ncpus).collect::<Vec<_>>()).unwrap_or(prev)
                }
            }
        }
    }

    fn tick(&mut self, w: &mut World) {
        if self.dynamic && w.now >= self.next_dynamic {
            self.update_dynamic(w);
            self.next_dynamic = w.now + self.node_ns;
        }
        for cpu in 0..w.m.ncpus {
            let idle = w.cpus[cpu].is_idle();
            if w.now >= self.next[cpu] {
                self.balance_node(w, cpu);
                self.next[cpu] = w.now + if idle { self.idle_ns } else { self.busy_ns };
            }
            let idle = w.cpus[cpu].is_idle();
            if idle {
                let idle_for = w.now.saturating_sub(w.cpus[cpu].idle_since);
                if w.now >= self.next_node[cpu] {
                    self.balance_remote(w, cpu, Some(idle_for));
                    self.next_node[cpu] = w.now + self.idle_ns;
                }
            } else if w.now >= self.next_node[cpu] {
                self.balance_remote(w, cpu, None);
                self.next_node[cpu] = w.now + self.node_ns;
            }
        }
    }

    /// As 2.5's schedule(), on which Focht's patch sits: a CPU that runs
    /// out of work balances its node at once; one idle all along waits
    /// for its own timer ([`Scheduler::tick`]).
    fn idle(&mut self, w: &mut World, cpu: CpuId) {
        self.balance_node(w, cpu);
    }

    fn slice_ns(&self, _w: &World, _cpu: CpuId) -> u64 {
        self.slice_ns
    }
}
