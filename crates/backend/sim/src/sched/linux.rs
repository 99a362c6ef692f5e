//! `linux`: a CFS-like scheduler with Linux's scheduling domains.
//!
//! Domains (kernel/sched/topology.c): SMT (siblings of a core), LLC (cores
//! sharing a cache), NODE (LLCs of a node, when a node has several) and
//! NUMA (the nodes of the machine). Each domain balances between its
//! groups every `span` ms when idle and `busy_factor` times less often when
//! busy (sd_init: min_interval = span weight in ms, busy_factor 16), only
//! from the first idle CPU of a group (should_we_balance). A group is
//! pulled from when its load per CPU beats the local one by the domain's
//! imbalance_pct (SMT 110, others 117, NUMA 125 as in older sd_init:
//! `numa_imbalance_pct`, 117 in current kernels), which find_busiest_group
//! weighs only when the local group is overloaded too: above the LLC, a
//! group with idle CPUs beside an overloaded one fills them whatever the
//! ratio (calculate_imbalance's migrate_util; `fill_spare`), or
//! when the local group has more idle CPUs (spare capacity); at the NUMA
//! level a small imbalance is allowed (adjust_numa_imbalance: up to 25% of
//! the node). Moves prefer tasks whose NUMA-preferred node is the
//! destination and avoid tasks that would leave theirs
//! (migrate_degrades_locality). A new task goes to the idlest group at
//! each level (find_idlest_group: least load, most idle CPUs, then least
//! utilisation, which still counts a task that just left a CPU until that
//! CPU's next PELT update), staying on its parent's node while that node
//! is lightly loaded. A wakeup is placed while the waker still runs: a
//! sync one (not from an exiting task) goes to the waker's CPU when the
//! waker is alone there (wake_affine), otherwise the target is the
//! task's previous CPU; then an idle CPU of the target's LLC, preferring
//! an idle core (select_idle_sibling). Slices are sched_latency /
//! nr_running, at least min_granularity.

use super::least_loaded;
use crate::engine::{CpuId, Placement, Scheduler, TaskId, TaskState, World};
use crate::machine::Machine;
use crate::params::Params;

struct Level {
    pct: f64,
    numa: bool,
    /// Its groups share an LLC (SMT, LLC: the kernel's SD_SHARE_LLC).
    shares_llc: bool,
    /// Span index of each CPU.
    span_of: Vec<usize>,
    /// Spans: their groups (each a list of CPUs).
    spans: Vec<Vec<Vec<CpuId>>>,
    weight: usize,
}

/// fbq_type (kernel/sched/fair.c): regular < remote < all.
const FBQ_REGULAR: u8 = 0;
const FBQ_REMOTE: u8 = 1;
const FBQ_ALL: u8 = 2;

