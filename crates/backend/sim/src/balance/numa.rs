//! What automatic NUMA balancing does with an observed access, whether it
//! came from a hinting fault or a hardware sample. The rules follow the
//! kernel's kernel/sched/fair.c (6.x; mm/mempolicy.c in older kernels);
//! the functions named here are the kernel's.
//!
//! **The fault** (do_numa_page, then task_numa_fault):
//!
//! - should_numa_migrate_memory decides whether the page moves to the
//!   faulting task's node: early in a task's life (no preferred node yet,
//!   or at most 4 completed scan passes, `p->numa_scan_seq <= 4`) a page
//!   nobody else touched last moves at once; otherwise a page whose
//!   previous fault came from another node stays (the two-reference
//!   filter, "cpupid"); a private page (same task last) moves; a shared
//!   page of a task with no numa group moves; a shared page of a grouped
//!   task moves only when the destination node has more than
//!   ACTIVE_NODE_FRACTION (3) times the group's CPU-side faults of the
//!   source, or when, with 3/4 hysteresis, the destination's ratio of
//!   CPU-side to memory-side group faults beats the source's. Memory
//!   bound by MPOL_BIND stays (mpol_misplaced).
//! - The fault is counted for the task: on the node where the page now is
//!   (numa_faults, memory side, private or shared), on the node of the CPU
//!   that faulted (numa_faults_cpu), and as local or remote (a shared
//!   fault between two of the group's active nodes counts as local). A
//!   shared fault on a page another thread of the process touched last
//!   puts the task in its process's numa group (task_numa_group). A
//!   fault counts the chunk's pages, as a THP fault counts HPAGE_PMD_NR.
//! - When `p->numa_migrate_retry` has passed, task_numa_placement and
//!   numa_migrate_preferred run.
//!
//! **task_numa_placement** (once per completed scan pass,
//! `mm->numa_scan_seq`): the memory-side counts decay by half and take
//! the new faults; the CPU-side counts likewise, the new ones weighted by
//! the share of the period the task ran (numa_get_avg_runtime); group
//! counts follow their members'; the group's active nodes are those with
//! more than a third of its busiest node's CPU-side faults
//! (numa_group_count_active_nodes); the preferred node is the node with
//! most (group) memory faults, for a group refined by the machine's
//! topology (preferred_group_nid); and the scan period adapts
//! (update_task_scan_period).
//!
//! **numa_migrate_preferred**: retried every min(1 s, scan period / 16);
//! a task away from its preferred node tries task_numa_migrate: the load
//! of both nodes (running tasks against CPUs, numa_classify); a move to an
//! idle CPU when the destination has spare capacity and the move leaves
//! the nodes within the allowed imbalance (adjust_numa_imbalance with
//! imb_numa_nr), or when it does not make the load imbalance worse
//! (load_too_imbalanced); otherwise a swap with a task there
//! (task_numa_compare) when the pair gains at least SMALLIMP (30 of 1000)
//! in fault share (task_weight / group_weight, with the faults of nearby
//! nodes on machines whose nodes are not all directly connected), with
//! 1/16 hysteresis within a group, no swaps within a group while the
//! destination has spare capacity, a bonus for a partner that moves to its
//! own preferred node; other nodes are tried when the preferred node has
//! no room or the group spans several active nodes, and a grouped task
//! takes the node it settles on as its new preferred node.

use crate::engine::{CpuId, TaskId, World, NO_NODE};
use crate::machine::Machine;

pub const NONE32: u32 = u32::MAX;

/// Index of shared and private faults (the kernel's `priv`).
const SHARED: usize = 0;
const PRIVATE: usize = 1;

/// numa_is_active_node: a node with more than 1/3 of the busiest node's
/// CPU-side group faults is active.
const ACTIVE_NODE_FRACTION: f64 = 3.0;
/// task_numa_compare: the smallest improvement (of 1998) worth a swap.
const SMALLIMP: i64 = 30;
/// adjust_numa_imbalance: an imbalance this small is allowed while the
/// destination is lightly loaded.
const NUMA_IMBALANCE_MIN: i64 = 2;
/// update_task_scan_period.
const NUMA_PERIOD_SLOTS: f64 = 10.0;
const NUMA_PERIOD_THRESHOLD: f64 = 7.0;
/// SLIT distance of a node to itself.
const LOCAL_DISTANCE: u32 = 10;

/// sched_numa_topology_type (init_numa_topology_type in
/// kernel/sched/topology.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumaTopology {
    /// At most one remote distance: all nodes directly connected.
    Direct,
    /// The two farthest nodes have a node between them.
    GluelessMesh,
    /// The farthest nodes are connected only through a backplane.
    Backplane,
}

impl NumaTopology {
    pub fn of(d: &[Vec<u32>]) -> NumaTopology {
        let mut levels: Vec<u32> = d.iter().flatten().copied().collect();
        levels.sort_unstable();
        levels.dedup();
        if levels.len() <= 2 {
            return NumaTopology::Direct;
        }
        let max = *levels.last().expect("distances");
        let n = d.len();
        for a in 0..n {
            for b in 0..n {
                if d[a][b] < max {
                    continue;
                }
                if (0..n).any(|c| d[a][c] < max && d[b][c] < max) {
                    return NumaTopology::GluelessMesh;
                }
                return NumaTopology::Backplane;
            }
        }
        NumaTopology::Direct
    }
}

#[derive(Debug, Clone, Default)]
pub struct TaskNuma {
    /// Decayed memory-side faults per node, [shared, private] (NUMA_MEM).
    pub mem: [Vec<f64>; 2],
    mem_buf: [Vec<f64>; 2],
    /// Decayed CPU-side faults per node, weighted by CPU use (NUMA_CPU).
    pub cpu: Vec<f64>,
    cpu_buf: Vec<f64>,
    /// total_numa_faults: the memory-side faults summed.
    pub total_faults: f64,
    pub has_faults: bool,
    /// numa_faults_locality: remote, local and failed-migration pages.
    locality: [f64; 3],
    pub in_group: bool,
    left_group: bool,
    /// p->numa_migrate_retry (ns).
    pub migrate_retry: u64,
    /// p->numa_scan_seq: the process's pass count at the last placement.
    pub scan_seq: u64,
    /// p->numa_scan_period (ms); 0 until the balancer starts the task.
    pub scan_period_ms: f64,
    /// Hardware access hints (the IBS RFC): p->numa_sample_period (ops
    /// per sample; 0 until the balancer starts the task), and
    /// p->numa_access_faults and p->numa_access_faults_window.
    pub sample_period: f64,
    access_faults: u64,
    access_window: u64,
    scan_period_max_ms: f64,
    /// numa_get_avg_runtime: time and runtime at the last placement.
    last_placement: Option<(u64, f64)>,
}

