//! Where memory traffic saturates, and what a task switch and a wakeup
//! cost.
//!
//! - **A controller's saturation**: the read bandwidth of 1, 2, 4, ...
//!   threads (up to every CPU of the machine) on one node's memory; the
//!   controller saturates at the fewest threads that reach 90% of the
//!   most any count reached.
//! - **Links** (on several nodes): every CPU of node i reading node j's
//!   memory. The model's remote bandwidth is already limited by the
//!   latency (each core keeps `mlp` misses in flight) and by node j's
//!   controller, and the CPUs by what they read locally; a link is
//!   written (`[[bus]]`, node i's CPUs to node j's memory) only where
//!   the measured figure is well below all three, so the model does not
//!   count a limit twice (nor an emulated CPU's slowness as a link).
//! - **One memory system behind several nodes**: every CPU reading its
//!   own node's memory at once, against the most one node's memory gave.
//!   If all the nodes together carry little more than one (a guest whose
//!   "nodes" share one host memory, an SMP board with one controller),
//!   the file says `controllers = "single"`.
//! - **Task switch and wakeup** (lmbench's `lat_ctx` and `lat_pipe`): a
//!   byte passed back and forth through two pipes between two processes,
//!   on one CPU (two context switches a round trip) and on two CPUs (two
//!   wakeups of a task blocked in `read`). The model has no parameter for
//!   either yet (its hackbench message, `costs.msg_us`, includes both):
//!   they are written as comments.

use crate::figure::{round3, Figure};
use numalab_bench::mem::Op;
use std::path::Path;
use std::time::Duration;

/// Share of the best bandwidth at which a controller counts as
/// saturated.
pub const SATURATED: f64 = 0.9;
/// A link is written when the measured remote bandwidth is below this
/// share of what latency and the controller alone allow.
pub const LINK_LIMITED: f64 = 0.8;
/// Nodes together carrying less than this times one node's bandwidth
/// share one memory system.
pub const SINGLE_SYSTEM: f64 = 1.25;

/// Thread counts of a saturation curve: 1, 2, 4, ... and `max`.
pub fn counts(max: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |&k| Some(k * 2))
        .take_while(|&k| k < max)
        .collect();
    v.push(max.max(1));
    v.dedup();
    v
}

/// The fewest threads of `curve` ((threads, GB/s), ascending threads)
/// that reach [`SATURATED`] of its best, and that best.
pub fn saturates_at(curve: &[(usize, f64)]) -> Option<(usize, f64)> {
    let best = curve.iter().map(|c| c.1).fold(f64::NAN, f64::max);
    curve
        .iter()
        .find(|c| c.1 >= SATURATED * best)
        .map(|c| (c.0, best))
}

/// Whether a measured remote bandwidth shows a link of its own: well
/// below what the same CPUs read of their own node's memory (`local`: a
/// CPU that cannot go faster, as an emulated one, is no link's doing),
/// the latency-bound rate of the reading CPUs, and the memory's
/// controller.
pub fn link_limited(measured: f64, local: f64, latency_bound: f64, controller: f64) -> bool {
    measured < LINK_LIMITED * local.min(latency_bound).min(controller)
}

/// Whether `nodes` nodes read at once (each its own memory) carry so
/// little more than the best single node that they share one memory
/// system.
pub fn single_system(all_local: f64, best_node: f64, nodes: usize) -> bool {
    nodes >= 2 && all_local < SINGLE_SYSTEM * best_node
}

/// How each reading sweep runs: numalab's binary (each sweep a process of
/// its own, as the mem benchmark's), the bytes each thread sweeps, and
/// for how long.
#[derive(Debug, Clone, Copy)]
pub struct Sweep<'a> {
    pub exe: &'a Path,
    pub bytes_each: u64,
    pub budget: Duration,
}

impl Sweep<'_> {
    /// Read bandwidth (GB/s) of a thread on each of `cpus`, each reading
    /// its own buffer on `node`.
    fn read_gbs(&self, cpus: &[u32], node: u32) -> std::io::Result<f64> {
        crate::memory::bandwidth(self.exe, cpus, node, self.bytes_each, Op::Read, self.budget)
            .map(|b| b / 1e9)
    }
}

/// Read bandwidth (GB/s) of the first `k` of `cpus` on `node`, for each
/// `k` of [`counts`], each once.
pub fn curve(sweep: Sweep, cpus: &[u32], node: u32) -> std::io::Result<Vec<(usize, f64)>> {
    counts(cpus.len())
        .into_iter()
        .map(|k| sweep.read_gbs(&cpus[..k], node).map(|b| (k, b)))
        .collect()
}

/// Every node's CPUs reading their own node's memory at once (GB/s).
pub fn all_local(sweep: Sweep, nodes: &[(u32, Vec<u32>)]) -> std::io::Result<f64> {
    crate::costs::sum_at_once(nodes, |(n, cpus)| sweep.read_gbs(cpus, *n))
}

