//! Schedulers. Each is one module implementing [`Scheduler`]; the
//! [`REGISTRY`] line is the only other place that names it.

use crate::engine::{CpuId, Scheduler, TaskId, TaskState, World};
use crate::machine::Machine;
use crate::params::PolicySpec;

pub mod linux;
pub mod nest;
pub mod node_affine;
pub mod node_blind;

pub type Entry = crate::params::Entry<dyn Scheduler>;

pub const REGISTRY: &[Entry] = &[
    Entry {
        name: "node-blind",
        summary: "O(1)-style per-CPU queues balanced by length across all CPUs (scheduler A of Focht's 2002 numa_test results)",
        build: node_blind::build,
    },
    Entry {
        name: "linux",
        summary: "CFS-like domains (SMT, LLC, node, machine) with imbalance thresholds, fork balancing, wake-affine",
        build: linux::build,
    },
    Entry {
        name: "node-affine",
        summary: "Focht's homenode scheduler (Focht 2002 E, 2003); dynamic=true,initial=false is Focht 2002's F",
        build: node_affine::build,
    },
    Entry {
        name: "nest",
        summary: "NEST (Lawall et al., EuroSys 2022): primary and reserve nests of warm cores",
        build: nest::build,
    },
];

/// Build a scheduler from `NAME[k=v,...]`.
pub fn build(
    spec: &PolicySpec,
    m: &Machine,
) -> Result<Box<dyn Scheduler>, crate::params::ParamError> {
    crate::params::build_from("scheduler", REGISTRY, spec, m)
}

/// `name`, summary and `k=default,...` of each scheduler.
pub fn list(m: &Machine) -> Vec<(String, String, String)> {
    crate::params::describe_all(REGISTRY, m)
}

// ----- helpers shared by schedulers -----

/// The allowed CPU among `cpus` with the fewest runnable tasks, preferring
/// CPUs whose SMT siblings are idle too, then the lowest number.
pub fn least_loaded(w: &World, t: TaskId, cpus: &[CpuId]) -> Option<CpuId> {
    let mut best: Option<(usize, usize, CpuId)> = None;
    for &c in cpus {
        if !w.allowed(t, c) {
            continue;
        }
        let nr = w.nr_running(c);
        let core = w.m.cpu_core[c];
        let sib: usize = w.m.core_cpus[core]
            .iter()
            .filter(|&&s| s != c)
            .map(|&s| w.nr_running(s))
            .sum();
        let key = (nr, sib, c);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    best.map(|b| b.2)
}

/// Pick a queued (not running) task on `from` that may run on `to`,
/// preferring ones that match `prefer`, taking from the tail (the most
/// recently queued, the least cache-hot in an O(1) expired array).
pub fn pick_queued(
    w: &World,
    from: CpuId,
    to: CpuId,
    prefer: impl Fn(TaskId) -> bool,
) -> Option<TaskId> {
    let q = &w.cpus[from].queue;
    let mut fallback = None;
    // Like the kernel's load balancer, look at no more than 32 tasks.
    for &t in q.iter().rev().take(32) {
        if w.tasks[t].state != TaskState::Runnable || !w.allowed(t, to) {
            continue;
        }
        if prefer(t) {
            return Some(t);
        }
        if fallback.is_none() {
            fallback = Some(t);
        }
    }
    fallback
}

/// Time slice of the O(1) scheduler for nice-0 tasks (DEF_TIMESLICE).
pub const O1_SLICE_MS: u64 = 100;

/// 4 nodes x 4 CPUs with `on[c]` tasks on CPU c (one running, the rest
/// queued), the tasks, and the scheduler `policy`.
#[cfg(test)]
pub(crate) fn world_with(policy: &str, on: &[usize]) -> (World, Vec<TaskId>, Box<dyn Scheduler>) {
    let m = crate::tests::nodes_machine(4, 4);
    let mut w = crate::tests::empty_world(&m);
    let mut ts = Vec::new();
    for (cpu, &n) in on.iter().enumerate() {
        for k in 0..n {
            let work = crate::workload::spin_work(1e12);
            let t = crate::workload::add_task(
                &mut w,
                "t".into(),
                0,
                work,
                1,
                crate::engine::Parent::Cpu(0),
                false,
                0,
                true,
            );
            w.tasks[t].cpu = cpu;
            w.tasks[t].placed = true;
            if k == 0 {
                w.tasks[t].state = TaskState::Running;
                w.cpus[cpu].curr = Some(t);
            } else {
                w.tasks[t].state = TaskState::Runnable;
                w.cpus[cpu].queue.push_back(t);
            }
            ts.push(t);
        }
    }
    let s = crate::sched::build(&PolicySpec::parse(policy).unwrap(), &m).unwrap();
    (w, ts, s)
}
