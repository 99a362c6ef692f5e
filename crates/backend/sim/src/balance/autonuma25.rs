//! AutoNUMA25's task exchange (Andrea Arcangeli's aa.git `autonuma`
//! branch, 2012; posted as "[PATCH 10/33] autonuma: CPU follows memory
//! algorithm", linux-mm, 4 Oct 2012): `__sched_autonuma_balance` in its
//! kernel/sched/numa.c, run by every busy CPU from the SCHED_SOFTIRQ load
//! balancing (run_rebalance_domains). Seed 002 measured this kernel, not
//! kernel/sched/fair.c's task_numa_migrate.
//!
//! For the task running on a CPU, with weights in thousandths:
//!
//! - mm weights: the share of its process's pages on each node, as
//!   knuma_scand counted them over its last complete pass
//!   (mm_autonuma->mm_numa_fault); nothing happens before the first pass;
//! - task weights: the share of its own hinting faults on each node's
//!   memory (task_autonuma->task_numa_fault, halved at each new pass);
//! - if both the task's and its process's busiest node is this CPU's node,
//!   nothing happens. Otherwise every non-idle CPU of the other nodes that
//!   the task may use is examined: `w_other` is the running task's weight
//!   for that node (its task weight if it is a thread of the same process,
//!   else its process's mm weight), `w_nid` and `w_this_nid` the current
//!   task's weights (task or mm, the same choice) for that node and for
//!   its own. The two exchange places when `other_diff = w_nid - w_other`
//!   and `this_diff = w_nid - w_this_nid` are both positive; among several
//!   candidates the largest `other_diff + this_diff` wins.
//!
//! Unlike task_numa_compare, the other task's loss is not charged: a
//! process with a larger share on a node takes that node from a process
//! with a smaller one, however small the difference.

use super::numa::NumaCommon;
use crate::engine::{CpuId, TaskId, World};

/// AUTONUMA_BALANCE_SCALE.
const SCALE: u64 = 1000;

/// `fault * SCALE / tot` in integers, as the kernel computes a weight
/// (`tot` raised to `fault` if a racy read made it smaller).
fn weight(fault: u64, tot: u64) -> i64 {
    let tot = tot.max(fault).max(1);
    (fault * SCALE / tot) as i64
}

/// A task's weights per node: from its own faults (task) or from its
/// process's last counted pages (mm).
fn task_weights(c: &NumaCommon, t: TaskId, nn: usize) -> (Vec<u64>, u64) {
    let f: Vec<u64> = (0..nn).map(|n| c.faults_on(t, n).max(0.0) as u64).collect();
    let tot = f.iter().sum();
    (f, tot)
}

/// The node of the largest weight (the first, on a tie), if any is positive.
fn busiest(w: &[i64]) -> Option<usize> {
    let mut best = None;
    let mut max = 0;
    for (n, &x) in w.iter().enumerate() {
        if x > max {
            max = x;
            best = Some(n);
        }
    }
    best
}

/// __sched_autonuma_balance for the task running on `this_cpu`; `mm` is
/// each process's pages per node at its last complete scan pass (empty
/// before the first). Returns the exchange made, if any.
pub fn balance(
    c: &NumaCommon,
    mm: &[Vec<u64>],
    w: &mut World,
    this_cpu: CpuId,
) -> Option<(TaskId, TaskId)> {
    let p = w.cpus[this_cpu].curr?;
    if !matches!(w.tasks[p].work, crate::engine::Work::Compute { .. }) {
        return None;
    }
    let nn = w.m.nnodes;
    let proc_p = w.tasks[p].process;
    let mm_p = mm.get(proc_p).filter(|v| !v.is_empty())?;
    let mm_tot: u64 = mm_p.iter().sum();
    let (tf, task_tot) = task_weights(c, p, nn);
    if mm_tot == 0 || task_tot == 0 {
        return None;
    }
    let mw: Vec<i64> = mm_p.iter().map(|&f| weight(f, mm_tot)).collect();
    let tw: Vec<i64> = tf.iter().map(|&f| weight(f, task_tot)).collect();
    let this_nid = w.m.cpu_node[this_cpu];
    if busiest(&tw) == Some(this_nid) && busiest(&mw) == Some(this_nid) {
        return None;
    }
    let mut best: Option<(i64, CpuId, TaskId)> = None;
    for nid in (0..nn).filter(|&n| n != this_nid) {
        for &cpu in &w.m.node_cpus[nid] {
            if !w.allowed(p, cpu) {
                continue;
            }
            let Some(q) = w.cpus[cpu].curr else { continue };
            if !matches!(w.tasks[q].work, crate::engine::Work::Compute { .. }) {
                continue;
            }
            let same = w.tasks[q].process == proc_p;
            let (fault, tot) = if same {
                let (f, tot) = task_weights(c, q, nn);
                (f[nid], tot)
            } else {
                match mm.get(w.tasks[q].process).filter(|v| !v.is_empty()) {
                    Some(v) => (v[nid], v.iter().sum()),
                    None => (0, 0),
                }
            };
            if tot == 0 || !w.allowed(q, this_cpu) {
                continue;
            }
            let w_other = weight(fault, tot);
            let (w_nid, w_this) = if same {
                (tw[nid], tw[this_nid])
            } else {
                (mw[nid], mw[this_nid])
            };
            let (other_diff, this_diff) = (w_nid - w_other, w_nid - w_this);
            if other_diff > 0 && this_diff > 0 {
                let diff = other_diff + this_diff;
                if best.is_none_or(|(b, _, _)| diff > b) {
                    best = Some((diff, cpu, q));
                }
            }
        }
    }
    let (_, cpu, q) = best?;
    // autonuma_balance_cpu_stop on both CPUs: each task to the other's CPU.
    if w.migrate(p, cpu) && w.migrate(q, this_cpu) {
        w.stats.numa_swaps += 1;
        return Some((p, q));
    }
    None
}
