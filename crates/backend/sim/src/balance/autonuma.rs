//! `autonuma`: Linux automatic NUMA balancing (kernel/sched/fair.c,
//! Documentation/admin-guide/sysctl/kernel.rst).
//!
//! - Memory bound by a memory policy (MPOL_BIND: the bind placements) is
//!   not scanned (task_numa_work skips VMAs without MPOL_F_MOF).
//! - Scanning is driven by task runtime (task_tick_numa): when a task's
//!   runtime passes node_stamp + its scan period, node_stamp advances by
//!   the period and the task scans the next `scan_size_mb` of its
//!   process's address space (task_numa_work), unless another thread of
//!   the process scanned less than a period ago (mm->numa_next_scan). A
//!   scan marks the pages PROT_NONE; it walks at most 8x that much address
//!   space. The process's first scan is allowed `scan_delay_ms` after it
//!   is created (init_numa_balancing sets mm->numa_next_scan at fork), so
//!   a task that runs from its start scans first after `scan_delay_ms`.
//! - Per-task scan periods (init_numa_balancing): every task's period
//!   starts at `scan_delay_ms`. A new process's task has node_stamp 0 and
//!   takes task_scan_start after its first period; a thread (CLONE_VM)
//!   starts with a non-zero node_stamp, so it keeps the scan delay as its
//!   period until its first update_task_scan_period, after a full pass.
//!   The autonuma benchmarks' workers are all threads (their main thread,
//!   not simulated, first-touches the buffer and waits).
//! - The period then stays within
//!   [task_scan_min, task_scan_max]: scan_period_min / windows, floored so
//!   no more than MAX_SCAN_WINDOW (2560 MB/s) is scanned, and
//!   scan_period_max / windows (scaled up for a numa group with shared
//!   faults), where windows = RSS / scan_size. update_task_scan_period,
//!   run at each placement (once per completed pass over the address
//!   space, on the task's next fault), lengthens it when 7 of 10 faults
//!   are local or private and shortens it otherwise (NUMA_PERIOD_SLOTS 10,
//!   NUMA_PERIOD_THRESHOLD 7); with no faults, or after a failed
//!   migration, it doubles ([`super::numa`]).
//! - A marked page faults on the next access by any thread that uses it;
//!   the chance that a thread touches a given chunk within a tick follows
//!   from its access rate over the region and the user time it ran in the
//!   tick. The fault costs `fault_us` of system time to the faulting
//!   task, a migration `migrate_us_per_mb`. The fault is handled in the
//!   faulting task's context (do_numa_page and do_huge_pmd_numa_page call
//!   migrate_misplaced_page, which copies the page before the task
//!   returns to user space), so while a task pays that kernel work it
//!   touches no memory and takes no further faults: a thread that finds
//!   its buffer misplaced moves it at most at the migration's rate.
//! - What a fault does (should_numa_migrate_memory, task_numa_fault,
//!   task_numa_placement, task_numa_migrate) is in [`super::numa`].
//! - With `autonuma25_exchange=true`, tasks move by AutoNUMA25's
//!   exchange ([`super::autonuma25`], the kernel seed 002 measured)
//!   instead of task_numa_migrate: every busy CPU runs it each
//!   `exchange_interval_ms`, with each process's pages per node counted at
//!   its last complete scan pass.
//!
//! One fault per chunk (a THP fault is one PMD); `numa_pages_migrated`
//! and the fault counts count its 4 KiB pages.

use super::numa::NumaCommon;
use crate::engine::{Balancer, Scheduler, TaskId, World, NO_NODE};
use crate::machine::Machine;
use crate::params::Params;
use rand_core::Rng;

