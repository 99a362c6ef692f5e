//! `sampling`: IBS-driven NUMA balancing as seed 004's RFC series has it
//! (Rao, "[RFC PATCH 0/5] Memory access profiler(IBS) driven NUMA
//! balancing", LKML, Feb 2023). The hardware samples memory accesses with
//! their addresses; each sample is fed to the same fault accounting,
//! migration filter and task placement as a hinting fault
//! ([`super::numa`]; do_numa_access calls task_numa_fault), but nothing is
//! scanned, no page is made inaccessible and no fault is taken. Handling a
//! sample costs `sample_us` of system time.
//!
//! How many samples: the series programs IBS op sampling counting
//! dispatched ops (IBS_OP_CNT_CTL) with a per-task period,
//! p->numa_sample_period (sample_period_def 10000 ops), and on Zen 4 keeps
//! only ops that miss the L3 (IBS_OP_L3MISSONLY). One op in `period` is
//! tagged and reported when it misses, so a running task yields its DRAM
//! line accesses / period samples a second, spread over the memory it
//! accesses (one op per line missed). `rate` > 0 replaces that with a
//! fixed number of samples a second per task.
//!
//! The RFC's rules (patches 4/5 and 5/5): no sample is collected until
//! `delay_ms` (sysctl_numa_balancing_access_faults_delay, 1000) after a
//! task of the process first runs (mm->numa_hw_access_delay); a task's
//! placement runs once per `threshold` (250) counted accesses instead of
//! once per scan pass, only accesses after p->numa_migrate_retry count,
//! and a task is "early" (should_numa_migrate_memory) for its first
//! 4 x threshold; update_task_sample_period adapts the period between
//! `period_min` and `period_max` (5000, 20000) as update_task_scan_period
//! does the scan period; task moves are retried every min(1 s, period /
//! 16 ms). do_numa_access skips compound pages ("TODO: handle PTE-mapped
//! THP"): with huge pages a sample is taken and paid for but not acted
//! on.

use super::numa::{draw_count, HwHints, NumaCommon};
use crate::engine::{rand_below, Balancer, Scheduler, Work, World};
use crate::machine::Machine;
use crate::params::Params;

pub struct Sampling {
    common: NumaCommon,
    period: f64,
    rate: f64,
    sample_ns: f64,
    delay_ns: u64,
    /// Per process: mm->numa_hw_access_delay (ns), set when a task of
    /// the process first runs.
    hw_delay: Vec<Option<u64>>,
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Balancer>, crate::params::ParamError> {
    let period = p.f64_in(
        "period",
        10000.0,
        (16.0, 1e9),
        "IBS op sampling period (IBS_SAMPLE_PERIOD in the RFC): one sample per this many ops that miss the L3",
    )?;
    // One sample per microsecond of a task's run would leave it no time
    // to run: the bound keeps a run finite.
    let rate = p.f64_in(
        "rate",
        0.0,
        (0.0, 1e6),
        "fixed samples per second per running task instead of the period's (0: from the period)",
    )?;
    let sample_us = p.f64(
        "sample_us",
        1.0,
        "system time to handle one sample (estimate)",
    )?;
    let period_min = p.f64_in(
        "period_min",
        5000.0,
        (16.0, 1e9),
        "sysctl_numa_balancing_sample_period_min of the RFC",
    )?;
    let period_max = p.f64_in(
        "period_max",
        20000.0,
        (16.0, 1e9),
        "sysctl_numa_balancing_sample_period_max of the RFC",
    )?;
    let threshold = p.u64(
        "threshold",
        250,
        "sysctl_numa_balancing_access_faults_threshold of the RFC: counted accesses per placement",
    )?;
    let delay_ms = p.f64_in(
        "delay_ms",
        1000.0,
        (0.0, 1e7),
        "sysctl_numa_balancing_access_faults_delay of the RFC: no samples until this long after the process first runs",
    )?;
    let migrate_us_per_mb = super::migrate_us_per_mb(p, m)?;
    let filter = p.bool(
        "filter",
        true,
        "should_numa_migrate_memory (two-reference filter, shared-page rules); false migrates every misplaced page on its sample",
    )?;
    if !(period_min <= period && period <= period_max) {
        return Err(crate::params::ParamError::Inconsistent(format!(
            "sampling: period = {period}: must be between period_min ({period_min}) and period_max ({period_max})"
        )));
    }
    if threshold == 0 {
        return Err(crate::params::ParamError::Inconsistent(
            "sampling: threshold = 0: must be at least 1".into(),
        ));
    }
    let mut common = NumaCommon::new(m, migrate_us_per_mb * 1e3, filter, false);
    common.set_hw_hints(HwHints {
        threshold,
        period_min,
        period_max,
    });
    Ok(Box::new(Sampling {
        common,
        period,
        rate,
        sample_ns: sample_us * 1e3,
        delay_ns: (delay_ms * 1e6) as u64,
        hw_delay: Vec::new(),
    }))
}

impl Balancer for Sampling {
    fn tick(&mut self, w: &mut World, s: &mut dyn Scheduler) {
        self.common.ensure(w);
        self.common.set_sd_numa(s.numa_imbalance_pct());
        if self.hw_delay.len() < w.mem.proc_node.len() {
            self.hw_delay.resize(w.mem.proc_node.len(), None);
        }
        let tick_s = w.tick_ns as f64 / 1e9;
        let huge = w.mem.chunk_pages() > 1;
        for cpu in 0..w.m.ncpus {
            let Some(t) = w.cpus[cpu].curr else { continue };
            // delay_hw_access_profiling: armed at the process's first
            // sched-in, no sampling before it passes.
            let p = w.tasks[t].process;
            let until = *self.hw_delay[p].get_or_insert(w.now + self.delay_ns);
            if w.now < until {
                continue;
            }
            let Work::Compute { access, init, .. } = &w.tasks[t].work else {
                continue;
            };
            if !init.is_empty() || access.is_empty() {
                continue;
            }
            let access = access.clone();
            if self.common.tasks[t].sample_period == 0.0 {
                // init_numa_balancing: sysctl_numa_balancing_sample_period_def.
                self.common.tasks[t].sample_period = self.period;
            }
            let per_tick = if self.rate > 0.0 {
                self.rate * tick_s
            } else {
                // access_rate is bytes per ns of the task's memory lines.
                w.access_rate(t) * 1e9 / w.m.line_bytes / self.common.tasks[t].sample_period
                    * tick_s
            };
            let k = draw_count(w, per_tick);
            let wsum: f64 = access.iter().map(|a| a.1).sum();
            for _ in 0..k {
                w.charge_sys(t, self.sample_ns);
                if huge {
                    // do_numa_access: PageCompound pages are skipped.
                    continue;
                }
                // Region by weight, then a chunk of it uniformly.
                let mut x = crate::engine::rand_unit(&mut w.rng) * wsum;
                let mut r = access[0].0;
                for &(reg, wt) in &access {
                    r = reg;
                    if x < wt {
                        break;
                    }
                    x -= wt;
                }
                let reg = &w.mem.regions[r];
                let c = reg.first + rand_below(&mut w.rng, reg.len as u64) as usize;
                self.common.access(w, t, c, false);
            }
        }
        self.common.reap(w);
    }
}