/// struct numa_group: the summed counts of a process's grouped tasks.
#[derive(Debug, Clone, Default)]
pub struct NumaGroup {
    pub mem: [Vec<f64>; 2],
    pub cpu: Vec<f64>,
    pub total_faults: f64,
    pub max_faults_cpu: f64,
    pub active_nodes: usize,
    pub nr_tasks: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// struct numa_stats: a node's load as task_numa_migrate sees it. Every
/// runnable task has the same load (nice 0) in the model.
#[derive(Debug, Clone, Copy)]
struct NumaStats {
    load: f64,
    util: f64,
    nr_running: i64,
    capacity: f64,
    node_type: NodeType,
    idle_cpu: Option<CpuId>,
}

/// struct task_numa_env.
struct Env {
    p: TaskId,
    src_cpu: CpuId,
    src_nid: usize,
    dst_cpu: CpuId,
    dst_nid: usize,
    src_stats: NumaStats,
    dst_stats: NumaStats,
    dist: u32,
    best_task: Option<TaskId>,
    best_imp: i64,
    best_cpu: Option<CpuId>,
}

#[derive(Debug, Clone)]
pub struct NumaCommon {
    pub tasks: Vec<TaskNuma>,
    /// The numa group of each process.
    pub groups: Vec<NumaGroup>,
    pub nnodes: usize,
    migrate_ns_per_mb: f64,
    filter: bool,
    topology: NumaTopology,
    distances: Vec<Vec<u32>>,
    max_distance: u32,
    /// sd->imb_numa_nr of the lowest NUMA domain.
    imb_numa_nr: i64,
    /// env.imbalance_pct (task_numa_migrate): 112, or with a NUMA
    /// scheduling domain 100 + (its imbalance_pct - 100) / 2, in integers.
    imbalance_pct: f64,
    /// Per process: mm->numa_scan_seq (bumped by the balancer at the end
    /// of each pass) and mm->numa_next_scan (ns).
    pub scan_seq: Vec<u64>,
    pub next_scan: Vec<u64>,
    /// Per process: task_scan_min and task_scan_max before the group's
    /// scaling (ms), kept current by the balancer.
    pub scan_bounds: Vec<(f64, f64)>,
    /// Whether placement adapts the scan period (update_task_scan_period).
    adapt_period: bool,
    /// Hardware access hints instead of scanning (the IBS RFC's
    /// hw_access_hints static key).
    hw: Option<HwHints>,
    /// numa_migrate_preferred moves tasks (task_numa_migrate); false when
    /// another rule moves them (AutoNUMA25's task exchange).
    pub task_moves: bool,
}

/// The IBS RFC's sysctls (Rao, "[RFC PATCH 4/5] x86/ibs: Adjust access
/// faults sampling period", LKML, Feb 2023).
#[derive(Debug, Clone, Copy)]
pub struct HwHints {
    /// sysctl_numa_balancing_access_faults_threshold (250): placement
    /// once per this many counted accesses.
    pub threshold: u64,
    /// sysctl_numa_balancing_sample_period_min / _max (5000, 20000).
    pub period_min: f64,
    pub period_max: f64,
}

impl NumaCommon {
    pub fn new(m: &Machine, migrate_ns_per_mb: f64, filter: bool, adapt: bool) -> NumaCommon {
        let max_distance = m.distances.iter().flatten().copied().max().unwrap_or(10);
        NumaCommon {
            tasks: Vec::new(),
            groups: Vec::new(),
            nnodes: m.nnodes,
            migrate_ns_per_mb,
            filter,
            topology: NumaTopology::of(&m.distances),
            distances: m.distances.clone(),
            max_distance,
            imb_numa_nr: imb_numa_nr(m),
            imbalance_pct: 112.0,
            scan_seq: Vec::new(),
            next_scan: Vec::new(),
            scan_bounds: Vec::new(),
            adapt_period: adapt,
            hw: None,
            task_moves: true,
        }
    }

    /// Placement driven by hardware access hints (the IBS RFC).
    pub fn set_hw_hints(&mut self, hw: HwHints) {
        self.hw = Some(hw);
    }

    pub fn topology(&self) -> NumaTopology {
        self.topology
    }

    /// task_numa_migrate: env.imbalance_pct from the scheduler's NUMA
    /// domain (sd_numa), 100 + (sd->imbalance_pct - 100) / 2 in integer
    /// arithmetic; 112 when the scheduler has no domains.
    pub fn set_sd_numa(&mut self, sd_imbalance_pct: Option<f64>) {
        self.imbalance_pct = match sd_imbalance_pct {
            Some(p) => 100.0 + ((p.floor() - 100.0) / 2.0).floor(),
            None => 112.0,
        };
    }

    pub fn imbalance_pct(&self) -> f64 {
        self.imbalance_pct
    }

    #[inline]
    pub fn ensure(&mut self, w: &World) {
        if self.tasks.len() == w.tasks.len() && self.groups.len() >= w.mem.proc_node.len() {
            return;
        }
        self.grow(w);
    }

    #[inline(never)]
    fn grow(&mut self, w: &World) {
        let nn = self.nnodes;
        while self.tasks.len() < w.tasks.len() {
            self.tasks.push(TaskNuma {
                mem: [vec![0.0; nn], vec![0.0; nn]],
                mem_buf: [vec![0.0; nn], vec![0.0; nn]],
                cpu: vec![0.0; nn],
                cpu_buf: vec![0.0; nn],
                ..Default::default()
            });
        }
        let np = w
            .mem
            .proc_node
            .len()
            .max(w.tasks.iter().map(|t| t.process + 1).max().unwrap_or(0));
        while self.groups.len() < np {
            self.groups.push(NumaGroup {
                mem: [vec![0.0; nn], vec![0.0; nn]],
                cpu: vec![0.0; nn],
                active_nodes: 1,
                ..Default::default()
            });
        }
        if self.scan_seq.len() < np {
            self.scan_seq.resize(np, 0);
            self.next_scan.resize(np, 0);
            self.scan_bounds.resize(np, (1000.0, 60000.0));
        }
    }

    /// task_numa_free: a finished task's counts leave its group.
    pub fn reap(&mut self, w: &World) {
        for t in 0..self.tasks.len().min(w.tasks.len()) {
            let tn = &self.tasks[t];
            if !tn.in_group || tn.left_group || !w.tasks[t].is_done() {
                continue;
            }
            let g = &mut self.groups[w.tasks[t].process];
            let tn = &mut self.tasks[t];
            for n in 0..self.nnodes {
                for k in 0..2 {
                    g.mem[k][n] -= tn.mem[k][n];
                }
                g.cpu[n] -= tn.cpu[n];
            }
            g.total_faults -= tn.total_faults;
            g.nr_tasks = g.nr_tasks.saturating_sub(1);
            tn.left_group = true;
        }
    }

    fn grouped(&self, t: TaskId) -> bool {
        let tn = &self.tasks[t];
        tn.in_group && !tn.left_group
    }

    fn task_faults(&self, t: TaskId, n: usize) -> f64 {
        let tn = &self.tasks[t];
        tn.mem[SHARED][n] + tn.mem[PRIVATE][n]
    }

    /// The task's memory-side faults on node `n`: the decayed counts and
    /// those of the pass under way (AutoNUMA25's task_numa_fault[nid],
    /// halved at each new pass and counting every fault at once).
    pub fn faults_on(&self, t: TaskId, n: usize) -> f64 {
        let tn = &self.tasks[t];
        self.task_faults(t, n) + tn.mem_buf[SHARED][n] + tn.mem_buf[PRIVATE][n]
    }