pub struct AutoNuma {
    common: NumaCommon,
    scan_delay_ns: u64,
    period_min_ms: f64,
    period_max_ms: f64,
    scan_size_mb: f64,
    fault_ns: f64,
    scan_ns_per_gb: f64,
    /// Per task: p->node_stamp (ns of runtime; 0 for a new process's
    /// task until its first scan period), and whether init_numa_balancing
    /// has run for it.
    node_stamp: Vec<u64>,
    started: Vec<bool>,
    /// Per process: scan position, and what the scanner walks.
    proc_offset: Vec<usize>,
    proc_chunks: Vec<Vec<usize>>,
    active: Vec<usize>,
    /// Scratch for the fault loop: running accessors and their rates, the
    /// marked pages touched this tick, and the table that picks the
    /// faulting thread.
    accessors: Vec<(TaskId, f64)>,
    /// Per task: its user time at the previous tick, so a tick's accesses
    /// follow the user time the task ran in it (none while it is in the
    /// kernel migrating what it faulted on).
    user_seen: Vec<f64>,
    hits: Vec<(usize, u64)>,
    faulted: Vec<(u32, TaskId)>,
    alias: Alias,
    /// AutoNUMA25's task exchange in place of task_numa_migrate, run by
    /// each busy CPU every `exchange_ns` ([`super::autonuma25`]), and each
    /// process's pages per node at its last complete pass.
    exchange: bool,
    exchange_ns: u64,
    mm_pages: Vec<Vec<u64>>,
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Balancer>, crate::params::ParamError> {
    Ok(Box::new(new(p, m)?))
}

fn new(p: &mut Params, m: &Machine) -> Result<AutoNuma, crate::params::ParamError> {
    let scan_delay = p.f64(
        "scan_delay_ms",
        1000.0,
        "sysctl numa_balancing_scan_delay_ms: time after a process's creation, and runtime of a task, before its first scan",
    )?;
    let pmin = p.f64(
        "scan_period_min_ms",
        1000.0,
        "sysctl numa_balancing_scan_period_min_ms",
    )?;
    let pmax = p.f64(
        "scan_period_max_ms",
        60000.0,
        "sysctl numa_balancing_scan_period_max_ms",
    )?;
    let size = p.f64("scan_size_mb", 256.0, "sysctl numa_balancing_scan_size_mb")?;
    let fault_us = p.f64(
        "fault_us",
        2.0,
        "system time of one hinting fault (estimate)",
    )?;
    let migrate_us_per_mb = super::migrate_us_per_mb(p, m)?;
    let scan_us_per_gb = p.f64(
        "scan_us_per_gb",
        m.costs.scan_us_per_gb.unwrap_or(500.0),
        "system time to change protection of 1 GiB (default: the machine file's costs.scan_us_per_gb, else an estimate)",
    )?;
    let filter = p.bool(
        "filter",
        true,
        "should_numa_migrate_memory (two-reference filter, shared-page rules); false migrates every misplaced page on its fault",
    )?;
    let exchange = p.bool(
        "autonuma25_exchange",
        false,
        "AutoNUMA25's task exchange (__sched_autonuma_balance, aa.git autonuma, 2012) in place of task_numa_migrate: seed 002's kernel",
    )?;
    let exchange_ms = p.f64(
        "exchange_interval_ms",
        64.0,
        "with autonuma25_exchange: how often a busy CPU runs it (SCHED_SOFTIRQ load balancing of a busy CPU: balance_interval 1 ms x busy_factor 64, include/linux/topology.h, 3.6)",
    )?;
    if exchange_ms <= 0.0 {
        return Err(crate::params::ParamError::Inconsistent(
            "autonuma: need exchange_interval_ms > 0".into(),
        ));
    }
    if size <= 0.0 || pmin <= 0.0 || pmax < pmin {
        return Err(crate::params::ParamError::Inconsistent(
            "autonuma: need scan_size_mb > 0 and 0 < scan_period_min_ms <= scan_period_max_ms"
                .into(),
        ));
    }
    let mut common = NumaCommon::new(m, migrate_us_per_mb * 1e3, filter, true);
    common.task_moves = !exchange;
    Ok(AutoNuma {
        common,
        scan_delay_ns: (scan_delay * 1e6) as u64,
        period_min_ms: pmin,
        period_max_ms: pmax,
        scan_size_mb: size,
        fault_ns: fault_us * 1e3,
        scan_ns_per_gb: scan_us_per_gb * 1e3,
        node_stamp: Vec::new(),
        started: Vec::new(),
        proc_offset: Vec::new(),
        proc_chunks: Vec::new(),
        active: Vec::new(),
        accessors: Vec::new(),
        user_seen: Vec::new(),
        hits: Vec::new(),
        faulted: Vec::new(),
        alias: Alias::default(),
        exchange,
        exchange_ns: (exchange_ms * 1e6) as u64,
        mm_pages: Vec::new(),
    })
}

/// MAX_SCAN_WINDOW in kernel/sched/fair.c: MB scanned per second at most.
const MAX_SCAN_WINDOW_MB: f64 = 2560.0;

impl AutoNuma {
    fn ensure(&mut self, w: &World) {
        let n = w.tasks.len();
        if self.node_stamp.len() < n {
            self.node_stamp.resize(n, 0);
            self.started.resize(n, false);
            self.user_seen.resize(n, 0.0);
        }
        self.common.ensure(w);
        let np = self.common.scan_seq.len();
        if self.proc_chunks.len() < np {
            let old = self.proc_chunks.len();
            self.proc_offset.resize(np, 0);
            // mm->numa_next_scan, set when the process is created (its
            // first task's fork): init_numa_balancing.
            let mut created = vec![u64::MAX; np];
            for t in &w.tasks {
                created[t.process] = created[t.process].min(t.start_ns);
            }
            for p in old..np {
                self.common.next_scan[p] = created[p].saturating_add(self.scan_delay_ns);
            }
            // What the scanner walks: memory bound by MPOL_BIND is not
            // (task_numa_work skips a VMA whose policy lacks MPOL_F_MOF).
            let mut chunks = vec![Vec::new(); np];
            for r in w.mem.regions.iter().filter(|r| !r.bound) {
                chunks[r.process].extend(r.first..r.first + r.len);
            }
            self.proc_chunks = chunks;
        }
        // task_scan_min / task_scan_max follow the process's RSS.
        for p in 0..np {
            self.common.scan_bounds[p] = (self.scan_min(w, p), self.scan_max(w, p));
        }
    }