pub struct Linux {
    levels: Vec<Level>,
    next: Vec<Vec<u64>>,
    failed: Vec<Vec<u32>>,
    busy_factor: u64,
    latency_ns: u64,
    min_gran_ns: u64,
    numa_imbalance: f64,
    wake_affine: bool,
    /// The NUMA level's imbalance_pct (`numa_imbalance_pct`).
    numa_pct: f64,
    /// A group with idle CPUs fills them from an overloaded group whatever
    /// the imbalance_pct (`fill_spare`).
    fill_spare: bool,
    /// True while balancing for a CPU that just went idle in mid-tick:
    /// running tasks are not moved then (the kernel defers active balance
    /// to the stopper thread).
    in_newidle: bool,
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Scheduler>, crate::params::ParamError> {
    Ok(Box::new(Linux::new(p, m)?))
}

fn groups_by(cpus: &[CpuId], key: impl Fn(CpuId) -> usize) -> Vec<Vec<CpuId>> {
    let mut keys: Vec<usize> = cpus.iter().map(|&c| key(c)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.iter()
        .map(|&k| cpus.iter().copied().filter(|&c| key(c) == k).collect())
        .collect()
}

/// `linux`'s parameters, as every scheduler built on it reads them (and
/// numalab-scx's `nest`, which accepts them for the same spec text).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tunables {
    pub busy_factor: u64,
    pub numa_imbalance: f64,
    pub wake_affine: bool,
    pub numa_pct: f64,
    pub fill_spare: bool,
}

impl Tunables {
    pub fn read(p: &mut Params) -> Result<Tunables, crate::params::ParamError> {
        let busy_factor = p.u64(
            "busy_factor",
            16,
            "busy CPUs balance this many times less often",
        )?;
        let numa_imbalance = p.f64(
            "numa_imbalance",
            0.25,
            "fraction of a node's CPUs that may run tasks before NUMA balancing spreads them",
        )?;
        let wake_affine = p.bool("wake_affine", true, "pull sync wakees to the waker's CPU")?;
        let numa_pct = p.f64_in(
            "numa_imbalance_pct",
            125.0,
            (100.0, 1000.0),
            "sd_init's imbalance_pct of the NUMA level (125 in older kernels; current ones give every level above SMT 117)",
        )?;
        let fill_spare = p.bool(
            "fill_spare",
            true,
            "a node with idle CPUs pulls from an overloaded one whatever numa_imbalance_pct (find_busiest_group since 2.6.x; false: 2.6.0's find_busiest_node, NODE_THRESHOLD always)",
        )?;
        Ok(Tunables {
            busy_factor,
            numa_imbalance,
            wake_affine,
            numa_pct,
            fill_spare,
        })
    }
}

impl Linux {
    pub fn new(p: &mut Params, m: &Machine) -> Result<Linux, crate::params::ParamError> {
        let Tunables {
            busy_factor,
            numa_imbalance,
            wake_affine,
            numa_pct,
            fill_spare,
        } = Tunables::read(p)?;
        let factor = 1 + (m.ncpus.clamp(1, 8) as f64).log2().floor() as u64;
        let mut levels = Vec::new();
        let all: Vec<CpuId> = (0..m.ncpus).collect();
        let mut add = |pct: f64,
                       numa: bool,
                       shares_llc: bool,
                       span_key: &dyn Fn(CpuId) -> usize,
                       group_key: &dyn Fn(CpuId) -> usize| {
            let spans_cpus = groups_by(&all, span_key);
            let mut span_of = vec![0; m.ncpus];
            let mut spans = Vec::new();
            let mut weight = 0;
            for (i, s) in spans_cpus.iter().enumerate() {
                for &c in s {
                    span_of[c] = i;
                }
                weight = weight.max(s.len());
                spans.push(groups_by(s, group_key));
            }
            if spans.iter().any(|g| g.len() > 1) {
                levels.push(Level {
                    pct,
                    numa,
                    shares_llc,
                    span_of,
                    spans,
                    weight,
                });
            }
        };
        add(110.0, false, true, &|c| m.cpu_core[c], &|c| c);
        add(117.0, false, true, &|c| m.cpu_llc[c], &|c| m.cpu_core[c]);
        add(117.0, false, false, &|c| m.cpu_node[c], &|c| m.cpu_llc[c]);
        add(numa_pct, true, false, &|_| 0, &|c| m.cpu_node[c]);
        let n = levels.len();
        Ok(Linux {
            levels,
            next: vec![vec![0; m.ncpus]; n],
            failed: vec![vec![0; m.ncpus]; n],
            busy_factor: busy_factor.max(1),
            latency_ns: 6_000_000 * factor,
            min_gran_ns: 750_000 * factor,
            numa_imbalance,
            wake_affine,
            numa_pct,
            fill_spare,
            in_newidle: false,
        })
    }

    fn group_stats(w: &World, g: &[CpuId]) -> (usize, usize, usize) {
        let nr: usize = g.iter().map(|&c| w.nr_running(c)).sum();
        let idle = g.iter().filter(|&&c| w.cpus[c].is_idle()).count();
        (nr, g.len(), idle)
    }

    /// fbq_classify_rq / fbq_classify_group (kernel/sched/fair.c, with
    /// NUMA balancing): over `cpus`, `Regular` (0) when some task has no
    /// preferred node, else `Remote` (1) when some runs off its preferred
    /// node, else `All` (2). Counted over the tasks on the CPUs, running
    /// and queued, as nr_running, nr_numa_running and
    /// nr_preferred_running are.
    fn fbq_class(w: &World, cpus: &[CpuId]) -> u8 {
        let (mut nr, mut numa, mut preferred) = (0, 0, 0);
        for &c in cpus {
            let node = w.node_of(c);
            for t in w.cpus[c].curr.iter().chain(w.cpus[c].queue.iter()) {
                nr += 1;
                if let Some(p) = w.tasks[*t].preferred_node {
                    numa += 1;
                    preferred += (p == node) as usize;
                }
            }
        }
        match (nr > numa, nr > preferred) {
            (true, _) => FBQ_REGULAR,
            (false, true) => FBQ_REMOTE,
            (false, false) => FBQ_ALL,
        }
    }

