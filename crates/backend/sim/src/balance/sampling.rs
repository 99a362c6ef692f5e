//! `sampling`: IBS-driven NUMA balancing as seed 004 describes it. The
//! hardware samples memory accesses with their addresses; each sample is
//! fed to the same fault accounting, migration filter and task placement
//! as a hinting fault ([`super::numa`]), but nothing is scanned, no page is
//! made inaccessible and no fault is taken. Handling a sample costs
//! `sample_us` of system time. Placement runs every `placement_ms` per
//! task.
//!
//! How many samples: the RFC series programs IBS op sampling with a
//! fixed period of 10000 (IBS_SAMPLE_PERIOD), counting dispatched ops
//! (IBS_OP_CNT_CTL), and on Zen 4 keeps only ops that miss the L3
//! (IBS_OP_L3MISSONLY). One op in `period` is tagged and reported when it
//! misses, so a running task yields its DRAM line accesses / `period`
//! samples a second, spread over the memory it accesses. `rate` > 0
//! replaces that with a fixed number of samples a second per task.
//!
//! With no scan passes to count, a pass (`mm->numa_scan_seq`) is every
//! `placement_ms`: a task's placement runs on its first sample after one,
//! and its task moves are retried every `placement_ms` / 16 (the kernel's
//! min(1 s, scan period / 16)).

use super::numa::{draw_count, NumaCommon};
use crate::engine::{rand_below, Balancer, Scheduler, Work, World};
use crate::machine::Machine;
use crate::params::Params;

pub struct Sampling {
    common: NumaCommon,
    period: f64,
    rate: f64,
    sample_ns: f64,
    placement_ms: f64,
    next_pass: u64,
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Balancer>, String> {
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
    let placement_ms = p.f64("placement_ms", 1000.0, "interval between task placements")?;
    let migrate_us_per_mb = p.f64(
        "migrate_us_per_mb",
        250.0,
        "system time to migrate 1 MiB (estimate)",
    )?;
    let filter = p.bool(
        "filter",
        true,
        "should_numa_migrate_memory (two-reference filter, shared-page rules); false migrates every misplaced page on its sample",
    )?;
    if placement_ms <= 0.0 {
        return Err("sampling: need placement_ms > 0".into());
    }
    Ok(Box::new(Sampling {
        common: NumaCommon::new(m, migrate_us_per_mb * 1e3, filter, false),
        period,
        rate,
        sample_ns: sample_us * 1e3,
        placement_ms,
        next_pass: 0,
    }))
}

impl Balancer for Sampling {
    fn tick(&mut self, w: &mut World, s: &mut dyn Scheduler) {
        self.common.ensure(w);
        self.common.set_sd_numa(s.numa_imbalance_pct());
        let pass_ns = (self.placement_ms * 1e6).max(1.0) as u64;
        if self.next_pass == 0 {
            self.next_pass = w.now + pass_ns;
        } else if w.now >= self.next_pass {
            self.next_pass += pass_ns;
            for seq in self.common.scan_seq.iter_mut() {
                *seq += 1;
            }
        }
        let tick_s = w.tick_ns as f64 / 1e9;
        for cpu in 0..w.m.ncpus {
            let Some(t) = w.cpus[cpu].curr else { continue };
            let Work::Compute { access, init, .. } = &w.tasks[t].work else {
                continue;
            };
            if !init.is_empty() || access.is_empty() {
                continue;
            }
            let access = access.clone();
            let per_tick = if self.rate > 0.0 {
                self.rate * tick_s
            } else {
                // access_rate is bytes per ns of the task's memory lines.
                w.access_rate(t) * 1e9 / w.m.line_bytes / self.period * tick_s
            };
            self.common.tasks[t].scan_period_ms = self.placement_ms;
            let k = draw_count(w, per_tick);
            let wsum: f64 = access.iter().map(|a| a.1).sum();
            for _ in 0..k {
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
                w.charge_sys(t, self.sample_ns);
            }
        }
        self.common.reap(w);
    }
}