    fn windows(&self, w: &World, process: usize) -> f64 {
        let rss_mb: f64 = w.mem.proc_node[process].iter().sum::<u64>() as f64
            * w.mem.chunk_bytes as f64
            / (1 << 20) as f64;
        (rss_mb / self.scan_size_mb).ceil().max(1.0)
    }

    fn scan_min(&self, w: &World, process: usize) -> f64 {
        let windows = if self.scan_size_mb < MAX_SCAN_WINDOW_MB {
            (MAX_SCAN_WINDOW_MB / self.scan_size_mb).floor()
        } else {
            1.0
        };
        let floor = 1000.0 / windows;
        (self.period_min_ms / self.windows(w, process)).max(floor)
    }

    fn scan_max(&self, w: &World, process: usize) -> f64 {
        (self.period_max_ms / self.windows(w, process)).max(self.scan_min(w, process))
    }

    /// init_numa_balancing (at fork; here before the task's first tick):
    /// every task starts with p->numa_scan_period = the scan delay. A new
    /// process's task (fork without CLONE_VM) has node_stamp 0, so its
    /// first scan period is replaced by task_scan_start once it has run
    /// that long (task_tick_numa). A thread (CLONE_VM) gets a non-zero
    /// node_stamp, the smaller of task_scan_max(current) and
    /// current->numa_scan_period times mm_users ms, plus 2 ticks, where
    /// the kernel adds task_scan_max's
    /// milliseconds as nanoseconds: about two ticks. So a thread keeps
    /// the scan delay as its period until its first
    /// update_task_scan_period, which comes after a full pass.
    fn init_numa_balancing(&mut self, w: &World, t: TaskId) {
        self.started[t] = true;
        let delay_ms = self.scan_delay_ns as f64 / 1e6;
        self.common.tasks[t].scan_period_ms = delay_ms;
        let p = w.tasks[t].process;
        // The creating thread: the parent, or for a thread whose creator
        // is not simulated, the task itself (the same initial state).
        let parent = match w.tasks[t].parent {
            crate::engine::Parent::Task(q) if w.tasks[q].process == p => q,
            _ => t,
        };
        self.node_stamp[t] = match w.tasks[t].clone_vm {
            false => 0,
            true => {
                let q = parent;
                let mm_users = w
                    .tasks
                    .iter()
                    .filter(|x| x.process == p && !x.is_done())
                    .count()
                    .max(1) as f64;
                let max_as_ns = self.common.task_scan_max(w, q);
                let period_ns = self.common.tasks[q].scan_period_ms * mm_users * 1e6;
                max_as_ns.min(period_ns) as u64 + 2 * w.tick_ns
            }
        };
    }