    /// Balance `cpu` at level `li`. Returns true if something moved.
    fn load_balance(&mut self, w: &mut World, li: usize, cpu: CpuId) -> bool {
        let lv = &self.levels[li];
        let span = &lv.spans[lv.span_of[cpu]];
        let Some(local_i) = span.iter().position(|g| g.contains(&cpu)) else {
            return false;
        };
        // Only the first idle CPU of the group (or its first CPU) balances.
        let local = &span[local_i];
        let first = local
            .iter()
            .copied()
            .find(|&c| w.cpus[c].is_idle())
            .unwrap_or(local[0]);
        // (A newly idle CPU always balances for itself.)
        if first != cpu && !self.in_newidle {
            return false;
        }
        let (nr_l, cap_l, idle_l) = Self::group_stats(w, local);
        let mut busiest: Option<(f64, usize, usize, usize, usize)> = None;
        for (gi, g) in span.iter().enumerate() {
            if gi == local_i {
                continue;
            }
            let (nr, cap, idle) = Self::group_stats(w, g);
            let avg = nr as f64 / cap as f64;
            if busiest.is_none_or(|b| avg > b.0) {
                busiest = Some((avg, gi, nr, cap, idle));
            }
        }
        let Some((avg_b, bi, nr_b, cap_b, idle_b)) = busiest else {
            return false;
        };
        let avg_l = nr_l as f64 / cap_l as f64;
        let mut n = 0usize;
        let mut active_ok = false;
        if nr_b > cap_b {
            // find_busiest_group weighs avg_load by imbalance_pct only when
            // the local group is overloaded too; a local group with spare
            // capacity beside an overloaded one, in a domain whose groups
            // share no LLC, is filled (calculate_imbalance: migrate_util,
            // up to its spare capacity), whatever the ratio.
            if self.fill_spare && !lv.shares_llc && nr_l < cap_l {
                n = (cap_l - nr_l).min(nr_b - cap_b);
            } else if avg_b * 100.0 > avg_l * lv.pct {
                let x = (avg_b - avg_l) * (cap_l * cap_b) as f64 / (cap_l + cap_b) as f64;
                n = (x.floor() as usize).max(1);
            }
        } else if idle_l > idle_b + 1 {
            n = (idle_l - idle_b) / 2;
            active_ok = true;
            if lv.numa {
                let node_cpus = cap_b as f64;
                if (nr_b as f64) <= (self.numa_imbalance * node_cpus).floor() {
                    n = 0;
                }
            }
        }
        if n == 0 {
            return false;
        }
        let group = span[bi].clone();
        let numa = lv.numa;
        // At a NUMA level only run queues classed no higher than the
        // busiest group are sources (update_sd_lb_stats sets
        // env->fbq_type from the busiest group; find_busiest_queue, now
        // sched_balance_find_src_rq, skips `rt > env->fbq_type`): a queue
        // of tasks all on their preferred node is left alone while the
        // group has tasks without a preference or off their node. Elsewhere
        // env->fbq_type stays `all`.
        let fbq = match numa {
            true => Self::fbq_class(w, &group),
            false => FBQ_ALL,
        };
        let dst_node = w.node_of(cpu);
        let failed = self.failed[li][cpu];
        let mut moved = 0;
        for _ in 0..n {
            // Busiest CPU of the busiest group with something we may take.
            let mut src = None;
            let mut max = 0;
            for &c in &group {
                let nr = w.nr_running(c);
                if fbq < FBQ_ALL && Self::fbq_class(w, &[c]) > fbq {
                    continue;
                }
                if nr > max && (nr >= 2 || active_ok) {
                    max = nr;
                    src = Some(c);
                }
            }
            let Some(src) = src else { break };
            let src_node = w.node_of(src);
            let mut pick = None;
            let mut fallback = None;
            // At most sysctl_sched_nr_migrate (32) tasks are looked at.
            for &t in w.cpus[src].queue.iter().rev().take(32) {
                if w.tasks[t].state != TaskState::Runnable || !w.allowed(t, cpu) {
                    continue;
                }
                let pref = w.tasks[t].preferred_node;
                if numa || src_node != dst_node {
                    if pref == Some(dst_node) {
                        pick = Some(t);
                        break;
                    }
                    if pref == Some(src_node) && failed < 3 {
                        continue;
                    }
                }
                if fallback.is_none() {
                    fallback = Some(t);
                }
            }
            let mut pick = pick.or(fallback);
            if pick.is_none() && active_ok && !self.in_newidle && w.cpus[cpu].is_idle() && max == 1
            {
                // Active balance: push the running task over (migration thread).
                if let Some(t) = w.cpus[src].curr {
                    let pref = w.tasks[t].preferred_node;
                    let keeps = !(pref == Some(src_node) && failed < 3 && src_node != dst_node);
                    if w.allowed(t, cpu) && keeps {
                        pick = Some(t);
                    }
                }
            }
            match pick {
                Some(t) => {
                    if w.migrate(t, cpu) {
                        moved += 1;
                    }
                }
                None => break,
            }
        }
        if moved == 0 {
            self.failed[li][cpu] += 1;
        } else {
            self.failed[li][cpu] = 0;
        }
        moved > 0
    }

