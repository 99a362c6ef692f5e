//! `mem`: memory bandwidth, as `perf bench numa mem` measures it.
//!
//! `threads` threads run on the CPUs of node `cpu_node`, one per core
//! first and then on the SMT siblings, each pinned to its CPU; each
//! allocates its own `bytes` bound to node `mem_node` (`MPOL_BIND`) and
//! first touches it; when all have, they sweep their buffers `loops`
//! times, all at once:
//!
//! - `read`: load every 8-byte word (four independent sums, so the loads
//!   are not serialised by the additions): one line read per line;
//! - `write`: add one to every word (a read-modify-write: a line read and
//!   one written back per line, as perf's `--data_writes`);
//! - `memset`: zero-fill with the C library's memset (stores only; over a
//!   buffer beyond the LLC glibc streams them past the caches).
//!
//! Local bandwidth is `cpu_node == mem_node`; the pair of nodes is the
//! case, so `--cpu-node 0 --mem-node 0,1` puts a node's local and remote
//! bandwidth in one table. The same case on the simulator streams the
//! same lines through its memory model ([`crate::Case::Mem`]), which is
//! how `numalab validate` checks the model's bandwidths against the
//! machine's, and `numalab calibrate` measures with the same sweep.
//!
//! Metrics: `elapsed_s` (from the moment all threads have their memory to
//! the last thread's end: the first touch is not timed), `bandwidth_gbs`
//! (bytes swept by all threads over that time), `thread_bandwidth_gbs`
//! and `thread_bandwidth_min_gbs` (each thread's bytes over its own
//! time), `user_s` and `sys_s` of the process (the first touch's page
//! faults are system time).

use crate::args::*;
use crate::metrics;
use crate::registry::Benchmark;
use crate::{BenchError, Calibration, Case, Resolved};
use numalab_topology::{human_bytes, Topology};
use serde_json::Value;
use std::collections::BTreeMap;

/// How a buffer is swept.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Load every word.
    Read,
    /// Add one to every word (read-modify-write).
    Write,
    /// Zero-fill with memset (stores only).
    Memset,
}

impl Op {
    pub const ALL: [Op; 3] = [Op::Read, Op::Write, Op::Memset];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Memset => "memset",
        }
    }

    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == s)
    }

    /// Cache lines that cross the memory bus per line of buffer swept: a
    /// read-modify-write reads the line and writes it back.
    pub fn lines_per_line(self) -> f64 {
        match self {
            Op::Read | Op::Memset => 1.0,
            Op::Write => 2.0,
        }
    }
}

/// Most bytes one thread sweeps (a sanity bound: 1 TiB).
pub const MAX_BYTES: u64 = 1 << 40;
/// Most threads of one run.
pub const MAX_THREADS: u32 = 4096;
/// Default bytes per thread: this many times the largest LLC, so the
/// sweep is served by memory, not the cache...
pub const LLC_FACTOR: u64 = 4;
/// ...and at least this much: on a 1-node EPYC VM one thread read 64 MiB
/// 17% faster than 256 MiB in one of two sets of rounds side by side,
/// though both are beyond its 32 MiB L3, and in a TCG guest zeroed 48 MiB
/// 22-25% faster (docs/validation.md, 2026-11-28)...
pub const MIN_DEFAULT_BYTES: u64 = 256 << 20;
/// ...and at most this much.
pub const MAX_DEFAULT_BYTES: u64 = 2 << 30;

/// Bytes one thread sweeps to measure memory rather than caches, on a
/// machine whose largest LLC is `llc`: the mem benchmark's default, the
/// validation set's buffers and calibrate's sweeps alike, so a machine
/// file describes the work it is validated on.
pub fn beyond_caches(llc: u64) -> u64 {
    (LLC_FACTOR * llc).clamp(MIN_DEFAULT_BYTES, MAX_DEFAULT_BYTES)
}
/// Default seconds of one run.
pub const DEFAULT_SECONDS: f64 = 5.0;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Params {
    pub op: Op,
    pub threads: u32,
    /// Node whose CPUs run the threads.
    pub cpu_node: u32,
    /// Node the memory is bound to.
    pub mem_node: u32,
    /// Bytes each thread sweeps (its own buffer).
    pub bytes: u64,
    /// Sweeps of each thread over its buffer.
    pub loops: u64,
}