    /// task_tick_numa: once the task's runtime passes node_stamp + its
    /// scan period, node_stamp advances by the period (a new process's
    /// first period becomes task_scan_start) and task_numa_work runs.
    fn task_tick_numa(&mut self, w: &mut World, t: TaskId) {
        // Time booked on the task before it ran (the first worker carries
        // its process's main-thread first touch, which the model does not
        // run as a task of its own) is not its runtime: task_tick_numa's
        // clock is the task's own se.sum_exec_runtime.
        let task = &w.tasks[t];
        let runtime = (task.user_ns + task.sys_ns - task.booked_ns).max(0.0) as u64;
        let period_ns = (self.common.tasks[t].scan_period_ms * 1e6) as u64;
        if runtime > self.node_stamp[t] + period_ns {
            if self.node_stamp[t] == 0 {
                self.common.tasks[t].scan_period_ms = self.common.task_scan_start(w, t);
            }
            self.node_stamp[t] += period_ns;
            self.scan(w, t);
        }
    }

    /// task_numa_work: scan the next window of the process, unless
    /// another thread did less than a scan period ago (mm->numa_next_scan;
    /// the next scan is allowed one of this task's periods from now).
    fn scan(&mut self, w: &mut World, t: TaskId) {
        let p = w.tasks[t].process;
        if w.now < self.common.next_scan[p] {
            return;
        }
        if self.common.tasks[t].scan_period_ms == 0.0 {
            self.common.tasks[t].scan_period_ms = self.common.task_scan_start(w, t);
        }
        let period_ms = self.common.tasks[t].scan_period_ms;
        self.common.next_scan[p] = w.now + (period_ms * 1e6) as u64;
        let chunks = &self.proc_chunks[p];
        if chunks.is_empty() {
            return;
        }
        let chunk_mb = w.mem.chunk_bytes as f64 / (1 << 20) as f64;
        let pages = (self.scan_size_mb / chunk_mb).ceil() as usize;
        let virt = pages * 8;
        let (mut marked, mut walked) = (0usize, 0usize);
        // One call walks to the end of the address space at most; the next
        // starts again at its beginning (task_numa_work resets
        // mm->numa_scan_offset and bumps numa_scan_seq).
        let mut off = self.proc_offset[p];
        while marked < pages && walked < virt && off < chunks.len() {
            let c = chunks[off];
            off += 1;
            walked += 1;
            let ch = &mut w.mem.chunks[c];
            if ch.node == NO_NODE {
                continue;
            }
            marked += 1;
            if !ch.marked {
                ch.marked = true;
                let r = ch.region as usize;
                if w.mem.regions[r].marked.is_empty() {
                    self.active.push(r);
                }
                w.mem.regions[r].marked.push(c as u32);
            }
        }
        if off >= chunks.len() {
            off = 0;
            self.common.scan_seq[p] += 1;
            // knuma_scand's per-node page counts of the pass (AutoNUMA25's
            // mm_autonuma->mm_numa_fault).
            if self.exchange {
                if self.mm_pages.len() <= p {
                    self.mm_pages.resize(p + 1, Vec::new());
                }
                self.mm_pages[p] = w.mem.proc_node[p].clone();
            }
        }
        self.proc_offset[p] = off;
        w.stats.pte_updates += marked as u64 * w.mem.chunk_pages();
        let gb = (marked as u64 * w.mem.chunk_bytes) as f64 / (1u64 << 30) as f64;
        w.charge_sys(t, gb * self.scan_ns_per_gb);
    }