    /// find_idlest_group / find_idlest_cpu for a new task.
    fn idlest(&self, w: &World, t: TaskId, parent_cpu: CpuId, exec: bool) -> CpuId {
        let mut cpus: Vec<CpuId> = (0..w.m.ncpus).collect();
        for lv in self.levels.iter().rev() {
            let span = &lv.spans[lv.span_of[cpus[0]]];
            if span.len() < 2 {
                continue;
            }
            // Restrict groups to the current candidate set.
            let groups: Vec<Vec<CpuId>> = span
                .iter()
                .map(|g| {
                    g.iter()
                        .copied()
                        .filter(|c| cpus.contains(c))
                        .collect::<Vec<_>>()
                })
                .filter(|g: &Vec<CpuId>| !g.is_empty() && g.iter().any(|&c| w.allowed(t, c)))
                .collect();
            if groups.is_empty() {
                break;
            }
            if lv.numa && !exec {
                // Stay on the parent's node while it is lightly loaded.
                if let Some(g) = groups.iter().find(|g| g.contains(&parent_cpu)) {
                    let nr: usize = g.iter().map(|&c| w.nr_running(c)).sum();
                    if (nr as f64) < (self.numa_imbalance * g.len() as f64).floor() {
                        cpus = g.clone();
                        continue;
                    }
                }
            }
            // Groups are visited in the domain's ring order from the
            // parent's own group (sd->groups, then group->next), and a
            // later group must be strictly better (update_pick_idlest):
            // among groups with as many idle CPUs, the lowest utilisation
            // (in the kernel's 1/1024 units) wins, and a group whose CPU
            // a task just left still carries that task's utilisation
            // until the CPU's blocked-load update, so successive forks
            // walk round the machine; exact ties go to the first group
            // after the parent's.
            let local = groups
                .iter()
                .position(|g| g.contains(&parent_cpu))
                .unwrap_or(0);
            let ng = groups.len();
            let mut best: Option<((usize, usize, u64, usize), usize)> = None;
            for (i, g) in groups.iter().enumerate() {
                let nr: usize = g.iter().map(|&c| w.nr_running(c)).sum();
                let idle = g.iter().filter(|&&c| w.cpus[c].is_idle()).count();
                let util: f64 = g.iter().map(|&c| w.cpus[c].util).sum();
                // Lowest load per CPU (scaled), then most idle CPUs, then
                // the lowest utilisation.
                let key = (
                    nr * 1024 / g.len(),
                    usize::MAX - idle,
                    (util * 1024.0).round() as u64,
                    (i + ng - local) % ng,
                );
                if best.is_none_or(|b| key < b.0) {
                    best = Some((key, i));
                }
            }
            if let Some((_, i)) = best {
                cpus = groups[i].clone();
            }
        }
        least_loaded(w, t, &cpus).unwrap_or(parent_cpu)
    }

    /// select_idle_sibling: an idle core, then an idle CPU, in target's LLC.
    fn idle_sibling(&self, w: &World, t: TaskId, target: CpuId, prev: CpuId) -> CpuId {
        if w.cpus[target].is_idle() && w.allowed(t, target) {
            return target;
        }
        let llc = w.m.cpu_llc[target];
        if w.m.cpu_llc[prev] == llc && w.cpus[prev].is_idle() && w.allowed(t, prev) {
            return prev;
        }
        let cpus = &w.m.llc_cpus[llc];
        let mut idle_cpu = None;
        for &c in cpus {
            if !w.allowed(t, c) || !w.cpus[c].is_idle() {
                continue;
            }
            let core = w.m.cpu_core[c];
            if w.m.core_cpus[core].iter().all(|&s| w.cpus[s].is_idle()) {
                return c;
            }
            if idle_cpu.is_none() {
                idle_cpu = Some(c);
            }
        }
        idle_cpu.unwrap_or(if w.allowed(t, target) { target } else { prev })
    }