impl Params {
    pub(crate) fn key(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([
            ("op".to_string(), self.op.name().into()),
            ("threads".to_string(), self.threads.into()),
            ("cpu_node".to_string(), self.cpu_node.into()),
            ("mem_node".to_string(), self.mem_node.into()),
            ("bytes".to_string(), self.bytes.into()),
            ("loops".to_string(), self.loops.into()),
        ])
    }

    /// Bytes all threads sweep in one run.
    pub fn bytes_swept(&self) -> u64 {
        self.bytes
            .saturating_mul(self.loops)
            .saturating_mul(self.threads as u64)
    }

    /// Check the parameters against the machine (a deserialised case is
    /// not checked by clap): the nodes exist, the CPU node has CPUs.
    pub fn check(&self, topo: &Topology) -> Result<(), BenchError> {
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(BenchError(format!(
                "--threads: between 1 and {MAX_THREADS}, not {}",
                self.threads
            )));
        }
        if self.bytes < 4096 || self.bytes > MAX_BYTES {
            return Err(BenchError(format!(
                "--bytes: between 4 KiB and 1 TiB, not {}",
                self.bytes
            )));
        }
        if self.loops == 0 {
            return Err(BenchError("--loops: at least 1".into()));
        }
        thread_cpus(topo, self.cpu_node, self.threads)?;
        if topo.node_index(self.mem_node).is_none() {
            return Err(BenchError(format!(
                "--mem-node {}: this machine has nodes {}",
                self.mem_node,
                node_list(topo)
            )));
        }
        Ok(())
    }

    /// The CPU each thread runs on.
    pub fn cpus(&self, topo: &Topology) -> Result<Vec<u32>, BenchError> {
        thread_cpus(topo, self.cpu_node, self.threads)
    }
}