    fn faults(&mut self, w: &mut World) {
        let dt = w.tick_ns as f64;
        let mut i = 0;
        while i < self.active.len() {
            let r = self.active[i];
            let chunk = w.mem.chunk_bytes as f64;
            let bytes = w.mem.regions[r].len as f64 * chunk;
            // Per running accessor: chance of touching a given chunk this
            // tick, from the user time it ran in the tick (a task paying
            // the kernel work of its faults, or sharing its CPU, touches
            // less).
            let accessors = &mut self.accessors;
            accessors.clear();
            let mut total = 0.0;
            for &t in &w.mem.regions[r].accessors {
                let cpu = w.tasks[t].cpu;
                if w.cpus[cpu].curr != Some(t) && w.tasks[t].last_ran + w.tick_ns < w.now {
                    continue;
                }
                let ran = (w.tasks[t].user_ns - self.user_seen[t]).clamp(0.0, dt);
                let l = w.access_rate(t) * ran / bytes;
                if l > 0.0 {
                    total += l;
                    accessors.push((t, l));
                }
            }
            if total > 0.0 {
                // Each marked page is touched this tick with probability
                // 1 - exp(-total); rather than a draw per page (millions of
                // base pages), draw the gaps between touched pages: with
                // that probability the gap is geometric, floor(E / total)
                // for E ~ Exp(1).
                let mut marked = std::mem::take(&mut w.mem.regions[r].marked);
                let n = marked.len();
                let hits = &mut self.hits;
                hits.clear();
                // One 64-bit draw per touched page: its low half gives the
                // gap before it, its high half (below) the thread.
                let inv_total = 1.0 / total;
                let mut i = 0usize;
                while i < n {
                    let bits = w.rng.next_u64();
                    // u in (0, 1]; single precision is enough for 32 bits.
                    let u = ((bits & 0xffff_ffff) as f32 + 1.0) / 4_294_967_296.0;
                    let e = -u.ln() as f64;
                    // Truncation is floor here (e / total >= 0); the cast
                    // saturates for huge gaps.
                    let gap = (e * inv_total) as usize;
                    if gap >= n - i {
                        break;
                    }
                    i += gap;
                    hits.push((i, bits >> 32));
                    i += 1;
                }
                // Which thread touched it: in proportion to its rate.
                if !hits.is_empty() {
                    self.alias
                        .build(self.accessors.iter().map(|&(_, l)| l), total);
                }
                let faults = &mut self.faulted;
                faults.clear();
                for &(h, hi) in self.hits.iter() {
                    let u = hi as f64 / 4_294_967_296.0;
                    let c = marked[h];
                    // Unmarked here, in a loop of independent stores: the
                    // chunk records' cache misses overlap, and the fault
                    // path below finds them in cache.
                    w.mem.chunks[c as usize].marked = false;
                    faults.push((c, self.accessors[self.alias.sample(u)].0));
                }
                for &(c, t) in self.faulted.iter() {
                    let c = c as usize;
                    self.common.access(w, t, c, true);
                    w.charge_sys(t, self.fault_ns);
                }
                for &(h, _) in self.hits.iter().rev() {
                    marked.swap_remove(h);
                }
                w.mem.regions[r].marked = marked;
            }
            if w.mem.regions[r].marked.is_empty() {
                self.active.swap_remove(i);
            } else {
                i += 1;
            }
        }
        for (seen, task) in self.user_seen.iter_mut().zip(&w.tasks) {
            *seen = task.user_ns;
        }
    }
}

/// Walker's alias method (Vose's construction): draws an index in
/// proportion to its weight in O(1), after O(n) set-up. The faulting
/// thread of each hinting fault is drawn this way (millions of faults per
/// simulated second with base pages, over up to hundreds of threads).
#[derive(Default)]
struct Alias {
    prob: Vec<f64>,
    alias: Vec<u32>,
    scaled: Vec<f64>,
    small: Vec<u32>,
    large: Vec<u32>,
}

impl Alias {
    fn build(&mut self, weights: impl Iterator<Item = f64>, total: f64) {
        self.scaled.clear();
        self.scaled.extend(weights);
        let n = self.scaled.len();
        let k = n as f64 / total;
        self.prob.clear();
        self.prob.resize(n, 1.0);
        self.alias.clear();
        self.alias.extend(0..n as u32);
        self.small.clear();
        self.large.clear();
        for (j, p) in self.scaled.iter_mut().enumerate() {
            *p *= k;
            if *p < 1.0 {
                self.small.push(j as u32);
            } else {
                self.large.push(j as u32);
            }
        }
        while let (Some(&s), Some(&l)) = (self.small.last(), self.large.last()) {
            self.small.pop();
            let (s, l) = (s as usize, l as usize);
            self.prob[s] = self.scaled[s];
            self.alias[s] = l as u32;
            self.scaled[l] += self.scaled[s] - 1.0;
            if self.scaled[l] < 1.0 {
                self.large.pop();
                self.small.push(l as u32);
            }
        }
        // What is left has probability 1 (up to rounding).
    }

