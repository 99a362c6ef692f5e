//! `nest`: NEST (Lawall, Chhaya-Shailesh, Lozi, Lepers, Zwaenepoel,
//! Muller, "OS Scheduling with Nest: Keeping Tasks Close Together on Warm
//! Cores", EuroSys 2022), as ANCHORS.md summarises it.
//!
//! A primary nest of cores in use and a reserve nest (at most
//! `reserve_max` cores, 5 in the paper). Placement of a new or woken task:
//! its previous CPU if idle and in the primary nest; else an idle primary
//! CPU (searched from the previous CPU's LLC outwards); else an idle
//! reserve CPU, which is promoted to the primary nest; else CFS's choice,
//! which joins the reserve. A primary CPU idle for `compact_ms` (2 ms) is
//! compacted into the reserve (or dropped when it is full). Periodic load
//! balancing is CFS's (the `linux` module). The payoff comes through the
//! frequency model: fewer, busier cores stay at high PELT utilisation
//! (schedutil) and leave boost headroom in the package.

use super::linux::Linux;
use crate::engine::{CpuId, Placement, Scheduler, TaskId, World};
use crate::machine::Machine;
use crate::params::Params;

pub struct Nest {
    cfs: Linux,
    /// For each CPU, all CPUs in search order: its LLC, its node, the rest.
    orders: Vec<Vec<CpuId>>,
    primary: Vec<bool>,
    reserve: Vec<bool>,
    reserve_max: usize,
    compact_ns: u64,
}

pub fn build(p: &mut Params, m: &Machine) -> Result<Box<dyn Scheduler>, String> {
    let reserve_max = p.u64("reserve_max", 5, "largest reserve nest (cores)")?;
    let compact_ms = p.f64(
        "compact_ms",
        2.0,
        "idle time after which a primary core leaves the nest",
    )?;
    let cfs = Linux::new(p, m)?;
    let orders = (0..m.ncpus).map(|c| Nest::order(m, c)).collect();
    Ok(Box::new(Nest {
        cfs,
        orders,
        primary: vec![false; m.ncpus],
        reserve: vec![false; m.ncpus],
        reserve_max: reserve_max as usize,
        compact_ns: (compact_ms * 1e6) as u64,
    }))
}

impl Nest {
    /// Candidate CPUs in search order: prev's LLC, prev's node, the rest.
    fn order(m: &Machine, prev: CpuId) -> Vec<CpuId> {
        let llc = m.cpu_llc[prev];
        let node = m.cpu_node[prev];
        let n = m.ncpus;
        let key = |c: CpuId| {
            let rank = if m.cpu_llc[c] == llc {
                0
            } else if m.cpu_node[c] == node {
                1
            } else {
                2
            };
            (rank, (c + n - prev) % n)
        };
        let mut v: Vec<CpuId> = (0..n).collect();
        v.sort_by_key(|&c| key(c));
        v
    }

    fn reserve_len(&self) -> usize {
        self.reserve.iter().filter(|&&r| r).count()
    }
}

impl Scheduler for Nest {
    fn select_cpu(&mut self, w: &mut World, t: TaskId, why: Placement) -> CpuId {
        let prev = match why {
            Placement::New { parent_cpu, .. } => parent_cpu,
            Placement::Wake { .. } => w.tasks[t].cpu,
        };
        if self.primary[prev] && w.cpus[prev].is_idle() && w.allowed(t, prev) {
            return prev;
        }
        let order = &self.orders[prev];
        if let Some(&c) = order
            .iter()
            .find(|&&c| self.primary[c] && w.cpus[c].is_idle() && w.allowed(t, c))
        {
            return c;
        }
        if let Some(&c) = self.orders[prev]
            .iter()
            .find(|&&c| self.reserve[c] && w.cpus[c].is_idle() && w.allowed(t, c))
        {
            self.reserve[c] = false;
            self.primary[c] = true;
            return c;
        }
        let c = self.cfs.select(w, t, why);
        if !self.primary[c] && !self.reserve[c] {
            if w.cpus[c].is_idle() && self.reserve_len() < self.reserve_max {
                self.reserve[c] = true;
            } else {
                self.primary[c] = true;
            }
        }
        // A task landing on a reserve CPU makes it primary.
        if self.reserve[c] {
            self.reserve[c] = false;
            self.primary[c] = true;
        }
        c
    }

    fn tick(&mut self, w: &mut World) {
        for cpu in 0..w.m.ncpus {
            if self.primary[cpu]
                && w.cpus[cpu].is_idle()
                && w.now.saturating_sub(w.cpus[cpu].idle_since) >= self.compact_ns
            {
                self.primary[cpu] = false;
                if self.reserve_len() < self.reserve_max {
                    self.reserve[cpu] = true;
                }
            }
        }
        self.cfs.periodic(w);
        // CPUs that received work from the balancer are in use: primary.
        for cpu in 0..w.m.ncpus {
            if !w.cpus[cpu].is_idle() && !self.primary[cpu] {
                self.reserve[cpu] = false;
                self.primary[cpu] = true;
            }
        }
    }

    fn idle(&mut self, w: &mut World, cpu: CpuId) {
        self.cfs.newidle(w, cpu);
    }

    fn slice_ns(&self, w: &World, cpu: CpuId) -> u64 {
        self.cfs.slice(w, cpu)
    }
}