    fn group_faults(&self, w: &World, t: TaskId, n: usize) -> f64 {
        if !self.grouped(t) {
            return 0.0;
        }
        let g = &self.groups[w.tasks[t].process];
        (g.mem[SHARED][n] + g.mem[PRIVATE][n]).max(0.0)
    }

    /// score_nearby_nodes: faults of the nodes near `nid`, on machines
    /// whose nodes are not all directly connected.
    fn score_nearby(&self, w: &World, t: TaskId, nid: usize, lim_dist: u32, task: bool) -> f64 {
        if self.topology == NumaTopology::Direct {
            return 0.0;
        }
        let max = self.max_distance;
        let mut score = 0.0;
        for node in 0..self.nnodes {
            let dist = self.distances[nid][node];
            if dist >= max || node == nid {
                continue;
            }
            if self.topology == NumaTopology::Backplane && dist >= lim_dist {
                continue;
            }
            let mut faults = if task {
                self.task_faults(t, node)
            } else {
                self.group_faults(w, t, node)
            };
            if self.topology == NumaTopology::GluelessMesh {
                faults *= (max - dist) as f64 / (max - LOCAL_DISTANCE) as f64;
            }
            score += faults;
        }
        score
    }

    /// task_weight: the task's share of its faults on (and near) `nid`,
    /// in thousandths.
    fn task_weight(&self, w: &World, t: TaskId, nid: usize, dist: u32) -> i64 {
        let tn = &self.tasks[t];
        if !tn.has_faults || tn.total_faults <= 0.0 {
            return 0;
        }
        let f = self.task_faults(t, nid) + self.score_nearby(w, t, nid, dist, true);
        (1000.0 * f / tn.total_faults) as i64
    }

    /// group_weight: the same for the task's numa group.
    fn group_weight(&self, w: &World, t: TaskId, nid: usize, dist: u32) -> i64 {
        if !self.grouped(t) {
            return 0;
        }
        let total = self.groups[w.tasks[t].process].total_faults;
        if total <= 0.0 {
            return 0;
        }
        let f = self.group_faults(w, t, nid) + self.score_nearby(w, t, nid, dist, false);
        (1000.0 * f / total) as i64
    }

    /// A task accessed chunk `c`: a hinting fault (do_numa_page) or a
    /// sample fed through the same path.
    pub fn access(&mut self, w: &mut World, t: TaskId, c: usize, hint_fault: bool) {
        self.ensure(w);
        let cpu_node = w.task_node(t);
        let ch = w.mem.chunks[c];
        let sn = ch.node;
        if sn == NO_NODE {
            return;
        }
        let page_nid = sn as usize;
        let pages = w.mem.chunk_pages() as f64;
        let (last_t, last_n) = (ch.last_task, ch.last_node);
        let local = page_nid == cpu_node;
        if hint_fault {
            w.stats.hint_faults += 1;
            if local {
                w.stats.hint_faults_local += 1;
            }
        } else {
            w.stats.samples += 1;
        }
        // mpol_misplaced: memory bound by MPOL_BIND stays; otherwise
        // should_numa_migrate_memory decides (and records this access).
        let bound = w.mem.regions[ch.region as usize].bound;
        let mut mem_node = page_nid;
        let mut failed = false;
        if !bound
            && (!self.filter
                || self.should_migrate_memory(w, t, page_nid, cpu_node, last_t, last_n))
            && !local
        {
            if w.mem.migrate(c, cpu_node) {
                mem_node = cpu_node;
                w.stats.pages_migrated += w.mem.chunk_pages();
                let mb = w.mem.chunk_bytes as f64 / (1 << 20) as f64;
                w.charge_sys(t, self.migrate_ns_per_mb * mb);
            } else {
                failed = true;
            }
        }
        let ch = &mut w.mem.chunks[c];
        ch.last_node = cpu_node as u16;
        ch.last_task = t as u32;
        self.task_numa_fault(w, t, last_t, mem_node, cpu_node, pages, local, failed);
    }

    /// should_numa_migrate_memory: move the page from `src` to `dst`, the
    /// faulting task's node? `last_t`/`last_n` are the page's last cpupid.
    fn should_migrate_memory(
        &self,
        w: &World,
        t: TaskId,
        src: usize,
        dst: usize,
        last_t: u32,
        last_n: u16,
    ) -> bool {
        let tn = &self.tasks[t];
        let unset = last_t == NONE32;
        let mine = last_t as usize == t;
        // First faults and private faults early in the task's life: the
        // first 4 scan passes, or with hardware hints the first 4 x
        // threshold counted accesses (the IBS RFC's
        // should_numa_migrate_memory).
        let early = match self.hw {
            Some(hw) => tn.access_faults < 4 * hw.threshold,
            None => tn.scan_seq <= 4,
        };
        if (w.tasks[t].preferred_node.is_none() || early) && (unset || mine) {
            return true;
        }
        // The two-reference filter.
        if !unset && last_n as usize != dst {
            return false;
        }
        if mine {
            return true;
        }
        // A shared fault, but no numa group yet.
        if !self.grouped(t) {
            return true;
        }
        let g = &self.groups[w.tasks[t].process];
        let (cd, cs) = (g.cpu[dst].max(0.0), g.cpu[src].max(0.0));
        if cd > cs * ACTIVE_NODE_FRACTION {
            return true;
        }
        let (md, ms) = (self.group_faults(w, t, dst), self.group_faults(w, t, src));
        cd * ms * 3.0 > cs * md * 4.0
    }

    /// task_numa_fault.
    #[allow(clippy::too_many_arguments)]
    fn task_numa_fault(
        &mut self,
        w: &mut World,
        t: TaskId,
        last_t: u32,
        mem_node: usize,
        cpu_node: usize,
        pages: f64,
        mut local: bool,
        failed: bool,
    ) {
        // First accesses count as private, then private when the same
        // task touched the page last.
        let private = last_t == NONE32 || last_t as usize == t;
        if !private {
            self.task_numa_group(w, t, last_t as usize);
        }
        if !private && !local && self.grouped(t) {
            let g = &self.groups[w.tasks[t].process];
            if g.active_nodes > 1 && is_active(g, cpu_node) && is_active(g, mem_node) {
                local = true;
            }
        }
        if w.now > self.tasks[t].migrate_retry {
            self.placement(w, t);
            self.migrate_preferred(w, t);
        }
        let tn = &mut self.tasks[t];
        tn.has_faults = true;
        tn.mem_buf[private as usize][mem_node] += pages;
        tn.cpu_buf[cpu_node] += pages;
        tn.locality[local as usize] += pages;
        if failed {
            tn.locality[2] += pages;
        }
    }

    /// task_numa_group: a shared fault with another thread of the process
    /// puts the task in the process's numa group (its counts join the
    /// group's).
    fn task_numa_group(&mut self, w: &World, t: TaskId, other: TaskId) {
        if self.tasks[t].in_group || other >= w.tasks.len() {
            return;
        }
        let p = w.tasks[t].process;
        if w.tasks[other].process != p {
            return;
        }
        let g = &mut self.groups[p];
        let tn = &mut self.tasks[t];
        for n in 0..self.nnodes {
            for k in 0..2 {
                g.mem[k][n] += tn.mem[k][n];
            }
            g.cpu[n] += tn.cpu[n];
        }
        g.total_faults += tn.total_faults;
        g.nr_tasks += 1;
        tn.in_group = true;
    }