    pub fn select(&mut self, w: &mut World, t: TaskId, why: Placement) -> CpuId {
        match why {
            Placement::New { parent_cpu, exec } => self.idlest(w, t, parent_cpu, exec),
            Placement::Wake { waker_cpu, sync } => {
                let prev = w.tasks[t].cpu;
                // wake_affine_idle: a sync wakeup from a waker alone on its
                // CPU pulls the wakee there; otherwise prev stays the
                // target (an idle prev is kept; a busy one is searched
                // around by select_idle_sibling).
                let target = if self.wake_affine
                    && sync
                    && w.allowed(t, waker_cpu)
                    && w.nr_running(waker_cpu) <= 1
                    && w.m.cpu_llc[waker_cpu] != w.m.cpu_llc[prev]
                {
                    waker_cpu
                } else {
                    prev
                };
                let c = self.idle_sibling(w, t, target, prev);
                if w.allowed(t, c) {
                    c
                } else {
                    least_loaded(w, t, &(0..w.m.ncpus).collect::<Vec<_>>()).unwrap_or(prev)
                }
            }
        }
    }

    pub fn periodic(&mut self, w: &mut World) {
        for li in 0..self.levels.len() {
            let weight = self.levels[li].weight as u64;
            let interval = weight.max(1) * 1_000_000;
            for cpu in 0..w.m.ncpus {
                if w.now < self.next[li][cpu] {
                    continue;
                }
                let idle = w.cpus[cpu].is_idle();
                self.load_balance(w, li, cpu);
                self.next[li][cpu] = w.now
                    + if idle {
                        interval
                    } else {
                        interval * self.busy_factor
                    };
            }
        }
    }

    pub fn newidle(&mut self, w: &mut World, cpu: CpuId) {
        self.in_newidle = true;
        for li in 0..self.levels.len() {
            if self.load_balance(w, li, cpu) {
                break;
            }
        }
        self.in_newidle = false;
    }

