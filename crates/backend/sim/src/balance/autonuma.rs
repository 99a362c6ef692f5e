//! `autonuma`: Linux automatic NUMA balancing (kernel/sched/fair.c,
//! Documentation/admin-guide/sysctl/kernel.rst).
//!
//! - Memory bound by a memory policy (MPOL_BIND: the bind placements) is
//!   not scanned (task_numa_work skips VMAs without MPOL_F_MOF).
//! - Scanning is driven by task runtime (task_tick_numa): once a task has
//!   run `scan_delay_ms`, and then every scan period of its own runtime, it
//!   scans the next `scan_size_mb` of its process's address space
//!   (task_numa_work), unless another thread of the process scanned less
//!   than a period ago (mm->numa_next_scan). A scan marks the pages
//!   PROT_NONE; it walks at most 8x that much address space. The process's
//!   first scan is allowed `scan_delay_ms` after it is created
//!   (init_numa_balancing sets mm->numa_next_scan at fork), so a task that
//!   runs from its start scans first after `scan_delay_ms`.
//! - The scan period starts at task_scan_start and stays within
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
//!   from its access rate over the region. The fault costs `fault_us` of
//!   system time to the faulting task, a migration `migrate_us_per_mb`.
//! - What a fault does (should_numa_migrate_memory, task_numa_fault,
//!   task_numa_placement, task_numa_migrate) is in [`super::numa`].
//!
//! One fault per chunk (a THP fault is one PMD); `numa_pages_migrated`
//! and the fault counts count its 4 KiB pages.

use super::numa::NumaCommon;
use crate::engine::{rand_unit, Balancer, Scheduler, TaskId, World, NO_NODE};
use crate::machine::Machine;
use crate::params::Params;

pub struct AutoNuma {
    common: NumaCommon,
    scan_delay_ns: u64,
    period_min_ms: f64,
    period_max_ms: f64,
    scan_size_mb: f64,
    fault_ns: f64,
    scan_ns_per_gb: f64,
    /// Per task: runtime at which the next scan is due.
    node_stamp: Vec<u64>,
    /// Per process: scan position, and what the scanner walks.
    proc_offset: Vec<usize>,
    proc_chunks: Vec<Vec<usize>>,
    active: Vec<usize>,
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Balancer>, String> {
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
    let migrate_us_per_mb = p.f64(
        "migrate_us_per_mb",
        250.0,
        "system time to migrate 1 MiB (estimate)",
    )?;
    let scan_us_per_gb = p.f64(
        "scan_us_per_gb",
        500.0,
        "system time to change protection of 1 GiB (estimate)",
    )?;
    let filter = p.bool(
        "filter",
        true,
        "should_numa_migrate_memory (two-reference filter, shared-page rules); false migrates every misplaced page on its fault",
    )?;
    if size <= 0.0 || pmin <= 0.0 || pmax < pmin {
        return Err(
            "autonuma: need scan_size_mb > 0 and 0 < scan_period_min_ms <= scan_period_max_ms"
                .into(),
        );
    }
    Ok(Box::new(AutoNuma {
        common: NumaCommon::new(m, migrate_us_per_mb * 1e3, filter, true),
        scan_delay_ns: (scan_delay * 1e6) as u64,
        period_min_ms: pmin,
        period_max_ms: pmax,
        scan_size_mb: size,
        fault_ns: fault_us * 1e3,
        scan_ns_per_gb: scan_us_per_gb * 1e3,
        node_stamp: Vec::new(),
        proc_offset: Vec::new(),
        proc_chunks: Vec::new(),
        active: Vec::new(),
    }))
}

/// MAX_SCAN_WINDOW in kernel/sched/fair.c: MB scanned per second at most.
const MAX_SCAN_WINDOW_MB: f64 = 2560.0;

impl AutoNuma {
    fn ensure(&mut self, w: &World) {
        let n = w.tasks.len();
        if self.node_stamp.len() < n {
            self.node_stamp.resize(n, 0);
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

    /// task_numa_work: scan the next window of the process.
    fn scan(&mut self, w: &mut World, t: TaskId) {
        let p = w.tasks[t].process;
        if w.now < self.common.next_scan[p] {
            return;
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
            if w.mem.node[c] == NO_NODE {
                continue;
            }
            marked += 1;
            if !w.mem.marked[c] {
                w.mem.marked[c] = true;
                let r = w.mem.region_of[c] as usize;
                if w.mem.regions[r].marked.is_empty() {
                    self.active.push(r);
                }
                w.mem.regions[r].marked.push(c as u32);
            }
        }
        if off >= chunks.len() {
            off = 0;
            self.common.scan_seq[p] += 1;
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
            // Per running accessor: chance of touching a given chunk this tick.
            let mut lam: Vec<(TaskId, f64)> = Vec::new();
            let mut total = 0.0;
            for &t in &w.mem.regions[r].accessors {
                let cpu = w.tasks[t].cpu;
                if w.cpus[cpu].curr != Some(t) && w.tasks[t].last_ran + w.tick_ns < w.now {
                    continue;
                }
                let l = w.access_rate(t) * dt / bytes;
                if l > 0.0 {
                    total += l;
                    lam.push((t, total));
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
                let mut hits = Vec::new();
                let mut i = 0usize;
                while i < n {
                    let e = -(1.0 - rand_unit(&mut w.rng)).ln();
                    let gap = (e / total).floor();
                    if gap >= (n - i) as f64 {
                        break;
                    }
                    i += gap as usize;
                    hits.push(i);
                    i += 1;
                }
                for &h in &hits {
                    let x = rand_unit(&mut w.rng) * total;
                    let idx = lam.partition_point(|&(_, cum)| cum <= x).min(lam.len() - 1);
                    let t = lam[idx].0;
                    let c = marked[h] as usize;
                    w.mem.marked[c] = false;
                    self.common.access(w, t, c, true);
                    w.charge_sys(t, self.fault_ns);
                }
                for &h in hits.iter().rev() {
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
    }
}

impl Balancer for AutoNuma {
    fn tick(&mut self, w: &mut World, _s: &mut dyn Scheduler) {
        self.ensure(w);
        for cpu in 0..w.m.ncpus {
            let Some(t) = w.cpus[cpu].curr else { continue };
            if !matches!(w.tasks[t].work, crate::engine::Work::Compute { .. }) {
                continue;
            }
            // task_tick_numa: the first scan after scan_delay of runtime,
            // then one per scan period of runtime.
            let runtime = (w.tasks[t].user_ns + w.tasks[t].sys_ns) as u64;
            if self.common.tasks[t].scan_period_ms == 0.0 {
                let p = w.tasks[t].process;
                self.common.tasks[t].scan_period_ms = self.scan_min(w, p);
                self.node_stamp[t] = self.scan_delay_ns;
            }
            if runtime >= self.node_stamp[t] {
                let period_ms = self.common.tasks[t].scan_period_ms;
                self.node_stamp[t] = runtime + (period_ms * 1e6) as u64;
                self.scan(w, t);
            }
        }
        // Placement, task moves and memory migration happen on the faults
        // (task_numa_fault).
        self.faults(w);
        self.common.reap(w);
    }
}