    /// task_scan_start: task_scan_min, scaled up like task_scan_max's
    /// maximum for a group with shared faults.
    pub fn task_scan_start(&self, w: &World, t: TaskId) -> f64 {
        let p = w.tasks[t].process;
        let smin = self.scan_bounds[p].0;
        smin.max(self.group_scaled(w, t, smin))
    }

    /// `period` scaled by the task's numa group: times its tasks, times
    /// its share of shared faults (task_scan_start, task_scan_max).
    fn group_scaled(&self, w: &World, t: TaskId, period: f64) -> f64 {
        if !self.grouped(t) {
            return period;
        }
        let g = &self.groups[w.tasks[t].process];
        let shared: f64 = g.mem[SHARED].iter().sum::<f64>().max(0.0);
        let private: f64 = g.mem[PRIVATE].iter().sum::<f64>().max(0.0);
        period * g.nr_tasks as f64 * (shared + 1.0) / (private + shared + 1.0)
    }

    /// task_scan_max, scaled up for a group with shared faults.
    pub fn task_scan_max(&self, w: &World, t: TaskId) -> f64 {
        let p = w.tasks[t].process;
        let (smin, smax) = self.scan_bounds[p];
        smin.max(smax.max(self.group_scaled(w, t, smax)))
    }

    /// task_numa_placement: once per completed scan pass of the process.
    pub fn placement(&mut self, w: &mut World, t: TaskId) {
        let p = w.tasks[t].process;
        if let Some(hw) = self.hw {
            // The IBS RFC's task_numa_placement: a window of counted
            // accesses instead of a scan pass. Only accesses that reach
            // it count, those after p->numa_migrate_retry.
            let tn = &mut self.tasks[t];
            tn.access_window += 1;
            tn.access_faults += 1;
            if tn.access_window < hw.threshold {
                return;
            }
            tn.access_window = 0;
        } else {
            let seq = self.scan_seq[p];
            if self.tasks[t].scan_seq == seq {
                return;
            }
            self.tasks[t].scan_seq = seq;
            self.tasks[t].scan_period_max_ms = self.task_scan_max(w, t);
        }
        // numa_get_avg_runtime: the share of the period the task ran.
        let runtime = w.tasks[t].user_ns + w.tasks[t].sys_ns;
        let (delta, period) = match self.tasks[t].last_placement {
            Some((at, rt)) => (runtime - rt, w.now.saturating_sub(at) as f64),
            None => (runtime, w.now.saturating_sub(w.tasks[t].start_ns) as f64),
        };
        self.tasks[t].last_placement = Some((w.now, runtime));
        let cpu_share = delta.max(0.0) / (period + 1.0);
        let grouped = self.grouped(t);
        let nn = self.nnodes;
        let g = &mut self.groups[p];
        let tn = &mut self.tasks[t];
        let total = tn.locality[0] + tn.locality[1];
        let mut fault_types = [0.0; 2];
        let (mut max_faults, mut max_nid) = (0.0, None);
        for n in 0..nn {
            let mut faults = 0.0;
            let mut gfaults = 0.0;
            for k in 0..2 {
                let diff = tn.mem_buf[k][n] - tn.mem[k][n] / 2.0;
                fault_types[k] += tn.mem_buf[k][n];
                tn.mem_buf[k][n] = 0.0;
                tn.mem[k][n] += diff;
                tn.total_faults += diff;
                faults += tn.mem[k][n];
                if grouped {
                    g.mem[k][n] += diff;
                    g.total_faults += diff;
                    gfaults += g.mem[k][n];
                }
            }
            // CPU-side faults count by CPU use, not by their number.
            let f_weight = cpu_share * 65536.0 * tn.cpu_buf[n] / (total + 1.0);
            let f_diff = f_weight - tn.cpu[n] / 2.0;
            tn.cpu_buf[n] = 0.0;
            tn.cpu[n] += f_diff;
            if grouped {
                g.cpu[n] += f_diff;
            }
            let f = if grouped { gfaults } else { faults };
            if f > max_faults {
                max_faults = f;
                max_nid = Some(n);
            }
        }
        if grouped {
            count_active_nodes(g);
        }
        if let Some(mut nid) = max_nid {
            if grouped {
                nid = self.preferred_group_nid(w, t, nid);
            }
            w.tasks[t].preferred_node = Some(nid);
        }
        if let Some(hw) = self.hw {
            self.update_task_sample_period(t, hw, fault_types[SHARED], fault_types[PRIVATE]);
        } else if self.adapt_period {
            self.update_task_scan_period(w, t, fault_types[SHARED], fault_types[PRIVATE]);
        }
    }

    /// preferred_group_nid: on machines whose nodes are not all directly
    /// connected, the node (group of nodes) with most group faults.
    fn preferred_group_nid(&self, w: &World, t: TaskId, nid: usize) -> usize {
        match self.topology {
            NumaTopology::Direct => nid,
            NumaTopology::GluelessMesh => {
                let (mut max_score, mut max_node) = (0, nid);
                for node in 0..self.nnodes {
                    let score = self.group_weight(w, t, node, self.max_distance);
                    if score > max_score {
                        max_score = score;
                        max_node = node;
                    }
                }
                max_node
            }
            NumaTopology::Backplane => {
                let d = &self.distances;
                let mut nid = nid;
                let mut nodes: Vec<bool> = vec![true; self.nnodes];
                let mut dist = self.max_distance;
                while dist > LOCAL_DISTANCE {
                    let exists = d.iter().flatten().any(|&x| x == dist);
                    if !exists {
                        dist -= 1;
                        continue;
                    }
                    let mut max_faults = 0.0;
                    let mut max_group = vec![false; self.nnodes];
                    for a in 0..self.nnodes {
                        if !nodes[a] {
                            continue;
                        }
                        let mut faults = 0.0;
                        let mut this_group = vec![false; self.nnodes];
                        for b in 0..self.nnodes {
                            if nodes[b] && d[a][b] < dist {
                                faults += self.group_faults(w, t, b);
                                this_group[b] = true;
                                nodes[b] = false;
                            }
                        }
                        if faults > max_faults {
                            max_faults = faults;
                            max_group = this_group;
                            nid = a;
                        }
                    }
                    if max_faults == 0.0 {
                        break;
                    }
                    nodes = max_group;
                    dist -= 1;
                }
                nid
            }
        }
    }