    pub fn slice(&self, w: &World, cpu: CpuId) -> u64 {
        let nr = w.nr_running(cpu).max(1) as u64;
        (self.latency_ns / nr).max(self.min_gran_ns)
    }
}

impl Scheduler for Linux {
    fn select_cpu(&mut self, w: &mut World, t: TaskId, why: Placement) -> CpuId {
        self.select(w, t, why)
    }
    fn numa_imbalance_pct(&self) -> Option<f64> {
        Some(self.numa_pct)
    }
    fn tick(&mut self, w: &mut World) {
        self.periodic(w);
    }
    /// newidle_balance runs from schedule() (pick_next_task_fair) on a
    /// CPU that just ran out of work (the only CPUs the engine asks); a
    /// CPU idle all along has its tick
    /// stopped and is balanced by the nohz idle balancer at its own
    /// rq->next_balance ([`Linux::periodic`] with the idle interval),
    /// or gets work by a wakeup or fork placing a task on it.
    fn idle(&mut self, w: &mut World, cpu: CpuId) {
        self.newidle(w, cpu);
    }
    fn slice_ns(&self, w: &World, cpu: CpuId) -> u64 {
        self.slice(w, cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn numa_pct(args: &[(&str, &str)]) -> Result<f64, crate::params::ParamError> {
        let args: BTreeMap<String, String> = args
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let m = crate::tests::nodes_machine(2, 2);
        let l = Linux::new(&mut Params::new("linux", &args), &m)?;
        Ok(l.levels.iter().find(|x| x.numa).map(|x| x.pct).unwrap())
    }

    /// fbq classification: node 1's CPU 2 runs three tasks all on their
    /// preferred node 1, CPU 3 two tasks without a preference. Idle CPU 0
    /// balancing at the NUMA level takes from CPU 3 (the group is
    /// `regular`, CPU 2 is `all`), not from the busier CPU 2, whose tasks
    /// it would not take anyway (migrate_degrades_locality): without the
    /// rule nothing moved.
    /// A spinning task on `cpu` (running, or queued behind the running
    /// one) with NUMA preference `pref`.
    fn task(w: &mut World, cpu: CpuId, pref: Option<usize>, running: bool) -> TaskId {
        use crate::engine::{Parent, TaskState};
        let work = crate::workload::spin_work(1.0);
        let t = crate::workload::add_task(
            w,
            "t".into(),
            0,
            work,
            u64::MAX,
            Parent::Cpu(cpu),
            true,
            0,
            true,
        );
        w.enqueue(t, cpu);
        w.tasks[t].preferred_node = pref;
        if running {
            w.cpus[cpu].queue.retain(|&x| x != t);
            w.cpus[cpu].curr = Some(t);
            w.tasks[t].state = TaskState::Running;
        }
        t
    }

    #[test]
    fn numa_balancing_leaves_queues_of_well_placed_tasks_alone() {
        let m = crate::tests::nodes_machine(2, 2);
        let mut w = crate::tests::empty_world(&m);
        let _ = crate::workload::add_region(&mut w, 0, 1);
        let well: Vec<TaskId> = (0..3).map(|i| task(&mut w, 2, Some(1), i == 0)).collect();
        let free: Vec<TaskId> = (0..2).map(|i| task(&mut w, 3, None, i == 0)).collect();
        let mut l = Linux::new(&mut Params::new("linux", &BTreeMap::new()), &m).unwrap();
        assert_eq!(Linux::fbq_class(&w, &[2]), FBQ_ALL);
        assert_eq!(Linux::fbq_class(&w, &[3]), FBQ_REGULAR);
        assert_eq!(Linux::fbq_class(&w, &[2, 3]), FBQ_REGULAR);
        let numa = l.levels.iter().position(|x| x.numa).unwrap();
        assert!(l.load_balance(&mut w, numa, 0), "nothing moved");
        assert!(well.iter().all(|&t| w.tasks[t].cpu == 2));
        assert_eq!(
            w.tasks[free[1]].cpu, 0,
            "the queued task without a preference"
        );
        // A queue of tasks off their preferred node is `remote`.
        for &t in &well {
            w.tasks[t].preferred_node = Some(0);
        }
        assert_eq!(Linux::fbq_class(&w, &[2]), FBQ_REMOTE);
    }

    /// find_busiest_group / calculate_imbalance: node 0 runs 11 tasks on
    /// its 12 CPUs, node 1 13 (one waiting). 13/12 against 11/12 is below
    /// the NUMA level's imbalance_pct (125), but a group with spare
    /// capacity beside an overloaded one is filled whatever the ratio: idle
    /// CPU 0 takes the waiting task. 2.6.0's find_busiest_node applied its
    /// NODE_THRESHOLD always (`fill_spare=false`): nothing moves.
    #[test]
    fn an_idle_cpu_pulls_from_an_overloaded_node_whatever_the_imbalance_pct() {
        for (args, moves) in [(vec![], true), (vec![("fill_spare", "false")], false)] {
            let m = crate::tests::nodes_machine(2, 12);
            let mut w = crate::tests::empty_world(&m);
            let _ = crate::workload::add_region(&mut w, 0, 1);
            let (node0, node1): (Vec<CpuId>, Vec<CpuId>) =
                (0..m.ncpus).partition(|&c| m.cpu_node[c] == 0);
            for &c in &node0[1..] {
                task(&mut w, c, None, true);
            }
            for &c in &node1 {
                task(&mut w, c, None, true);
            }
            let waiting = task(&mut w, node1[0], None, false);
            let args: BTreeMap<String, String> = args
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let mut l = Linux::new(&mut Params::new("linux", &args), &m).unwrap();
            let numa = l.levels.iter().position(|x| x.numa).unwrap();
            assert_eq!(l.load_balance(&mut w, numa, node0[0]), moves, "{args:?}");
            assert_eq!(w.tasks[waiting].cpu == node0[0], moves, "{args:?}");
        }
    }

    #[test]
    fn the_numa_level_imbalance_pct_is_a_parameter() {
        assert_eq!(numa_pct(&[]), Ok(125.0));
        assert_eq!(numa_pct(&[("numa_imbalance_pct", "117")]), Ok(117.0));
        let e = numa_pct(&[("numa_imbalance_pct", "90")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("numa_imbalance_pct=90 must be between 100 and 1000"),
            "{e}"
        );
    }
}
