//! `node-blind`: the O(1) scheduler of Linux 2.5.39 as seed 000's A saw
//! it. One queue per CPU; a new task starts on its parent's CPU; a woken
//! task on its previous CPU; every CPU periodically (200 ms when busy,
//! 1 ms when idle: BUSY_REBALANCE_TICK and IDLE_REBALANCE_TICK in
//! kernel/sched.c of 2.5) compares its queue length with the longest
//! queue anywhere and pulls half the difference. Nodes play no part.
//! `max_pull=1` gives seed 000's B (steals limited to one task).

use super::{pick_queued, O1_SLICE_MS};
use crate::engine::{CpuId, Placement, Scheduler, TaskId, World};
use crate::machine::Machine;
use crate::params::Params;

pub struct NodeBlind {
    busy_ns: u64,
    idle_ns: u64,
    slice_ns: u64,
    max_pull: usize,
    next: Vec<u64>,
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn crate::engine::Scheduler>, String> {
    let busy_ms = p.f64("busy_ms", 200.0, "balance interval of a busy CPU")?;
    let idle_ms = p.f64("idle_ms", 1.0, "balance interval of an idle CPU")?;
    let slice_ms = p.f64("slice_ms", O1_SLICE_MS as f64, "time slice")?;
    let max_pull = p.u64(
        "max_pull",
        0,
        "most tasks pulled per balance (0 = half the imbalance)",
    )?;
    Ok(Box::new(NodeBlind {
        busy_ns: (busy_ms * 1e6) as u64,
        idle_ns: (idle_ms * 1e6).max(1.0) as u64,
        slice_ns: (slice_ms * 1e6).max(1e5) as u64,
        max_pull: if max_pull == 0 {
            usize::MAX
        } else {
            max_pull as usize
        },
        next: vec![0; m.ncpus],
    }))
}

impl NodeBlind {
    fn balance(&mut self, w: &mut World, cpu: CpuId) {
        let this = w.nr_running(cpu);
        // Busiest queue anywhere (lowest number on ties).
        let mut busiest = None;
        let mut max = 0;
        for c in 0..w.m.ncpus {
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
        let n = ((max - this) / 2).max(1).min(self.max_pull);
        for _ in 0..n {
            match pick_queued(w, b, cpu, |_| false) {
                Some(t) => {
                    w.migrate(t, cpu);
                }
                None => break,
            }
        }
    }
}

impl Scheduler for NodeBlind {
    fn select_cpu(&mut self, w: &mut World, t: TaskId, why: Placement) -> CpuId {
        let c = match why {
            Placement::New { parent_cpu, .. } => parent_cpu,
            Placement::Wake { .. } => w.tasks[t].cpu,
        };
        if w.allowed(t, c) {
            c
        } else {
            super::least_loaded(w, t, &(0..w.m.ncpus).collect::<Vec<_>>()).unwrap_or(c)
        }
    }

    fn tick(&mut self, w: &mut World) {
        for cpu in 0..w.m.ncpus {
            if w.now < self.next[cpu] {
                continue;
            }
            self.balance(w, cpu);
            let idle = w.cpus[cpu].is_idle();
            self.next[cpu] = w.now + if idle { self.idle_ns } else { self.busy_ns };
        }
    }

    fn idle(&mut self, w: &mut World, cpu: CpuId) {
        self.balance(w, cpu);
    }

    fn slice_ns(&self, _w: &World, _cpu: CpuId) -> u64 {
        self.slice_ns
    }
}