    /// update_task_scan_period: slower when 7 of 10 faults are private or
    /// local, faster otherwise; twice as slow with no faults or when a
    /// migration failed (the kernel keeps the failure count until the
    /// next period adaptation that gets past this test).
    fn update_task_scan_period(&mut self, w: &World, t: TaskId, shared: f64, private: f64) {
        let p = w.tasks[t].process;
        let smin = self.scan_bounds[p].0;
        let smax = self.tasks[t].scan_period_max_ms;
        let tn = &mut self.tasks[t];
        let (remote, local) = (tn.locality[0], tn.locality[1]);
        let period = tn.scan_period_ms;
        if local + shared == 0.0 || tn.locality[2] > 0.0 {
            tn.scan_period_ms = (period * 2.0).min(smax);
            self.next_scan[p] = w.now + (tn.scan_period_ms * 1e6) as u64;
            return;
        }
        let diff = period_change(period, remote, local, private, shared);
        tn.scan_period_ms = (period + diff).clamp(smin, smax.max(smin));
        tn.locality = [0.0; 3];
    }

    /// The IBS RFC's update_task_sample_period: the rule of
    /// update_task_scan_period on p->numa_sample_period, clamped to
    /// [period_min, period_max] (a longer period, fewer samples).
    fn update_task_sample_period(&mut self, t: TaskId, hw: HwHints, shared: f64, private: f64) {
        let tn = &mut self.tasks[t];
        let (remote, local) = (tn.locality[0], tn.locality[1]);
        let period = tn.sample_period;
        if local + shared == 0.0 || tn.locality[2] > 0.0 {
            tn.sample_period = (period * 2.0).min(hw.period_max);
            return;
        }
        let diff = period_change(period, remote, local, private, shared);
        tn.sample_period = (period + diff).clamp(hw.period_min, hw.period_max);
        tn.locality = [0.0; 3];
    }

    /// numa_migrate_preferred: retried every min(1 s, scan period / 16);
    /// with hardware hints the IBS RFC passes the sample period (in ops)
    /// where the scan period (ms) was: min(1 s, 10000 / 16 ms).
    fn migrate_preferred(&mut self, w: &mut World, t: TaskId) {
        let Some(pref) = w.tasks[t].preferred_node else {
            return;
        };
        if !self.tasks[t].has_faults {
            return;
        }
        let period = match self.hw {
            Some(_) => self.tasks[t].sample_period,
            None => self.tasks[t].scan_period_ms,
        };
        let interval_ms = (period / 16.0).floor().min(1000.0);
        self.tasks[t].migrate_retry = w.now + (interval_ms * 1e6) as u64;
        if w.task_node(t) == pref || w.tasks[t].is_done() || !self.task_moves {
            return;
        }
        self.task_numa_migrate(w, t);
    }

    /// update_numa_stats: the node's load, and an idle CPU the task may
    /// use (an idle core first).
    fn numa_stats(&self, w: &World, t: TaskId, nid: usize, find_idle: bool) -> NumaStats {
        let mut s = NumaStats {
            load: 0.0,
            util: 0.0,
            nr_running: 0,
            capacity: 0.0,
            node_type: NodeType::HasSpare,
            idle_cpu: None,
        };
        let mut idle_core = None;
        let cpus = &w.m.node_cpus[nid];
        for &c in cpus {
            let nr = w.cpus[c].nr_running();
            s.load += nr as f64;
            s.nr_running += nr as i64;
            s.util += w.cpus[c].util;
            s.capacity += 1.0;
            if find_idle && idle_core.is_none() && nr == 0 && w.allowed(t, c) {
                if s.idle_cpu.is_none() {
                    s.idle_cpu = Some(c);
                }
                let core = w.m.cpu_core[c];
                if w.m.core_cpus[core].iter().all(|&x| w.cpus[x].is_idle()) {
                    idle_core = Some(c);
                }
            }
        }
        // numa_classify (runnable: every runnable task counts as one).
        let (weight, pct) = (cpus.len() as i64, self.imbalance_pct);
        let runnable = s.nr_running as f64;
        s.node_type = if s.nr_running > weight
            && (s.capacity * 100.0 < s.util * pct || s.capacity * pct < runnable * 100.0)
        {
            NodeType::Overloaded
        } else if s.nr_running < weight
            || (s.capacity * 100.0 > s.util * pct && s.capacity * pct > runnable * 100.0)
        {
            NodeType::HasSpare
        } else {
            NodeType::FullyBusy
        };
        if idle_core.is_some() {
            s.idle_cpu = idle_core;
        }
        s
    }

    /// load_too_imbalanced: would the move make the capacity-weighted
    /// imbalance between the nodes worse?
    fn load_too_imbalanced(env: &Env, src_load: f64, dst_load: f64) -> bool {
        let (sc, dc) = (env.src_stats.capacity, env.dst_stats.capacity);
        let imb = (dst_load * sc - src_load * dc).abs();
        let old = (env.dst_stats.load * sc - env.src_stats.load * dc).abs();
        imb > old
    }

    /// task_numa_assign.
    fn assign(env: &mut Env, cur: Option<TaskId>, imp: i64) {
        env.best_task = cur;
        env.best_imp = imp;
        env.best_cpu = Some(env.dst_cpu);
    }

    /// task_numa_compare for `env.dst_cpu`: is moving there, or swapping
    /// with the task running there, the best option so far? Returns true
    /// to stop the search.
    fn compare(
        &self,
        w: &World,
        env: &mut Env,
        taskimp: i64,
        groupimp: i64,
        maymove: bool,
    ) -> bool {
        let p = env.p;
        let p_ng = self.grouped(p).then(|| w.tasks[p].process);
        let mut imp = if p_ng.is_some() { groupimp } else { taskimp };
        let moveimp = imp;
        let rq = &w.cpus[env.dst_cpu];
        let mut cur = rq.curr.or_else(|| rq.queue.front().copied());
        if cur == Some(p) {
            return true;
        }
        let dist = env.dist;
        let (src, dst) = (env.src_nid, env.dst_nid);
        match cur {
            None => {
                if !(maymove && moveimp >= env.best_imp) {
                    return false;
                }
            }
            Some(c) => {
                if !w.allowed(c, env.src_cpu) {
                    return false;
                }
                let cpref = w.tasks[c].preferred_node;
                let best_pref = env.best_task.map(|b| w.tasks[b].preferred_node);
                // Not moving to its preferred node while the best task is.
                if best_pref == Some(Some(src)) && cpref != Some(src) {
                    return false;
                }
                let cur_ng = self.grouped(c).then(|| w.tasks[c].process);
                if cur_ng == p_ng {
                    // No swaps within a group while there is spare room.
                    if env.dst_stats.node_type == NodeType::HasSpare {
                        return false;
                    }
                    imp = taskimp + self.task_weight(w, c, src, dist)
                        - self.task_weight(w, c, dst, dist);
                    if cur_ng.is_some() {
                        imp -= imp / 16;
                    }
                } else if cur_ng.is_some() && p_ng.is_some() {
                    imp += self.group_weight(w, c, src, dist) - self.group_weight(w, c, dst, dist);
                } else {
                    imp += self.task_weight(w, c, src, dist) - self.task_weight(w, c, dst, dist);
                }
                if cpref == Some(dst) {
                    imp -= imp / 16;
                }
                if cpref == Some(src) {
                    imp += imp / 8;
                }
                let move_better = maymove && moveimp > imp && moveimp > env.best_imp;
                let prefer =
                    env.best_task.is_some() && cpref == Some(src) && best_pref != Some(Some(src));
                if move_better {
                    imp = moveimp;
                    cur = None;
                } else if !prefer && (imp < SMALLIMP || imp <= env.best_imp + SMALLIMP / 2) {
                    return false;
                }
                // Otherwise assign: the loads are equal (nice 0), so a
                // swap leaves the load balance as it is.
            }
        }
        if cur.is_none() {
            let mut cpu = env.dst_stats.idle_cpu.unwrap_or(env.dst_cpu);
            if !w.cpus[cpu].is_idle() {
                if let Some(b) = env.best_cpu.filter(|&b| w.cpus[b].is_idle()) {
                    cpu = b;
                }
            }
            env.dst_cpu = cpu;
        }
        Self::assign(env, cur, imp);
        let best_idle = env.best_cpu.is_some_and(|b| w.cpus[b].is_idle());
        if maymove && cur.is_none() && best_idle {
            return true;
        }
        !maymove
            && env
                .best_task
                .is_some_and(|b| w.tasks[b].preferred_node == Some(src))
    }