fn node_list(topo: &Topology) -> String {
    topo.node_ids()
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The CPUs of `node` in the order threads take them: one per core (in
/// core order), then each core's second sibling, and so on; with more
/// threads than CPUs, around again.
pub fn thread_cpus(topo: &Topology, node: u32, threads: u32) -> Result<Vec<u32>, BenchError> {
    let Some(ix) = topo.node_index(node) else {
        return Err(BenchError(format!(
            "--cpu-node {node}: this machine has nodes {}",
            node_list(topo)
        )));
    };
    let mut order: Vec<(usize, u32, u32)> = topo.nodes[ix]
        .cpus
        .iter()
        .filter_map(|&c| {
            let cpu = topo.cpu(c)?;
            let rank = topo.siblings(c).iter().filter(|&&s| s < c).count();
            Some((rank, cpu.core, c))
        })
        .collect();
    if order.is_empty() {
        return Err(BenchError(format!(
            "--cpu-node {node}: node {node} has no CPUs (a memory-only node); pick one with CPUs"
        )));
    }
    order.sort();
    Ok((0..threads as usize)
        .map(|t| order[t % order.len()].2)
        .collect())
}

/// Default bytes per thread: [`beyond_caches`], and all threads' within
/// half the memory free on the memory node (when known), in whole MiB.
fn default_bytes(cal: &dyn Calibration, threads: u32, mem_node: u32) -> (u64, String) {
    let llc = cal.machine().topology.max_llc_bytes();
    let want = beyond_caches(llc);
    let mut why = format!(
        "{LLC_FACTOR}x the largest LLC ({}), within {}-{}",
        human_bytes(llc),
        human_bytes(MIN_DEFAULT_BYTES),
        human_bytes(MAX_DEFAULT_BYTES)
    );
    let mut b = want;
    if let Some(free) = cal.node_free_bytes(mem_node) {
        let cap = free / 2 / threads.max(1) as u64;
        if cap < b {
            b = cap;
            why = format!(
                "half the {} free on node {mem_node}, shared by {threads} threads",
                human_bytes(free)
            );
        }
    }
    ((b >> 20).max(1) << 20, why)
}

pub fn resolve(a: &MemArgs, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
    let topo = &cal.machine().topology;
    let mut out = Resolved::default();
    let cpu_nodes: Vec<u32> = match &a.cpu_node {
        Some(l) => l.0.clone(),
        None => topo.cpu_nodes().map(|n| n.id).take(1).collect(),
    };
    if cpu_nodes.is_empty() {
        return Err(BenchError("the machine has no node with CPUs".into()));
    }
    for &n in &cpu_nodes {
        thread_cpus(topo, n, 1)?;
    }
    for (cpu_node, mem_node) in cpu_nodes.iter().flat_map(|&c| {
        a.mem_node
            .as_ref()
            .map_or(vec![c], |l| l.0.clone())
            .into_iter()
            .map(move |m| (c, m))
    }) {
        let threads_list: Vec<u32> = match &a.threads {
            Some(l) => l.0.clone(),
            None => {
                let ix = topo.node_index(cpu_node).expect("checked");
                vec![topo.nodes[ix].cpus.len() as u32]
            }
        };
        for &threads in &threads_list {
            let bytes = match a.bytes {
                Some(b) => b,
                None => {
                    let (b, why) = default_bytes(cal, threads, mem_node);
                    let note = format!("bytes: {} per thread: {why}", human_bytes(b));
                    if !out.notes.contains(&note) {
                        out.notes.push(note);
                    }
                    b
                }
            };
            if let Some(free) = cal.node_free_bytes(mem_node) {
                let need = bytes.saturating_mul(threads as u64);
                if need > free {
                    return Err(BenchError(format!(
                        "--bytes {}: {threads} threads need {} on node {mem_node}, which has {} free",
                        human_bytes(bytes),
                        human_bytes(need),
                        human_bytes(free)
                    )));
                }
            }
            for &op in &a.op.0 {
                let loops = match a.loops {
                    Some(l) => l,
                    None => {
                        // The rate these threads sweep this working set at
                        // as `op` does: measured here, asked of the guest,
                        // the model's in the simulator.
                        let bw = cal.sweep_bandwidth_on(
                            op,
                            threads,
                            bytes * threads as u64,
                            &[cpu_node],
                            mem_node,
                            true,
                        );
                        let per_loop = (bytes * threads as u64) as f64;
                        let l = ((a.duration * bw / per_loop).round() as u64).max(1);
                        out.notes.push(format!(
                            "loops: {l} for {op} with {threads} threads, about {} s at {:.1} GB/s; --loops to set",
                            a.duration,
                            bw / 1e9,
                            op = op.name()
                        ));
                        l
                    }
                };
                let p = Params {
                    op,
                    threads,
                    cpu_node,
                    mem_node,
                    bytes,
                    loops,
                };
                p.check(topo)?;
                out.cases.push(Case::Mem(p));
            }
        }
    }
    Ok(out)
}

/// Memory bandwidth (as perf bench numa mem).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct MemArgs {
    /// Sweeps, one case each: read (loads), write (read-modify-write),
    /// memset (stores)
    #[arg(long, value_name = "OP,...", value_parser = parse_ops, default_value = "read")]
    pub op: List<crate::mem::Op>,
    /// Threads, e.g. 1 or 1,2,4 (one case each); default: the CPUs of the
    /// CPU node
    #[arg(long, value_name = "N,...", allow_hyphen_values = true, value_parser = parse_threads)]
    pub threads: Option<List<u32>>,
    /// Nodes whose CPUs run the threads, one case each; default: the
    /// first node with CPUs
    #[arg(long, value_name = "NODE,...", allow_hyphen_values = true, value_parser = parse_nodes)]
    pub cpu_node: Option<List<u32>>,
    /// Nodes the memory is bound to, one case each; default: the CPU node
    #[arg(long, value_name = "NODE,...", allow_hyphen_values = true, value_parser = parse_nodes)]
    pub mem_node: Option<List<u32>>,
    /// Bytes each thread sweeps, e.g. 256M; default: 4x the largest LLC,
    /// within 256 MiB-2 GiB and half the memory node's free memory
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = parse_bytes)]
    pub bytes: Option<u64>,
    /// Sweeps of each thread over its buffer; default: as many as take
    /// about --duration seconds
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Seconds a run should take, for the default loop count
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = crate::mem::DEFAULT_SECONDS, value_parser = parse_seconds)]
    pub duration: f64,
}

/// The registry's entry ([`crate::registry`]).
pub const BENCHMARK: Benchmark = Benchmark::new::<MemArgs>(
    "mem",
    "Memory bandwidth (as perf bench numa mem): pinned threads of one node reading, writing or zeroing memory bound to a node",
    |m| crate::registry::parse_as(m, crate::args::Spec::Mem),
    &[metrics::ELAPSED_S, metrics::USER_S, metrics::SYS_S, metrics::BANDWIDTH_GBS, metrics::THREAD_BANDWIDTH_GBS, metrics::THREAD_BANDWIDTH_MIN_GBS],
);