/// Microseconds per one-way pass of a byte between `a` and `b` (the same
/// CPU: a context switch; two CPUs: a wakeup), over about `budget`. The
/// caller's affinity is restored.
pub fn pingpong_us(a: u32, b: u32, budget: Duration) -> std::io::Result<f64> {
    let old = crate::memory::pin(&[a])?;
    let result = (|| {
        // A short trial sizes the measured run to the budget.
        let trial = 200u64;
        let t = numalab_linux::child::pipe_pingpong(a, b, trial)?;
        let per = t.as_secs_f64() / trial as f64;
        let rounds = ((budget.as_secs_f64() / per.max(1e-9)) as u64).clamp(100, 10_000_000);
        let t = numalab_linux::child::pipe_pingpong(a, b, rounds)?;
        Ok(t.as_secs_f64() * 1e6 / (2 * rounds) as f64)
    })();
    let _ = numalab_linux::numa::set_affinity(0, &old);
    result
}

/// Measure it all on `topo`: `lat[i][j]` the latency (ns) from CPU node
/// `i` to memory node `j` (positions among the nodes with CPUs), `mlp`
/// and `controller` (GB/s) the model's figures already found, each
/// sweep as `sweep` says (its budget also each pipe round trip's).
pub fn measure(
    sweep: Sweep,
    topo: &numalab_topology::Topology,
    lat: &[Vec<f64>],
    mlp: f64,
    controller: f64,
    runs: usize,
) -> std::io::Result<Measured> {
    let budget = sweep.budget;
    let nodes: Vec<(u32, Vec<u32>)> = topo.cpu_nodes().map(|n| (n.id, n.cpus.clone())).collect();
    let all: Vec<u32> = topo.cpus.iter().map(|c| c.id).collect();
    let mut m = Measured::default();
    for (n, _) in &nodes {
        m.curves.push((*n, curve(sweep, &all, *n)?));
    }
    if nodes.len() >= 2 {
        for (ix, (i, cpus)) in nodes.iter().enumerate() {
            let local = sweep.read_gbs(cpus, *i)?;
            m.local.push((*i, local));
            for (jx, (j, _)) in nodes.iter().enumerate() {
                if ix == jx {
                    continue;
                }
                let b = sweep.read_gbs(cpus, *j)?;
                // Each core keeps mlp lines in flight, each for the latency.
                let latency_bound = cpus.len() as f64 * 64.0 * mlp / lat[ix][jx].max(1.0);
                m.links
                    .push((*i, *j, b, link_limited(b, local, latency_bound, controller)));
            }
        }
        let best = m
            .curves
            .iter()
            .filter_map(|(_, c)| saturates_at(c).map(|s| s.1))
            .fold(0.0, f64::max);
        let total = all_local(sweep, &nodes)?;
        m.all_local = Some((total, single_system(total, best, nodes.len())));
    }
    let first = &nodes[0].1;
    let a = *first.last().unwrap_or(&0);
    let rep = |x: u32, y: u32, what: &str| -> std::io::Result<Figure> {
        crate::memory::repeat(
            runs,
            format!("a byte through two pipes between processes on CPU {x} and CPU {y}, half a round trip ({what})"),
            || pingpong_us(x, y, budget),
        )
    };
    m.switch = Some(rep(a, a, "lmbench lat_ctx without a working set")?);
    let other_core = first
        .iter()
        .copied()
        .find(|&c| topo.cpu(c).map(|x| x.core) != topo.cpu(a).map(|x| x.core));
    if let Some(c) = other_core {
        m.wakeup = Some(rep(c, a, "lmbench lat_pipe")?);
    }
    if let Some((_, cpus)) = nodes.get(1) {
        if let Some(&c) = cpus.last() {
            m.wakeup_remote = Some(rep(a, c, "lmbench lat_pipe across nodes")?);
        }
    }
    Ok(m)
}

/// What this module measured, for the machine file.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Per node: its saturation curve.
    pub curves: Vec<(u32, Vec<(usize, f64)>)>,
    /// (CPU node, memory node, GB/s, written as a link).
    pub links: Vec<(u32, u32, f64, bool)>,
    /// (node, GB/s): the node's own CPUs reading its memory.
    pub local: Vec<(u32, f64)>,
    /// Every node's CPUs on their own memory at once, and whether that
    /// makes one memory system.
    pub all_local: Option<(f64, bool)>,
    /// A task switch on one CPU, a wakeup on another core, and one on
    /// another node (us).
    pub switch: Option<Figure>,
    pub wakeup: Option<Figure>,
    pub wakeup_remote: Option<Figure>,
}