    /// task_numa_find_cpu: a move, or the best swap, on `env.dst_nid`.
    fn find_cpu(&self, w: &World, env: &mut Env, taskimp: i64, groupimp: i64) {
        let mut maymove = false;
        if env.dst_stats.node_type == NodeType::HasSpare {
            // Would the move create an imbalance the load balancer would
            // undo? (adjust_numa_imbalance)
            let src_running = env.src_stats.nr_running - 1;
            let dst_running = env.dst_stats.nr_running + 1;
            let mut imbalance = (dst_running - src_running).max(0);
            if dst_running <= self.imb_numa_nr && imbalance <= NUMA_IMBALANCE_MIN {
                imbalance = 0;
            }
            if imbalance == 0 {
                maymove = true;
                if let Some(c) = env.dst_stats.idle_cpu {
                    env.dst_cpu = c;
                    Self::assign(env, None, 0);
                    return;
                }
            }
        } else {
            let dst_load = env.dst_stats.load + 1.0;
            let src_load = env.src_stats.load - 1.0;
            maymove = !Self::load_too_imbalanced(env, src_load, dst_load);
        }
        for &c in &w.m.node_cpus[env.dst_nid] {
            if !w.allowed(env.p, c) {
                continue;
            }
            env.dst_cpu = c;
            if self.compare(w, env, taskimp, groupimp, maymove) {
                break;
            }
        }
    }