    /// The index for `u` uniform in [0, 1).
    fn sample(&self, u: f64) -> usize {
        let n = self.prob.len();
        let x = u * n as f64;
        let j = (x as usize).min(n - 1);
        if x - (j as f64) < self.prob[j] {
            j
        } else {
            self.alias[j] as usize
        }
    }
}

impl AutoNuma {
    /// AutoNUMA25's run_rebalance_domains callout: each busy CPU runs
    /// __sched_autonuma_balance once per interval, the CPUs staggered
    /// over it.
    fn exchange(&mut self, w: &mut World) {
        let tick = w.now / w.tick_ns.max(1);
        let every = (self.exchange_ns / w.tick_ns.max(1)).max(1);
        let n = w.m.ncpus as u64;
        for cpu in 0..w.m.ncpus {
            let phase = cpu as u64 * every / n.max(1);
            if (tick + phase).is_multiple_of(every) {
                super::autonuma25::balance(&self.common, &self.mm_pages, w, cpu);
            }
        }
    }
}

impl Balancer for AutoNuma {
    fn tick(&mut self, w: &mut World, s: &mut dyn Scheduler) {
        self.ensure(w);
        self.common.set_sd_numa(s.numa_imbalance_pct());
        for cpu in 0..w.m.ncpus {
            let Some(t) = w.cpus[cpu].curr else { continue };
            if !matches!(w.tasks[t].work, crate::engine::Work::Compute { .. }) {
                continue;
            }
            if !self.started[t] {
                self.init_numa_balancing(w, t);
            }
            self.task_tick_numa(w, t);
        }
        // Placement, task moves and memory migration happen on the faults
        // (task_numa_fault).
        self.faults(w);
        if self.exchange {
            self.exchange(w);
        }
        self.common.reap(w);
    }
}

#[cfg(test)]
mod tests {
    use super::Alias;
    use crate::engine::Balancer;
    use crate::params::{Params, PolicySpec};

    /// task_numa_migrate takes env.imbalance_pct from the scheduler's NUMA
    /// domain: 100 + (125 - 100) / 2 = 112 under `linux`'s default, 108
    /// with the 117 of current kernels' sd_init, and its initial 112 under
    /// a scheduler without domains.
    #[test]
    fn task_numa_migrate_takes_the_schedulers_numa_imbalance_pct() {
        let m = crate::tests::nodes_machine(2, 4);
        let mut w = crate::tests::empty_world(&m);
        for (sched, want) in [
            ("linux", 112.0),
            ("linux[numa_imbalance_pct=117]", 108.0),
            ("nest[numa_imbalance_pct=140]", 120.0),
            ("node-blind", 112.0),
        ] {
            let mut s = crate::sched::build(&PolicySpec::parse(sched).unwrap(), &m).unwrap();
            let mut b = super::new(&mut Params::new("autonuma", &Default::default()), &m).unwrap();
            b.tick(&mut w, s.as_mut());
            assert_eq!(b.common.imbalance_pct(), want, "{sched}");
        }
    }

