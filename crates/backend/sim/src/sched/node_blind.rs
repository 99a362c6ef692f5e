//! `node-blind`: the O(1) scheduler of Linux 2.5.39 as seed 000's A saw
//! it. One queue per CPU; a new task starts on its parent's CPU; a woken
//! task on its previous CPU; every CPU periodically (200 ms when busy,
//! 1 ms when idle: BUSY_REBALANCE_TICK and IDLE_REBALANCE_TICK in
//! kernel/sched.c of 2.5) compares its queue length with the longest
//! queue anywhere and pulls half the difference. Nodes play no part.
//! `max_pull=1` gives seed 000's B (steals limited to one task).
//!
//! When: scheduler_tick balances (idle_tick, load_balance) in the jiffy
//! whose number is a multiple of the interval, `!(jiffies %
//! BUSY_REBALANCE_TICK)`: every CPU in the same jiffy, not at a phase of
//! its own. Within the jiffy each CPU runs its tick at its own local
//! timer interrupt, which the seeds' Itanium machines stagger
//! (ia64_cpu_local_tick, arch/ia64/kernel/time.c: CPU c > 0 fires
//! (2(c - hi) + 1) / 2hi of a tick after CPU 0, hi the largest power of two
//! not above c: 0, 1/2, 1/4, 3/4, 1/8, ...). So CPUs balance in that
//! order, not in index order: an idle CPU 8 of 16 pulls before CPU 1.

use super::{pick_queued, O1_SLICE_MS};
use crate::engine::{CpuId, Placement, Scheduler, TaskId, World};
use crate::machine::Machine;
use crate::params::Params;

pub struct NodeBlind {
    busy_ns: u64,
    idle_ns: u64,
    slice_ns: u64,
    max_pull: usize,
    /// The CPUs in the order of their timer interrupts within a jiffy.
    order: Vec<CpuId>,
    /// The tick length (ns) and the idle and busy intervals in ticks
    /// last computed for it.
    every: Option<(u64, u64, u64)>,
}

/// ia64_cpu_local_tick: CPU `c`'s timer interrupt, as a fraction of a
/// tick after CPU 0's.
pub fn tick_phase(c: usize) -> f64 {
    if c == 0 {
        return 0.0;
    }
    let hi = 1usize << (usize::BITS - 1 - c.leading_zeros());
    (2 * (c - hi) + 1) as f64 / (2 * hi) as f64
}

/// The CPUs ordered by [`tick_phase`] (index order on ties).
pub fn tick_order(ncpus: usize) -> Vec<CpuId> {
    let mut order: Vec<CpuId> = (0..ncpus).collect();
    order.sort_by(|&a, &b| tick_phase(a).total_cmp(&tick_phase(b)).then(a.cmp(&b)));
    order
}

pub fn build(
    p: &mut Params,
    m: &Machine,
) -> Result<Box<dyn crate::engine::Scheduler>, crate::params::ParamError> {
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
        order: tick_order(m.ncpus),
        every: None,
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

    /// scheduler_tick on every CPU, in the order of their timer
    /// interrupts: idle_tick balances when the jiffy is a multiple of
    /// IDLE_REBALANCE_TICK, a busy CPU when it is one of
    /// BUSY_REBALANCE_TICK.
    fn tick(&mut self, w: &mut World) {
        let tick = w.tick_ns.max(1);
        let jiffies = w.now / tick;
        // The intervals in ticks, computed once per tick length.
        let (idle_every, busy_every) = match self.every {
            Some((t, i, b)) if t == tick => (i, b),
            _ => {
                let every = |ns: u64| ((ns as f64 / tick as f64).round() as u64).max(1);
                let e = (every(self.idle_ns), every(self.busy_ns));
                self.every = Some((tick, e.0, e.1));
                e
            }
        };
        // Whether this jiffy balances an idle and a busy CPU: the same
        // for every CPU, so two divisions per tick, not one per CPU.
        let (idle_due, busy_due) = (
            jiffies.is_multiple_of(idle_every),
            jiffies.is_multiple_of(busy_every),
        );
        if !idle_due && !busy_due {
            return;
        }
        for i in 0..self.order.len() {
            let cpu = self.order[i];
            let due = if w.cpus[cpu].is_idle() {
                idle_due
            } else {
                busy_due
            };
            if due {
                self.balance(w, cpu);
            }
        }
    }

    /// 2.5's schedule() balances a CPU that runs out of work at once
    /// (`if (!rq->nr_running) load_balance(rq, 1)`); a CPU that was idle
    /// all along sits in the idle loop and balances only at its timer
    /// tick (idle_tick, every IDLE_REBALANCE_TICK: [`Scheduler::tick`]),
    /// so an idle CPU pulls in the order of the timer interrupts, not in
    /// the order the engine visits CPUs (the engine asks only a CPU that
    /// just ran out of work).
    fn idle(&mut self, w: &mut World, cpu: CpuId) {
        self.balance(w, cpu);
    }

    fn slice_ns(&self, _w: &World, _cpu: CpuId) -> u64 {
        self.slice_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_tick_in_ia64_cpu_local_tick_order() {
        assert_eq!(tick_order(8), vec![0, 4, 2, 5, 1, 6, 3, 7]);
        assert_eq!(&tick_order(16)[..5], &[0, 8, 4, 9, 2]);
        assert_eq!(tick_phase(3), 0.75);
    }

    /// 4 nodes x 4 CPUs; `on[c]` tasks on CPU c (one running, the rest
    /// queued); the scheduler's tick at jiffy `jiffy`; where each task is.
    fn after_tick(on: &[usize], jiffy: u64) -> Vec<usize> {
        let (mut w, ts, mut s) = super::super::world_with("node-blind", on);
        w.now = jiffy * w.tick_ns;
        s.tick(&mut w);
        ts.iter().map(|&t| w.tasks[t].cpu).collect()
    }

    /// Two tasks on CPU 0, every other CPU idle: the first idle CPU to
    /// tick in the jiffy pulls the queued one, CPU 8 (phase 1/16), not
    /// CPU 1 (phase 1/2).
    #[test]
    fn idle_cpus_pull_in_the_order_of_their_timer_interrupts() {
        assert_eq!(after_tick(&[2], 7), vec![0, 8]);
    }

    /// A busy CPU balances only in a jiffy that is a multiple of
    /// BUSY_REBALANCE_TICK (200): CPU 1 with one task beside CPU 0's four
    /// pulls at jiffy 400, not at jiffy 401.
    #[test]
    fn busy_cpus_balance_in_the_same_jiffies() {
        let mut on = vec![4, 1];
        on.resize(16, 1);
        let at = |j| after_tick(&on, j);
        assert_eq!(at(401)[..4], [0, 0, 0, 0]);
        let moved = at(400)[..4].iter().filter(|&&c| c != 0).count();
        assert!(moved >= 1, "{:?}", at(400));
    }
}