    /// task_numa_migrate: move or swap the task towards its preferred
    /// node, or another node where it and its group gain.
    fn task_numa_migrate(&mut self, w: &mut World, t: TaskId) {
        let src_cpu = w.tasks[t].cpu;
        let src_nid = w.m.cpu_node[src_cpu];
        // No NUMA domain to balance in (one node, or a task confined to its
        // node): stay (sched_setnuma to the task's node).
        if self.nnodes < 2 || !(0..w.m.ncpus).any(|c| w.m.cpu_node[c] != src_nid && w.allowed(t, c))
        {
            w.tasks[t].preferred_node = Some(src_nid);
            return;
        }
        let Some(pref) = w.tasks[t].preferred_node else {
            return;
        };
        let d = &self.distances;
        let mut env = Env {
            p: t,
            src_cpu,
            src_nid,
            dst_cpu: src_cpu,
            dst_nid: pref,
            src_stats: self.numa_stats(w, t, src_nid, false),
            dst_stats: self.numa_stats(w, t, pref, true),
            dist: d[src_nid][pref],
            best_task: None,
            best_imp: 0,
            best_cpu: None,
        };
        let mut dist = env.dist;
        let mut taskweight = self.task_weight(w, t, src_nid, dist);
        let mut groupweight = self.group_weight(w, t, src_nid, dist);
        let taskimp = self.task_weight(w, t, pref, dist) - taskweight;
        let groupimp = self.group_weight(w, t, pref, dist) - groupweight;
        self.find_cpu(w, &mut env, taskimp, groupimp);
        // Other nodes: when the preferred node has no room, or when the
        // group is spread over several active nodes.
        let grouped = self.grouped(t);
        let spread = grouped && self.groups[w.tasks[t].process].active_nodes > 1;
        if env.best_cpu.is_none() || spread {
            for nid in 0..self.nnodes {
                if nid == src_nid || nid == pref {
                    continue;
                }
                // As the kernel has it: the distance to the node tried last.
                dist = self.distances[src_nid][env.dst_nid];
                if self.topology == NumaTopology::Backplane && dist != env.dist {
                    taskweight = self.task_weight(w, t, src_nid, dist);
                    groupweight = self.group_weight(w, t, src_nid, dist);
                }
                let taskimp = self.task_weight(w, t, nid, dist) - taskweight;
                let groupimp = self.group_weight(w, t, nid, dist) - groupweight;
                if taskimp < 0 && groupimp < 0 {
                    continue;
                }
                env.dist = dist;
                env.dst_nid = nid;
                env.dst_stats = self.numa_stats(w, t, nid, true);
                self.find_cpu(w, &mut env, taskimp, groupimp);
            }
        }
        // A grouped task settles where it goes (or where it is).
        if grouped {
            let nid = env.best_cpu.map_or(src_nid, |c| w.m.cpu_node[c]);
            w.tasks[t].preferred_node = Some(nid);
        }
        let Some(best_cpu) = env.best_cpu else {
            return;
        };
        match env.best_task {
            None => {
                if w.migrate(t, best_cpu) {
                    w.stats.numa_task_moves += 1;
                }
            }
            Some(s) => {
                // migrate_swap.
                if w.migrate(t, best_cpu) && w.migrate(s, src_cpu) {
                    w.stats.numa_swaps += 1;
                }
            }
        }
    }
}

fn is_active(g: &NumaGroup, nid: usize) -> bool {
    g.cpu[nid] * ACTIVE_NODE_FRACTION > g.max_faults_cpu
}

/// numa_group_count_active_nodes.
fn count_active_nodes(g: &mut NumaGroup) {
    let max = g.cpu.iter().copied().fold(0.0, f64::max);
    g.max_faults_cpu = max;
    g.active_nodes = g
        .cpu
        .iter()
        .filter(|&&f| f * ACTIVE_NODE_FRACTION > max)
        .count();
}

/// sd->imb_numa_nr of the lowest NUMA domain (build_sched_domains in
/// kernel/sched/topology.c): with several LLCs per node, one per LLC;
/// with one, an eighth of the node's CPUs (at least 1).
pub fn imb_numa_nr(m: &Machine) -> i64 {
    let cpus = &m.node_cpus[0];
    let mut llcs: Vec<usize> = cpus.iter().map(|&c| m.cpu_llc[c]).collect();
    llcs.sort_unstable();
    llcs.dedup();
    let imb = if llcs.len() == 1 {
        cpus.len() >> 3
    } else {
        llcs.len()
    };
    imb.max(1) as i64
}

/// Poisson-ish count: floor(x) plus one more with probability frac(x).
pub fn draw_count(w: &mut World, x: f64) -> u64 {
    let base = x.floor();
    let extra = (crate::engine::rand_unit(&mut w.rng) < x - base) as u64;
    base as u64 + extra
}

/// update_task_scan_period's rule (fair.c) for a pass with local or
/// shared faults: the change of `period` from the pass's share of local
/// faults (`remote`, `local`) and of private ones (`private`, `shared`),
/// in NUMA_PERIOD_SLOTS steps around NUMA_PERIOD_THRESHOLD: mostly
/// private or mostly local lengthens it, else it shortens. The IBS RFC's
/// update_task_sample_period applies the same rule to its sampling
/// period.
fn period_change(period: f64, remote: f64, local: f64, private: f64, shared: f64) -> f64 {
    let slot = (period / NUMA_PERIOD_SLOTS).ceil();
    let lr = (local * NUMA_PERIOD_SLOTS / (local + remote).max(1.0)).floor();
    let ps = (private * NUMA_PERIOD_SLOTS / (private + shared).max(1.0)).floor();
    if ps >= NUMA_PERIOD_THRESHOLD {
        (ps - NUMA_PERIOD_THRESHOLD).max(1.0) * slot
    } else if lr >= NUMA_PERIOD_THRESHOLD {
        (lr - NUMA_PERIOD_THRESHOLD).max(1.0) * slot
    } else {
        -(NUMA_PERIOD_THRESHOLD - lr.max(ps)) * slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Parent, TaskState, Work};
    use crate::workload::{add_region, add_task};
    use rand_core::SeedableRng;
    use std::collections::VecDeque;

    /// 2 nodes x 8 cores, one LLC per node: imb_numa_nr = 8 >> 3 = 1.
    fn world() -> World {
        let m = crate::tests::nodes_machine(2, 8);
        World::new(
            m,
            1_000_000,
            4096,
            rand_chacha::ChaCha8Rng::seed_from_u64(1),
            false,
        )
    }

    /// A task of `process` running on `cpu`, accessing region `r`.
    fn running(w: &mut World, process: usize, r: usize, cpu: CpuId) -> TaskId {
        let work = Work::Compute {
            init: VecDeque::new(),
            init_credit: 0.0,
            cycles: 1.0,
            rand_lines: 0.0,
            stream_lines: 1.0,
            stream: crate::engine::Stream::Stores,
            writeback_lines: 0.0,
            wss_bytes: 4096.0,
            access: vec![(r, 1.0)],
        };
        let t = add_task(
            w,
            "t".into(),
            process,
            work,
            1,
            Parent::Cpu(0),
            true,
            0,
            true,
        );
        w.tasks[t].cpu = cpu;
        w.tasks[t].placed = true;
        w.tasks[t].state = TaskState::Running;
        w.cpus[cpu].curr = Some(t);
        t
    }

    fn common(w: &World) -> NumaCommon {
        let mut c = NumaCommon::new(&w.m, 0.0, true, true);
        c.ensure(w);
        c
    }

    #[test]
    fn topology_types_follow_init_numa_topology_type() {
        let d = |v: &[&[u32]]| v.iter().map(|r| r.to_vec()).collect::<Vec<_>>();
        assert_eq!(
            NumaTopology::of(&d(&[&[10, 21], &[21, 10]])),
            NumaTopology::Direct
        );
        // A ring of four: 0 and 2 are two hops apart, through 1.
        let ring = d(&[
            &[10, 16, 22, 16],
            &[16, 10, 16, 22],
            &[22, 16, 10, 16],
            &[16, 22, 16, 10],
        ]);
        assert_eq!(NumaTopology::of(&ring), NumaTopology::GluelessMesh);
        let rome = crate::Machine::load("rome256").unwrap();
        assert_eq!(NumaTopology::of(&rome.distances), NumaTopology::Backplane);
        assert_eq!(imb_numa_nr(&rome), 4, "4 LLCs (CCXs) per NPS4 node");
        // ht2: one LLC of 12 CPUs per node, 12 >> 3.
        assert_eq!(imb_numa_nr(&crate::Machine::load("ht2").unwrap()), 1);
    }

    /// should_numa_migrate_memory: the early-life exception, the
    /// two-reference filter, and the shared-page rules of a numa group.
    #[test]
    fn migration_filter_follows_should_numa_migrate_memory() {
        let mut w = world();
        let r = add_region(&mut w, 0, 4096);
        let t0 = running(&mut w, 0, r, 8); // node 1
        let t1 = running(&mut w, 0, r, 9);
        let mut c = common(&w);
        // Early in its life a task's own page follows it even when its
        // last fault came from the other node; the two-reference filter
        // alone kept it.
        assert!(c.should_migrate_memory(&w, t0, 0, 1, t0 as u32, 0));
        // Later, the same page waits for a second fault from node 1.
        c.tasks[t0].scan_seq = 5;
        w.tasks[t0].preferred_node = Some(1);
        assert!(!c.should_migrate_memory(&w, t0, 0, 1, t0 as u32, 0));
        assert!(c.should_migrate_memory(&w, t0, 0, 1, t0 as u32, 1));
        // A shared page (t1 faulted last, from node 1): with no group yet
        // it moves.
        assert!(c.should_migrate_memory(&w, t0, 0, 1, t1 as u32, 1));
        // In a group that runs mostly on node 0, it stays...
        c.tasks[t0].in_group = true;
        let g = &mut c.groups[0];
        g.cpu = vec![100.0, 10.0];
        g.mem[SHARED] = vec![100.0, 100.0];
        assert!(!c.should_migrate_memory(&w, t0, 0, 1, t1 as u32, 1));
        // ...moves when node 1 has more than 3 times node 0's CPU faults...
        c.groups[0].cpu = vec![100.0, 301.0];
        assert!(c.should_migrate_memory(&w, t0, 0, 1, t1 as u32, 1));
        // ...and, below that, when node 1's CPU-to-memory fault ratio beats
        // node 0's by the 4/3 hysteresis.
        c.groups[0].cpu = vec![100.0, 200.0];
        c.groups[0].mem[SHARED] = vec![100.0, 140.0];
        assert!(c.should_migrate_memory(&w, t0, 0, 1, t1 as u32, 1));
        c.groups[0].mem[SHARED] = vec![100.0, 160.0];
        assert!(!c.should_migrate_memory(&w, t0, 0, 1, t1 as u32, 1));
    }

    /// task_numa_fault counts a fault on the page's (new) node and on the
    /// faulting CPU's node, and a shared fault puts the task in its
    /// process's group.
    #[test]
    fn a_fault_counts_memory_and_cpu_side_and_groups_sharers() {
        let mut w = world();
        let r = add_region(&mut w, 0, 4096);
        let first = w.mem.regions[r].first;
        let m = w.m.clone();
        w.mem.allocate(&m, first, 0);
        let t0 = running(&mut w, 0, r, 8);
        let t1 = running(&mut w, 0, r, 9);
        let mut c = common(&w);
        c.access(&mut w, t0, first, true);
        // First fault: the page moved to node 1 and counts there.
        assert_eq!(w.mem.chunks[first].node, 1);
        assert_eq!(c.tasks[t0].mem_buf[PRIVATE], vec![0.0, 1.0]);
        assert_eq!(c.tasks[t0].cpu_buf, vec![0.0, 1.0]);
        assert!(!c.tasks[t0].in_group);
        c.access(&mut w, t1, first, true);
        assert!(c.tasks[t1].in_group);
        assert_eq!(c.groups[0].nr_tasks, 1);
        assert_eq!(c.tasks[t1].mem_buf[SHARED], vec![0.0, 1.0]);
    }

    /// The IBS RFC's task_numa_placement runs once per `threshold`
    /// counted accesses (not per scan pass), and its
    /// update_task_sample_period lengthens the sample period by
    /// (ps_ratio - 7) slots of a tenth when the faults are private.
    #[test]
    fn hw_hints_place_every_threshold_accesses_and_adapt_the_sample_period() {
        let mut w = world();
        let r = add_region(&mut w, 0, 4096);
        let t = running(&mut w, 0, r, 0);
        let mut c = common(&w);
        c.set_hw_hints(HwHints {
            threshold: 3,
            period_min: 5000.0,
            period_max: 20000.0,
        });
        c.tasks[t].sample_period = 10000.0;
        c.tasks[t].mem_buf[PRIVATE] = vec![10.0, 0.0];
        c.tasks[t].locality = [0.0, 10.0, 0.0];
        c.placement(&mut w, t);
        c.placement(&mut w, t);
        assert_eq!(
            w.tasks[t].preferred_node, None,
            "two accesses: no placement yet"
        );
        c.placement(&mut w, t);
        assert_eq!(w.tasks[t].preferred_node, Some(0));
        assert_eq!(c.tasks[t].sample_period, 13000.0);
        // Early in life for the first 4 x threshold counted accesses.
        assert!(c.should_migrate_memory(&w, t, 1, 0, t as u32, 1));
        c.tasks[t].access_faults = 12;
        assert!(!c.should_migrate_memory(&w, t, 1, 0, t as u32, 1));
    }

    /// numa_migrate_preferred retries every min(1 s, scan period / 16).
    #[test]
    fn task_moves_are_retried_every_sixteenth_of_the_scan_period() {
        let mut w = world();
        let r = add_region(&mut w, 0, 4096);
        let t = running(&mut w, 0, r, 0);
        let mut c = common(&w);
        w.tasks[t].preferred_node = Some(0);
        c.tasks[t].has_faults = true;
        w.now = 5_000_000_000;
        for (period, retry_ms) in [(200.0, 12), (1000.0, 62), (60_000.0, 1000)] {
            c.tasks[t].scan_period_ms = period;
            c.migrate_preferred(&mut w, t);
            assert_eq!(c.tasks[t].migrate_retry, w.now + retry_ms * 1_000_000);
        }
    }

    /// task_numa_find_cpu: a move to an idle CPU of the preferred node
    /// only while it leaves the nodes within the allowed imbalance
    /// (adjust_numa_imbalance); beyond it, with spare capacity there, no
    /// move and no swap between tasks of no group (task_numa_compare).
    #[test]
    fn a_move_to_an_idle_cpu_respects_the_numa_imbalance() {
        for busy_on_dst in [0usize, 3] {
            let mut w = world();
            let r = add_region(&mut w, 0, 4096);
            let t = running(&mut w, 0, r, 0);
            let others = add_region(&mut w, 1, 4096);
            for i in 0..busy_on_dst {
                running(&mut w, 1, others, 8 + i);
            }
            let mut c = common(&w);
            // All of t's faults are on node 1.
            c.tasks[t].mem[PRIVATE] = vec![0.0, 100.0];
            c.tasks[t].total_faults = 100.0;
            c.tasks[t].has_faults = true;
            c.tasks[t].scan_period_ms = 1000.0;
            w.tasks[t].preferred_node = Some(1);
            c.migrate_preferred(&mut w, t);
            let (moves, swaps) = (w.stats.numa_task_moves, w.stats.numa_swaps);
            if busy_on_dst == 0 {
                // 0 vs 1 running: within NUMA_IMBALANCE_MIN.
                assert_eq!(w.task_node(t), 1);
                assert_eq!((moves, swaps), (1, 0));
            } else {
                // 0 vs 4 running would exceed it (imb_numa_nr 1): it stays.
                assert_eq!(w.task_node(t), 0);
                assert_eq!((moves, swaps), (0, 0));
            }
        }
    }

    /// numa01 after its first pass: both processes' threads on both
    /// (full) nodes, 56.3% and 56.8% of their memory on node 0. fair.c's
    /// task_numa_compare charges the other task's loss, so no swap gains
    /// SMALLIMP and the split stays; AutoNUMA25's __sched_autonuma_balance
    /// swaps a thread of the process with the larger share on node 0
    /// (other_diff 568 - 563 > 0, this_diff 568 - 432 > 0) with a thread
    /// of the other, and never the reverse.
    #[test]
    fn autonuma25_exchanges_where_task_numa_compare_does_not() {
        let shares = [[563.0, 437.0], [568.0, 432.0]];
        let mut w = world();
        let regions = [add_region(&mut w, 0, 4096), add_region(&mut w, 1, 4096)];
        // Node 0: CPUs 0-7, node 1: CPUs 8-15; each process four on each.
        let at = |cpu: usize| (cpu % 8) / 4;
        let tasks: Vec<TaskId> = (0..16)
            .map(|cpu| running(&mut w, at(cpu), regions[at(cpu)], cpu))
            .collect();
        let mut c = common(&w);
        for (cpu, &t) in tasks.iter().enumerate() {
            let p = at(cpu);
            let tn = &mut c.tasks[t];
            tn.mem[SHARED] = shares[p].to_vec();
            tn.total_faults = 1000.0;
            tn.has_faults = true;
            tn.in_group = true;
            tn.scan_period_ms = 1000.0;
            w.tasks[t].preferred_node = Some(0);
        }
        for p in 0..2 {
            let g = &mut c.groups[p];
            g.mem[SHARED] = shares[p].iter().map(|x| x * 8.0).collect();
            g.total_faults = 8000.0;
            g.cpu = vec![1000.0, 1000.0];
            g.max_faults_cpu = 1000.0;
            g.active_nodes = 2;
            g.nr_tasks = 8;
        }
        // fair.c: process 1's thread on node 1 (CPU 12) wants node 0.
        c.migrate_preferred(&mut w, tasks[12]);
        assert_eq!(w.stats.numa_swaps + w.stats.numa_task_moves, 0);
        assert_eq!(w.task_node(tasks[12]), 1);
        // AutoNUMA25, knuma_scand's counts equal to the shares.
        let mm: Vec<Vec<u64>> = shares
            .iter()
            .map(|s| s.iter().map(|&x| x as u64).collect())
            .collect();
        // Process 0's thread on node 1 may not take node 0 from process 1.
        assert_eq!(super::super::autonuma25::balance(&c, &mm, &mut w, 8), None);
        let done = super::super::autonuma25::balance(&c, &mm, &mut w, 12);
        assert_eq!(done, Some((tasks[12], tasks[0])));
        assert_eq!(w.stats.numa_swaps, 1);
        assert_eq!(w.tasks[tasks[12]].cpu, 0);
        assert_eq!(w.task_node(tasks[0]), 1);
        // Before knuma_scand's first pass: nothing.
        assert_eq!(super::super::autonuma25::balance(&c, &[], &mut w, 13), None);
    }
}