    /// AutoNUMA25's exchange is off by default (fair.c's task_numa_migrate
    /// moves tasks), on with `autonuma25_exchange=true`, and a
    /// non-positive interval is refused with a message.
    #[test]
    fn the_autonuma25_exchange_is_a_parameter() {
        let m = crate::tests::nodes_machine(2, 4);
        let args = |kv: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let b = super::new(&mut Params::new("autonuma", &args(&[])), &m).unwrap();
        assert!(!b.exchange && b.common.task_moves);
        let on = args(&[("autonuma25_exchange", "true")]);
        let b = super::new(&mut Params::new("autonuma", &on), &m).unwrap();
        assert!(b.exchange && !b.common.task_moves);
        assert_eq!(b.exchange_ns, 64_000_000);
        let bad = args(&[
            ("autonuma25_exchange", "true"),
            ("exchange_interval_ms", "0"),
        ]);
        let e = super::new(&mut Params::new("autonuma", &bad), &m)
            .err()
            .unwrap();
        assert!(e.to_string().contains("exchange_interval_ms"), "{e}");
    }

    /// do_numa_page and do_huge_pmd_numa_page migrate a misplaced page in
    /// the faulting task's context (migrate_misplaced_page), one fault
    /// after another: numa02's thread on the node away from its half of
    /// the buffer brings it over no faster than one migration after the
    /// other, however fast it streams. With 10 ms a MiB, its 128 MiB take
    /// 1.28 s of its time, not one tick's worth of faults.
    #[test]
    fn a_thread_migrates_what_it_faults_on_one_page_after_another() {
        use numalab_bench::autonuma::{Kind, Placement};
        let ms_per_mib = 10.0;
        let bal = format!("autonuma[migrate_us_per_mb={}]", ms_per_mib * 1e3);
        let cfg = crate::tests::config(crate::tests::nodes_machine(2, 1), "linux", &bal, 1);
        let case = crate::tests::auto(Kind::Numa02, Placement::Default, 2, 256 << 20, 300);
        let rep = numalab_record::Repetition { index: 1, of: 1 };
        let r = crate::run(&cfg, &case, "x", rep, &mut |_| {}, &|| false)
            .unwrap()
            .record;
        let migrated: Vec<(f64, f64)> = r
            .series
            .samples
            .iter()
            .map(|s| {
                let pages = s.vmstat.get("numa_pages_migrated").copied().unwrap_or(0);
                (s.t_s, pages as f64 * 4096.0 / (1u64 << 20) as f64)
            })
            .collect();
        let total = migrated.last().unwrap().1;
        assert!(total >= 120.0, "migrated {total} MiB: {migrated:?}");
        // Between two samples, the migrations took no more time than
        // passed, but for the faults of one tick (5 MiB at most here).
        for pair in migrated.windows(2) {
            let ((t0, m0), (t1, m1)) = (pair[0], pair[1]);
            let busy_s = (m1 - m0 - 5.0).max(0.0) * ms_per_mib / 1e3;
            assert!(
                busy_s <= t1 - t0,
                "{} MiB moved between {t0} s and {t1} s: {migrated:?}",
                m1 - m0
            );
        }
    }

    /// Over a fine uniform grid, each index is drawn in proportion to its
    /// weight (to the grid's resolution), whatever the order of weights.
    #[test]
    fn the_alias_table_draws_in_proportion_to_the_weights() {
        for weights in [
            vec![1.0, 2.0, 3.0, 4.0],
            vec![4.0, 0.5, 0.5, 3.0, 2.0],
            vec![7.0],
            vec![1e-9, 1.0, 1e-9],
        ] {
            let total: f64 = weights.iter().sum();
            let mut a = Alias::default();
            a.build(weights.iter().copied(), total);
            let n = 1_000_000;
            let mut counts = vec![0usize; weights.len()];
            for k in 0..n {
                counts[a.sample((k as f64 + 0.5) / n as f64)] += 1;
            }
            for (j, &w) in weights.iter().enumerate() {
                let got = counts[j] as f64 / n as f64;
                assert!(
                    (got - w / total).abs() < 1e-5,
                    "{weights:?}: index {j} drawn {got}, want {}",
                    w / total
                );
            }
        }
    }
}