impl Measured {
    /// Comment lines and tables for the `[memory]` part of the file.
    pub fn memory_toml(&self) -> String {
        let mut t = String::new();
        for (n, c) in &self.curves {
            let pts: Vec<String> = c
                .iter()
                .map(|(k, b)| format!("{k}: {}", round3(*b)))
                .collect();
            t += &format!(
                "# node {n}'s memory read by 1, 2, 4... threads (GB/s): {}\n",
                pts.join(", ")
            );
            if let Some((k, best)) = saturates_at(c) {
                t += &format!(
                    "# node {n}'s controller saturates at {k} thread{} ({}% of the best, {} GB/s)\n",
                    if k == 1 { "" } else { "s" },
                    (SATURATED * 100.0) as u32,
                    round3(best)
                );
            }
        }
        if let Some((b, single)) = self.all_local {
            t += &format!(
                "# every node's CPUs reading their own node's memory at once: {} GB/s{}\n",
                round3(b),
                if single {
                    " (little more than one node's: one memory system)"
                } else {
                    ""
                }
            );
            if single {
                t += "controllers = \"single\"\n";
            }
        }
        for &(i, b) in &self.local {
            t += &format!(
                "# node {i}'s CPUs reading node {i}'s memory: {} GB/s\n",
                round3(b)
            );
        }
        for &(i, j, b, link) in &self.links {
            t += &format!(
                "# node {i}'s CPUs reading node {j}'s memory: {} GB/s{}\n",
                round3(b),
                if link {
                    " (below what they read locally, latency and the controller allow: a link)"
                } else {
                    ""
                }
            );
        }
        for &(i, j, b, _) in self.links.iter().filter(|l| l.3) {
            t += &format!(
                "\n[[bus]]\nname = \"link {i}-{j}\"\nbandwidth_gbs = {:?}\ncpu_nodes = [{i}]\nmemory_nodes = [{j}]\n",
                round3(b)
            );
        }
        t
    }

    /// Comment lines for the `[costs]` part of the file.
    pub fn costs_comments(&self) -> String {
        let mut t = String::new();
        for (what, f) in [
            (
                "a context switch between two processes on one CPU (with a pipe write and read)",
                &self.switch,
            ),
            (
                "a wakeup of a process blocked on a pipe, on another core of the node",
                &self.wakeup,
            ),
            (
                "a wakeup of a process blocked on a pipe, on another node",
                &self.wakeup_remote,
            ),
        ] {
            if let Some(f) = f {
                t += &format!(
                    "# {what}: {} ({}; not a model parameter: costs.msg_us includes it)\n",
                    f.describe("us"),
                    f.how
                );
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_double_up_to_every_cpu() {
        assert_eq!(counts(1), vec![1]);
        assert_eq!(counts(2), vec![1, 2]);
        assert_eq!(counts(6), vec![1, 2, 4, 6]);
        assert_eq!(counts(8), vec![1, 2, 4, 8]);
    }

    #[test]
    fn saturation_is_the_fewest_threads_near_the_best() {
        let c = [(1, 10.0), (2, 19.0), (4, 30.0), (8, 31.0), (16, 29.0)];
        assert_eq!(saturates_at(&c), Some((4, 31.0)));
        assert_eq!(saturates_at(&[(1, 5.0)]), Some((1, 5.0)));
        assert_eq!(saturates_at(&[]), None);
    }

    #[test]
    fn a_link_only_where_nothing_else_explains_the_figure() {
        // Local 25, latency alone allows 20, the controller 30: 10 is a
        // link.
        assert!(link_limited(10.0, 25.0, 20.0, 30.0));
        // 18 is what latency gives: no link.
        assert!(!link_limited(18.0, 25.0, 20.0, 30.0));
        // An emulated CPU reads 1.5 GB/s locally and remotely: no link,
        // however wide latency and the controller would allow.
        assert!(!link_limited(1.4, 1.5, 100.0, 3.0));
        assert!(single_system(11.0, 10.0, 2));
        assert!(!single_system(19.0, 10.0, 2));
        assert!(!single_system(10.0, 10.0, 1));
    }

    #[test]
    fn the_file_part_has_links_and_a_single_system_only_when_found() {
        let m = Measured {
            curves: vec![(0, vec![(1, 5.0), (2, 9.5)])],
            links: vec![(0, 1, 4.0, true), (1, 0, 9.0, false)],
            all_local: Some((10.0, true)),
            ..Measured::default()
        };
        let t = m.memory_toml();
        assert!(t.contains("saturates at 2 threads"), "{t}");
        assert!(t.contains("controllers = \"single\""), "{t}");
        assert_eq!(t.matches("[[bus]]").count(), 1, "{t}");
        assert!(t.contains("cpu_nodes = [0]\nmemory_nodes = [1]"), "{t}");
        let none = Measured::default().memory_toml();
        assert!(!none.contains("controllers") && !none.contains("[[bus]]"));
    }

    #[test]
    fn a_switch_and_a_wakeup_are_measured() {
        let us = pingpong_us(0, 0, Duration::from_millis(20)).unwrap();
        assert!(us > 0.1 && us < 1e4, "{us}");
    }
}
