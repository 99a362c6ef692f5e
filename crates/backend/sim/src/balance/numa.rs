//! What automatic NUMA balancing does with an observed access, whether it
//! came from a hinting fault or a hardware sample (kernel/sched/fair.c
//! task_numa_fault, task_numa_placement, task_numa_migrate;
//! mm/mempolicy.c should_numa_migrate_memory):
//!
//! - the access counts for the task per memory node, private when the
//!   page's last accessor was this task (or nobody), shared otherwise; a
//!   shared access puts the task in its process's numa group;
//! - the page migrates to the accessing task's node unless the previous
//!   access came from a different node (the two-reference filter; a page
//!   nobody has faulted on yet migrates at once), or its memory is bound
//!   (MPOL_BIND: mm/mempolicy.c mpol_misplaced leaves it);
//! - at each placement the counts decay by half, the preferred node becomes
//!   the node with most (group) faults, and a task away from it moves there
//!   (to an idle CPU) or swaps with a task there when both gain.

use crate::engine::{rand_unit, TaskId, World, NO_NODE};

pub const NONE32: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub struct TaskNuma {
    /// Decayed faults per node (private + shared).
    pub faults: Vec<f64>,
    /// Faults since the last placement.
    pub buf: Vec<f64>,
    pub private: u64,
    pub shared: u64,
    pub local: u64,
    pub remote: u64,
    pub in_group: bool,
    pub migrate_retry: u64,
}

#[derive(Debug, Clone)]
pub struct NumaCommon {
    pub tasks: Vec<TaskNuma>,
    pub nnodes: usize,
    /// System time to migrate 1 MiB (charged per page by its size).
    pub migrate_ns_per_mb: f64,
    pub filter: bool,
    /// Group fault sums per process, with the time they were computed.
    group_cache: Vec<(u64, Vec<f64>)>,
}

impl NumaCommon {
    pub fn new(nnodes: usize, migrate_ns_per_mb: f64, filter: bool) -> NumaCommon {
        NumaCommon {
            tasks: Vec::new(),
            nnodes,
            migrate_ns_per_mb,
            filter,
            group_cache: Vec::new(),
        }
    }

    pub fn ensure(&mut self, n: usize) {
        while self.tasks.len() < n {
            self.tasks.push(TaskNuma {
                faults: vec![0.0; self.nnodes],
                buf: vec![0.0; self.nnodes],
                ..Default::default()
            });
        }
    }

    /// Task `t` accessed chunk `c` (a hinting fault or a sample).
    pub fn access(&mut self, w: &mut World, t: TaskId, c: usize, hint_fault: bool) {
        self.ensure(w.tasks.len());
        let dn = w.task_node(t);
        let sn = w.mem.node[c];
        if sn == NO_NODE {
            return;
        }
        let sn = sn as usize;
        let last_t = w.mem.last_task[c];
        let private = last_t == NONE32 || last_t as usize == t;
        let tn = &mut self.tasks[t];
        tn.buf[sn] += 1.0;
        if private {
            tn.private += 1;
        } else {
            tn.shared += 1;
            if w.tasks[last_t as usize].process == w.tasks[t].process {
                tn.in_group = true;
            }
        }
        if sn == dn {
            tn.local += 1;
        } else {
            tn.remote += 1;
        }
        if hint_fault {
            w.stats.hint_faults += 1;
            if sn == dn {
                w.stats.hint_faults_local += 1;
            }
        } else {
            w.stats.samples += 1;
        }
        // A page bound by MPOL_BIND stays where it is (mpol_misplaced);
        // the access still counts.
        let bound = w.mem.regions[w.mem.region_of[c] as usize].bound;
        if sn != dn && !bound {
            let last = w.mem.last_node[c];
            let pass = !self.filter || last == NO_NODE || last as usize == dn;
            if pass && w.mem.migrate(c, dn) {
                w.stats.pages_migrated += w.mem.chunk_pages();
                let mb = w.mem.chunk_bytes as f64 / (1 << 20) as f64;
                w.charge_sys(t, self.migrate_ns_per_mb * mb);
            }
        }
        w.mem.last_node[c] = dn as u16;
        w.mem.last_task[c] = t as u32;
    }