#[cfg(test)]
mod tests {
    use super::*;

    fn two_nodes_smt() -> Topology {
        // 2 nodes x 2 cores x 2 threads: CPUs 0-3 on node 0, where 0/2
        // and 1/3 are siblings.
        Topology::regular(2, 2, 2, 1, 8 << 20, 1 << 30, None).unwrap()
    }

    /// A machine that zeroes 90 GB/s a thread but reads 30 and
    /// read-modify-writes 27, as this project's EPYC host did.
    struct Sweeps(numalab_topology::MachineInfo);

    impl Calibration for Sweeps {
        fn machine(&self) -> &numalab_topology::MachineInfo {
            &self.0
        }
        fn node_free_bytes(&self, _: u32) -> Option<u64> {
            None
        }
        fn zeroing_bandwidth(&self, threads: u32, _: u64) -> f64 {
            threads as f64 * 90e9
        }
        fn sweep_bandwidth(&self, op: Op, threads: u32, ws: u64) -> f64 {
            match op {
                Op::Read => threads as f64 * 30e9,
                Op::Write => threads as f64 * 27e9,
                Op::Memset => self.zeroing_bandwidth(threads, ws),
            }
        }
        fn spin_rate(&self) -> f64 {
            1e9
        }
        fn first_touch_rate(&self) -> f64 {
            f64::INFINITY
        }
    }

    /// Each sweep's loops come from its own rate, so a read asked for a
    /// second takes a second, not the three a zeroing rate gave it.
    #[test]
    fn each_sweep_is_sized_by_its_own_rate() {
        let mut info = numalab_record::example_record("x", "y", 1, 1.0).machine;
        info.topology = two_nodes_smt();
        let a = MemArgs {
            op: List(Op::ALL.to_vec()),
            threads: Some(List(vec![1])),
            cpu_node: None,
            mem_node: None,
            bytes: Some(1 << 30),
            loops: None,
            duration: 3.0,
        };
        let r = resolve(&a, &Sweeps(info)).unwrap();
        let loops: Vec<(Op, u64)> = r
            .cases
            .iter()
            .map(|c| match c {
                Case::Mem(p) => (p.op, p.loops),
                other => panic!("{other:?}"),
            })
            .collect();
        // 3 s over 1 GiB: 84 sweeps at 30 GB/s, 75 at 27, 251 at 90.
        assert_eq!(
            loops,
            vec![(Op::Read, 84), (Op::Write, 75), (Op::Memset, 251)]
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("for read with 1 threads, about 3 s at 30.0 GB/s")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn threads_take_a_core_each_before_a_sibling() {
        let t = two_nodes_smt();
        let cpus = thread_cpus(&t, 0, 4).unwrap();
        let cores: Vec<u32> = cpus.iter().map(|&c| t.cpu(c).unwrap().core).collect();
        assert_eq!(cores[0..2].len(), 2);
        assert_ne!(cores[0], cores[1], "{cpus:?}");
        let mut all = cpus.clone();
        all.sort();
        assert_eq!(all, t.nodes[0].cpus, "every CPU of the node once");
        // More threads than CPUs: around again.
        assert_eq!(thread_cpus(&t, 0, 5).unwrap()[4], cpus[0]);
        assert!(thread_cpus(&t, 7, 1).unwrap_err().0.contains("nodes 0, 1"));
    }

    #[test]
    fn key_and_checks() {
        let t = two_nodes_smt();
        let p = Params {
            op: Op::Write,
            threads: 2,
            cpu_node: 0,
            mem_node: 1,
            bytes: 1 << 20,
            loops: 3,
        };
        let k = p.key();
        assert_eq!(k["op"], "write");
        assert_eq!(k["mem_node"], 1);
        assert_eq!(p.bytes_swept(), 6 << 20);
        assert!(p.check(&t).is_ok());
        assert!(Params {
            mem_node: 9,
            ..p.clone()
        }
        .check(&t)
        .unwrap_err()
        .0
        .contains("--mem-node 9"));
        assert!(Params { loops: 0, ..p }.check(&t).is_err());
        assert_eq!(Op::from_name("memset"), Some(Op::Memset));
        assert_eq!(Op::Write.lines_per_line(), 2.0);
    }
}