    /// Faults of `t` per node as fractions (group faults for grouped tasks).
    pub fn weights(&mut self, w: &World, t: TaskId) -> Vec<f64> {
        let mut v = vec![0.0; self.nnodes];
        if self.tasks[t].in_group {
            let p = w.tasks[t].process;
            if self.group_cache.len() <= p {
                self.group_cache.resize(p + 1, (u64::MAX, Vec::new()));
            }
            if self.group_cache[p].0 != w.now {
                let mut g = vec![0.0; self.nnodes];
                for (i, o) in self.tasks.iter().enumerate() {
                    if i < w.tasks.len() && o.in_group && w.tasks[i].process == p {
                        for n in 0..self.nnodes {
                            g[n] += o.faults[n];
                        }
                    }
                }
                self.group_cache[p] = (w.now, g);
            }
            v.copy_from_slice(&self.group_cache[p].1);
        } else {
            let tn = &self.tasks[t];
            v.copy_from_slice(&tn.faults);
        }
        let s: f64 = v.iter().sum();
        if s > 0.0 {
            for x in v.iter_mut() {
                *x /= s;
            }
        }
        v
    }

    /// task_numa_placement: decay, choose the preferred node, maybe move.
    pub fn placement(&mut self, w: &mut World, t: TaskId) {
        self.ensure(w.tasks.len());
        let tn = &mut self.tasks[t];
        for n in 0..self.nnodes {
            tn.faults[n] = tn.faults[n] / 2.0 + tn.buf[n];
            tn.buf[n] = 0.0;
        }
        // The group sums include this task's new counts.
        if let Some(g) = self.group_cache.get_mut(w.tasks[t].process) {
            g.0 = u64::MAX;
        }
        let wts = self.weights(w, t);
        if wts.iter().all(|&x| x == 0.0) {
            return;
        }
        let cur = w.tasks[t].preferred_node.unwrap_or(w.task_node(t));
        let mut best = cur;
        for (n, &x) in wts.iter().enumerate() {
            if x > wts[best] {
                best = n;
            }
        }
        w.tasks[t].preferred_node = Some(best);
        self.migrate_preferred(w, t);
    }

    /// Move `t` to its preferred node: an idle allowed CPU there, else a
    /// swap with a task there when the pair's fault locality improves.
    pub fn migrate_preferred(&mut self, w: &mut World, t: TaskId) -> bool {
        let Some(p) = w.tasks[t].preferred_node else {
            return false;
        };
        let src_cpu = w.tasks[t].cpu;
        let src = w.m.cpu_node[src_cpu];
        if src == p || w.tasks[t].is_done() {
            return false;
        }
        self.tasks[t].migrate_retry = w.now + 1_000_000_000;
        let cpus = w.m.node_cpus[p].clone();
        if let Some(&c) = cpus
            .iter()
            .find(|&&c| w.cpus[c].is_idle() && w.allowed(t, c))
        {
            if w.migrate(t, c) {
                w.stats.numa_task_moves += 1;
                return true;
            }
        }
        let wt = self.weights(w, t);
        let mut best: Option<(f64, TaskId, usize)> = None;
        for &c in &cpus {
            let cand = w.cpus[c]
                .curr
                .into_iter()
                .chain(w.cpus[c].queue.iter().copied());
            for s in cand.collect::<Vec<_>>() {
                if s >= self.tasks.len() || !w.allowed(s, src_cpu) || !w.allowed(t, c) {
                    continue;
                }
                let ws = self.weights(w, s);
                let gain = (wt[p] - wt[src]) + (ws[src] - ws[p]);
                if gain > 0.0 && best.is_none_or(|b| gain > b.0) {
                    best = Some((gain, s, c));
                }
            }
        }
        if let Some((_, s, c)) = best {
            let ok1 = w.migrate(t, c);
            let ok2 = w.migrate(s, src_cpu);
            if ok1 && ok2 {
                w.stats.numa_swaps += 1;
                return true;
            }
        }
        false
    }

    /// Retry moves of running tasks away from their preferred node.
    pub fn retry_moves(&mut self, w: &mut World) {
        self.ensure(w.tasks.len());
        for cpu in 0..w.m.ncpus {
            if let Some(t) = w.cpus[cpu].curr {
                if let Some(p) = w.tasks[t].preferred_node {
                    if p != w.m.cpu_node[cpu] && w.now >= self.tasks[t].migrate_retry {
                        self.migrate_preferred(w, t);
                    }
                }
            }
        }
    }
}

/// Poisson-ish count: floor(x) plus one more with probability frac(x).
pub fn draw_count(w: &mut World, x: f64) -> u64 {
    let base = x.floor();
    let extra = (rand_unit(&mut w.rng) < x - base) as u64;
    base as u64 + extra
}
